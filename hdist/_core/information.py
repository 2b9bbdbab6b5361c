"""Entropy, mutual information, and the ``weights="mi"`` attribute weights (docs/metrics.md, section 2).

``w_j = m · I(x_j; y) / Σ_k I(x_k; y)`` (Wettschereck, Aha & Mohri 1997): each attribute is weighted by how much
it tells about the class.  Continuous attributes are discretized first (the metric's
``mi_discretizer``, default :class:`~hdist.discretize.EqualFrequency` with 10 bins).
Information is in nats (natural log) unless a ``base`` is given, with ``0 · log 0 = 0``.
When every attribute carries zero information, every weight is 1.

Missing values: a row whose value of attribute ``j`` is missing is left out of
``I(x_j; y)`` (the information is that of the rows where the attribute is observed), and
out of the fit of the discretizer.

References
----------
- D. Wettschereck, D. W. Aha, T. Mohri, "A review and empirical evaluation of feature
  weighting methods for a class of lazy learning algorithms", AI Review 11 (1997).
- C. E. Shannon, "A Mathematical Theory of Communication", Bell System Technical Journal
  27 (1948): entropy and mutual information.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .schema import column_weights
from .schema import check_sample_weight
from .discretize import Discretizer, EqualFrequency, _as_labels, _as_values

__all__ = ["entropy", "mutual_information", "mi_weights"]


def _log_base(base):
    if base is None:
        return 1.0
    if isinstance(base, bool) or not isinstance(base, numbers.Real) or not \
            (math.isfinite(base) and base > 0 and base != 1):
        raise ValueError("base must be a positive number other than 1, got %r" % (base,))
    return math.log(base)


def _is_missing(v):
    return v is None or (isinstance(v, float) and v != v) or \
        (isinstance(v, np.floating) and np.isnan(v)) or \
        type(v).__name__ in ("NAType", "NaTType")


def _codes(values, what):
    """Any 1-D labels -> int codes (``-1`` for missing values)."""
    if isinstance(values, (str, bytes)) or values is None or np.isscalar(values):
        raise ValueError("%s must be a 1-D array, got %r" % (what, values))
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy(dtype=object)
    arr = np.asarray(values, dtype=object)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError("%s must be 1-D, got shape %s" % (what, arr.shape))
    keys = {}
    out = np.empty(arr.shape[0], dtype=np.int64)
    for i, v in enumerate(arr.tolist()):
        if _is_missing(v):
            out[i] = -1
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        try:
            out[i] = keys.setdefault(v, len(keys))
        except TypeError:
            raise TypeError("%s holds an unhashable value %r" % (what, v)) from None
    return out


def _entropy_counts(counts):
    """Entropy (nats) of a distribution given by non-negative counts."""
    counts = np.asarray(counts, dtype=np.float64)
    counts = counts[counts > 0]
    tot = counts.sum()
    if tot <= 0:
        return 0.0
    p = counts / tot
    return float(-(p * np.log(p)).sum())


def _mi_codes(xc, yc, w=None):
    """``I(x; y)`` in nats from int codes (both ``>= 0``, same length); with row weights
    ``w`` the joint counts are sums of weights."""
    if xc.shape[0] == 0:
        return 0.0
    n = xc.shape[0] if w is None else float(np.sum(w))
    kx = int(xc.max()) + 1
    ky = int(yc.max()) + 1
    joint = np.bincount(xc * ky + yc, weights=w,
                        minlength=kx * ky).reshape(kx, ky).astype(np.float64)
    px = joint.sum(axis=1, keepdims=True)
    py = joint.sum(axis=0, keepdims=True)
    nz = joint > 0
    ratio = joint[nz] * n / (px @ py)[nz]
    mi = float((joint[nz] / n * np.log(ratio)).sum())
    return max(mi, 0.0)


def entropy(labels, *, base=None, sample_weight=None):
    """Shannon entropy of the empirical distribution of ``labels``.

    Parameters
    ----------
    labels : 1-D array-like of hashable values (missing values are left out)
    base : float, optional
        Logarithm base (default ``e``: nats).
    sample_weight : 1-D array-like of non-negative numbers, optional
        Frequency weights: ``p_v`` is the weight of the values ``v`` over the total
        weight of the observed values (integer weights give the entropy of the values
        repeated by their weights).

    Returns
    -------
    float, ``-Σ_v p_v log p_v`` (``0 · log 0 = 0``); 0 for a single value.

    See Also
    --------
    mutual_information : the information an attribute gives about the class.

    Examples
    --------
    >>> import hdist
    >>> hdist.entropy(["a", "a", "b", "b"], base=2)
    1.0
    """
    lb = _log_base(base)
    c = _codes(labels, "labels")
    sw = check_sample_weight(sample_weight, c.shape[0])
    keep = c >= 0 if sw is None else (c >= 0) & (sw > 0)
    if not keep.any():
        raise ValueError("labels has no observed value"
                         + ("" if sw is None else " of positive sample_weight"))
    if sw is not None:
        return _entropy_counts(np.bincount(c[keep], weights=sw[keep])) / lb
    c = c[keep]
    return _entropy_counts(np.bincount(c)) / lb


def _as_discretizer(d, what):
    if d is None:
        return EqualFrequency(10)
    if not isinstance(d, Discretizer):
        raise TypeError("%s must be one of hdist.discretize's discretizers (EqualWidth, "
                        "EqualFrequency, MDLP) or None, got %r" % (what, d))
    return type(d)(**d.get_params())


def _discretized(x, ycodes, disc, what, w=None):
    """Bin codes of a continuous column (-1 missing) with a fresh copy of ``disc``
    (fitted with the row weights ``w``)."""
    disc = _as_discretizer(disc, what)
    keep = ~np.isnan(x)
    if not keep.any():
        raise ValueError("x has no observed value")
    disc.fit(x[keep], ycodes[keep] if disc.supervised else None,
             sample_weight=None if w is None else w[keep])
    return disc.codes(x)


def mutual_information(x, y, *, nominal=None, discretizer=None, base=None,
                       sample_weight=None):
    """Mutual information ``I(x; y)`` between one attribute and the class.

    Parameters
    ----------
    x : 1-D array-like
        The attribute.  Numbers are taken as continuous and discretized first; strings,
        booleans and other objects as nominal.  ``nominal=True`` / ``False`` overrides.
    y : 1-D array-like of class labels (no missing label)
    discretizer : hdist.discretize discretizer, optional
        For a continuous ``x`` (default ``EqualFrequency(10)``; a fresh copy is fitted,
        with the classes when it is supervised).
    base : float, optional
        Logarithm base (default ``e``: nats).
    sample_weight : 1-D array-like of non-negative numbers, optional
        Frequency weights: every probability is a share of the total weight and the
        discretizer is fitted with the weights, so integer weights give the information
        of the rows repeated by their weights (docs/metrics.md, section 10).

    nominal : bool, optional
        Whether ``x`` is nominal (default: inferred from its values as above).

    Returns
    -------
    float
        ``Σ_{a,b} p(a,b) log(p(a,b) / (p(a) p(b)))`` over the kept rows (``0 · log 0 =
        0``).  Rows where ``x`` is missing (or of weight 0) are left out.

    See Also
    --------
    entropy : the entropy of one variable.
    hdist.Metric : ``weights="mi"`` weighs the attributes by this.

    Examples
    --------
    >>> import hdist
    >>> hdist.mutual_information(["a", "a", "b", "b"], ["x", "x", "y", "y"], base=2)
    1.0
    """
    lb = _log_base(base)
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        kind = getattr(x, "dtype", None)
        numeric = getattr(kind, "kind", "O") in "iuf"
        xarr = x
    else:
        xarr = np.asarray(x) if not isinstance(x, np.ndarray) else x
        numeric = xarr.dtype.kind in "iuf"
    if nominal is None:
        nominal = not numeric
    n = len(xarr)
    ycodes = _as_labels(y, n)
    sw = check_sample_weight(sample_weight, n)
    if sw is not None and not (sw > 0).all():   # rows of weight 0: as if absent
        pos = np.flatnonzero(sw > 0)
        xarr = xarr.iloc[pos] if hasattr(xarr, "iloc") else np.asarray(xarr)[pos]
        ycodes, sw = np.unique(ycodes[pos], return_inverse=True)[1], sw[pos]
    if nominal:
        xc = _codes(xarr, "x")
    else:
        xc = _discretized(_as_values(xarr), ycodes, discretizer, "discretizer", sw)
    keep = xc >= 0
    if not keep.any():
        raise ValueError("x has no observed value")
    return _mi_codes(xc[keep], ycodes[keep], None if sw is None else sw[keep]) / lb


def mi_weights(metric, schema, cont, nom, y, C, sample_weight=None):
    """Attribute weights ``w_j = m I(x_j; y) / Σ_k I(x_k; y)`` for ``weights="mi"``.

    Called by :meth:`hdist.Metric.fit` with the schema-encoded training columns and class
    codes; returns ``(weights, informations)``, the informations in nats (the Metric keeps
    them as ``mutual_information_``).  With
    ``sample_weight`` every probability is a share of the total weight (a row of integer
    weight ``m`` counts as ``m`` rows), the discretizer included."""
    sw = sample_weight
    if y is None:
        raise ValueError("weights='mi' needs class labels: call fit(X, y)")
    disc = metric._param("mi_discretizer")
    _as_discretizer(disc, "mi_discretizer")   # validate before any work
    y = np.asarray(y, dtype=np.int64)
    m = schema.n_features_in_
    info = np.zeros(m)
    ic = inom = 0
    for j, kind in enumerate(schema.kinds_):
        if kind == "continuous":
            codes = _discretized(cont[:, ic], y, disc, "mi_discretizer", column_weights(sw, j))
            ic += 1
        else:
            codes = np.asarray(nom[:, inom], dtype=np.int64)
            inom += 1
        keep = codes >= 0
        info[j] = _mi_codes(codes[keep], y[keep], None if sw is None else column_weights(sw, j)[keep]) \
            if keep.any() else 0.0
    total = info.sum()
    if not total > 0.0:
        return np.ones(m), info
    return m * info / total, info
