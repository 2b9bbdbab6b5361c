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


def mass_complete(dist, mass, k, ties):
    """Rows ``[n]`` (bool) whose weighted neighborhood (``mass_weights``) lies inside the
    listed neighbors: the list's weight reaches ``k`` and, with ``ties="include"``, its
    last distance is past ``d_k``."""
    cum = np.cumsum(np.asarray(mass, dtype=np.float64), axis=1)
    reach = cum >= k
    done = reach[:, -1].copy()
    if ties == "include":
        dk = dist[np.arange(len(dist)), reach.argmax(axis=1)]
        done &= dist[:, -1] > dk
    return done


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


def loo_scores(dist, ind, y, weights, task, ties="index", K=None, sample_weight=None):
    """Leave-one-out score of every k = 1..K from one query of the K nearest *other*
    training rows (``dist``, ``ind`` ``[n, K]``, each row's own index excluded; with
    ``ties="include"`` the lists may be wider, reaching every row tied with the K-th).

    ``task="classification"``: ``y`` are class codes, the score is the accuracy.
    ``task="regression"``: the score is minus the mean absolute error (Weka IBk's default
    for a numeric class), so larger is better in both cases.  With ``sample_weight`` the
    neighbors vote as in ``mass_weights`` and the score is a weighted mean over the
    training rows.  Returns ``[K]``."""
    K = ind.shape[1] if K is None else K
    scores = np.empty(K)
    y = np.asarray(y)
    mass = None if sample_weight is None else np.asarray(sample_weight)[ind]
    if task == "classification":
        C = int(y.max()) + 1 if y.size else 1
        for k in range(1, K + 1):
            w, cols = _loo_weights(dist, k, weights, ties, mass)
            pred = vote_winner(class_votes(y[ind[:, :cols]], w, C))
            scores[k - 1] = np.average(pred == y, weights=sample_weight)
        return scores
    for k in range(1, K + 1):
        w, cols = _loo_weights(dist, k, weights, ties, mass)
        pred = weighted_mean(y[ind[:, :cols]], w)
        err = np.abs(pred - y).reshape(len(y), -1).mean(axis=1)
        scores[k - 1] = -np.average(err, weights=sample_weight)
    return scores


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


class MetricIndex:
    """A fitted :class:`hdist.Metric` seen through the neighbor-index interface
    (``fit(X, y)``, ``kneighbors(Q, k, ...)``, ``radius_neighbors(Q, r, ...)``): an exact
    brute-force scan.  Used where :class:`hdist.NeighborsIndex` is not available; every
    algorithm returns the same neighbors (docs/metrics.md, section 8), so the result does not change."""

    def __init__(self, metric, algorithm="auto", leaf_size=30):
        self.metric = metric
        self.algorithm = algorithm
        self.leaf_size = leaf_size

    def fit(self, X, y=None, *, progress=None):
        self.metric.fit(X, y, progress=progress)
        return self

    @property
    def n_train_(self):
        return self.metric.n_train_

    def kneighbors(self, Q=None, k=5, *, exclude_self=False, return_distance=True,
                   n_jobs=None, progress=None):
        return self.metric.kneighbors(Q, k, exclude_self=exclude_self,
                                      return_distance=return_distance, n_jobs=n_jobs,
                                      progress=progress)

    def _kneighbors(self, Q=None, k=5, exclude_self=False, n_jobs=None, progress=None,
                    ties=False):
        return self.metric._kneighbors(Q, k, exclude_self, n_jobs, progress, ties)

    def radius_neighbors(self, Q=None, r=1.0, *, exclude_self=False, return_distance=True,
                         n_jobs=None, progress=None):
        return self.metric.radius_neighbors(Q, r, exclude_self=exclude_self,
                                            return_distance=return_distance, n_jobs=n_jobs,
                                            progress=progress)


ALGORITHMS = ("auto", "brute", "kd_tree", "ball_tree", "ivf")
#: the keys of ``algorithm_params`` (``algorithm="ivf"``'s parameters)
ALGORITHM_PARAMS = ("n_lists", "n_probe", "target_recall", "random_state")


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


def make_index(metric, algorithm="auto", leaf_size=30, algorithm_params=None):
    """An unfitted neighbor index over ``metric``: :class:`hdist.NeighborsIndex` when the
    package provides it, else :class:`MetricIndex`.  ``algorithm_params``: the
    ``"ivf"`` parameters of :class:`hdist.NeighborsIndex` (``n_lists``, ``n_probe``,
    ``target_recall``, ``random_state``)."""
    if algorithm not in ALGORITHMS:
        raise ValueError("algorithm must be one of %s, got %r" % (ALGORITHMS, algorithm))
    params = check_algorithm_params(algorithm, algorithm_params)
    try:
        from .index import NeighborsIndex
    except ImportError:
        return MetricIndex(metric, algorithm, leaf_size)
    return NeighborsIndex(metric, algorithm=algorithm, leaf_size=leaf_size, **params)


def needs_labels(metric):
    """Whether fitting ``metric`` (an :class:`hdist.Metric`) needs class labels."""
    from . import metric as _m
    info = metric.info
    if info.needs_y or metric.params.get("weights") == "mi":
        return True
    extra = getattr(_m, "_CONT_EXTRA", {}).get(info.continuous)
    return bool(extra and extra[1])
