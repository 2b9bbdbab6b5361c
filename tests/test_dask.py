"""hdist.dask: partitions scored on a two-process local cluster against a broadcast index
give exactly the local result."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist.datasets import load_credit_a
from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor

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
