"""OpenMP's wait policy: "passive" unless the user chose one (hdist/_core/threads.py).

A waiting thread that spins takes the core its preempted partner needs on a shared
machine; hdist asks for threads that sleep, before the OpenMP runtime is loaded, and
leaves the user's ``OMP_WAIT_POLICY`` / ``GOMP_SPINCOUNT`` alone.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hdist import _kernels
import datadir

ROOT = str(datadir.ROOT)

#: a 2-thread call, then the CPU time the process burns while the main thread sleeps
SPIN_PROBE = """
import time, numpy as np, hdist
X = np.random.default_rng(0).normal(size=(3000, 4))
m = hdist.Metric("manhattan").fit(X)
m.pairwise(X[:300], X, n_jobs=2)
c0 = time.process_time(); time.sleep(0.6); print(time.process_time() - c0)
"""


def _run(code, **env_set):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(env_set)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n")


REPORT = ("import os, hdist, hdist._core.threads as t, hdist._core.config as c; "
          "print(t.wait_policy()); print(os.environ.get('OMP_WAIT_POLICY')); print(c.config()['omp_wait_policy'])")


def test_default_is_passive_and_not_inherited():
    out = _run(REPORT)
    assert out[0] == "('passive', 'hdist default')"
    # removed once the kernels are loaded: child processes do not inherit it
    assert out[1] == "None"
    assert out[2] == "passive (hdist default)"


@pytest.mark.parametrize("env,want", [
    (dict(OMP_WAIT_POLICY="active"), "('active', 'environment')"),
    (dict(OMP_WAIT_POLICY="PASSIVE"), "('passive', 'environment')"),
    (dict(GOMP_SPINCOUNT="1000"), "('spin count 1000', 'environment')")])
def test_user_choice_wins(env, want):
    out = _run(REPORT, **env)
    assert out[0] == want
    assert out[1] == str(env.get("OMP_WAIT_POLICY"))


@pytest.mark.skipif(not _kernels.openmp_enabled(), reason="built without OpenMP")
def test_passive_threads_do_not_spin():
    # the default takes effect in the runtime: after a parallel call, the idle worker
    # sleeps (next to no CPU time while the main thread sleeps 0.6 s); with
    # OMP_WAIT_POLICY=active it spins for the whole pause.  On a loaded machine a sleeping
    # process still collects a few tens of milliseconds (wake-ups, the interpreter's
    # exit), so the better of two runs is compared with a spinning worker's share
    idle = min(float(_run(SPIN_PROBE)[0]) for _ in range(2))
    spinning = float(_run(SPIN_PROBE, OMP_WAIT_POLICY="active")[0])
    assert idle < 0.1, idle
    assert spinning > 3 * idle + 0.05, (idle, spinning)


def test_runtime_loaded_before_hdist_is_reported_as_such():
    """Another module loaded an OpenMP runtime first: its policy is already read, so hdist
    sets nothing and says so."""
    import ctypes.util
    lib = ctypes.util.find_library("gomp")
    if lib is None:
        pytest.skip("no libgomp on this machine to load first")
    out = _run("import ctypes; ctypes.CDLL(%r); " % lib + REPORT)
    assert out[0] == str(("the runtime's default", "OpenMP runtime loaded before hdist"))
    assert out[1] == "None"
