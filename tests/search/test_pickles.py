"""Fitted objects survive a pickle round trip: metrics, indexes (brute force, KD-tree, ball
tree), k-NN estimators, the imputer and the clustering models answer bit for bit as before,
whether they were pickled fresh from ``fit`` or after a query filled what is built on
first use (the compiled plan, a search structure).

The data are 150 rows of the bundled credit-a dataset as a numpy object array (strings,
floats and None), queried with 30 others.
"""
import pickle

import numpy as np
import pytest

import hdist


def _data():
    pytest.importorskip("pandas")
    X, y = hdist.load_dataset("credit-a")
    X = X.iloc[:180]
    y = np.asarray(y)[:180]
    arr = np.empty(X.shape, dtype=object)
    nominal = []
    for j, c in enumerate(X.columns):
        col = X[c]
        if str(col.dtype) == "category":
            nominal.append(j)
            arr[:, j] = [None if v != v else str(v) for v in col.astype(object)]
        else:
            arr[:, j] = [None if v != v else float(v) for v in col]
    return arr[:150], y[:150].astype(str), arr[150:], nominal


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert b.dtype == object and a.shape == b.shape
        for x, y in zip(a.ravel(), b.ravel()):
            _same(x, y)
    else:
        np.testing.assert_array_equal(a, b)


def _knn(Q):
    return ("kneighbors", lambda o: o.kneighbors(Q, 4))


def _cases():
    """``name -> (make, calls)``: ``make(X, y, nominal)`` fits the object, ``calls`` are
    ``(label, function of the object)``."""
    X, y, Q, nominal = _data()
    cases = {}
    for name in ("heom", "hvdm", "ivdm", "gower", "hds"):
        cases["metric-" + name] = (
            lambda name=name: hdist.Metric(name, nominal=nominal).fit(X, y),
            [_knn(Q), ("pairwise", lambda o: o.pairwise(Q[:5], X[:7]))])
    for algo in ("brute", "kd_tree", "ball_tree"):
        # (the ball tree needs a missing-value rule under which the triangle inequality holds)
        cases["index-" + algo] = (
            lambda algo=algo: hdist.NeighborsIndex(
                hdist.Metric("heom", nominal=nominal, missing="max"), algorithm=algo).fit(X),
            [_knn(Q), ("radius", lambda o: o.radius_neighbors(Q[:5], 0.6))])
    params = {"nominal": nominal}
    t = np.array([v if v is not None else 0.0 for v in X[:, 1]], dtype=float)
    cases["knn-classifier"] = (
        lambda: hdist.KNeighborsClassifier(5, metric="hvdm", metric_params=params).fit(X, y),
        [("predict_proba", lambda o: o.predict_proba(Q))])
    cases["knn-regressor"] = (
        lambda: hdist.KNeighborsRegressor(3, metric="heom", metric_params=params).fit(X, t),
        [("predict", lambda o: o.predict(Q))])
    cases["imputer"] = (
        lambda: hdist.KNNImputer(metric="heom", metric_params=params).fit(X),
        [("transform", lambda o: o.transform(Q))])
    cases["kmedoids"] = (
        lambda: hdist.KMedoids(4, metric="gower", metric_params=params,
                               random_state=0).fit(X),
        [("predict", lambda o: o.predict(Q))])
    cases["kprototypes"] = (
        lambda: hdist.KPrototypes(3, metric_params=params, random_state=0).fit(X),
        [("predict", lambda o: o.predict(Q))])
    return cases


NAMES = ["metric-heom", "metric-hvdm", "metric-ivdm", "metric-gower", "metric-hds",
         "index-brute", "index-kd_tree", "index-ball_tree", "knn-classifier",
         "knn-regressor", "imputer", "kmedoids", "kprototypes"]


@pytest.fixture(scope="module")
def cases():
    pytest.importorskip("sklearn")
    return _cases()


def test_every_kind_is_named(cases):
    assert sorted(cases) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_round_trip_answers_alike(cases, name):
    make, calls = cases[name]
    fresh = pickle.loads(pickle.dumps(make()))       # before any query
    used = make()
    want = [(label, call(used)) for label, call in calls]
    again = pickle.loads(pickle.dumps(used))          # after the queries built their state
    for obj in (fresh, again, pickle.loads(pickle.dumps(again))):
        for (label, call), (_, expect) in zip(calls, want):
            _same(expect, call(obj))


class _Pickled:
    """Pickles as ``cls`` with the instance dict ``state`` (what an earlier build wrote)."""

    def __init__(self, cls, state):
        self.cls, self.state = cls, state

    def __reduce__(self):
        import copyreg
        return copyreg._reconstructor, (self.cls, object, None), self.state


# the state an index pickled before RowIndex held a searcher had (its tree and lists in
# attributes of the index itself)
_EARLIER = ["_decision", "_fit_state", "_lists", "_rows", "_tree", "_unseen", "_why",
            "algorithm", "algorithm_", "build_time_", "leaf_size", "metric", "metric_",
            "metric_params", "n_distance_evaluations_", "n_lists", "n_probe",
            "random_state", "target_recall"]


@pytest.mark.parametrize("fitted", [True, False])
def test_an_index_pickled_by_an_earlier_build_is_refused_at_load(fitted):
    X, _ = _data()[:2]
    index = hdist.NeighborsIndex("heom", algorithm="kd_tree")
    if fitted:
        index.fit(X)
        state = {key: index.__dict__.get(key) for key in _EARLIER}
    else:
        state = {key: index.__dict__[key] for key in
                 ("algorithm", "leaf_size", "metric", "metric_params", "n_lists", "n_probe",
                  "random_state", "target_recall")}
    data = pickle.dumps(_Pickled(hdist.NeighborsIndex, state))
    with pytest.raises(ValueError, match="pickled by an earlier, unreleased hdist; fit it "
                                         "again"):
        pickle.loads(data)
    # an estimator holding one is refused as well
    clf = hdist.KNeighborsClassifier(3)
    st = {"n_neighbors": 3, "_index": _Pickled(hdist.NeighborsIndex, state)}
    with pytest.raises(ValueError, match="earlier, unreleased hdist"):
        pickle.loads(pickle.dumps(_Pickled(type(clf), st)))
    # the current state loads and answers
    index = hdist.NeighborsIndex("heom", algorithm="kd_tree").fit(X)
    again = pickle.loads(pickle.dumps(index))
    np.testing.assert_array_equal(again.kneighbors(X[:5], 2)[1], index.kneighbors(X[:5], 2)[1])
    unfitted = pickle.loads(pickle.dumps(hdist.NeighborsIndex("heom")))
    assert unfitted.fit(X).kneighbors(X[:3], 1)[1].shape == (3, 1)
