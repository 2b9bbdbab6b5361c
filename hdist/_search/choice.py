"""Which exact search answers a k-NN or radius query over a fitted plan, and why.

One rule ("auto", :func:`auto_choice`) serves :class:`hdist.NeighborsIndex` and
:meth:`hdist.Metric.kneighbors` / :meth:`~hdist.Metric.radius_neighbors`, so both run
the same algorithm on the same rows; every algorithm returns the same answer
(docs/metrics.md, section 8), only the time differs.  :class:`KDTree` is the KD-tree a
fitted Metric builds over its training rows when the rule picks it.
"""
from __future__ import annotations

import time

import numpy as np

#: the "auto" rule, fitted to measurements on a 2-core machine (benchmarks/bench_trees.py,
#: cases C and D): brute force below this many indexed rows ...
AUTO_MIN_ROWS = 2048
#: ... a KD-tree without further ado up to this many search dimensions ...
AUTO_SURE_DIMS = 4
#: ... and otherwise a KD-tree when a pilot of this many queries evaluates at most the
#: break-even fraction of the rows.  A KD-tree k-NN query scans blocks of up to 128 rows
#: (``hdist._kernels.trees.KD_UNIT``) in batches of queries that share them: ~6-8 ns an evaluation
#: with p = 1 (node bounds included, one thread, 2·10^5 rows of 16 attributes; ~17 ns for
#: HVDM, whose table attributes' bounds cost more), brute force ~3 ns a pair in the direct
#: tile kernel and ~1 ns with the matrix-product filter (p = 2)
AUTO_PILOT_QUERIES = 16
AUTO_BREAK_EVEN = {"direct": 0.3, "filter": 0.08}
#: ... but the break-even moves with the shape (how costly a node bound and a filtered
#: pair are): a pilot between these fractions is settled by timing the pilot queries on
#: the KD-tree and by brute force, when the caller can (``race``).  The upper one is lower
#: against the filter, whose fixed cost per call makes 16 queries look slow (at 43 % of
#: 2·10^4 rows evaluated the race picked the tree, 4x slower on 300 queries)
AUTO_SURE_TREE = 0.03
AUTO_SURE_BRUTE = {"direct": 0.6, "filter": 0.25}
#: rows per leaf of the trees the rule builds
LEAF_SIZE = 32


def search_dims(plan):
    """Dimensions a KD-tree has to cut: attributes of positive weight (a nominal one
    counts half: it is resolved after a few splits of its value set), an embedded
    attribute counting one per vector component."""
    w = plan.weights
    dims = float(np.count_nonzero(w[plan.c_attr] > 0))
    dims += 0.5 * (np.count_nonzero(w[plan.o_attr] > 0) + np.count_nonzero(w[plan.t_attr] > 0))
    for k, a in enumerate(plan.e_attr):
        if w[a] > 0:
            dims += int(plan.e_off[k + 1] - plan.e_off[k])
    return dims


def brute_path(plan):
    """The brute force's kernel for ``plan``: "filter" (matrix-product candidate filter,
    p = 2 embeddable terms) or "direct" (the tile kernel alone)."""
    from . import gemm_filter as _gemm
    return "filter" if _gemm.eligible(plan) else "direct"


def auto_choice(plan, n_rows, pilot=None, race=None):
    """``(algorithm, reason)`` that ``"auto"`` picks for ``n_rows`` indexed rows:

    - fewer than ``AUTO_MIN_ROWS`` rows: brute force (a query costs microseconds either
      way and nothing needs building);
    - at most ``AUTO_SURE_DIMS`` search dimensions (:func:`search_dims`): KD-tree (10 to
      1000 times faster than brute force in every such measurement);
    - otherwise ``pilot()`` returns the mean number of distance evaluations of
      ``AUTO_PILOT_QUERIES`` KD-tree queries (indexed rows), and the KD-tree is kept when
      that is at most ``AUTO_BREAK_EVEN`` of the rows (by the brute force's kernel,
      :func:`brute_path`), else brute force.  How well bounds prune depends on the data's
      structure more than on its dimension (class-structured data with 12 attributes
      pruned 99.8 %, uniform data with 16 attributes 2 %, the census-like job with 40
      attributes under 1 %), which a rule on the dimension alone cannot see;
    - where the pilot's fraction lies between ``AUTO_SURE_TREE`` and ``AUTO_SURE_BRUTE``
      (by the brute force's kernel)
      and ``race()`` is given, it returns the seconds the pilot queries take on the
      KD-tree and by brute force (one thread, caches warm), and the faster one is kept.

    The ball tree is never chosen: it was slower than the KD-tree in almost every measured
    case (its bounds cost a full distance to a pivot) and is not exact for every Plan.
    Without ``pilot`` the ambiguous case resolves to the KD-tree."""
    if n_rows < AUTO_MIN_ROWS:
        return "brute", "%d rows < %d: brute force needs no build" % (n_rows, AUTO_MIN_ROWS)
    dims = search_dims(plan)
    if dims <= AUTO_SURE_DIMS:
        return "kd_tree", "%g search dimensions <= %d: the KD-tree prunes well" % (
            dims, AUTO_SURE_DIMS)
    if pilot is None:
        return "kd_tree", "no pilot: the KD-tree by default"
    path = brute_path(plan)
    limit = AUTO_BREAK_EVEN[path]
    frac = pilot() / n_rows
    if race is not None and AUTO_SURE_TREE < frac <= AUTO_SURE_BRUTE[path]:
        t_tree, t_brute = race()
        pick = "kd_tree" if t_tree <= t_brute else "brute"
        return pick, ("a KD-tree pilot of %d queries evaluated %.3g %% of the rows; timed, "
                      "they took %.3g ms on the KD-tree and %.3g ms by brute force (%s)"
                      % (AUTO_PILOT_QUERIES, 100 * frac, 1e3 * t_tree, 1e3 * t_brute,
                         brute_path(plan)))
    pick = "kd_tree" if frac <= limit else "brute"
    against = {"filter": "brute force with the matrix-product filter",
               "direct": "brute force with the direct kernel"}[path]
    return pick, ("a KD-tree pilot of %d queries evaluated %.3g %% of the rows (%s "
                  "%.3g %%, the break-even against %s)"
                  % (AUTO_PILOT_QUERIES, 100 * frac, "<=" if pick == "kd_tree" else ">",
                     100 * limit, against))


def auto_algorithm(plan, n_rows, pilot=None, race=None):
    """The algorithm of :func:`auto_choice`."""
    return auto_choice(plan, n_rows, pilot, race)[0]


def race(tree_query, brute_query):
    """Seconds of ``tree_query()`` and ``brute_query()``, each the better of two runs (the
    first also fills caches both would fill once)."""
    times = []
    for fn in (tree_query, brute_query):
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        times.append(best)
    return tuple(times)


def pilot_queries(n_rows):
    """Positions of the indexed rows the pilot queries with."""
    return np.linspace(0, n_rows - 1, AUTO_PILOT_QUERIES).astype(np.intp)


class KDTree:
    """A KD-tree (:mod:`hdist._kernels.trees`) over encoded rows, and what its queries read.

    ``plan``: a fitted Plan; ``rows`` / ``crows``: the indexed rows and their kernel
    view.  Built once; :meth:`knn` and :meth:`radius` return exactly the brute force's
    answers, with the number of distances each query computed."""

    def __init__(self, plan, rows, crows, leaf_size=LEAF_SIZE):
        from .._kernels import trees as _trees
        t0 = time.perf_counter()
        self.plan, self.rows, self.crows = plan, rows, crows
        self.nodes, self.perm, self.rowdist = _trees.build("kd_tree", plan.cplan, crows,
                                                           leaf_size)
        self.depth = int(self.nodes["depth"].max())
        self.leaf_rows = _trees.leaf_major(plan.cplan, crows, self.perm, self.nodes,
                                           _trees.KD_UNIT)
        self.build_time = time.perf_counter() - t0

    def _args(self, cq):
        return ("kd_tree", self.plan.cplan, cq, self.crows, self.leaf_rows, self.nodes,
                self.perm, self.rowdist, self.depth)

    def knn(self, cq, k, threads, exclude_self=False, ties=False):
        """``(dist, ind, n_evaluations)`` of the query rows ``cq`` (a CRows); ``ties``:
        the lists hold every row tied with the k-th too (``hdist._kernels.trees.knn``)."""
        from .._kernels import trees as _trees
        return _trees.knn(*self._args(cq), k, threads, exclude_self, None, ties=ties)

    def radius(self, cq, r, threads, exclude_self=False):
        """``(dists, inds, n_evaluations)``: rows within true distance ``r``."""
        from .._kernels import trees as _trees
        from .._kernels import reduced_radius
        return _trees.radius(*self._args(cq), r, reduced_radius(self.plan.cplan, r), threads,
                             exclude_self, None)

    def pilot(self):
        """Mean distance evaluations of the pilot's queries (``auto_choice``)."""
        from .._kernels import CRows
        n = self.rows.n
        q = self.rows.take(pilot_queries(n))
        return float(np.mean(self.knn(CRows(q), min(5, n), 1)[2]))

    def race(self, brute):
        """``race`` of the pilot's queries on this tree and by ``brute(rows, k)``."""
        from .._kernels import CRows
        n = self.rows.n
        q = self.rows.take(pilot_queries(n))
        cq = CRows(q)
        return race(lambda: self.knn(cq, min(5, n), 1), lambda: brute(q, min(5, n)))
