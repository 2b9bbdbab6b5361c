"""Checks of the arguments that the Metric, the index and the searchers share."""
from __future__ import annotations

import math
import numbers

import numpy as np


def check_number(name, v, lo=None, lo_open=True, allow_inf=False):
    """A numeric argument as a float, refused with an error naming it.

    Parameters
    ----------
    name : str
        The argument's name in the error messages.
    v : object
        The value given.
    lo : float or None, default=None
        The bound below (None: no bound).
    lo_open : bool, default=True
        ``v`` must be above ``lo`` (False: at least ``lo``).
    allow_inf : bool, default=False
        Accept +inf.

    Returns
    -------
    float
        ``v`` as a float.

    Raises
    ------
    TypeError
        ``v`` is not a real number (a bool is not one).
    ValueError
        ``v`` is NaN, infinite (unless ``allow_inf`` and +inf) or not above ``lo``.

    Examples
    --------
    >>> from hdist._search.checks import check_number
    >>> check_number("r", 2)
    2.0
    """
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


def check_k(k, n):
    """A number of neighbors as an int in ``[1, n]``, refused with an error naming ``k``.

    Parameters
    ----------
    k : int
        The number of neighbors asked.
    n : int
        The rows a query can find.

    Returns
    -------
    int
        ``k`` as an int.

    Raises
    ------
    TypeError
        ``k`` is not an integer (a bool is not one).
    ValueError
        ``k`` is below 1 or above ``n``.

    Examples
    --------
    >>> from hdist._search.checks import check_k
    >>> check_k(3, 10)
    3
    """
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
