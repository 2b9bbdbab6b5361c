"""Progress reporting for long calls: ``progress=`` on the k-NN, radius and pairwise
methods and on the estimators that call them.

``progress`` is ``None``/``False`` (nothing), ``True`` (a tqdm bar on stderr when tqdm is
installed, else a plain line refreshed at most every 0.5 s) or a callable receiving
``(done, total)`` rows after each block of query rows, and a final ``(total, total)``.
The work is split into blocks of query rows at the Python level; every block is one call
of the same kernel, so the result does not depend on whether progress is shown.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import time

import numpy as np

#: the phases of a k-NN search that ``search_["phases"]`` times, in order: encoding the
#: query rows, the "auto" rule's decision and the KD-tree it chose (when the call made
#: them), the per-call tables (the kernels' view of the rows, the matrix-product
#: filter's query features and the codes of missing values), the kernel pass (products,
#: selection and exact recheck of the candidates, fused; a tree's traversal: the one
#: parallel phase) and the heaps' final order (with the lists of rows tied with the k-th)
PHASES = ("encode", "decide", "build", "tables", "kernel", "heaps")

_timing = threading.local()


@contextlib.contextmanager
def timed_call():
    """Time the phases (:func:`phase`) of the search run inside, in this thread; yields
    the dict of seconds per phase of :data:`PHASES` (and ``total``: the whole block,
    set on leaving it).  Nested calls (an estimator calling its index, an index its
    metric) add to the outermost one's dict."""
    outer = getattr(_timing, "rec", None)
    if outer is not None:
        yield outer
        return
    rec = dict.fromkeys(PHASES, 0.0)
    _timing.rec = rec
    t0 = time.perf_counter()
    try:
        yield rec
    finally:
        _timing.rec = None
        rec["total"] = time.perf_counter() - t0


@contextlib.contextmanager
def phase(name):
    """Add the seconds of the block to phase ``name`` of the timed call in progress in
    this thread (nothing when none is, or inside another phase: the searches the "auto"
    rule's pilot runs count to "decide")."""
    rec = getattr(_timing, "rec", None)
    if rec is None or getattr(_timing, "inside", False):
        yield
        return
    _timing.inside = True
    t0 = time.perf_counter()
    try:
        yield
    finally:
        rec[name] += time.perf_counter() - t0
        _timing.inside = False


class _Line:
    """A plain ``done / total rows`` line on stderr (tqdm not installed)."""

    def __init__(self, total, desc, unit="rows"):
        self.total, self.desc, self.unit = total, desc, unit
        self.start = self.last = time.perf_counter()

    def __call__(self, done, total):
        now = time.perf_counter()
        if done < total and now - self.last < 0.5:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        sys.stderr.write("\r%s: %d / %d %s, %.0f %s/s" % (self.desc, done, total, self.unit, rate,
                                                         self.unit))
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()


class _Tqdm:
    def __init__(self, tqdm, total, desc, unit="rows"):
        self.bar = tqdm(total=total, unit=unit, desc=desc, file=sys.stderr)
        self.done = 0

    def __call__(self, done, total):
        self.bar.update(done - self.done)
        self.done = done
        if done >= total:
            self.bar.close()


def reporter(progress, total, desc="hdist", unit="rows"):
    """A ``(done, total)`` callable for ``progress``, or None when none is wanted;
    ``unit`` names what is counted on the bar or line."""
    if progress is None or progress is False:
        return None
    if progress is True:
        try:
            from tqdm import tqdm
        except ImportError:
            return _Line(total, desc, unit)
        return _Tqdm(tqdm, total, desc, unit)
    if callable(progress):
        return progress
    raise TypeError("progress must be None, a bool or a callable(done, total), got %s"
                    % type(progress).__name__)


def block_rows(n):
    """Query rows per block: about 100 reports per call, 256..65536 rows each."""
    return int(min(65536, max(256, -(-n // 100))))


def blocks(n, report, block=None):
    """Yield ``(start, stop)`` row ranges covering ``range(n)``, reporting
    ``(stop, n)`` to ``report`` after each has been processed (and ``(0, 0)`` once for
    ``n == 0``)."""
    block = block or block_rows(n)
    if n == 0:
        report(0, 0)
        return
    for a in range(0, n, block):
        b = min(n, a + block)
        yield a, b
        report(b, n)


def drop_self(d, i, offset, k):
    """Top-``k`` lists without each query's own row from top-``k+1`` lists (query
    ``q`` is reference row ``q + offset``): the own row is removed where present, else
    the last entry -- the first ``k`` of the same (distance, index) order over every
    row but the own one."""
    n = i.shape[0]
    own = i == (np.arange(n, dtype=i.dtype) + offset)[:, None]
    keep = ~own
    keep[~own.any(axis=1), -1] = False
    return (d[keep].reshape(n, k), i[keep].reshape(n, k))


def silent(done, total):
    """A reporter that reports nothing."""


def drop_self_tied(d, i, offset, k):
    """:func:`drop_self` for lists that hold every row tied with their last place
    (``hdist._kernels.TieLists.widen``: the k + 1 nearest, then the rows tied with the
    (k + 1)-th, padded with ``inf``): the own row is removed where present, and each list
    is cut after its k-th place and the rows tied with it.  Such a list holds every row
    at a distance at most its k-th (the rows the own one left are all in the wider one)."""
    n, width = i.shape
    own = (i == (np.arange(n, dtype=i.dtype) + offset)[:, None]) & np.isfinite(d)
    order = np.argsort(own, axis=1, kind="stable")      # the own row last, where present
    d = np.take_along_axis(d, order, axis=1)
    i = np.take_along_axis(i, order, axis=1)
    last = own.any(axis=1)
    d[last, -1] = np.inf
    i[last, -1] = 0
    keep = (np.arange(width) < k)[None, :] | (d == d[:, k - 1:k])
    d[~keep] = np.inf
    i[~keep] = 0
    w = max(k, int(keep.sum(axis=1).max())) if n else k
    return d[:, :w], i[:, :w]


def join_tied(parts, k):
    """Lists of blocks of query rows, of different widths (:func:`drop_self_tied`), as
    one pair of arrays padded with ``inf`` and index 0."""
    w = max([k] + [d.shape[1] for d, _ in parts])
    n = sum(len(d) for d, _ in parts)
    D = np.full((n, w), np.inf)
    I = np.zeros((n, w), dtype=np.intp)
    a = 0
    for d, i in parts:
        D[a:a + len(d), :d.shape[1]] = d
        I[a:a + len(d), :i.shape[1]] = i
        a += len(d)
    return D, I


def knn_blocks(search, rows, k, exclude_self, report, ties=False):
    """k-NN of encoded ``rows`` by blocks of query rows: ``search(part, k)`` returns
    ``(dist, ind)`` for a block.  With ``exclude_self`` (the rows are the reference rows
    themselves) each block asks for ``k + 1`` and drops the own row (:func:`drop_self`).
    ``ties``: ``search`` returns lists that hold the rows tied with the k-th as well
    (:func:`drop_self_tied`, :func:`join_tied`); a tally of them
    (``hdist._search.votes.TieTally``): lists of width k, the tally kept by ``ties``
    block by block (not with ``exclude_self``, whose own row may be tallied)."""
    n = rows.n
    if ties is not None and ties is not False and ties is not True and exclude_self:
        raise ValueError("a tally of the ties is kept by blocks without exclude_self only")
    if ties is True:
        parts = []
        for a, b in blocks(n, report):
            part = rows.take(np.arange(a, b))
            if exclude_self:
                parts.append(drop_self_tied(*search(part, k + 1), a, k))
            else:
                parts.append(search(part, k))
        return join_tied(parts, k)
    D = np.empty((n, k))
    I = np.empty((n, k), dtype=np.intp)
    for a, b in blocks(n, report):
        part = rows.take(np.arange(a, b))
        if exclude_self:
            d, i = drop_self(*search(part, k + 1), a, k)
        else:
            d, i = search(part, k)
        D[a:b] = d
        I[a:b] = i
    return D, I
