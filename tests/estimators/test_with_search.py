"""with_search: a fitted k-NN classifier or regressor whose neighbor queries go through a
given search(X, k) predicts what the estimator predicts when the search finds what its
index finds, ties and sample weights included."""
import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor


def data(n=120, seed=3):
    rng = np.random.default_rng(seed)
    # few distinct values: many rows tied at the k-th distance
    X = pd.DataFrame({"a": rng.integers(0, 3, n) * 0.5 + 0.25,
                      "b": rng.choice(["x", "y"], n)})
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    Q = X.sample(30, random_state=1).reset_index(drop=True)
    return X, rng.integers(0, 3, n), Q


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("weights", ["uniform", "distance"])
def test_the_same_predictions_through_the_estimators_own_search(ties, weighted, weights):
    X, y, Q = data()
    sw = np.linspace(0.5, 2.0, len(X)) if weighted else None
    calls = []

    def search(est):
        def run(Xq, k):
            calls.append(k)
            return est.kneighbors(Xq, k)
        return run
    same = np.testing.assert_array_equal
    clf = KNeighborsClassifier(4, ties=ties, weights=weights).fit(X, y, sample_weight=sw)
    via = clf.with_search(search(clf))
    assert via is not clf and clf._search is None
    same(via.predict_proba(Q), clf.predict_proba(Q))
    reg = KNeighborsRegressor(4, ties=ties, weights=weights).fit(X, y.astype(float),
                                                                 sample_weight=sw)
    same(reg.with_search(search(reg)).predict(Q), reg.predict(Q))
    if ties == "include":
        assert max(calls) > 4          # the tied rows widened the search


@pytest.mark.parametrize("weights", ["uniform", "distance"])
@pytest.mark.parametrize("outputs", [1, 3])
def test_tied_targets_are_summed_with_the_searchs_own_bits(weights, outputs):
    """ties="include": the targets of the rows tied beyond k that with_search sums from
    the widened lists are summed as the compiled tally sums them, so real-valued targets
    give the estimator's own predictions bit for bit."""
    rng = np.random.default_rng(7)
    n = 200
    X = pd.DataFrame({"a": rng.integers(0, 3, n) * 0.5 + 0.25,
                      "b": rng.choice(["x", "y"], n)})
    y = rng.normal(size=(n, outputs)) * np.array([1.0, 1e-3, 1e5][:outputs])
    y = y[:, 0] if outputs == 1 else y
    Q = pd.DataFrame({"a": [0.25, 0.75, 1.25, 0.5], "b": ["x", "y", "y", "x"]})
    reg = KNeighborsRegressor(3, ties="include", weights=weights).fit(X, y)
    via = reg.with_search(lambda Xq, k: reg.kneighbors(Xq, k))
    np.testing.assert_array_equal(via.predict(Q), reg.predict(Q))


def test_bad_search_and_unfitted():
    X, y, _ = data()
    with pytest.raises(TypeError, match="search must be a callable"):
        KNeighborsClassifier(3).fit(X, y).with_search(None)
    with pytest.raises(NotFittedError):
        KNeighborsClassifier(3).with_search(lambda X, k: None)


def _answer(dist, ind):
    return lambda Xq, k: (dist(len(Xq), k), ind(len(Xq), k))


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("search, error, match", [
    (lambda Xq, k: None, TypeError, r"search must return a pair \(dist, ind\), got None"),
    (lambda Xq, k: (np.zeros((len(Xq), k)),), TypeError,
     r"search must return a pair \(dist, ind\), got a tuple of 1"),
    (_answer(lambda n, k: np.zeros((2, k)), lambda n, k: np.zeros((2, k), int)),
     ValueError, r"search returned dist of shape \(2, 3\) for 30 query rows and k = 3"),
    (_answer(lambda n, k: np.zeros((n, 1)), lambda n, k: np.zeros((n, 1), int)),
     ValueError, r"search returned dist of shape \(30, 1\) for 30 query rows and k = 3"),
    (_answer(lambda n, k: np.zeros((n, k)), lambda n, k: np.zeros((n, k + 1), int)),
     ValueError, r"search returned ind of shape \(30, 4\) for 30 query rows and k = 3"),
    (_answer(lambda n, k: np.zeros((n, k)), lambda n, k: np.zeros((n, k)) + 0.5),
     TypeError, "search returned ind of dtype float64; training positions are integers"),
    (_answer(lambda n, k: np.full((n, k), "a"), lambda n, k: np.zeros((n, k), int)),
     TypeError, "search returned dist of dtype <U1; distances are real numbers"),
    (_answer(lambda n, k: np.full((n, k), np.nan), lambda n, k: np.zeros((n, k), int)),
     ValueError, "search returned NaN distances"),
    (_answer(lambda n, k: np.zeros((n, k)), lambda n, k: np.full((n, k), 120)),
     ValueError, r"search returned training positions outside \[0, 120\): 120"),
    (_answer(lambda n, k: np.zeros((n, k)), lambda n, k: np.full((n, k), -1)),
     ValueError, r"search returned training positions outside \[0, 120\): -1"),
])
def test_what_search_returns_is_checked(ties, search, error, match):
    X, y, Q = data()
    for est in (KNeighborsClassifier(3, ties=ties).fit(X, y),
                KNeighborsRegressor(3, ties=ties).fit(X, y.astype(float))):
        with pytest.raises(error, match=match):
            est.with_search(search).predict(Q)
