"""Checks of the arguments that the Metric, the index and the searchers share."""
from __future__ import annotations

import math
import numbers

import numpy as np


def _check_number(name, v, lo=None, lo_open=True, allow_inf=False):
    """``v`` as a float, refused with an error naming ``name`` unless it is a real number,
    not NaN, finite (``allow_inf``: or +inf) and above ``lo`` (at least, with
    ``lo_open=False``)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s must be a number, got %r" % (name, v))
    v = float(v)
    if math.isnan(v):
        raise ValueError("%s must not be NaN" % name)
    if math.isinf(v) and not (allow_inf and v > 0):
        raise ValueError("%s must be finite, got %r" % (name, v))
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ValueError("%s must be %s %s, got %r" % (name, ">" if lo_open else ">=", lo, v))
    return v


def _tallies(ties):
    """Whether a search's ``ties`` is a tally of the tied rows (``votes.TieTally``), not
    a yes/no for lists of them."""
    return ties is not None and ties is not False and ties is not True


def _check_k(k, n):
    """``k`` as an int in ``[1, n]`` (``n``: the rows a query can find)."""
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError("k must be an int, got %r" % (k,))
    k = int(k)
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    if k > n:
        raise ValueError("k = %d is larger than the %d available training rows" % (k, n))
    return k


def _check_out(out, shape):
    """Refuse an ``out=`` array the kernels cannot write a float64 ``shape`` result into,
    naming ``out``."""
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy array, got %s" % type(out).__name__)
    if out.dtype != np.float64:
        raise ValueError("out must have dtype float64, got %s" % out.dtype)
    if out.shape != shape:
        raise ValueError("out must have shape %s, got %s" % (shape, out.shape))
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")


def _check_weights(w, names):
    """Attribute weights given as a dict name -> weight (1 for the columns it leaves out)
    or one number per column of ``names``, as a validated float64 array: finite,
    non-negative, not all zero; errors name ``weights``."""
    m = len(names)
    if isinstance(w, dict):
        bad = set(w) - set(names)
        if bad:
            raise ValueError("weights: no column(s) named %r" % sorted(bad))
        arr = np.array([w.get(nm, 1.0) for nm in names], dtype=np.float64)
    else:
        try:
            arr = np.asarray(w, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("weights must hold numbers, got %r" % (w,))
    if arr.ndim != 1 or arr.shape[0] != m:
        raise ValueError("weights must have one entry per column (%d), got shape %s"
                         % (m, arr.shape))
    if not np.all(np.isfinite(arr)):
        raise ValueError("weights must be finite, got %r" % (arr.tolist(),))
    if (arr < 0).any():
        raise ValueError("weights must be non-negative, got %r" % (arr.tolist(),))
    if not (arr > 0).any():
        raise ValueError("weights must not all be zero")
    return arr
