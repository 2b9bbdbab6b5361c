"""Score the partitions of a Dask DataFrame against a fitted index or estimator.

The fitted object -- an :class:`hdist.Metric`, an :class:`hdist.NeighborsIndex` or an
hdist estimator (:mod:`hdist.neighbors`) -- pickles small and holds no reference to the
query data, so it is sent to the workers once: scattered with ``broadcast=True`` when a
``distributed`` client is active (``client=`` or the current default client), else
embedded in the graph as a single ``dask.delayed`` object that every partition task
depends on.  Each partition is then scored on its worker exactly as it would be locally,
so the result equals a local call on the concatenated partitions, row for row.

The same call runs on a laptop's ``LocalCluster`` and on a real cluster: connect a client
to the scheduler (``Client("tcp://scheduler:8786")``) before calling, with hdist installed
on every worker.

>>> import dask.dataframe as dd
>>> from distributed import Client
>>> client = Client("tcp://scheduler-address:8786")              # doctest: +SKIP
>>> clf = hdist.KNeighborsClassifier(metric="hvdm").fit(X, y)     # doctest: +SKIP
>>> labels = hdist.dask.predict(clf, dd.read_parquet("s3://bucket/queries/"))  # +SKIP
>>> labels.to_parquet("s3://bucket/labels/")                      # doctest: +SKIP
"""
from __future__ import annotations

import copy

import numpy as np

__all__ = ["kneighbors", "predict"]


def _client(client):
    """The distributed client the graph will run on: ``client``, else the default client
    unless another scheduler was chosen (``dask.config.set(scheduler="sync")``...)."""
    if client is not None:
        return client
    import dask
    scheduler = dask.config.get("scheduler", None)
    if scheduler is not None and scheduler not in ("dask.distributed", "distributed"):
        return None
    try:
        from distributed import get_client
        return get_client()
    except (ImportError, ValueError):
        return None


def _broadcast(obj, client):
    """A handle on ``obj`` for partition tasks: a future replicated to every worker, or
    one delayed object."""
    client = _client(client)
    if client is not None:
        return client.scatter(obj, broadcast=True, hash=False)
    import dask
    return dask.delayed(obj, pure=True)


def _searcher(obj):
    """The neighbor-search object inside ``obj`` (its fitted index for an estimator),
    checked to be fitted."""
    from .metrics import Metric
    if isinstance(obj, Metric):
        obj._check_fitted()
        return obj
    if hasattr(obj, "_index") and hasattr(obj, "get_params"):      # an hdist estimator
        from sklearn.utils.validation import check_is_fitted
        check_is_fitted(obj)
        return obj._index
    if hasattr(obj, "kneighbors") and hasattr(obj, "metric_"):       # a NeighborsIndex
        return obj
    raise TypeError("index must be a fitted hdist Metric, NeighborsIndex or hdist "
                    "neighbors estimator, got %s" % type(obj).__name__)


def _neighbor_columns(k):
    return ["neighbor_%d" % (j + 1) for j in range(k)] + \
        ["distance_%d" % (j + 1) for j in range(k)]


def _score_neighbors(part, searcher, k, n_jobs):
    import pandas as pd
    cols = _neighbor_columns(k)
    if len(part) == 0:
        return pd.DataFrame({c: np.zeros(0, dtype=np.int64 if c.startswith("n") else
                                         np.float64) for c in cols}, index=part.index)
    dist, ind = searcher.kneighbors(part, k, n_jobs=n_jobs)
    data = {c: ind[:, j].astype(np.int64) for j, c in enumerate(cols[:k])}
    data.update({c: dist[:, j] for j, c in enumerate(cols[k:])})
    return pd.DataFrame(data, index=part.index)


def kneighbors(index, ddf, k=5, *, n_jobs=1, client=None):
    """The ``k`` nearest training rows of every row of a Dask DataFrame.

    Parameters
    ----------
    index : fitted hdist.Metric, hdist.NeighborsIndex or hdist neighbors estimator
        Sent to the workers once.
    ddf : dask.dataframe.DataFrame
        Query rows with the training columns.
    k : int, default=5
    n_jobs : int, default=1
        Threads per partition task (Dask already runs partitions in parallel).
    client : distributed.Client, optional
        Defaults to the current client, if any; without one, the local Dask scheduler
        runs the graph.

    Returns
    -------
    dask.dataframe.DataFrame
        Lazy; columns ``neighbor_1..k`` (int64 training row positions) and
        ``distance_1..k`` (float64 true distances), with ``ddf``'s index and partitions.
        Neighbors are ordered by (distance, training position), as locally.

    Raises
    ------
    TypeError
        ``index`` is not a fitted hdist object, or ``ddf`` is not a Dask DataFrame.
    ValueError
        ``k`` is not a positive int no larger than the training rows.
    """
    import pandas as pd
    searcher = _searcher(index)
    _check_ddf(ddf)
    from .metrics import _check_k
    n_train = searcher.n_train_
    k = _check_k(k, n_train)
    meta = pd.DataFrame({c: np.zeros(0, dtype=np.int64 if c.startswith("n") else np.float64)
                         for c in _neighbor_columns(k)})
    return ddf.map_partitions(_score_neighbors, _broadcast(searcher, client), k, n_jobs,
                              meta=meta)


def _check_ddf(ddf):
    if not (hasattr(ddf, "map_partitions") and hasattr(ddf, "npartitions")
            and hasattr(ddf, "columns")):
        raise TypeError("ddf must be a Dask DataFrame, got %s" % type(ddf).__name__)


def _apply(part, estimator, method):
    import pandas as pd
    out = getattr(estimator, method)(part) if len(part) else None
    if method == "predict_proba":
        cols = [str(c) for c in estimator.classes_]
        if out is None:
            out = np.zeros((0, len(cols)))
        return pd.DataFrame(out, index=part.index, columns=cols)
    if out is None:
        out = np.zeros((0,) + getattr(estimator, "_y", np.zeros(0)).shape[1:],
                       dtype=_predict_dtype(estimator))
    if out.ndim == 2:
        return pd.DataFrame(out, index=part.index)
    return pd.Series(out, index=part.index, name="prediction")


def _predict_dtype(estimator):
    classes = getattr(estimator, "classes_", None)
    return np.float64 if classes is None else classes.dtype


def predict(estimator, ddf, *, method="predict", n_jobs=1, client=None):
    """Predictions of a fitted hdist estimator for every row of a Dask DataFrame.

    Parameters
    ----------
    estimator : fitted KNeighborsClassifier or KNeighborsRegressor (hdist.neighbors)
        Copied with ``n_jobs`` set and sent to the workers once.
    ddf : dask.dataframe.DataFrame
    method : {"predict", "predict_proba"}, default="predict"
    n_jobs : int, default=1
        Threads per partition task.
    client : distributed.Client, optional

    Returns
    -------
    dask.dataframe.Series or DataFrame
        Lazy, with ``ddf``'s index: a Series ``prediction`` (a DataFrame for 2-D regression
        targets), or for ``predict_proba`` one float column per class (labels as text).

    Raises
    ------
    TypeError, ValueError
        Not a fitted hdist estimator; an unknown method.
    """
    import pandas as pd
    from sklearn.utils.validation import check_is_fitted
    if method not in ("predict", "predict_proba"):
        raise ValueError("method must be 'predict' or 'predict_proba', got %r" % (method,))
    from .neighbors import _SupervisedBase
    if not isinstance(estimator, _SupervisedBase) or not hasattr(estimator, method):
        raise TypeError("estimator must be an hdist KNeighborsClassifier or "
                        "KNeighborsRegressor with %s, got %s"
                        % (method, type(estimator).__name__))
    check_is_fitted(estimator)
    _check_ddf(ddf)
    est = copy.copy(estimator)
    est.n_jobs = n_jobs
    meta = _apply(ddf._meta, est, method)
    return ddf.map_partitions(_apply, _broadcast(est, client), method, meta=meta)
