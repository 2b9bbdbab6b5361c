"""The duplicate-ties job in bounded memory: ``hdist knn --predict`` (default
``--ties include``) over training rows that all tie with every query, run in a
subprocess under a 2 GB address-space limit.  Listing the tied rows would take
``queries x rows x 24`` bytes (24 GB here); the tally of the votes takes
``queries x (k + classes)``."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 2 << 30


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_identical_training_rows_predict_under_2_gb(tmp_path):
    """200 000 identical all-nominal training rows (60 % class "p"), 5 000 queries that
    each tie with all of them (at distance 0, or at one differing attribute): exit 0,
    every prediction "p" with probabilities 0.6 / 0.4."""
    n, nq = 200_000, 5_000
    label = np.where(np.arange(n) % 5 < 3, "p", "n")
    with open(tmp_path / "train.csv", "w") as fh:
        fh.write("a,b,y\n")
        fh.write("".join("u,v,%s\n" % c for c in label))
    q_b = np.where(np.arange(nq) % 2 == 0, "v", "w")
    with open(tmp_path / "query.csv", "w") as fh:
        fh.write("a,b\n")
        fh.write("".join("u,%s\n" % b for b in q_b))
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="2")
    r = subprocess.run(
        [sys.executable, "-m", "hdist", "knn", "--train", str(tmp_path / "train.csv"),
         "--query", str(tmp_path / "query.csv"), "--target", "y", "--k", "5",
         "--nominal", "a,b", "--predict", "--proba", "-o", str(tmp_path / "out.csv")],
        capture_output=True, text=True, env=env, timeout=300, preexec_fn=_limit)
    assert r.returncode == 0, r.stderr[-3000:]
    out = pd.read_csv(tmp_path / "out.csv")
    assert len(out) == nq
    assert (out["prediction"] == "p").all()
    np.testing.assert_allclose(out["proba_p"], 0.6, rtol=1e-12)
    np.testing.assert_allclose(out["proba_n"], 0.4, rtol=1e-12)
