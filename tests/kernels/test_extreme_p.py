"""Extreme p never loses a term: every distance within 1e-12 relative of an exact reference
computed in 60-digit decimal arithmetic, on every path."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import hdist
from hdist._kernels import CRows, knn

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


def exact_minkowski(X, Y, p, weights, delta, missing="one", lo=None, hi=None):
    """Decimal reference of the Minkowski family on continuous columns (NaN = missing)."""
    out = np.empty((len(X), len(Y)))
    with localcontext() as ctx:
        ctx.prec = 60
        P = Decimal(float(p))
        for i, x in enumerate(X):
            for j, y in enumerate(Y):
                total = Decimal(0)
                known = Decimal(0)
                wall = Decimal(0)
                for a in range(len(x)):
                    w = Decimal(float(weights[a]))
                    wall += w
                    dl = Decimal(float(delta[a]))
                    if math.isnan(x[a]) or math.isnan(y[a]):
                        if missing == "ignore":
                            continue
                        if missing == "max":
                            v = y[a] if math.isnan(x[a]) else x[a]
                            if math.isnan(v):
                                d = (Decimal(float(hi[a])) - Decimal(float(lo[a]))) / dl
                            else:
                                v = Decimal(float(v))
                                d = max(v - Decimal(float(lo[a])), Decimal(float(hi[a])) - v) / dl
                        else:
                            d = Decimal(1)
                    else:
                        d = abs(Decimal(float(x[a])) - Decimal(float(y[a]))) / dl
                    known += w
                    if d != 0 and w != 0:
                        total += w * d ** P
                if missing == "ignore" and known < wall:
                    total = total * wall / known if known > 0 else wall
                out[i, j] = float(total ** (Decimal(1) / P)) if total != 0 else 0.0
    return out


CASES = [
    # (p, weights, values): the reproducers and their neighbours
    (1000.0, [1.0], [[0.0], [0.3], [1.0], [0.7]]),
    (60.0, [1.0, 1.0], [[0.0, 0.0], [1e-6, 1e-6], [1.0, 1.0], [3e-6, 0.5e-6]]),
    (0.01, [1e-4, 1.0], [[0.0, 0.0], [1.0, 1.0], [1.0, 0.0], [0.5, 0.25]]),
    (0.05, [1e-30, 2.0], [[0.0, 0.0], [1.0, 1.0], [0.0, 1.0], [1e-9, 0.5]]),
    (300.0, [1.0, 1e-3, 7.0], [[0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1.0, 1.0, 1.0],
                               [1e-3, 0.9, 1e-4], [0.2, 0.1, 0.3]]),
    (7.5, [1.0, 1.0], [[0.0, 0.0], [1e-40, 1e-41], [1.0, 1.0], [2e-40, 0.0]]),
]


def _all_paths(m, Q, k):
    rows = m.encode(Q)
    res = {"direct": knn(m.plan_.cplan, CRows(rows), m._ctrain(), k, 1),
           "direct-ref": knn(m.plan_.cplan, CRows(rows), m._ctrain(), k, 2, tile=3,
                             strategy="references")}
    for algo in ("kd_tree", "ball_tree"):
        try:
            idx = hdist.NeighborsIndex(m, algorithm=algo, leaf_size=2).fit()
        except ValueError as exc:      # the ball tree where the triangle inequality fails
            assert algo == "ball_tree" and "not exact here" in str(exc)
            continue
        res[algo] = idx.kneighbors(Q, k)
    return res


@pytest.mark.parametrize("p,weights,values", CASES)
def test_extreme_p_within_1e12_of_the_exact_value(p, weights, values):
    X = np.array(values, dtype=float)
    m = hdist.Metric("minkowski", p=p, weights=weights).fit(X)
    D = m.pairwise(X)
    ref = exact_minkowski(X, X, p, weights, _deltas(m))
    np.testing.assert_allclose(D, ref, rtol=1e-12, atol=0)
    # every search path returns the same neighbours with the same distances
    Q = X + 1e-7 * np.arange(1, X.shape[1] + 1)
    res = _all_paths(m, Q, len(X))
    d0, i0 = res["direct"]
    np.testing.assert_allclose(d0, exact_minkowski(Q, X, p, weights, _deltas(m))[
        np.arange(len(Q))[:, None], i0], rtol=1e-12, atol=0)
    for name, (d, i) in res.items():
        np.testing.assert_array_equal(d, d0, err_msg=name)
        np.testing.assert_array_equal(i, i0, err_msg=name)
    # radius sees the same distances
    rd, ri = m.radius_neighbors(Q, float(d0.max()))
    for q in range(len(Q)):
        np.testing.assert_array_equal(rd[q], d0[q])


def _deltas(m):
    d = m.delta_
    return list(d.values()) if isinstance(d, dict) else list(d)


@pytest.mark.parametrize("missing", ["one", "max", "ignore"])
@pytest.mark.parametrize("p", [0.02, 45.0, 700.0])
def test_extreme_p_with_missing_values(p, missing):
    rng = np.random.default_rng(5)
    X = rng.random((25, 3)) * np.array([1.0, 1e-4, 100.0])
    X[rng.random(X.shape) < 0.2] = np.nan
    X[0] = [0.5, 5e-5, 50.0]
    m = hdist.Metric("minkowski", p=p, missing=missing).fit(X)
    lo = np.nanmin(X, axis=0)
    hi = np.nanmax(X, axis=0)
    D = m.pairwise(X)
    ref = exact_minkowski(X, X, p, [1.0] * 3, _deltas(m), missing, lo, hi)
    np.testing.assert_allclose(D, ref, rtol=1e-12, atol=0)
    d, i = m.kneighbors(X, 6)
    res = _all_paths(m, X, 6)
    for name, (dd, ii) in res.items():
        np.testing.assert_array_equal(dd, d, err_msg=name)
        np.testing.assert_array_equal(ii, i, err_msg=name)


def test_large_p_with_nominal_tables():
    # VDM tables under a large p: the unraised tables serve the exact fallback
    rng = np.random.default_rng(2)
    n = 60
    X = np.empty((n, 2), dtype=object)
    X[:, 0] = rng.choice(list("abcd"), n)
    X[:, 1] = rng.random(n) * 1e-5
    y = rng.integers(0, 3, n)
    m = hdist.Metric("hvdm", p=400.0, nominal=[0]).fit(X, y)
    D = m.pairwise(X[:10])
    # against the largest term alone (p = 400: the root of a sum of two terms differs from
    # the largest by at most a factor 2^(1/400))
    E = hdist.Metric("hvdm", p=math.inf, nominal=[0]).fit(X, y).pairwise(X[:10])
    assert np.all(D >= E * (1 - 1e-12))
    assert np.all(D <= E * 2 ** (1 / 400) * (1 + 1e-12))
    assert np.all(D[~np.eye(10, dtype=bool)] > 0)


def test_p2_distances_outside_the_safe_range_are_exact():
    """p = 2 squares each term: a difference of 1e-300 underflows and one of 4e200
    overflows in the reduced sum, while the true distances are ordinary floats; those
    pairs are computed again with every term scaled, as for a general p."""
    X = np.array([[0.0], [2e-300], [1.0]])
    m = hdist.Metric("euclidean").fit(X)
    assert m.pairwise(X[:1], X[1:2])[0, 0] == pytest.approx(2e-300, rel=1e-12)
    X = np.array([[0.0, 0.0], [3e200, 4e200]])
    m = hdist.Metric("minkowski", p=2.0, normalization="none").fit(X)
    assert m.pairwise(X[:1], X[1:2])[0, 0] == pytest.approx(5e200, rel=1e-12)
    # order kept: rows at 1e-160 and 2e-160 (range 1) are not tied at 0
    X = np.array([[0.0], [2e-160], [1e-160], [1.0]])
    for algorithm in ("brute", "kd_tree", "ball_tree"):
        idx = hdist.NeighborsIndex("euclidean", algorithm=algorithm).fit(X)
        d, i = idx.kneighbors([[0.0]], 3)
        np.testing.assert_array_equal(i, [[0, 2, 1]])
        np.testing.assert_allclose(d, [[0.0, 1e-160, 2e-160]], rtol=1e-12)
    d, i = hdist.Metric("euclidean").fit(X).kneighbors([[0.0]], 3)
    np.testing.assert_array_equal(i, [[0, 2, 1]])


def test_fractional_p_true_distances_that_underflow_tie_at_zero_on_every_path():
    """p < 1: a reduced sum below (5e-324)^p has true distance 0; such rows tie with exact
    duplicates at 0 and are returned in index order by every algorithm and by radius 0."""
    X = np.array([[1.0, "a"], [0.9, "a"], [0.0, "a"], [0.0, "a"], [0.5, "b"], [1.0, "b"]],
                 dtype=object)
    m = hdist.Metric("minkowski", p=0.3, weights=[1e-150, 1.0], nominal=[1]).fit(X)
    q = np.array([[0.0, "a"]], dtype=object)
    np.testing.assert_array_equal(m.pairwise(q, X), [[0, 0, 0, 0, 1, 1]])
    for algorithm in ("brute", "kd_tree", "ball_tree"):
        for leaf in (1, 2, 8):
            try:
                idx = hdist.NeighborsIndex(m, algorithm=algorithm, leaf_size=leaf).fit()
            except ValueError:          # the ball tree refuses some plans: not this one
                assert algorithm == "ball_tree"
                continue
            d, i = idx.kneighbors(q, 3)
            np.testing.assert_array_equal(i, [[0, 1, 2]])
            D, I = idx.radius_neighbors(q, 0.0)
            np.testing.assert_array_equal(I[0], [0, 1, 2, 3])
    D, I = m.radius_neighbors(q, 0.0)
    np.testing.assert_array_equal(I[0], [0, 1, 2, 3])
