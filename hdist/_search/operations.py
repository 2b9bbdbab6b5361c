"""Metric-level operations over encoded rows (:class:`hdist._core.plan.Rows`): the
distances between two sets of rows and the k nearest of one set in another, under a
fitted :class:`~hdist.Metric`.

The estimators measure the rows they encoded themselves (prototypes, cluster centers,
the training rows) through these functions, which build the kernels' views of the rows
(``CRows``) and call the tile kernel (``pairwise``, ``knn`` of :mod:`hdist._kernels`)
with the arguments given, so the results are those of the kernel itself, bit for bit.
Rows measured many times can be prepared once (:func:`prepare`).  Whatever the thread
count, the results are the same; a call with fewer pairs than the kernels'
``SERIAL_PAIRS`` runs on one thread.
"""
from __future__ import annotations

import numbers

import numpy as np

from .._kernels import CRows, knn, pairwise
from .checks import _check_out, check_k

__all__ = ["PreparedRows", "distances", "nearest", "prepare"]


class PreparedRows:
    """Encoded rows together with the kernels' view of them, made once for rows that are
    measured many times (the training rows of an iterative fit).

    Parameters
    ----------
    rows : hdist._core.plan.Rows
        Encoded rows (``Metric.encode``, ``Plan.encode``, ``Metric.train_``).

    Attributes
    ----------
    rows : hdist._core.plan.Rows
        The rows.
    n : int
        Their count.
    """

    __slots__ = ("rows", "_view")

    def __init__(self, rows):
        if not hasattr(rows, "c") or not hasattr(rows, "n"):
            raise TypeError("rows must be encoded rows (hdist._core.plan.Rows), got %s"
                            % type(rows).__name__)
        self.rows = rows
        self._view = CRows(rows)

    @property
    def n(self):
        return self.rows.n


def prepare(rows):
    """``rows`` ready for repeated :func:`distances` / :func:`nearest` calls: a
    :class:`PreparedRows` (returned as it is when it is one already)."""
    return rows if isinstance(rows, PreparedRows) else PreparedRows(rows)


def _rows(rows, name):
    """``rows`` as encoded rows (the rows of a :class:`PreparedRows`), refused with a
    TypeError naming ``name`` when they are not."""
    if isinstance(rows, PreparedRows):
        return rows.rows
    if not hasattr(rows, "c") or not hasattr(rows, "n"):
        raise TypeError("%s must be encoded rows (hdist._core.plan.Rows or PreparedRows), "
                        "got %s" % (name, type(rows).__name__))
    return rows


#: the blocks of encoded rows, each with the Plan's width of it and what it holds
_BLOCKS = (("c", "mc", "continuous column(s)"),
           ("cpen", "mc", "continuous missing penalties"),
           ("o", "mo", "nominal column(s) compared by overlap"),
           ("t", "mt", "nominal column(s) compared by a value table"),
           ("e", "D", "embedded value(s)"))


def _check_rows(plan, rows, name):
    """Refuse rows whose blocks are not the shape ``plan`` reads (rows another metric
    encoded, or arrays that disagree with the rows' count): the kernels would read past
    them.  The error names ``name`` and the block that differs."""
    n = rows.n
    for block, width, what in _BLOCKS:
        a = getattr(rows, block, None)
        shape = getattr(a, "shape", None)
        if shape is None or len(shape) != 2:
            raise ValueError("%s must be encoded rows with a 2-D block %r, got %r"
                             % (name, block, shape))
        if shape[0] != n:
            raise ValueError("%s claims %d rows, but its block %r holds %d rows"
                             % (name, n, block, shape[0]))
        if shape[1] != getattr(plan, width):
            raise ValueError("%s has %d %s where the metric's Plan has %d: rows encoded "
                             "by another metric (encode them with this metric's encode)"
                             % (name, shape[1], what, getattr(plan, width)))


def _view(plan, rows, name):
    """The kernels' view of ``rows`` (``CRows``), after :func:`_check_rows`."""
    enc = _rows(rows, name)
    _check_rows(plan, enc, name)
    return rows._view if isinstance(rows, PreparedRows) else CRows(enc)


def _check_threads(threads):
    """A thread count as an int >= 1, refused with an error naming ``threads``."""
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral):
        raise TypeError("threads must be an int, got %r" % (threads,))
    if threads < 1:
        raise ValueError("threads must be >= 1, got %d" % threads)
    return int(threads)


def _plan(metric):
    """A fitted metric's Plan, refused with a TypeError naming ``metric``."""
    plan = getattr(metric, "plan_", None)
    if plan is None:
        raise TypeError("metric must be a fitted hdist.Metric, got %s"
                        % type(metric).__name__)
    return plan


def distances(metric, A, B=None, *, out=None, threads=1, reduced=False):
    """Distances ``[A.n, B.n]`` between two sets of encoded rows under ``metric``.

    Parameters
    ----------
    metric : hdist.Metric
        A fitted metric; the rows are encoded by its Plan.
    A, B : hdist._core.plan.Rows or PreparedRows
        The rows; ``B=None`` measures ``A`` against itself (a symmetric matrix, each
        pair computed once).  The work is spread over the rows of ``A``, so ``A``
        should be the short side.
    out : ndarray of float64 [A.n, B.n], optional
        C-contiguous array to write into (default: a new one).
    threads : int, default=1
        Threads of the kernel (the results do not depend on it).
    reduced : bool, default=False
        ``True``: the reduced distances ``Σ w d^p`` (no root), as the searches compare
        them.

    Returns
    -------
    ndarray of float64 [A.n, B.n]
        ``out``.
    """
    plan = _plan(metric)
    threads = _check_threads(threads)
    va = _view(plan, A, "A")
    vb = va if B is None else _view(plan, B, "B")
    na = _rows(A, "A").n
    nb = na if B is None else _rows(B, "B").n
    if out is None:
        out = np.empty((na, nb))
    else:
        _check_out(out, (na, nb))
    pairwise(plan.cplan, va, vb, out, threads, B is None, bool(reduced))
    return out


def nearest(metric, A, B, k, *, threads=1, exclude_self=False):
    """The ``k`` rows of ``B`` nearest to each row of ``A`` under ``metric``, ordered by
    ``(distance, position in B)``.

    Parameters
    ----------
    metric : hdist.Metric
        A fitted metric; the rows are encoded by its Plan.
    A, B : hdist._core.plan.Rows or PreparedRows
        Query rows and reference rows.
    k : int
        Neighbors per query, at most ``B.n`` (``B.n - 1`` with ``exclude_self``).
    threads : int, default=1
        Threads of the kernel (the results do not depend on it).
    exclude_self : bool, default=False
        ``A`` and ``B`` are the same rows: row ``i`` is not its own neighbor.

    Returns
    -------
    dist : ndarray of float64 [A.n, k]
        True distances, ascending.
    ind : ndarray of intp [A.n, k]
        Positions in ``B``.
    """
    plan = _plan(metric)
    threads = _check_threads(threads)
    va = _view(plan, A, "A")
    vb = _view(plan, B, "B")
    na, nb = _rows(A, "A").n, _rows(B, "B").n
    if exclude_self and na != nb:
        raise ValueError("exclude_self=True needs A and B to be the same rows, but A has "
                         "%d rows and B %d" % (na, nb))
    k = check_k(k, nb - 1 if exclude_self else nb)
    if exclude_self:
        return knn(plan.cplan, va, vb, k, threads, exclude_self=True)
    return knn(plan.cplan, va, vb, k, threads)
