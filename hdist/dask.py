"""Score the partitions of a Dask DataFrame against a fitted index or estimator.

The fitted object -- an :class:`hdist.Metric`, an :class:`hdist.NeighborsIndex` or an
hdist estimator (:mod:`hdist.neighbors`) -- pickles small and holds no reference to the
query data, so it is sent to the workers once: scattered with ``broadcast=True`` when a
``distributed`` client is active (``client=`` or the current default client), else
embedded in the graph as a single ``dask.delayed`` object that every partition task
depends on.  Each partition is then scored on its worker exactly as it would be locally,
so the result equals a local call on the concatenated partitions, row for row.

An ``algorithm="ivf"`` index (approximate, docs/ivf.md) is scored the same way: the
whole index, its lists included, goes to every worker.  Distributing the reference rows
by list, so that a query visits only the partitions holding its probed lists, is not
done yet (it needs a routing step per query batch); the distributed reference searches
below are exact.

The same call runs on a laptop's ``LocalCluster`` and on a real cluster: connect a client
to the scheduler (``Client("tcp://scheduler:8786")``) before calling, with hdist installed
on every worker.

>>> import dask.dataframe as dd
>>> from distributed import Client
>>> client = Client("tcp://scheduler-address:8786")              # doctest: +SKIP
>>> clf = hdist.KNeighborsClassifier(metric="hvdm").fit(X, y)     # doctest: +SKIP
>>> labels = hdist.dask.predict(clf, dd.read_parquet("s3://bucket/queries/"))  # doctest: +SKIP
>>> labels.to_parquet("s3://bucket/labels/")                      # doctest: +SKIP
"""
from __future__ import annotations

import copy

import numpy as np

__all__ = ["fit_metric", "kneighbors", "kneighbors_distributed", "merge_topk", "predict"]

#: query rows per task when the reference set is distributed and the queries are local
QUERY_BLOCK = 4096


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
    from ._search.metric import Metric
    if isinstance(obj, Metric):
        obj.check_fitted()
        return obj
    if hasattr(obj, "index_") and hasattr(obj, "get_params"):      # a fitted hdist estimator
        return obj.index_
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
    """The ``k`` nearest training rows of every row of a Dask DataFrame, as a lazy Dask
    DataFrame.

    The fitted object (and the training rows it holds) is sent to every worker once and
    each query partition is scored there, exactly as a local ``kneighbors`` call would
    score it.  To search a reference set that is itself a Dask DataFrame (the training
    rows stay on the workers), use :func:`kneighbors_distributed`, which returns arrays.

    Parameters
    ----------
    index : fitted hdist.Metric, hdist.NeighborsIndex or hdist neighbors estimator
        Sent to the workers once.
    ddf : dask.dataframe.DataFrame
        Query rows with the training columns.
    k : int, default=5
        Number of neighbors.
    n_jobs : int, default=1
        Threads per partition task (Dask already runs partitions in parallel).
    client : distributed.Client, optional
        Defaults to the current client, if any; without one, the local Dask scheduler
        runs the graph.

    Returns
    -------
    dask.dataframe.DataFrame
        Always lazy (``.compute()`` it); columns ``neighbor_1..k`` (int64 training row
        positions) and ``distance_1..k`` (float64 true distances), with ``ddf``'s index
        and partitions.  Neighbors are ordered by (distance, training position), as
        locally.

    Raises
    ------
    TypeError
        ``index`` is not a fitted hdist object, or ``ddf`` is not a Dask DataFrame.
    ValueError
        ``k`` is not a positive int no larger than the training rows.

    See Also
    --------
    kneighbors_distributed : the same search against a reference set held as a Dask
        DataFrame; returns ``(distances, indices)`` arrays.
    hdist.Metric.kneighbors : the local call.

    Examples
    --------
    >>> import numpy as np, pandas as pd, dask.dataframe as dd
    >>> import hdist, hdist.dask
    >>> X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    >>> m = hdist.Metric("heom").fit(X)
    >>> out = hdist.dask.kneighbors(m, dd.from_pandas(X, npartitions=2), k=2)
    >>> out.compute()[["neighbor_1", "neighbor_2"]].to_numpy().tolist()
    [[0, 1], [1, 0], [2, 3], [3, 2]]
    """
    import pandas as pd
    searcher = _searcher(index)
    _check_ddf(ddf)
    from ._search.checks import check_k
    n_train = searcher.n_train_
    k = check_k(k, n_train)
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
        n_outputs = getattr(estimator, "n_outputs_", None)      # a regressor's 2-D target
        out = np.zeros((0,) if n_outputs is None else (0, n_outputs),
                       dtype=_predict_dtype(estimator))
    if out.ndim == 2:
        return pd.DataFrame(out, index=part.index)
    return pd.Series(out, index=part.index, name="prediction")


def _predict_dtype(estimator):
    classes = getattr(estimator, "classes_", None)
    return np.float64 if classes is None else classes.dtype


def predict(estimator, ddf, *, method="predict", reference=None, n_jobs=1, client=None,
            query_block=QUERY_BLOCK):
    """Predictions of a fitted hdist estimator for every row of a Dask DataFrame.

    With ``reference`` (a Dask DataFrame holding the estimator's training rows, in the
    order it was fitted on), the neighbors are found by :func:`kneighbors_distributed`
    -- the training rows stay on the workers, only the fitted statistics and the
    training targets stay on the client -- and the votes or means are computed there
    exactly as ``estimator.predict`` computes them; the result is then an ndarray (the
    queries may be a Dask or pandas DataFrame or an array).

    Parameters
    ----------
    estimator : fitted KNeighborsClassifier or KNeighborsRegressor (hdist.neighbors)
        Copied with ``n_jobs`` set and sent to the workers once.
    ddf : dask.dataframe.DataFrame
    method : {"predict", "predict_proba"}, default="predict"
    reference : dask.dataframe.DataFrame, optional
        The estimator's training rows held by the cluster (see above); the result is then
        a computed ndarray.
    n_jobs : int, default=1
        Threads per partition task.
    client : distributed.Client, optional
    query_block : int, default=4096
        Query rows per task with ``reference`` when the queries are not a Dask DataFrame.

    Returns
    -------
    dask.dataframe.Series or DataFrame
        Lazy, with ``ddf``'s index: a Series ``prediction`` (a DataFrame for 2-D regression
        targets), or for ``predict_proba`` one float column per class (labels as text).

    Raises
    ------
    TypeError, ValueError
        Not a fitted hdist estimator; an unknown method.

    See Also
    --------
    kneighbors : the neighbors themselves.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> import hdist, hdist.dask
    >>> X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    >>> clf = hdist.KNeighborsClassifier(1).fit(X, ["p", "p", "q", "q"])
    >>> hdist.dask.predict(clf, dd.from_pandas(X, npartitions=2)).compute().tolist()
    ['p', 'p', 'q', 'q']
    """
    from sklearn.utils.validation import check_is_fitted
    if method not in ("predict", "predict_proba"):
        raise ValueError("method must be 'predict' or 'predict_proba', got %r" % (method,))
    from ._estimators.neighbors import KNeighborsClassifier, KNeighborsRegressor
    if not isinstance(estimator, (KNeighborsClassifier, KNeighborsRegressor)) \
            or not hasattr(estimator, method):
        raise TypeError("estimator must be an hdist KNeighborsClassifier or "
                        "KNeighborsRegressor with %s, got %s"
                        % (method, type(estimator).__name__))
    check_is_fitted(estimator)
    if reference is not None:
        def search(X, width):
            return kneighbors_distributed(estimator.metric_, X, width, reference,
                                          n_jobs=n_jobs, client=client,
                                          query_block=query_block)
        return getattr(estimator.with_search(search), method)(ddf)
    _check_ddf(ddf)
    est = copy.copy(estimator)
    est.n_jobs = n_jobs
    meta = _apply(ddf._meta, est, method)
    return ddf.map_partitions(_apply, _broadcast(est, client), method, meta=meta)


# ----------------------------------------------------------------------------------------
# the reference set spread over the cluster


def _encode_part(metric, part):
    """One reference partition indexed on its worker for brute-force search (None when
    it has no rows): encoded once, with the kernels' view of its rows and the
    matrix-product filter's cache, reused by every query block that meets it.  Values
    the metric did not see in fit get codes of their own, which the query blocks' unseen
    values never share."""
    if len(part) == 0:
        return None
    from ._search.index import NeighborsIndex
    return NeighborsIndex(metric, algorithm="brute").fit(part)


def _local_topk(queries, part, k, offset, n_jobs):
    """Top-``k`` (or all, for a smaller partition) of one indexed reference partition
    for one block of queries, with global row indices (``offset`` + position)."""
    if part is None or len(queries) == 0:
        return np.zeros((len(queries), 0)), np.zeros((len(queries), 0), dtype=np.intp)
    d, i = part.kneighbors(queries, min(k, part.n_train_), n_jobs=n_jobs)
    return d, i + offset


def merge_topk(parts, k):
    """Merge per-partition top-k lists ``[(dist, ind), ...]`` (same query rows, global
    indices) into the top ``k`` by (distance, index) -- the order of a local search.

    Parameters
    ----------
    parts : list of (ndarray, ndarray)
        ``(distances, indices)`` ``[n_queries, k_part]`` of each partition, indices
        global.
    k : int
        Neighbors kept.

    Returns
    -------
    (ndarray, ndarray)
        The ``k`` smallest ``(distances, indices)`` per query, by (distance, index).

    See Also
    --------
    kneighbors_distributed : uses it in a tree reduction.

    Examples
    --------
    >>> import numpy as np
    >>> from hdist.dask import merge_topk
    >>> a = (np.array([[0.1, 0.5]]), np.array([[3, 7]]))
    >>> b = (np.array([[0.2, 0.5]]), np.array([[1, 2]]))
    >>> [v.tolist() for v in merge_topk([a, b], 3)]
    [[[0.1, 0.2, 0.5]], [[3, 1, 2]]]
    """
    d = np.concatenate([p[0] for p in parts], axis=1)
    i = np.concatenate([p[1] for p in parts], axis=1)
    rows = np.arange(d.shape[0])[:, None]
    order = np.lexsort((i, d), axis=1)[:, :k]
    return d[rows, order], i[rows, order]


def _merge_tree(pieces, k, split_every):
    import dask
    while len(pieces) > 1:
        pieces = [dask.delayed(merge_topk)(pieces[j:j + split_every], k)
                  for j in range(0, len(pieces), split_every)]
    return pieces[0]


def _query_blocks(queries, block, client):
    """Query blocks for the tasks: the partitions of a Dask DataFrame, else row slices
    (scattered to the cluster once when there is a client)."""
    import dask
    if hasattr(queries, "to_delayed") and hasattr(queries, "npartitions"):
        return queries.to_delayed()
    n = queries.shape[0] if hasattr(queries, "shape") else len(queries)
    take = (lambda a, b: queries.iloc[a:b]) if hasattr(queries, "iloc") else \
        (lambda a, b: queries[a:b])
    blocks = [take(a, min(n, a + block)) for a in range(0, n, block)]
    if client is not None and blocks:
        return client.scatter(blocks, hash=False)
    return [dask.delayed(b, pure=True) for b in blocks]


def kneighbors_distributed(metric, queries, k, reference, *, n_jobs=1, client=None,
                           query_block=QUERY_BLOCK, split_every=4):
    """Exact k-NN of ``queries`` against a reference set held as a Dask DataFrame.

    ``metric`` is an :class:`hdist.Metric` fitted on the reference rows (its statistics:
    ranges, standard deviations, value-class counts; fit it on the same rows, in the same
    order, for results equal to ``metric.kneighbors(queries, k)``), or fitted from them
    by :func:`fit_metric` -- which an unfitted metric that needs no class labels gets
    here, one pass over the reference partitions before the search.  Only those
    statistics are sent to the workers; the reference partitions stay where they are.
    Each reference partition is encoded once on its worker; each (query block x
    reference partition) task computes a local top-``k`` with global row indices (the partition's offset + position); a tree
    reduction (``split_every`` lists per merge) keeps the ``k`` smallest by
    (distance, global index), the order of a local search, so ties go to the smaller
    global index as they do locally.  No task holds more than one block of queries, one
    reference partition and ``k`` candidates per query and partition.

    Parameters
    ----------
    metric : fitted hdist.Metric (or an hdist index / estimator: its fitted metric)
    queries : pandas DataFrame, numpy array or Dask DataFrame
        Query rows with the reference columns; a Dask DataFrame's partitions are the
        query blocks, other containers are cut into ``query_block`` rows.
    k : int
    reference : dask.dataframe.DataFrame
        The reference rows, without the class column.
    n_jobs : int, default=1
        Threads per task.
    client : distributed.Client, optional
        Defaults to the current client; without one the local Dask scheduler runs.
    query_block : int, default=4096
        Query rows per task when ``queries`` is not a Dask DataFrame.
    split_every : int, default=4
        Top-k lists merged per task of the tree reduction.

    Returns
    -------
    (distances, indices) : ndarrays ``[n_queries, k]`` (float64, intp)
        Global reference row positions, as a local call returns them.

    Raises
    ------
    TypeError
        ``reference`` is not a Dask DataFrame, or ``metric`` not an hdist metric.
    ValueError
        ``k`` is not a positive int no larger than the reference rows; the metric was
        fitted on a different number of rows than ``reference`` holds.

    See Also
    --------
    kneighbors : the training rows held by a fitted object; returns a lazy DataFrame.
    fit_metric : a metric's statistics from a Dask reference frame.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> import hdist, hdist.dask
    >>> X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    >>> m = hdist.Metric("heom").fit(X)
    >>> ref = dd.from_pandas(X, npartitions=2)
    >>> dist, ind = hdist.dask.kneighbors_distributed(m, X, 2, ref)
    >>> ind.tolist()
    [[0, 1], [1, 0], [2, 3], [3, 2]]
    """
    import dask
    _check_ddf(reference)
    from ._search.checks import check_k
    from ._search.metric import Metric
    if not isinstance(metric, Metric):
        metric = getattr(_searcher(metric), "metric_", None)
        if not isinstance(metric, Metric):
            raise TypeError("metric must be a fitted hdist Metric, index or estimator")
    if not hasattr(metric, "plan_"):
        # an unfitted metric: its statistics from one pass over the reference partitions
        if metric.info.needs_y or metric.params.get("weights") == "mi":
            raise ValueError("metric %r needs class labels to fit: call "
                             "hdist.dask.fit_metric(metric, reference, target=...) on a "
                             "reference frame holding the class column, or fit it on the "
                             "client" % metric.name)
        metric = fit_metric(metric, reference, client=client)
    if list(map(str, reference.columns)) != list(metric.schema_.names_):
        raise ValueError("reference columns %s differ from the metric's fitted columns %s"
                         % (list(reference.columns), list(metric.schema_.names_)))
    client = _client(client)
    compute = client.compute if client is not None else None
    sizes = reference.map_partitions(len)
    sizes = (client.compute(sizes).result() if client is not None else sizes.compute())
    sizes = np.asarray(sizes, dtype=np.int64)
    n_ref = int(sizes.sum())
    if n_ref != metric.n_train_:
        raise ValueError("the metric was fitted on %d rows but reference holds %d; fit it "
                         "on the reference rows" % (metric.n_train_, n_ref))
    k = check_k(k, n_ref)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    # the statistics and Plan only: the reference rows stay on the workers
    handle = _broadcast(metric.without_training_rows(), client)
    encoded = [dask.delayed(_encode_part)(handle, part) for part in reference.to_delayed()]
    blocks = _query_blocks(queries, query_block, client)
    results = []
    for qb in blocks:
        pieces = [dask.delayed(_local_topk)(qb, enc, k, int(off), n_jobs)
                  for enc, off in zip(encoded, offsets)]
        results.append(_merge_tree(pieces, k, split_every))
    if compute is not None:
        out = client.gather(client.compute(results))
    else:
        out = dask.compute(*results)
    if not out:
        return np.zeros((0, k)), np.zeros((0, k), dtype=np.intp)
    return (np.concatenate([o[0] for o in out]),
            np.concatenate([o[1] for o in out]).astype(np.intp))


# ----------------------------------------------------------------------------------------
# the metric's statistics from a pass over the reference partitions

#: nominal kinds whose statistics need the joint values of pairs of columns, which the
#: per-column summaries below do not hold
_JOINT = ("hds", "add")


def _column_counts(part, y):
    """Per column of one partition: its distinct (value, class) pairs with their row
    counts, missing values included (as their own group)."""
    import pandas as pd
    out = {}
    for c in part.columns:
        frame = pd.DataFrame({"v": part[c].to_numpy(), "y": 0 if y is None else
                              np.asarray(y)})
        if isinstance(part[c].dtype, pd.CategoricalDtype):
            frame["v"] = part[c].astype(object).where(part[c].notna(), None).to_numpy()
        g = frame.groupby(["v", "y"], dropna=False, sort=False).size()
        out[c] = g
    return out


def _merge_counts(pieces):
    """Sum per-column counts of several partitions (exact: integer counts)."""
    import pandas as pd
    out = {}
    for c in pieces[0]:
        out[c] = pd.concat([p[c] for p in pieces]).groupby(level=[0, 1], dropna=False,
                                                            sort=False).sum()
    return out


def _like(values, dtype):
    """``values`` (object, ``None`` for missing) as a column of the reference's dtype."""
    import pandas as pd
    v = pd.Series(values, dtype=object)
    if isinstance(dtype, pd.CategoricalDtype):
        return pd.Categorical(v, categories=dtype.categories, ordered=dtype.ordered)
    if getattr(dtype, "kind", "O") in "iuf":
        return pd.to_numeric(v, errors="coerce").astype(np.float64)
    if getattr(dtype, "kind", "O") == "b":
        return v
    try:
        return v.astype(dtype)
    except (TypeError, ValueError):
        return v


def _summary_table(meta, counts):
    """One table holding every column's distinct (value, class) pairs, each in rows of
    its own (the other columns missing), with the class and a weight matrix ``[rows,
    columns]`` whose entry is the pair's count in the pair's column and 0 elsewhere."""
    import pandas as pd
    cols = list(meta.columns)
    blocks, ys, ws = [], [], []
    for j, c in enumerate(cols):
        g = counts[c]
        vals = [None if (v is None or (isinstance(v, float) and v != v) or v is pd.NA)
                else v for v in g.index.get_level_values(0)]
        nothing = [None] * len(vals)
        blocks.append(pd.DataFrame({cc: _like(vals if cc == c else nothing, meta[cc].dtype)
                                    for cc in cols}))
        ys.append(np.asarray(g.index.get_level_values(1)))
        w = np.zeros((len(vals), len(cols)))
        w[:, j] = np.asarray(g.to_numpy(), dtype=np.float64)
        ws.append(w)
    table = pd.concat(blocks, ignore_index=True)
    return table, np.concatenate(ys), np.concatenate(ws, axis=0)


def fit_metric(metric, reference, target=None, *, client=None, split_every=8):
    """Fit ``metric``'s statistics in one pass over a reference set held as a Dask
    DataFrame, without gathering its rows.

    Each partition is reduced on its worker to the distinct values of every column
    (with the class, when ``target`` names the class column) and their row counts; the
    counts are summed in a tree reduction (exact: integers), and the metric is fitted on
    the client from those counts as frequency weights (:meth:`hdist.Metric.fit`'s
    ``sample_weight``), column by column.  The statistics -- ranges, standard deviations,
    quantiles, mean differences, value-class counts and posteriors, mutual information --
    are then those of a local ``metric.fit(reference.compute(), y)`` (up to the rounding
    of sums taken in another order).  Memory on the client grows with the number of
    distinct values per column, not with the rows: a continuous column of 10^8 distinct
    values still sends them all, so round such columns or fit on a sample where that
    matters.

    Parameters
    ----------
    metric : hdist.Metric (or a preset name)
        Its parameters are kept; a fitted metric is re-fitted.
    reference : dask.dataframe.DataFrame
        The reference rows (and the class column, if ``target`` is given).
    target : str, optional
        The class column of ``reference`` (needed by VDM-based and class-posterior
        metrics and by ``weights="mi"``); it is not a feature.
    client : distributed.Client, optional
        Defaults to the current client; without one the local Dask scheduler runs.
    split_every : int, default=8
        Per-partition counts merged per task of the tree reduction.

    Returns
    -------
    hdist.Metric
        Fitted: it encodes rows and computes distances (``pairwise``, ``encode``) and is
        what :func:`kneighbors_distributed` takes with ``reference`` (without the
        ``target`` column); it holds no training rows, so its own ``kneighbors`` has
        nothing to search.

    Raises
    ------
    TypeError
        ``reference`` is not a Dask DataFrame.
    ValueError
        ``target`` is not a column; the metric compares pairs of columns jointly
        (co-occurrence presets), which per-column counts cannot fit.

    See Also
    --------
    kneighbors_distributed : searches with the metric returned.
    hdist.Metric.fit : the same statistics on the client.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> import hdist, hdist.dask
    >>> X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "c": ["a", "a", "b", "b"]})
    >>> m = hdist.dask.fit_metric("heom", dd.from_pandas(X, npartitions=2))
    >>> m.pairwise(X.iloc[:1], X).round(3).tolist()
    [[0.0, 0.333, 1.202, 1.414]]
    """
    import dask
    from ._search.metric import Metric
    from ._search.resolve import resolve_metric
    _check_ddf(reference)
    if not isinstance(metric, (str, Metric)):
        raise TypeError("metric must be an hdist Metric or a preset name, got %s"
                        % type(metric).__name__)
    fitted = resolve_metric(metric, refit=True)     # unfitted, a new object
    fitted.check_params()
    if fitted.info.nominal in _JOINT:
        raise ValueError("metric %r compares pairs of columns jointly (co-occurrence "
                         "statistics); fit it on the client instead" % fitted.name)
    cols = [c for c in reference.columns if c != target]
    if target is not None and target not in reference.columns:
        raise ValueError("target %r is not a column of reference (columns: %s)"
                         % (target, list(reference.columns)))
    client = _client(client)

    def summarize(part):
        return _column_counts(part[cols], None if target is None else part[target])
    pieces = [dask.delayed(summarize)(p) for p in reference.to_delayed()]
    while len(pieces) > 1:
        pieces = [dask.delayed(_merge_counts)(pieces[j:j + split_every])
                  for j in range(0, len(pieces), split_every)]
    counts = (client.compute(pieces[0]).result() if client is not None
              else pieces[0].compute())
    table, y, W = _summary_table(reference._meta[cols], counts)
    fitted.fit_summary(table, None if target is None else y, W)
    slim = fitted.without_training_rows()
    slim.n_train_ = int(W.sum(axis=0).max()) if W.size else 0
    return slim
