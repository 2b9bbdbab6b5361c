"""Nearest-neighbor index over a fitted metric: brute force, KD-tree or ball tree (exact),
or inverted lists (``algorithm="ivf"``, approximate: :mod:`hdist._search.ivf`).

:class:`NeighborsIndex` holds encoded rows (the metric's Plan encodes them once) and,
for the tree algorithms, a flat tree built by :mod:`hdist._kernels.trees`.  Every algorithm
returns the same ``(distances, indices)`` (docs/metrics.md, section 8): candidates are ordered by (reduced
distance, row index), and a pair's distance is computed by the same compiled function
whatever the algorithm, thread count or leaf size.

Trees follow Witten & Frank ("Data Mining", section "Finding nearest neighbors efficiently"): the
KD-tree splits on the attribute of greatest spread and prunes with per-attribute lower
bounds (valid for every Plan: any ``p``, weights, missing policy, table or embedded
attribute); the ball tree uses data rows as pivots, splits by the two far points and
prunes with the triangle inequality, so it is offered only where the metric satisfies
it (docs/metrics.md, section 8; :func:`ball_tree_refusal`).  Rows can be inserted after the build; a tree
whose depth grows past twice the balanced depth is rebuilt (Witten & Frank).
"""
from __future__ import annotations

import math
import numbers
import sys
import threading
import time

import numpy as np

from .._core import progress as _progress
from .._core.plan import IGNORE
from .._core.schema import NotFittedError
from . import ivf as _ivf
from .choice import (AUTO_BREAK_EVEN, AUTO_MIN_ROWS, AUTO_PILOT_QUERIES,  # noqa: F401
                      AUTO_SURE_DIMS, Probe, auto_algorithm, auto_choice, k_rule,
                      pilot_queries, race)
from .._core.threads import built_once, effective_n_jobs
from .metric import (Metric, _check_k, _check_number, _tallies, knn_guard, radius_guard,
                     search_record)

ALGORITHMS = ("auto", "brute", "kd_tree", "ball_tree", "ivf")
TREES = ("kd_tree", "ball_tree")

def _table_is_metric(T, tol=1e-9):
    """True when a value table (with its unseen row) satisfies the triangle inequality,
    unseen values counted as distinct points at ``T[V, V]`` from each other."""
    T = np.asarray(T, dtype=np.float64)
    V = T.shape[0] - 1
    M = np.empty((V + 2, V + 2))
    M[:V + 1, :V + 1] = T
    M[V + 1, :V + 1] = T[V]
    M[:V + 1, V + 1] = T[:, V]
    M[V + 1, V + 1] = 0.0
    M[V, V + 1] = M[V + 1, V] = T[V, V]
    np.fill_diagonal(M, 0.0)
    if (M < 0).any() or not np.allclose(M, M.T, rtol=tol, atol=tol):
        return False
    scale = max(1.0, float(M.max()))
    for u in range(M.shape[0]):
        # d(u, w) <= d(u, v) + d(v, w) for all v, w
        via = (M[u][:, None] + M).min(axis=0)
        if (M[u] > via + tol * scale).any():
            return False
    return True


#: tables larger than this are trusted to be metrics (VDM, Hellinger and total-variation
#: tables are by construction) instead of being checked in O(V^3)
TABLE_CHECK_MAX = 256


def _embed_bound(comp):
    """An upper bound of an embedded attribute's component distance, or None."""
    bound = getattr(comp, "max_distance", None)
    if bound is not None:
        return float(bound)
    enc = comp.encode
    P = getattr(enc, "P", None)
    if comp.nominal and isinstance(P, np.ndarray):
        # rows of (scaled) class probabilities: d(v, w) <= |P_v| + |P_w|
        norms = np.abs(P).sum(axis=1) if comp.q == 1 else np.sqrt((P * P).sum(axis=1))
        return 2.0 * float(norms.max()) if norms.size else 0.0
    bound = getattr(enc, "distance_bound", None)   # class-posterior estimators
    if bound is not None:
        b = bound(comp.q)
        return None if b is None else float(b)
    return None


def _missing_columns(plan, rows):
    """Which block positions have a missing value, per row: (c, o, t, e) boolean
    arrays of shape [n, m_block]."""
    c = np.isnan(rows.c)
    o = rows.o < 0
    t = rows.t < 0
    e = np.isnan(rows.e[:, plan.e_off[:-1]]) if plan.me else np.zeros((rows.n, 0), bool)
    return c, o, t, e


def _unsafe_when_missing(plan):
    """Attributes whose component distance may exceed 2, with a reason each: a missing
    value there (worth 1 to any other row) can break the triangle inequality when that
    row is the middle point.  Returns (c, o, t, e) lists of reasons (None = safe)."""
    c = [None if plan.c_max[k] else
         "|x - y| / δ can exceed 2 (use missing='max', or kd_tree)"
         for k in range(plan.mc)]
    o = [None] * plan.mo
    t = []
    for a in plan.t_attr:
        top = float(np.max(plan.components[a].table))
        t.append(None if top <= 2.0 else "its value distances reach %.4g > 2" % top)
    e = []
    for a in plan.e_attr:
        b = _embed_bound(plan.components[a])
        e.append(None if b is not None and b <= 2.0
                 else "its component distance is not bounded by 2")
    return c, o, t, e


def ball_tree_refusal(plan, rows, names=None):
    """Why a ball tree over ``rows`` would not be exact for ``plan``, or None.

    The ball tree prunes with the triangle inequality, which holds when
    ``p >= 1``, no attribute uses the "ignore" policy (its rescaling is not a metric),
    every value table is a metric, and, for attributes with a missing value in the
    indexed rows, the component distance never exceeds 2 (a missing middle point
    contributes 1 + 1 under "one"; Weka's "max" policy is a metric for continuous
    attributes)."""
    def name(a):
        return repr(names[a]) if names is not None else "#%d" % a

    if plan.p < 1.0:
        return ("p = %g < 1: the Minkowski aggregate is not a metric, so the triangle "
                "inequality the ball tree prunes with does not hold" % plan.p)
    if plan.has_ignore:
        a = next(a for a, c in enumerate(plan.components) if c.policy == IGNORE)
        return ("the 'ignore' missing policy (attribute %s) rescales by the known weight, "
                "which breaks the triangle inequality the ball tree prunes with" % name(a))
    for a in plan.t_attr:
        T = plan.components[a].table
        if T.shape[0] - 1 <= TABLE_CHECK_MAX and not _table_is_metric(T):
            return ("the value table of attribute %s does not satisfy the triangle "
                    "inequality" % name(a))
    missing = _missing_columns(plan, rows)
    blocks = (plan.c_attr, plan.o_attr, plan.t_attr, plan.e_attr)
    for attrs, miss, why in zip(blocks, missing, _unsafe_when_missing(plan)):
        for k, a in enumerate(attrs):
            if why[k] is not None and miss[:, k].any():
                return ("attribute %s has missing values in the indexed rows and %s, so a "
                        "missing row breaks the triangle inequality" % (name(a), why[k]))
    return None


def _two_sided_rows(plan, rows):
    """uint8 per query row: 1 when the row may serve as the middle point of a triangle
    (no missing value where a component can exceed 2), which the ball tree's per-row
    bound |d(q, pivot) - d(x, pivot)| needs; 0 limits that query to one side."""
    ok = np.ones(rows.n, dtype=bool)
    for miss, why in zip(_missing_columns(plan, rows), _unsafe_when_missing(plan)):
        bad = np.array([w is not None for w in why], dtype=bool)
        if bad.any():
            ok &= ~miss[:, bad].any(axis=1)
    return ok.astype(np.uint8)


def _reduced_radius(plan, r):
    """A reduced-distance threshold that every pair within true distance ``r`` stays
    under (``hdist._kernels.reduced_radius``: ``r^p``, enlarged for rounding)."""
    from .._kernels import reduced_radius
    return reduced_radius(plan.cplan, r)


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


class NeighborsIndex:
    """k-nearest-neighbor and radius search over a heterogeneous metric: exact, or
    approximate by inverted lists (``algorithm="ivf"``).

    Parameters
    ----------
    metric : str or Metric, default "heom"
        A preset name (``hdist.METRICS``), an unfitted :class:`Metric` (fitted on ``X``
        by :meth:`fit`; the object passed is not modified) or a fitted one (its learned
        statistics are used as they are).
    algorithm : {"auto", "brute", "kd_tree", "ball_tree", "ivf"}, default "auto"
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
        Parameters of the metric when ``metric`` is a name.
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
                 n_lists=None, n_probe=None, target_recall=None, random_state=0):
        if algorithm not in ALGORITHMS:
            raise ValueError("algorithm must be one of %s, got %r" % (ALGORITHMS, algorithm))
        if isinstance(leaf_size, bool) or not isinstance(leaf_size, numbers.Integral):
            raise TypeError("leaf_size must be an int, got %r" % (leaf_size,))
        if not 1 <= leaf_size <= sys.maxsize:
            raise ValueError("leaf_size must be >= 1 and <= %d (a row count), got %d"
                             % (sys.maxsize, leaf_size))
        if not isinstance(metric, (str, Metric)):
            raise TypeError("metric must be a preset name or an hdist.Metric, got %r"
                            % (metric,))
        if metric_params is not None and not isinstance(metric, str):
            raise ValueError("metric_params is only used with a metric name; pass the "
                             "parameters to Metric(...) instead")
        _ivf.check_params(n_lists, n_probe, target_recall)
        if algorithm != "ivf":
            for name, v in (("n_lists", n_lists), ("n_probe", n_probe),
                            ("target_recall", target_recall)):
                if v is not None:
                    raise ValueError("%s is only used with algorithm='ivf'" % name)
        if isinstance(random_state, bool) or not isinstance(random_state, numbers.Integral):
            raise TypeError("random_state must be an int, got %r" % (random_state,))
        self.metric = metric
        self.algorithm = algorithm
        self.leaf_size = int(leaf_size)
        self.metric_params = metric_params
        self.n_lists = None if n_lists is None else int(n_lists)
        self.n_probe = None if n_probe is None else int(n_probe)
        self.target_recall = None if target_recall is None else float(target_recall)
        self.random_state = int(random_state)

    def __repr__(self):
        if self.algorithm == "ivf":
            return "NeighborsIndex(%r, algorithm='ivf', n_lists=%r, n_probe=%r)" % (
                self.metric, self.n_lists, self.n_probe)
        return "NeighborsIndex(%r, algorithm=%r, leaf_size=%d)" % (
            self.metric, self.algorithm, self.leaf_size)

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X=None, y=None, sample_weight=None, *, progress=None):
        """Fit the metric on ``X`` (and ``y``) if it is not fitted yet, encode the rows of
        ``X`` and build the search structure.  With a fitted metric, ``X=None`` indexes
        its training rows.  ``sample_weight``: the metric's fit takes it
        (:meth:`hdist.Metric.fit`: weighted statistics; every row is indexed, weight 0
        included); with a fitted metric it is an error.  ``progress``: ``True`` (tqdm bars) or a callable receiving
        ``(done, total)``: the metric's fit in steps (:meth:`hdist.Metric.fit`), then the
        tree build in rows placed in leaves, each ending with ``(total, total)``."""
        m = self.metric
        if isinstance(m, str):
            metric = Metric(m, **(self.metric_params or {}))
        elif hasattr(m, "plan_"):
            metric = m
        else:
            metric = Metric(m.name, **m.params)
        self._unseen = None
        if hasattr(metric, "plan_"):
            if sample_weight is not None:
                raise ValueError("sample_weight is used to fit the metric, but the metric "
                                 "given is already fitted")
            self._unseen = [dict() for _ in metric.schema_.nominal_names]
            if X is None:
                rows = metric.train_
                self._unseen = _train_unseen(metric)
            else:
                rows = metric.encode(X, self._unseen, "X")
        else:
            if X is None:
                raise ValueError("X is needed to fit the metric %r" % metric.name)
            metric.fit(X, y, sample_weight=sample_weight, progress=progress)
            self._unseen = _train_unseen(metric)
            rows = metric.train_
        if rows.n < 1:
            raise ValueError("X has no rows to index")
        if self.algorithm == "ivf" and self.n_lists is not None and self.n_lists > rows.n:
            raise ValueError("n_lists = %d is larger than the %d rows to index"
                             % (self.n_lists, rows.n))
        self.metric_ = metric
        self._fit_state = metric._fitted()
        self._rows = rows
        self._drop_caches()
        self._tree = None
        algo = self._choose(rows.n, progress)
        if algo != getattr(self, "algorithm_", None) or self._tree is None:
            self.algorithm_ = algo
            self._build(progress)
        self.n_distance_evaluations_ = np.zeros(0, dtype=np.intp)
        self.__dict__.pop("search_", None)      # (set by the pilot queries)
        return self

    def _choose(self, n, progress=None):
        plan = self.metric_.plan_
        if self.algorithm == "auto":
            self._auto_n = n
            self._probe = None
            algo, self._why = auto_choice(plan, n, lambda: self._pilot(progress), self._race)
            self._probe = None
            self._k_choices = {}
            return algo
        if self.algorithm == "ball_tree":
            reason = ball_tree_refusal(plan, self._rows, self.metric_.schema_.names_)
            if reason is not None:
                raise ValueError("algorithm='ball_tree' is not exact here: " + reason)
        self._why = "algorithm=%r was asked for" % self.algorithm
        return self.algorithm

    def _pilot(self, progress=None):
        """Mean distance evaluations of KD-tree queries for a few indexed rows, on a tree
        over all of them: measured on the pilot's trees over a sample of the rows and
        extrapolated (:class:`hdist._search.choice.Probe`).  ``progress`` is not used:
        the pilot's trees take milliseconds."""
        self._probe = Probe(self.metric_.plan_, self._rows, self._crows())
        return self._probe.evaluations()

    def _race(self):
        """Seconds of the pilot's queries on the KD-tree (``Probe.race``) and by brute
        force over the indexed rows (``hdist._search.race``)."""
        brute = self.metric_._knn_rows
        return self._probe.race(lambda q, k: brute(q, k, False, 1, R=self._rows,
                                                   cR=self._crows()))

    def _build(self, progress=None):
        self._drop_caches()
        self._tree = None
        self.build_time_ = 0.0
        self._lists = None
        if self.algorithm_ == "brute":
            return
        if self.algorithm_ == "ivf":
            self._build_ivf(progress)
            return
        from .._kernels import trees as _trees
        t0 = time.perf_counter()
        report = _progress.reporter(progress, self._rows.n, self.algorithm_.replace("_", "-"))
        nodes, perm, rowdist = _trees.build(self.algorithm_, self.metric_.plan_.cplan,
                                            self._crows(), self.leaf_size, report)
        self.build_time_ = time.perf_counter() - t0
        depth = int(nodes["depth"].max())
        self._tree = {"nodes": nodes, "perm": perm, "rowdist": rowdist, "depth": depth,
                      "fresh_depth": depth}

    def _build_ivf(self, progress=None):
        t0 = time.perf_counter()
        n = self._rows.n
        L = self.n_lists if self.n_lists is not None else _ivf.default_n_lists(n)
        report = _progress.reporter(progress, _ivf.PASSES + 2, "ivf build", unit="steps")
        threads = effective_n_jobs(None)
        lists = _ivf.build(self.metric_, self._rows, L, threads, self.random_state, report)
        self._lists = lists
        lists.derived(self.metric_, self._rows)         # the store
        if report is not None:
            report(_ivf.PASSES + 2, _ivf.PASSES + 2)
        if self.n_probe is not None:
            self._n_probe = min(self.n_probe, lists.n_lists)
        else:
            target = self.target_recall
            if target is None:
                target = _ivf.DEFAULT_TARGET_RECALL
            self._n_probe = _ivf.calibrate(self, lists, target, threads, self.random_state)
        self.build_time_ = time.perf_counter() - t0

    def _check_ivf(self):
        self._check_fitted()
        if self.algorithm_ != "ivf":
            raise AttributeError("only algorithm='ivf' has lists")
        return self._lists

    @property
    def n_lists_(self):
        return self._check_ivf().n_lists

    @property
    def n_probe_(self):
        self._check_ivf()
        return self._n_probe

    @n_probe_.setter
    def n_probe_(self, value):
        lists = self._check_ivf()
        self._n_probe = self._probe_arg(value, lists)

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
        return self._check_ivf().sizes()

    @property
    def centres_(self):
        return self._check_ivf().centres.copy()

    # -- state ------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "metric_"):
            raise NotFittedError("this NeighborsIndex is not fitted yet; call fit(X) first")

    def _check_current(self):
        """Fitted, and the metric still holds the fit the indexed rows were encoded by."""
        self._check_fitted()
        self.metric_._check_same_fit(self._fit_state, "NeighborsIndex")

    # The caches below are built on first use by whichever query thread comes first: the
    # lock makes each be built once (threads that arrive meanwhile wait for it), and a
    # cache is published whole by one store.  fit and insert replace them; they are not
    # meant to run while other threads query the same index.
    def _drop_caches(self):
        self.__dict__.setdefault("_lock", threading.RLock())
        self._c_rows = None
        self._leaf_rows = None
        if getattr(self, "_lists", None) is not None:
            self._lists.drop()          # the stored copy of the rows (remade on use)
        # the matrix-product filter's reference-side features of the indexed rows; its
        # entries are built whole, then stored once (hdist._search.gemm_filter)
        self._gemm_cache = {}

    def _gemm(self):
        """The matrix-product filter's reference-side features of the indexed rows (kept
        until the rows change)."""
        return self._gemm_cache

    def _crows(self):
        from .._kernels import CRows
        return built_once(self, "_c_rows", self._lock, lambda: CRows(self._rows))

    def _leaf_major(self):
        """The indexed rows leaf by leaf, as the tree's leaf scans read them (made once
        per tree, ``hdist._kernels.trees.leaf_major``)."""
        from .._kernels import trees as _trees

        def make():
            t = self._tree
            return _trees.leaf_major(self.metric_.plan_.cplan, self._crows(), t["perm"],
                                     t["nodes"],
                                     _trees.KD_UNIT if self.algorithm_ == "kd_tree" else 0)
        return built_once(self, "_leaf_rows", self._lock, make)

    def __getstate__(self):
        st = dict(self.__dict__)
        for key in ("_c_rows", "_leaf_rows", "_gemm_cache", "_lock"):
            st.pop(key, None)
        return st

    def __setstate__(self, st):
        self.__dict__.update(st)
        self._drop_caches()

    @property
    def n_train_(self):
        self._check_fitted()
        return self._rows.n

    @property
    def depth_(self):
        self._check_fitted()
        return 0 if self._tree is None else self._tree["depth"]

    @property
    def n_nodes_(self):
        self._check_fitted()
        return 0 if self._tree is None else int(self._tree["nodes"]["start"].shape[0])

    @property
    def tree_nbytes_(self):
        """Bytes held by the tree on top of the indexed rows: node arrays, permutation,
        per-row pivot distances and the copy of the rows in tree order (leaf by leaf,
        attribute-major, as the tile kernel reads them)."""
        self._check_fitted()
        if self._tree is None:
            return 0
        t = self._tree
        rows = self._rows
        data = sum(getattr(rows, k).nbytes for k in ("c", "cpen", "o", "t", "e"))
        return int(sum(a.nbytes for a in t["nodes"].values()) + t["perm"].nbytes
                   + t["rowdist"].nbytes + data)

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
        rows = self._rows.concat(new)
        algo = self.algorithm_
        if algo == "ball_tree":
            reason = ball_tree_refusal(self.metric_.plan_, new, self.metric_.schema_.names_)
            if reason is not None:
                raise ValueError("cannot insert these rows into a ball tree: " + reason)
        self._unseen = unseen
        self._rows = rows
        self._drop_caches()
        if self.algorithm == "auto" and (rows.n >= 2 * self._auto_n or (
                self._auto_n < AUTO_MIN_ROWS <= rows.n)):
            # the rule is revisited as the index grows (a pilot may build a KD-tree)
            self._tree = None
            algo = self._choose(rows.n)
            if algo != self.algorithm_ or self._tree is None:
                self.algorithm_ = algo
                self._build()
            return np.arange(n_old, rows.n, dtype=np.intp)
        if algo == "brute":
            return np.arange(n_old, rows.n, dtype=np.intp)
        if algo == "ivf":
            self._lists = _ivf.insert(self.metric_, self._lists, rows, new,
                                      effective_n_jobs(None))
            return np.arange(n_old, rows.n, dtype=np.intp)
        from .._kernels import trees as _trees
        t = self._tree
        nodes, perm, rowdist = _trees.insert(algo, self.metric_.plan_.cplan, self._crows(),
                                             t["nodes"], t["perm"], t["rowdist"], n_old,
                                             self.leaf_size)
        depth = int(nodes["depth"].max())
        self._tree = {"nodes": nodes, "perm": perm, "rowdist": rowdist, "depth": depth,
                      "fresh_depth": t["fresh_depth"]}
        if depth > 2 * max(1, self.balanced_depth(rows.n)) and depth > t["fresh_depth"]:
            self._build()
        return np.arange(n_old, rows.n, dtype=np.intp)

    def balanced_depth(self, n=None):
        """Depth of a perfectly balanced tree over ``n`` rows (default: the indexed
        rows) with leaves of at most ``leaf_size`` rows."""
        if n is None:
            n = self.n_train_
        leaves = max(1, -(-int(n) // self.leaf_size))
        return int(math.ceil(math.log2(leaves))) if leaves > 1 else 0

    # -- queries ---------------------------------------------------------------------
    def _query_rows(self, Q, exclude_self):
        if Q is None:
            return self._rows
        if exclude_self:
            raise ValueError("exclude_self=True needs Q=None (the indexed rows as queries)")
        # unseen values of the queries get codes after those of the indexed rows
        return self.metric_.encode(Q, [dict(d) for d in self._unseen], "Q")

    def _tree_args(self, rows):
        """The leading arguments of ``_trees.knn`` / ``_trees.radius``."""
        from .._kernels import CRows
        t = self._tree
        cq = self._crows() if rows is self._rows else CRows(rows)
        return (self.algorithm_, self.metric_.plan_.cplan, cq, self._crows(),
                self._leaf_major(), t["nodes"], t["perm"], t["rowdist"], t["depth"])

    def _two_sided(self, rows):
        if self.algorithm_ != "ball_tree":
            return None
        return _two_sided_rows(self.metric_.plan_, rows)

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
        import contextlib
        if n_probe is None:
            return contextlib.nullcontext()
        self._check_fitted()
        if self.algorithm_ != "ivf":
            raise ValueError("n_probe is only used with algorithm='ivf'")
        lists = self._lists
        value = self._probe_arg(n_probe, lists)

        @contextlib.contextmanager
        def probing():
            old = self._n_probe
            self._n_probe = value
            try:
                yield
            finally:
                self._n_probe = old
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
        if self.algorithm_ != "ivf":
            raise ValueError("recall() measures algorithm='ivf'; %r is exact"
                             % self.algorithm_)
        lists = self._lists
        self._check_current()
        n = self._rows.n
        p = self._n_probe if n_probe is None else self._probe_arg(n_probe, lists)
        threads = effective_n_jobs(n_jobs)
        asked = _check_k(k, math.inf)
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
        d_ex, _ = _ivf.exact_excluding(self, lists, rows, self_ids, k, threads)
        with self._probing(p):
            d, _, scanned, probed = _ivf.knn(self, lists, rows, k, p, self_ids, threads)
            self._ivf_record(threads, scanned, probed)
        note = "" if k == asked else "recall@%d: k = %d capped at %s" % (k, asked, what)
        return Recall(_ivf.recall_of(d, d_ex, k), k, asked, note)

    def _kneighbors(self, Q, k, exclude_self=False, n_jobs=None, progress=None, ties=False):
        """``kneighbors``'s ``(dist, ind)``; ``ties`` as for :meth:`hdist.Metric._kneighbors`
        (``True``: every row tied with the k-th listed after it, by the same search, in
        memory that grows with the ties; a ``TieTally``: only counted).  The phases of
        the call are timed into ``search_["phases"]``."""
        with _progress.timed_call() as phases:
            out = self._kneighbors_timed(Q, k, exclude_self, n_jobs, progress, ties)
        self.search_["phases"] = phases
        return out

    def _kneighbors_timed(self, Q, k, exclude_self, n_jobs, progress, ties):
        self._check_current()
        rows = self._query_rows(Q, exclude_self)
        k = _check_k(k, self._rows.n - (1 if exclude_self else 0))
        with knn_guard(rows.n, k):
            return self._kneighbors_rows(rows, k, exclude_self, n_jobs, progress, ties)

    def _kneighbors_rows(self, rows, k, exclude_self, n_jobs, progress, ties):
        threads = effective_n_jobs(n_jobs)
        report = _progress.reporter(progress, rows.n, "kneighbors")
        if report is None or (exclude_self and _tallies(ties)):
            out = self._knn(rows, k, bool(exclude_self), threads, ties)
            if report is not None:      # a tally's own rows: one block
                report(rows.n, rows.n)
            return out
        counts = []

        def search(part, kk):
            res = self._knn(part, kk, False, threads, ties)
            counts.append(self.n_distance_evaluations_)
            return res
        d, i = _progress.knn_blocks(search, rows, k, bool(exclude_self), report, ties)
        self.n_distance_evaluations_ = np.concatenate(counts) if counts else \
            np.zeros(0, dtype=np.intp)
        return d, i

    def _knn(self, rows, k, exclude_self, threads, ties=False):
        """k-NN of encoded query rows (the indexed rows themselves for exclude_self);
        ``ties``: the rows tied with the k-th too (``_kneighbors``)."""
        n = self._rows.n
        if self.algorithm_ == "ivf":
            self_ids = np.arange(n, dtype=np.intp) if exclude_self else None
            with _progress.phase("kernel"):
                d, i, scanned, probed = _ivf.knn(self, self._lists, rows, k, self._n_probe,
                                                 self_ids, threads, ties)
            self._ivf_record(threads, scanned, probed)
            return d, i
        algo, why = self._for_k(k)
        if algo == "brute":
            d, i = self.metric_._knn_rows(rows, k, bool(exclude_self), threads, R=self._rows,
                                          cR=self._crows(), cache=self._gemm(), ties=ties)
            self.n_distance_evaluations_ = np.full(rows.n, n - (1 if exclude_self else 0),
                                                   dtype=np.intp)
        else:
            from .._kernels import trees as _trees
            with _progress.phase("tables"):
                args, two = self._tree_args(rows), self._two_sided(rows)
            with _progress.phase("kernel"):
                d, i, cnt = _trees.knn(*args, k, threads, exclude_self, two, ties=ties)
            self.n_distance_evaluations_ = cnt
        self.search_ = search_record(algo, why, threads,
                                     getattr(self.metric_, "_brute_path", None))
        return d, i

    def _for_k(self, k):
        """``(algorithm, reason)`` of a k-NN search of ``k`` neighbors: ``algorithm_``,
        except that ``"auto"`` decides a k larger than its pilot's at that k
        (:func:`hdist._search.choice.k_rule`: brute force for k near the rows)."""
        why = getattr(self, "_why", "")
        if self.algorithm != "auto" or self.algorithm_ == "brute":
            return self.algorithm_, why
        brute = self.metric_._knn_rows
        rule = k_rule(self.metric_.plan_, self._rows, self._crows(), k,
                      lambda q, kk: brute(q, kk, False, 1, R=self._rows, cR=self._crows()),
                      self.__dict__.setdefault("_k_choices", {}))
        if rule is None or rule[0] == self.algorithm_:
            return self.algorithm_, why
        return rule

    def radius_neighbors(self, Q=None, r=1.0, *, exclude_self=False, return_distance=True,
                         n_jobs=None, progress=None):
        """Indexed rows within true distance ``r`` (inclusive) of each row of ``Q``,
        sorted by (distance, index).  Returns object arrays of arrays (distances and
        indices), like scikit-learn, or only the indices.  ``progress`` as for
        :meth:`kneighbors`.  With ``"ivf"`` it is approximate: only the rows of the
        ``n_probe_`` lists of the nearest centres are scanned (no widening)."""
        self._check_current()
        r = _check_number("r", r, lo=0.0, lo_open=False, allow_inf=True)
        rows = self._query_rows(Q, exclude_self)
        threads = effective_n_jobs(n_jobs)
        report = _progress.reporter(progress, rows.n, "radius_neighbors")
        dl, il, counts = [], [], []
        with radius_guard(rows.n, self._rows.n, r, il):
            self._radius_blocks(rows, Q is None, r, exclude_self, threads, report, dl, il,
                                counts)
        D = np.empty(len(dl), dtype=object)
        I = np.empty(len(il), dtype=object)
        D[:] = dl
        I[:] = il
        return (D, I) if return_distance else I

    def _radius_blocks(self, rows, own, r, exclude_self, threads, report, dl, il, counts):
        """``radius_neighbors``' lists, appended to ``dl``, ``il``: in one call, or block
        by block (``report``; ``counts`` the evaluations of each)."""
        if report is None:
            d_, i_ = self._radius(rows, own, r, bool(exclude_self), threads)
            dl += list(d_)
            il += list(i_)
        else:
            for a, b in _progress.blocks(rows.n, report):
                d_, i_ = self._radius(rows.take(np.arange(a, b)), False, r, False, threads)
                if exclude_self:        # the block's own rows are a..b-1
                    keep = [i != a + t for t, i in enumerate(i_)]
                    d_ = [d[m] for d, m in zip(d_, keep)]
                    i_ = [i[m] for i, m in zip(i_, keep)]
                dl += list(d_)
                il += list(i_)
                counts.append(self.n_distance_evaluations_)
            self.n_distance_evaluations_ = np.concatenate(counts) if counts else \
                np.zeros(0, dtype=np.intp)

    def _radius(self, rows, own, r, exclude_self, threads):
        """Radius lists of encoded query rows (``own``: they are the indexed rows)."""
        plan = self.metric_.plan_
        if self.algorithm_ == "ivf":
            self_ids = np.arange(self._rows.n, dtype=np.intp) if exclude_self else None
            dl, il, scanned, probed = _ivf.radius(self, self._lists, rows, r, self._n_probe,
                                                  self_ids, threads)
            self._ivf_record(threads, scanned, probed)
            return dl, il
        if self.algorithm_ == "brute":
            dl, il = self.metric_._radius_rows(rows, r, exclude_self, threads, R=self._rows,
                                               cR=self._crows(), cache=self._gemm())
            self.n_distance_evaluations_ = np.full(
                rows.n, self._rows.n - (1 if exclude_self else 0), dtype=np.intp)
        else:
            from .._kernels import trees as _trees
            dl, il, cnt = _trees.radius(*self._tree_args(rows), r, _reduced_radius(plan, r),
                                        threads, exclude_self, self._two_sided(rows))
            self.n_distance_evaluations_ = cnt
        self.search_ = search_record(self.algorithm_, getattr(self, "_why", ""), threads,
                                     getattr(self.metric_, "_brute_path", None))
        return dl, il

    def _ivf_record(self, threads, scanned, probed):
        """``search_`` and ``n_distance_evaluations_`` of an ``"ivf"`` search (a query
        computes its distance to every centre, then to the rows it scans)."""
        self.n_distance_evaluations_ = scanned + self._lists.n_lists
        rec = search_record("ivf", getattr(self, "_why", ""), threads)
        rec.update(n_probe=int(self._n_probe),
                   lists_probed=float(np.mean(probed)) if probed.size else 0.0,
                   rows_scanned=float(np.mean(scanned)) if scanned.size else 0.0,
                   lists_probed_per_query=probed, rows_scanned_per_query=scanned)
        self.search_ = rec
