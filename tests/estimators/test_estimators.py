"""hdist.neighbors: scikit-learn estimators checked against a plain reference (distances
from tests/reference.py, votes, weights and leave-one-out written out below), against
scikit-learn's estimator checks, and inside scikit-learn's tools."""
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.cluster import DBSCAN
from sklearn.model_selection import (GridSearchCV, StratifiedKFold, cross_val_predict,
                                     cross_val_score)
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer

import hdist
from hdist._search import votes as _knn
from hdist.datasets import load_credit_a, load_german
from hdist.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                             KNeighborsTransformer, NearestNeighbors)
from reference import CONTINUOUS, NOMINAL, reference_metric, rows_of
from sklearn_checks import parametrize_with_checks

from datadir import ROOT

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")


# ----------------------------------------------------------------------------------------
# data and the plain reference


def mixed_data(seed=0, n=70, n_query=30):
    """Random mixed rows with missing values and exact duplicates (ties by construction).
    Continuous values are drawn from a continuous distribution, so distinct pairs never
    tie by accident; duplicated rows tie exactly in any arithmetic."""
    rng = np.random.default_rng(seed)
    N = n + n_query
    a = rng.normal(size=N)
    b = rng.gamma(2.0, size=N)
    c = rng.choice(["red", "green", "blue"], size=N).astype(object)
    d = rng.choice(["x", "y"], size=N).astype(object)
    a[rng.random(N) < 0.08] = np.nan
    b[rng.random(N) < 0.08] = np.nan
    c[rng.random(N) < 0.08] = None
    d[rng.random(N) < 0.05] = None
    X = pd.DataFrame({"a": a, "b": b, "c": c, "d": d})
    y = rng.choice(["p", "q", "r"], size=N)
    target = rng.normal(size=N)
    dup = rng.choice(n, size=8, replace=False)
    X.iloc[dup[4:]] = X.iloc[dup[:4]].to_numpy()          # duplicate training rows
    X.iloc[n:n + 4] = X.iloc[dup[:4]].to_numpy()          # queries equal to training rows
    X = X.astype({"a": float, "b": float})
    return (X.iloc[:n].reset_index(drop=True), y[:n], target[:n],
            X.iloc[n:].reset_index(drop=True), y[n:])


KINDS = [CONTINUOUS, CONTINUOUS, NOMINAL, NOMINAL]


def ref_neighbors(preset, X, y, Q, k, exclude_self=False):
    ref = reference_metric(preset, KINDS).fit([X[c].tolist() for c in X.columns],
                                              None if y is None else list(y))
    train = rows_of([X[c].tolist() for c in X.columns])
    query = train if Q is None else rows_of([Q[c].tolist() for c in Q.columns])
    return ref, ref.kneighbors(query, train, k, exclude_self=exclude_self)


def plain_weights(d, kind):
    """Weights of one row of sorted neighbor distances, from their definitions."""
    k = len(d)
    if kind == "uniform":
        return [1.0] * k
    if kind == "distance":
        if any(v == 0 for v in d):
            return [1.0 if v == 0 else 0.0 for v in d]
        return [1.0 / v for v in d]
    if d[-1] == d[0]:                              # Dudani (1976)
        return [1.0] * k
    return [(d[-1] - v) / (d[-1] - d[0]) for v in d]


def ref_voters(rd, ri, k, ties):
    """Per query row: the reference distances and indices of the rows that vote."""
    out = []
    for row in range(len(ri)):
        if ties == "index":
            out.append((list(rd[row, :k]), list(ri[row, :k])))
        else:
            keep = [c for c in range(rd.shape[1]) if rd[row, c] <= rd[row, k - 1]]
            out.append(([rd[row, c] for c in keep], [ri[row, c] for c in keep]))
    return out


def plain_tie_weights(d, k, kind):
    """``plain_weights`` where the votes run past the k-th row (ties included): Dudani's
    d_k is the k-th distance, which every voter shares beyond it."""
    return plain_weights(list(d[:k]) + [d[k - 1]] * (len(d) - k), kind)


def plain_vote(labels, w):
    """Largest weighted vote; ties go to the smallest label."""
    score = {}
    for lab, wt in zip(labels, w):
        score[lab] = score.get(lab, 0.0) + wt
    best = max(score.values())
    return min(lab for lab, s in score.items() if s == best), score


# ----------------------------------------------------------------------------------------
# scikit-learn's estimator checks


@parametrize_with_checks([KNeighborsClassifier(), KNeighborsRegressor(), NearestNeighbors(),
                          KNeighborsTransformer(),
                          KNeighborsClassifier(3, weights="distance", metric="gower"),
                          KNeighborsRegressor(4, weights="dudani", select_k="loo")])
def test_sklearn_compatible(estimator, check, monkeypatch):
    # scikit-learn runs its array-API dispatch check (numpy inputs) only when this is set
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    check(estimator)


# ----------------------------------------------------------------------------------------
# against the reference


@pytest.mark.parametrize("preset", ["heom", "hvdm"])
def test_kneighbors_match_reference(preset):
    X, y, _, Q, _ = mixed_data(1)
    nn = NearestNeighbors(n_neighbors=4, metric=preset).fit(X, y)
    _, (rd, ri) = ref_neighbors(preset, X, y, Q, 4)
    d, i = nn.kneighbors(Q)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-12, atol=1e-14)
    _, (rd, ri) = ref_neighbors(preset, X, y, None, 3, exclude_self=True)
    d, i = nn.kneighbors(n_neighbors=3)
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-12, atol=1e-14)
    assert nn.kneighbors(Q, 2, return_distance=False).shape == (len(Q), 2)


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
@pytest.mark.parametrize("preset", ["heom", "hvdm"])
def test_classifier_matches_plain_vote(preset, weights, ties):
    X, y, _, Q, _ = mixed_data(2)
    k = 5
    clf = KNeighborsClassifier(k, metric=preset, weights=weights, ties=ties).fit(X, y)
    _, (rd, ri) = ref_neighbors(preset, X, y, Q, len(X))
    proba = clf.predict_proba(Q)
    pred = clf.predict(Q)
    assert list(clf.classes_) == ["p", "q", "r"]
    for row, (d, idx) in enumerate(ref_voters(rd, ri, k, ties)):
        w = plain_tie_weights(d, k, weights)
        want, score = plain_vote([y[j] for j in idx], w)
        assert pred[row] == want
        total = sum(score.values())
        np.testing.assert_allclose(proba[row], [score.get(c, 0.0) / total
                                                for c in clf.classes_], rtol=1e-12)
    assert clf.score(Q, pred) == 1.0


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
def test_regressor_matches_plain_mean(weights, ties):
    X, _, t, Q, _ = mixed_data(3)
    reg = KNeighborsRegressor(4, weights=weights, ties=ties).fit(X, t)
    _, (rd, ri) = ref_neighbors("heom", X, None, Q, len(X))
    want = []
    for d, idx in ref_voters(rd, ri, 4, ties):
        w = plain_tie_weights(d, 4, weights)
        want.append(np.dot(w, t[idx]) / sum(w))
    # a weighted mean of targets of both signs can cancel to near zero: its rounding is
    # relative to the targets' scale, not to the mean (numpy 2.5 sums in another order)
    atol = 1e-13 * np.abs(t).max()
    np.testing.assert_allclose(reg.predict(Q), want, rtol=1e-12, atol=atol)
    two = np.column_stack([t, 2 * t])
    np.testing.assert_allclose(
        KNeighborsRegressor(4, weights=weights, ties=ties).fit(X, two).predict(Q),
        np.column_stack([want, 2 * np.array(want)]), rtol=1e-12, atol=2 * atol)


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
def test_loo_choice_of_k_matches_plain_loop(weights, ties):
    X, y, t, _, _ = mixed_data(4)
    K = 7
    _, (rd, ri) = ref_neighbors("heom", X, y, None, len(X) - 1, exclude_self=True)
    acc, mae = [], []
    for k in range(1, K + 1):
        hits, err = 0, 0.0
        for r, (d, idx) in enumerate(ref_voters(rd, ri, k, ties)):
            w = plain_tie_weights(d, k, weights)
            hits += plain_vote([y[j] for j in idx], w)[0] == y[r]
            err += abs(np.dot(w, t[idx]) / sum(w) - t[r])
        acc.append(hits / len(X))
        mae.append(err / len(X))
    clf = KNeighborsClassifier(K, weights=weights, select_k="loo", ties=ties).fit(X, y)
    np.testing.assert_allclose(clf.loo_scores_, acc)
    assert clf.n_neighbors_ == int(np.argmax(acc)) + 1
    reg = KNeighborsRegressor(K, weights=weights, select_k="loo", ties=ties).fit(X, t)
    np.testing.assert_allclose(-reg.loo_scores_, mae, rtol=1e-12)
    assert reg.n_neighbors_ == int(np.argmin(mae)) + 1
    # predictions use the chosen k
    fixed = KNeighborsClassifier(clf.n_neighbors_, weights=weights, ties=ties).fit(X, y)
    np.testing.assert_array_equal(clf.predict(X), fixed.predict(X))


def test_radius_neighbors_and_graphs_match_reference():
    X, y, _, Q, _ = mixed_data(5)
    nn = NearestNeighbors(radius=0.9).fit(X)
    ref, _ = ref_neighbors("heom", X, None, Q, 1)
    train = rows_of([X[c].tolist() for c in X.columns])
    want = ref.radius_neighbors(rows_of([Q[c].tolist() for c in Q.columns]), train, 0.9)
    dist, ind = nn.radius_neighbors(Q)
    for r, hits in enumerate(want):
        assert list(ind[r]) == [j for _, j in hits]
        np.testing.assert_allclose(dist[r], [d for d, _ in hits], rtol=1e-12)
    G = nn.radius_neighbors_graph(Q, mode="distance")
    for r, hits in enumerate(want):
        row = G.getrow(r)
        assert sorted(row.indices) == sorted(j for _, j in hits)
    d5, i5 = nn.kneighbors(Q, 5)
    K = nn.kneighbors_graph(Q, 5, mode="distance").toarray()
    C = nn.kneighbors_graph(Q, 5).toarray()
    for r in range(len(Q)):
        np.testing.assert_array_equal(K[r, i5[r]], d5[r])
        assert C[r].sum() == 5 and (C[r, i5[r]] == 1).all()


def test_transformer_graph_feeds_dbscan():
    X, _ = load_credit_a()
    X = X.iloc[:200]
    n = len(X)
    G = KNeighborsTransformer(n_neighbors=n - 1, mode="distance").fit_transform(X)
    assert G.shape == (n, n) and G.nnz == n * n     # self included, explicit zeros kept
    dense = hdist.Metric("heom").fit(X).pairwise(X)
    np.testing.assert_allclose(G.toarray(), dense, rtol=1e-12, atol=1e-12)
    a = DBSCAN(eps=0.8, min_samples=4, metric="precomputed").fit(G).labels_
    b = DBSCAN(eps=0.8, min_samples=4, metric="precomputed").fit(dense).labels_
    np.testing.assert_array_equal(a, b)
    assert len(set(a)) > 2
    pipe = make_pipeline(KNeighborsTransformer(n_neighbors=10),
                         DBSCAN(eps=0.8, min_samples=4, metric="precomputed"))
    assert pipe.fit(X).named_steps["dbscan"].labels_.shape == (n,)
    conn = KNeighborsTransformer(mode="connectivity", n_neighbors=3).fit(X).transform(X)
    assert (conn.sum(axis=1) == 3).all()


# ----------------------------------------------------------------------------------------
# weights and ties


def test_vote_ties_go_to_the_smallest_label():
    X = np.array([[0.0], [1.0], [-1.0], [5.0]])
    for labels, want in ((["b", "a", "c", "c"], "a"), ([3, 2, 1, 1], 2),
                         ([True, False, True, True], False)):
        clf = KNeighborsClassifier(2).fit(X, labels)
        assert clf.predict([[0.4]])[0] == want
        np.testing.assert_array_equal(clf.predict_proba([[0.4]])[0][:2], [0.5, 0.5]) \
            if want != 2 else None


def test_zero_distances_win_outright():
    X = np.array([[0.0], [0.1], [0.1], [0.1], [1.0]])
    y = ["z", "a", "a", "a", "a"]
    q = [[0.0]]
    assert KNeighborsClassifier(4).fit(X, y).predict(q)[0] == "a"
    clf = KNeighborsClassifier(4, weights="distance").fit(X, y)
    assert clf.predict(q)[0] == "z"
    np.testing.assert_array_equal(clf.predict_proba(q), [[0.0, 1.0]])
    reg = KNeighborsRegressor(4, weights="distance").fit(X, [7.0, 1, 1, 1, 1])
    assert reg.predict(q)[0] == 7.0


def test_dudani_by_hand():
    X = np.array([[0.0], [1.0], [3.0]])
    y = ["a", "b", "b"]
    # distances 0, 1/3, 1 -> weights 1, 2/3, 0: a wins, uniform would pick b
    clf = KNeighborsClassifier(3, weights="dudani").fit(X, y)
    assert clf.predict([[0.0]])[0] == "a"
    np.testing.assert_allclose(clf.predict_proba([[0.0]]), [[0.6, 0.4]])
    assert KNeighborsClassifier(3).fit(X, y).predict([[0.0]])[0] == "b"
    np.testing.assert_array_equal(_knn.neighbor_weights([[0.5, 0.5, 0.5]], "dudani"),
                                  [[1.0, 1.0, 1.0]])


def test_callable_weights():
    X, y, _, Q, _ = mixed_data(6)
    sq = KNeighborsClassifier(5, weights=lambda d: 1.0 / (1.0 + d) ** 2).fit(X, y)
    _, (rd, ri) = ref_neighbors("heom", X, y, Q, 5)
    for r in range(len(Q)):
        want, _ = plain_vote([y[j] for j in ri[r]], list(1.0 / (1.0 + rd[r]) ** 2))
        assert sq.predict(Q.iloc[[r]])[0] == want
    with pytest.raises(ValueError, match="shape"):
        KNeighborsClassifier(3, weights=lambda d: d[:, :1]).fit(X, y).predict(Q)
    with pytest.raises(ValueError, match="non-negative"):
        KNeighborsClassifier(3, weights=lambda d: -d).fit(X, y).predict(Q)


# ----------------------------------------------------------------------------------------
# inside scikit-learn's tools, on real mixed data


@pytest.fixture(scope="module")
def credit():
    return load_credit_a()


def test_dataframe_reaches_the_metric_untouched(credit, monkeypatch):
    X, y = credit
    seen = []
    real = hdist.Metric.fit

    def fit_spy(self, X_, *args, **kw):
        seen.append(X_)
        return real(self, X_, *args, **kw)
    monkeypatch.setattr(hdist.Metric, "fit", fit_spy)
    clf = KNeighborsClassifier(metric="hvdm").fit(X, y)
    assert seen[0] is X
    assert clf.feature_names_in_.tolist() == list(X.columns)
    assert clf.metric_.kinds_.count("nominal") == 9


def test_pipeline_cross_val_and_manual_folds_agree(credit):
    X, y = credit
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    pipe = Pipeline([("same", FunctionTransformer(validate=False)),
                     ("knn", KNeighborsClassifier(5, metric="hvdm", weights="distance"))])
    pred = cross_val_predict(pipe, X, y, cv=cv)
    manual = np.empty(len(y), dtype=object)
    for tr, te in cv.split(X, y):
        m = hdist.Metric("hvdm").fit(X.iloc[tr], y.iloc[tr])
        d, i = m.kneighbors(X.iloc[te], 5)
        ytr = y.iloc[tr].to_numpy()
        for r, row in enumerate(te):
            manual[row] = plain_vote([ytr[j] for j in i[r]], plain_weights(list(d[r]),
                                                                          "distance"))[0]
    np.testing.assert_array_equal(pred, manual)
    scores = cross_val_score(pipe, X, y, cv=cv)
    assert 0.75 < scores.mean() < 0.95


def test_grid_search_over_metric_objects_and_params(credit):
    X, y = credit
    base = KNeighborsClassifier(metric=hdist.Metric("minkowski", p=2.0))
    assert base.get_params()["metric__p"] == 2.0
    grid = GridSearchCV(base, {"n_neighbors": [1, 7], "metric__p": [1.0, 2.0],
                               "weights": ["uniform", "dudani"]}, cv=3)
    grid.fit(X, y)
    assert set(grid.best_params_) == {"n_neighbors", "metric__p", "weights"}
    assert base.metric.params == {"p": 2.0}              # the given Metric is not touched
    assert not hasattr(base.metric, "plan_")
    best = grid.best_estimator_
    assert best.metric_.params["p"] == grid.best_params_["metric__p"]
    twin = clone(best).fit(X, y)
    np.testing.assert_array_equal(twin.predict(X), best.predict(X))
    g2 = GridSearchCV(KNeighborsClassifier(), {"metric": ["heom", "hvdm", "gower"],
                                               "metric_params": [None, {"missing": "max"}]},
                      cv=3).fit(X, y)
    assert g2.best_params_["metric"] in ("heom", "hvdm", "gower")


def test_metric_params_override_a_given_metric(credit):
    X, y = credit
    a = KNeighborsClassifier(metric=hdist.Metric("hvdm", vdm="N1"),
                             metric_params={"vdm": "N3", "p": 1.0}).fit(X, y)
    b = KNeighborsClassifier(metric="hvdm", metric_params={"vdm": "N3", "p": 1.0}).fit(X, y)
    assert a.metric_.params == {"vdm": "N3", "p": 1.0}
    np.testing.assert_array_equal(a.kneighbors(X.iloc[:20])[1], b.kneighbors(X.iloc[:20])[1])


def test_pickle_roundtrip(credit):
    X, y = credit
    clf = KNeighborsClassifier(3, metric="hvdm").fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize("algorithm", ["brute", "kd_tree", "ball_tree"])
def test_algorithms_agree(algorithm):
    X, y = load_german()
    X, y = X.iloc[:400], y.iloc[:400]
    ref = KNeighborsClassifier(6, algorithm="brute", metric="hvdm").fit(X, y)
    clf = KNeighborsClassifier(6, algorithm=algorithm, metric="hvdm").fit(X, y)
    np.testing.assert_array_equal(clf.kneighbors()[1], ref.kneighbors()[1])
    np.testing.assert_array_equal(clf.predict(X), ref.predict(X))


def test_uses_neighbors_index():
    X, y, _, Q, _ = mixed_data(7)
    clf = KNeighborsClassifier(3).fit(X, y)
    assert type(clf._index).__name__ == "NeighborsIndex"
    nn = NearestNeighbors(radius=0.7).fit(X)
    d, i = nn.radius_neighbors(Q)
    assert type(nn._index).__name__ == "NeighborsIndex" and len(i) == len(Q)


# ----------------------------------------------------------------------------------------
# errors


@pytest.mark.parametrize("est,fit_args,err,match", [
    (KNeighborsClassifier(metric="nope"), "Xy", ValueError, "unknown metric 'nope'"),
    (KNeighborsClassifier(metric=3), "Xy", TypeError, "metric must be a metric name"),
    (KNeighborsClassifier(metric_params=[1]), "Xy", TypeError, "metric_params must be"),
    (KNeighborsClassifier(metric_params={"bogus": 1}), "Xy", TypeError, "'bogus'"),
    (KNeighborsClassifier(0), "Xy", ValueError, "n_neighbors must be >= 1"),
    (KNeighborsClassifier(2.5), "Xy", TypeError, "n_neighbors must be an int"),
    (KNeighborsClassifier(weights="heavy"), "Xy", ValueError, "weights must be one of"),
    (KNeighborsClassifier(select_k="cv"), "Xy", ValueError, "select_k must be"),
    (KNeighborsClassifier(algorithm="fast"), "Xy", ValueError, "algorithm must be"),
    (KNeighborsClassifier(leaf_size=0), "Xy", ValueError, "leaf_size"),
    (KNeighborsClassifier(), "X", ValueError, "requires y to be passed"),
    (KNeighborsClassifier(), "Xnone", ValueError, "missing or infinite label at row 3"),
    (KNeighborsClassifier(), "Xfloat", ValueError, "Unknown label type"),
    (KNeighborsRegressor(metric="hvdm"), "X2d", ValueError, "1-D"),
    (KNeighborsClassifier(80, select_k="loo"), "Xy", ValueError, "exceeds the 69"),
    (NearestNeighbors(), "Xinf", ValueError, "infinite"),
])
def test_fit_errors(est, fit_args, err, match):
    X, y, t, _, _ = mixed_data(8)
    if fit_args == "X":
        args = (X, None)
    elif fit_args == "Xnone":
        y = y.astype(object)
        y[3] = None
        args = (X, y)
    elif fit_args == "Xfloat":
        args = (X, t)
    elif fit_args == "X2d":
        args = (X, np.column_stack([t, t]))
    elif fit_args == "Xinf":
        X = X.copy()
        X.loc[2, "a"] = np.inf
        args = (X,)
    else:
        args = (X, y)
    with pytest.raises(err, match=match):
        est.fit(*args)


def test_predict_errors():
    X, y, _, Q, _ = mixed_data(9)
    clf = KNeighborsClassifier(3).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but KNeighborsClassifier is "
                                         "expecting 4"), \
            pytest.warns(UserWarning, match="does not have valid feature names"):
        clf.predict(Q.iloc[:, :3].to_numpy())
    with pytest.raises(ValueError, match="feature names should match"):
        clf.predict(Q.rename(columns={"a": "A"}))
    with pytest.raises(ValueError, match="Reshape your data"):
        clf.predict(np.array([1.0, 2.0, "x", "y"], dtype=object))
    with pytest.raises(ValueError, match="larger than the 70"):
        clf.kneighbors(Q, 71)
    with pytest.raises(TypeError, match="sparse"):
        from scipy import sparse
        NearestNeighbors().fit(sparse.csr_matrix(np.eye(4)))
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        KNeighborsClassifier().predict(Q)


# ----------------------------------------------------------------------------------------
# import cost


def test_import_hdist_stays_light():
    code = ("import sys, time; t = time.perf_counter(); import hdist; "
            "dt = time.perf_counter() - t; "
            "heavy = [m for m in ('sklearn', 'pandas', 'pyarrow', 'polars', 'dask', "
            "'matplotlib', 'scipy') if m in sys.modules]; print(heavy, dt); "
            "hdist.KNeighborsClassifier; print('sklearn' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first.startswith("[] ")
    assert second == "True"


# ----------------------------------------------------------------------------------------
# metadata routing: ``progress`` is a display option, not sample metadata


def _public_estimators():
    from sklearn.base import BaseEstimator
    return [getattr(hdist, n) for n in sorted(hdist.__all__)
            if isinstance(getattr(hdist, n), type) and issubclass(getattr(hdist, n),
                                                                  BaseEstimator)]


@pytest.mark.parametrize("cls", _public_estimators(), ids=lambda c: c.__name__)
def test_progress_is_not_routed_metadata(cls):
    import pydoc
    est = cls()
    req = est._get_metadata_request()
    for method in ("fit", "partial_fit", "predict", "predict_proba", "transform", "score",
                   "fit_transform", "fit_predict", "decision_function"):
        if hasattr(req, method):
            assert "progress" not in getattr(req, method).requests, method
    for name in dir(cls):
        if name.startswith("set_") and name.endswith("_request"):
            import inspect
            assert "progress" not in inspect.signature(getattr(est, name)).parameters
    # the routing methods' boilerplate never lists it
    assert "progress : str, True, False, or None" not in pydoc.render_doc(
        cls, renderer=pydoc.plaintext)


def test_progress_still_works_and_routing_passes_sample_weight_only():
    from sklearn import config_context
    X, y = load_credit_a()
    X, y = X.iloc[:120], y.iloc[:120]
    seen = []
    clf = KNeighborsClassifier(3).fit(X, y, progress=lambda *a: seen.append(a))
    clf.predict(X.iloc[:5], progress=lambda *a: seen.append(a))
    assert seen
    with config_context(enable_metadata_routing=True):
        routed = KNeighborsClassifier(3).set_fit_request(sample_weight=True) \
            .set_score_request(sample_weight=False)
        with pytest.raises(TypeError, match="progress"):
            routed.set_fit_request(progress=True)
        w = np.ones(len(X))
        s = cross_val_score(routed, X, y, cv=3, params={"sample_weight": w}) \
            if "params" in cross_val_score.__code__.co_varnames else None
        if s is not None:
            assert np.isfinite(s).all()
