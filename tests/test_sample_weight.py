"""sample_weight in the k-NN estimators: a row of integer weight m votes exactly as m
copies of it do, checked against the unweighted estimators fitted on repeated rows."""
import numpy as np
import pandas as pd
import pytest

from hdist import _knn
from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor


def tied_data(seed, n=60, n_query=40):
    """Mixed rows on a coarse grid (many exact distance ties) with missing values."""
    rng = np.random.default_rng(seed)
    N = n + n_query
    a = rng.integers(0, 5, size=N).astype(float)
    b = rng.integers(0, 3, size=N).astype(float)
    c = rng.choice(["u", "v", "w"], size=N).astype(object)
    a[rng.random(N) < 0.1] = np.nan
    c[rng.random(N) < 0.1] = None
    X = pd.DataFrame({"a": a, "b": b, "c": c})
    y = rng.choice(["p", "q", "r"], size=N)
    target = rng.normal(size=N)
    return X.iloc[:n].reset_index(drop=True), y[:n], target[:n], X.iloc[n:], rng


def integer_weights(X, rng):
    """Weights in 0..3, a few rows of weight 0 (left out of the metric's fit)."""
    sw = rng.integers(1, 4, size=len(X))
    sw[rng.choice(len(X), size=6, replace=False)] = 0
    return sw


def repeated(X, y, sw):
    rows = np.repeat(np.arange(len(X)), sw)
    return X.iloc[rows].reset_index(drop=True), np.asarray(y)[rows]


def outputs(est, Q):
    """Probabilities of a classifier, predictions of a regressor."""
    return est.predict_proba(Q) if hasattr(est, "classes_") else est.predict(Q)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("cls", [KNeighborsClassifier, KNeighborsRegressor])
def test_integer_weights_equal_repeated_rows(cls, seed, ties, weights, k):
    X, y, t, Q, rng = tied_data(seed)
    target = y if cls is KNeighborsClassifier else t
    sw = integer_weights(X, rng)
    est = dict(n_neighbors=k, weights=weights, ties=ties, metric="heom")
    weighted = cls(**est).fit(X, target, sample_weight=sw)
    Xr, tr = repeated(X, target, sw)
    plain = cls(**est).fit(Xr, tr)
    np.testing.assert_allclose(outputs(weighted, Q), outputs(plain, Q), rtol=1e-12, atol=1e-12)
    if cls is KNeighborsClassifier:
        np.testing.assert_array_equal(weighted.predict(Q), plain.predict(Q))


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
def test_unit_weights_change_nothing(ties, weights):
    X, y, t, Q, rng = tied_data(3)
    for cls, target in ((KNeighborsClassifier, y), (KNeighborsRegressor, t)):
        est = dict(n_neighbors=4, weights=weights, ties=ties, select_k="loo")
        a = cls(**est).fit(X, target)
        b = cls(**est).fit(X, target, sample_weight=np.ones(len(X)))
        np.testing.assert_allclose(b.loo_scores_, a.loo_scores_, rtol=1e-12)
        np.testing.assert_allclose(outputs(b, Q), outputs(a, Q), rtol=1e-12)


def test_fractional_weights_reach_past_k_rows():
    """Weights below 1 widen the neighborhood until its weight reaches k: with every
    weight 1/2, k = 2 uses the 4 nearest rows, as k = 4 does unweighted."""
    X, y, _, Q, _ = tied_data(4)
    half = KNeighborsClassifier(n_neighbors=2, ties="index").fit(
        X, y, sample_weight=np.full(len(X), 0.5))
    four = KNeighborsClassifier(n_neighbors=4, ties="index").fit(X, y)
    np.testing.assert_allclose(half.predict_proba(Q), four.predict_proba(Q), rtol=1e-12)


def test_mass_weights_by_hand():
    """One query, neighbors at 0.1, 0.2, 0.2, 0.5 with weights 1, 0, 2, 3 and k = 3."""
    dist = np.array([[0.1, 0.2, 0.2, 0.5]])
    mass = np.array([[1.0, 0.0, 2.0, 3.0]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 3, "uniform", "index"),
                                  [[1, 0, 2, 0]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 2, "uniform", "index"),
                                  [[1, 0, 1, 0]])
    # k = 4: the row at 0.5 carries the 4th unit, counted with 1 of its 3 (index) or all
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 4, "uniform", "index"),
                                  [[1, 0, 2, 1]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 4, "uniform", "include"),
                                  [[1, 0, 2, 3]])
    # Dudani with d_1 = 0.1 and d_k = 0.5: (0.5 - d) / 0.4 times the counted weight
    np.testing.assert_allclose(_knn.mass_weights(dist, mass, 4, "dudani", "index"),
                               [[1.0, 0.0, 2 * 0.75, 0.0]])
    # a weightless nearest row is not Dudani's d_1
    mass0 = np.array([[0.0, 1.0, 1.0, 1.0]])
    np.testing.assert_allclose(_knn.mass_weights(dist, mass0, 3, "dudani", "index"),
                               [[0.0, 1.0, 1.0, 0.0]])
    assert _knn.mass_complete(dist, mass, 6, "index").tolist() == [True]
    assert _knn.mass_complete(dist, mass, 7, "index").tolist() == [False]
    assert _knn.mass_complete(dist, mass, 2, "include").tolist() == [True]
    assert _knn.mass_complete(dist, mass, 4, "include").tolist() == [False]


@pytest.mark.parametrize("sw, message", [
    (-np.ones(60), "non-negative"),
    (np.r_[np.ones(59), np.nan], "finite"),
    (np.ones(59), "one weight per training row"),
    (np.zeros(60), "all zero"),
    (np.array(["a"] * 60, dtype=object), "numbers"),
])
def test_bad_sample_weight(sw, message):
    X, y, t, _, _ = tied_data(5)
    for cls, target in ((KNeighborsClassifier, y), (KNeighborsRegressor, t)):
        with pytest.raises((ValueError, TypeError), match=message):
            cls().fit(X, target, sample_weight=sw)


def as_table(X, kind):
    if kind == "pandas":
        return X
    if kind == "numpy":
        return X.to_numpy(dtype=object)
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.from_pandas(X)
    pa = pytest.importorskip("pyarrow")
    return pa.Table.from_pandas(X, preserve_index=False)


@pytest.mark.parametrize("kind", ["pandas", "numpy", "polars", "pyarrow"])
@pytest.mark.parametrize("metric", ["heom", "hvdm", "gower"])
def test_zero_weight_rows_are_absent(kind, metric):
    """0/1 weights equal fitting on the rows of weight 1 only, for metrics that learn
    ranges, standard deviations and class tables in fit."""
    X, y, t, Q, rng = tied_data(6)
    sw = (rng.random(len(X)) < 0.7).astype(int)
    keep = np.flatnonzero(sw)
    Xk, yk = repeated(X, y, sw)
    Qt = as_table(Q.reset_index(drop=True), kind)
    for cls, target in ((KNeighborsClassifier, y), (KNeighborsRegressor, t)):
        est = dict(n_neighbors=3, metric=metric, weights="distance")
        a = cls(**est).fit(as_table(X, kind), target, sample_weight=sw)
        b = cls(**est).fit(as_table(Xk, kind), np.asarray(target)[keep])
        np.testing.assert_allclose(outputs(a, Qt), outputs(b, Qt), rtol=1e-12, atol=1e-12)
