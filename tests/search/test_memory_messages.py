"""Searches whose result cannot fit say what was asked: the pairs, the bytes and the
remedy, before allocating where the size is known (k-NN lists, a pairwise matrix, an
all-pairs radius search) and when memory runs out mid-way (the pairs found so far); the
matrix-product filter's reference side is built once for threads sharing a metric, and
its radius search peaks near the size of its result."""
from __future__ import annotations

import threading
import time

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search import gemm_filter as _gemm
from hdist._search import memory as _memory
from test_gemm import knn_rows


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n),
                         "c": rng.choice(list("abc"), n).astype(object)})


KINDS = {"nominal": ["c"], "continuous": ["x", "y"]}


@pytest.fixture
def small_memory(monkeypatch):
    """This process may hold 1 MB (as under an address-space limit)."""
    monkeypatch.setattr(_memory, "memory_limit", lambda: 10 ** 6)


def test_knn_lists_that_cannot_fit_are_refused_before_the_search(small_memory):
    X = _frame(3000)
    m = hdist.Metric("heom", **KINDS).fit(X)
    index = hdist.NeighborsIndex(hdist.Metric("heom", **KINDS)).fit(X)
    for search in (m.kneighbors, index.kneighbors):
        with pytest.raises(MemoryError, match=r"a k-NN search of 3000 query rows with k = "
                                              r"100 \(300000 pairs\) would return 4\.8 MB, "
                                              r"more than the 1\.0 MB .*smaller k"):
            search(X, 100)
    assert m.kneighbors(X.iloc[:10], 100)[0].shape == (10, 100)


def test_pairwise_and_all_pairs_radius_are_refused_before_allocating(small_memory):
    X = _frame(1000)
    m = hdist.Metric("heom", **KINDS).fit(X)
    with pytest.raises(MemoryError, match=r"a pairwise matrix of 1000 x 1000 rows "
                                          r"\(1000000 pairs\) would return 8\.0 MB.*"
                                          r"out= a numpy\.memmap"):
        m.pairwise(X)
    index = hdist.NeighborsIndex(hdist.Metric("heom", **KINDS)).fit(X)
    for search in (m.radius_neighbors, index.radius_neighbors):
        with pytest.raises(MemoryError, match=r"within r = inf \(all 1000000 pairs\) would "
                                              r"return 16\.0 MB.*smaller radius"):
            search(X, np.inf)
    assert m.pairwise(X.iloc[:100]).shape == (100, 100)


def test_radius_search_out_of_memory_names_the_pairs_found(monkeypatch):
    """A MemoryError mid-way (here in the third block of queries) names the pairs the
    blocks before had found and the remedy, not the allocation that failed."""
    X = _frame(600)
    m = hdist.Metric("heom", **KINDS).fit(X)
    # 600 rows: the metric's searches are brute force
    brute = m._fitted()._search_index()._brute
    real = brute.radius
    calls = []

    def failing(rows, *a, **kw):
        calls.append(rows.n)
        if len(calls) == 3:
            raise MemoryError("Unable to allocate 2.00 MiB for an array")
        return real(rows, *a, **kw)
    monkeypatch.setattr(brute, "radius", failing)
    want = m.radius_neighbors(X.iloc[:2 * 64], 0.5, return_distance=False)
    found = sum(len(i) for i in want)
    calls.clear()
    from hdist._core import progress as _progress
    monkeypatch.setattr(_progress, "blocks", lambda n, report, size=None: [
        (a, min(n, a + 64)) for a in range(0, n, 64)])
    with pytest.raises(MemoryError, match=r"radius search of 600 query rows against 600 "
                                          r"rows within r = 0\.5 ran out of memory after "
                                          r"%d pairs found for its first 128 query rows.*"
                                          r"smaller radius.*2\.00 MiB" % found):
        m.radius_neighbors(X, 0.5, progress=lambda a, b: None)


def test_knn_out_of_memory_names_the_search(monkeypatch):
    X = _frame(300)
    m = hdist.Metric("heom", **KINDS).fit(X)

    def failing(*a, **kw):
        raise MemoryError("Unable to allocate 2.00 MiB for an array")
    monkeypatch.setattr(m._fitted()._search_index()._brute, "knn", failing)
    with pytest.raises(MemoryError, match=r"a k-NN search of 300 query rows with k = 7 "
                                          r"\(2100 pairs\) ran out of memory \(its lists "
                                          r"take 33\.6 kB\); ask for a smaller k.*2\.00 MiB"):
        m.kneighbors(X, 7)


def test_threads_sharing_a_metric_build_the_filter_features_once(monkeypatch):
    """8 threads searching one freshly fitted metric through the matrix-product filter:
    the reference rows' features (the filter's largest arrays) are built by one of them,
    the others wait, where each built its own copy at once."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(3000, 6)), columns=list("abcdef"))
    y = rng.integers(0, 3, 3000)
    m = hdist.Metric("ivdm").fit(X, y)
    real = _gemm._features
    live = []
    most = []

    def counting(*a, **kw):
        live.append(1)
        most.append(len(live))
        time.sleep(0.05)        # long enough for the other threads to arrive
        try:
            return real(*a, **kw)
        finally:
            live.pop()
    monkeypatch.setattr(_gemm, "_features", counting)
    Q = X.iloc[:64]
    want = knn_rows(m, m.encode(Q), 5, False, 1, method="direct")
    out, errors = [], []

    def work():
        try:
            out.append(knn_rows(m, m.encode(Q), 5, False, 1, method="gemm"))
        except Exception as e:          # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert most and max(most) == 1, most
    assert len(most) == 1               # built once, then read from the cache
    for d, i in out:
        np.testing.assert_array_equal(d, want[0])
        np.testing.assert_array_equal(i, want[1])


def test_ivdm_radius_through_the_filter_peaks_near_its_result():
    """The matrix-product filter's radius search turns each block of queries' hits into
    their sorted lists as the block ends: its traced peak stays within twice the
    result's 16 bytes a pair (all hits were kept, copied and sorted at the end: 4x)."""
    import tracemalloc
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(4000, 6)), columns=list("abcdef"))
    m = hdist.Metric("ivdm").fit(X, rng.integers(0, 3, 4000))
    # 4000 rows of 6 dimensions: brute force at first
    brute = m._fitted()._search_index()._brute
    brute.min_pairs = 0
    Q = X.iloc[:2000]
    m.radius_neighbors(Q.iloc[:20], 0.3)        # the reference side's caches
    tracemalloc.start()
    try:
        D, I = m.radius_neighbors(Q, 0.3)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.search_["path"] == "filter"
    pairs = sum(len(i) for i in I)
    assert 10 ** 6 < pairs < 2000 * 4000
    assert peak <= 2 * 16 * pairs, (peak, pairs)
    d0, i0 = m.radius_neighbors(Q.iloc[::97], 0.3)
    brute.min_pairs = 1 << 62
    d1, i1 = m.radius_neighbors(Q.iloc[::97], 0.3)
    assert m.search_["path"] == "direct"
    for a, b, c, e in zip(d0, d1, i0, i1):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, e)
