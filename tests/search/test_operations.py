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
    with pytest.raises(ValueError, match="^out must have shape"):
        ops.distances(m, rows, out=np.empty((2, 2)))


def test_rows_of_another_metric_are_refused():
    """Rows another metric encoded have other blocks than the metric's Plan reads: the
    kernels would read past them, so both operations refuse them, naming the argument."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=40), "b": rng.choice(["x", "y", "z"], 40),
                      "c": rng.normal(size=40)})
    y = rng.integers(0, 2, 40)
    m = hdist.Metric("hvdm").fit(X, y)
    own = m.encode(X.iloc[:4])
    for other in (hdist.Metric("heom").fit(X[["a"]]), hdist.Metric("heom").fit(X),
                  hdist.Metric("ivdm").fit(X, y)):
        rows = other.train_
        with pytest.raises(ValueError, match="^A .*continuous|^A .*nominal|^A .*embedded"):
            ops.distances(m, rows)
        with pytest.raises(ValueError, match="^B "):
            ops.distances(m, own, rows)
        with pytest.raises(ValueError, match="^B "):
            ops.distances(m, own, ops.prepare(rows))
        with pytest.raises(ValueError, match="^A "):
            ops.nearest(m, rows, own, 1)
        with pytest.raises(ValueError, match="^B "):
            ops.nearest(m, own, ops.prepare(rows), 1)
    # rows whose arrays disagree with their own count
    bad = m.encode(X.iloc[:4])
    bad.n = 5
    with pytest.raises(ValueError, match="^A .*5 rows"):
        ops.distances(m, bad)


def test_bad_arguments_name_themselves():
    m, X = fitted()
    A = m.encode(X.iloc[:5])
    B = m.encode(X.iloc[:3])
    with pytest.raises(TypeError, match="^out must be a numpy array"):
        ops.distances(m, A, B, out=[[0.0] * 3] * 5)
    with pytest.raises(ValueError, match="^out must have dtype float64"):
        ops.distances(m, A, B, out=np.zeros((5, 3), np.float32))
    for threads in ("a", 1.5, True, None):
        with pytest.raises(TypeError, match="^threads must be an int"):
            ops.distances(m, A, B, threads=threads)
        with pytest.raises(TypeError, match="^threads must be an int"):
            ops.nearest(m, A, B, 1, threads=threads)
    for threads in (0, -1):
        with pytest.raises(ValueError, match="^threads must be >= 1"):
            ops.distances(m, A, B, threads=threads)
        with pytest.raises(ValueError, match="^threads must be >= 1"):
            ops.nearest(m, A, B, 1, threads=threads)
    assert ops.distances(m, A, B, threads=np.int64(2)).shape == (5, 3)
    for k in (2.5, True, "2", None):
        with pytest.raises(TypeError, match="^k must be an int"):
            ops.nearest(m, A, B, k)
    with pytest.raises(ValueError, match="^k must be >= 1"):
        ops.nearest(m, A, B, 0)
    with pytest.raises(ValueError, match="k = 4 is larger"):
        ops.nearest(m, A, B, 4)
    with pytest.raises(ValueError, match="exclude_self.*A has 5 rows and B 3"):
        ops.nearest(m, A, B, 1, exclude_self=True)
    with pytest.raises(ValueError, match="k = 5 is larger"):
        ops.nearest(m, A, A, 5, exclude_self=True)
