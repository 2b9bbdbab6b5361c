"""Encoding speed: ``Metric.fit`` and query encoding on a census-like frame against
scikit-learn's ``OneHotEncoder`` + ``StandardScaler`` fitting / transforming the same frame,
in the same run.

Job: 2·10⁵ training and 10⁵ query rows, 40 columns (30 nominal strings with 2 to 50 values,
10 numbers), 5 % missing, written to CSV and read back with ``pandas.read_csv`` and its
default dtypes (what a new user has).  Also the cell-by-cell encoder hdist used before
(tests/ref_schema.py), unless ``--no-reference``.

Run: ``python benchmarks/bench_encode.py [--rows N] [--queries N] [--repeat R]``.
Prints the best of ``R`` wall times per step and the machine load.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, ".."))

import pandas as pd  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402

import hdist  # noqa: E402
from strategies import census_frame  # noqa: E402


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the old cell-by-cell encoder (slow)")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for n, seed in ((args.rows, 0), (args.queries, 1)):
            p = os.path.join(tmp, "t%d.csv" % seed)
            census_frame(n, seed=seed).to_csv(p, index=False)
            paths.append(p)
        X, Q = pd.read_csv(paths[0]), pd.read_csv(paths[1])
    nom = [c for c in X.columns if c.startswith("nom")]
    num = [c for c in X.columns if c.startswith("num")]
    print("census-like frame: %d x %d training, %d query rows (read_csv dtypes: %s)"
          % (X.shape[0], X.shape[1], Q.shape[0],
             ", ".join(sorted({str(t) for t in X.dtypes}))))
    print("load before: %s" % " ".join("%.2f" % v for v in os.getloadavg()))

    def sk_fit():
        ohe = OneHotEncoder(handle_unknown="ignore").fit(X[nom])
        sc = StandardScaler().fit(X[num])
        return ohe, sc

    ohe, sc = sk_fit()

    def sk_transform():
        ohe.transform(Q[nom])
        sc.transform(Q[num])

    metric = hdist.Metric("heom").fit(X)
    rows = []
    rows.append(("fit", "hdist Metric('heom').fit", best(lambda: hdist.Metric("heom").fit(X),
                                                          args.repeat)))
    rows.append(("fit", "hdist Schema.fit_encode",
                 best(lambda: hdist._core.schema.Schema().fit_encode(X), args.repeat)))
    rows.append(("fit", "OneHotEncoder + StandardScaler fit", best(sk_fit, args.repeat)))
    y = np.random.default_rng(5).choice(["<50k", ">=50k"], size=len(X), p=[0.94, 0.06])
    rows.append(("fit", "hdist Metric('hvdm').fit(X, y)",
                 best(lambda: hdist.Metric("hvdm").fit(X, y), args.repeat)))
    Xc = X.astype({c: "category" for c in nom})
    rows.append(("fit", "hdist Metric('heom').fit, category dtypes",
                 best(lambda: hdist.Metric("heom").fit(Xc), args.repeat)))
    try:
        import pyarrow as pa
    except ImportError:
        pa = None
    if pa is not None:
        T = pa.Table.from_pandas(X, preserve_index=False)
        rows.append(("fit", "hdist Metric('heom').fit, pyarrow Table",
                     best(lambda: hdist.Metric("heom").fit(T), args.repeat)))
    rows.append(("query", "hdist Metric.encode (schema + plan)",
                 best(lambda: metric.encode(Q), args.repeat)))
    rows.append(("query", "OneHotEncoder + StandardScaler transform",
                 best(sk_transform, args.repeat)))
    if not args.no_reference:
        import ref_schema
        ref = ref_schema.Schema()
        rows.append(("fit", "old cell-by-cell Schema fit + encode",
                     best(lambda: ref.fit(X).encode(X), 1)))
        rows.append(("query", "old cell-by-cell Schema encode", best(lambda: ref.encode(Q), 1)))
    for step, what, t in rows:
        print("%-6s %-42s %8.3f s" % (step, what, t))
    print("load after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    return rows


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
