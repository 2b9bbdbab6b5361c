"""Per-attribute statistics learned in ``fit``: normalization factors and VDM tables.

References
----------
- D. R. Wilson and T. R. Martinez, "Improved Heterogeneous Distance Functions",
  JAIR 6 (1997) 1-34: HEOM, HVDM, the VDM normalizations N1, N2, N3.
- Normalizations (docs/metrics.md, section 3), "mean_diff" (the average
  component-wise distance over training pairs).
"""
from __future__ import annotations

import numpy as np

NORMALIZATIONS = ("range", "trimmed_range", "4std", "mean_diff", "none")
VDM_NORMS = ("N1", "N2", "N3")

#: a nominal attribute gets a (V+1)^2 table while it has at most this many entries;
#: above it, VDM attributes are embedded (probability rows) and compared on the fly
TABLE_BUDGET = 1 << 22


def mean_abs_difference(x, w=None):
    """Exact mean of ``|x_i - x_j|`` over all pairs ``i < j`` in O(n log n).

    With ``x`` sorted ascending, ``sum_{i<j} (x_j - x_i) = sum_k x_k (2k - n + 1)``
    (0-based ``k``).  With weights ``w`` (frequency weights: row ``k`` stands for ``w_k``
    copies of itself) the pairs are those of the repeated rows:
    ``sum_k w_k x_k (W_<k - W_>k) / (W (W - 1) / 2)``, ``W_<k`` / ``W_>k`` the weight
    sorted before / after row ``k`` and ``W`` the total, so integer weights give exactly
    the mean over the repeated rows (copies of one row differ by 0)."""
    x = np.asarray(x, dtype=np.float64)
    if w is None:
        x = np.sort(x)
        n = x.size
        if n < 2:
            return 0.0
        coef = 2.0 * np.arange(n) - (n - 1)
        total = float(np.dot(coef, x))
        return total / (n * (n - 1) / 2.0)
    order = np.argsort(x, kind="stable")
    x = x[order]
    w = np.asarray(w, dtype=np.float64)[order]
    S = np.cumsum(w)
    W = float(S[-1]) if S.size else 0.0
    if not W > 1.0:
        return 0.0
    coef = w * ((S - w) - (W - S))
    return float(np.dot(coef, x)) / (W * (W - 1.0) / 2.0)


def weighted_quantile(x, q, w=None):
    """Quantiles ``q`` of the values ``x`` (no NaN) under frequency weights ``w``.

    Without weights, numpy's default (``method="linear"``).  With weights, the same rule
    on the rows repeated by their weights, read on the cumulative weight: with the rows
    sorted by value and ``S_r`` the weight of rows ``0..r``, ``W = S_last``, the value at
    position ``t >= 0`` is that of the first row with ``S_r > t``; the quantile is at
    position ``h = (W - 1) q``, linearly interpolated between the
    values at ``floor(h)`` and ``floor(h) + 1``; ``h >= W - 1`` gives the largest value and
    ``h < 0`` the smallest.  Integer weights give bit for bit ``np.quantile`` of
    ``np.repeat(x, w)``; a total weight below 1 (less than one row) gives every quantile
    of a single row (largest for ``q = 0``, smallest otherwise, as numpy's bounds)."""
    x = np.asarray(x, dtype=np.float64)
    if w is None:
        return np.quantile(x, q)
    qa = np.asarray(q, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    S = np.cumsum(np.asarray(w, dtype=np.float64)[order])
    W = S[-1]
    h = (W - 1) * qa
    lo = np.floor(h)
    g = h - lo
    last = xs.shape[0] - 1
    a = xs[np.minimum(np.searchsorted(S, lo, side="right"), last)]
    b = xs[np.minimum(np.searchsorted(S, lo + 1, side="right"), last)]
    diff = b - a
    out = np.where(g >= 0.5, b - diff * (1 - g), a + diff * g)
    out = np.where(h >= W - 1, xs[-1], out)
    out = np.where(h < 0, xs[0], out)
    return out if out.ndim else float(out)


def weighted_std(x, w=None):
    """Sample standard deviation (``ddof = 1``); with frequency weights ``w``,
    ``sqrt(Σ w (x - μ)² / (W - 1))``, ``μ = Σ w x / W``, ``W = Σ w`` (the repeated rows'
    ``ddof = 1`` deviation); 0 when ``W <= 1``."""
    x = np.asarray(x, dtype=np.float64)
    if w is None:
        return float(np.std(x, ddof=1)) if x.size > 1 else 0.0
    w = np.asarray(w, dtype=np.float64)
    W = float(w.sum())
    if not W > 1.0:
        return 0.0
    mu = float(np.dot(w, x)) / W
    r = x - mu
    return float(np.sqrt(np.dot(w, r * r) / (W - 1.0)))


def normalization_delta(x, method, trim=0.05, w=None):
    """The factor ``δ_a`` (docs/metrics.md, section 3) for one continuous column (NaN = missing).

    ``w``: frequency weights of the rows (``sample_weight``); rows of weight 0 are left
    out, the range is that of the other rows, and the trimmed range, standard deviation
    and mean difference are those of the rows repeated by their weights
    (:func:`weighted_quantile`, :func:`weighted_std`, :func:`mean_abs_difference`).
    A zero, negative or undefined factor (constant column, one observed value) is 1."""
    x = np.asarray(x, dtype=np.float64)
    keep = ~np.isnan(x)
    if w is not None:
        w = np.asarray(w, dtype=np.float64)
        keep &= w > 0
        w = w[keep]
    x = x[keep]
    if method == "none" or x.size == 0:
        return 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        if method != "range":
            # every factor is shift-invariant; shifting by the minimum keeps the digits
            # of close values far from 0 (a mean of 3e12-sized values is off by ~1e-3)
            x = x - x.min()
        if method == "range":
            d = float(x.max() - x.min())
        elif method == "trimmed_range":
            lo, hi = weighted_quantile(x, [trim, 1.0 - trim], w)
            d = float(hi - lo)
        elif method == "4std":
            d = 4.0 * weighted_std(x, w)
        elif method == "mean_diff":
            d = mean_abs_difference(x, w)
        else:
            raise ValueError("normalization must be one of %s, got %r"
                             % (NORMALIZATIONS, method))
    if not np.isfinite(d) or d <= 0.0:
        return 1.0
    return d


def class_probabilities(codes, y, n_values, n_classes, empty="zero", priors=None, w=None):
    """``P[v, c] = N_{v,c} / N_v`` for codes ``0..n_values-1`` (``-1`` rows ignored),
    plus a last row for unseen values.  Empty values (and unseen ones) get zeros, or the
    class priors when ``empty == "prior"``.  With row weights ``w`` the counts ``N`` are
    sums of weights (a row of weight ``m`` counts as ``m`` rows)."""
    codes = np.asarray(codes, dtype=np.int64)
    ok = (codes >= 0) & (codes < n_values)
    N = np.zeros((n_values + 1, n_classes))
    np.add.at(N, (codes[ok], y[ok]), 1.0 if w is None else np.asarray(w, np.float64)[ok])
    tot = N.sum(axis=1, keepdims=True)
    P = np.divide(N, tot, out=np.zeros_like(N), where=tot > 0)
    if empty == "prior":
        if priors is None:
            priors = class_priors(y, n_classes, w)
        P[tot[:, 0] == 0] = priors
    return P


def class_priors(y, n_classes, w=None):
    """Class frequencies of the class codes ``y`` (weighted by ``w``)."""
    y = np.asarray(y, dtype=np.int64)
    if w is None:
        return np.bincount(y, minlength=n_classes) / float(len(y))
    w = np.asarray(w, dtype=np.float64)
    return np.bincount(y, weights=w, minlength=n_classes) / float(w.sum())


def vdm_scale(norm, n_classes):
    """(q, factor): VDM norm as an embedding ``factor * P`` compared with an L_q norm."""
    if norm == "N1":
        return 1, 1.0
    if norm == "N2":
        return 2, 1.0
    if norm == "N3":
        return 2, float(np.sqrt(n_classes))
    raise ValueError("vdm must be one of %s, got %r" % (VDM_NORMS, norm))


def vdm_table(P, norm):
    """Value table ``T[v, w]`` of the VDM distance from probability rows ``P``."""
    q, f = vdm_scale(norm, P.shape[1])
    diff = P[:, None, :] - P[None, :, :]
    if q == 1:
        T = np.abs(diff).sum(axis=2)
    else:
        T = f * np.sqrt((diff * diff).sum(axis=2))
    np.fill_diagonal(T, 0.0)
    return T


class ProbabilityRows:
    """Maps nominal codes to scaled probability rows (NaN for missing); picklable."""

    def __init__(self, P, factor):
        self.P = np.asarray(P, dtype=np.float64) * factor
        self.V = self.P.shape[0] - 1

    def __call__(self, codes):
        codes = np.asarray(codes, dtype=np.int64)
        idx = np.where(codes >= self.V, self.V, codes)
        out = self.P[np.maximum(idx, 0)].copy()
        out[codes < 0] = np.nan
        return out
