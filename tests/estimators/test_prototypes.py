"""PrototypeClassifier (hdist.prototypes): accuracy on separable data, the constructive
algorithm, determinism, bad input, a plain reference for the nearest prototype and one
LVQ1 epoch, probabilities, rules, explanations and scikit-learn integration."""
import numpy as np
import pandas as pd
import pytest

from hdist.metrics import Metric, balanced_accuracy
from hdist.prototypes import PrototypeClassifier
from ref_prototypes import lvq1_epoch, nearest
from reference import CONTINUOUS, NOMINAL, reference_metric


def xor(n_per=60, seed=0):
    """Two classes, each made of two blobs on opposite corners of a square: one
    prototype per class cannot separate them, two can."""
    rng = np.random.default_rng(seed)
    corners = np.array([[0, 0], [6, 6], [6, 0], [0, 6]], dtype=float)
    which = np.repeat(np.arange(4), n_per)
    xy = corners[which] + rng.normal(size=(4 * n_per, 2))
    X = pd.DataFrame({"x1": xy[:, 0], "x2": xy[:, 1],
                      "noise": pd.Categorical(rng.choice(["p", "q"], 4 * n_per))})
    return X, pd.Series(np.where(which < 2, "even", "odd"))


def blobs(n_per=60, seed=0, sep=6.0, noise_nominal=0.1, nan_rate=0.0):
    """Three classes: two continuous attributes around class centres ``sep`` apart and a
    nominal attribute that mostly names the class."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.0, 0.0], [sep, 0.0], [0.0, sep]])
    y = np.repeat(np.array(["a", "b", "c"]), n_per)
    codes = np.repeat(np.arange(3), n_per)
    xy = centres[codes] + rng.normal(size=(3 * n_per, 2))
    nom = np.array(["u", "v", "w"])[codes]
    flip = rng.random(3 * n_per) < noise_nominal
    nom[flip] = rng.choice(["u", "v", "w"], flip.sum())
    X = pd.DataFrame({"x1": xy[:, 0], "x2": xy[:, 1],
                      "color": pd.Categorical(nom)})
    if nan_rate:
        for col in X.columns:
            mask = rng.random(len(X)) < nan_rate
            X.loc[mask, col] = np.nan
    return X, pd.Series(y, name="label")


# -- accuracy ------------------------------------------------------------------------------
@pytest.mark.parametrize("init", ["fcm", "kmeans", "kmedoids", "random"])
@pytest.mark.parametrize("metric", ["hvdm", "heom", "ivdm", "gvdm"])
def test_separable_data_one_prototype_per_class(metric, init):
    X, y = blobs(seed=1, noise_nominal=0.0)
    Xt, yt = blobs(seed=2, noise_nominal=0.0)
    clf = PrototypeClassifier(metric, init=init, constructive=False, random_state=0)
    clf.fit(X, y)
    assert clf.n_prototypes_per_class_.tolist() == [1, 1, 1]
    assert clf.score(X, y) >= 0.99
    assert clf.score(Xt, yt) >= 0.99


@pytest.mark.parametrize("optimizer", ["lvq1", "lvq21", None])
@pytest.mark.parametrize("init", ["fcm", "kmeans", "kmedoids", "random"])
def test_constructive_never_lowers_training_accuracy(optimizer, init):
    X, y = blobs(n_per=80, seed=3, sep=1.5, noise_nominal=0.6)
    clf = PrototypeClassifier("hvdm", optimizer=optimizer, init=init, random_state=0,
                              min_support=0.0, min_accuracy=0.0)      # nothing pruned
    clf.fit(X, y)
    h = np.asarray(clf.history_)
    assert len(h) >= 2
    assert np.all(np.diff(h) >= 0)
    assert clf.history_[-1] == pytest.approx(clf.score(X, y), abs=1e-12)
    assert clf.n_prototypes_per_class_.sum() == len(clf.prototypes_) == len(clf.rules_)
    assert clf.n_prototypes_per_class_.max() <= clf.max_per_class


@pytest.mark.parametrize("optimizer", ["lvq1", "lvq21", None])
def test_constructive_grows_where_one_prototype_is_not_enough(optimizer):
    X, y = xor(seed=3)
    one = PrototypeClassifier("hvdm", optimizer=optimizer, constructive=False,
                              random_state=0).fit(X, y)
    grown = PrototypeClassifier("hvdm", optimizer=optimizer, random_state=0).fit(X, y)
    assert one.score(X, y) < 0.9
    assert grown.n_prototypes_per_class_.min() >= 2
    assert grown.score(X, y) >= 0.97
    assert grown.history_[0] == pytest.approx(one.score(X, y))


def test_max_per_class_and_max_iter_bound_the_growth():
    X, y = blobs(n_per=80, seed=3, sep=1.0, noise_nominal=0.7)
    clf = PrototypeClassifier("hvdm", max_per_class=2, max_iter=10, random_state=0)
    clf.fit(X, y)
    assert clf.n_prototypes_per_class_.max() <= 2
    clf = PrototypeClassifier("hvdm", max_iter=1, random_state=0).fit(X, y)
    assert len(clf.history_) <= 2
    assert clf.n_prototypes_per_class_.sum() <= 4


def test_validation_fraction_judges_additions_on_held_out_rows():
    X, y = blobs(n_per=80, seed=4, sep=1.5, noise_nominal=0.6)
    clf = PrototypeClassifier("hvdm", validation_fraction=0.3, random_state=0).fit(X, y)
    assert np.all(np.diff(clf.history_) >= 0)


def test_n_prototypes_without_constructive():
    X, y = blobs(seed=5)
    clf = PrototypeClassifier("hvdm", n_prototypes=3, constructive=False, random_state=0,
                              min_support=0.0)
    clf.fit(X, y)
    assert clf.n_prototypes_per_class_.tolist() == [3, 3, 3]
    assert list(clf.prototype_labels_) == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert len(clf.history_) == 1


# -- determinism ----------------------------------------------------------------------------
@pytest.mark.parametrize("init", ["fcm", "kmeans", "kmedoids", "random"])
def test_same_result_for_a_seed_and_every_n_jobs(init):
    X, y = blobs(n_per=70, seed=6, sep=2.0, noise_nominal=0.5, nan_rate=0.05)
    fits = [PrototypeClassifier("hvdm", init=init, n_prototypes=2, random_state=7,
                                n_jobs=j).fit(X, y) for j in (1, 2, 1, 3)]
    first = fits[0]
    for other in fits[1:]:
        pd.testing.assert_frame_equal(first.prototypes_, other.prototypes_)
        assert first.history_ == other.history_
        np.testing.assert_array_equal(first.predict_proba(X), other.predict_proba(X))


# -- bad input ------------------------------------------------------------------------------
def test_one_class_is_refused():
    X, y = blobs()
    with pytest.raises(ValueError, match="only one class"):
        PrototypeClassifier().fit(X, np.zeros(len(X)))


def test_empty_class_is_refused():
    X, y = blobs()
    y = pd.Series(pd.Categorical(y, categories=["a", "b", "c", "d"]))
    with pytest.raises(ValueError, match="y: class 'd' has no training rows"):
        PrototypeClassifier().fit(X, y)


def test_more_prototypes_than_rows_of_a_class_is_refused():
    X, y = blobs(n_per=4)
    with pytest.raises(ValueError, match="n_prototypes = 5 exceeds the 4 training"):
        PrototypeClassifier(n_prototypes=5, constructive=False).fit(X, y)


@pytest.mark.parametrize("param, value, match", [
    ("init", "som", "init must be one of"),
    ("optimizer", "glvq", "optimizer must be one of"),
    ("metric", "nope", "metric: unknown metric 'nope'"),
    ("n_prototypes", 0, "n_prototypes must be >= 1"),
    ("learning_rate", 0.0, "learning_rate must be in"),
    ("validation_fraction", 1.0, "validation_fraction must be in"),
    ("max_per_class", 0, "max_per_class must be >= 1"),
])
def test_bad_parameters_name_the_argument(param, value, match):
    X, y = blobs()
    with pytest.raises(ValueError, match=match):
        PrototypeClassifier(**{param: value}).fit(X, y)


def test_validation_split_needs_two_rows_per_class():
    X, y = blobs(n_per=5)
    y = y.copy()
    y.iloc[0] = "z"
    with pytest.raises(ValueError, match="validation_fraction: class 'z' has 1"):
        PrototypeClassifier(validation_fraction=0.2).fit(X, y)


# -- plain references --------------------------------------------------------------------
def _columns(X):
    return [[None if (isinstance(v, float) and np.isnan(v)) else v for v in X[c]]
            for c in X.columns]


def test_nearest_prototype_matches_the_reference():
    X, y = blobs(n_per=30, seed=8, sep=2.0, noise_nominal=0.5, nan_rate=0.1)
    clf = PrototypeClassifier("hvdm", n_prototypes=2, constructive=False,
                              random_state=0).fit(X, y)
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL]
    ref = reference_metric("hvdm", kinds).fit(_columns(X), list(y))
    rows = list(zip(*_columns(X)))
    protos = list(zip(*_columns(clf.prototypes_)))
    want = np.array(clf.prototype_labels_)[nearest(ref, rows, protos)]
    np.testing.assert_array_equal(clf.predict(X), want)
    # the distances of predict_proba are the reference's
    D = clf.class_distances(X)
    for i in range(0, len(rows), 7):
        for c, label in enumerate(clf.classes_):
            d = min(ref.distance(rows[i], p) for p, lab in zip(protos, clf.prototype_labels_)
                    if lab == label)
            assert D[i, c] == pytest.approx(d, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("metric,weighted", [("hvdm", False), ("heom", True)])
@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_one_lvq1_epoch_matches_the_reference(rate, metric, weighted):
    """Also with fractional sample weights (HEOM: its ranges do not depend on positive
    weights, so the unweighted reference metric applies)."""
    X, y = blobs(n_per=30, seed=9, sep=1.5, noise_nominal=0.6, nan_rate=0.1)
    sw = np.random.default_rng(2).uniform(0.1, 3.0, len(X)) if weighted else None
    common = dict(n_prototypes=2, constructive=False, init="random", random_state=3,
                  min_support=0.0, min_accuracy=0.0)
    start = PrototypeClassifier(metric, optimizer=None, **common).fit(X, y, sample_weight=sw)
    moved = PrototypeClassifier(metric, optimizer="lvq1", n_epochs=1, learning_rate=rate,
                                **common).fit(X, y, sample_weight=sw)
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL]
    ref = reference_metric(metric, kinds).fit(_columns(X), list(y))
    rows = list(zip(*_columns(X)))
    protos = list(zip(*_columns(start.prototypes_)))
    values = {2: list(start.metric_.schema_.categories_[2])}
    want = lvq1_epoch(ref, kinds, rows, list(y), protos, list(start.prototype_labels_),
                      rate, values, sw)
    got = list(zip(*_columns(moved.prototypes_)))
    assert [p[2] for p in got] == [p[2] for p in want]
    np.testing.assert_allclose(np.array([p[:2] for p in got], dtype=float),
                               np.array([p[:2] for p in want], dtype=float),
                               rtol=1e-12, atol=1e-12)
    # something moved
    assert got != protos


# -- probabilities, rules, explanations ------------------------------------------------------
def test_predict_proba_is_the_inverse_distance_share():
    X, y = blobs(n_per=40, seed=10, sep=2.0, noise_nominal=0.5)
    clf = PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    P = clf.predict_proba(X)
    D = clf.class_distances(X)
    np.testing.assert_allclose(P.sum(1), 1.0)
    np.testing.assert_allclose(P, (1 / D) / (1 / D).sum(1, keepdims=True))
    np.testing.assert_array_equal(clf.classes_[P.argmax(1)], clf.predict(X))
    # a prototype itself: distance 0 to its class, probability 1
    Pp = clf.predict_proba(clf.prototypes_)
    for j, label in enumerate(clf.prototype_labels_):
        assert Pp[j, list(clf.classes_).index(label)] == 1.0


def test_rules_count_the_rows_each_prototype_wins():
    X, y = blobs(n_per=40, seed=11, sep=2.0, noise_nominal=0.5)
    clf = PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    rules = clf.rules_
    assert list(rules.columns) == ["x1", "x2", "color", "class", "n_won", "accuracy"]
    assert rules["n_won"].sum() == len(X)
    pred = clf.predict(X)
    assert balanced_accuracy(y, pred) == pytest.approx(clf.history_[-1])
    won = clf.metric_  # the fitted metric answers queries against the prototypes too
    assert won.n_train_ == len(X)
    for j, row in rules.iterrows():
        assert row["class"] == clf.prototype_labels_[j]
        if row["n_won"]:
            assert 0.0 <= row["accuracy"] <= 1.0
    pd.testing.assert_frame_equal(rules[["x1", "x2", "color"]], clf.prototypes_,
                                  check_names=False, check_dtype=False)


def test_explain_names_the_winner_and_its_terms():
    X, y = blobs(n_per=40, seed=12, sep=2.0, noise_nominal=0.5)
    clf = PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    x = X.iloc[5]
    e = clf.explain(x)
    D = clf.class_distances(X.iloc[[5]])
    assert e.label == clf.predict(X.iloc[[5]])[0]
    assert e.distance == pytest.approx(D.min(), rel=1e-12)
    assert e.terms.terms.sum() == pytest.approx(e.distance ** 2, rel=1e-12)
    assert list(e.to_frame().index) == ["x1", "x2", "color"]
    assert clf.prototype_labels_[e.prototype] == e.label


# -- spaces of the metrics ------------------------------------------------------------------
@pytest.mark.parametrize("metric", ["ivdm", "dvdm", ("gvdm", {"sigma": 0.2}), "lvdm", "pvdm"])
def test_posterior_metrics_map_prototypes_back_to_values(metric):
    X, y = blobs(n_per=40, seed=13, sep=2.0, noise_nominal=0.5, nan_rate=0.05)
    clf = PrototypeClassifier(metric, random_state=0).fit(X, y)
    for col in ("x1", "x2"):
        v = clf.prototypes_[col]
        assert v.notna().all()
        assert (v >= X[col].min()).all() and (v <= X[col].max()).all()
    assert clf.score(X, y) > 0.6
    # the prototypes are records: predicting them gives their own class
    np.testing.assert_array_equal(clf.predict(clf.prototypes_), clf.prototype_labels_)


def test_kmedoids_prototypes_are_training_rows():
    X, y = blobs(n_per=30, seed=14)
    clf = PrototypeClassifier("hvdm", init="kmedoids", n_prototypes=2, optimizer=None,
                              constructive=False, random_state=0).fit(X, y)
    rows = set(map(tuple, X.astype(object).values.tolist()))
    for p in clf.prototypes_.astype(object).values.tolist():
        assert tuple(p) in rows


def test_metric_forms():
    X, y = blobs(seed=15)
    a = PrototypeClassifier(("gvdm", {"sigma": 0.3}), random_state=0).fit(X, y)
    b = PrototypeClassifier(Metric("gvdm", sigma=0.3), random_state=0).fit(X, y)
    c = PrototypeClassifier("gvdm", metric_params={"sigma": 0.3}, random_state=0).fit(X, y)
    pd.testing.assert_frame_equal(a.prototypes_, b.prototypes_)
    pd.testing.assert_frame_equal(a.prototypes_, c.prototypes_)
    assert a.metric_.params == {"sigma": 0.3}


def test_numpy_input_gives_arrays():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (30, 2)), rng.normal(5, 1, (30, 2))])
    y = np.repeat([0, 1], 30)
    clf = PrototypeClassifier("heom", random_state=0).fit(X, y)
    assert isinstance(clf.prototypes_, np.ndarray) and clf.prototypes_.dtype == float
    assert clf.score(X, y) >= 0.99
    e = clf.explain(X[40])
    assert e.label == 1 and len(e.terms.terms) == 2
    assert e.distance == pytest.approx(clf.class_distances(X[[40]]).min(), rel=1e-12)
    assert list(clf.rules_.columns) == ["0", "1", "class", "n_won", "accuracy"]
    # mixed object arrays: prototypes as an object array of numbers and labels
    Xo = np.empty((60, 3), dtype=object)
    Xo[:, :2] = X
    Xo[:, 2] = np.where(y == 0, "p", "q")
    clf = PrototypeClassifier("hvdm", random_state=0).fit(Xo, y)
    assert clf.prototypes_.dtype == object and set(clf.prototypes_[:, 2]) == {"p", "q"}


# -- scikit-learn -----------------------------------------------------------------------------
def test_pipeline_on_a_dataframe_with_missing_values():
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    X, y = blobs(n_per=40, seed=16, nan_rate=0.15)
    X["color"] = X["color"].astype(object)
    assert X.isna().any().all()
    pipe = make_pipeline(FunctionTransformer(lambda d: d), PrototypeClassifier(random_state=0))
    pipe.fit(X, y)
    assert pipe.score(X, y) > 0.9
    scores = cross_val_score(pipe, X, y, cv=3)
    assert scores.mean() > 0.85


@pytest.fixture
def array_api_env(monkeypatch):
    # scikit-learn runs its array-API dispatch check (numpy inputs) only when this is set
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")


from sklearn_checks import parametrize_with_checks  # noqa: E402


def order_dependent_draws(estimator):
    """scikit-learn's sample-weight equivalence check shuffles the weighted rows but not
    the repeated ones; random rows, seeds beyond the first class centre and the validation
    split are drawn by position, so with a different row order they differ.  In the same
    order integer weights give the repeated rows' prototypes
    (tests/test_sample_weight_prototypes.py, with this check's data unshuffled)."""
    if estimator.n_prototypes > 1 or estimator.init == "random" or \
            estimator.validation_fraction is not None:
        return {"check_sample_weight_equivalence_on_dense_data":
                "random draws depend on the row order, which the check shuffles"}
    return {}


@parametrize_with_checks([PrototypeClassifier(random_state=0),
                          PrototypeClassifier("heom", init="kmedoids", optimizer="lvq21",
                                              n_prototypes=2, random_state=0),
                          PrototypeClassifier("ivdm", init="random", optimizer=None,
                                              validation_fraction=0.25, random_state=0)],
                         expected_failed_checks=order_dependent_draws)
def test_sklearn_compatible(estimator, check, array_api_env):
    check(estimator)


@pytest.mark.parametrize("metric", ["gower", ("heom", {"missing": "symbol"}),
                                    ("hvdm", {"p": 1}), ("hvdm", {"p": np.inf}),
                                    ("hvdm", {"missing": "max", "weights": "mi"}), "hds"])
def test_other_policies_and_aggregations(metric):
    X, y = blobs(n_per=40, seed=17, sep=3.0, noise_nominal=0.3, nan_rate=0.1)
    clf = PrototypeClassifier(metric, random_state=0).fit(X, y)
    assert np.all(np.diff(clf.history_) >= 0)
    # p = inf: a missing value makes every prototype equally far (1), a tie
    assert clf.score(X, y) > 0.7
    assert clf.prototypes_["color"].notna().all()


def test_a_column_missing_in_every_training_row():
    X, y = blobs(n_per=30, seed=18)
    X["empty"] = np.nan
    X["empty_nom"] = pd.Series([None] * len(X), dtype=object)
    with pytest.warns(UserWarning, match="no observed value"):
        clf = PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    assert clf.prototypes_["empty"].isna().all()
    assert clf.prototypes_["empty_nom"].isna().all()
    assert clf.score(X, y) >= 0.95


# -- rules people read ----------------------------------------------------------------------
def test_rules_round_to_the_datas_own_precision_and_read_as_if_then():
    X, y = blobs(n_per=40, seed=21, sep=3.0, noise_nominal=0.3)
    X = X.assign(age=np.round(X["x1"] * 10 + 50).astype(int), x2=X["x2"].round(1))
    clf = PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    assert clf.decimals_ == [None, 1, None, 0]
    rules = clf.rules_
    assert rules["age"].tolist() == [round(v) for v in clf.prototypes_["age"]]
    assert rules["x2"].tolist() == [round(v, 1) for v in clf.prototypes_["x2"]]
    assert rules["x1"].tolist() == clf.prototypes_["x1"].tolist()     # as precise as data
    text = clf.rules_text()
    for c in clf.classes_:
        assert "\nclass %s\n" % c in text
    assert text.count("IF the row is nearest to") == len(clf.prototypes_)
    assert text.count("THEN class = ") == len(clf.prototypes_)
    for j, row in rules.iterrows():
        assert "rule %d: IF the row is nearest to (x1 = %s, x2 = %s, color = %s, age = %d)" \
            % (j, row["x1"], row["x2"], row["color"], row["age"]) in text
        assert "[wins %g training rows" % row["n_won"] in text


def test_decimals_of_a_column():
    from hdist._estimators.prototypes import _column_decimals
    schema = Metric("heom").fit(pd.DataFrame({"a": [1.0, 2.5], "b": [0.125, 3.0],
                                              "c": [np.pi, 1.0], "s": ["u", "v"],
                                              "e": [1200.0, -3.0]})).schema_
    cont = np.array([[1.0, 0.125, np.pi, 1200.0], [2.5, 3.0, 1.0, -3.0],
                     [np.nan, np.nan, np.nan, np.nan]])
    assert _column_decimals(cont, schema) == [1, 3, None, None, 0]


def test_pruning_drops_prototypes_that_win_few_rows_or_misclassify():
    X, y = blobs(n_per=50, seed=22, sep=2.5, noise_nominal=0.4)
    keep = PrototypeClassifier("hvdm", n_prototypes=4, constructive=False, random_state=0,
                               min_support=0.0, min_accuracy=0.0).fit(X, y)
    assert len(keep.prototypes_) == 12 and keep.n_pruned_ == 0
    rules = keep.rules_
    weak = (rules["n_won"] < 0.08 * len(X)) | (rules["accuracy"] < 0.8)
    assert weak.any() and not weak.all()
    pruned = PrototypeClassifier("hvdm", n_prototypes=4, constructive=False, random_state=0,
                                 min_support=0.08, min_accuracy=0.8).fit(X, y)
    assert pruned.n_pruned_ == 12 - len(pruned.prototypes_) > 0
    # what remains meets both thresholds, unless it is its class's last prototype
    r = pruned.rules_
    last = r.groupby("class")["class"].transform("size") == 1
    ok = (r["n_won"] >= 0.08 * len(X)) & (r["accuracy"] >= 0.8)
    assert (ok | last).all()
    assert sorted(set(r["class"])) == ["a", "b", "c"]
    # the kept prototypes are a subset of the unpruned ones, in their order
    full = [tuple(v) for v in keep.prototypes_.itertuples(index=False)]
    kept = [tuple(v) for v in pruned.prototypes_.itertuples(index=False)]
    assert [full.index(v) for v in kept] == sorted(full.index(v) for v in kept)
    # predictions are by the kept prototypes
    D = pruned.metric_.pairwise(X, pruned.prototypes_)
    np.testing.assert_array_equal(pruned.predict(X),
                                  pruned.prototype_labels_[np.argmin(D, axis=1)])
    for bad in ({"min_support": 1.0}, {"min_support": -0.1}, {"min_accuracy": 1.5}):
        with pytest.raises(ValueError, match=list(bad)[0]):
            PrototypeClassifier(**bad).fit(X, y)


def test_explain_prints_the_row_and_the_prototype_side_by_side():
    X, y = blobs(n_per=40, seed=23, sep=3.0, noise_nominal=0.3)
    X = X.assign(x2=X["x2"].round(2))
    clf = PrototypeClassifier("heom", random_state=0).fit(X, y)
    e = clf.explain(X.iloc[7])
    lines = str(e).splitlines()
    assert lines[0].startswith("prototype %d (class %s) wins the row" % (e.prototype,
                                                                        e.label))
    assert lines[1].split()[:5] == ["column", "row", "prototype", "d_a", "w_a"]
    proto = clf.prototypes_.iloc[e.prototype]
    for ln, col in zip(lines[2:5], ["x1", "x2", "color"]):
        v, p = X.iloc[7][col], proto[col]
        words = ln.split()
        assert words[0] == col
        assert words[1] == ("%.6g" % v if col != "color" else str(v))
        assert words[2] == ("%.6g" % p if col != "color" else str(p))
    assert list(e.to_frame().columns[:2]) == ["row", "prototype"]
    assert lines[-1].endswith("%.4f" % e.distance) or ("%.5f" % e.distance) in lines[-1]
