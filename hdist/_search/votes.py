"""k-NN prediction from neighbor lists, with numpy only (docs/metrics.md, section 8).

Shared by the scikit-learn estimators (:mod:`hdist.neighbors`), the command line and the
Dask helpers, none of which may differ in how a vote is counted:

- neighbor weights: ``"uniform"``; ``"distance"`` (``1/d``; a row with exact zero
  distances gives weight 1 to those neighbors and 0 to the others, so they win outright);
  ``"dudani"`` (S. A. Dudani, "The distance-weighted k-nearest-neighbor rule", IEEE Trans.
  SMC 6 (1976): ``w_j = (d_k - d_j) / (d_k - d_1)``, all 1 when ``d_k = d_1``); or a
  callable mapping the distance array to a weight array of the same shape;
- classification: weighted votes per class, the largest wins, ties go to the smallest
  class (classes are numbered in sorted label order);
- regression: the weighted mean of the neighbors' targets;
- leave-one-out choice of k (as Weka's IBk ``-X``) from one query of the largest k.
"""
from __future__ import annotations

import numpy as np

WEIGHTS = ("uniform", "distance", "dudani")
TIES = ("index", "include")


def check_weights(weights):
    """Validate a ``weights`` parameter (a name or a callable)."""
    if callable(weights):
        return weights
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise ValueError("weights must be one of %s or a callable, got %r" % (WEIGHTS, weights))
    return weights


def neighbor_weights(dist, weights):
    """Weights ``[n, k]`` of the neighbors at distances ``dist`` (sorted per row).

    A row whose weights are all zero (possible only with a callable) falls back to
    uniform weights, so that every row casts a vote."""
    dist = np.asarray(dist, dtype=np.float64)
    weights = check_weights(weights)
    if weights == "uniform":
        return np.ones_like(dist)
    if weights == "distance":
        zero = dist == 0.0
        with np.errstate(divide="ignore"):
            w = 1.0 / dist
        has_zero = zero.any(axis=1)
        w[has_zero] = zero[has_zero].astype(np.float64)
        return w
    if weights == "dudani":
        first = dist[:, :1]
        last = dist[:, -1:]
        span = last - first
        flat = span[:, 0] == 0.0
        with np.errstate(invalid="ignore", divide="ignore"):
            w = (last - dist) / span
        w[flat] = 1.0
        return w
    w = np.asarray(weights(dist), dtype=np.float64)
    if w.shape != dist.shape:
        raise ValueError("the weights callable must return an array of shape %s, got %s"
                         % (dist.shape, w.shape))
    if not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError("the weights callable must return finite non-negative weights")
    dead = w.sum(axis=1) == 0.0
    w[dead] = 1.0
    return w


def tie_weights(dist, k, weights, ties):
    """Weights of the neighbor lists ``dist`` ``[n, width]`` (sorted per row, width >= k).

    ``ties="index"``: the first k columns.  ``ties="include"``: every column at a distance
    at most the k-th one's, weighted as if the list ended there (Dudani's ``d_k`` is the
    k-th distance); the others get weight 0."""
    if ties == "index":
        return neighbor_weights(dist[:, :k], weights)
    kth = dist[:, k - 1:k]
    keep = dist <= kth
    w = neighbor_weights(np.where(keep, dist, kth), weights)
    w[~keep] = 0.0
    return w


def mass_weights(dist, mass, k, weights, ties):
    """Vote weights ``[n, width]`` of neighbor lists with training weights.

    ``dist`` ``[n, width]`` are sorted per row and ``mass`` ``[n, width]`` are the listed
    neighbors' ``sample_weight``.  A row of weight ``m`` counts as ``m`` copies of itself:
    the neighborhood is the shortest prefix whose weight reaches ``k`` (all rows if the
    list's total is smaller), so the k-th distance ``d_k`` is that of the row carrying the
    k-th unit of weight.  ``ties="index"`` counts the last row only with the part of its
    weight needed to reach ``k``; ``ties="include"`` counts every row at a distance at most
    ``d_k`` with its whole weight.  Each row's vote is its counted weight times the
    distance weighting (``neighbor_weights``), which sees the distances of the rows with
    counted weight only (Dudani's ``d_1`` is the nearest such row, ``d_k`` the k-th).
    Integer weights therefore vote exactly as repeated rows do."""
    dist = np.asarray(dist, dtype=np.float64)
    mass = np.asarray(mass, dtype=np.float64)
    n, width = dist.shape
    rows = np.arange(n)
    cum = np.cumsum(mass, axis=1)
    reach = cum >= k
    cols = np.arange(width)
    last_pos = np.where(mass > 0, cols, -1).max(axis=1)
    kpos = np.where(reach.any(axis=1), reach.argmax(axis=1), np.maximum(last_pos, 0))
    dk = dist[rows, kpos][:, None]
    if ties == "index":
        counted = np.clip(k - (cum - mass), 0.0, mass)
    else:
        counted = np.where(dist <= dk, mass, 0.0)
    on = counted > 0
    # distances of rows not counted are replaced by the nearest counted one before them
    # (after them for leading ones), so the weighting sees only the counted rows
    src = np.maximum.accumulate(np.where(on, cols, -1), axis=1)
    first = np.where(on.any(axis=1), on.argmax(axis=1), 0)
    src = np.where(src < 0, first[:, None], src)
    w = neighbor_weights(dist[rows[:, None], src], weights) * counted
    dead = w.sum(axis=1) == 0.0
    w[dead] = counted[dead]
    return w


def mass_complete(dist, mass, k, ties, tally_mass=None):
    """Rows ``[n]`` (bool) whose weighted neighborhood (``mass_weights``) lies inside the
    listed neighbors: the list's weight reaches ``k`` and, with ``ties="include"``, its
    last distance is past ``d_k``.  With ``tally_mass`` ``[n]`` (the weight of the rows
    tied with the list's last distance beyond it, :func:`mass_tally_weights`) a
    neighborhood that the tally completes is complete too."""
    if tally_mass is not None:
        dist, mass = _with_tally_column(dist, mass, tally_mass)
        return np.cumsum(mass, axis=1)[:, -1] >= k
    cum = np.cumsum(np.asarray(mass, dtype=np.float64), axis=1)
    reach = cum >= k
    done = reach[:, -1].copy()
    if ties == "include":
        dk = dist[np.arange(len(dist)), reach.argmax(axis=1)]
        done &= dist[:, -1] > dk
    return done


def _with_tally_column(dist, mass, tally_mass):
    """The lists with one more column standing for the tallied rows: at the last
    listed distance, with their whole weight."""
    dist = np.asarray(dist, dtype=np.float64)
    return (np.hstack([dist, dist[:, -1:]]),
            np.hstack([np.asarray(mass, dtype=np.float64),
                       np.asarray(tally_mass, dtype=np.float64)[:, None]]))


def mass_tally_weights(dist, mass, k, weights, tally_mass):
    """``mass_weights`` (``ties="include"``) of lists whose rows tied with the last
    listed distance beyond them are tallied (:class:`TieTally` of the training weights):
    ``(w, u)``, ``w`` ``[n, width]`` the listed rows' vote weights and ``u`` ``[n]`` the
    weight of one unit of tallied training weight (0 where the tallied rows lie past
    ``d_k``).  The tallied rows all sit at the last distance, so they vote as one more
    column of their whole weight would."""
    d2, m2 = _with_tally_column(dist, mass, tally_mass)
    w2 = mass_weights(d2, m2, k, weights, "include")
    tm = np.asarray(tally_mass, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(tm > 0, w2[:, -1] / tm, 0.0)
    return w2[:, :-1], u


class TieTally:
    """What a k-NN search keeps of the rows tied with a query's k-th distance beyond its
    k best when only their vote is needed (``ties="include"``): how many there are and,
    per class, their count (``codes``: the training rows' class codes in
    ``[0, n_classes)``) or, per target, their sum (``values``: the training rows' targets
    ``[n]`` or ``[n, t]``).

    Passed as ``ties=`` to a search (``hdist.NeighborsIndex._kneighbors``,
    ``hdist.Metric._kneighbors``), it makes the kernels' tie lists
    (``hdist._kernels.TieLists``) count instead of list: the search returns lists of
    width k and :meth:`result` the tally of its query rows, so the memory is
    ``n_queries x (k + classes)`` whatever the number of tied rows (10^6 identical
    training rows cost no more than distinct ones).  One object per search."""

    def __init__(self, codes=None, n_classes=0, values=None):
        if (codes is None) == (values is None):
            raise ValueError("give codes or values")
        self.codes = None if codes is None else np.ascontiguousarray(codes, dtype=np.intp)
        self.values = None if values is None else np.ascontiguousarray(values,
                                                                       dtype=np.float64)
        self.n_classes = int(n_classes)
        self._lists = []

    def lists(self, n):
        """Tie lists that tally ``n`` query rows (called by the kernels, in query order)."""
        from .._kernels import TieLists
        tl = TieLists(n, codes=self.codes, n_classes=self.n_classes, values=self.values)
        self._lists.append(tl)
        return tl

    def add_lists(self, dist, ind, k):
        """Tally lists that hold the rows tied with the k-th after the k nearest
        (``dist``, ``ind`` ``[n, width]``, ``inf`` past them), for a search without the
        compiled tally (:mod:`hdist.dask`'s, ``with_search``'s, the GPU's).  The rows
        are tallied as the compiled tally tallies them (``hdist._kernels.TieLists``), so
        the result has its bits: classes counted, targets summed in list order by
        Knuth's TwoSum (``plan.pxd``'s ``two_sum_add``: the rounded sum and its error,
        added at the end)."""
        listed = np.isfinite(dist[:, k:])
        rows = ind[:, k:]
        if self.codes is not None:
            acc = class_votes(self.codes[rows], listed.astype(np.float64), self.n_classes)
        else:
            acc = _two_sum_rows(self.values.reshape(len(self.values), -1), rows, listed)
        self._lists.append((listed.sum(axis=1).astype(np.int64), acc))

    def result(self, n):
        """``(count, acc)`` of the search's ``n`` query rows: ``count`` ``[n]`` the tied
        rows beyond each k best, ``acc`` ``[n, classes]`` their count per class or
        ``[n, t]`` their sum per target."""
        parts = [tl if isinstance(tl, tuple) else tl.tally() for tl in self._lists]
        m = self.n_classes if self.codes is not None else \
            (1 if self.values.ndim == 1 else self.values.shape[1])
        count = np.concatenate([c for c, _ in parts]) if parts else np.zeros(0, np.int64)
        acc = np.concatenate([a for _, a in parts]) if parts else np.zeros((0, m))
        if len(count) != n:
            raise RuntimeError("the search tallied %d query rows, expected %d"
                               % (len(count), n))
        return count, acc


def _two_sum_rows(v, rows, listed):
    """``[n, t]``: per query, the sum of the targets ``v[rows[q, c]]`` of its ``listed``
    columns, added column by column as ``plan.pxd``'s ``two_sum_add`` adds them (``hi``
    the rounded sum, ``lo`` the accumulated errors of Knuth's TwoSum), then ``hi + lo``
    as ``TieLists.tally`` rounds it."""
    n, m = rows.shape[0], v.shape[1]
    hi, lo = np.zeros((n, m)), np.zeros((n, m))
    for c in range(rows.shape[1]):
        on = listed[:, c]
        q = np.flatnonzero(on)
        if not len(q):
            continue
        x = v[rows[q, c]]
        a = hi[q]
        s = a + x
        bb = s - a
        lo[q] += (a - (s - bb)) + (x - bb)
        hi[q] = s
    return hi + lo


def tally_votes(dist, ind, codes, tally, k, weights, n_classes):
    """Class votes ``[n, C]`` of the k nearest (``dist``, ``ind`` ``[n, k]``) and the rows
    tied with the k-th beyond them (``tally``: :meth:`TieTally.result`), each of those
    weighted as the k-th: the votes of ``tie_weights(..., ties="include")`` over the
    widened lists, without the lists."""
    w = neighbor_weights(dist, weights)
    return tallied_votes(codes, ind, w, w[:, k - 1], tally[1], n_classes)


def tally_mean(dist, ind, values, tally, k, weights):
    """Weighted mean of the targets of the k nearest and of the rows tied with the k-th
    beyond them (``tally``: :meth:`TieTally.result` of ``values``), as
    ``weighted_mean`` over the widened lists (equal up to the rounding of the sums)."""
    w = neighbor_weights(dist, weights)
    return tallied_mean(values, ind, w, w[:, k - 1], tally[1], tally[0])


def tallied_votes(codes, ind, w, tw, tacc, n_classes):
    """Class votes of the listed neighbors ``ind`` (weights ``w``) plus ``tw`` ``[n]``
    times the tallied per-class counts or weights ``tacc`` ``[n, C]``."""
    votes = class_votes(np.asarray(codes)[ind], w, n_classes)
    votes[:, :tacc.shape[1]] += tw[:, None] * tacc
    return votes


def tallied_mean(values, ind, w, tw, tacc, tden):
    """Weighted mean of the listed neighbors' targets plus the tallied ones: ``tacc``
    ``[n, t]`` their (weighted) sums, ``tden`` ``[n]`` their count or weight, each unit
    weighted ``tw`` ``[n]``."""
    values = np.asarray(values, dtype=np.float64)
    den = w.sum(axis=1) + tw * tden
    if values.ndim == 2:
        return (np.einsum("nk,nkt->nt", w, values[ind]) + tw[:, None] * tacc) / den[:, None]
    return ((w * values[ind]).sum(axis=1) + tw * tacc[:, 0]) / den


def search_votes(index, Q, k, weights, ties, codes=None, n_classes=0, values=None,
                 **kwargs):
    """``(dist, ind, out)`` of a k-NN search of ``Q`` by ``index`` (``_kneighbors``,
    ``kwargs`` passed on): the k nearest and ``out`` the weighted class votes ``[n, C]``
    of the training rows' class ``codes`` or the weighted mean of their ``values``, with
    ``ties="include"`` counting every row tied with the k-th through a
    :class:`TieTally` of the search (memory independent of the ties); ``out`` None
    without ``codes`` or ``values`` (the neighbors only)."""
    if codes is None and values is None:
        dist, ind = index._kneighbors(Q, k, **kwargs)
        return dist, ind, None
    tally = None
    if ties == "include":
        tally = TieTally(codes=codes, n_classes=n_classes, values=values)
    dist, ind = index._kneighbors(Q, k, ties=tally, **kwargs)
    if tally is not None:
        res = tally.result(len(dist))
        if codes is not None:
            return dist, ind, tally_votes(dist, ind, codes, res, k, weights, n_classes)
        return dist, ind, tally_mean(dist, ind, values, res, k, weights)
    w = neighbor_weights(dist, weights)
    if codes is not None:
        return dist, ind, class_votes(np.asarray(codes)[ind], w, n_classes)
    return dist, ind, weighted_mean(np.asarray(values, dtype=np.float64)[ind], w)


def class_votes(codes, w, n_classes):
    """Weighted votes ``[n, C]`` for the neighbors' class codes ``[n, k]``."""
    n, k = codes.shape
    flat = (np.arange(n, dtype=np.int64)[:, None] * n_classes + codes).ravel()
    return np.bincount(flat, weights=np.asarray(w, dtype=np.float64).ravel(),
                       minlength=n * n_classes).reshape(n, n_classes)


def vote_winner(votes):
    """Class code with the most votes; ties go to the smallest code (sorted labels)."""
    return np.argmax(votes, axis=1)


def vote_probabilities(votes):
    """Votes normalized to sum to 1 per row."""
    return votes / votes.sum(axis=1, keepdims=True)


def weighted_mean(values, w):
    """Weighted mean of the neighbors' targets: ``values`` ``[n, k]`` or ``[n, k, t]``."""
    w = np.asarray(w, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 3:
        return np.einsum("nk,nkt->nt", w, values) / w.sum(axis=1)[:, None]
    return (w * values).sum(axis=1) / w.sum(axis=1)


def loo_scores(dist, ind, y, weights, task, ties="index", K=None, sample_weight=None,
               tally=None):
    """Leave-one-out score of every k = 1..K from one query of the K nearest *other*
    training rows (``dist``, ``ind`` ``[n, K]``, each row's own index excluded; with
    ``ties="include"`` the lists may be wider, reaching every row tied with the K-th, or
    of width K with ``tally`` (:meth:`TieTally.result` of the rows tied with the K-th
    beyond them, counts per class or sums of ``y``): a row tied with the k-th beyond
    the K listed is tied with the K-th, so the tally votes where ``d_k = d_K``).

    ``task="classification"``: ``y`` are class codes, the score is the accuracy.
    ``task="regression"``: the score is minus the mean absolute error (Weka IBk's default
    for a numeric class), so larger is better in both cases.  With ``sample_weight`` the
    neighbors vote as in ``mass_weights`` and the score is a weighted mean over the
    training rows.  Returns ``[K]``."""
    K = ind.shape[1] if K is None else K
    scores = np.empty(K)
    y = np.asarray(y)
    mass = None if sample_weight is None else np.asarray(sample_weight)[ind]
    if tally is not None and ties != "include":
        raise ValueError("a tally of the ties goes with ties='include'")
    if task == "classification":
        C = int(y.max()) + 1 if y.size else 1
        if tally is not None:
            C = max(C, tally[1].shape[1] - (mass is not None))
        for k in range(1, K + 1):
            w, cols, tw, tacc, _ = _loo_tallied(dist, k, weights, ties, mass, tally)
            if tally is not None:
                votes = tallied_votes(y, ind[:, :cols], w, tw, tacc, C)
            else:
                votes = class_votes(y[ind[:, :cols]], w, C)
            pred = vote_winner(votes)
            scores[k - 1] = np.average(pred == y, weights=sample_weight)
        return scores
    for k in range(1, K + 1):
        w, cols, tw, tacc, tden = _loo_tallied(dist, k, weights, ties, mass, tally)
        if tally is not None:
            pred = tallied_mean(y, ind[:, :cols], w, tw, tacc, tden)
        else:
            pred = weighted_mean(y[ind[:, :cols]], w)
        err = np.abs(pred - y).reshape(len(y), -1).mean(axis=1)
        scores[k - 1] = -np.average(err, weights=sample_weight)
    return scores


def _loo_tallied(dist, k, weights, ties, mass, tally):
    """``(w, cols, tw, tacc, tden)``: ``_loo_weights`` and, with a ``tally`` of the rows
    tied with the K-th beyond the lists, the weight ``tw`` ``[n]`` of one tallied unit,
    what it multiplies in the votes or sums (``tacc``) and in the sum of weights
    (``tden``).  With training weights the tally is of ``[class masses | mass]`` or
    ``[mass-weighted targets | mass]`` (:func:`mass_tally_weights`), else of counts."""
    if tally is None:
        w, cols = _loo_weights(dist, k, weights, ties, mass)
        return w, cols, None, None, None
    if mass is not None:
        tacc, tden = tally[1][:, :-1], tally[1][:, -1]
        w, tw = mass_tally_weights(dist, mass, k, weights, tden)
        return w, dist.shape[1], tw, tacc, tden
    w, cols = _loo_weights(dist, k, weights, ties)
    return w, cols, _tally_weight(dist, w, k), tally[1], tally[0]


def _tally_weight(dist, w, k):
    """The weight of a tallied row for k (lists of width K): the k-th's weight where
    ``d_k = d_K`` (the tallied rows are tied with the k-th), else 0."""
    return np.where(dist[:, k - 1] == dist[:, -1], w[:, k - 1], 0.0)


def _loo_weights(dist, k, weights, ties, mass=None):
    """``tie_weights`` of the first k columns, or (ties included) of every column that
    some row's ties reach; and how many columns they cover.  With the neighbors' training
    weights ``mass``, ``mass_weights`` of every column."""
    if mass is not None:
        return mass_weights(dist, mass, k, weights, ties), dist.shape[1]
    if ties == "index":
        return neighbor_weights(dist[:, :k], weights), k
    cols = int((dist <= dist[:, k - 1:k]).sum(axis=1).max())
    return tie_weights(dist[:, :cols], k, weights, ties), cols


def best_k(scores):
    """The smallest k with the best leave-one-out score."""
    return int(np.argmax(scores)) + 1


def needs_labels(metric):
    """Whether fitting ``metric`` (an :class:`hdist.Metric`) needs class labels."""
    from . import metric as _m
    info = metric.info
    if info.needs_y or metric.params.get("weights") == "mi":
        return True
    extra = getattr(_m, "_CONT_EXTRA", {}).get(info.continuous)
    return bool(extra and extra[1])
