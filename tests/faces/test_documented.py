"""Documented behaviour holds: what a constant training column contributes, KModes and
continuous columns, and columns with no observed training value."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist.cluster import KModes, KPrototypes
from hdist._kernels import CRows
from hdist._search.searchers import brute_knn

from reference import reference_metric, rows_of

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

DIFF_PRESETS = ("heom", "gower", "manhattan", "chebyshev", "fractional", "hvdm")


def constant_table(seed=0, n=30):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n).astype(float),
        "plant": np.full(n, 500.0),                  # constant in training
        "colour": rng.choice(["red", "green", "blue"], n),
    })


def queries():
    return pd.DataFrame({"age": [30.0, 95.0, np.nan, 40.0],
                         "plant": [1000.0, -2e6, 500.0, np.nan],
                         "colour": ["red", "pink", "blue", "green"]})


@pytest.mark.parametrize("preset", DIFF_PRESETS)
def test_constant_column_contributes_nothing_between_observed_values(preset):
    X = constant_table()
    y = np.arange(len(X)) % 2
    m = hdist.Metric(preset).fit(X, y)
    assert math.isinf(m.delta_["plant"])
    without = hdist.Metric(preset, **({"weights": None})).fit(X[["age", "colour"]], y)
    Q = queries()
    D = m.pairwise(Q.iloc[[0, 1]], X)
    # observed values of the constant column compare as equal, whatever the query holds
    for i in (0, 1):
        e = m.explain(Q.iloc[i], X.iloc[3])
        assert e.to_dict()["plant"] == 0.0
        assert np.isfinite(D[i]).all()
    if preset != "gower":
        # with "sum" aggregation the column adds exactly nothing
        np.testing.assert_array_equal(D, without.pairwise(Q.iloc[[0, 1]][["age", "colour"]],
                                                          X[["age", "colour"]]))


@pytest.mark.parametrize("seed", range(5))
def test_gower_stays_in_unit_interval_with_a_constant_column(seed):
    X = constant_table(seed)
    m = hdist.Metric("gower").fit(X)
    Q = queries()
    D = m.pairwise(Q, X)
    assert (D >= 0).all() and (D <= 1).all()
    assert m.pairwise(X).max() <= 1.0
    # the plain reference, constant column included, agrees
    kinds = ["continuous", "continuous", "nominal"]
    ref = reference_metric("gower", kinds)
    cols = [X[c].tolist() for c in X.columns]
    ref.fit(cols)
    qcols = [[None if v != v else v for v in Q[c].tolist()] for c in Q.columns]
    R = ref.pairwise(rows_of(qcols), rows_of(cols))
    np.testing.assert_allclose(D, R, rtol=1e-12, atol=1e-15)


def test_constant_column_missing_value_still_counts():
    X = constant_table()
    Q = queries()
    # "one": a missing value is 1 (as Weka's distance gives for a constant attribute)
    e = hdist.Metric("heom").fit(X).explain(Q.iloc[3], X.iloc[0])
    assert e.to_dict()["plant"] == 1.0
    # "max" acts as "one" on a constant column: its largest difference is undefined
    e = hdist.Metric("heom", missing="max").fit(X).explain(Q.iloc[3], X.iloc[0])
    assert e.to_dict()["plant"] == 1.0
    # "ignore" skips it
    e = hdist.Metric("gower").fit(X).explain(Q.iloc[3], X.iloc[0])
    assert e.skipped[1]


def test_constant_column_without_normalization_keeps_raw_differences():
    X = constant_table()
    m = hdist.Metric("heom", normalization="none", p=1.0).fit(X)
    assert m.delta_["plant"] == 1.0
    assert m.explain(queries().iloc[0], X.iloc[0]).to_dict()["plant"] == 500.0


# -- KModes --------------------------------------------------------------------------

def test_kmodes_refuses_a_continuous_column_by_name():
    X = pd.DataFrame({"a": ["x", "y", "x", "y"], "v": [1.25, 2.5, 3.75, 5.0]})
    with pytest.raises(ValueError, match="'v' is continuous"):
        KModes(2).fit(X)
    Xn = np.array([["x", 0.5], ["y", 1.5], ["x", 2.0]], dtype=object)
    with pytest.raises(ValueError, match="'1' is continuous"):
        KModes(2, metric="hds").fit(Xn)
    with pytest.raises(ValueError, match="'v' is continuous"):
        KModes(2, metric="smd").fit(X.astype({"v": object}))


def test_kmodes_accepts_declared_and_integer_coded_columns():
    X = pd.DataFrame({"a": ["x", "y", "x", "y"], "v": [1.25, 2.5, 1.25, 2.5],
                      "code": [1, 2, 1, 3], "f": [1.0, 2.0, np.nan, 2.0]})
    # integer-valued numbers are category codes; a declared column is nominal whatever
    # its values
    km = KModes(2, random_state=0, metric_params={"nominal": "all"}).fit(X)
    assert km.metric_.kinds_ == ["nominal"] * 4
    km = KModes(2, random_state=0).fit(X[["a", "code", "f"]])
    assert km.metric_.kinds_ == ["nominal"] * 3
    km = KModes(2, random_state=0,
                metric=hdist.Metric("smd", nominal="all")).fit(X)
    assert km.labels_.shape == (4,)
    # KPrototypes takes the continuous column as continuous
    assert KPrototypes(2, random_state=0).fit(X[["a", "v"]]).metric_.kinds_ == \
        ["nominal", "continuous"]


# -- a column with no observed training value ------------------------------------------

def empty_column_table(kind, n=24, seed=3):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                      "colour": rng.choice(["red", "green", "blue"], n),
                      "size": rng.choice(["S", "M", "L"], n)})
    X["rare"] = np.full(n, np.nan) if kind == "continuous" else pd.Series([None] * n,
                                                                          dtype=object)
    return X, np.arange(n) % 2


EMPTY_PRESETS = ("heom", "hvdm", "gower", "ivdm", "hds", "manhattan")


@pytest.mark.parametrize("kind", ("continuous", "nominal"))
@pytest.mark.parametrize("preset", EMPTY_PRESETS)
@pytest.mark.parametrize("policy", ("one", "ignore"))
def test_column_without_observed_value_fits_with_a_warning(preset, kind, policy):
    X, y = empty_column_table(kind)
    params = {"missing": policy}
    if kind == "nominal":
        params["nominal"] = ["colour", "size", "rare"]
    with pytest.warns(UserWarning, match="'rare' has no observed value"):
        m = hdist.Metric(preset, **params).fit(X, y)
    base_params = dict(params)
    if kind == "nominal":
        base_params["nominal"] = ["colour", "size"]
    base = hdist.Metric(preset, **base_params).fit(X.drop(columns="rare"), y)
    Q = X.iloc[:6].copy()
    Q["rare"] = [5.0, np.nan, 7.0, 5.0, np.nan, 1.0] if kind == "continuous" else \
        ["a", None, "b", "a", None, "c"]
    mean = preset == "gower"          # compared on the mean, the others on Σ w d^p
    got = m.pairwise(Q, X, reduced=not mean)
    want = base.pairwise(Q.drop(columns="rare"), X.drop(columns="rare"), reduced=not mean)
    if policy == "one":
        # every training value is missing: the column adds 1 to every pair
        expect = want * 3 / 4 + 1 / 4 if mean else want + 1.0
    else:
        # skipped: the known weight rescales to the full weight (sum), or the mean is over
        # the other columns
        expect = want if mean else want * 4 / 3
    if preset == "hds":
        # the value tables average over the other columns, the empty one included
        # (Ahmad & Dey), so only the missing part is as above: the column adds 1 or is
        # skipped, and every distance is finite
        assert np.isfinite(got).all()
        if policy == "one":
            assert (got >= 1.0).all()
    else:
        np.testing.assert_allclose(got, expect, rtol=1e-12, atol=1e-14)
    # the rows of the query compared with each other: observed values of the column
    # are compared as unseen / without spread, never an error
    assert np.isfinite(m.pairwise(Q)).all()
    # k-NN on every path works
    d, i = m.kneighbors(Q, 3)
    d2, i2 = hdist.NeighborsIndex(m, algorithm="kd_tree").fit().kneighbors(Q, 3)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(d, d2)


@pytest.mark.parametrize("kind", ("continuous", "nominal"))
def test_column_without_observed_value_is_refused_under_other_policies(kind):
    X, y = empty_column_table(kind)
    nominal = ["colour", "size", "rare"] if kind == "nominal" else None
    policies = ("max", "symbol") if kind == "nominal" else ("max",)
    for policy in policies:
        with pytest.raises(ValueError, match="'rare' has no observed value.*'one' or "
                                             "'ignore'"):
            hdist.Metric("heom", missing=policy, nominal=nominal).fit(X, y)


def test_cross_validation_survives_a_fold_without_a_rare_column():
    from sklearn.model_selection import KFold, cross_val_score
    from hdist.neighbors import KNeighborsClassifier
    X, y = empty_column_table("nominal", n=40)
    X["rare"] = [None] * 40
    X.loc[[3, 4], "rare"] = "yes"           # both rows land in one test fold
    folds = KFold(5, shuffle=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = cross_val_score(KNeighborsClassifier(3, metric_params={
            "nominal": ["colour", "size", "rare"]}), X, y, cv=folds, error_score="raise")
    assert len(scores) == 5 and np.isfinite(scores).all()
    assert any("'rare' has no observed value" in str(w.message) for w in caught)


@pytest.mark.parametrize("preset", ("heom", "hvdm", "manhattan"))
def test_constant_column_same_answer_on_every_path(preset):
    rng = np.random.default_rng(7)
    n = 700
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 9, n).astype(float),
                      "c": np.full(n, 3.5), "d": rng.choice(list("pqrs"), n)})
    y = rng.integers(0, 2, n)
    Q = X.iloc[:400].copy()
    Q["c"] = rng.normal(size=400) * 100            # the constant column varies in queries
    m = hdist.Metric(preset, missing="max").fit(X, y)
    rows, ct = m.encode(Q), CRows(m.train_)
    direct = brute_knn(m.plan_, rows, m.train_, ct, 5, 2, method="direct")
    direct = direct.dist, direct.ind
    gemm = brute_knn(m.plan_, rows, m.train_, ct, 5, 2, method="gemm")
    for got in ((gemm.dist, gemm.ind),) + tuple(hdist.NeighborsIndex(m, algorithm=a).fit().kneighbors(Q, 5)
                               for a in ("brute", "kd_tree", "ball_tree")):
        np.testing.assert_array_equal(got[0], direct[0])
        np.testing.assert_array_equal(got[1], direct[1])
    # ... and the same as without the column
    base = hdist.Metric(preset, missing="max").fit(X.drop(columns="c"), y)
    np.testing.assert_array_equal(direct[1], base.kneighbors(Q.drop(columns="c"), 5)[1])


# -- a preset's effective parameters are visible --------------------------------------------

@pytest.mark.parametrize("name", sorted(set(i.name for i in hdist.METRICS.values())))
def test_repr_lists_every_effective_parameter_and_rebuilds_the_metric(name):
    m = hdist.Metric(name)
    eff = m.effective_params()
    assert set(eff) == set(m.info.params)
    for key, value in m.info.defaults.items():
        if key in eff:
            assert eff[key] == value
    assert m.get_params() == {"name": m.info.name}
    again = eval(repr(m), {"Metric": hdist.Metric})
    assert again.effective_params() == eff


def test_given_parameters_override_the_defaults_in_repr():
    m = hdist.Metric("hvdm", normalization="range")
    assert "normalization='range'" in repr(m) and "vdm='N2'" in repr(m)
    assert m.get_params() == {"name": "hvdm", "normalization": "range"}


# -- balanced accuracy ------------------------------------------------------------------------

def test_balanced_accuracy_equals_scikit_learn():
    from sklearn.metrics import balanced_accuracy_score
    from hdist.metrics import balanced_accuracy
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        C = int(rng.integers(1, 6))
        y = rng.integers(0, C, n)
        p = np.where(rng.random(n) < 0.6, y, rng.integers(0, C + 1, n))
        labels = np.array(["a", "b", "c", "d", "e", "f", "g"], dtype=object)
        for yt, yp in ((y, p), (labels[y], labels[p])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want = balanced_accuracy_score(yt, yp)
            assert balanced_accuracy(yt, yp) == pytest.approx(want, abs=1e-15)
    with pytest.raises(ValueError, match="same length"):
        balanced_accuracy([1, 2], [1])
