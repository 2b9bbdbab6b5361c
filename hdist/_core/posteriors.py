"""Class-posterior estimates ``p_a(x)`` for continuous attributes (docs/metrics.md, section 5) and the metric
presets that compare them: ``dvdm``, ``ivdm``, ``gvdm``, ``lvdm``, ``pvdm`` .

Each estimator is fitted on one attribute (``x`` with NaN for missing values, class codes
``y`` in ``0 .. C-1``, ``C``) and maps any real ``x`` to a vector ``p(x)`` of ``C`` class
probabilities; the component distance is then ``d_a = (Σ_c |p(x)_c - p(y)_c|^q)^(1/q)``,
``q = 2`` by default (VDM's N2 applied to estimated posteriors).  The fitted estimator is
the attribute's encoder in the Plan's embedded block, so the shared kernels compare the
vectors; there is no kernel per metric.

Estimators (``R = max - min`` of the observed training values):

- :class:`DiscretizedPosterior` (DVDM): the class frequencies of ``x``'s bin; bins from
  ``hdist.discretize`` (default ``EqualWidth(max(5, C))``), an empty bin gives zeros,
  values outside the training range fall in the end bins.
- :class:`InterpolatedPosterior` (IVDM): ``s = max(5, C)`` equal-width bins, bin
  frequencies ``P_u`` placed at the bin midpoints ``mid_u = min + R (u + ½) / s``; linear
  interpolation between neighbouring midpoints, constant (``P_0``, ``P_{s-1}``) below the
  first and above the last midpoint.
- :class:`GaussianPosterior` (GVDM): ``p(c|x) = Σ_{y_j=c} K_j / Σ_j K_j``,
  ``K_j = exp(-((x - x_j)/h)^2)``, ``h = sigma R``.  Where every ``K_j`` underflows to 0
  in float64 the class priors are used.  Elsewhere the value is read from a cubic Hermite
  interpolant whose nodes are computed exactly (see the class) and refined until the
  interpolation error is below 1e-7 in every component.
- :class:`LocalPosterior` (LVDM): the class frequencies of the training values in
  ``[x - W/2, x + W/2]``, ``W = width R``; an empty window gives the priors.
- :class:`ParzenPosterior` (PVDM): windows ``[b_z, b_z + W)``, ``b_z = min - W + z S``
  (``z = 1, 2, ...`` while ``b_z <= max``, ``W = width R``, ``S = step R``); the mean of
  the class frequencies of the windows that contain ``x`` and hold a training value; none
  gives the priors.

Conventions where the papers are silent:

- *Priors* are the class frequencies of all training rows (rows where the attribute is
  missing included), the same priors as VDM's ``unseen="prior"``.
- A constant attribute (``R = 0``) carries no class information: every value gets the
  class frequencies of the rows where it is observed, so its component distance is 0.
- Missing values give NaN rows; the metric then applies its missing-value policy.  An
  embedded attribute knows no training range in distance units, so the ``"max"`` policy
  acts as ``"one"`` (``d_a = 1``), as does ``"symbol"``; ``"ignore"`` skips the component.

Fitting is O(n log n) (a sort, cumulative class counts; GVDM adds a grid whose size does
not grow with ``n``); encoding costs O(log n) per value.

References
----------
- D. R. Wilson and T. R. Martinez, "Improved Heterogeneous Distance Functions", JAIR 6
  (1997) 1-34: DVDM, IVDM, VDM N2.
- T. Wieczorek, M. Blachnik and W. Duch, "Influence of probability estimation parameters on
  stability of accuracy in prototype rules using heterogeneous distance functions":
  GVDM (eq. 13-14), LVDM, PVDM (eq. 15).
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .statistics import class_priors
from .plan import EmbedComponent
from .schema import check_sample_weight
from .discretize import Discretizer, EqualWidth, _as_values

__all__ = ["DiscretizedPosterior", "InterpolatedPosterior", "GaussianPosterior",
           "LocalPosterior", "ParzenPosterior", "ESTIMATORS"]

#: values encoded per block
_BLOCK = 1 << 16
#: at most this many PVDM windows per attribute (``(1 + width) / step``)
MAX_WINDOWS = 10_000_000


def _cumulative_counts(ys, C, ws=None):
    """``cum[k, c]`` = number (total weight with ``ws``) of the first ``k`` (sorted)
    training values of class ``c`` (float64: exact for any count below 2^53)."""
    cum = np.zeros((ys.shape[0] + 1, C))
    cum[np.arange(1, ys.shape[0] + 1), ys] = 1.0 if ws is None else ws
    return np.cumsum(cum, axis=0)


def _frequencies(counts, empty):
    """Rows of counts -> class frequencies; rows with no count get ``empty``."""
    counts = np.asarray(counts, dtype=np.float64)
    tot = counts.sum(axis=-1, keepdims=True)
    out = np.divide(counts, tot, out=np.zeros_like(counts), where=tot > 0)
    if empty is not None:
        out[tot[..., 0] == 0] = empty
    return out


def _positive(name, v):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s must be a number, got %r" % (name, v))
    v = float(v)
    if not math.isfinite(v) or v <= 0.0:
        raise ValueError("%s must be a finite number > 0, got %r" % (name, v))
    return v


def _n_bins(v):
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("n_bins must be an int or None, got %r" % (v,))
    if v < 1:
        raise ValueError("n_bins must be >= 1, got %d" % v)
    if v > MAX_WINDOWS:
        raise ValueError("n_bins must be <= %d, got %d" % (MAX_WINDOWS, v))
    return int(v)


class _Posterior:
    """Shared fitting and encoding; subclasses implement ``_fit`` and ``_p``.

    Attributes (after ``fit``)
    --------------------------
    n_classes_, priors_ (class frequencies of all training rows), min_, max_, range_,
    observed_frequencies_ (class frequencies of the rows where the value is observed),
    n_observed_.
    """

    def fit(self, x, y, n_classes, sample_weight=None):
        """Fit on ``x`` (float, NaN missing) and class codes ``y`` (``0 .. C-1``).

        ``sample_weight``: frequency weights of the rows; every class count (bins,
        windows, kernel sums, priors) is then a sum of weights, so a row of integer
        weight ``m`` counts as ``m`` copies of it.  Rows of weight 0 are left out."""
        x = _as_values(x)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != x.shape[0]:
            raise ValueError("y must be 1-D with one class code per value of x (%d), got "
                             "shape %s" % (x.shape[0], y.shape))
        if y.dtype.kind not in "iu":
            raise TypeError("y must hold integer class codes, got dtype %s" % y.dtype)
        C = int(n_classes)
        if C < 1 or (y.size and (y.min() < 0 or y.max() >= C)):
            raise ValueError("class codes must lie in 0 .. n_classes - 1 (%d)" % (C - 1))
        sw = check_sample_weight(sample_weight, x.shape[0])
        keep = ~np.isnan(x)
        if sw is not None:
            keep &= sw > 0
        if not keep.any():
            raise ValueError("x has no observed value to fit on")
        order = np.argsort(x[keep], kind="stable")
        xs = x[keep][order]
        ys = y[keep][order].astype(np.int64)
        ws = None if sw is None else sw[keep][order]
        self.n_classes_ = C
        self.priors_ = class_priors(y, C, sw)
        self.observed_frequencies_ = class_priors(ys, C, ws)
        self.n_observed_ = int(xs.shape[0])
        self.min_, self.max_ = float(xs[0]), float(xs[-1])
        self.range_ = self.max_ - self.min_
        self.constant_ = not self.range_ > 0.0
        if not self.constant_:
            self._fit(xs, ys, ws)
        return self

    def transform(self, x):
        """``p(x)`` for every value: float64 ``[n, C]``, NaN rows where ``x`` is missing."""
        if not hasattr(self, "n_classes_"):
            raise RuntimeError("this %s is not fitted yet" % type(self).__name__)
        x = _as_values(x)
        out = np.full((x.shape[0], self.n_classes_), np.nan)
        ok = ~np.isnan(x)
        if self.constant_:
            out[ok] = self.observed_frequencies_
            return out
        idx = np.flatnonzero(ok) if not ok.all() else None
        vals = x if idx is None else x[idx]
        for a in range(0, vals.shape[0], _BLOCK):   # blocks keep temporaries small
            part = self._p(vals[a:a + _BLOCK])
            if idx is None:
                out[a:a + _BLOCK] = part
            else:
                out[idx[a:a + _BLOCK]] = part
        return out

    __call__ = transform

    def distance_bound(self, q):
        """An upper bound of ``||p(x) - p(y)||_q`` (the index's pruning needs one):
        class-frequency vectors give ``sqrt(2)`` for q = 2 (widened by the Gaussian grid's
        interpolation tolerance) and 2 for q = 1."""
        return math.sqrt(2.0) * (1.0 + 1e-5) if q == 2 else 2.0

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in self._params}

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.get_params().items()))


class DiscretizedPosterior(_Posterior):
    """DVDM (Wilson & Martinez): ``p(x)`` = class frequencies of the bin holding ``x``.

    Parameters
    ----------
    n_bins : int or None
        Equal-width bins over the training range (default ``max(5, C)``).
    discretizer : hdist.discretize.Discretizer or None
        Any discretizer instead (a fresh copy is fitted, with the classes when it is
        supervised, e.g. :class:`~hdist.discretize.MDLP`).  Not together with ``n_bins``.

    An empty bin has ``P = 0`` for every class; values outside the training range fall in
    the end bins (the end intervals are open).
    """

    _params = ("n_bins", "discretizer")

    def __init__(self, n_bins=None, discretizer=None):
        self.n_bins = _n_bins(n_bins)
        if discretizer is not None and not isinstance(discretizer, Discretizer):
            raise TypeError("discretizer must be one of hdist.discretize's discretizers "
                            "(EqualWidth, EqualFrequency, MDLP), got %r" % (discretizer,))
        if discretizer is not None and n_bins is not None:
            raise ValueError("give either n_bins or discretizer, not both")
        self.discretizer = discretizer

    def _fit(self, xs, ys, ws=None):
        C = self.n_classes_
        if self.discretizer is None:
            disc = EqualWidth(self.n_bins or max(5, C))
        else:
            disc = type(self.discretizer)(**self.discretizer.get_params())
        disc.fit(xs, ys if disc.supervised else None, sample_weight=ws)
        self.discretizer_ = disc
        bins = disc.codes(xs)
        counts = np.zeros((disc.n_bins_, C))
        np.add.at(counts, (bins, ys), 1.0 if ws is None else ws)
        self.bin_counts_ = counts
        self.bin_probabilities_ = _frequencies(counts, None)

    def _p(self, x):
        return self.bin_probabilities_[self.discretizer_.codes(x)]


class InterpolatedPosterior(_Posterior):
    """IVDM (Wilson & Martinez): bin frequencies interpolated between bin midpoints.

    ``s = n_bins`` (default ``max(5, C)``) equal-width bins over the training range give
    ``P_u`` (an empty bin has ``P = 0``) at ``mid_u = min + R (u + ½) / s``.  For
    ``mid_u <= x <= mid_{u+1}``, ``p(x) = P_u + (x - mid_u) / (mid_{u+1} - mid_u) ·
    (P_{u+1} - P_u)``; below ``mid_0`` it is ``P_0``, above ``mid_{s-1}`` it is ``P_{s-1}``.
    """

    _params = ("n_bins",)

    def __init__(self, n_bins=None):
        self.n_bins = _n_bins(n_bins)

    def _fit(self, xs, ys, ws=None):
        C = self.n_classes_
        s = self.n_bins or max(5, C)
        disc = EqualWidth(s).fit(xs)
        self.discretizer_ = disc
        counts = np.zeros((disc.n_bins_, C))
        np.add.at(counts, (disc.codes(xs), ys), 1.0 if ws is None else ws)
        self.bin_probabilities_ = _frequencies(counts, None)
        if disc.n_bins_ == s:
            u = np.arange(s, dtype=np.float64)
            self.midpoints_ = self.min_ + self.range_ * (u + 0.5) / s
        else:  # cut points merged by rounding: midpoints of the bins that remain
            e = np.concatenate([[self.min_], disc.bin_edges_, [self.max_]])
            self.midpoints_ = (e[:-1] + e[1:]) / 2.0

    def _p(self, x):
        P, mid = self.bin_probabilities_, self.midpoints_
        s = mid.shape[0]
        if s == 1:
            return np.repeat(P[:1], x.shape[0], axis=0)
        u = np.searchsorted(mid, x, side="right") - 1
        below = u < 0
        above = u >= s - 1
        u = np.clip(u, 0, s - 2)
        frac = (x - mid[u]) / (mid[u + 1] - mid[u])
        out = P[u] + frac[:, None] * (P[u + 1] - P[u])
        out[below] = P[0]
        out[above] = P[s - 1]
        return out


class LocalPosterior(_Posterior):
    """LVDM (Wieczorek, Blachnik & Duch): class frequencies in ``[x - W/2, x + W/2]``, ``W = width · R``.

    Two binary searches in the sorted training values and cumulative class counts give
    each value's window in O(log n).  An empty window gives the class priors.
    """

    _params = ("width",)

    def __init__(self, width=0.2):
        self.width = _positive("width", width)

    def _fit(self, xs, ys, ws=None):
        self._xs = xs
        self._cum = _cumulative_counts(ys, self.n_classes_, ws)
        self.window_ = self.width * self.range_

    def _p(self, x):
        half = self.window_ / 2
        a = np.searchsorted(self._xs, x - half, side="left")
        b = np.searchsorted(self._xs, x + half, side="right")
        return _frequencies(self._cum[b] - self._cum[a], self.priors_)


class ParzenPosterior(_Posterior):
    """PVDM (Wieczorek, Blachnik & Duch, eq. 15): mean class frequencies of sliding windows.

    Windows ``[b_z, b_z + W)`` with ``b_z = min - W + z S`` for ``z = 1, 2, ...`` while
    ``b_z <= max`` (``W = width R``, ``S = step R``).  ``p(x)`` is the mean of the class
    frequencies of the windows that contain ``x`` and hold at least one training value;
    when there is none, the priors.  The windows containing ``x`` are a contiguous run,
    found by two binary searches; prefix sums over windows give the mean in O(log Z).
    """

    _params = ("width", "step")

    def __init__(self, width=0.4, step=0.05):
        self.width = _positive("width", width)
        self.step = _positive("step", step)
        if (1.0 + self.width) / self.step > MAX_WINDOWS:
            raise ValueError("step=%r gives more than %d windows per attribute; use a larger "
                             "step" % (step, MAX_WINDOWS))

    def _fit(self, xs, ys, ws=None):
        C = self.n_classes_
        W = self.width * self.range_
        S = self.step * self.range_
        zmax = int(math.ceil((self.range_ + W) / S)) + 2
        z = np.arange(1, zmax + 1, dtype=np.float64)
        starts = (self.min_ - W) + z * S
        starts = starts[starts <= self.max_]
        ends = starts + W
        cum = _cumulative_counts(ys, C, ws)
        i0 = np.searchsorted(xs, starts, side="left")
        i1 = np.searchsorted(xs, ends, side="left")
        counts = cum[i1] - cum[i0]
        full = (i1 > i0)
        freq = _frequencies(counts, None)
        self.window_starts_, self.window_ends_ = starts, ends
        self.window_counts_ = counts
        self._F = np.vstack([np.zeros((1, C)), np.cumsum(freq, axis=0)])
        self._K = np.concatenate([[0], np.cumsum(full)])

    def _p(self, x):
        hi = np.searchsorted(self.window_starts_, x, side="right")   # b_z <= x
        lo = np.searchsorted(self.window_ends_, x, side="right")     # b_z + W <= x
        lo = np.minimum(lo, hi)
        k = (self._K[hi] - self._K[lo]).astype(np.float64)
        out = np.divide(self._F[hi] - self._F[lo], k[:, None],
                        out=np.zeros((x.shape[0], self.n_classes_)), where=k[:, None] > 0)
        out[k == 0] = self.priors_
        return out


# --------------------------------------------------------------------------------------
# GVDM

#: exp(-t²) > 0 in float64 for every t <= this (exp(-739.84) ~ 4e-322)
_SAFE_T = 27.2
#: exp(-t²) == 0 in float64 for every t >= this: no kernel weight survives beyond
_GRID_T = 27.35
_CELL = 0.125          # width of the moment cells, in bandwidths
_NODE0 = 0.25          # initial grid spacing, in bandwidths


class GaussianPosterior(_Posterior):
    """GVDM (Wieczorek, Blachnik & Duch, eq. 13-14): Gaussian-kernel class posteriors.

    ``p(c | x) = Σ_{j: y_j = c} exp(-t_j²) / Σ_j exp(-t_j²)`` with ``t_j = (x - x_j) / h``,
    ``h = sigma · R``.  Where every weight underflows (``exp(-min_j t_j²) == 0`` in float64,
    i.e. ``x`` is more than about 27.3 bandwidths from every training value) the class
    priors are used.

    How it is computed.  The ratio does not change when every weight is multiplied by
    ``exp(min_j t_j²)``, so the fitted function is evaluated with that shift and never loses
    precision to underflow.  ``fit`` evaluates it exactly, with its derivative, on a grid in
    ``s = (x - min) / h`` that covers every point within 27.35 bandwidths of a training
    value, and refines the grid until the cubic Hermite interpolant differs from the exact
    value by at most ``tol`` (1e-7) at the quarter points of every interval.  ``transform``
    is then a binary search and a cubic per value.

    Exact node values: weights below ``e^-L`` times the largest (``L = ln n + 32.3``) are
    dropped (total relative error < 1e-14).  The kept sum is either taken point by point,
    or, when cheaper, from cells of width h/8 whose points are summarized by the moments of
    the Hermite expansion ``exp(-(s - c - a)²) = exp(-(s - c)²) Σ_m H_m(s - c) a^m / m!``
    (Greengard & Strain's fast Gauss transform in one dimension), truncated where the
    bound ``e^{2|s - c| r + r²}`` on the series tail gives a relative error below 1e-15
    for every distance on the grid.  The grid has O(1 / sigma) nodes, independent of n,
    so the fitting time grows as 1 / sigma (about a second per attribute at sigma = 0.01).
    """

    def distance_bound(self, q):
        """As for every posterior for q = 2; none for q = 1, where the grid interpolation
        may overshoot 2 by its tolerance."""
        return math.sqrt(2.0) * (1.0 + 1e-5) if q == 2 else None

    _params = ("sigma",)

    def __init__(self, sigma=0.5, tol=1e-7):
        self.sigma = _positive("sigma", sigma)
        self.tol = _positive("tol", tol)
        self._method = None   # "direct" or "cells" forces one way of exact evaluation

    # -- fitting -------------------------------------------------------------------
    def _fit(self, xs, ys, ws=None):
        C = self.n_classes_
        self.bandwidth_ = h = self.sigma * self.range_
        self._xs = xs
        u = (xs - self.min_) / h
        self._u = u
        self._u_class = [u[ys == c] for c in range(C)]      # each sorted
        # sample weights per class (None: every weight 1)
        self._w_class = None if ws is None else [ws[ys == c] for c in range(C)]
        n = u.shape[0]
        # dropped kernel terms are below e^-L times the nearest one's: their total,
        # relative to the kept sum, is below (Σ w / min w) e^-L ~ 1e-14
        self._L = math.log(n if ws is None else float(ws.sum()) / float(ws.min())) + 32.3
        self._build_cells(ys, ws)
        gaps = np.flatnonzero(np.diff(u) > 2 * _GRID_T)
        seg_lo = u[np.concatenate([[0], gaps + 1])] - _GRID_T
        seg_hi = u[np.concatenate([gaps, [n - 1]])] + _GRID_T
        self._check_all = bool((np.diff(u) > 2 * _SAFE_T).any())
        self._build_grid(seg_lo, seg_hi)

    def _build_cells(self, ys, ws=None):
        C = self.n_classes_
        u = self._u
        r = _CELL / 2
        cid = np.floor(u / _CELL).astype(np.int64)
        uniq, inv = np.unique(cid, return_inverse=True)
        centers = (uniq + 0.5) * _CELL
        alpha = (u - centers[inv]) / r
        # number of terms: relative tail bound at the largest distance used on the grid
        X = math.sqrt(_GRID_T ** 2 + self._L) + 2 * _CELL
        terms = np.zeros(400)
        g_prev, g = 0.0, 1.0
        for m in range(400):
            terms[m] = g
            g_prev, g = g, (2 * X * r * g + 2 * r * r * g_prev) / (m + 1)
        tail = np.cumsum(terms[::-1])[::-1]
        P = int(np.flatnonzero(tail <= 1e-15 * math.exp(-(2 * X * r + r * r)))[0]) + 2
        K = uniq.shape[0]
        mu = np.empty((P, K, C))
        key = inv * C + ys
        pw = np.ones_like(u) if ws is None else ws.astype(np.float64)
        for m in range(P):
            mu[m] = np.bincount(key, weights=pw, minlength=K * C).reshape(K, C)
            pw = pw * alpha
        self._centers = centers
        self._mu = mu
        self._P = P

    def _build_grid(self, seg_lo, seg_hi):
        nodes = []
        for a, b in zip(seg_lo, seg_hi):
            k = int(math.ceil((b - a) / _NODE0))
            nodes.append(a + (b - a) * np.arange(k + 1) / k)
        s = np.concatenate(nodes)
        V, D = self._exact(s)
        # intervals between consecutive nodes of one segment
        seg_end = np.cumsum([len(g) for g in nodes])
        right = np.setdiff1d(np.arange(1, s.shape[0]), seg_end)
        sl, sr = s[right - 1], s[right]
        Vl, Vr, Dl, Dr = V[right - 1], V[right], D[right - 1], D[right]
        keep_s, keep_V, keep_D = [s], [V], [D]
        fr = np.array([0.25, 0.5, 0.75])
        for _ in range(60):
            if sl.shape[0] == 0:
                break
            w = sr - sl
            pts = sl[:, None] + w[:, None] * fr[None, :]
            Ve, De = self._exact(pts.ravel())
            Ve = Ve.reshape(pts.shape + (-1,))
            De = De.reshape(pts.shape + (-1,))
            Vi = _cubic(fr[None, :, None], Vl[:, None], Vr[:, None],
                        Dl[:, None] * w[:, None, None],
                        Dr[:, None] * w[:, None, None])
            err = np.abs(Vi - Ve).max(axis=(1, 2))
            bad = (err > self.tol) & (w > 1e-9 * (1.0 + np.abs(sl)))
            if not bad.any():
                break
            ms, mV, mD = pts[bad, 1], Ve[bad, 1], De[bad, 1]
            keep_s.append(ms)
            keep_V.append(mV)
            keep_D.append(mD)
            sl = np.concatenate([sl[bad], ms])
            sr = np.concatenate([ms, sr[bad]])
            Vl = np.concatenate([Vl[bad], mV])
            Vr = np.concatenate([mV, Vr[bad]])
            Dl = np.concatenate([Dl[bad], mD])
            Dr = np.concatenate([mD, Dr[bad]])
        s = np.concatenate(keep_s)
        order = np.argsort(s, kind="stable")
        s = s[order]
        first = np.concatenate([[True], s[1:] > s[:-1]])
        g = self.grid_ = s[first]
        V = np.concatenate(keep_V)[order][first]
        D = np.concatenate(keep_D)[order][first]
        # per interval, the cubic in t = (s - g_k) / (g_{k+1} - g_k): c0 + c1 t + c2 t² + c3 t³
        w = (g[1:] - g[:-1])[:, None]
        v0, v1, m0, m1 = V[:-1], V[1:], D[:-1] * w, D[1:] * w
        self._coef = np.ascontiguousarray(np.stack(
            [v0, m0, 3 * (v1 - v0) - 2 * m0 - m1, 2 * (v0 - v1) + m0 + m1], axis=1))
        self._inv_w = 1.0 / w[:, 0]
        self._V, self._D = V, D

    # -- exact evaluation (fit time) ----------------------------------------------------
    def _nearest_sq(self, s):
        """Squared distance (in bandwidths) from each ``s`` to the nearest training point."""
        u = self._u
        i = np.searchsorted(u, s)
        a = u[np.clip(i - 1, 0, u.shape[0] - 1)]
        b = u[np.clip(i, 0, u.shape[0] - 1)]
        return np.minimum((s - a) ** 2, (s - b) ** 2)

    def _exact(self, s):
        """Exact ``p`` and ``dp/ds`` at points ``s`` (bandwidth units from ``min``)."""
        s = np.asarray(s, dtype=np.float64)
        t0 = self._nearest_sq(s)
        rho = np.sqrt(t0 + self._L)
        a = np.searchsorted(self._u, s - rho, side="left")
        b = np.searchsorted(self._u, s + rho, side="right")
        r = _CELL / 2
        ka = np.searchsorted(self._centers, s - rho - r, side="left")
        kb = np.searchsorted(self._centers, s + rho + r, side="right")
        method = self._method
        if method is None:
            method = "direct" if (b - a).sum() <= (kb - ka).sum() * self._P else "hermite"
        if method == "direct":
            num, dnum = _chunked(self._direct, s, t0, a, b, self.n_classes_)
        else:
            num, dnum = _chunked(self._cells, s, t0, ka, kb, self.n_classes_)
        den = num.sum(axis=1, keepdims=True)
        dden = dnum.sum(axis=1, keepdims=True)
        return num / den, (dnum * den - num * dden) / (den * den)

    def _direct(self, s, t0, a, b):
        """Point-by-point sums, class by class (``a``, ``b`` size the chunk only)."""
        rho = np.sqrt(t0 + self._L)
        num = np.zeros((s.shape[0], self.n_classes_))
        dnum = np.zeros_like(num)
        for c, uc in enumerate(self._u_class):
            ac = np.searchsorted(uc, s - rho, side="left")
            bc = np.searchsorted(uc, s + rho, side="right")
            if not (bc > ac).any():
                continue
            idx, d, w = _window(s, t0, ac, bc, uc)
            if self._w_class is not None:
                w = w * self._w_class[c][idx]
            num[:, c] = w.sum(axis=1)
            dnum[:, c] = -2.0 * (d * w).sum(axis=1)
        return num, dnum

    def _cells(self, s, t0, ka, kb):
        idx, x, base = _window(s, t0, ka, kb, self._centers)
        r = _CELL / 2
        num = np.zeros((s.shape[0], self.n_classes_))
        dnum = np.zeros_like(num)
        g_prev = np.zeros_like(x)
        g = np.ones_like(x)
        for m in range(self._P):
            mu = self._mu[m][idx]
            g_next = (2.0 * r * x * g - 2.0 * r * r * g_prev) / (m + 1)
            num += np.einsum("mw,mwc->mc", base * g, mu)
            dnum -= np.einsum("mw,mwc->mc", base * (g_next * ((m + 1) / r)), mu)
            g_prev, g = g, g_next
        return num, dnum

    # -- encoding -----------------------------------------------------------------------
    def _p(self, x):
        s = (x - self.min_) / self.bandwidth_
        u = self._u
        if self._check_all:
            check = np.ones(x.shape[0], dtype=bool)
        else:
            check = (s < u[0] - _SAFE_T) | (s > u[-1] + _SAFE_T)
        under = None
        if check.any():
            xc = x[check]
            xs = self._xs
            i = np.searchsorted(xs, xc)
            lo = xs[np.clip(i - 1, 0, xs.shape[0] - 1)]
            hi = xs[np.clip(i, 0, xs.shape[0] - 1)]
            h = self.bandwidth_
            d2 = np.minimum(((xc - lo) / h) ** 2, ((xc - hi) / h) ** 2)
            under = np.zeros(x.shape[0], dtype=bool)
            under[check] = np.exp(-d2) == 0.0
        g = self.grid_
        k = np.searchsorted(g, s, side="right") - 1
        np.clip(k, 0, g.shape[0] - 2, out=k)
        t = ((s - g[k]) * self._inv_w[k])[:, None]
        c = self._coef[k]
        out = c[:, 3]
        out *= t
        out += c[:, 2]
        out *= t
        out += c[:, 1]
        out *= t
        out += c[:, 0]
        if under is not None and under.any():
            out[under] = self.priors_
        return out


def _window(s, t0, a, b, pos):
    """Padded windows ``a[i] .. b[i]-1`` of the sorted positions ``pos``: their indices,
    the offsets ``s - pos`` and the shifted kernel weights ``exp(-(offset² - t0))`` (0 in
    the padding)."""
    idx = a[:, None] + np.arange(int((b - a).max()))[None, :]
    valid = idx < b[:, None]
    idx = np.minimum(idx, pos.shape[0] - 1)
    d = s[:, None] - pos[idx]
    return idx, d, np.where(valid, np.exp(-(d * d - t0[:, None])), 0.0)


def _cubic(t, v0, v1, m0, m1):
    """Cubic Hermite interpolation on [0, 1] with end values v and scaled slopes m."""
    t2 = t * t
    t3 = t2 * t
    return ((2 * t3 - 3 * t2 + 1) * v0 + (t3 - 2 * t2 + t) * m0 + (-2 * t3 + 3 * t2) * v1
            + (t3 - t2) * m1)


def _chunked(fn, s, t0, lo, hi, C, budget=1 << 20):
    """Run ``fn`` on slices of the points so that points x window entries stay bounded."""
    n = s.shape[0]
    num = np.empty((n, C))
    dnum = np.empty((n, C))
    width = np.maximum(hi - lo, 1)
    start = 0
    while start < n:
        stop = start + 1
        cur = int(width[start])
        while stop < n and max(cur, int(width[stop])) * (stop + 1 - start) <= budget:
            cur = max(cur, int(width[stop]))
            stop += 1
        sl = slice(start, stop)
        num[sl], dnum[sl] = fn(s[sl], t0[sl], lo[sl], hi[sl])
        start = stop
    return num, dnum


# --------------------------------------------------------------------------------------
# metric presets

def _q(metric):
    q = metric._param("q")
    if isinstance(q, bool) or not isinstance(q, numbers.Real) or float(q) not in (1.0, 2.0):
        raise ValueError("q must be 1 or 2, got %r" % (q,))
    return int(q)


ESTIMATORS = {
    "dvdm": lambda metric: DiscretizedPosterior(n_bins=metric._param("n_bins"),
                                                discretizer=metric._param("discretizer")),
    "ivdm": lambda metric: InterpolatedPosterior(n_bins=metric._param("n_bins")),
    "gvdm": lambda metric: GaussianPosterior(sigma=metric._param("sigma")),
    "lvdm": lambda metric: LocalPosterior(width=metric._param("width")),
    "pvdm": lambda metric: ParzenPosterior(width=metric._param("width"),
                                           step=metric._param("step")),
}


class _Factory:
    """Continuous-component factory of one preset (``metrics._CONT_EXTRA``): returns the
    component and the fitted class-posterior estimator, which :meth:`hdist.Metric.fit`
    keeps as ``estimators_[name]``."""

    def __init__(self, kind):
        self.kind = kind

    def __call__(self, metric, j, name, x, policy, y, C, sample_weight=None):
        q = _q(metric)
        try:
            est = ESTIMATORS[self.kind](metric)
        except (TypeError, ValueError) as exc:
            raise type(exc)("metric %r: %s" % (metric.name, exc)) from None
        est.fit(x, y, C, sample_weight)
        return EmbedComponent(j, C, q, est, policy, nominal=False), est


class _Check:
    """Validate a preset's parameters before fitting (``metrics.PARAM_CHECKS``)."""

    def __init__(self, kind):
        self.kind = kind

    def __call__(self, metric):
        _q(metric)
        ESTIMATORS[self.kind](metric)


#: continuous kind of hdist._core.presets.TABLE -> component factory / parameter check
FACTORIES = {kind: _Factory(kind) for kind in ESTIMATORS}
CHECKS = {kind: _Check(kind) for kind in ESTIMATORS}
