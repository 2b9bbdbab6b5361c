"""sample_weight in PrototypeClassifier.fit: integer weights give the prototypes of the
repeated rows for a fixed random_state (random steps draw among the copies), rows of weight
0 are as absent, the weighted centres, rules and balanced accuracy against numpy and
scikit-learn, and the draws of fractional weights by their properties.  One weighted LVQ1
epoch is checked against the plain reference in tests/test_prototypes.py."""
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import balanced_accuracy_score

from hdist.prototypes import PrototypeClassifier, _split
from test_prototypes import blobs, xor


def weighted_blobs(seed=4, n_per=25):
    X, y = blobs(n_per=n_per, seed=seed, sep=2.0, noise_nominal=0.4, nan_rate=0.1)
    rng = np.random.default_rng(seed)
    sw = rng.integers(1, 4, len(X))
    sw[rng.choice(len(X), 6, replace=False)] = 0
    return X, y, sw


#: estimators whose fit draws at random: seeds, random rows, new prototypes, the split
RANDOM_STEPS = [
    dict(init="random", n_prototypes=2, constructive=False),
    dict(init="fcm", n_prototypes=2, optimizer="lvq21", constructive=False),
    dict(init="kmeans", max_iter=4),
    dict(init="kmedoids", max_iter=3, validation_fraction=0.3),
    dict(init="random", max_iter=3, validation_fraction=0.25),
]


def repeated(X, y, sw):
    rows = np.repeat(np.arange(len(X)), sw)
    return X.iloc[rows].reset_index(drop=True), y.iloc[rows].reset_index(drop=True)


def assert_same_prototypes(a, b, rtol=1e-10):
    pa, pb = a.prototypes_, b.prototypes_
    assert pa["color"].tolist() == pb["color"].tolist()
    np.testing.assert_allclose(pa[["x1", "x2"]].to_numpy(float),
                               pb[["x1", "x2"]].to_numpy(float), rtol=rtol, atol=1e-12)
    np.testing.assert_array_equal(a.prototype_labels_, b.prototype_labels_)
    np.testing.assert_allclose(a.rules_["n_won"], b.rules_["n_won"])
    np.testing.assert_allclose(a.rules_["accuracy"], b.rules_["accuracy"], rtol=1e-12)


@pytest.mark.parametrize("optimizer", ["lvq1", "lvq21", None])
@pytest.mark.parametrize("init", ["fcm", "kmeans", "kmedoids"])
@pytest.mark.parametrize("metric", ["hvdm", "gower", "ivdm"])
def test_integer_weights_equal_repeated_rows(metric, init, optimizer):
    """One prototype per class from the (weighted) centre or medoid, then LVQ: nothing is
    drawn, so a row of weight m acts as m copies of it."""
    X, y, sw = weighted_blobs()
    Xr, yr = repeated(X, y, sw)
    est = dict(metric=metric, init=init, optimizer=optimizer, constructive=False,
               random_state=0)
    a = PrototypeClassifier(**est).fit(X, y, sample_weight=sw)
    b = PrototypeClassifier(**est).fit(Xr, yr)
    assert_same_prototypes(a, b)
    assert a.score(X, y, sample_weight=sw) == pytest.approx(b.score(Xr, yr), rel=1e-12)


@pytest.mark.parametrize("est", [
    dict(metric="heom", init="kmedoids", optimizer="lvq21", n_prototypes=2),
    dict(metric="ivdm", init="random", optimizer=None, validation_fraction=0.25),
])
def test_sklearn_check_data_unshuffled(est):
    """scikit-learn's check_sample_weight_equivalence_on_dense_data for the estimators of
    tests/test_prototypes.py whose draws depend on the row order, without its shuffle of
    the weighted rows: the same predict_proba as the repeated rows."""
    rng = np.random.RandomState(42)
    X = rng.rand(15, 30)
    y = rng.randint(0, 3, size=15)
    sw = rng.randint(0, 5, size=15)
    a = PrototypeClassifier(random_state=0, **est).fit(X, y, sample_weight=sw)
    b = PrototypeClassifier(random_state=0, **est).fit(X.repeat(sw, axis=0), y.repeat(sw))
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-10)
    np.testing.assert_allclose(a.prototypes_, b.prototypes_, rtol=1e-10)


def test_kmedoids_sample_of_copies():
    """A class of more than 1000 copies: k-medoids works on a sample of 1000 copies, as
    on the repeated rows (a row sampled twice weighs 2)."""
    X, y = blobs(n_per=60, seed=5, sep=2.0, noise_nominal=0.3)
    sw = np.random.default_rng(3).integers(15, 22, len(X))      # > 1000 copies a class
    Xr, yr = repeated(X, y, sw)
    est = dict(metric="heom", init="kmedoids", n_prototypes=2, optimizer=None,
               constructive=False, random_state=4)
    a = PrototypeClassifier(**est).fit(X, y, sample_weight=sw)
    b = PrototypeClassifier(**est).fit(Xr, yr)
    assert_same_prototypes(a, b)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("est", RANDOM_STEPS)
def test_integer_weights_equal_repeated_rows_random_steps(est, seed):
    """Seeds, random rows, new prototypes and the validation split draw among the copies,
    with the random numbers the repeated rows use: the same prototypes and history."""
    X, y = xor(n_per=15, seed=2)
    rng = np.random.default_rng(seed)
    sw = rng.integers(1, 4, len(X))
    sw[rng.choice(len(X), 6, replace=False)] = 0
    Xr, yr = repeated(X, y, sw)
    a = PrototypeClassifier("hvdm", random_state=seed, **est).fit(X, y, sample_weight=sw)
    b = PrototypeClassifier("hvdm", random_state=seed, **est).fit(Xr, yr)
    pd.testing.assert_frame_equal(a.prototypes_, b.prototypes_, rtol=1e-10)
    np.testing.assert_array_equal(a.prototype_labels_, b.prototype_labels_)
    assert a.history_ == pytest.approx(b.history_, rel=1e-12)


@pytest.mark.parametrize("est", RANDOM_STEPS)
def test_zero_weights_drop_rows_and_unit_weights_change_nothing(est):
    """Random draws included: rows of weight 0 leave the draws as the dropped rows do, and
    unit weights draw as no weights."""
    X, y = xor(n_per=15, seed=2)
    rng = np.random.default_rng(5)
    sw = rng.uniform(0.5, 3.0, len(X))
    sw[rng.choice(len(X), 8, replace=False)] = 0
    keep = np.flatnonzero(sw)
    a = PrototypeClassifier("gower", random_state=1, **est).fit(X, y, sample_weight=sw)
    b = PrototypeClassifier("gower", random_state=1, **est).fit(
        X.iloc[keep].reset_index(drop=True), y.iloc[keep].reset_index(drop=True),
        sample_weight=sw[keep])
    pd.testing.assert_frame_equal(a.prototypes_, b.prototypes_, rtol=1e-12)
    assert a.history_ == pytest.approx(b.history_, rel=1e-12)
    c = PrototypeClassifier("gower", random_state=1, **est).fit(X, y)
    d = PrototypeClassifier("gower", random_state=1, **est).fit(X, y,
                                                                sample_weight=np.ones(len(X)))
    pd.testing.assert_frame_equal(c.prototypes_, d.prototypes_, rtol=1e-12)
    assert c.history_ == pytest.approx(d.history_, rel=1e-12)
    pd.testing.assert_frame_equal(c.rules_, d.rules_, check_dtype=False, rtol=1e-12)


def test_weighted_centres_and_rules_against_numpy():
    """k-means with one prototype per class and no LVQ: each class's weighted mean and
    weighted most frequent nominal value (HEOM's overlap); rules_ count weights."""
    X, y = blobs(n_per=20, seed=3, sep=3.0, noise_nominal=0.5, nan_rate=0.15)
    sw = np.random.default_rng(7).uniform(0.0, 2.0, len(X))
    clf = PrototypeClassifier("heom", init="kmeans", optimizer=None, constructive=False)
    clf.fit(X, y, sample_weight=sw)
    for c, label in enumerate(clf.classes_):
        rows = (y == label).to_numpy()
        for col in ("x1", "x2"):
            v = X[col].to_numpy()
            ok = rows & ~np.isnan(v)
            assert clf.prototypes_[col].iloc[c] == pytest.approx(
                np.sum(sw[ok] * v[ok]) / np.sum(sw[ok]), rel=1e-12)
        votes = pd.Series(sw[rows & X["color"].notna().to_numpy()],
                          index=X["color"][rows].dropna().to_numpy()).groupby(level=0).sum()
        assert clf.prototypes_["color"].iloc[c] == votes.idxmax()
    won = clf.predict(X)
    for c, label in enumerate(clf.classes_):
        mine = won == label
        assert clf.rules_["n_won"].iloc[c] == pytest.approx(sw[mine].sum(), rel=1e-12)
        assert clf.rules_["accuracy"].iloc[c] == pytest.approx(
            sw[mine & (y == label).to_numpy()].sum() / sw[mine].sum(), rel=1e-12)


def test_constructive_step_judged_by_weighted_balanced_accuracy():
    """history_ is the weighted balanced accuracy (scikit-learn's with sample_weight) of
    the kept prototypes on the training rows, never decreasing."""
    X, y = xor(n_per=20, seed=4)
    sw = np.random.default_rng(1).uniform(0.2, 3.0, len(X))
    clf = PrototypeClassifier("heom", init="kmeans", max_iter=4, random_state=0)
    clf.fit(X, y, sample_weight=sw)
    assert np.all(np.diff(clf.history_) >= 0)
    assert clf.n_prototypes_per_class_.sum() > 2
    assert clf.history_[-1] == pytest.approx(
        balanced_accuracy_score(y, clf.predict(X), sample_weight=sw), rel=1e-12)


def test_random_draws_follow_the_weights():
    """Fractional weights: a row holding nearly all of its class's weight is the row
    "random" draws; a row of weight 0 is never drawn."""
    X, y = blobs(n_per=15, seed=6, sep=3.0, noise_nominal=0.0)
    heavy = [3, 20, 40]              # one row of each class
    for seed in range(5):
        sw = np.full(len(X), 0.5)
        sw[heavy] = 1e9
        clf = PrototypeClassifier("heom", init="random", optimizer=None, constructive=False,
                                  random_state=seed).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(clf.prototypes_[["x1", "x2"]].to_numpy(float),
                                   X.iloc[heavy][["x1", "x2"]].to_numpy(float))
        sw = np.zeros(len(X))
        sw[heavy] = 0.7
        sw[[4, 21, 41]] = 1.3
        clf = PrototypeClassifier("heom", init="random", n_prototypes=2, optimizer=None,
                                  constructive=False, random_state=seed)
        clf.fit(X, y, sample_weight=sw)
        got = {tuple(r) for r in clf.prototypes_[["x1", "x2"]].to_numpy(float)}
        assert got == {tuple(r) for r in X.iloc[heavy + [4, 21, 41]][["x1", "x2"]]
                       .to_numpy(float)}


def test_weighted_validation_split():
    """Fractional weights: whole rows held out, as many as bring the held-out weight
    nearest to the fraction of the class's weight.  Whole-number weights: copies held out,
    a row's weight shared between both parts.  Unit weights split as no weights."""
    codes = np.repeat([0, 1], 10)
    classes = np.array(["a", "b"])
    mass = np.r_[np.full(10, 1.5), [9.0], np.full(9, 0.5)]
    for f in (0.5, 0.3):
        fit, val = _split(codes, f, np.random.default_rng(0), classes, mass)
        np.testing.assert_array_equal(fit + val, mass)
        assert np.all((fit == 0) | (val == 0))          # rows are not divided
        rng = np.random.default_rng(0)
        for c in (0, 1):
            members = np.flatnonzero(codes == c)
            perm = members[rng.permutation(members.size)]
            k = np.count_nonzero(val[members])
            held = np.intersect1d(np.flatnonzero(val), members)
            assert 1 <= k <= 9 and set(perm[:k]) == set(held)
            # no other prefix of the permutation comes nearer to f of the weight
            total = mass[perm].sum()
            gap = [abs(mass[perm[:j]].sum() - f * total) for j in range(1, 10)]
            assert gap[k - 1] == min(gap)
    counts = np.r_[np.full(10, 3.0), np.full(10, 1.0)]
    fit, val = _split(codes, 0.5, np.random.default_rng(2), classes, counts)
    np.testing.assert_array_equal(fit + val, counts)
    assert val[:10].sum() == 15 and val[10:].sum() == 5
    a = _split(codes, 0.3, np.random.default_rng(1), classes, np.ones(20))
    b = _split(codes, 0.3, np.random.default_rng(1), classes)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("sw, message", [
    (-np.ones(45), "non-negative"),
    (np.r_[np.ones(44), np.inf], "finite"),
    (np.ones(44), "one weight per training row"),
    (np.zeros(45), "all zero"),
    (np.array(["a"] * 45, dtype=object), "numbers"),
    (np.r_[np.zeros(15), np.ones(30)], "class 'a' has no row of positive sample_weight"),
])
def test_bad_sample_weight(sw, message):
    X, y = blobs(n_per=15, seed=1)
    with pytest.raises((ValueError, TypeError), match=message) as err:
        PrototypeClassifier("heom").fit(X, y, sample_weight=sw)
    assert "sample_weight" in str(err.value)


def test_n_prototypes_counts_copies_or_rows_of_positive_weight():
    """Whole-number weights count copies (two prototypes may start from two copies of a
    row, as from two repeated rows); other weights count rows of positive weight."""
    X, y = blobs(n_per=15, seed=1)
    sw = np.ones(45)
    sw[1:15] = 0
    with pytest.raises(ValueError, match="exceeds the 1 training row.* by sample_weight"):
        PrototypeClassifier("heom", n_prototypes=2, constructive=False).fit(
            X, y, sample_weight=sw)
    with pytest.raises(ValueError, match="exceeds the 1 training row.* by sample_weight"):
        PrototypeClassifier("heom", n_prototypes=2, constructive=False).fit(
            X, y, sample_weight=np.where(sw > 0, 0.5, 0.0) + (np.arange(45) == 0) * 2.5)
    sw[0] = 2
    for init in ("random", "kmedoids", "fcm"):
        clf = PrototypeClassifier("heom", init=init, n_prototypes=2, constructive=False,
                                  random_state=0, min_support=0.0,
                                  min_accuracy=0.0).fit(X, y, sample_weight=sw)
        assert clf.n_prototypes_per_class_.tolist() == [2, 2, 2]
