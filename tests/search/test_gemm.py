"""The matrix-product filter of p = 2 k-NN returns exactly the direct kernel's result.

The direct kernel is itself checked against the numpy reference in test_foundation.py;
here the filtered path must equal it bit for bit (distances and indices), on data chosen
to stress the filter: exact ties (nominal-only data), missing values under every
bilinear policy, unseen values, weights, N2/N3 tables, embedded (high-cardinality)
attributes, huge and tiny magnitudes, and every thread count and tile size.
"""
import numpy as np
import pytest

import hdist
from hdist._search import gemm_filter as _gemm
from hdist._kernels import CRows
from hdist._search.searchers import brute_radius

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


def knn_rows(metric, rows, k, exclude_self, n_jobs, method="auto"):
    """Brute-force k-NN ``(dist, ind)`` of encoded ``rows`` over the training rows by
    ``method`` ("auto", "direct" or "gemm"), through the brute-force searcher of the
    metric's own searches (which keeps the matrix-product filter's features)."""
    f = metric._fitted()._search_index()._brute.knn(rows, k, n_jobs, exclude_self=exclude_self,
                                                    method=method)
    return f.dist, f.ind


def radius_rows(metric, rows, r, exclude_self, n_jobs, self_offset=0, method="auto"):
    """Brute-force radius lists ``(dists, inds)`` of encoded ``rows`` over the training
    rows (:func:`hdist._search.searchers.brute_radius`)."""
    f = brute_radius(metric.plan_, rows, metric.train_, metric._ctrain(), r, n_jobs,
                     exclude_self=exclude_self, self_offset=self_offset, method=method)
    return f.dist, f.ind


def mixed(n, n_cont=4, n_nom=4, missing=0.0, seed=0, levels=(2, 12), scale=1.0,
          n_classes=3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n)
    cols = [rng.normal(size=n) * scale * (a + 1) + y for a in range(n_cont)]
    cols += [rng.integers(0, rng.integers(*levels), n).astype(float) for _ in range(n_nom)]
    X = np.column_stack(cols)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y, list(range(n_cont, n_cont + n_nom))


def both_paths(metric, Q, k, n_jobs=2, exclude_self=False, **kw):
    rows = metric.train_ if Q is None else metric.encode(Q)
    d1, i1 = knn_rows(metric, rows, k, exclude_self, n_jobs, "direct")
    res = _gemm.knn(metric.plan_, rows, metric.train_, CRows(rows), metric._ctrain(), k,
                    n_jobs, exclude_self, **kw)
    assert res is not None, "the filter should apply to this plan"
    return (d1, i1), res


CASES = [
    ("hvdm", {}),
    ("heom", {}),
    ("euclidean", {}),
    ("hvdm", {"vdm": "N3"}),
    ("hvdm", {"missing": "max"}),
    ("heom", {"missing": {"continuous": "max", "nominal": "symbol"}}),
    ("hvdm", {"missing": "symbol", "unseen": "prior"}),
    ("heom", {"weights": [0.5, 2.0, 0.0, 1.0, 3.0, 0.25, 1.0, 1.0]}),
    ("hvdm", {"normalization": "mean_diff"}),
    ("hvdm", {"aggregate": "mean"}),
]


@pytest.mark.parametrize("name,params", CASES)
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_filter_equals_direct(name, params, missing):
    X, y, nom = mixed(900, missing=missing, seed=len(params) + int(missing * 100))
    m = hdist.get_metric(name, nominal=nom, **params).fit(X[:600], y[:600])
    (d1, i1), (d2, i2) = both_paths(m, X[600:], 7)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("q_block,r_tile,r_chunk", [(1, 64, 64), (7, 100, 10), (256, 4096, 64)])
@pytest.mark.parametrize("n_jobs", [1, 2, 3])
def test_ties_and_tiles(dtype, q_block, r_tile, r_chunk, n_jobs):
    # nominal-only data with few values: most distances tie exactly
    X, y, nom = mixed(700, n_cont=0, n_nom=5, levels=(2, 4), seed=3)
    m = hdist.get_metric("heom", nominal=nom).fit(X[:500], y[:500])
    (d1, i1), (d2, i2) = both_paths(m, X[500:], 10, n_jobs=n_jobs, dtype=dtype,
                                    q_block=q_block, r_tile=r_tile, r_chunk=r_chunk)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


def test_exclude_self_and_training_queries():
    X, y, nom = mixed(800, missing=0.1, seed=5)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X, y)
    (d1, i1), (d2, i2) = both_paths(m, None, 4, exclude_self=True)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    assert not np.any(i2 == np.arange(800)[:, None])


@pytest.mark.parametrize("scale", [1e-150, 1e-20, 1e12, 1e40])
def test_extreme_magnitudes(scale):
    # the filter falls back to float64 or to the direct kernel where magnitudes demand it
    X, y, nom = mixed(600, scale=scale, seed=7)
    m = hdist.get_metric("hvdm", nominal=nom, normalization="none").fit(X[:400], y[:400])
    rows = m.encode(X[400:])
    d1, i1 = knn_rows(m, rows, 5, False, 2, "direct")
    d2, i2 = knn_rows(m, rows, 5, False, 2, "gemm")
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


def test_unseen_overlap_values_fall_back():
    X, y, nom = mixed(600, seed=9)
    m = hdist.get_metric("heom", nominal=nom).fit(X[:400], y[:400])
    Q = X[400:].copy()
    Q[::3, nom[0]] = 1000.0 + np.arange(len(Q[::3]))   # unseen values
    rows = m.encode(Q)
    assert _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 3, 2) is None
    d1, i1 = knn_rows(m, rows, 3, False, 2, "direct")
    d2, i2 = knn_rows(m, rows, 3, False, 2, "auto")
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


def test_high_cardinality_vdm_is_embedded_and_filtered(monkeypatch):
    # a small table budget stands in for >= 50 000 values (tested in test_foundation)
    monkeypatch.setattr(hdist._core.statistics, "TABLE_BUDGET", 1000)
    rng = np.random.default_rng(11)
    n = 3000
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 2500, n).astype(float)])
    y = rng.integers(0, 4, n)
    m = hdist.get_metric("hvdm", nominal=[1]).fit(X[:2000], y[:2000])
    assert m.plan_.me == 1 and m.plan_.mt == 0     # no V^2 table
    (d1, i1), (d2, i2) = both_paths(m, X[2000:], 5)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


@pytest.mark.parametrize("name,params", [("manhattan", {}), ("hvdm", {"vdm": "N1"}),
                                         ("gower", {}), ("hvdm", {"p": 3})])
def test_not_eligible(name, params):
    X, y, nom = mixed(300, seed=1)
    m = hdist.get_metric(name, nominal=nom, **params).fit(X, y)
    assert not _gemm.eligible(m.plan_)


def test_wide_one_hot_falls_back_before_allocating():
    # an overlap attribute with more values than MAX_DIM: the filter declines (no n x V
    # one-hot is built) and the automatic path still gives the direct kernel's answer
    rng = np.random.default_rng(13)
    n = 2000
    X = np.column_stack([rng.normal(size=n),
                         rng.integers(0, _gemm.MAX_DIM + 200, n).astype(float)])
    m = hdist.get_metric("heom", nominal=[1]).fit(X[:1500])
    assert m.plan_.components[1].n_values > _gemm.MAX_DIM
    rows = m.encode(X[1500:])
    assert _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 3, 2) is None
    d1, i1 = knn_rows(m, rows, 3, False, 2, "direct")
    d2, i2 = knn_rows(m, rows, 3, False, 2, "auto")
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


# -- radius search through the filter --------------------------------------------------

def radius_paths(metric, Q, r, n_jobs=2, exclude_self=False, self_offset=0, **kw):
    rows = metric.train_ if Q is None else metric.encode(Q)
    direct = radius_rows(metric, rows, r, exclude_self, n_jobs, self_offset, "direct")
    res = _gemm.radius(metric.plan_, rows, metric.train_, CRows(rows), metric._ctrain(), r,
                       n_jobs, exclude_self, self_offset, **kw)
    assert res is not None, "the filter should apply to this plan"
    return direct, res


def assert_same_lists(a, b):
    (da, ia), (db, ib) = a, b
    assert len(da) == len(db) == len(ia) == len(ib)
    for x, y in zip(da, db):
        np.testing.assert_array_equal(x, y)
    for x, y in zip(ia, ib):
        np.testing.assert_array_equal(x, y)


def kth_radius(metric, Q, k):
    """A radius holding about k rows per query: the median k-th distance, which is
    also a distance some pair has exactly (an inclusive boundary to get right)."""
    d, _ = knn_rows(metric, metric.encode(Q), k, False, 1, "direct")
    return float(np.sort(d[:, -1])[len(d) // 2])


@pytest.mark.parametrize("name,params", CASES)
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_radius_filter_equals_direct(name, params, missing):
    X, y, nom = mixed(900, missing=missing, seed=len(params) + int(missing * 100))
    m = hdist.get_metric(name, nominal=nom, **params).fit(X[:600], y[:600])
    r = kth_radius(m, X[600:], 9)
    direct, filtered = radius_paths(m, X[600:], r)
    assert sum(len(i) for i in direct[1]) > 300
    assert_same_lists(direct, filtered)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("q_block,r_tile,r_chunk", [(1, 64, 64), (7, 100, 10), (512, 512, 64)])
@pytest.mark.parametrize("n_jobs", [1, 3])
def test_radius_ties_and_tiles(dtype, q_block, r_tile, r_chunk, n_jobs):
    # nominal-only data with few values: many rows sit exactly on the radius
    X, y, nom = mixed(700, n_cont=0, n_nom=5, levels=(2, 4), seed=3)
    m = hdist.get_metric("heom", nominal=nom).fit(X[:500], y[:500])
    r = kth_radius(m, X[500:], 10)
    direct, filtered = radius_paths(m, X[500:], r, n_jobs=n_jobs, dtype=dtype,
                                    q_block=q_block, r_tile=r_tile, r_chunk=r_chunk)
    on_edge = sum(int(np.sum(d == r)) for d in direct[0])
    assert on_edge > 50
    assert_same_lists(direct, filtered)


def test_radius_exclude_self_offset_and_missing():
    X, y, nom = mixed(800, missing=0.1, seed=5)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X, y)
    r = kth_radius(m, X, 6)
    direct, filtered = radius_paths(m, None, r, exclude_self=True)
    assert_same_lists(direct, filtered)
    assert not any(q in i for q, i in enumerate(filtered[1]))
    # a block of the training rows as queries: row q of the block is training row q + 100
    part = m.train_.take(np.arange(100, 400))
    direct = radius_rows(m, part, r, True, 2, 100, "direct")
    filtered = _gemm.radius(m.plan_, part, m.train_, CRows(part), m._ctrain(), r, 2, True,
                            100)
    assert_same_lists(direct, filtered)


@pytest.mark.parametrize("scale", [1e-150, 1e12, 1e40])
def test_radius_extreme_magnitudes(scale):
    X, y, nom = mixed(600, scale=scale, seed=7)
    m = hdist.get_metric("hvdm", nominal=nom, normalization="none").fit(X[:400], y[:400])
    rows = m.encode(X[400:])
    r = kth_radius(m, X[400:], 5)
    direct = radius_rows(m, rows, r, False, 2, 0, "direct")
    assert_same_lists(direct, radius_rows(m, rows, r, False, 2, 0, "gemm"))


def test_radius_public_paths_use_the_filter(monkeypatch):
    # Metric.radius_neighbors and a brute NeighborsIndex go through the filter (enough
    # pairs) and return the direct kernel's lists; an infinite radius goes direct
    X, y, nom = mixed(1300, missing=0.1, seed=21)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:800], y[:800])
    Q = X[800:]
    r = kth_radius(m, Q, 7)
    expected = radius_rows(m, m.encode(Q), r, False, 2, 0, "direct")
    calls = []
    real = _gemm.radius

    def spy(*a, **kw):
        res = real(*a, **kw)
        calls.append(res is not None)
        return res
    monkeypatch.setattr(_gemm, "radius", spy)
    D, I = m.radius_neighbors(Q, r, n_jobs=2)
    assert_same_lists(expected, (list(D), list(I)))
    index = hdist.NeighborsIndex(m, algorithm="brute").fit()
    D, I = index.radius_neighbors(Q, r, n_jobs=2)
    assert_same_lists(expected, (list(D), list(I)))
    assert calls == [True, True]
    # the training frame indexed again (rows encoded apart from the metric's): the
    # reference side of the filter is kept by the index for its next call
    index2 = hdist.NeighborsIndex(m, algorithm="brute").fit(X[:800])
    D2, I2 = index2.radius_neighbors(Q, r, n_jobs=1)
    assert_same_lists(expected, (list(D2), list(I2)))
    assert calls[-1] is True and len(index2._gemm()) > 0
    rows = m.encode(Q)
    assert _gemm.radius(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), np.inf, 2) is None


def test_embeddings_projected_on_their_span_and_off_span_queries():
    # three classes: each VDM probability row lies on a plane, two product columns; a
    # query value off that plane (unseen: all probabilities 0) takes the unprojected
    # features, and both give the direct kernel's answer
    X, y, nom = mixed(900, missing=0.1, seed=31)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:600], y[:600])
    cache = {}
    rows = m.encode(X[600:])
    F = _gemm._prepare(m.plan_, rows, m.train_, cache, 64)
    bases = cache["ref"]["bases"]
    assert [None if b is None else b.shape for b in bases] == [None] * 4 + [(3, 2)] * 4
    assert "ref-full" not in cache
    (d1, i1), (d2, i2) = both_paths(m, X[600:], 6, cache=cache)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    Q = X[600:].copy()
    Q[::5, nom[1]] = 777.0                       # unseen values
    (d1, i1), (d2, i2) = both_paths(m, Q, 6, cache=cache)
    assert "ref-full" in cache
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
    assert F is not None and F.Xg.shape[1] < _gemm._prepare(
        m.plan_, m.encode(Q), m.train_, cache, 64).Xg.shape[1]


@pytest.mark.parametrize("seed", [51, 52, 53, 54])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_chunk_dismissal_keeps_pairs_at_the_bound(seed, dtype):
    """A chunk dismissed on the product and the smallest of the columns a query's missing
    attributes add must not hold a pair whose estimate lies just under the threshold: on
    the float64 product a pair exactly at the radius (or the k-th bound) sits there."""
    rng = np.random.default_rng(seed)
    X = np.empty((340, 4), dtype=object)
    X[:, 0] = rng.choice([0.0, 0.25, 0.5, 1.0], 340)
    X[:, 1] = rng.choice([0.1, 0.2, 0.7, 1.3], 340)
    X[:, 2] = rng.choice(["a", "b"], 340)
    X[:, 3] = rng.choice(["u", "v", "w"], 340)
    M = rng.random(X.shape) < 0.2
    M[:2] = False
    X[M] = None
    X, Q = X[:300], X[300:]
    m = hdist.Metric("hvdm", missing="max", nominal=[2, 3]).fit(X, np.arange(300) % 3)
    st, rows = m._fitted(), m.encode(Q)
    P = m.pairwise(Q, X)
    for r in sorted(set(P.ravel().tolist()))[::7]:
        D, I = _gemm.radius(st.plan, rows, st.train, CRows(rows), st.crows(), r, 1,
                            dtype=dtype, r_chunk=8, r_tile=64, q_block=16)
        for q in range(len(Q)):
            assert sorted(I[q].tolist()) == np.flatnonzero(P[q] <= r).tolist(), (r, q)


def test_reference_cache_drops_its_float64_features_and_makes_them_again():
    # a filtered search keeps the reference rows' features in the precision it reads,
    # not also the float64 ones they were made from (on 10**5 census-like rows these were
    # more than half of the 4.3x the encoded rows the cache held); another precision or
    # chunk length makes them again, with the same results
    X, y, nom = mixed(900, missing=0.1, seed=8)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:700], y[:700])
    cache = {}
    direct, first = both_paths(m, X[700:], 6, cache=cache)
    np.testing.assert_array_equal(first[1], direct[1])
    np.testing.assert_array_equal(first[0], direct[0])
    assert "Y" not in cache["ref"] and "g" not in cache["ref"]
    for kw in ({"dtype": np.float64}, {"r_chunk": 16}, {}):
        _, again = both_paths(m, X[700:], 6, cache=cache, **kw)
        np.testing.assert_array_equal(again[1], direct[1])
        np.testing.assert_array_equal(again[0], direct[0])
    assert all("Y" not in r for key, r in cache.items() if key in ("ref", "ref-full"))


def test_reference_features_are_made_without_a_copy_per_attribute():
    # the filter's first search makes the reference rows' features: it looks up each
    # nominal attribute's embedding only while writing that attribute's columns and lets
    # the float64 features go before the float32 panels are made, so its peak of memory
    # stays near the features themselves (was 6.4x the encoded rows on this shape, 4.0x
    # now; about 7x before the float64 copies left the cache)
    import tracemalloc
    X, y, nom = mixed(20000, n_cont=4, n_nom=12, missing=0.05, seed=2, n_classes=2)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:19000], y[:19000])
    rows = m.encode(X[19000:])
    data = hdist.NeighborsIndex(m, algorithm="brute").fit().data_nbytes_
    tracemalloc.start()
    try:
        res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 5, 1, cache={})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res is not None
    assert peak < 5.0 * data, peak / data


@pytest.mark.parametrize("name,params", [c for c in CASES if "aggregate" not in c[1]])
@pytest.mark.parametrize("missing", [0.0, 0.15])
def test_estimates_are_the_squared_distances(name, params, missing):
    # the filter's estimate X[q]·Y[j] + Σ g[a, j] (attributes q misses) + Σ H[q, t]
    # (attributes j misses), on the float64 features, is the squared distance up to
    # rounding: the reference rows' features (a nominal attribute's looked up in its
    # values' table, its centre and span taken from the distinct values the rows hold) and
    # the queries' describe the same terms
    X, y, nom = mixed(500, missing=missing, seed=61)
    m = hdist.get_metric(name, nominal=nom, **params).fit(X[:400], y[:400])
    rows = m.encode(X[400:])
    F = _gemm._prepare(m.plan_, rows, m.train_, {}, 64, dtype=np.float64)
    assert F is not None
    est = F.Xg @ F.Yg.T
    for q in range(len(est)):
        est[q] += F.g[F.qidx[F.qptr[q]:F.qptr[q + 1]]].sum(axis=0)
    for j in range(est.shape[1]):
        est[:, j] += F.H[:, F.ridx[F.rptr[j]:F.rptr[j + 1]]].sum(axis=1)
    D2 = m.pairwise(X[400:], X[:400]) ** 2
    scale = max(1.0, float(D2.max()))
    np.testing.assert_allclose(est, D2, rtol=0, atol=1e-10 * scale)
