"""Discretization of one continuous attribute (docs/metrics.md).

Three discretizers with the scikit-learn shape: ``fit(x, y=None)`` learns interior cut
points ``bin_edges_`` from a 1-D array, ``transform(x)`` numbers the bins from 0.

- :class:`EqualWidth` (``n_bins`` intervals of equal width over the training range, or over
  the range between the ``trim`` and ``1 - trim`` quantiles);
- :class:`EqualFrequency` (cuts at the ``k / n_bins`` quantiles);
- :class:`MDLP` (supervised: Fayyad & Irani's recursive minimum-entropy splits with the
  minimum description length stopping rule).

Conventions shared by all three:

- The end intervals are open: a value below the first cut is in bin 0, a value above the
  last cut in the last bin, whatever the training range was.
- A value equal to a cut point belongs to the bin above it: bins are
  ``(-inf, c_1), [c_1, c_2), ..., [c_k, +inf)`` and ``bin(x) = #{cuts <= x}``.
- Missing values (NaN, None, pandas.NA) are left out of fitting and stay missing:
  ``transform`` returns float64 bin numbers with NaN where the value is missing.
- A column with a single observed value (or a zero-width range) has no cut point: one bin.
- ``fit(x, y, sample_weight=w)``: frequency weights, a value of weight ``m`` counts as
  ``m`` copies of it (integer weights give exactly the cuts of the repeated values).  Rows
  of weight 0 are left out; quantiles are weighted quantiles
  (:func:`hdist._core.statistics.weighted_quantile`, docs/metrics.md) and MDLP's class counts
  and ``N`` are sums of weights.

References
----------
- U. M. Fayyad and K. B. Irani, "Multi-Interval Discretization of Continuous-Valued
  Attributes for Classification Learning", IJCAI 1993, 1022-1027.
- D. R. Wilson and T. R. Martinez, "Improved Heterogeneous Distance Functions", JAIR 6
  (1997): equal-width intervals for DVDM and IVDM.
"""
from __future__ import annotations

import math
import numbers
from fractions import Fraction

import numpy as np

from .statistics import weighted_quantile
from .schema import NotFittedError, check_sample_weight

__all__ = ["Discretizer", "EqualWidth", "EqualFrequency", "MDLP", "equal_width",
           "equal_frequency", "mdlp"]


# --------------------------------------------------------------------------------------
# input checking

def _as_values(x, what="x"):
    """A 1-D float64 copy of ``x`` with NaN for every missing value."""
    if isinstance(x, (str, bytes)) or x is None or np.isscalar(x):
        raise ValueError("%s must be a 1-D array of numbers, got %r" % (what, x))
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        try:
            x = x.to_numpy(dtype=np.float64, na_value=np.nan)
        except TypeError:
            x = x.to_numpy(dtype=np.float64)
    arr = np.asarray(x)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError("%s must be 1-D (one attribute), got shape %s" % (what, arr.shape))
    if arr.dtype.kind in "iuf":
        out = arr.astype(np.float64)
    elif arr.dtype.kind == "b":
        raise TypeError("%s must hold numbers, got booleans" % what)
    else:
        out = np.empty(arr.shape[0], dtype=np.float64)
        for i, v in enumerate(arr.tolist()):
            if v is None or type(v).__name__ in ("NAType", "NaTType"):
                out[i] = np.nan
            elif isinstance(v, numbers.Real) and not isinstance(v, bool):
                out[i] = float(v)
            else:
                raise TypeError("%s must hold numbers, got %r" % (what, v))
    if np.isinf(out).any():
        raise ValueError("%s holds an infinite value; use NaN for missing" % what)
    return out


def _as_labels(y, n):
    """Class labels -> int codes 0..k-1 (missing labels are an error)."""
    if y is None:
        raise ValueError("y is required: this discretizer is supervised (fit(x, y))")
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy()
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError("y must be 1-D, got shape %s" % (arr.shape,))
    if arr.shape[0] != n:
        raise ValueError("y has %d labels for %d values of x" % (arr.shape[0], n))
    if arr.dtype.kind == "f" and np.isnan(arr).any():
        raise ValueError("y has a missing label; every value needs a class")
    if arr.dtype.kind == "O":
        keys = []
        for v in arr.tolist():
            if v is None or (isinstance(v, float) and v != v) or \
                    type(v).__name__ in ("NAType", "NaTType"):
                raise ValueError("y has a missing label; every value needs a class")
            keys.append(v)
        try:
            classes = sorted(set(keys))
        except TypeError:
            classes = sorted(set(keys), key=lambda k: (type(k).__name__, repr(k)))
        pos = {c: i for i, c in enumerate(classes)}
        return np.array([pos[k] for k in keys], dtype=np.int64)
    _, codes = np.unique(arr, return_inverse=True)
    return codes.astype(np.int64).ravel()


#: most bins a discretizer accepts: its cut points are allocated, and a count beyond this
#: (more bins than any training set could fill) would only exhaust memory
MAX_BINS = 10_000_000


def _check_int(name, v, lo, hi=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s must be an int, got %r" % (name, v))
    if v < lo:
        raise ValueError("%s must be >= %d, got %d" % (name, lo, v))
    if hi is not None and v > hi:
        raise ValueError("%s must be <= %d, got %d" % (name, hi, v))
    return int(v)


def _bin_codes(cuts, x):
    """``#{cuts <= x}`` as int64, -1 where x is NaN."""
    codes = np.searchsorted(cuts, x, side="right").astype(np.int64)
    codes[np.isnan(x)] = -1
    return codes


# --------------------------------------------------------------------------------------
# the discretizers

class Discretizer:
    """Base class: parameters, ``transform`` and the fitted attributes.

    Attributes
    ----------
    bin_edges_ : float64 array
        Interior cut points, increasing, after ``fit``; the end intervals extend to -inf
        and +inf.
    n_bins_ : int
        Number of bins, ``len(bin_edges_) + 1``.

    See Also
    --------
    EqualWidth, EqualFrequency, MDLP : the discretizers.

    Examples
    --------
    >>> from hdist.discretize import Discretizer, EqualWidth
    >>> isinstance(EqualWidth(3), Discretizer)
    True
    """

    _params: tuple = ()
    supervised = False

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in self._params}

    def set_params(self, **params):
        bad = sorted(set(params) - set(self._params))
        if bad:
            raise ValueError("%s has no parameter(s) %s" % (type(self).__name__, bad))
        new = self.get_params()
        new.update(params)
        self.__init__(**new)
        for attr in ("bin_edges_", "n_bins_"):
            self.__dict__.pop(attr, None)
        return self

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % kv for kv in self.get_params().items()))

    def _fit_values(self, x, y, sample_weight=None):
        """Observed values of ``x`` of positive weight, their class codes (when ``y`` is
        given) and their weights (None without ``sample_weight``)."""
        x = _as_values(x)
        ycodes = _as_labels(y, x.shape[0]) if y is not None else None
        sw = check_sample_weight(sample_weight, x.shape[0])
        keep = ~np.isnan(x)
        if sw is not None:
            keep &= sw > 0
        if not keep.any():
            raise ValueError("x has no observed value to fit on"
                             + (" (of positive sample_weight)" if sw is not None else ""))
        return (x[keep], (ycodes[keep] if ycodes is not None else None),
                (sw[keep] if sw is not None else None))

    def fit(self, x, y=None, sample_weight=None):
        """Learn the cut points from the observed values of ``x`` (NaN left out);
        ``sample_weight``: frequency weights of the values (see the module's notes)."""
        values, codes, w = self._fit_values(x, y, sample_weight)
        cuts = np.asarray(self._cuts(values, codes, w), dtype=np.float64)
        self.bin_edges_ = cuts
        self.n_bins_ = int(cuts.shape[0]) + 1
        return self

    def _check_fitted(self):
        if not hasattr(self, "bin_edges_"):
            raise NotFittedError("this %s is not fitted yet; call fit(x) first"
                                 % type(self).__name__)

    def codes(self, x):
        """Bin numbers as int64, with ``-1`` for missing values."""
        self._check_fitted()
        return _bin_codes(self.bin_edges_, _as_values(x))

    def transform(self, x):
        """Bin numbers (0 .. ``n_bins_ - 1``) as float64; NaN where ``x`` is missing."""
        c = self.codes(x).astype(np.float64)
        c[c < 0] = np.nan
        return c

    def fit_transform(self, x, y=None, sample_weight=None):
        return self.fit(x, y, sample_weight).transform(x)


class EqualWidth(Discretizer):
    """``n_bins`` intervals of equal width (Wilson & Martinez's DVDM/IVDM bins).

    A value's bin is ``floor((x - lo) / w)`` with ``w = (hi - lo) / n_bins`` (Wilson &
    Martinez 1997, eq. 18, numbered from 0), the maximum ``hi`` in the last bin, where
    ``[lo, hi]`` is the range of the observed values, or with ``trim > 0`` the range between
    their ``trim`` and ``1 - trim`` quantiles (numpy's linear interpolation), so that a few
    outliers do not stretch the bins; values outside ``[lo, hi]`` go to the end bins.  A
    zero width gives one bin.  Training bins may be empty.

    Membership is decided exactly, as by hand: ``x`` is in bin ``k`` or above when
    ``n_bins · (x - lo) >= k · (hi - lo)`` in rational arithmetic on the decimals the
    floats stand for (their shortest round-trip representation, ``repr``), so a price grid
    bins as written: with ``lo = 0``, ``hi = 5.4`` and 5 bins, 3.24 starts bin 3 although
    ``5.4 * 3 / 5`` rounds above 3.24.  ``bin_edges_`` holds, for each ``k``, the smallest
    float in bin ``k`` or above, so ``#{edges <= x}`` is that exact bin.

    Parameters
    ----------
    n_bins : int >= 1, default=5
        Number of bins.
    trim : float in [0, 0.5), default=0
        Share of the values left out at each end of the range that is cut.

    Attributes
    ----------
    bin_edges_ : float64 array
        Interior cut points, increasing.
    n_bins_ : int
        Number of bins, ``len(bin_edges_) + 1``.

    Raises
    ------
    ValueError
        ``n_bins`` or ``trim`` out of range; ``fit`` on no observed value.

    See Also
    --------
    EqualFrequency : bins of equal counts.
    MDLP : supervised cut points.

    Examples
    --------
    >>> import numpy as np
    >>> from hdist.discretize import EqualWidth
    >>> x = [1.0, 2.0, 2.5, 4.0, 7.0, 9.0, 10.0, np.nan]
    >>> ew = EqualWidth(3).fit(x)
    >>> ew.bin_edges_.tolist()
    [4.0, 7.0]
    >>> ew.transform(x).tolist()
    [0.0, 0.0, 0.0, 1.0, 2.0, 2.0, 2.0, nan]
    """

    _params = ("n_bins", "trim")

    def __init__(self, n_bins=5, trim=0.0):
        self.n_bins = _check_int("n_bins", n_bins, 1, MAX_BINS)
        if isinstance(trim, bool) or not isinstance(trim, numbers.Real) or \
                not 0.0 <= float(trim) < 0.5:
            raise ValueError("trim must be a number in [0, 0.5), got %r" % (trim,))
        self.trim = float(trim)

    def _cuts(self, x, y, w=None):
        if self.trim > 0.0:
            lo, hi = (float(v) for v in weighted_quantile(x, [self.trim, 1.0 - self.trim], w))
        else:
            lo, hi = float(x.min()), float(x.max())
        if not hi > lo:
            return np.zeros(0)
        return np.unique(_exact_cuts(lo, hi, self.n_bins))


def _decimal(v):
    """The number a float stands for as written: its shortest round-trip decimal."""
    return Fraction(repr(float(v)))


def _exact_cuts(lo, hi, n):
    """For ``k = 1 .. n - 1``, the smallest float ``x`` with ``n (x - lo) >= k (hi - lo)``,
    all three read as the decimals they stand for (:func:`_decimal`; exact rational
    arithmetic).  Reading a float as its shortest decimal is increasing in the float, so
    the floats of bin ``k`` and above are exactly those ``>=`` the k-th cut."""
    L = _decimal(lo)
    w = (_decimal(hi) - L) / n
    cuts = []
    for k in range(1, n):
        c = L + w * k
        x = float(c)                    # correctly rounded: within one step of the answer
        while _decimal(x) < c:
            x = math.nextafter(x, math.inf)
        while _decimal(math.nextafter(x, -math.inf)) >= c:
            x = math.nextafter(x, -math.inf)
        cuts.append(x)
    return cuts


class EqualFrequency(Discretizer):
    """Bins holding about the same number of training values.

    The cut points are the ``k / n_bins`` quantiles (``k = 1 .. n_bins - 1``, numpy's
    linear interpolation) of the observed values; repeated cuts are merged and a cut equal
    to the smallest value (which would leave bin 0 empty) is dropped, so columns with many
    ties get fewer bins.

    Parameters
    ----------
    n_bins : int >= 1, default=10
        Number of bins asked for (ties may merge some).

    Attributes
    ----------
    bin_edges_ : float64 array
        Interior cut points, increasing.
    n_bins_ : int
        Number of bins, ``len(bin_edges_) + 1``.

    Raises
    ------
    ValueError
        ``n_bins`` out of range; ``fit`` on no observed value.

    See Also
    --------
    EqualWidth : bins of equal width.
    MDLP : supervised cut points.

    Examples
    --------
    >>> import numpy as np
    >>> from hdist.discretize import EqualFrequency
    >>> x = [1.0, 2.0, 2.5, 4.0, 7.0, 9.0, 10.0, np.nan]
    >>> ef = EqualFrequency(2).fit(x)
    >>> ef.bin_edges_.tolist(), ef.transform(x).tolist()
    ([4.0], [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, nan])
    """

    _params = ("n_bins",)

    def __init__(self, n_bins=10):
        self.n_bins = _check_int("n_bins", n_bins, 1, MAX_BINS)

    def _cuts(self, x, y, w=None):
        if self.n_bins == 1:
            return np.zeros(0)
        q = np.unique(weighted_quantile(x, np.arange(1, self.n_bins) / self.n_bins, w))
        return q[q > x.min()]


class MDLP(Discretizer):
    """Fayyad & Irani's (1993) supervised discretization; needs ``fit(x, y)``.

    A set ``S`` of ``N`` training values is split at the boundary between two adjacent
    distinct values that minimizes the class entropy ``E(S1, S2) = (N1 E(S1) + N2 E(S2)) / N``
    (the first such boundary on exact ties, ties judged to 1e-12 relative), and the split is
    kept while

        Gain = E(S) - E(S1, S2) > log2(N - 1) / N + Δ / N,
        Δ = log2(3^k - 2) - [k E(S) - k1 E(S1) - k2 E(S2)],

    ``k``, ``k1``, ``k2`` being the numbers of classes present in ``S``, ``S1``, ``S2`` and
    entropies in bits; then both halves are split the same way.  A cut point is the midpoint
    of the two values it separates, as Weka places it (iris gives petal length cuts 2.45 and
    4.75).  Rows with a missing value are left out.

    Attributes
    ----------
    bin_edges_ : float64 array
        Interior cut points, increasing.
    n_bins_ : int
        Number of bins, ``len(bin_edges_) + 1``.

    Raises
    ------
    ValueError
        ``fit`` without class labels, or with labels of another length.

    See Also
    --------
    EqualWidth, EqualFrequency : unsupervised bins.

    Examples
    --------
    >>> from hdist.discretize import MDLP
    >>> md = MDLP().fit([1.0, 1.5, 2.0, 2.2, 6.0, 6.5, 7.0, 7.5], list("aaaabbbb"))
    >>> md.bin_edges_.tolist()
    [4.1]
    """

    _params = ()
    supervised = True

    def fit(self, x, y=None, sample_weight=None):
        """Learn the cut points from ``x`` and the class labels ``y`` (``sample_weight``:
        the class counts are sums of weights)."""
        if y is None:
            raise ValueError("MDLP is supervised: call fit(x, y) with class labels")
        return super().fit(x, y, sample_weight)

    def _cuts(self, x, y, w=None):
        order = np.argsort(x, kind="stable")
        v = x[order]
        c = y[order]
        _, c = np.unique(c, return_inverse=True)
        k_all = int(c.max()) + 1
        onehot = np.zeros((v.shape[0], k_all))
        onehot[np.arange(v.shape[0]), c] = 1.0 if w is None else w[order]
        cum = np.vstack([np.zeros((1, k_all)), np.cumsum(onehot, axis=0)])
        cw = cum.sum(axis=1) if w is not None else np.arange(v.shape[0] + 1, dtype=np.float64)
        cuts = []
        stack = [(0, v.shape[0])]
        while stack:
            a, b = stack.pop()
            split = _mdlp_split(v, cum, a, b, cw)
            if split is None:
                continue
            i, cut = split
            cuts.append(cut)
            stack.append((a, i))
            stack.append((i, b))
        return np.sort(np.array(cuts, dtype=np.float64))


def _ent_bits(counts):
    """N * E(counts) in bits, row-wise: ``N log2 N - Σ n_c log2 n_c`` (0 log 0 = 0)."""
    counts = np.asarray(counts, dtype=np.float64)
    tot = counts.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(tot > 0, tot * np.log2(np.where(tot > 0, tot, 1.0)), 0.0)
        t2 = np.where(counts > 0, counts * np.log2(np.where(counts > 0, counts, 1.0)), 0.0)
    return t1 - t2.sum(axis=-1)


def _mdlp_split(v, cum, a, b, cw):
    """Best accepted split of sorted rows ``a .. b-1``: ``(first row of the right part,
    cut point)`` or None.  ``cw[i]``: the weight of the first ``i`` rows (their number
    without weights)."""
    n = float(cw[b] - cw[a])
    if b - a < 2 or not n > 1.0:
        return None
    # candidate boundaries: after row i (a <= i < b-1) where v[i] < v[i+1]
    idx = np.flatnonzero(v[a:b - 1] < v[a + 1:b]) + a
    if idx.size == 0:
        return None
    total = cum[b] - cum[a]
    left = cum[idx + 1] - cum[a]
    right = total[None, :] - left
    nl = cw[idx + 1] - cw[a]
    nr = n - nl
    cond = (_ent_bits(left) + _ent_bits(right)) / n        # E(S1, S2)
    best_val = cond.min()
    tol = 1e-12 * max(1.0, abs(best_val))
    pos = int(np.flatnonzero(cond <= best_val + tol)[0])
    e_s = float(_ent_bits(total)) / n
    gain = e_s - float(cond[pos])
    if not gain > 0.0:
        return None
    L = left[pos]
    R = right[pos]
    e1 = float(_ent_bits(L)) / nl[pos]
    e2 = float(_ent_bits(R)) / nr[pos]
    k = int((total > 0).sum())
    k1 = int((L > 0).sum())
    k2 = int((R > 0).sum())
    delta = math.log2(3.0 ** k - 2.0) - (k * e_s - k1 * e1 - k2 * e2)
    if not gain > (math.log2(n - 1) + delta) / n:
        return None
    i = int(idx[pos])
    return i + 1, (v[i] + v[i + 1]) / 2.0


# --------------------------------------------------------------------------------------
# function-style spellings

def equal_width(n_bins=5, trim=0.0):
    """An unfitted :class:`EqualWidth` discretizer.

    Parameters
    ----------
    n_bins : int >= 1, default=5
        Number of bins.
    trim : float in [0, 0.5), default=0
        Share of the values left out at each end of the range that is cut.

    Returns
    -------
    EqualWidth

    See Also
    --------
    EqualWidth : the class, with the rule.

    Examples
    --------
    >>> from hdist.discretize import equal_width
    >>> equal_width(3).fit([0.0, 1.0, 2.0, 3.0]).bin_edges_.tolist()
    [1.0, 2.0]
    """
    return EqualWidth(n_bins, trim)


def equal_frequency(n_bins=10):
    """An unfitted :class:`EqualFrequency` discretizer.

    Parameters
    ----------
    n_bins : int >= 1, default=10
        Number of bins asked for.

    Returns
    -------
    EqualFrequency

    See Also
    --------
    EqualFrequency : the class, with the rule.

    Examples
    --------
    >>> from hdist.discretize import equal_frequency
    >>> equal_frequency(2).fit([0.0, 1.0, 2.0, 3.0]).bin_edges_.tolist()
    [1.5]
    """
    return EqualFrequency(n_bins)


def mdlp():
    """An unfitted :class:`MDLP` discretizer.

    Returns
    -------
    MDLP

    See Also
    --------
    MDLP : the class, with the rule.

    Examples
    --------
    >>> from hdist.discretize import mdlp
    >>> mdlp().fit([1.0, 2.0, 8.0, 9.0], ["a", "a", "b", "b"]).bin_edges_.tolist()
    [5.0]
    """
    return MDLP()
