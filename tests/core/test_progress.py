"""progress=: block-wise queries equal the single call; the callback ends at (total, total)."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._core import progress as _progress

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")


def table(n, seed=0):
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"a": rng.integers(0, 4, n).astype(float),
                      "b": rng.choice(list("xyz"), n).astype(object),
                      "c": rng.normal(size=n).round(1)})
    t.loc[rng.random(n) < 0.05, "a"] = np.nan
    t.loc[rng.random(n) < 0.05, "b"] = None
    return t


class Calls(list):
    def __call__(self, done, total):
        self.append((done, total))


def check_calls(calls, total):
    assert calls[-1] == (total, total)
    done = [c[0] for c in calls]
    assert done == sorted(done) and len(calls) >= 2


@pytest.mark.parametrize("algorithm", [None, "brute", "kd_tree"])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_kneighbors_with_progress_equals_without(algorithm, exclude_self):
    X = table(2500)
    obj = hdist.Metric("heom").fit(X) if algorithm is None else \
        hdist.NeighborsIndex("heom", algorithm=algorithm).fit(X)
    Q = None if exclude_self else table(900, 1)
    total = len(X) if exclude_self else 900
    d0, i0 = obj.kneighbors(Q, 6, exclude_self=exclude_self)
    calls = Calls()
    d1, i1 = obj.kneighbors(Q, 6, exclude_self=exclude_self, progress=calls)
    np.testing.assert_array_equal(i1, i0)
    np.testing.assert_array_equal(d1, d0)
    check_calls(calls, total)
    r0 = obj.radius_neighbors(Q, 0.4, exclude_self=exclude_self)
    calls = Calls()
    r1 = obj.radius_neighbors(Q, 0.4, exclude_self=exclude_self, progress=calls)
    for a, b in zip(r0, r1):
        assert all(np.array_equal(x, y) for x, y in zip(a, b))
    check_calls(calls, total)


def test_pairwise_with_progress_equals_without():
    X, Y = table(700), table(300, 2)
    m = hdist.Metric("gower").fit(X)
    for args in ((X,), (X, Y)):
        calls = Calls()
        np.testing.assert_array_equal(m.pairwise(*args, progress=calls), m.pairwise(*args))
        check_calls(calls, 700)


def test_progress_true_and_bad_values(capsys):
    X = table(600)
    m = hdist.Metric("heom").fit(X)
    m.kneighbors(X, 2, progress=True)
    assert "600" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress must be"):
        m.kneighbors(X, 2, progress="yes")
    calls = Calls()
    m.kneighbors(X.iloc[:0], 2, progress=calls)
    assert calls == [(0, 0)]


def test_drop_self_keeps_the_order_without_the_own_row():
    d = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    i = np.array([[0, 5, 2], [0, 2, 4]])         # query 1 (own row 1) is not listed
    dd, ii = _progress.drop_self(d, i, 0, 2)
    np.testing.assert_array_equal(ii, [[5, 2], [0, 2]])


def test_estimators_pass_progress_through():
    from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor, NearestNeighbors
    X, Q = table(1200), table(700, 3)
    y = np.where(X["c"] > 0, "p", "n")
    clf = KNeighborsClassifier(4, metric="hvdm").fit(X, y)
    for method in ("predict", "predict_proba", "kneighbors"):
        calls = Calls()
        got = getattr(clf, method)(Q, progress=calls)
        want = getattr(clf, method)(Q)
        for a, b in zip(got if method == "kneighbors" else [got],
                        want if method == "kneighbors" else [want]):
            np.testing.assert_array_equal(a, b)
        check_calls(calls, 700)
    reg = KNeighborsRegressor(3).fit(X, X["c"].to_numpy())
    calls = Calls()
    np.testing.assert_array_equal(reg.predict(Q, progress=calls), reg.predict(Q))
    check_calls(calls, 700)
    nn = NearestNeighbors(radius=0.3).fit(X)
    calls = Calls()
    got = nn.radius_neighbors(None, progress=calls)[1]
    assert all(np.array_equal(a, b) for a, b in zip(got, nn.radius_neighbors(None)[1]))
    check_calls(calls, 1200)


def test_clustering_reports_iterations():
    from hdist.cluster import KMedoids, KPrototypes
    X = table(300)
    calls = Calls()
    a = KPrototypes(3, n_init=2, max_iter=20, random_state=0).fit(X, progress=calls)
    b = KPrototypes(3, n_init=2, max_iter=20, random_state=0).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    check_calls(calls, 40)
    assert (20, 40) in calls
    calls = Calls()
    KMedoids(3, n_init=3, random_state=0).fit(X, progress=calls)
    assert calls == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("name", ["heom", "hvdm", "ivdm"])
def test_metric_fit_reports_steps_and_equals_without(name):
    X = table(3000)
    y = (X["c"] > 0).to_numpy()
    calls = Calls()
    a = hdist.Metric(name).fit(X, y, progress=calls)
    b = hdist.Metric(name).fit(X, y)
    check_calls(calls, 2 * X.shape[1])
    assert calls[0] == (X.shape[1], 2 * X.shape[1])
    Q = table(200, 3)
    np.testing.assert_array_equal(a.pairwise(Q), b.pairwise(Q))


@pytest.mark.parametrize("algorithm", ["kd_tree", "ball_tree", "auto"])
def test_tree_build_reports_rows_placed_in_leaves(algorithm):
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"u": rng.normal(size=20000), "v": rng.normal(size=20000),
                      "w": rng.choice(list("abc"), 20000)})
    calls = Calls()
    idx = hdist.NeighborsIndex("heom", algorithm=algorithm, leaf_size=8).fit(X, progress=calls)
    ref = hdist.NeighborsIndex("heom", algorithm=algorithm, leaf_size=8).fit(X)
    # the metric's fit (2 m steps), then the tree build in rows (when a tree is built)
    fit_calls = [c for c in calls if c[1] == 2 * X.shape[1]]
    check_calls(fit_calls, 2 * X.shape[1])
    build = [c for c in calls if c[1] == len(X)]
    if idx.algorithm_ != "brute" or algorithm == "auto":
        check_calls(build, len(X))
        assert len(build) >= 3            # reported during the build, not only at its end
    Q = X.iloc[:300]
    for a, b in zip(idx.kneighbors(Q, 4), ref.kneighbors(Q, 4)):
        np.testing.assert_array_equal(a, b)


def test_fit_progress_true_draws_a_line_without_tqdm(monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_tqdm(name, *args, **kw):
        if name == "tqdm":
            raise ImportError(name)
        return real_import(name, *args, **kw)
    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    hdist.NeighborsIndex("heom", algorithm="kd_tree").fit(table(5000), progress=True)
    err = capsys.readouterr().err
    assert "fit: 6 / 6 steps" in err and "kd-tree: 5000 / 5000 rows" in err


@pytest.mark.parametrize("make", [
    lambda: hdist.neighbors.KNeighborsClassifier(3, algorithm="kd_tree"),
    lambda: hdist.neighbors.KNeighborsRegressor(3, algorithm="kd_tree"),
    lambda: hdist.neighbors.NearestNeighbors(n_neighbors=3, algorithm="kd_tree")])
def test_estimator_fit_passes_progress_through(make):
    X = table(4000)
    y = (X["c"] > 0).astype(int).to_numpy()
    calls = Calls()
    est = make().fit(X, y, progress=calls)
    check_calls([c for c in calls if c[1] == 2 * X.shape[1]], 2 * X.shape[1])
    check_calls([c for c in calls if c[1] == len(X)], len(X))
    ref = make().fit(X, y)
    np.testing.assert_array_equal(est.kneighbors(X.iloc[:50])[1], ref.kneighbors(X.iloc[:50])[1])
