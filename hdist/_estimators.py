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


def mean_abs_difference(x):
    """Exact mean of ``|x_i - x_j|`` over all pairs ``i < j`` in O(n log n).

    With ``x`` sorted ascending, ``sum_{i<j} (x_j - x_i) = sum_k x_k (2k - n + 1)``
    (0-based ``k``)."""
    x = np.sort(np.asarray(x, dtype=np.float64))
    n = x.size
    if n < 2:
        return 0.0
    coef = 2.0 * np.arange(n) - (n - 1)
    total = float(np.dot(coef, x))
    return total / (n * (n - 1) / 2.0)


def normalization_delta(x, method, trim=0.05):
    """The factor ``δ_a`` (docs/metrics.md, section 3) for one continuous column (NaN = missing).

    A zero, negative or undefined factor (constant column, one observed value) is 1."""
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
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
            lo, hi = np.quantile(x, [trim, 1.0 - trim])
            d = float(hi - lo)
        elif method == "4std":
            d = 4.0 * float(np.std(x, ddof=1)) if x.size > 1 else 0.0
        elif method == "mean_diff":
            d = mean_abs_difference(x)
        else:
            raise ValueError("normalization must be one of %s, got %r"
                             % (NORMALIZATIONS, method))
    if not np.isfinite(d) or d <= 0.0:
        return 1.0
    return d


def class_probabilities(codes, y, n_values, n_classes, empty="zero", priors=None):
    """``P[v, c] = N_{v,c} / N_v`` for codes ``0..n_values-1`` (``-1`` rows ignored),
    plus a last row for unseen values.  Empty values (and unseen ones) get zeros, or the
    class priors when ``empty == "prior"``."""
    codes = np.asarray(codes, dtype=np.int64)
    ok = (codes >= 0) & (codes < n_values)
    N = np.zeros((n_values + 1, n_classes))
    np.add.at(N, (codes[ok], y[ok]), 1.0)
    tot = N.sum(axis=1, keepdims=True)
    P = np.divide(N, tot, out=np.zeros_like(N), where=tot > 0)
    if empty == "prior":
        if priors is None:
            priors = np.bincount(y, minlength=n_classes) / float(len(y))
        P[tot[:, 0] == 0] = priors
    return P


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
