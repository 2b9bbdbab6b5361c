"""The search structures under :class:`hdist.NeighborsIndex`: one :class:`Searcher` per
algorithm, each returning what it found and what it cost (:class:`Found`).

A searcher holds the encoded rows of an index (``hdist._core.plan.Rows``), its kernel
view of them (``CRows``) and whatever it builds over them; it answers k-NN and radius
queries of encoded query rows with exact distances computed by the kernels' one pair
function, so every exact searcher returns the same neighbours (docs/metrics.md,
section 8).  :data:`SEARCHERS` maps each ``algorithm=`` name to its class:

- :class:`BruteForce` (``"brute"``): the tile kernel over every pair, or for ``p = 2``
  plans the matrix-product filter in front of it (:mod:`hdist._search.gemm_filter`);
- :class:`KDTree` (``"kd_tree"``) and :class:`BallTree` (``"ball_tree"``): the trees of
  :mod:`hdist._kernels.trees` (Witten & Frank, "Data Mining", section "Finding nearest
  neighbors efficiently"); the ball tree only where the triangle inequality holds
  (:func:`hdist._search.triangle.ball_tree_refusal`);
- :class:`InvertedLists` (``"ivf"``, approximate): the lists of :mod:`hdist._search.ivf`.

A new search structure is one subclass of :class:`Searcher` and one :func:`register`
line; :class:`hdist.NeighborsIndex` offers it as ``algorithm=`` its ``name``.
"""
from __future__ import annotations

import abc
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .._core import progress as _progress
from .._core.threads import built_once, effective_n_jobs
from . import gemm_filter as _gemm
from . import ivf as _ivf
from .triangle import ball_tree_refusal, two_sided_rows

#: a brute-force search of fewer (query, row) pairs, or of fewer than
#: ``GEMM_MIN_QUERIES`` query rows, uses the direct kernel without the matrix-product
#: filter (``method="auto"``)
GEMM_MIN_PAIRS = 1 << 18
GEMM_MIN_QUERIES = 16
#: brute force's kernels: "auto" chooses, "direct" is the tile kernel alone, "gemm" the
#: matrix-product filter wherever it applies
METHODS = ("auto", "direct", "gemm")
#: rows per tree leaf unless the index asks for another size
LEAF_SIZE = 32


@dataclass
class Found:
    """What one search found and what it cost.

    Attributes
    ----------
    dist : ndarray or list of ndarray
        k-NN: float64 ``[n_q, k]`` (more columns where tied rows are listed); radius:
        one float64 array per query row.
    ind : ndarray or list of ndarray
        The indices of the indexed rows, of the same shape (intp).
    evaluations : ndarray of intp
        Pair distances computed for each query row ``[n_q]``.
    path : str
        The path that ran: ``"direct"``, ``"filter"``, ``"kd_tree"``, ``"ball_tree"``,
        ``"ivf"``.
    why : str
        Why this path ran, in words (empty where the path is the searcher's only one).
    extra : dict
        What a searcher reports beside them (``"ivf"``: ``n_probe``, ``lists_probed``,
        ``rows_scanned`` and their per-query arrays).
    """

    dist: object
    ind: object
    evaluations: np.ndarray
    path: str
    why: str
    extra: dict = field(default_factory=dict)


#: ``algorithm=`` name -> Searcher class (:func:`register` adds one)
SEARCHERS = {}


def register(cls):
    """Class decorator: offer the :class:`Searcher` subclass ``cls`` as
    ``algorithm=cls.name`` of :class:`hdist.NeighborsIndex`; returns ``cls``."""
    if not isinstance(cls, type) or not issubclass(cls, Searcher):
        raise TypeError("register takes a Searcher subclass, got %r" % (cls,))
    if not isinstance(cls.name, str) or not cls.name or cls.name == "auto":
        raise ValueError("a searcher needs a name other than 'auto', got %r" % (cls.name,))
    SEARCHERS[cls.name] = cls
    return cls


def balanced_depth(n, leaf_size):
    """Depth of a perfectly balanced tree over ``n`` rows with leaves of at most
    ``leaf_size`` rows."""
    leaves = max(1, -(-int(n) // int(leaf_size)))
    return int(math.ceil(math.log2(leaves))) if leaves > 1 else 0


class Searcher(abc.ABC):
    """One search structure over the encoded rows of an index.

    Parameters
    ----------
    plan : hdist._core.plan.Plan
        The fitted Plan the rows were encoded by.
    rows : hdist._core.plan.Rows
        The indexed rows.
    leaf_size : int, default 32
        Rows per leaf, for the searchers that have leaves.
    crows : CRows, optional
        The kernels' view of ``rows`` where the caller has it already (else made on
        first use).
    **params
        Parameters of the searcher (``"ivf"``: ``n_lists``, ``n_probe``,
        ``target_recall``, ``random_state``).

    Attributes
    ----------
    name : str
        The registry key (:data:`SEARCHERS`), also ``NeighborsIndex.algorithm_``.
    exact : bool
        False where the set of rows found is approximate (their distances are exact);
        ``"auto"`` never picks such a searcher.
    build_time_ : float
        Seconds of the last :meth:`build`.
    """

    name = ""
    exact = True
    #: what the refusal messages call it ("cannot insert these rows into a ...")
    label = ""
    #: attributes derived from the rows: not pickled, made again on use (:meth:`_forget`)
    _transient = ("_crows",)

    @classmethod
    def refusal(cls, plan, rows, names=None):
        """Why this searcher cannot serve ``rows`` exactly under ``plan`` (None: it can);
        ``names``: the column names its message uses."""
        return None

    def __init__(self, plan, rows, *, leaf_size=LEAF_SIZE, crows=None, **params):
        if params:
            raise TypeError("searcher %r takes no parameter(s) %s"
                            % (self.name, ", ".join(sorted(params))))
        self.plan, self.rows, self.leaf_size = plan, rows, int(leaf_size)
        self._crows = crows
        self._lock = threading.RLock()
        self.build_time_ = 0.0

    def crows(self):
        """The indexed rows as the kernels read them (made once)."""
        from .._kernels import CRows
        return built_once(self, "_crows", self._lock, lambda: CRows(self.rows))

    def query_crows(self, queries):
        """The kernels' view of encoded ``queries`` (the indexed rows' own when they are
        the indexed rows)."""
        from .._kernels import CRows
        return self.crows() if queries is self.rows else CRows(queries)

    def build(self, progress=None):
        """Build the structure over the rows (``progress``: as for
        :meth:`hdist.NeighborsIndex.fit`)."""
        self.build_time_ = 0.0

    @abc.abstractmethod
    def knn(self, queries, k, threads, *, exclude_self=False, ties=False):
        """The ``k`` nearest indexed rows of each row of ``queries`` (encoded Rows; the
        indexed rows object itself with ``exclude_self``, which skips row ``q`` for query
        ``q``), ordered by (distance, index).  ``ties``: False, True (every row tied with
        the k-th listed after it) or a :class:`hdist._search.votes.TieTally`.  Returns a
        :class:`Found`."""

    @abc.abstractmethod
    def radius(self, queries, r, threads, *, exclude_self=False, self_offset=0):
        """The indexed rows within true distance ``r`` of each row of ``queries``, ordered
        by (distance, index); ``exclude_self`` skips row ``q + self_offset`` for query
        ``q``.  Returns a :class:`Found` of lists."""

    def insert(self, rows, new, n_old):
        """Serve ``rows`` (all rows after the insertion; ``new`` the encoded rows added,
        the last ones from index ``n_old``)."""
        self.rows = rows
        self._forget()

    def _forget(self):
        """Drop what was derived from the rows (made again on use)."""
        self._crows = None

    depth = property(lambda self: 0, doc="Tree depth (0 without a tree).")
    n_nodes = property(lambda self: 0, doc="Tree nodes (0 without a tree).")
    nbytes = property(lambda self: 0, doc="Bytes held on top of the indexed rows.")

    def __getstate__(self):
        st = dict(self.__dict__)
        for key in ("_lock",) + self._transient:
            st.pop(key, None)
        return st

    def __setstate__(self, st):
        self.__dict__.update(st)
        self._lock = threading.RLock()
        self._forget()


def use_filter(n_queries, n_rows, method="auto", min_pairs=GEMM_MIN_PAIRS):
    """Whether a brute-force search of ``n_queries`` against ``n_rows`` rows tries the
    matrix-product filter: ``method`` "gemm", or "auto" with at least ``min_pairs`` pairs
    and ``GEMM_MIN_QUERIES`` queries ("direct": never)."""
    if method not in METHODS:
        raise ValueError("method must be 'auto', 'direct' or 'gemm', got %r" % (method,))
    return method == "gemm" or (method == "auto" and n_queries * n_rows >= min_pairs
                                and n_queries >= GEMM_MIN_QUERIES)


def brute_knn(plan, queries, R, cR, k, threads, *, exclude_self=False, ties=False,
              method="auto", cache=None, min_pairs=GEMM_MIN_PAIRS):
    """Brute-force k-NN of encoded ``queries`` against the rows ``R`` (``cR``: their
    kernel view): the matrix-product filter where ``method`` and the plan allow it
    (``cache``: its reference-side features of ``R``, kept by the caller), else the
    direct tile kernel.  Returns a :class:`Found` whose ``path`` says which ran."""
    from .._kernels import CRows, knn
    with _progress.phase("tables"):
        cQ = CRows(queries)
    evals = np.full(queries.n, R.n - (1 if exclude_self else 0), dtype=np.intp)
    if use_filter(queries.n, R.n, method, min_pairs):
        res = _gemm.knn(plan, queries, R, cQ, cR, k, threads, exclude_self, cache=cache,
                        ties=ties)
        if res is not None:
            return Found(res[0], res[1], evals, "filter", "the matrix-product filter (p = 2)")
        why = "the direct kernel (the matrix-product filter does not apply to this plan)"
    else:
        why = ("the direct kernel (asked for)" if method == "direct" else
               "the direct kernel (under %d pairs or %d queries: no matrix-product "
               "filter)" % (min_pairs, GEMM_MIN_QUERIES))
    with _progress.phase("kernel"):
        d, i = knn(plan.cplan, cQ, cR, k, threads, exclude_self=exclude_self, ties=ties)
    return Found(d, i, evals, "direct", why)


def brute_radius(plan, queries, R, cR, r, threads, *, exclude_self=False, self_offset=0,
                 method="auto", cache=None, min_pairs=GEMM_MIN_PAIRS):
    """Brute-force radius search of encoded ``queries`` against ``R`` (as
    :func:`brute_knn`; the filter applies to finite radii): a :class:`Found` of lists."""
    from .._kernels import CRows, radius
    cQ = CRows(queries)
    evals = np.full(queries.n, R.n, dtype=np.intp)
    if exclude_self:
        # query q skips reference row q + self_offset, where there is one
        own = np.arange(queries.n) + self_offset
        evals[(own >= 0) & (own < R.n)] -= 1
    if use_filter(queries.n, R.n, method, min_pairs):
        res = _gemm.radius(plan, queries, R, cQ, cR, r, threads, exclude_self, self_offset,
                           cache=cache)
        if res is not None:
            return Found(res[0], res[1], evals, "filter",
                         "the matrix-product filter (radius search)")
    dl, il = radius(plan.cplan, cQ, cR, r, threads, exclude_self, self_offset)
    return Found(dl, il, evals, "direct", "the direct kernel (radius search)")


@register
class BruteForce(Searcher):
    """Every pair, by the tile kernel, or for ``p = 2`` plans through the matrix-product
    filter (:mod:`hdist._search.gemm_filter`) once a search has ``min_pairs`` pairs and
    16 queries; the same answers either way.  ``method``: "auto", "direct" or "gemm"
    (:func:`use_filter`).  The filter's reference-side features of the rows are kept
    (``cache``) until the rows change."""

    name = "brute"
    label = "brute-force index"
    _transient = ("_crows", "cache")

    def __init__(self, plan, rows, *, leaf_size=LEAF_SIZE, crows=None, method="auto",
                 min_pairs=GEMM_MIN_PAIRS):
        super().__init__(plan, rows, leaf_size=leaf_size, crows=crows)
        use_filter(0, 0, method)
        self.method, self.min_pairs = method, int(min_pairs)
        self.cache = {}

    def knn(self, queries, k, threads, *, exclude_self=False, ties=False, method=None):
        return brute_knn(self.plan, queries, self.rows, self.crows(), k, threads,
                         exclude_self=exclude_self, ties=ties, cache=self.cache,
                         method=self.method if method is None else method,
                         min_pairs=self.min_pairs)

    def radius(self, queries, r, threads, *, exclude_self=False, self_offset=0,
               method=None):
        return brute_radius(self.plan, queries, self.rows, self.crows(), r, threads,
                            exclude_self=exclude_self, self_offset=self_offset,
                            cache=self.cache, method=self.method if method is None
                            else method, min_pairs=self.min_pairs)

    def _forget(self):
        super()._forget()
        self.cache = {}


class _Tree(Searcher):
    """A tree of :mod:`hdist._kernels.trees` over the rows: nodes with explicit children
    (so that rows can be inserted), the rows' permutation and per-row pivot distances,
    and the rows leaf by leaf, attribute-major, as the leaf scans read them (made on
    first use).  A tree whose depth grows past twice the balanced depth (and past that of
    its last full build) by insertions is rebuilt (Witten & Frank)."""

    _transient = ("_crows", "_leaf_rows")

    def __init__(self, plan, rows, *, leaf_size=LEAF_SIZE, crows=None):
        super().__init__(plan, rows, leaf_size=leaf_size, crows=crows)
        self.nodes = self.perm = self.rowdist = None
        self._depth = self.fresh_depth = 0
        self._leaf_rows = None

    def _unit(self):
        return 0

    def build(self, progress=None):
        from .._kernels import trees as _trees
        t0 = time.perf_counter()
        report = _progress.reporter(progress, self.rows.n, self.name.replace("_", "-"))
        self.nodes, self.perm, self.rowdist = _trees.build(self.name, self.plan.cplan,
                                                           self.crows(), self.leaf_size,
                                                           report)
        self.build_time_ = time.perf_counter() - t0
        self._depth = self.fresh_depth = int(self.nodes["depth"].max())
        self._leaf_rows = None

    def leaf_rows(self):
        """The rows leaf by leaf (``hdist._kernels.trees.leaf_major``, made once)."""
        from .._kernels import trees as _trees
        return built_once(self, "_leaf_rows", self._lock, lambda: _trees.leaf_major(
            self.plan.cplan, self.crows(), self.perm, self.nodes, self._unit()))

    def _args(self, queries):
        return (self.name, self.plan.cplan, self.query_crows(queries), self.crows(),
                self.leaf_rows(), self.nodes, self.perm, self.rowdist, self._depth)

    def _two_sided(self, queries):
        return None

    def _by_position(self, queries, exclude_self, self_offset):
        """Whether the kernel can skip row ``q`` for query ``q`` itself (the queries are
        as many as the rows, no offset)."""
        return exclude_self and self_offset == 0 and queries.n == self.rows.n

    def knn(self, queries, k, threads, *, exclude_self=False, ties=False):
        from .._kernels import trees as _trees
        with _progress.phase("tables"):
            args, two = self._args(queries), self._two_sided(queries)
        with _progress.phase("kernel"):
            d, i, cnt = _trees.knn(*args, k, threads, exclude_self, two, ties=ties)
        return Found(d, i, cnt, self.name, "")

    def radius(self, queries, r, threads, *, exclude_self=False, self_offset=0):
        from .._kernels import reduced_radius, trees as _trees
        own = self._by_position(queries, exclude_self, self_offset)
        dl, il, cnt = _trees.radius(*self._args(queries), r,
                                    reduced_radius(self.plan.cplan, r), threads, own,
                                    self._two_sided(queries))
        if exclude_self and not own:            # query q skips row q + self_offset
            keep = [i != self_offset + q for q, i in enumerate(il)]
            dl = [d[m] for d, m in zip(dl, keep)]
            il = [i[m] for i, m in zip(il, keep)]
        return Found(dl, il, cnt, self.name, "")

    def insert(self, rows, new, n_old):
        from .._kernels import trees as _trees
        self.rows = rows
        self._forget()
        self.nodes, self.perm, self.rowdist = _trees.insert(
            self.name, self.plan.cplan, self.crows(), self.nodes, self.perm, self.rowdist,
            n_old, self.leaf_size)
        self._depth = int(self.nodes["depth"].max())
        if self._depth > 2 * max(1, balanced_depth(rows.n, self.leaf_size)) and \
                self._depth > self.fresh_depth:
            self.build()

    def _forget(self):
        super()._forget()
        self._leaf_rows = None

    depth = property(lambda self: self._depth, doc="Depth of the tree.")
    n_nodes = property(lambda self: int(self.nodes["start"].shape[0]),
                       doc="Nodes of the tree.")

    @property
    def nbytes(self):
        """Bytes of the node arrays, the permutation, the per-row pivot distances and the
        copy of the rows in tree order."""
        data = sum(getattr(self.rows, k).nbytes for k in ("c", "cpen", "o", "t", "e"))
        return int(sum(a.nbytes for a in self.nodes.values()) + self.perm.nbytes
                   + self.rowdist.nbytes + data)


@register
class KDTree(_Tree):
    """A KD-tree: splits on the attribute of greatest spread and prunes with
    per-attribute lower bounds, valid for every Plan (any ``p``, weights, missing-value
    policy, table or embedded attribute); its leaves are scanned in blocks of
    ``KD_UNIT`` rows by batches of queries."""

    name = "kd_tree"
    label = "KD-tree"

    def _unit(self):
        from .._kernels import trees as _trees
        return _trees.KD_UNIT


@register
class BallTree(_Tree):
    """A ball tree with indexed rows as pivots, split by the two far points and pruned
    with the triangle inequality: offered only where the metric satisfies it over the
    indexed rows (:func:`hdist._search.triangle.ball_tree_refusal`)."""

    name = "ball_tree"
    label = "ball tree"

    @classmethod
    def refusal(cls, plan, rows, names=None):
        return ball_tree_refusal(plan, rows, names)

    def _two_sided(self, queries):
        return two_sided_rows(self.plan, queries)


@register
class InvertedLists(Searcher):
    """Inverted lists (:mod:`hdist._search.ivf`, docs/ivf.md): the rows partitioned
    around indexed rows chosen as centres; a query scans the lists of its ``n_probe``
    nearest centres (exact distances, approximate set).

    ``n_lists`` (default ``round(4 sqrt(n))``), ``n_probe`` (default: calibrated at
    build for ``target_recall``, 0.95 when not given) and ``random_state`` as for
    :class:`hdist.NeighborsIndex`; ``n_probe`` may be changed after the build."""

    name = "ivf"
    exact = False
    label = "inverted lists"

    def __init__(self, plan, rows, *, leaf_size=LEAF_SIZE, crows=None, n_lists=None,
                 n_probe=None, target_recall=None, random_state=0):
        super().__init__(plan, rows, leaf_size=leaf_size, crows=crows)
        _ivf.check_params(n_lists, n_probe, target_recall)
        self.n_lists_asked, self.n_probe_asked = n_lists, n_probe
        self.target_recall, self.random_state = target_recall, int(random_state)
        self.lists = None
        self.n_probe = None

    def nearest(self, rows, R, cR, k, threads, cache):
        """``(dist, ind)`` of the ``k`` nearest rows of ``R`` (``cR``: its kernel view)
        for encoded ``rows``, by brute force (``cache``: the filter's features of R)."""
        f = brute_knn(self.plan, rows, R, cR, k, threads, cache=cache)
        return f.dist, f.ind

    def build(self, progress=None):
        t0 = time.perf_counter()
        n = self.rows.n
        L = self.n_lists_asked if self.n_lists_asked is not None else _ivf.default_n_lists(n)
        steps = _ivf.PASSES + 2
        report = _progress.reporter(progress, steps, "ivf build", unit="steps")
        threads = effective_n_jobs(None)
        self.lists = _ivf.build(self, self.rows, L, threads, self.random_state, report)
        self.lists.derived(self.rows)            # the store
        if report is not None:
            report(steps, steps)
        if self.n_probe_asked is not None:
            self.n_probe = min(self.n_probe_asked, self.lists.n_lists)
        else:
            target = self.target_recall
            if target is None:
                target = _ivf.DEFAULT_TARGET_RECALL
            self.n_probe = _ivf.calibrate(self, target, threads, self.random_state)
        self.build_time_ = time.perf_counter() - t0

    def _found(self, d, i, scanned, probed, n_probe):
        """A query computes its distance to every centre, then to the rows it scans."""
        extra = dict(n_probe=int(n_probe),
                     lists_probed=float(np.mean(probed)) if probed.size else 0.0,
                     rows_scanned=float(np.mean(scanned)) if scanned.size else 0.0,
                     lists_probed_per_query=probed, rows_scanned_per_query=scanned)
        return Found(d, i, scanned + self.lists.n_lists, "ivf", "", extra)

    def knn(self, queries, k, threads, *, exclude_self=False, ties=False, self_ids=None,
            n_probe=None):
        """As :meth:`Searcher.knn`; ``self_ids``: the indexed row each query skips
        (instead of ``exclude_self``); ``n_probe``: lists probed (default ``n_probe``)."""
        p = self.n_probe if n_probe is None else int(n_probe)
        if exclude_self:
            self_ids = np.arange(queries.n, dtype=np.intp)
        with _progress.phase("kernel"):
            d, i, scanned, probed = _ivf.knn(self, queries, k, p, self_ids, threads, ties)
        return self._found(d, i, scanned, probed, p)

    def radius(self, queries, r, threads, *, exclude_self=False, self_offset=0):
        self_ids = np.arange(queries.n, dtype=np.intp) + self_offset if exclude_self \
            else None
        dl, il, scanned, probed = _ivf.radius(self, queries, r, self.n_probe, self_ids,
                                              threads)
        return self._found(dl, il, scanned, probed, self.n_probe)

    def exact_knn(self, queries, k, threads, self_ids=None):
        """Exact k-NN of ``queries`` (every list scanned: brute force bit for bit),
        ``(dist, ind)``; ``self_ids`` as for :meth:`knn`."""
        return _ivf.exact_excluding(self, queries, self_ids, k, threads)

    def insert(self, rows, new, n_old):
        super().insert(rows, new, n_old)
        self.lists = _ivf.insert(self, self.lists, rows, new, effective_n_jobs(None))

    def _forget(self):
        super()._forget()
        if self.__dict__.get("lists") is not None:
            self.lists.drop()           # the stored copy of the rows (made again on use)

