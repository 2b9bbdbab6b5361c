"""Which exact search answers a k-NN or radius query over a fitted plan, and why.

One rule ("auto", :func:`auto_choice`) serves :class:`hdist.NeighborsIndex` and
:meth:`hdist.Metric.kneighbors` / :meth:`~hdist.Metric.radius_neighbors`, so both run
the same algorithm on the same rows; every algorithm returns the same answer
(docs/metrics.md, section 8), only the time differs.  The pilot (:class:`Probe`) measures
with the KD-tree searcher (:class:`hdist._search.searchers.KDTree`) the index would
build.
"""
from __future__ import annotations

import math
import time

import numpy as np

from .searchers import LEAF_SIZE, KDTree

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
AUTO_PILOT_QUERIES = 32
AUTO_BREAK_EVEN = {"direct": 0.3, "filter": 0.08}
#: ... but the break-even moves with the shape (how costly a node bound and a filtered
#: pair are): a pilot between these fractions is settled by timing the pilot queries on
#: the KD-tree and by brute force, when the caller can (``race``).  The upper one is lower
#: against the filter, whose fixed cost per call makes a few queries look slow (at 43 % of
#: 2·10^4 rows evaluated the race picked the tree, 4x slower on 300 queries)
AUTO_SURE_TREE = 0.03
AUTO_SURE_BRUTE = {"direct": 0.6, "filter": 0.25}
#: The pilot's first KD-trees index a quarter of this many rows, then this many, drawn
#: at random (seed 0) from the indexed ones (all of them up to this many): the
#: evaluations of the pilot queries on the two trees give their growth with the number
#: of rows (``e ~ n^a``, ``0 <= a <= 1``), which extrapolates them to all rows
#: (:class:`Probe`).  Building them costs 15-30 ms, where the whole tree over 3·10^4
#: rows of the census-like job cost 100 ms and over 2·10^5 rows 1.2 s (2 shared cores),
#: and its pilot decided for brute force anyway: the whole tree is built once chosen
AUTO_PILOT_ROWS = 8192
#: ... the samples growing fourfold while the extrapolated fraction is between
#: ``AUTO_SURE_TREE`` and ``AUTO_SURE_BRUTE`` and still falls (``a`` below this), up to
#: this many rows (all rows when they are less than twice the next sample)
AUTO_FLAT = 0.95
AUTO_PILOT_MAX_ROWS = 1 << 15
#: Metric.kneighbors / radius_neighbors answer by brute force, without deciding, until
#: their calls have searched this many (query, row) pairs in all (0.1-0.4 s of brute
#: force on 2 cores): the pilot (20-40 ms there, on 3·10^4 or 2·10^5 rows of the
#: census-like job) then costs well under half of what the searches before it cost
AUTO_DECIDE_PAIRS = 1 << 27
#: the k of the pilot queries when the caller's k is not known (at fit)
AUTO_PILOT_K = 5
#: a k-NN search with k above this fraction of the indexed rows is brute force: a tree
#: must then reach most leaves of its k-th distance, so it computes nearly every pair
#: and pays its bounds and its sorted list of k on top.  400 queries on one thread
#: (2-core machine), KD-tree / brute force time at k = n/16, n/8, n/4, n: 4 000 rows of
#: 3 normal attributes 0.92, 1.6, 2.9, 10.5; 16 000 rows 2.2, 3.9, 10.4, 50; 16 000
#: rows of 8 attributes 6.0, 5.3, 7.5, 82.  Below it the pilot measures at the k asked
#: (it picked brute force at k = 250 .. 2 000 of those 16 000 rows)
AUTO_MAX_K_FRACTION = 0.125


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


def needs_pilot(plan, n_rows):
    """Whether :func:`auto_choice` runs its pilot for ``n_rows`` rows of ``plan``."""
    return n_rows >= AUTO_MIN_ROWS and search_dims(plan) > AUTO_SURE_DIMS


def auto_choice(plan, n_rows, pilot=None, race=None, k=None):
    """``(algorithm, reason)`` that ``"auto"`` picks for ``n_rows`` indexed rows and
    k-NN queries of ``k`` neighbors (None: not known, ``AUTO_PILOT_K``):

    - fewer than ``AUTO_MIN_ROWS`` rows: brute force (a query costs microseconds either
      way and nothing needs building);
    - ``k`` above ``AUTO_MAX_K_FRACTION`` of the rows: brute force (a tree then computes
      nearly every pair, and its bounds on top);
    - at most ``AUTO_SURE_DIMS`` search dimensions (:func:`search_dims`) and ``k`` at most
      ``AUTO_PILOT_K``: KD-tree (10 to 1000 times faster than brute force in every such
      measurement);
    - otherwise ``pilot()`` returns the mean number of distance evaluations of
      ``AUTO_PILOT_QUERIES`` KD-tree queries (indexed rows) over all ``n_rows`` rows,
      measured on a tree over a sample of them and extrapolated (:class:`Probe`: no
      tree over all rows is built to decide), and the KD-tree is kept when
      that is at most ``AUTO_BREAK_EVEN`` of the rows (by the brute force's kernel,
      :func:`brute_path`), else brute force.  How well bounds prune depends on the data's
      structure more than on its dimension (class-structured data with 12 attributes
      pruned 99.8 %, uniform data with 16 attributes 2 %, the census-like job with 40
      attributes under 1 %), which a rule on the dimension alone cannot see;
    - where the pilot's fraction lies between ``AUTO_SURE_TREE`` and ``AUTO_SURE_BRUTE``
      (by the brute force's kernel)
      and ``race()`` is given, it returns the seconds the pilot queries take on the
      KD-tree (extrapolated as the evaluations are) and by brute force (one thread,
      caches warm), and the faster one is kept.

    The ball tree is never chosen: it was slower than the KD-tree in almost every measured
    case (its bounds cost a full distance to a pivot) and is not exact for every Plan.
    ``pilot`` and ``race`` measure with the ``k`` asked.  Without ``pilot`` the ambiguous
    case resolves to the KD-tree."""
    if n_rows < AUTO_MIN_ROWS:
        return "brute", "%d rows < %d: brute force needs no build" % (n_rows, AUTO_MIN_ROWS)
    if k is not None and k > AUTO_MAX_K_FRACTION * n_rows:
        return "brute", ("k = %d > %g of the %d rows: a tree would compute nearly every "
                         "pair" % (k, AUTO_MAX_K_FRACTION, n_rows))
    dims = search_dims(plan)
    if dims <= AUTO_SURE_DIMS and (k is None or k <= AUTO_PILOT_K):
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
        return pick, ("a KD-tree pilot of %d queries evaluates %.3g %% of the rows; timed, "
                      "they took %.3g ms on the KD-tree and %.3g ms by brute force (%s)"
                      % (AUTO_PILOT_QUERIES, 100 * frac, 1e3 * t_tree, 1e3 * t_brute,
                         brute_path(plan)))
    pick = "kd_tree" if frac <= limit else "brute"
    against = {"filter": "brute force with the matrix-product filter",
               "direct": "brute force with the direct kernel"}[path]
    return pick, ("a KD-tree pilot of %d queries evaluates %.3g %% of the rows (%s "
                  "%.3g %%, the break-even against %s)"
                  % (AUTO_PILOT_QUERIES, 100 * frac, "<=" if pick == "kd_tree" else ">",
                     100 * limit, against))


def k_rule(plan, rows, crows, k, brute, cache):
    """``(algorithm, reason)`` of ``"auto"`` for a k-NN search of ``k`` neighbors over the
    indexed ``rows`` once the rule picked a KD-tree with its pilot's k
    (``AUTO_PILOT_K``), or None where that choice stands (``k`` no larger).  A larger k
    is decided by :func:`auto_choice` at that k: brute force above
    ``AUTO_MAX_K_FRACTION`` of the rows, else a pilot (and race) of queries of that k,
    scaled to a power of two and kept in ``cache`` (a dict the caller keeps with the
    rows).  ``brute(rows, k)``: brute force over all rows (the race's)."""
    k = int(k)
    if k <= AUTO_PILOT_K:
        return None
    n = rows.n
    if k > AUTO_MAX_K_FRACTION * n:
        return auto_choice(plan, n, k=k)
    b = min(n, 1 << (k - 1).bit_length())
    if b not in cache:
        probe = Probe(plan, rows, crows, k=b)
        cache[b] = auto_choice(plan, n, probe.evaluations,
                               lambda: probe.race(brute), k=k)
    return cache[b]


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


class Probe:
    """The ``"auto"`` rule's pilot over the indexed ``rows`` (``crows``: their kernel view,
    or None): KD-trees over growing random samples of them (seed 0), a tree over all
    rows only when they are less than twice the next sample.

    The pilot queries are rows of the first sample (``AUTO_PILOT_ROWS / 4`` rows), so of
    every later one.  A sample four times larger is drawn while the fraction the
    evaluations extrapolate to (:meth:`evaluations`) lies between ``AUTO_SURE_TREE`` and
    ``AUTO_SURE_BRUTE`` and still falls with the rows (``a < AUTO_FLAT``), up to
    ``AUTO_PILOT_MAX_ROWS`` rows: pruning can set in late (uniform values of 12
    attributes: 42 % of the rows extrapolated from 2·10^3 and 8·10^3 rows, 6.5 %
    evaluated by the tree over 2·10^5).
    ``pilot_rows`` counts the rows the pilot's trees index, ``tree`` is the last one
    (over all rows when ``full``)."""

    def __init__(self, plan, rows, crows=None, k=None):
        n = rows.n
        self.plan, self.rows, self.crows = plan, rows, crows
        self.n, self.k = n, min(AUTO_PILOT_K if k is None else int(k), n)
        self.order = np.random.default_rng(0).permutation(n) if n > AUTO_PILOT_ROWS \
            else None
        first = n if self.order is None else AUTO_PILOT_ROWS // 4
        self.tree = self._tree(first)
        q = pilot_queries(first)
        self.queries = rows.take(q if self.order is None else np.sort(self.order[:first])[q])
        self._scale = None

    def _tree(self, size):
        """A KD-tree over ``size`` rows: all of them, or the first ``size`` of ``order``."""
        self.full = size >= self.n
        if self.full:
            sub, crows = self.rows, self.crows
        else:
            sub, crows = self.rows.take(np.sort(self.order[:size])), None
        self.pilot_rows = getattr(self, "pilot_rows", 0) + sub.n
        tree = KDTree(self.plan, sub, leaf_size=LEAF_SIZE, crows=crows)
        tree.build()
        return tree

    def _k_of(self, tree):
        """The k of the pilot queries on ``tree``: the k asked, scaled to the sample's
        rows above ``AUTO_PILOT_K`` (the same share of the rows, so about the same k-th
        distance)."""
        m = tree.rows.n
        if self.k <= AUTO_PILOT_K:
            return min(self.k, m)
        return min(m, max(AUTO_PILOT_K, math.ceil(self.k * m / self.n)))

    def _mean(self, tree):
        return float(np.mean(tree.knn(self.queries, self._k_of(tree), 1).evaluations))

    def evaluations(self):
        """Mean distance evaluations of the pilot queries on a KD-tree over all rows
        (measured when :attr:`tree` holds them all, else extrapolated from the last two
        samples: ``e ~ rows^a``, ``a`` clipped to [0, 1], at least as many evaluations
        and at most the same fraction as the rows grow)."""
        e = self._mean(self.tree)
        self._scale = 1.0
        while not self.full:
            s0, e0 = self.tree.rows.n, e
            size = 4 * s0
            self.tree = self._tree(size if 2 * size < self.n else self.n)
            e = self._mean(self.tree)
            if self.full:
                return e
            a = math.log(max(e, 1.0) / max(e0, 1.0)) / math.log(self.tree.rows.n / s0)
            a = min(1.0, max(0.0, a))
            self._scale = (self.n / self.tree.rows.n) ** a
            pred = min(float(self.n), e * self._scale)
            frac = pred / self.n
            if frac <= AUTO_SURE_TREE or frac > AUTO_SURE_BRUTE[brute_path(self.plan)] \
                    or a >= AUTO_FLAT or 4 * self.tree.rows.n > AUTO_PILOT_MAX_ROWS:
                return pred
        return e

    def race(self, brute):
        """``race`` of the pilot queries on the last pilot tree, scaled as
        :meth:`evaluations` scales their evaluations, and by ``brute(rows, k)`` over all
        rows."""
        if self._scale is None:
            self.evaluations()
        t_tree, t_brute = race(lambda: self.tree.knn(self.queries, self._k_of(self.tree), 1),
                               lambda: brute(self.queries, self.k))
        return t_tree * self._scale, t_brute
