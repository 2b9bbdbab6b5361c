"""hdist.dask: partitions scored on a two-process local cluster against a broadcast index
give exactly the local result."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist.datasets import load_credit_a
from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
hd = pytest.importorskip("hdist.dask")


@pytest.fixture(scope="module")
def data():
    X, y = load_credit_a()
    return X.iloc[::2], y.iloc[::2], X.iloc[1::2]


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def neighbor_frame(dist, ind, index):
    k = ind.shape[1]
    cols = {"neighbor_%d" % (j + 1): ind[:, j].astype(np.int64) for j in range(k)}
    cols.update({"distance_%d" % (j + 1): dist[:, j] for j in range(k)})
    return pd.DataFrame(cols, index=index)


def test_cluster_results_equal_local_ones(client, data):
    Xtr, ytr, Q = data
    ddf = dd.from_pandas(Q, npartitions=5)
    clf = KNeighborsClassifier(4, metric="hvdm", weights="distance").fit(Xtr, ytr)
    metric = hdist.Metric("gower").fit(Xtr)
    index = hdist.NeighborsIndex("heom", algorithm="kd_tree").fit(Xtr)
    for obj, k in ((clf, 4), (metric, 3), (index, 5)):
        got = hd.kneighbors(obj, ddf, k=k).compute()
        d, i = obj.kneighbors(Q, k)
        pd.testing.assert_frame_equal(got, neighbor_frame(d, i, Q.index))
    pred = hd.predict(clf, ddf).compute()
    np.testing.assert_array_equal(pred.to_numpy(), clf.predict(Q))
    assert pred.index.equals(Q.index)
    proba = hd.predict(clf, ddf, method="predict_proba").compute()
    np.testing.assert_array_equal(proba.to_numpy(), clf.predict_proba(Q))
    assert list(proba.columns) == ["+", "-"]


def test_broadcast_reaches_every_worker(client, data):
    Xtr, ytr, _ = data
    clf = KNeighborsClassifier(2).fit(Xtr, ytr)
    fut = hd._broadcast(clf, client)
    assert len(client.who_has([fut])[fut.key]) == 2
    assert client.submit(lambda e: e.n_samples_fit_, fut).result() == len(Xtr)


def test_regression_and_empty_partitions_without_a_client(data):
    Xtr, _, Q = data
    t = np.arange(len(Xtr), dtype=float)
    reg = KNeighborsRegressor(3, weights="dudani").fit(Xtr, t)
    ddf = dd.concat([dd.from_pandas(Q, npartitions=3), dd.from_pandas(Q.iloc[:0],
                                                                      npartitions=1)])
    assert ddf.npartitions == 4
    import dask
    with dask.config.set(scheduler="sync"):
        got = hd.predict(reg, ddf).compute()
        nb = hd.kneighbors(reg, ddf, k=2).compute()
    np.testing.assert_array_equal(got.to_numpy(), reg.predict(Q))
    d, i = reg.kneighbors(Q, 2)
    pd.testing.assert_frame_equal(nb, neighbor_frame(d, i, Q.index))


@pytest.mark.parametrize("columns", [None, 1, 2])
def test_regression_targets_keep_their_shape_in_empty_partitions(data, columns):
    """A 1-D target gives a Series, a 2-D one (one column included) a DataFrame, empty
    partitions and the graph's meta alike; the regressor's ``n_outputs_`` says which."""
    Xtr, _, Q = data
    t = np.arange(len(Xtr), dtype=float)
    if columns is not None:
        t = np.column_stack([t * (j + 1) for j in range(columns)])
    reg = KNeighborsRegressor(3).fit(Xtr, t)
    assert reg.n_outputs_ == columns
    ddf = dd.concat([dd.from_pandas(Q, npartitions=2), dd.from_pandas(Q.iloc[:0],
                                                                      npartitions=1)])
    import dask
    with dask.config.set(scheduler="sync"):
        lazy = hd.predict(reg, ddf)
        got = lazy.compute()
    assert isinstance(got, pd.Series if columns is None else pd.DataFrame)
    assert isinstance(lazy, dd.Series if columns is None else dd.DataFrame)
    assert got.shape[1:] == reg.predict(Q).shape[1:]
    np.testing.assert_array_equal(got.to_numpy(), reg.predict(Q))


def test_an_estimators_fitted_index_is_what_the_workers_search(data):
    """``index_`` of the k-NN estimators and the imputer is their fitted index (read-only,
    refused before fit), and hdist.dask.kneighbors searches it."""
    Xtr, ytr, Q = data
    ddf = dd.from_pandas(Q, npartitions=2)
    import dask
    for est in (KNeighborsClassifier(2).fit(Xtr, ytr), hdist.NearestNeighbors().fit(Xtr),
                hdist.KNNImputer().fit(Xtr)):
        assert isinstance(est.index_, hdist.NeighborsIndex)
        assert est.index_.metric_ is est.metric_ and est.index_.n_train_ == len(Xtr)
        with pytest.raises(AttributeError):
            est.index_ = None
        with dask.config.set(scheduler="sync"):
            got = hd.kneighbors(est, ddf, k=2).compute()
        d, i = est.index_.kneighbors(Q, 2)
        pd.testing.assert_frame_equal(got, neighbor_frame(d, i, Q.index))
    from sklearn.exceptions import NotFittedError
    for unfitted in (KNeighborsClassifier(), hdist.KNNImputer()):
        with pytest.raises(NotFittedError):
            unfitted.index_
        with pytest.raises(TypeError, match="fitted hdist Metric"):
            hd.kneighbors(unfitted, ddf)


def test_errors(data):
    Xtr, ytr, Q = data
    ddf = dd.from_pandas(Q, npartitions=2)
    with pytest.raises(TypeError, match="fitted hdist Metric"):
        hd.kneighbors(object(), ddf)
    with pytest.raises(RuntimeError, match="not fitted"):
        hd.kneighbors(hdist.Metric("heom"), ddf)
    clf = KNeighborsClassifier(2).fit(Xtr, ytr)
    with pytest.raises(ValueError, match="larger than"):
        hd.kneighbors(clf, ddf, k=10_000)
    with pytest.raises(TypeError, match="Dask DataFrame"):
        hd.kneighbors(clf, Q)
    with pytest.raises(ValueError, match="method must be"):
        hd.predict(clf, ddf, method="transform")
    from sklearn.exceptions import NotFittedError
    with pytest.raises(NotFittedError):
        hd.predict(KNeighborsClassifier(), ddf)


def tied_table(n, seed):
    """Few distinct values (many exact ties) and about 10 % missing cells."""
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float),
                      "b": rng.choice(["x", "y", "z"], n).astype(object),
                      "c": rng.integers(0, 2, n).astype(float)})
    t.loc[rng.random(n) < 0.1, "a"] = np.nan
    t.loc[rng.random(n) < 0.1, "b"] = None
    return t


@pytest.mark.parametrize("name", ["heom", "hvdm", "gower"])
def test_distributed_reference_equals_local_search(client, name):
    R = tied_table(1500, 1)
    y = (R["c"].fillna(0) + (R["b"] == "x")).to_numpy()
    Q = tied_table(400, 2)
    metric = hdist.Metric(name).fit(R, y)
    d0, i0 = metric.kneighbors(Q, 9)
    ref = dd.from_pandas(R, npartitions=5)
    assert ref.npartitions >= 4
    for queries in (Q, dd.from_pandas(Q, npartitions=3)):
        d, i = hd.kneighbors_distributed(metric, queries, 9, reference=ref, query_block=150)
        np.testing.assert_array_equal(i, i0)
        np.testing.assert_array_equal(d, d0)
    # the ties are real: many rows have equal k-th and (k+1)-th distances
    d10, _ = metric.kneighbors(Q, 10)
    assert (d10[:, 8] == d10[:, 9]).mean() > 0.5


def test_distributed_predict_equals_local_predict(client):
    R = tied_table(1200, 3)
    y = np.where(R["a"].fillna(1) > 0, "p", "n")
    Q = tied_table(300, 4)
    clf = KNeighborsClassifier(5, metric="hvdm", weights="distance").fit(R, y)
    ref = dd.from_pandas(R, npartitions=4)
    np.testing.assert_array_equal(hd.predict(clf, Q, reference=ref), clf.predict(Q))
    np.testing.assert_array_equal(hd.predict(clf, Q, reference=ref, method="predict_proba"),
                                  clf.predict_proba(Q))


def test_distributed_reference_keeps_unseen_values_apart():
    # a metric fitted on other rows: the reference's "z" and the query's "w" are both
    # unseen, so they differ (overlap 1), as in a local index over the reference
    fitted_on = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    R = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["z", "a", "b", "b"]})
    Q = pd.DataFrame({"x": [0.0, 3.0], "c": ["w", "z"]})
    metric = hdist.Metric("heom").fit(fitted_on)
    d0, i0 = hdist.NeighborsIndex(metric, algorithm="brute").fit(R).kneighbors(Q, 4)
    import dask
    with dask.config.set(scheduler="sync"):
        d, i = hd.kneighbors_distributed(metric, Q, 4, dd.from_pandas(R, npartitions=2))
    np.testing.assert_array_equal(i, i0)
    np.testing.assert_array_equal(d, d0)
    assert d[0, 0] == 1.0


def test_merge_topk_orders_by_distance_then_index():
    a = (np.array([[0.5, 1.0]]), np.array([[7, 9]]))
    b = (np.array([[0.5, 0.7]]), np.array([[3, 4]]))
    d, i = hd.merge_topk([a, b], 3)
    np.testing.assert_array_equal(i, [[3, 7, 4]])
    np.testing.assert_array_equal(d, [[0.5, 0.5, 0.7]])


def test_distributed_reference_errors():
    R = tied_table(100, 5)
    metric = hdist.Metric("heom").fit(R)
    with pytest.raises(ValueError, match="fitted on 100 rows but reference holds 60"):
        hd.kneighbors_distributed(metric, R, 3,
                                  reference=dd.from_pandas(R.iloc[:60], npartitions=2))
    with pytest.raises(ValueError, match="reference columns"):
        hd.kneighbors_distributed(metric, R, 3,
                                  reference=dd.from_pandas(R[["b", "a", "c"]], npartitions=2))
    with pytest.raises(TypeError, match="Dask DataFrame"):
        hd.kneighbors_distributed(metric, R, 3, reference=R)
    with pytest.raises(TypeError, match="fitted hdist Metric"):
        hd.kneighbors_distributed("heom", R, 3, reference=dd.from_pandas(R, npartitions=2))


def mixed_table(n, seed):
    """Continuous (one with repeated values), text, categorical and integer columns, with
    missing values, and a class column ``y``."""
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"u": rng.normal(size=n),
                      "r": rng.integers(0, 9, n).astype(float) * 0.5,
                      "s": rng.choice(["a", "b", "c", "d"], n).astype(object),
                      "k": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                                          categories=["lo", "mid", "hi", "never"]),
                      "i": rng.integers(0, 40, n)})
    t.loc[rng.random(n) < 0.08, "u"] = np.nan
    t.loc[rng.random(n) < 0.08, "r"] = np.nan
    t.loc[rng.random(n) < 0.08, "s"] = None
    t.loc[rng.random(n) < 0.08, "k"] = np.nan
    t["y"] = np.where(t["u"].fillna(0) + (t["s"] == "a") > 0.3, "yes", "no")
    return t


@pytest.mark.parametrize("name,params", [
    ("heom", {}), ("hvdm", {}), ("gower", {}), ("ivdm", {}), ("dvdm", {"n_bins": 4}),
    ("lvdm", {}), ("heom", {"normalization": "trimmed_range"}), ("gower", {"weights": "mi"}),
    ("euclidean", {"normalization": "mean_diff"})])
def test_fit_metric_equals_a_local_fit(client, name, params):
    """The statistics fitted from per-partition counts equal a local fit on all rows:
    distances to 1e-12 and the same neighbors, searched over the distributed reference."""
    T = mixed_table(1600, 11)
    feats = [c for c in T.columns if c != "y"]
    ddf = dd.from_pandas(T, npartitions=5)
    local = hdist.Metric(name, **params).fit(T[feats], T["y"])
    dist = hd.fit_metric(hdist.Metric(name, **params), ddf, target="y")
    assert dist.n_train_ == len(T)
    Q = mixed_table(150, 12)[feats]
    np.testing.assert_allclose(dist.pairwise(Q, T[feats].iloc[:300]),
                               local.pairwise(Q, T[feats].iloc[:300]), rtol=1e-12, atol=1e-14)
    d0, i0 = local.kneighbors(Q, 5)
    d, i = hd.kneighbors_distributed(dist, Q, 5, reference=ddf[feats], query_block=64)
    np.testing.assert_array_equal(i, i0)
    np.testing.assert_allclose(d, d0, rtol=1e-12)


def test_kneighbors_fits_an_unfitted_metric_from_the_reference(client):
    T = mixed_table(900, 13)[["u", "r", "s", "k", "i"]]
    ddf = dd.from_pandas(T, npartitions=4)
    Q = mixed_table(100, 14)[list(T.columns)]
    d0, i0 = hdist.Metric("gower").fit(T).kneighbors(Q, 4)
    d, i = hd.kneighbors_distributed(hdist.Metric("gower"), Q, 4, reference=ddf)
    np.testing.assert_array_equal(i, i0)
    np.testing.assert_allclose(d, d0, rtol=1e-12)


def test_fit_metric_errors():
    T = mixed_table(200, 15)
    ddf = dd.from_pandas(T, npartitions=2)
    with pytest.raises(ValueError, match="target 'label' is not a column"):
        hd.fit_metric("hvdm", ddf, target="label")
    with pytest.raises(ValueError, match="needs class labels"):
        hd.fit_metric("hvdm", ddf[["u", "s"]])
    with pytest.raises(ValueError, match="pairs of columns jointly"):
        hd.fit_metric("hds", ddf, target="y")
    with pytest.raises(TypeError, match="Dask DataFrame"):
        hd.fit_metric("heom", T)
    with pytest.raises(ValueError, match="needs class labels.*fit_metric"):
        hd.kneighbors_distributed(hdist.Metric("hvdm"), T[["u", "s"]], 3,
                                  reference=dd.from_pandas(T[["u", "s"]], npartitions=2))


def test_kneighbors_has_one_return_type():
    """``kneighbors`` returns a lazy Dask DataFrame whatever it is given;
    ``kneighbors_distributed`` (a reference set in partitions) returns arrays."""
    import inspect
    R = tied_table(40, 3)
    metric = hdist.Metric("heom").fit(R)
    assert "reference" not in inspect.signature(hd.kneighbors).parameters
    with pytest.raises(TypeError, match="reference"):
        hd.kneighbors(metric, dd.from_pandas(R, npartitions=2), 3,
                      reference=dd.from_pandas(R, npartitions=2))
    lazy = hd.kneighbors(metric, dd.from_pandas(R, npartitions=2), 3)
    assert isinstance(lazy, dd.DataFrame)
    d, i = hd.kneighbors_distributed(metric, R, 3, dd.from_pandas(R, npartitions=2))
    assert isinstance(d, np.ndarray) and isinstance(i, np.ndarray)
    got = lazy.compute()
    np.testing.assert_array_equal(got[["neighbor_1", "neighbor_2", "neighbor_3"]], i)
    np.testing.assert_array_equal(got[["distance_1", "distance_2", "distance_3"]], d)
