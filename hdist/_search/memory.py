"""Memory guards of the searches and of the pairwise matrix: a call whose result alone
would not fit is refused before it starts, and a ``MemoryError`` raised during one names
what was asked and what to do instead of the size of the allocation that failed."""
from __future__ import annotations

import math


def memory_limit():
    """Bytes this process can hold at most: the machine's physical memory, or its
    address-space limit (``RLIMIT_AS``) where lower; None where neither is known."""
    limits = []
    try:
        import os
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    return min(limits) if limits else None


def nbytes_text(n):
    """A byte count in words (``"2.3 GB"``), as the kernels' messages write it."""
    from .._kernels.plan import _bytes
    return _bytes(n)


def check_result_size(nbytes, what, remedy):
    """Raise a ``MemoryError`` before a call whose result alone (``nbytes``) exceeds
    :func:`memory_limit`, naming what was asked (``what``), its size and the
    ``remedy``."""
    limit = memory_limit()
    if limit is not None and nbytes > limit:
        raise MemoryError("%s would return %s, more than the %s this process can hold; %s"
                          % (what, nbytes_text(nbytes), nbytes_text(limit), remedy))


class out_of_memory:
    """Context: a ``MemoryError`` raised inside is raised again naming what was asked
    (``what``, with ``size()`` -- a text -- where given) and the ``remedy``, not the size
    of the allocation that failed (which is kept as the cause)."""

    def __init__(self, what, remedy, size=None):
        self.what, self.remedy, self.size = what, remedy, size

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, MemoryError):
            detail = str(exc)
            size = self.size() if self.size is not None else ""
            raise MemoryError("%s ran out of memory%s; %s%s"
                              % (self.what, size, self.remedy,
                                 " (the allocation that failed: %s)" % detail if detail
                                 else "")) from exc
        return False


#: what to do when a pairwise matrix does not fit
PAIRWISE_REMEDY = ("compute it by blocks of X's rows (pairwise(X[a:b], Y)), into out= "
                   "a numpy.memmap on disk, or search the neighbors only (kneighbors, "
                   "radius_neighbors)")
#: ... and when a radius search's lists do not
RADIUS_REMEDY = ("use a smaller radius, a k-NN search, or fewer query rows per call "
                 "(progress= searches by blocks)")


def radius_guard(nq, nr, r, found):
    """A radius search's guard: with ``r = inf`` (every pair) its size is checked before
    (:func:`check_result_size`, ``16 nq nr`` bytes); a ``MemoryError`` names the pairs
    the blocks already done had found (``found``: their index lists)."""
    what = "a radius search of %d query rows against %d rows within r = %g" % (nq, nr, r)
    if math.isinf(r):
        check_result_size(16 * nq * nr, what + " (all %d pairs)" % (nq * nr),
                          RADIUS_REMEDY)

    def size():
        done = len(found)
        pairs = sum(len(i) for i in found)
        if not done:
            return " (the lists of its pairs did not fit)"
        return (" after %d pairs found for its first %d query rows (%s)"
                % (pairs, done, nbytes_text(16 * pairs)))
    return out_of_memory(what, RADIUS_REMEDY, size)


#: what to do when a k-NN search's lists do not fit
KNN_REMEDY = "ask for a smaller k, or search fewer query rows per call"


def knn_guard(nq, k):
    """:func:`check_result_size` of a k-NN search (``16 nq k`` bytes of lists) and the
    :class:`out_of_memory` context around it."""
    what = "a k-NN search of %d query rows with k = %d (%d pairs)" % (nq, k, nq * k)
    check_result_size(16 * nq * k, what, KNN_REMEDY)
    return out_of_memory(what, KNN_REMEDY, lambda: " (its lists take %s)"
                         % nbytes_text(16 * nq * k))
