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

import numpy as np

from .._kernels import CRows, knn, pairwise

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


def _view(rows, name):
    if isinstance(rows, PreparedRows):
        return rows._view
    if not hasattr(rows, "c") or not hasattr(rows, "n"):
        raise TypeError("%s must be encoded rows (hdist._core.plan.Rows or PreparedRows), "
                        "got %s" % (name, type(rows).__name__))
    return CRows(rows)


def _cplan(metric):
    """The kernels' view of a fitted metric's Plan."""
    plan = getattr(metric, "plan_", None)
    if plan is None:
        raise TypeError("metric must be a fitted hdist.Metric, got %s"
                        % type(metric).__name__)
    return plan.cplan


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
    cplan = _cplan(metric)
    va = _view(A, "A")
    vb = va if B is None else _view(B, "B")
    nb = A.n if B is None else B.n
    if out is None:
        out = np.empty((A.n, nb))
    elif out.shape != (A.n, nb) or out.dtype != np.float64 or \
            not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous float64 array of shape %s, got %s %s"
                         % ((A.n, nb), out.dtype, out.shape))
    pairwise(cplan, va, vb, out, int(threads), B is None, bool(reduced))
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
    if exclude_self:
        return knn(_cplan(metric), _view(A, "A"), _view(B, "B"), k, int(threads),
                   exclude_self=True)
    return knn(_cplan(metric), _view(A, "A"), _view(B, "B"), k, int(threads))
