"""Fork safety: a child made by fork after the parent ran a parallel kernel must not hang.

GNU OpenMP's thread pool does not survive fork: a forked child that enters a parallel
region waits forever for threads that do not exist.  hdist notices the fork and runs its
kernels serially in the child, with results identical to the parent's.  Each test bounds
the children with a timeout, so a regression fails instead of hanging the suite.
"""
from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np
import pytest

import hdist
from hdist import NeighborsIndex
from hdist._core import threads as _threads

TIMEOUT = 30      # seconds for a pool of children; each needs well under one

#: Python 3.12 and later warn at every fork of a process that runs threads; these tests
#: fork such a process on purpose, to check what the child does
FORK_WARNING = ("ignore:This process .* is multi-threaded, use of fork\\(\\) may lead to "
                "deadlocks in the child:DeprecationWarning")
pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform"),
              pytest.mark.filterwarnings(FORK_WARNING)]


def _data(n=700, seed=0):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 4), dtype=object)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.integers(0, 40, n).astype(float)
    X[:, 2] = rng.choice(list("abcde"), n)
    X[:, 3] = rng.choice(["x", "y"], n)
    X[rng.random((n, 4)) < 0.05] = None
    y = rng.integers(0, 2, n)
    return X, y


X, Y = _data()
#: fitted in the parent before any fork; the children inherit them
METRIC = hdist.Metric("hvdm")
INDEX = {}


def _queries(part, n_jobs=2):
    """Parallel work in a child: every kernel family, with more than one thread."""
    Q = X[part * 50:(part + 1) * 50]
    d, i = METRIC.kneighbors(Q, 7, n_jobs=n_jobs)
    D = METRIC.pairwise(Q, X[:400], n_jobs=n_jobs)
    rd, ri = METRIC.radius_neighbors(Q, 0.5, n_jobs=n_jobs)
    gd, gi = METRIC.kneighbors(X[:400], 5, n_jobs=n_jobs)   # the matrix-product filter
    td, ti = INDEX["kd"].kneighbors(Q, 7, n_jobs=n_jobs)
    tr = INDEX["kd"].radius_neighbors(Q, 0.5, n_jobs=n_jobs)[1]
    return (d, i, D, np.concatenate(list(rd)), np.concatenate(list(ri)), gd, gi, td, ti,
            np.concatenate(list(tr)), _threads.effective_n_jobs(4))


def _nested(queue):
    """A forked child forking again: the grandchildren stay serial too."""
    with mp.get_context("fork").Pool(2) as pool:
        queue.put(pool.map_async(_queries, range(4)).get(TIMEOUT))


@pytest.fixture(scope="module", autouse=True)
def fitted():
    METRIC.fit(X, Y)
    INDEX["kd"] = NeighborsIndex(METRIC, algorithm="kd_tree").fit()
    yield


def _run_in_pool(func, args):
    ctx = mp.get_context("fork")
    pool = ctx.Pool(2)
    try:
        return pool.map_async(func, args).get(TIMEOUT)
    except mp.TimeoutError:
        pytest.fail("forked workers did not finish within %d s (OpenMP pool after fork)"
                    % TIMEOUT)
    finally:
        pool.terminate()
        pool.join()


def test_forked_workers_after_parallel_parent_finish_with_equal_results():
    expect = [_queries(p, n_jobs=2) for p in range(4)]   # parallel in the parent first
    assert _threads.effective_n_jobs(4) == 4
    got = _run_in_pool(_queries, range(4))
    for g, e in zip(got, expect):
        for a, b in zip(g[:-1], e[:-1]):
            np.testing.assert_array_equal(a, b)
        assert g[-1] == 1          # the children ran serially
    # the parent keeps its threads after forking
    assert _threads.effective_n_jobs(4) == 4
    assert [_queries(0, n_jobs=2)[1].tolist()] == [expect[0][1].tolist()]


def test_grandchildren_are_serial_and_equal():
    _queries(0, n_jobs=2)
    expect = [_queries(p, n_jobs=1) for p in (0, 1, 2, 3)]
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_nested, args=(queue,))
    child.start()
    try:
        got = queue.get(timeout=TIMEOUT)
    except Exception:
        pytest.fail("forked grandchildren did not finish within %d s" % TIMEOUT)
    finally:
        child.join(5)
        if child.is_alive():
            child.kill()
    assert len(got) == 4
    for g, e in zip(got, expect):
        for a, b in zip(g[:-1], e[:-1]):
            np.testing.assert_array_equal(a, b)
        assert g[-1] == 1


def test_show_config_reports_the_forked_child(capsys):
    _queries(0, n_jobs=2)
    assert hdist._core.config.config()["forked"] is False
    got = _run_in_pool(_config_in_child, [0])
    assert got == [(1, True)]


def _config_in_child(_):
    cfg = hdist._core.config.config()
    return cfg["threads_used"], cfg["forked"]
