"""Re-fitting never serves stale rows: fitted state belongs to one fit.

A metric (or an index, estimator, clusterer) fitted on ``A``, queried, then fitted on
``B`` must answer every query exactly as a fresh object fitted on ``B``; an index built
on a metric that is re-fitted afterwards refuses to answer instead of mixing the two.
"""
from __future__ import annotations

import pickle

import numpy as np
import pytest
from sklearn.model_selection import KFold

import hdist
from hdist import Metric, NeighborsIndex
from hdist.cluster import KMedoids, KModes, KPrototypes
from hdist.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                             KNeighborsTransformer, NearestNeighbors)
from test_gemm import knn_rows

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

#: presets covering every component kind (difference, overlap, VDM table, posterior
#: estimators, co-occurrence tables) and the mean aggregate
PRESETS = ("heom", "hvdm", "gower", "vdm", "ivdm", "hds", "manhattan")
ALGORITHMS = ("brute", "kd_tree", "ball_tree")


def data(seed, n, nominal_only=False):
    """A mixed object table with missing cells and class labels; two seeds give
    different rows, ranges and value sets."""
    rng = np.random.default_rng(seed)
    cols = []
    if not nominal_only:
        cols.append(rng.normal(10 * seed, 1 + seed, n))
        cols.append(rng.integers(0, 5 + 3 * seed, n).astype(float))
    cols.append(rng.choice(["a", "b", "c", "d"][: 2 + seed % 3], n))
    cols.append(rng.choice(["u", "v", "w"], n))
    X = np.empty((n, len(cols)), dtype=object)
    for j, c in enumerate(cols):
        X[:, j] = list(c)
    miss = rng.random(X.shape) < 0.08
    miss[:, -1] = False
    X[miss] = None
    y = np.where(rng.random(n) < 0.5, "yes", "no")
    return X, y


def make(preset, **kw):
    if preset in ("vdm", "hds"):
        kw.setdefault("nominal", "all")
    return Metric(preset, **kw)


def queries(m, X, Q):
    """Every query path of a fitted metric, as a tuple of arrays."""
    out = [m.pairwise(Q), m.pairwise(Q, X), m.pairwise(Q, reduced=True)]
    out += list(m.kneighbors(None, 3))
    out += list(m.kneighbors(Q, 4))
    out += list(knn_rows(m, m.encode(Q), 2, False, 2, method="gemm"))
    D, I = m.radius_neighbors(Q, 0.0)
    out += [np.concatenate(list(D)), np.concatenate(list(I))]
    D, I = m.radius_neighbors(None, 0.8)
    out += [np.concatenate(list(D)), np.concatenate(list(I))]
    e = m.explain(Q[0], X[1])
    out += [e.terms, np.array([e.distance, e.reduced])]
    return out


def assert_same(a, b):
    assert len(a) == len(b)
    for u, v in zip(a, b):
        u, v = np.asarray(u), np.asarray(v)
        if u.dtype == object and u.ndim == 1 and len(u) and isinstance(u[0], np.ndarray):
            assert len(u) == len(v)
            for s, t in zip(u, v):
                np.testing.assert_array_equal(s, t)
        else:
            np.testing.assert_array_equal(u, v)


@pytest.mark.parametrize("preset", PRESETS)
def test_metric_refit_equals_fresh(preset):
    A, ya = data(0, 60, preset in ("vdm", "hds"))
    B, yb = data(1, 45, preset in ("vdm", "hds"))
    m = make(preset)
    m.fit(A, ya)
    queries(m, A, A[:20])            # fills every cache derived from A
    m.fit(B, yb)
    fresh = make(preset).fit(B, yb)
    assert_same(queries(m, B, B[:20]), queries(fresh, B, B[:20]))
    # the reproducer of the issue: the training rows are their own nearest neighbours
    d, _ = m.kneighbors(B[:3], 1)
    assert (d == 0).all()
    assert len(m.radius_neighbors(B[:1], 0.0)[1][0]) >= 1


def test_set_params_drops_the_fitted_state():
    A, ya = data(0, 60)
    B, yb = data(1, 45)
    m = Metric("hvdm").fit(A, ya)
    m.kneighbors(A[:5], 2)
    m.set_params(p=1.0)
    assert not hasattr(m, "plan_") and not hasattr(m, "train_")
    with pytest.raises(hdist._core.schema.NotFittedError):
        m.kneighbors(B[:2], 1)
    m.fit(B, yb)
    fresh = Metric("hvdm", p=1.0).fit(B, yb)
    assert_same(queries(m, B, B[:20]), queries(fresh, B, B[:20]))


def test_refit_without_labels_forgets_the_classes():
    A, ya = data(0, 60)
    B, _ = data(1, 45)
    m = Metric("heom", weights="mi").fit(A, ya)
    assert hasattr(m, "classes_") and hasattr(m, "mutual_information_")
    m.set_params(weights=None).fit(B)
    assert not hasattr(m, "classes_") and not hasattr(m, "mutual_information_")


def test_failed_refit_leaves_no_mixture():
    A, ya = data(0, 60)
    m = Metric("heom").fit(A, ya)
    m.kneighbors(A[:3], 1)
    with pytest.raises(ValueError):
        m.fit(A[:1])
    assert not hasattr(m, "plan_") and not hasattr(m, "delta_")


def test_pickled_refit_metric_equals_fresh():
    A, ya = data(0, 60)
    B, yb = data(1, 45)
    m = Metric("hvdm").fit(A, ya)
    m.kneighbors(A, 2)
    m.fit(B, yb)
    m2 = pickle.loads(pickle.dumps(m))
    fresh = Metric("hvdm").fit(B, yb)
    assert_same(queries(m2, B, B[:20]), queries(fresh, B, B[:20]))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_index_refuses_a_metric_refitted_under_it(algorithm):
    A, ya = data(0, 60)
    B, yb = data(1, 45)
    m = Metric("heom", missing="max").fit(A, ya)
    idx = NeighborsIndex(m, algorithm=algorithm).fit()
    before = idx.kneighbors(A[:5], 3)
    m.fit(B, yb)
    for call in (lambda: idx.kneighbors(B[:3], 1), lambda: idx.radius_neighbors(B[:1], 0.0),
                 lambda: idx.kneighbors(None, 2), lambda: idx.insert(B[:2])):
        with pytest.raises(ValueError, match="re-fitted"):
            call()
    # fitting the index again follows the metric's new fit, as a fresh index would
    idx.fit()
    fresh = NeighborsIndex(Metric("heom", missing="max").fit(B, yb),
                           algorithm=algorithm).fit()
    assert_same(idx.kneighbors(B[:9], 4), fresh.kneighbors(B[:9], 4))
    assert_same(idx.radius_neighbors(B[:9], 0.5), fresh.radius_neighbors(B[:9], 0.5))
    # an index over an unfitted metric owns its own copy: re-fitting the original is
    # invisible to it
    m2 = Metric("heom", missing="max")
    idx2 = NeighborsIndex(m2, algorithm=algorithm).fit(A)
    m2.fit(B)
    assert_same(idx2.kneighbors(A[:5], 3), before)


# the ball tree serves metrics only (gower's "ignore" policy and ivdm are refused)
@pytest.mark.parametrize("preset,algorithm",
                         [(p, a) for p in ("heom", "hvdm", "gower", "ivdm") for a in ALGORITHMS
                          if a != "ball_tree" or p in ("heom", "hvdm")])
def test_index_refit_equals_fresh(preset, algorithm):
    A, ya = data(0, 60)
    B, yb = data(1, 45)
    kw = dict(metric_params={"missing": "max"} if preset == "heom" else None)
    idx = NeighborsIndex(preset, algorithm=algorithm, **kw)
    if algorithm == "ball_tree":
        A = A.copy()
        B = B.copy()
        A[:, :2] = np.where(A[:, :2] == None, 0.0, A[:, :2])  # noqa: E711
        B[:, :2] = np.where(B[:, :2] == None, 0.0, B[:, :2])  # noqa: E711
    idx.fit(A, ya)
    idx.kneighbors(A[:10], 3)
    idx.fit(B, yb)
    fresh = NeighborsIndex(preset, algorithm=algorithm, **kw).fit(B, yb)
    assert_same(idx.kneighbors(B[:12], 4), fresh.kneighbors(B[:12], 4))
    assert_same(idx.kneighbors(None, 2, exclude_self=True),
                fresh.kneighbors(None, 2, exclude_self=True))
    assert_same(idx.radius_neighbors(B[:12], 0.7), fresh.radius_neighbors(B[:12], 0.7))


def estimator_outputs(est, X, kind):
    out = list(est.kneighbors(X[:10], 3))
    if kind == "clf":
        out += [est.predict(X[:15]), est.predict_proba(X[:15])]
    elif kind == "reg":
        out += [est.predict(X[:15])]
    elif kind == "tr":
        out += [est.transform(X[:15]).toarray()]
    else:
        D, I = est.radius_neighbors(X[:5], 0.5)
        out += [np.concatenate(list(D)), np.concatenate(list(I))]
    return out


ESTIMATORS = {"clf": KNeighborsClassifier, "reg": KNeighborsRegressor,
              "tr": KNeighborsTransformer, "nn": NearestNeighbors}


@pytest.mark.parametrize("algorithm", ("brute", "kd_tree"))
@pytest.mark.parametrize("kind", sorted(ESTIMATORS))
@pytest.mark.parametrize("metric", ("hvdm", "metric-object"))
def test_estimator_refit_equals_fresh(kind, metric, algorithm):
    A, ya = data(0, 60)
    B, yb = data(1, 45)
    target = {"reg": lambda y: (y == "yes").astype(float)}.get(kind, lambda y: y)
    mk = (lambda: Metric("hvdm")) if metric == "metric-object" else (lambda: metric)
    cls = ESTIMATORS[kind]
    kw = dict(n_neighbors=3, metric=mk(), algorithm=algorithm)
    est = cls(**kw).fit(A, target(ya))
    estimator_outputs(est, A, kind)
    est.fit(B, target(yb))
    fresh = cls(**dict(kw, metric=mk())).fit(B, target(yb))
    assert_same(estimator_outputs(est, B, kind), estimator_outputs(fresh, B, kind))


@pytest.mark.parametrize("cls,kw", [(KModes, {}), (KPrototypes, {}),
                                    (KMedoids, {"metric": "hvdm"})])
def test_clustering_refit_equals_fresh(cls, kw):
    nominal_only = cls is KModes
    A, ya = data(0, 60, nominal_only)
    B, yb = data(1, 45, nominal_only)
    y_fit = (lambda y: y) if kw.get("metric") == "hvdm" else (lambda y: None)
    km = cls(n_clusters=3, random_state=0, **kw).fit(A, y_fit(ya))
    km.predict(A)
    km.fit(B, y_fit(yb))
    fresh = cls(n_clusters=3, random_state=0, **kw).fit(B, y_fit(yb))
    np.testing.assert_array_equal(km.labels_, fresh.labels_)
    np.testing.assert_array_equal(km.transform(B), fresh.transform(B))


def test_clustering_refuses_a_metric_refitted_under_it():
    A, _ = data(0, 60)
    B, _ = data(1, 45)
    m = Metric("heom").fit(A)
    kp = KPrototypes(n_clusters=3, metric=m, random_state=0).fit(A)
    m.fit(B)
    with pytest.raises(ValueError, match="re-fitted"):
        kp.predict(B)


@pytest.mark.parametrize("preset", ("heom", "hvdm", "ivdm"))
def test_one_metric_reused_across_folds_equals_fresh(preset):
    X, y = data(2, 90)
    m = Metric(preset)
    for train, test in KFold(5, shuffle=True, random_state=0).split(X):
        m.fit(X[train], y[train])
        got = m.kneighbors(X[test], 3)
        want = Metric(preset).fit(X[train], y[train]).kneighbors(X[test], 3)
        assert_same(got, want)
        idx = NeighborsIndex(m, algorithm="kd_tree").fit()
        assert_same(idx.kneighbors(X[test], 3), want)
