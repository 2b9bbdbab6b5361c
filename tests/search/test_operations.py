"""Operations over encoded rows: the same bits as the Metric's own pairwise and k-NN
search, prepared rows or not, on any thread count."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search import operations as ops


def fitted(name="hvdm", n=90, seed=5):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["x", "y", "z"], n),
                      "c": rng.normal(size=n) * 3.0})
    X.loc[rng.random(n) < 0.15, "a"] = np.nan
    X.loc[rng.random(n) < 0.1, "b"] = None
    return hdist.Metric(name).fit(X, rng.integers(0, 2, n)), X


@pytest.mark.parametrize("name", ["hvdm", "heom", "gower", "chebyshev"])
@pytest.mark.parametrize("threads", [1, 2])
def test_distances_are_the_metrics_pairwise(name, threads, monkeypatch):
    from hdist import _kernels
    monkeypatch.setattr(_kernels.plan, "SERIAL_PAIRS", 0)     # threads even on few pairs
    m, X = fitted(name)
    A = m.encode(X.iloc[:25])
    B = m.train_
    np.testing.assert_array_equal(ops.distances(m, A, B, threads=threads),
                                  m.pairwise(X.iloc[:25], X))
    np.testing.assert_array_equal(ops.distances(m, B, threads=threads), m.pairwise(X))
    red = ops.distances(m, A, ops.prepare(B), threads=threads, reduced=True)
    np.testing.assert_array_equal(red, m.pairwise(X.iloc[:25], X, reduced=True))
    out = np.empty((A.n, B.n))
    assert ops.distances(m, A, B, out=out) is out


@pytest.mark.parametrize("threads", [1, 2])
def test_nearest_is_the_metrics_knn(threads):
    m, X = fitted()
    P = ops.prepare(m.train_)
    assert ops.prepare(P) is P and P.n == m.train_.n and P.rows is m.train_
    d, i = ops.nearest(m, m.encode(X.iloc[:30]), P, 4, threads=threads)
    dm, im = m.kneighbors(X.iloc[:30], 4)
    np.testing.assert_array_equal(d, dm)
    np.testing.assert_array_equal(i, im)
    d, i = ops.nearest(m, P, P, 3, threads=threads, exclude_self=True)
    dm, im = m.kneighbors(None, 3, exclude_self=True)
    np.testing.assert_array_equal(d, dm)
    np.testing.assert_array_equal(i, im)


def test_bad_input():
    m, X = fitted()
    rows = m.train_
    with pytest.raises(TypeError, match="metric must be a fitted hdist.Metric"):
        ops.distances(hdist.Metric("heom"), rows)
    with pytest.raises(TypeError, match="B must be encoded rows"):
        ops.distances(m, rows, np.zeros((3, 3)))
    with pytest.raises(TypeError, match="rows must be encoded rows"):
        ops.prepare(X)
    with pytest.raises(ValueError, match="out must be a C-contiguous float64 array"):
        ops.distances(m, rows, out=np.empty((2, 2)))
