"""Continuous columns far from 0, and the largest distance the weights allow.

- Values are stored as ``x · 2^e`` (docs/metrics.md, section 3), not shifted by the training
  minimum: a shift by a minimum much larger in magnitude than the values rounds the values
  away (``3e-9 − (−1e8)`` is ``1e8``), so distinct values would tie and the true nearest
  neighbour would be lost.  Every path (direct kernel, matrix-product filter, KD tree,
  ball tree, radius, pairwise, the exact recomputation of tiny sums, Weka's "max" penalty)
  must return the exact neighbours of an 80-digit reference.
- ``p < 1`` with weights whose ``(Σ w)^(1/p)`` overflows is refused (docs/metrics.md,
  section 2): every distance with a difference in a heavy column would be ``inf``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from hdist import Embedding, Metric
from hdist._search import gemm_filter as _gemm
from hdist._kernels import CRows

from reference import CONTINUOUS, NOMINAL
from test_review_edges import (close, exact_distances, knn_paths, knn_rows,
                               radius_paths)

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize,
              pytest.mark.filterwarnings("ignore:column .* not seen in fit:UserWarning")]

#: |min| far above the values that matter; a column of large values with a tiny spread
SMALL = [-1e8, 1e8] + [k * 1e-9 for k in range(-4, 5)]
SMALL_EXACT = [-5e15] + [0.25, 0.5, 0.75, 1.0, 1.25, 0.1, 0.2, 0.7]
FAR = [1e12 + j * 2.0 ** -10 for j in range(8)]


def offset_table(seed, n=60, nq=10, p_missing=0.15, unseen=True):
    rng = np.random.default_rng(seed)
    X = np.empty((n + nq, 4), dtype=object)
    X[:, 0] = rng.choice(SMALL, n + nq)
    X[:, 1] = rng.choice(SMALL_EXACT, n + nq)
    X[:, 2] = rng.choice(["a", "b", "c"], n + nq)
    X[:, 3] = rng.choice(FAR, n + nq)
    X[0, 0], X[1, 0], X[0, 1], X[1, 1], X[0, 3], X[1, 3] = -1e8, 1e8, -5e15, 1.25, FAR[0], \
        FAR[-1]
    X[n:, 0][::2] = 0.0                       # a query at 0: its neighbours are the 1e-9s
    X[n + 1, 3] = 1e12 + 9 * 2.0 ** -10       # out of the training range
    miss = rng.random(X.shape) < p_missing
    miss[:2] = False
    X[miss] = None
    if unseen:
        X[n:, 2][::3] = "unseen"
    return X[:n], X[n:]


KINDS = [CONTINUOUS, CONTINUOUS, NOMINAL, CONTINUOUS]


def test_review_example_every_path():
    X = np.array([[-1e8], [3e-9], [2e-9], [1e-9], [1e8]])
    Q = np.array([[0.0]])
    exact = np.array([[1e-9, 2e-9, 3e-9]]) / 2e8
    for name in ("manhattan", "euclidean", "chebyshev"):
        m = Metric(name).fit(X)
        for path, (d, i) in knn_paths(m, Q, 3).items():
            assert i.tolist() == [[3, 2, 1]], (name, path)
            assert close(d, exact).all(), (name, path)
        for path, (D, I) in radius_paths(m, Q, 1.2e-17).items():
            assert I[0].tolist() == [3, 2], (name, path)
            assert close(D[0], exact[0, :2]).all(), (name, path)
        assert close(m.pairwise(Q, X[1:4]), exact[:, ::-1]).all()
        assert m.pairwise(X[1:2], X[2:3])[0, 0] > 0.0


@pytest.mark.parametrize("p", (0.5, 1.0, 2.0, 3.0, math.inf))
@pytest.mark.parametrize("missing", ("one", "max", "ignore"))
def test_large_offsets_every_path_exact(p, missing):
    X, Q = offset_table(int(100 * (p if p < 100 else 7)) + len(missing))
    m = Metric("minkowski", p=p, missing=missing, nominal=[2]).fit(X)
    E = exact_distances(X, Q, KINDS, p, missing)
    k = 7
    res = knn_paths(m, Q, k)
    d0, i0 = res["direct1"]
    for path, (d, i) in res.items():
        assert np.array_equal(i, i0) and np.array_equal(d, d0), path
    assert close(d0, np.take_along_axis(E, i0, 1)).all()
    assert close(d0, np.sort(E, axis=1)[:, :k]).all()      # the k smallest, in order
    P = m.pairwise(Q, X)
    assert close(P, E).all()
    r = float(np.median(d0))
    for path, (D, I) in radius_paths(m, Q, r).items():
        for q in range(len(Q)):
            exp = np.flatnonzero(P[q] <= r)
            order = np.lexsort((exp, P[q, exp]))
            assert np.array_equal(I[q], exp[order]), (path, q)


@pytest.mark.parametrize("p", (2.0, 3.0))
def test_large_offsets_tiny_weights_exact_recomputation(p):
    """Reduced sums below 1e-280 are recomputed exactly from the stored values, with
    Weka's "max" penalty taken against the training range in stored units."""
    X, Q = offset_table(int(10 * p), p_missing=0.3)
    w = 1e-290
    m = Metric("minkowski", p=p, missing="max", nominal=[2], weights=[w] * 4).fit(X)
    E = exact_distances(X, Q, KINDS, p, "max") * w ** (1 / p)
    d, i = m.kneighbors(Q, 9)
    assert close(d, np.take_along_axis(E, i, 1)).all()
    assert close(d, np.sort(E, axis=1)[:, :9]).all()
    assert close(m.pairwise(Q, X), E).all()


@pytest.mark.parametrize("missing", ("one", "max"))
def test_filter_on_large_offsets_equals_direct(missing):
    """The matrix-product filter centres the values before it scales them, so a column of
    large values with a tiny spread keeps its digits in the product."""
    X, Q = offset_table(len(missing), n=300, nq=40, unseen=False)
    m = Metric("euclidean", missing=missing, nominal=[2]).fit(X)
    st, rows = m._fitted(), m.encode(Q)
    d0, i0 = knn_rows(m, rows, 9, False, 1, method="direct")
    for dtype in (np.float32, np.float64):
        for nj in (1, 2):
            res = _gemm.knn(st.plan, rows, st.train, CRows(rows), st.crows(), 9, nj,
                            dtype=dtype)
            assert res is not None
            assert np.array_equal(res[1], i0) and np.array_equal(res[0], d0), (dtype, nj)
    E = exact_distances(X, Q, KINDS, 2.0, missing)
    assert close(d0, np.sort(E, axis=1)[:, :9]).all()


def test_embedding_coordinates_from_the_minimum():
    """The embedding's continuous coordinate stays √w · (x − min) / δ."""
    X = np.array([[-1e8, 1e12], [1e8, 1e12 + 1.0], [3e-9, 1e12 + 0.25]])
    Z = Embedding("euclidean").fit(X).transform(X)
    np.testing.assert_array_equal(Z, [[0.0, 0.0], [1.0, 1.0], [0.5, 0.25]])


def test_overflowing_scaled_value_names_its_column():
    X = np.array([[5e-300], [6e-300]])
    m = Metric("manhattan").fit(X)
    with pytest.raises(ValueError, match="column '0': the value 1e\\+300 overflows float64"):
        m.pairwise(np.array([[1e300]]))



def test_overflowing_scaled_value_names_the_first_such_column():
    """The continuous columns are scaled as one block: the error still names the first
    column (in the fitted order) whose value overflowed, and the value that did."""
    X = np.array([[0.0, 5e-300, 5e-300], [1.0, 6e-300, 6e-300]])
    m = Metric("manhattan").fit(X)
    with pytest.raises(ValueError, match="column '1': the value 2e\\+300 overflows float64"):
        m.pairwise(np.array([[7.0, 2e300, 3e300], [8.0, 3e300, 4e300]]))
    with pytest.raises(ValueError, match="column '2': the value 4e\\+300 overflows float64"):
        m.pairwise(np.array([[7.0, 0.0, 0.0], [8.0, 1e-300, 4e300]]))

def test_huge_values_whose_encoded_form_fits():
    """Near float64's largest value the encoded form x · 2^-1000 fits where x - min does
    not: the distance, and Weka's "max" penalty against a missing value, are finite."""
    X = np.array([[-1.5e308, 0.0], [np.nan, 1.0], [-1e308, 0.2]])
    m = Metric("manhattan", missing="max").fit(X)
    D = m.pairwise(np.array([[1.7e308, 0.5]]), X)
    far, near = 1.7e308 / 5e307 + 1.5e308 / 5e307, 1.7e308 / 5e307 + 1e308 / 5e307
    np.testing.assert_allclose(D, [[far + 0.5, far + 0.5, near + 0.3]], rtol=1e-15)


# ------------------------------------------------------------------------------------
# p < 1: weights whose largest distance overflows

def test_p_below_one_weights_overflowing_distance_refused():
    X = np.array([[0.0, 0.0], [1.0, 1.0], [0.5, 0.1], [0.0, 0.9]])
    with pytest.raises(ValueError, match=r"weights .* p = 0\.3.*\(Σ w\)\^\(1/p\)"):
        Metric("minkowski", p=0.3, weights=[1e100, 1.0]).fit(X)
    with pytest.raises(ValueError, match="weights"):
        Metric("minkowski", p=0.5, weights=[1e160, 1e160]).fit(X)
    # (Σ w)^(1/p) finite: accepted, every distance finite and in order
    m = Metric("minkowski", p=0.3, weights=[1e90, 1.0]).fit(X)
    d, i = m.kneighbors([[0.0, 0.0]], 4)
    assert np.isfinite(d).all() and i.tolist() == [[0, 3, 2, 1]]
    exact = [0.0, 0.9, (1e90 * 0.5 ** 0.3 + 0.1 ** 0.3) ** (1 / 0.3),
             (1e90 + 1.0) ** (1 / 0.3)]
    np.testing.assert_allclose(d[0], exact, rtol=1e-12)
    # the mean is bounded by the largest component: any finite weights
    g = Metric("minkowski", p=0.3, weights=[1e100, 1.0], aggregate="mean").fit(X)
    d, i = g.kneighbors([[0.0, 0.0]], 4)
    assert np.isfinite(d).all() and i.tolist() == [[0, 3, 2, 1]]
    # p >= 1: (Σ w)^(1/p) <= Σ w, which the weight check already keeps finite
    Metric("minkowski", p=1.0, weights=[1e300, 1.0]).fit(X)
