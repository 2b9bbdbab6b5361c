"""Approximate k-NN by inverted lists (IVF) around real rows as centres, for any Plan.

The indexed rows are partitioned into lists, one per centre; a centre is an indexed row
(a medoid of a sample), so the partition needs nothing but the metric itself: every
preset, ``p``, missing-value policy, non-metric distance and class-posterior metric works
without an embedding.  A query computes its distances to all centres (brute force),
probes the lists of its ``n_probe`` nearest centres and scans their rows exactly with the
tile kernel (``hdist._kernels.knn_lists``).  Every distance returned is the exact
distance of the row returned, in the usual (distance, index) order; only *which* rows are
found is approximate.  Probing every list gives what brute force gives, bit for bit.

Building (:func:`build`):

1. a sample of about ``SAMPLE_PER_LIST`` rows per list (all rows when fewer), and
   ``n_lists`` distinct sample rows drawn at random as the first centres;
2. ``PASSES`` alternating passes: each sample row joins its nearest centre (brute-force
   1-NN); each list's centre becomes the member with the smallest summed distance to the
   members (both on at most ``MEDOID_SAMPLE`` members drawn at random: the k-medoids
   "alternate" step of Park & Jun, on samples);
3. every indexed row joins its nearest centre (one brute-force 1-NN, in parallel); a
   centre left with no row (duplicate rows) is dropped;
4. the rows are stored list after list, attribute-major (``store``), as the tile kernel
   reads a contiguous block of rows.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

#: sample rows drawn per list for the medoid passes (at most ``SAMPLE_CAP`` in all)
SAMPLE_PER_LIST = 32
SAMPLE_CAP = 200_000
#: alternating passes over the sample
PASSES = 2
#: members (and candidates) considered when a list's medoid is chosen
MEDOID_SAMPLE = 32
#: rows of the stored copy made at a time (bounds the temporary copy)
STORE_CHUNK = 1 << 16
#: rows assigned to their nearest centre at a time
ASSIGN_CHUNK = 1 << 17
#: calibration queries drawn from the indexed rows for ``target_recall``
CALIBRATION_ROWS = 300
#: k of the calibration (recall@10)
CALIBRATION_K = 10


def default_n_lists(n):
    """``round(4 sqrt(n))`` lists, at least 1 and at most ``n``."""
    return int(max(1, min(n, round(4.0 * math.sqrt(n)))))


#: the recall@10 that ``n_probe`` is calibrated to when neither ``n_probe`` nor
#: ``target_recall`` is given (docs/ivf.md: no fixed share of the lists serves both
#: clustered and unstructured data)
DEFAULT_TARGET_RECALL = 0.95


def check_params(n_lists, n_probe, target_recall):
    """Validate the constructor's IVF parameters (types and ranges that do not depend on
    the data)."""
    for name, v in (("n_lists", n_lists), ("n_probe", n_probe)):
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError("%s must be an int or None, got %r" % (name, v))
        if v < 1:
            raise ValueError("%s must be >= 1, got %d" % (name, v))
    if n_lists is not None and n_probe is not None and n_probe > n_lists:
        raise ValueError("n_probe = %d is larger than n_lists = %d" % (n_probe, n_lists))
    if target_recall is not None:
        if isinstance(target_recall, bool) or not isinstance(target_recall, numbers.Real):
            raise TypeError("target_recall must be a float in (0, 1] or None, got %r"
                            % (target_recall,))
        if not 0.0 < float(target_recall) <= 1.0:
            raise ValueError("target_recall must be in (0, 1], got %r" % (target_recall,))
        if n_probe is not None:
            raise ValueError("give n_probe or target_recall, not both")


def make_store(rows, order):
    """The rows ``order`` of ``rows`` attribute-major: a dict of ``[m, len(order)]``
    arrays ``c``, ``cpen``, ``o``, ``t``, ``e`` (a 1-element array for an empty block),
    as ``hdist._kernels.knn_lists`` reads them.  Copied in chunks of ``STORE_CHUNK``
    rows, so that the temporary copy stays small."""
    n = len(order)
    store = {}
    for name, dtype in (("c", np.float64), ("cpen", np.float64), ("o", np.intc),
                        ("t", np.intc), ("e", np.float64)):
        a = getattr(rows, name)
        if a.ndim == 2 and a.size:
            out = np.empty((a.shape[1], n), dtype=dtype)
            for s in range(0, n, STORE_CHUNK):
                out[:, s:s + STORE_CHUNK] = a[order[s:s + STORE_CHUNK]].T
        else:
            out = np.zeros(1, dtype=dtype)
        store[name] = out
    return store


class Lists:
    """The inverted lists of an index: centres (indices of indexed rows) and the list of
    every indexed row; the stored copy is made on first use (``store``) and not
    pickled."""

    def __init__(self, centres, list_of):
        self.centres = np.asarray(centres, dtype=np.intp)
        self.list_of = np.asarray(list_of, dtype=np.int32)
        self._derived = None

    @property
    def n_lists(self):
        return int(self.centres.shape[0])

    def sizes(self):
        return np.bincount(self.list_of, minlength=self.n_lists).astype(np.intp)

    def layout(self):
        """``(offsets, ids)``: list l holds stored rows ``offsets[l] .. offsets[l + 1]``,
        which are the indexed rows ``ids[...]`` in index order."""
        ids = np.argsort(self.list_of, kind="stable").astype(np.intp)
        offsets = np.zeros(self.n_lists + 1, dtype=np.intp)
        np.cumsum(self.sizes(), out=offsets[1:])
        return offsets, ids

    def derived(self, rows):
        """``(offsets, ids, store, centre_rows, centre_crows, cache)`` of the indexed
        ``rows``, made once."""
        if self._derived is None:
            from .._kernels import CRows
            offsets, ids = self.layout()
            store = make_store(rows, ids)
            crow = rows.take(self.centres)
            self._derived = (offsets, ids, store, crow, CRows(crow), {})
        return self._derived

    def drop(self):
        self._derived = None

    def __getstate__(self):
        return {"centres": self.centres, "list_of": self.list_of}

    def __setstate__(self, st):
        self.centres = st["centres"]
        self.list_of = st["list_of"]
        self._derived = None


def _nearest_centre(searcher, rows, crow, threads):
    """Each row's nearest centre (brute-force 1-NN, by blocks of ``ASSIGN_CHUNK`` rows
    so that the search's temporaries stay small)."""
    from .._kernels import CRows
    ccrow = CRows(crow)
    cache = {}
    lab = np.empty(rows.n, dtype=np.intp)
    for a in range(0, rows.n, ASSIGN_CHUNK):
        part = rows.block(a, min(rows.n, a + ASSIGN_CHUNK))
        lab[a:a + part.n] = searcher.nearest(part, crow, ccrow, 1, threads, cache)[1][:, 0]
    return lab


def build(searcher, rows, n_lists, threads, seed, report=None):
    """Choose centres and assign every row of ``rows`` (encoded, ``n >= n_lists``):
    returns a :class:`Lists`.  ``searcher``: the inverted lists' searcher
    (:class:`hdist._search.searchers.InvertedLists`: its ``plan`` and its brute-force
    ``nearest``).  ``report(done, total)``: progress in steps (each medoid pass, then the
    assignment of all rows, then the store)."""
    from .._kernels import CRows, pairwise
    n = rows.n
    plan = searcher.plan.cplan
    rng = np.random.default_rng(seed)
    total = PASSES + 2
    m = min(n, max(n_lists, min(SAMPLE_CAP, SAMPLE_PER_LIST * n_lists)))
    sample = np.sort(rng.choice(n, size=m, replace=False)) if m < n else np.arange(n)
    srows = rows.take(sample)
    centres = np.sort(rng.choice(m, size=n_lists, replace=False))   # positions in sample
    for step in range(PASSES):
        lab = _nearest_centre(searcher, srows, srows.take(centres), threads)
        members = np.argsort(lab, kind="stable")
        bounds = np.searchsorted(lab[members], np.arange(n_lists + 1))
        new = centres.copy()
        for lst in range(n_lists):
            mem = members[bounds[lst]:bounds[lst + 1]]
            if mem.shape[0] <= 1:
                continue
            if mem.shape[0] > MEDOID_SAMPLE:
                mem = np.sort(rng.choice(mem, size=MEDOID_SAMPLE, replace=False))
            cand = np.union1d(mem, centres[lst:lst + 1])
            out = np.empty((cand.shape[0], mem.shape[0]))
            pairwise(plan, CRows(srows.take(cand)), CRows(srows.take(mem)), out, 1)
            cost = out.sum(axis=1)
            # the current centre stays unless a member does strictly better
            cur = int(np.searchsorted(cand, centres[lst]))
            best = int(np.argmin(cost))
            if cost[best] < cost[cur]:
                new[lst] = cand[best]
        centres = np.unique(new)        # two lists may pick the same row: one survives
        n_lists = centres.shape[0]
        if report is not None:
            report(step + 1, total)
    del srows
    centres = sample[centres]
    lab = _nearest_centre(searcher, rows, rows.take(centres), threads)
    used = np.bincount(lab, minlength=centres.shape[0]) > 0
    if not used.all():          # a centre that lost even itself (a duplicate row)
        remap = np.cumsum(used) - 1
        centres = centres[used]
        lab = remap[lab]
    if report is not None:
        report(PASSES + 1, total)
    return Lists(centres, lab)


def insert(searcher, lists, rows, new, threads):
    """The lists after ``new`` (encoded, the last rows of ``rows``) joined them: each new
    row joins the list of its nearest centre.  The centres stay; the stored copy is made
    again on next use.  Lists drift from a balanced partition as rows are added;
    fitting again re-balances them."""
    lab = _nearest_centre(searcher, new, rows.take(lists.centres), threads)
    return Lists(lists.centres, np.concatenate([lists.list_of, lab.astype(np.int32)]))


def probes_from_order(order, sizes, n_probe, need):
    """Probe matrix ``[n_q, w]`` (``-1`` padded): each query's first ``n_probe`` lists of
    ``order`` (its centres nearest first), widened, for a query whose lists hold fewer
    than ``need`` rows, to the first lists of ``order`` that hold ``need`` rows (``order``
    must then list every centre)."""
    nq = order.shape[0]
    held = np.cumsum(sizes[order], axis=1)
    base = min(n_probe, order.shape[1])
    count = np.full(nq, base, dtype=np.intp)
    short = held[:, base - 1] < need
    if short.any():
        count[short] = np.argmax(held[short] >= need, axis=1) + 1
    w = int(count.max()) if nq else base
    probes = np.full((nq, w), -1, dtype=np.intp)
    cols = np.arange(w)
    keep = cols[None, :] < count[:, None]
    probes[keep] = order[:, :w][keep]
    return probes, count


def probes(searcher, rows, n_probe, need, threads):
    """The probe matrix of encoded query ``rows``: their ``n_probe`` nearest centres among
    the lists of ``searcher`` (``lists``, over its indexed ``rows``), widened where those
    lists hold fewer than ``need`` rows."""
    lists = searcher.lists
    offsets, ids, store, crow, ccrows, cache = lists.derived(searcher.rows)
    L = lists.n_lists
    sizes = np.diff(offsets)
    n_probe = min(n_probe, L)
    if rows.n == 0:
        return np.zeros((0, n_probe), dtype=np.intp), np.zeros(0, dtype=np.intp)
    _, order = searcher.nearest(rows, crow, ccrows, n_probe, threads, cache)
    short = sizes[order].sum(axis=1) < need
    if not short.any():
        return np.ascontiguousarray(order, dtype=np.intp), np.full(rows.n, n_probe,
                                                                     dtype=np.intp)
    # the few queries whose lists are too small see every centre, nearest first
    idx = np.flatnonzero(short)
    _, full = searcher.nearest(rows.take(idx), crow, ccrows, L, threads, cache)
    pr_s, cnt_s = probes_from_order(full, sizes, n_probe, need)
    w = max(n_probe, pr_s.shape[1])
    out = np.full((rows.n, w), -1, dtype=np.intp)
    out[:, :n_probe] = order
    out[idx] = -1
    out[idx, :pr_s.shape[1]] = pr_s
    count = np.full(rows.n, n_probe, dtype=np.intp)
    count[idx] = cnt_s
    return out, count


def knn(searcher, rows, k, n_probe, self_ids, threads, ties=False):
    """``(dist, ind, scanned, probed)`` of encoded query ``rows``: the k nearest rows
    among their probed lists (``self_ids``: an indexed row each query skips, or None)."""
    from .._kernels import CRows, knn_lists
    offsets, ids, store, _, _, _ = searcher.lists.derived(searcher.rows)
    need = k + (1 if self_ids is not None else 0)
    pr, count = probes(searcher, rows, n_probe, need, threads)
    d, i, scanned = knn_lists(searcher.plan.cplan, CRows(rows), store, offsets, ids, pr, k,
                              threads, self_ids, ties=ties)
    return d, i, scanned, count


def radius(searcher, rows, r, n_probe, self_ids, threads):
    """``(dist_lists, ind_lists, scanned, probed)``: rows within ``r`` among the
    ``n_probe`` nearest lists of each query (no widening)."""
    from .._kernels import CRows, radius_lists
    offsets, ids, store, _, _, _ = searcher.lists.derived(searcher.rows)
    pr, count = probes(searcher, rows, n_probe, 0, threads)
    dl, il, scanned = radius_lists(searcher.plan.cplan, CRows(rows), store, offsets, ids,
                                   pr, r, threads, self_ids)
    return dl, il, scanned, count


def exact_excluding(searcher, rows, self_ids, k, threads):
    """Exact k-NN of encoded ``rows`` over the indexed rows, each query skipping the
    indexed row ``self_ids[q]`` (None: none): every list probed, which is brute force
    bit for bit, over the list store (no other copy of the rows is made)."""
    from .._kernels import CRows, knn_lists
    lists = searcher.lists
    offsets, ids, store, _, _, _ = lists.derived(searcher.rows)
    every = np.broadcast_to(np.arange(lists.n_lists, dtype=np.intp),
                            (rows.n, lists.n_lists))
    d, i, _ = knn_lists(searcher.plan.cplan, CRows(rows), store, offsets, ids,
                        np.ascontiguousarray(every), k, threads, self_ids)
    return d, i


def recall_of(d_found, d_exact, k):
    """Recall@k: per query, the fraction of its k returned rows at a distance at most
    the exact k-th distance (a row tied with the exact k-th counts as found); the mean."""
    if d_found.shape[0] == 0:
        return float("nan")
    kth = d_exact[:, k - 1:k]
    return float(np.mean(np.sum(d_found[:, :k] <= kth, axis=1) / k))


def calibrate(searcher, target, threads, seed):
    """The smallest ``n_probe`` whose recall@10 (``CALIBRATION_K``, at most n - 1) on
    ``CALIBRATION_ROWS`` indexed rows drawn at random (each skipping itself) reaches
    ``target``; doubling, then bisection over ``n_probe`` (recall can only grow with
    it)."""
    from .._kernels import CRows, knn_lists
    n = searcher.rows.n
    lists = searcher.lists
    L = lists.n_lists
    k = min(CALIBRATION_K, n - 1)
    if k < 1 or L == 1:
        return 1
    rng = np.random.default_rng(seed + 1)
    m = min(n, CALIBRATION_ROWS)
    sel = np.sort(rng.choice(n, size=m, replace=False))
    rows = searcher.rows.take(sel)
    d_ex, _ = exact_excluding(searcher, rows, sel, k, threads)
    offsets, ids, store, crow, ccrows, cache = lists.derived(searcher.rows)
    _, order = searcher.nearest(rows, crow, ccrows, L, threads, cache)
    sizes = np.diff(offsets)
    cq = CRows(rows)

    def recall(p):
        pr, _ = probes_from_order(order, sizes, p, k + 1)
        d, _, _ = knn_lists(searcher.plan.cplan, cq, store, offsets, ids, pr, k, threads,
                            sel)
        return recall_of(d, d_ex, k)
    # doubling from 1, then bisection: the checks cost about what the answer costs
    # (recall(L) is 1: every list probed is brute force)
    lo, hi = 1, 1
    while hi < L and recall(hi) < target:
        lo, hi = hi + 1, min(L, 2 * hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if recall(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo
