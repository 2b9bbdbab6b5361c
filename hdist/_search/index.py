"""Nearest-neighbor index over a fitted metric: brute force, KD-tree or ball tree (exact),
or inverted lists (``algorithm="ivf"``, approximate: :mod:`hdist._search.ivf`).

:class:`NeighborsIndex` holds encoded rows (the metric's Plan encodes them once), the
unseen-value codes of its queries, the ``"auto"`` rule and one searcher
(:mod:`hdist._search.searchers`: brute force, the KD-tree and ball tree of
:mod:`hdist._kernels.trees`, the inverted lists), through
:class:`hdist._search.rowindex.RowIndex`.  Every exact algorithm returns the same
``(distances, indices)`` (docs/metrics.md, section 8): candidates are ordered by
(reduced distance, row index), and a pair's distance is computed by the same compiled
function whatever the algorithm, thread count or leaf size.

Trees follow Witten & Frank ("Data Mining", section "Finding nearest neighbors efficiently"): the
KD-tree splits on the attribute of greatest spread and prunes with per-attribute lower
bounds (valid for every Plan: any ``p``, weights, missing policy, table or embedded
attribute); the ball tree uses data rows as pivots, splits by the two far points and
prunes with the triangle inequality, so it is offered only where the metric satisfies
it (docs/metrics.md, section 8; :func:`ball_tree_refusal`).  Rows can be inserted after the build; a tree
whose depth grows past twice the balanced depth is rebuilt (Witten & Frank).

``device="cuda"`` searches by brute force on a CUDA GPU (the ``"cuda"`` searcher of
:mod:`hdist._search.cuda`, chosen once at construction by
:func:`hdist._search.rowindex.device_algorithm`), with the CPU's results bit for bit
(docs/guide/gpu.md).
"""
from __future__ import annotations

import contextlib
import math
import numbers
import sys

import numpy as np

from .._core import progress as _progress
from .._core.schema import NotFittedError
from .._core.threads import effective_n_jobs
from . import ivf as _ivf
from .checks import check_k, check_number
from .choice import (AUTO_BREAK_EVEN, AUTO_MIN_ROWS, AUTO_PILOT_QUERIES,  # noqa: F401
                     AUTO_SURE_DIMS, auto_algorithm, auto_choice)
from .metric import Metric
from .resolve import resolve_metric
from .rowindex import RowIndex, device_algorithm, search_record
from .searchers import SEARCHERS, InvertedLists, balanced_depth
from .triangle import ball_tree_refusal  # noqa: F401  (re-exported)

#: ``algorithm=`` values: "auto" and every searcher registered when this module loaded
#: (:func:`algorithms` also lists those registered since)
ALGORITHMS = ("auto",) + tuple(SEARCHERS)


def algorithms():
    """The ``algorithm=`` values: "auto" and every registered searcher
    (:data:`hdist._search.searchers.SEARCHERS`)."""
    return ("auto",) + tuple(SEARCHERS)
#: the ``algorithm_params`` keys of ``algorithm="ivf"`` (:func:`make_index`)
ALGORITHM_PARAMS = ("n_lists", "n_probe", "target_recall", "random_state")


class Recall(float):
    """The recall@k of :meth:`NeighborsIndex.recall`, a float, with the ``k`` measured
    (``k``), the one asked (``k_asked``: larger where the rows were fewer) and a
    ``note`` saying so (empty when ``k`` was not capped)."""

    def __new__(cls, value, k, k_asked, note=""):
        out = super().__new__(cls, value)
        out.k = int(k)
        out.k_asked = int(k_asked)
        out.note = note
        return out

    def __reduce__(self):
        return (Recall, (float(self), self.k, self.k_asked, self.note))


def _train_unseen(metric):
    """Unseen-value codes for queries against the metric's own training rows: those its
    training rows already hold (rows of ``sample_weight`` 0, :meth:`hdist.Metric.fit`),
    so an equal value in a query gets the same code."""
    known = metric._fitted().unseen
    if known is None:
        return [dict() for _ in metric.schema_.nominal_names]
    return [dict(d) for d in known]


class NeighborsIndex(RowIndex):
    """k-nearest-neighbor and radius search over a heterogeneous metric: exact, or
    approximate by inverted lists (``algorithm="ivf"``).

    Parameters
    ----------
    metric : str or Metric, default "heom"
        A preset name (``hdist.METRICS``), an unfitted :class:`Metric` (a copy of it is
        fitted on ``X`` by :meth:`fit`; the object passed is not modified) or a fitted one
        (its learned statistics are used as they are).
    algorithm : {"auto", "brute", "kd_tree", "ball_tree", "ivf"}, default "auto"
        ``"auto"`` or a searcher of :data:`hdist._search.searchers.SEARCHERS`.
        ``"kd_tree"`` serves every metric; ``"ball_tree"`` only metrics that satisfy the
        triangle inequality on the indexed rows (:func:`ball_tree_refusal`; otherwise a
        ValueError names the reason); ``"auto"`` follows :func:`auto_algorithm` and never
        picks an inexact path.  The results are identical for every exact choice.
        ``"ivf"`` is approximate (docs/ivf.md): the rows are partitioned into lists
        around indexed rows chosen as centres (medoids of a sample, under the metric
        itself), and a query scans only the lists of its ``n_probe`` nearest centres.
        Every distance returned is exact; some true neighbours may be missed
        (:meth:`recall` measures how many).  ``"auto"`` never picks it.
    leaf_size : int, default 32
        Rows per tree leaf (a node with more rows is split).
    metric_params : dict, optional
        Parameters of the metric, resolved by
        :func:`hdist._search.resolve.resolve_metric`: with a name,
        ``Metric(name, **metric_params)``; with an unfitted Metric, a copy of it with
        ``metric_params`` set over its own parameters; with a fitted Metric it must be
        empty or None (a ValueError otherwise: changing a parameter needs a new fit),
        and the fitted Metric is used as it is.
    n_lists : int, optional
        ``"ivf"``: number of lists; default ``round(4 sqrt(n))`` (at most n).  More than
        the indexed rows is a ValueError.  Centres that end with no row (duplicate
        rows) are dropped, so ``n_lists_`` may be smaller.
    n_probe : int, optional
        ``"ivf"``: lists scanned per query (at most ``n_lists``); default: chosen at
        fit time for ``target_recall`` (0.95 when not given).  When a query's
        probed lists hold fewer than ``k`` rows (``k + 1`` with ``exclude_self``), the
        next lists in order of centre distance are scanned too, until they do: a
        k-NN query always gets ``k`` neighbours.
    target_recall : float in (0, 1], optional
        ``"ivf"``: choose ``n_probe`` at fit time as the smallest whose ``recall@10`` on
        300 indexed rows drawn at random (each query skipping itself) reaches it;
        0.95 when neither it nor ``n_probe`` is given.
    random_state : int, default 0
        ``"ivf"``: seed of the sample, the first centres and the calibration rows.
    device : {"cpu", "cuda"}, default "cpu"
        Where the searches run.  ``"cuda"``: on a CUDA GPU by brute force (the
        ``"cuda"`` searcher, :class:`hdist._search.cuda.CudaSearcher`: the rows are
        uploaded once by :meth:`fit`, the results are the CPU's bit for bit;
        docs/guide/gpu.md), with ``algorithm`` ``"auto"`` or ``"brute"`` (another
        algorithm is a ValueError).  Without CuPy or a GPU, :meth:`fit` raises
        :class:`hdist.CudaUnavailableError` naming what is missing.

    Attributes
    ----------
    metric_ : Metric
        The fitted metric.
    algorithm_ : str
        The algorithm in use.
    n_train_ : int
        Rows indexed.
    depth_, n_nodes_ : int
        Tree shape (0 for brute force).
    build_time_ : float
        Seconds spent in the last (re)build.
    n_distance_evaluations_ : ndarray of int
        Pair distances computed for each query of the last kneighbors /
        radius_neighbors call (brute force counts every pair).
    tree_nbytes_ : int
        Memory of the tree (nodes, permutation and the rows in tree order).
    search_ : dict
        Which path the last search ran: ``algorithm``, ``path`` ("kd_tree",
        "ball_tree", "ivf", or for brute force "filter" / "direct"), ``threads``,
        ``why``; for ``"ivf"`` also ``n_probe``, ``lists_probed`` and ``rows_scanned``
        (means per query) and ``lists_probed_per_query``, ``rows_scanned_per_query``;
        after :meth:`kneighbors` also ``phases``, the call's seconds per phase:
        ``encode``, ``decide``, ``build``, ``tables``, ``kernel`` (the only parallel one),
        ``heaps`` and ``total`` (:data:`hdist._core.progress.PHASES`, docs/guide/threads.md).
    n_lists_, n_probe_ : int
        ``"ivf"``: lists built, and lists probed per query (settable, at most
        ``n_lists_``).
    list_sizes_ : ndarray of int
        ``"ivf"``: rows of each list.
    centres_ : ndarray of int
        ``"ivf"``: the indexed row at the centre of each list.

    See Also
    --------
    Metric.kneighbors : the same search from a fitted metric.
    hdist.NearestNeighbors : the scikit-learn estimator over this index.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> index = hdist.NeighborsIndex("heom").fit(X)
    >>> dist, ind = index.kneighbors(X.iloc[:2], 2)
    >>> ind.tolist(), dist.round(3).tolist()
    ([[0, 1], [1, 0]], [[0.0, 0.179], [0.0, 0.179]])
    """

    def __init__(self, metric="heom", algorithm="auto", leaf_size=32, metric_params=None,
                 n_lists=None, n_probe=None, target_recall=None, random_state=0, *,
                 device="cpu"):
        if algorithm not in algorithms():
            raise ValueError("algorithm must be one of %s, got %r" % (algorithms(), algorithm))
        device_algorithm(algorithm, device)
        if isinstance(leaf_size, bool) or not isinstance(leaf_size, numbers.Integral):
            raise TypeError("leaf_size must be an int, got %r" % (leaf_size,))
        if not 1 <= leaf_size <= sys.maxsize:
            raise ValueError("leaf_size must be >= 1 and <= %d (a row count), got %d"
                             % (sys.maxsize, leaf_size))
        if not isinstance(metric, (str, Metric)):
            raise TypeError("metric must be a preset name or an hdist.Metric, got %r"
                            % (metric,))
        if metric_params is not None and not isinstance(metric_params, dict):
            raise TypeError("metric_params must be a dict or None, got %r" % (metric_params,))
        if metric_params and hasattr(metric, "plan_"):
            resolve_metric(metric, metric_params)       # refuses, naming metric_params
        _ivf.check_params(n_lists, n_probe, target_recall)
        if algorithm != "ivf":
            for name, v in (("n_lists", n_lists), ("n_probe", n_probe),
                            ("target_recall", target_recall)):
                if v is not None:
                    raise ValueError("%s is only used with algorithm='ivf'" % name)
        if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
            raise TypeError("random_state must be an int, got %r" % (random_state,))
        super().__init__(algorithm, leaf_size, device)
        self.metric = metric
        self.metric_params = metric_params
        self.n_lists = None if n_lists is None else int(n_lists)
        self.n_probe = None if n_probe is None else int(n_probe)
        self.target_recall = None if target_recall is None else float(target_recall)
        self.random_state = int(random_state)

    def __repr__(self):
        if self.algorithm == "ivf":
            return "NeighborsIndex(%r, algorithm='ivf', n_lists=%r, n_probe=%r)" % (
                self.metric, self.n_lists, self.n_probe)
        on = "" if self.device == "cpu" else ", device=%r" % (self.device,)
        return "NeighborsIndex(%r, algorithm=%r, leaf_size=%d%s)" % (
            self.metric, self.algorithm, self.leaf_size, on)

    def _searcher_params(self):
        if self.algorithm != "ivf":
            return {}
        return dict(n_lists=self.n_lists, n_probe=self.n_probe,
                    target_recall=self.target_recall, random_state=self.random_state)

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X=None, y=None, sample_weight=None, *, progress=None):
        """Fit the metric on ``X`` (and ``y``) if it is not fitted yet, encode the rows of
        ``X`` and build the search structure.  With a fitted metric, ``X=None`` indexes
        its training rows.  ``sample_weight``: the metric's fit takes it
        (:meth:`hdist.Metric.fit`: weighted statistics; every row is indexed, weight 0
        included); with a fitted metric it is an error.  ``progress``: ``True`` (tqdm bars) or a callable receiving
        ``(done, total)``: the metric's fit in steps (:meth:`hdist.Metric.fit`), then the
        tree build in rows placed in leaves, each ending with ``(total, total)``."""
        metric = resolve_metric(self.metric, self.metric_params, what=None)
        if hasattr(metric, "plan_"):
            if sample_weight is not None:
                raise ValueError("sample_weight is used to fit the metric, but the metric "
                                 "given is already fitted")
            unseen = [dict() for _ in metric.schema_.nominal_names]
            if X is None:
                rows = metric.train_
                unseen = _train_unseen(metric)
            else:
                rows = metric.encode(X, unseen, "X")
        else:
            if X is None:
                raise ValueError("X is needed to fit the metric %r" % metric.name)
            metric.fit(X, y, sample_weight=sample_weight, progress=progress)
            unseen = _train_unseen(metric)
            rows = metric.train_
        if rows.n < 1:
            raise ValueError("X has no rows to index")
        if self.algorithm == "ivf" and self.n_lists is not None and self.n_lists > rows.n:
            raise ValueError("n_lists = %d is larger than the %d rows to index"
                             % (self.n_lists, rows.n))
        self.metric_ = metric
        self._fit_state = metric._fitted()
        self._unseen = unseen
        crows = metric._ctrain() if rows is metric.train_ else None
        self._index_rows(metric.plan_, rows, metric.schema_.names_, progress, crows)
        self.n_distance_evaluations_ = np.zeros(0, dtype=np.intp)
        self.__dict__.pop("search_", None)      # (set by the pilot queries)
        return self

    # -- inverted lists --------------------------------------------------------------
    def _check_ivf(self):
        """The inverted lists' searcher (an AttributeError for the other algorithms)."""
        self._check_fitted()
        if not isinstance(self._searcher, InvertedLists):
            raise AttributeError("only algorithm='ivf' has lists")
        return self._searcher

    @property
    def n_lists_(self):
        return self._check_ivf().lists.n_lists

    @property
    def n_probe_(self):
        return self._check_ivf().n_probe

    @n_probe_.setter
    def n_probe_(self, value):
        searcher = self._check_ivf()
        searcher.n_probe = self._probe_arg(value, searcher.lists)

    @staticmethod
    def _probe_arg(value, lists):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError("n_probe must be an int, got %r" % (value,))
        if not 1 <= value <= lists.n_lists:
            raise ValueError("n_probe must be in [1, n_lists_ = %d], got %d"
                             % (lists.n_lists, value))
        return int(value)

    @property
    def list_sizes_(self):
        return self._check_ivf().lists.sizes()

    @property
    def centres_(self):
        return self._check_ivf().lists.centres.copy()

    # -- state ------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "metric_"):
            raise NotFittedError("this NeighborsIndex is not fitted yet; call fit(X) first")

    def _check_current(self):
        """Fitted, and the metric still holds the fit the indexed rows were encoded by."""
        self._check_fitted()
        self.metric_._check_same_fit(self._fit_state, "NeighborsIndex")

    def _gemm(self):
        """The matrix-product filter's reference-side features of the indexed rows (kept
        by the brute-force searcher until the rows change)."""
        return self._brute.cache

    @property
    def build_time_(self):
        """Seconds spent in the last (re)build of the searcher."""
        self._check_fitted()
        return self._searcher.build_time_

    @property
    def n_train_(self):
        self._check_fitted()
        return self._rows.n

    @property
    def depth_(self):
        self._check_fitted()
        return self._searcher.depth

    @property
    def n_nodes_(self):
        self._check_fitted()
        return self._searcher.n_nodes

    @property
    def tree_nbytes_(self):
        """Bytes held by the tree on top of the indexed rows: node arrays, permutation,
        per-row pivot distances and the copy of the rows in tree order (leaf by leaf,
        attribute-major, as the tile kernel reads them)."""
        self._check_fitted()
        return self._searcher.nbytes

    @property
    def data_nbytes_(self):
        """Bytes of the indexed rows as encoded for the kernels."""
        self._check_fitted()
        return int(sum(getattr(self._rows, k).nbytes for k in ("c", "cpen", "o", "t", "e")))

    # -- insertion ---------------------------------------------------------------------
    def insert(self, X):
        """Add the rows of ``X`` to the index; they get the next indices, which are
        returned.  The metric's learned statistics do not change (learned in
        ``fit`` only): the rows are encoded with the fitted Plan.  Each new row descends
        to a leaf, widening the bounds on its way; a tree whose depth exceeds twice the
        balanced depth (and the depth of its last full build) is rebuilt (Witten & Frank)."""
        self._check_current()
        unseen = [dict(d) for d in self._unseen]
        new = self.metric_.encode(X, unseen, "X")
        if new.n == 0:
            return np.zeros(0, dtype=np.intp)
        n_old = self._rows.n
        self._insert_rows(new)
        self._unseen = unseen
        return np.arange(n_old, self._rows.n, dtype=np.intp)

    def balanced_depth(self, n=None):
        """Depth of a perfectly balanced tree over ``n`` rows (default: the indexed
        rows) with leaves of at most ``leaf_size`` rows."""
        if n is None:
            n = self.n_train_
        return balanced_depth(n, self.leaf_size)

    # -- queries ---------------------------------------------------------------------
    def _query_rows(self, Q, exclude_self):
        if Q is None:
            return self._rows
        if exclude_self:
            raise ValueError("exclude_self=True needs Q=None (the indexed rows as queries)")
        # unseen values of the queries get codes after those of the indexed rows
        return self.metric_.encode(Q, [dict(d) for d in self._unseen], "Q")

    def kneighbors(self, Q=None, k=5, *, exclude_self=False, return_distance=True,
                   n_jobs=None, progress=None, n_probe=None):
        """The ``k`` nearest indexed rows of each row of ``Q`` (``None``: the indexed rows
        themselves), sorted by true distance, ties broken by the smaller row index.

        Returns ``(distances, indices)`` ``[n_q, k]``, or only the indices when
        ``return_distance=False``; ``exclude_self`` skips row ``i`` for query row ``i``
        (with ``Q=None``).  ``progress``: ``True`` (a tqdm bar) or a callable receiving
        ``(done, total)`` query rows after each block, and a final ``(total, total)``.
        ``n_probe`` (``"ivf"`` only): lists probed by this call (default ``n_probe_``).
        With ``"ivf"`` the neighbours are those found in the probed lists (exact
        distances, approximate set)."""
        with self._probing(n_probe):
            d, i = self._kneighbors(Q, k, exclude_self, n_jobs, progress)
        return (d, i) if return_distance else i

    def _probing(self, n_probe):
        """Context in which ``n_probe_`` is ``n_probe`` (None: unchanged)."""
        if n_probe is None:
            return contextlib.nullcontext()
        self._check_fitted()
        if not isinstance(self._searcher, InvertedLists):
            raise ValueError("n_probe is only used with algorithm='ivf'")
        searcher = self._searcher
        value = self._probe_arg(n_probe, searcher.lists)

        @contextlib.contextmanager
        def probing():
            old = searcher.n_probe
            searcher.n_probe = value
            try:
                yield
            finally:
                searcher.n_probe = old
        return probing()

    def recall(self, Q=None, k=10, n_probe=None, n_jobs=None):
        """Recall@k of the ``"ivf"`` search: the mean over the query rows of the fraction
        of the k rows returned that are true k nearest neighbours, by exact brute force
        over the same indexed rows.  A returned row at the exact k-th distance counts as
        found (it is as near as the k-th: any of the rows tied there is a correct answer).
        The exact search scans every list (brute force, bit for bit), so it needs no
        other copy of the rows.

        ``Q``: query rows; ``None`` draws up to 1000 indexed rows at random
        (``random_state``), each query skipping itself.  ``n_probe``: lists probed
        (default ``n_probe_``).  Costs one brute-force search of the queries.

        A ``k`` beyond the rows a query can find (the indexed rows; one fewer without
        ``Q``) is capped at them: the result, a :class:`Recall` (a float), says the
        ``k`` measured (``.k``), the one asked (``.k_asked``) and why (``.note``)."""
        self._check_fitted()
        if not isinstance(self._searcher, InvertedLists):
            raise ValueError("recall() measures algorithm='ivf'; %r is exact"
                             % self.algorithm_)
        searcher = self._searcher
        self._check_current()
        n = self._rows.n
        p = searcher.n_probe if n_probe is None else self._probe_arg(n_probe, searcher.lists)
        threads = effective_n_jobs(n_jobs)
        asked = check_k(k, math.inf)
        if Q is None:
            if n < 2:
                raise ValueError("recall() without Q searches the indexed rows each "
                                 "without itself: it needs 2 indexed rows, the index has "
                                 "%d; give Q" % n)
            rng = np.random.default_rng(self.random_state + 2)
            sel = np.sort(rng.choice(n, size=min(n, 1000), replace=False))
            rows, self_ids = self._rows.take(sel), sel
            avail, what = n - 1, "the %d other indexed rows" % (n - 1)
        else:
            rows, self_ids = self._query_rows(Q, False), None
            avail, what = n, "the %d indexed rows" % n
        k = min(asked, avail)
        d_ex, _ = searcher.exact_knn(rows, k, threads, self_ids)
        found = searcher.knn(rows, k, threads, self_ids=self_ids, n_probe=p)
        self.n_distance_evaluations_ = found.evaluations
        self.search_ = search_record(self.algorithm_, self._why, threads, found)
        note = "" if k == asked else "recall@%d: k = %d capped at %s" % (k, asked, what)
        return Recall(_ivf.recall_of(found.dist, d_ex, k), k, asked, note)

    def _kneighbors(self, Q, k, exclude_self=False, n_jobs=None, progress=None, ties=False):
        """``kneighbors``'s ``(dist, ind)``; ``ties`` as for :meth:`hdist.Metric._kneighbors`
        (``True``: every row tied with the k-th listed after it, by the same search, in
        memory that grows with the ties; a ``TieTally``: only counted).  The phases of
        the call are timed into ``search_["phases"]``."""
        with _progress.timed_call() as phases:
            self._check_current()
            rows = self._query_rows(Q, exclude_self)
            k = check_k(k, self._rows.n - (1 if exclude_self else 0))
            d, i, self.n_distance_evaluations_, self.search_ = self._search_knn(
                rows, k, bool(exclude_self), effective_n_jobs(n_jobs), progress, ties)
        self.search_["phases"] = phases
        return d, i

    def radius_neighbors(self, Q=None, r=1.0, *, exclude_self=False, return_distance=True,
                         n_jobs=None, progress=None):
        """Indexed rows within true distance ``r`` (inclusive) of each row of ``Q``,
        sorted by (distance, index).  Returns object arrays of arrays (distances and
        indices), like scikit-learn, or only the indices.  ``progress`` as for
        :meth:`kneighbors`.  With ``"ivf"`` it is approximate: only the rows of the
        ``n_probe_`` lists of the nearest centres are scanned (no widening)."""
        self._check_current()
        r = check_number("r", r, lo=0.0, lo_open=False, allow_inf=True)
        rows = self._query_rows(Q, exclude_self)
        dl, il, self.n_distance_evaluations_, self.search_ = self._search_radius(
            rows, r, bool(exclude_self), effective_n_jobs(n_jobs), progress)
        D = np.empty(len(dl), dtype=object)
        I = np.empty(len(il), dtype=object)
        D[:] = dl
        I[:] = il
        return (D, I) if return_distance else I


def check_algorithm_params(algorithm, params):
    """``algorithm_params`` as a dict: None or a dict of :data:`ALGORITHM_PARAMS` keys,
    given with ``algorithm="ivf"`` only."""
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise TypeError("algorithm_params must be a dict or None, got %r" % (params,))
    bad = sorted(set(params) - set(ALGORITHM_PARAMS))
    if bad:
        raise ValueError("algorithm_params: unknown key(s) %s; expected some of %s"
                         % (bad, list(ALGORITHM_PARAMS)))
    if params and algorithm != "ivf":
        raise ValueError("algorithm_params is only used with algorithm='ivf', got "
                         "algorithm=%r" % (algorithm,))
    return dict(params)


def make_index(metric, algorithm="auto", leaf_size=30, algorithm_params=None, device="cpu"):
    """An unfitted :class:`NeighborsIndex` over ``metric`` (the estimators' and the
    command line's).  ``algorithm_params``: its ``"ivf"`` parameters (``n_lists``,
    ``n_probe``, ``target_recall``, ``random_state``); ``device``: ``"cpu"`` or
    ``"cuda"`` (:data:`hdist._search.rowindex.DEVICES`)."""
    if algorithm not in algorithms():
        raise ValueError("algorithm must be one of %s, got %r" % (algorithms(), algorithm))
    device_algorithm(algorithm, device)
    params = check_algorithm_params(algorithm, algorithm_params)
    return NeighborsIndex(metric, algorithm=algorithm, leaf_size=leaf_size, device=device,
                          **params)
