"""Exact tie order: equal returned distances come in training-index order, every path
returns the same lists, and kneighbors(k) is a prefix of kneighbors(k + 1).

Tie-heavy data: integer ages and counts (true ties are exact there: two rows at the same
|x - y| must get bit-identical distances), and prices on a cent grid.  For integer data with
p in {1, 2, 3, inf} the expected order is computed exactly with fractions."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._kernels import CRows, knn

from test_gemm import knn_rows

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")
pytestmark = [pytestmark, pytest.mark.kernels, pytest.mark.sanitize]

PS = [1.0, 2.0, math.inf, 0.5, 3.0]


def ages(rng, n):
    return rng.integers(18, 91, size=(n, 1)).astype(float)


def counts(rng, n):
    return rng.integers(0, 12, size=(n, 3)).astype(float)


def cents(rng, n):
    return np.round(rng.integers(100, 2000, size=(n, 2)) / 100.0, 2)


def mixed_counts(rng, n):
    X = np.empty((n, 3), dtype=object)
    X[:, 0] = rng.integers(0, 9, n).astype(float)
    X[:, 1] = rng.choice(["a", "b", "c"], n)
    X[:, 2] = rng.integers(20, 30, n).astype(float)
    return X


def _paths(m, Q, k):
    """(distances, indices) of every search path for query rows Q."""
    rows = m.encode(Q)
    out = {}
    cQ = CRows(rows)
    for strategy in ("queries", "references"):
        out["direct-" + strategy] = knn(m.plan_.cplan, cQ, m._ctrain(), k, 2,
                                        tile=7, strategy=strategy)
    if m.plan_.pmode == 2:
        out["gemm"] = knn_rows(m, rows, k, False, 2, "gemm")
    algos = ["kd_tree"]
    if m.plan_.p >= 1 and not m.plan_.has_ignore:
        algos.append("ball_tree")
    for algo in algos:
        idx = hdist.NeighborsIndex(m, algorithm=algo, leaf_size=4).fit()
        out[algo] = idx.kneighbors(Q, k)
    return out


def _exact_key(Xtr, q, delta, p):
    """Exact reduced distances (Fractions) of one integer-valued query to every row."""
    keys = []
    for row in Xtr:
        terms = [Fraction(int(abs(a - b))) / Fraction(d) for a, b, d in zip(q, row, delta)]
        if p == math.inf:
            keys.append(max(terms))
        else:
            keys.append(sum(t ** int(p) for t in terms))
    return keys


def _check_lists(d, i, ref_d=None):
    # sorted by distance, equal distances by index
    assert (np.diff(d, axis=1) >= 0).all()
    tie = np.diff(d, axis=1) == 0
    assert (np.diff(i, axis=1)[tie] > 0).all()


def _agreed(m, Q, k):
    """The lists every path returns, checked equal and ordered by (distance, index)."""
    res = _paths(m, Q, k)
    d0, i0 = res["direct-queries"]
    _check_lists(d0, i0)
    for name, (d, i) in res.items():
        np.testing.assert_array_equal(d, d0, err_msg=name)
        np.testing.assert_array_equal(i, i0, err_msg=name)
    return d0, i0


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("gen", [ages, counts, cents])
def test_every_path_orders_ties_by_index(gen, p):
    rng = np.random.default_rng(7)
    X = gen(rng, 300)
    Q = gen(rng, 60)
    m = hdist.Metric("minkowski", p=p).fit(X)
    k = 12
    d0, i0 = _agreed(m, Q, k)
    # prefix property
    d1, i1 = m.kneighbors(Q, k - 1)
    np.testing.assert_array_equal(d1, d0[:, :k - 1])
    np.testing.assert_array_equal(i1, i0[:, :k - 1])
    # radius: the same rows, in the same order, up to the k-th distance
    rd, ri = m.radius_neighbors(Q, 0.0)
    for q in range(len(Q)):
        assert (rd[q] == 0).all()
    rd, ri = m.radius_neighbors(Q[:10], float(d0[:10, -1].max()))
    for q in range(10):
        sel = rd[q] <= d0[q, -1]
        np.testing.assert_array_equal(rd[q][sel][:k], d0[q][:sel.sum()])
        np.testing.assert_array_equal(ri[q][sel][:k], i0[q][:sel.sum()])


@pytest.mark.parametrize("p", [1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize("gen", [ages, counts])
def test_integer_data_matches_the_exact_order(gen, p):
    """The order is the exact one, ties by index.  With one column, equal exact distances
    are equal differences: they must tie exactly.  With several columns, rows whose
    difference vectors are equal must tie exactly; two different vectors with the same
    exact sum (3/11 + 0 + 0 against 1/11 + 1/11 + 1/11) may round apart by an ulp, so
    there the exact order is only checked between clearly different distances."""
    rng = np.random.default_rng(11)
    X = gen(rng, 250)
    Q = gen(rng, 40)
    m = hdist.Metric("minkowski", p=p).fit(X)
    delta = [int(X[:, a].max() - X[:, a].min()) for a in range(X.shape[1])]
    k = 15
    d, i = m.kneighbors(Q, k)
    one = X.shape[1] == 1
    for q in range(len(Q)):
        keys = _exact_key(X, Q[q], delta, p)
        diffs = [tuple(np.abs(X[j] - Q[q])) for j in range(len(X))]
        want = sorted(range(len(X)), key=lambda j: (keys[j], j))[:k]
        if one:
            assert i[q].tolist() == want
        kth = keys[want[-1]]
        got = i[q].tolist()
        for j in range(len(X)):
            if keys[j] < kth * (1 - Fraction(1, 10 ** 9)):
                assert j in got
        for a in range(k):
            for b in range(a + 1, k):
                ja, jb = got[a], got[b]
                if one and keys[ja] == keys[jb] or diffs[ja] == diffs[jb]:
                    assert d[q, a] == d[q, b] and ja < jb
        # every row with the same difference vector as a kept row, and a smaller index,
        # is kept too
        for a in range(k):
            for j in range(got[a]):
                if diffs[j] == diffs[got[a]]:
                    assert j in got


def test_reproducer_two_columns():
    X = np.array([[0, 1], [1, 3], [28, 26], [1, 9]], dtype=float)
    q = np.array([[5, 6]], dtype=float)
    m = hdist.Metric("heom").fit(X)
    d1, i1 = m.kneighbors(q, 1)
    d2, i2 = m.kneighbors(q, 2)
    assert i1.tolist() == [[1]]
    assert i2.tolist() == [[1, 3]]
    assert d2[0, 0] == d2[0, 1]


def test_symmetric_ages_go_to_the_smaller_index():
    # one column, ages 18..90, every row and its mirror around the query: the smaller index
    # wins every tie
    X = np.arange(18, 91, dtype=float)[:, None]
    m = hdist.Metric("heom").fit(X)
    wins = 0
    for age in range(19, 90):
        d, i = m.kneighbors(np.array([[age]], dtype=float), 3)
        assert d[0, 1] == d[0, 2]
        assert i[0, 1] < i[0, 2]
        wins += 1
    assert wins == 71


@pytest.mark.parametrize("name", ["heom", "gower", "hvdm", "manhattan", "chebyshev",
                                  "fractional"])
def test_mixed_tie_heavy_paths_agree(name):
    rng = np.random.default_rng(3)
    X = mixed_counts(rng, 240)
    y = rng.integers(0, 3, 240)
    Q = mixed_counts(rng, 50)
    m = hdist.Metric(name, nominal=[1]).fit(X, y if name == "hvdm" else None)
    k = 10
    d0, i0 = _agreed(m, Q, k)
    for kk in range(1, k):
        dk, ik = m.kneighbors(Q, kk)
        np.testing.assert_array_equal(ik, i0[:, :kk])


from hypothesis import given, settings, strategies as st, HealthCheck  # noqa: E402


@st.composite
def grid_data(draw):
    n = draw(st.integers(5, 40))
    m = draw(st.integers(1, 3))
    step = draw(st.sampled_from([1.0, 0.01, 0.05, 0.25, 10.0]))
    lo = draw(st.integers(-50, 50))
    cells = draw(st.lists(st.integers(0, 9), min_size=(n + 6) * m, max_size=(n + 6) * m))
    A = np.round((lo + np.array(cells, dtype=float).reshape(n + 6, m)) * step, 2)
    p = draw(st.sampled_from(PS))
    k = draw(st.integers(1, n))
    return A[:n], A[n:], p, k


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_data())
def test_hypothesis_grid_data_every_path(data):
    X, Q, p, k = data
    m = hdist.Metric("minkowski", p=p).fit(X)
    d0, i0 = _agreed(m, Q, k)
    if k > 1:
        d1, i1 = m.kneighbors(Q, k - 1)
        np.testing.assert_array_equal(i1, i0[:, :k - 1])


def _tied_reference(D, k, exclude_self=False):
    """Plain numpy: for each row of distances ``D``, the rows ordered by (distance,
    index) up to the k-th and every other row at the k-th distance."""
    out = []
    for q in range(len(D)):
        d = D[q].copy()
        if exclude_self:
            d[q] = np.inf
        order = np.lexsort((np.arange(len(d)), d))
        out.append(order[d[order] <= d[order[k - 1]]])
    return out


def _doubled(query, k, avail):
    """Lists widened by asking for twice as many neighbors until none is cut inside a
    tie with the k-th (the rule the tied lists must equal)."""
    width = k
    dist, ind = query(width)
    while width < avail and (dist[:, -1] == dist[:, k - 1]).any():
        width = min(avail, 2 * width)
        dist, ind = query(width)
    return dist, ind


@pytest.mark.parametrize("metric", ["heom", "chebyshev", "vdm", "gower"])
@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_include_votes_equal_lists_widened_by_doubling(metric, k, weights):
    """With ties="include" the rows tied with the k-th come from the same search (no
    radius search, no second k-NN search); the votes equal those of lists widened by
    doubling until no tie is cut, on data where most rows tie."""
    from hdist._search import votes as _knn
    from hdist.neighbors import KNeighborsClassifier
    rng = np.random.default_rng(k)
    n, q = 400, 150

    def frame(m):
        return pd.DataFrame({"a": rng.integers(0, 3, m).astype(float),
                             "b": rng.choice(list("xyz"), m).astype(object),
                             "c": rng.choice(list("pq"), m).astype(object)})
    X, Q = frame(n), frame(q)
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    y = rng.integers(0, 3, n)
    est = KNeighborsClassifier(k, metric=metric, weights=weights, ties="include",
                               metric_params={"nominal": ["b", "c"]} if metric == "vdm"
                               else None).fit(X if metric != "vdm" else X[["b", "c"]], y)
    Qm = Q if metric != "vdm" else Q[["b", "c"]]
    calls = []
    index = est._index
    for name in ("radius_neighbors", "kneighbors", "_kneighbors"):
        search = getattr(index, name)
        setattr(index, name, lambda *a, _s=search, _n=name, **kw: calls.append(_n) or
                _s(*a, **kw))
    got = est.predict_proba(Qm)
    assert calls == ["_kneighbors"]             # one search, ties included
    for name in ("radius_neighbors", "kneighbors", "_kneighbors"):
        del index.__dict__[name]
    d, i = _doubled(lambda width: index.kneighbors(Qm, width), k, len(X))
    assert d.shape[1] > 2 * k                  # the ties are real and wide
    want = _knn.vote_probabilities(_knn.class_votes(y[i], _knn.tie_weights(d, k, weights,
                                                                            "include"), 3))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)
    # the leave-one-out predictions: the training rows each without itself
    got = est.predict_proba(None)
    d, i = _doubled(lambda width: index.kneighbors(None, width, exclude_self=True), k,
                    len(X) - 1)
    want = _knn.vote_probabilities(_knn.class_votes(y[i], _knn.tie_weights(d, k, weights,
                                                                            "include"), 3))
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def _tied_paths(m, X, Q, k, exclude_self=False):
    """The lists with the rows tied with the k-th of every search path, as
    ``(name, dist, ind)``: the tile kernel on both strategies (several thread counts and
    tile sizes), the matrix-product filter (float32 and float64), the trees, the brute
    force of an index, by blocks of queries (progress) and on the rows themselves."""
    from hdist._search import gemm_filter as _gemm
    rows = m.encode(Q) if Q is not None else m.train_
    cQ = CRows(rows)
    st = m._fitted()
    out = []
    for strategy in ("queries", "references"):
        for threads, tile in ((1, 256), (2, 7), (3, 64)):
            d, i = knn(m.plan_.cplan, cQ, m._ctrain(), k, threads, tile=tile,
                       strategy=strategy, exclude_self=exclude_self, ties=True)
            out.append(("direct-%s-%d" % (strategy, threads), d, i))
    if m.plan_.pmode == 2:
        for dtype in (np.float32, np.float64):
            res = _gemm.knn(st.plan, rows, st.train, cQ, st.crows(), k, 2, exclude_self,
                            dtype=dtype, ties=True)
            if res is not None:
                out.append(("gemm-" + np.dtype(dtype).name, *res))
    algos = ["brute", "kd_tree"]
    if m.plan_.p >= 1 and not m.plan_.has_ignore:
        algos.append("ball_tree")
    for algo in algos:
        try:
            idx = hdist.NeighborsIndex(m, algorithm=algo, leaf_size=4).fit()
        except ValueError:          # the ball tree is not exact on these rows
            continue
        out.append((algo, *idx._kneighbors(Q, k, exclude_self, n_jobs=2, ties=True)))
        out.append((algo + "-blocks", *idx._kneighbors(Q, k, exclude_self, n_jobs=2,
                                                        progress=lambda a, b: None,
                                                        ties=True)))
    out.append(("metric", *m._kneighbors(Q, k, exclude_self, ties=True)))
    return out


def _check_tied(m, X, Q, k, exclude_self=False):
    D = m.pairwise(X if Q is None else Q, X)
    want = _tied_reference(D, k, exclude_self)
    widths = set()
    for name, d, i in _tied_paths(m, X, Q, k, exclude_self):
        assert d.shape == i.shape and d.shape[1] >= k, name
        for q, idx in enumerate(want):
            n = len(idx)
            np.testing.assert_array_equal(i[q, :n], idx, err_msg="%s, row %d" % (name, q))
            np.testing.assert_array_equal(d[q, :n], D[q, idx], err_msg=name)
            assert np.isinf(d[q, n:]).all() and (i[q, n:] == 0).all(), name
        widths.add(d.shape[1])
        # the first k columns are kneighbors' lists
        d0, i0 = m.kneighbors(Q, k, exclude_self=exclude_self)
        np.testing.assert_array_equal(d[:, :k], d0, err_msg=name)
        np.testing.assert_array_equal(i[:, :k], i0, err_msg=name)
    return max(len(w) for w in want)


@pytest.mark.parametrize("name", ["heom", "hvdm", "gower", "manhattan", "chebyshev",
                                  "fractional"])
@pytest.mark.parametrize("k", [1, 4, 9])
def test_tied_lists_equal_the_reference_on_every_path(name, k):
    """The search that keeps the rows tied with the k-th (``ties=True``) lists exactly
    the rows at a distance at most the k-th one's, in (distance, index) order, on every
    path, thread count and tile size, with missing values."""
    rng = np.random.default_rng(k)
    X = mixed_counts(rng, 260)
    X[rng.random(260) < 0.1, 0] = np.nan
    X[rng.random(260) < 0.1, 1] = None
    Q = mixed_counts(rng, 45)
    Q[rng.random(45) < 0.1, 2] = np.nan
    y = rng.integers(0, 3, 260)
    m = hdist.Metric(name, nominal=[1]).fit(X, y if name == "hvdm" else None)
    widest = _check_tied(m, X, Q, k)
    assert widest > k + 1                       # the data ties at the k-th
    _check_tied(m, X, None, k, exclude_self=True)


@pytest.mark.parametrize("k", [1, 5])
@pytest.mark.needs_data
def test_tied_lists_on_real_data(k):
    """credit-a (Quinlan's credit approval data, missing values in seven columns)."""
    from strategies import load_dataset
    ds = load_dataset("credit-a", codes_as_numbers=False)
    frame = ds.frame()
    nominal = [c for c, kind in zip(ds.table.names, ds.table.kinds) if kind != "continuous"]
    for name in ("heom", "hvdm"):
        m = hdist.Metric(name, nominal=nominal).fit(frame, np.array(ds.y, dtype=object))
        _check_tied(m, frame, frame.iloc[::7], k)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(grid_data())
def test_hypothesis_tied_lists_every_path(data):
    X, Q, p, k = data
    m = hdist.Metric("minkowski", p=p).fit(X)
    _check_tied(m, X, Q, k)
    if k < len(X):
        _check_tied(m, X, None, k, exclude_self=True)
