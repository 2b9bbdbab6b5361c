"""hdist.Embedding: squared Euclidean distances of the embedded rows equal the metric's
reduced distance (rows without missing values), checked against Metric.pairwise and the
plain-numpy reference."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist.embedding import Embedding


def table(n=80, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "income": rng.gamma(2.0, 1e4, n),
        "color": pd.Categorical(rng.choice(["red", "green", "blue"], n)),
        "size": rng.choice(["S", "M", "L", "XL"], n).astype(object),
    })
    if missing:
        X.loc[rng.random(n) < missing, "age"] = np.nan
        X.loc[rng.random(n) < missing, "size"] = None
    y = rng.integers(0, 3, n)
    return X, y


def sqdist(Z1, Z2):
    return ((Z1[:, None, :] - Z2[None, :, :]) ** 2).sum(axis=2)


@pytest.mark.parametrize("name,params", [
    ("heom", {}), ("hvdm", {}), ("euclidean", {"weights": [0.5, 2.0, 1.0, 3.0]}),
    ("hvdm", {"vdm": "N3"}), ("ivdm", {}), ("gvdm", {}), ("dvdm", {}),
    ("heom", {"normalization": "4std"}), ("heom", {"missing": "symbol"}),
])
def test_squared_distances_equal_the_reduced_distance(name, params):
    X, y = table()
    emb = Embedding(name, params).fit(X, y)
    Z = emb.transform(X)
    assert Z.shape == (len(X), emb.n_components_) and np.isfinite(Z).all()
    R = emb.metric_.pairwise(X, reduced=True)
    np.testing.assert_allclose(sqdist(Z, Z), R, rtol=1e-10, atol=1e-12)
    Xq, _ = table(20, seed=1)
    np.testing.assert_allclose(sqdist(emb.transform(Xq), Z),
                               emb.metric_.pairwise(Xq, X, reduced=True), rtol=1e-10,
                               atol=1e-12)
    assert len(emb.get_feature_names_out()) == emb.n_components_


def test_fitted_metric_is_used_as_it_is_and_names():
    X, y = table()
    m = hdist.Metric("heom").fit(X)
    emb = hdist.Embedding(m).fit(X)
    assert emb.metric_ is m
    names = list(emb.get_feature_names_out())
    assert names[:2] == ["age", "income"]
    assert "color=red" in names and "color=<unseen>" in names


def test_unseen_overlap_value_is_exact_against_learned_values():
    X, y = table()
    emb = Embedding("heom").fit(X)
    Q = X.iloc[:3].copy()
    Q["size"] = ["XXL", "XXL", "tiny"]
    Zq, Z = emb.transform(Q), emb.transform(X)
    np.testing.assert_allclose(sqdist(Zq, Z), emb.metric_.pairwise(Q, X, reduced=True),
                               rtol=1e-10, atol=1e-12)


def test_missing_values_give_nan_coordinates_of_that_attribute_only():
    X, y = table(missing=0.2)
    emb = Embedding("hvdm").fit(X, y)
    Z = emb.transform(X)
    names = list(emb.get_feature_names_out())
    miss_age = X["age"].isna().to_numpy()
    assert np.isnan(Z[miss_age, names.index("age")]).all()
    assert not np.isnan(Z[~miss_age, names.index("age")]).any()
    ok = ~np.isnan(Z).any(axis=1)
    np.testing.assert_allclose(sqdist(Z[ok], Z[ok]),
                               emb.metric_.pairwise(X[ok], X[ok], reduced=True),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name,params,match", [
    ("manhattan", {}, "p = 2"), ("vdm", {"p": 2.0}, "not a Euclidean"),
    ("hds", {}, "not a Euclidean"), ("ivdm", {"q": 1}, "q = 1"),
])
def test_non_euclidean_metrics_are_refused(name, params, match):
    X, y = table()
    with pytest.raises(ValueError, match=match):
        Embedding(name, params).fit(X if name != "vdm" else X[["color", "size"]], y)


def test_in_a_pipeline_with_pca():
    from sklearn.decomposition import PCA
    from sklearn.pipeline import make_pipeline
    X, y = table()
    Z = make_pipeline(Embedding("hvdm"), PCA(2)).fit(X, y).transform(X)
    assert Z.shape == (len(X), 2)


@pytest.mark.parametrize("name", ["heom", "hvdm", "ivdm"])
def test_integer_sample_weights_embed_as_repeated_rows(name):
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"u": rng.normal(size=60), "s": rng.choice(list("abcd"), 60)})
    X.loc[rng.random(60) < 0.1, "u"] = np.nan
    y = rng.integers(0, 3, 60)
    w = rng.integers(0, 4, 60)
    Q = pd.DataFrame({"u": rng.normal(size=20), "s": rng.choice(list("abcde"), 20)})
    a = hdist.Embedding(name).fit(X, y, sample_weight=w).transform(Q)
    keep = np.repeat(np.arange(60), w)
    b = hdist.Embedding(name).fit(X.iloc[keep], y[keep]).transform(Q)
    np.testing.assert_allclose(a, b, rtol=1e-12, equal_nan=True)
    fitted = hdist.Metric(name).fit(X, y)
    with pytest.raises(ValueError, match="sample_weight"):
        hdist.Embedding(fitted).fit(X, y, sample_weight=w)
