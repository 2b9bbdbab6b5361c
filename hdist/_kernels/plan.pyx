# cython: language_level=3
"""The kernels' view of a fitted Plan (:class:`CPlan`) and of encoded rows
(:class:`CRows`), and what every kernel module shares: OpenMP's presence and default
thread count, the thread count of a call, the rows of a parallel region.
"""
import math

import numpy as np
cimport numpy as cnp
cimport cython
from libc.math cimport INFINITY
from libc.stdlib cimport calloc, malloc, free, qsort
from libc.string cimport memcpy

cnp.import_array()



def openmp_enabled():
    """True when the extension was compiled with OpenMP."""
    return bool(hdist_openmp_enabled())


def omp_max_threads():
    """OpenMP's default thread count (honours ``OMP_NUM_THREADS``)."""
    return int(hdist_max_threads())


def _c(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    if not a.flags.writeable:
        # read-only input (a memory-mapped or shared fitted plan): the typed views below
        # need a writable buffer, though the kernels never write through them
        a = a.copy()
    return a


#: a general-p reduced distance outside this range is recomputed exactly (see true_of)
SAFE_RANGE = (1e-280, 1e280)

#: below this many pairs a call runs on one thread (starting threads would cost more)
SERIAL_PAIRS = 1 << 14


#: pairs computed per parallel region (a region ends at a barrier where threads wait for
#: the slowest, and signals are checked between regions): about 10-50 ms of work
REGION_PAIRS = 1 << 23


#: most pairs a thread computes in one parallel region beyond its first two chunks: about
#: a second of work, the longest a region keeps Ctrl-C waiting
THREAD_REGION_PAIRS = 1 << 27


def _region_rows(int n_threads, Py_ssize_t n_other, Py_ssize_t per=1, Py_ssize_t most=16,
                 Py_ssize_t fewest=2):
    """Query rows per parallel region: few barriers (a thread that waits at one burns the
    core its preempted partner needs on a loaded machine), still many chunks of ``per``
    rows per thread: ``most`` (a thread on a slower core, or one preempted, then ends at
    most a small part of its share after the others), fewer, down to ``fewest``, where
    ``most`` would hold a thread longer than ``THREAD_REGION_PAIRS`` pairs between signal
    checks."""
    per = max(1, per)
    cdef Py_ssize_t chunks = THREAD_REGION_PAIRS // max(1, per * n_other)
    chunks = min(most, max(fewest, chunks))
    return max(64, chunks * n_threads * per, REGION_PAIRS // max(1, n_other))


#: reference bytes past which the tile kernel's pass over the reference rows reads them
#: from memory rather than from the caches (a few MiB of L2 and a share of L3 per thread)
STREAM_BYTES = 1 << 23


def _knn_chunk(Py_ssize_t nq, Py_ssize_t nr, int n_threads, Py_ssize_t ref_bytes):
    """Queries per chunk of the tile kernel's k-NN search.  A chunk is one pass over the
    reference rows, each tile of them read once for all the chunk's queries: 8 queries,
    or 16 or 32 when the reference rows exceed ``STREAM_BYTES`` (each pass then streams
    them from memory, and more queries per pass read fewer bytes per pair), as long as
    every thread still gets 4 chunks of the queries and 4 chunks of each parallel region
    (the schedule is dynamic: a thread that falls behind holds the others at the region's
    end for at most one chunk).  The regions keep ``_region_rows(n_threads, nr, 8)``
    queries whatever the chunk, so that a thread's work between two signal checks does
    not grow with it."""
    cdef Py_ssize_t per = 8
    cdef Py_ssize_t region = _region_rows(n_threads, nr, 8)
    if ref_bytes > STREAM_BYTES:
        while (per < 32 and nq >= 8 * per * max(1, n_threads)
               and region >= 8 * per * max(1, n_threads)):
            per *= 2
    return per


def _radius_chunk_rows(Py_ssize_t nq, Py_ssize_t nr, int n_threads, Py_ssize_t ref_bytes):
    """Queries per chunk of the tile kernel's radius search: :func:`_knn_chunk`'s, fewer,
    down to one, where that would leave a thread fewer than 8 chunks (a radius search
    has no other way to share few queries among the threads)."""
    cdef Py_ssize_t per = _knn_chunk(nq, nr, n_threads, ref_bytes)
    while per > 1 and nq < 8 * per * max(1, n_threads):
        per //= 2
    return per


def _threads_for(int n_threads, Py_ssize_t pairs):
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1, got %d" % n_threads)
    return 1 if pairs < SERIAL_PAIRS else n_threads


cdef class CPlan:
    """C view of a :class:`hdist._core.plan.Plan` (kept alive by this object)."""

    def __cinit__(self, plan):
        keep = {}

        def arr(name, dtype, minlen=1):
            a = _c(getattr(plan, name), dtype)
            if a.size == 0:
                a = np.zeros(minlen, dtype=dtype)
            keep[name] = a
            return a

        cdef double[::1] c_w = arr("c_rw", np.float64)
        cdef double[::1] c_inv = arr("c_inv", np.float64)
        cdef double[::1] c_elo = arr("c_elo", np.float64)
        cdef double[::1] c_ehi = arr("c_ehi", np.float64)
        cdef unsigned char[::1] c_maxp = arr("c_maxp", np.uint8)
        cdef double[::1] t_raw = arr("t_raw", np.float64)
        cdef unsigned char[::1] c_ign = arr("c_ign", np.uint8)
        cdef double[::1] c_both = arr("c_both", np.float64)
        cdef double[::1] o_w = arr("o_w", np.float64)
        sel = np.zeros((max(1, plan.mo), 4))
        if plan.mo:
            sel[:, 1] = plan.o_w
            sel[:, 2] = plan.o_miss
            sel[:, 3] = plan.o_miss
        sel = sel.ravel()
        keep["o_sel"] = sel
        cdef double[::1] o_sel = sel
        cdef double[::1] o_miss = arr("o_miss", np.float64)
        cdef double[::1] o_rw = arr("o_rw", np.float64)
        cdef unsigned char[::1] o_ign = arr("o_ign", np.uint8)
        cdef double[::1] t_tab = arr("t_tab", np.float64)
        cdef intp[::1] t_off = arr("t_off", np.intp)
        cdef int[::1] t_V = arr("t_V", np.intc)
        cdef double[::1] t_miss = arr("t_miss", np.float64)
        cdef double[::1] t_rw = arr("t_rw", np.float64)
        cdef unsigned char[::1] t_ign = arr("t_ign", np.uint8)
        cdef intp[::1] e_off = arr("e_off", np.intp)
        cdef unsigned char[::1] e_q = arr("e_q", np.uint8)
        cdef double[::1] e_miss = arr("e_miss", np.float64)
        cdef double[::1] e_rw = arr("e_rw", np.float64)
        cdef unsigned char[::1] e_ign = arr("e_ign", np.uint8)
        self._keep = keep
        self.s.mc = plan.mc
        self.s.mo = plan.mo
        self.s.mt = plan.mt
        self.s.me = plan.me
        self.s.pmode = plan.pmode
        self.s.p = plan.p
        self.s.inv_p = 1.0 / plan.p if plan.pmode != 0 else 0.0
        self.s.has_ignore = plan.has_ignore
        self.s.mean = plan.mean
        self.s.w_all = plan.w_all
        self.s.w_max = plan.w_max
        self.s.slack = 1.0 + 2.0 ** -40 * max(1.0, plan.p if plan.pmode != 0 else 1.0)
        self.s.c_w = &c_w[0]
        self.s.c_inv = &c_inv[0]
        self.s.c_elo = &c_elo[0]
        self.s.c_ehi = &c_ehi[0]
        self.s.c_maxp = &c_maxp[0]
        self.s.c_anymax = bool(plan.mc and np.any(plan.c_maxp))
        self.s.t_raw = &t_raw[0]
        self.s.c_ign = &c_ign[0]
        self.s.c_both = &c_both[0]
        self.s.o_w = &o_w[0]
        self.s.o_sel = &o_sel[0]
        self.s.o_miss = &o_miss[0]
        self.s.o_rw = &o_rw[0]
        self.s.o_ign = &o_ign[0]
        self.s.t_tab = &t_tab[0]
        self.s.t_off = &t_off[0]
        self.s.t_V = &t_V[0]
        self.s.t_miss = &t_miss[0]
        self.s.t_rw = &t_rw[0]
        self.s.t_ign = &t_ign[0]
        self.s.e_off = &e_off[0]
        self.s.e_q = &e_q[0]
        self.s.e_miss = &e_miss[0]
        self.s.e_rw = &e_rw[0]
        self.s.e_ign = &e_ign[0]


cdef class CRows:
    """C view of encoded rows (a :class:`hdist._core.plan.Rows`)."""

    def __cinit__(self, rows):
        n = rows.n
        keep = {}

        def arr(name, dtype):
            a = _c(getattr(rows, name), dtype)
            if a.size == 0:
                a = np.zeros(1, dtype=dtype)
            keep[name] = a
            return a

        cdef double[::1] c = arr("c", np.float64).reshape(-1)
        cdef double[::1] cpen = arr("cpen", np.float64).reshape(-1)
        cdef int[::1] o = arr("o", np.intc).reshape(-1)
        cdef int[::1] t = arr("t", np.intc).reshape(-1)
        cdef double[::1] e = arr("e", np.float64).reshape(-1)
        self._keep = keep
        self.s.n = n
        self.s.D = rows.D
        self.s.c_nan = bool(np.isnan(rows.c).any()) if rows.c.size else False
        self.s.c = &c[0]
        self.s.cpen = &cpen[0]
        self.s.o = &o[0]
        self.s.t = &t[0]
        self.s.e = &e[0]

    @property
    def n(self):
        return self.s.n


cdef int _cmp_index(const void* a, const void* b) noexcept nogil:
    cdef intp x = (<const intp*> a)[0], y = (<const intp*> b)[0]
    return (x > y) - (x < y)


cdef class TieLists:
    """One :c:type:`TieList` per query row of a k-NN search that keeps the rows tied with
    the k-th (``plan.pxd``); the search fills them, :meth:`widen` turns them into the
    lists' extra columns.  Frees what the search allocated.

    With ``codes`` (the reference rows' class codes, ``[rows]`` in ``[0, n_classes)``) or
    ``values`` (their targets, ``[rows]`` or ``[rows, m]``, finite) the lists keep only a
    tally of the tied rows -- how many, and their count per class or their sum per
    target (:meth:`tally`) -- so their memory is ``n`` times the classes (or targets),
    whatever the number of ties; :meth:`widen` then returns the k best unchanged."""

    def __cinit__(self, intp n, codes=None, intp n_classes=0, values=None):
        cdef intp q, m = 0, w = 0, nr = 0
        cdef double* acc = NULL
        cdef intp* code = NULL
        cdef double* val = NULL
        if n < 0:
            raise ValueError("n must be >= 0")
        self.n = n
        self.t = <TieList*> calloc(max(1, n), sizeof(TieList))
        if self.t == NULL:
            raise MemoryError()
        if codes is None and values is None:
            return
        if codes is not None and values is not None:
            raise ValueError("give codes or values, not both")
        if codes is not None:
            c = np.ascontiguousarray(codes, dtype=np.intp)
            if c.ndim != 1:
                raise ValueError("codes must be 1-D")
            if n_classes < 1 or (c.size and (c.min() < 0 or c.max() >= n_classes)):
                raise ValueError("codes must lie in [0, n_classes) with n_classes >= 1")
            nr, m, w = c.shape[0], n_classes, n_classes
            code = <intp*> malloc(max(1, nr) * sizeof(intp))
            if code == NULL:
                raise MemoryError()
            self.t[0].code = code
            self.t[0].cap = 1       # a tally's first list owns the codes (or targets)
            if nr:
                memcpy(code, cnp.PyArray_DATA(c), nr * sizeof(intp))
        else:
            v = np.ascontiguousarray(values, dtype=np.float64)
            if v.ndim == 1:
                v = v[:, None]
            if v.ndim != 2 or v.shape[1] < 1:
                raise ValueError("values must be [rows] or [rows, m] with m >= 1")
            if not np.isfinite(v).all():
                raise ValueError("values must be finite")
            nr, m, w = v.shape[0], v.shape[1], 2 * v.shape[1]
            val = <double*> malloc(max(1, nr * m) * sizeof(double))
            if val == NULL:
                raise MemoryError()
            self.t[0].val = val
            self.t[0].cap = 1
            if nr:
                memcpy(val, cnp.PyArray_DATA(v), nr * m * sizeof(double))
        acc = <double*> calloc(max(1, n * w), sizeof(double))
        if acc == NULL:
            raise MemoryError("a tally of the tied rows needs %d x %d doubles (%s)"
                              % (n, w, _bytes(8 * n * w)))
        self.t[0].acc = acc
        for q in range(max(1, n)):
            self.t[q].code = code
            self.t[q].val = val
            self.t[q].acc = acc + q * w
            self.t[q].m = m

    def __dealloc__(self):
        cdef intp q
        if self.t != NULL:
            if self.t[0].code != NULL or self.t[0].val != NULL:      # a tally
                free(self.t[0].acc)
                if self.t[0].cap == 1:
                    free(<void*> self.t[0].code)
                    free(<void*> self.t[0].val)
            else:
                for q in range(self.n):
                    free(self.t[q].j)
            free(self.t)

    def __len__(self):
        return self.n

    @property
    def is_tally(self):
        """Whether the lists keep only a tally (:meth:`tally`)."""
        return self.t[0].acc != NULL

    def like(self, intp n):
        """Empty lists of ``n`` rows of the same kind (a tally of the same classes or
        targets), for per-thread lists merged into these ones."""
        cdef TieLists out = TieLists(n)
        cdef intp q, m = self.t[0].m, w
        cdef double* acc
        if self.t[0].acc == NULL:
            return out
        w = tie_width(&self.t[0])
        acc = <double*> calloc(max(1, n * w), sizeof(double))
        if acc == NULL:
            raise MemoryError()
        out.t[0].acc = acc
        for q in range(max(1, n)):
            out.t[q].code = self.t[0].code      # shared: out lives inside the search
            out.t[q].val = self.t[0].val
            out.t[q].acc = acc + q * w
            out.t[q].m = m
        return out

    def tally(self):
        """``(count, acc)`` of a tally: ``count`` ``[n]`` (int64) the tied rows outside
        each query's k best, ``acc`` ``[n, m]`` their count per class, or their sum per
        target (each the rounded exact sum)."""
        cdef intp q, c, m = self.t[0].m, w
        if self.t[0].acc == NULL:
            raise ValueError("these lists are not a tally")
        w = tie_width(&self.t[0])
        count = np.empty(self.n, dtype=np.int64)
        acc = np.empty((self.n, m))
        cdef long long[::1] oc = count
        cdef double[:, ::1] oa = acc
        for q in range(self.n):
            oc[q] = self.t[q].n
            for c in range(m):
                if self.t[0].code != NULL:
                    oa[q, c] = self.t[q].acc[c]
                else:
                    oa[q, c] = self.t[q].acc[2 * c] + self.t[q].acc[2 * c + 1]
        return count, acc

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def widen(self, double[:, ::1] D, intp[:, ::1] I):
        """The sorted k-NN lists ``D``/``I`` ``[n, k]`` with each query's tied rows after
        its k-th, in index order, at the k-th distance: ``(dist, ind)`` of width k plus
        the most ties of a row, shorter rows padded with distance ``inf`` and index 0.
        Every row at a distance at most the k-th one's is then in the list.  The
        arrays take ``16 n (k + ties)`` bytes: where they cannot be allocated the
        ``MemoryError`` names that size (a tally, :meth:`tally`, needs no such room).
        A tally's lists are returned as they are, as arrays."""
        cdef intp n = D.shape[0], k = D.shape[1], q, h, w = 0, total = 0
        cdef TieList* t
        if n != self.n or I.shape[0] != n or I.shape[1] != k or k < 1:
            raise ValueError("D and I must be [%d, k] with k >= 1" % self.n)
        if self.t[0].acc != NULL:
            return np.asarray(D), np.asarray(I)
        for q in range(n):
            if self.t[q].cap < 0:
                raise MemoryError(
                    "the search ran out of memory keeping the rows tied with the k-th "
                    "distance (query row %d had %d of them listed); vote with a tally "
                    "of the ties (the estimators' ties='include') or use ties='index'"
                    % (q, self.t[q].n))
            w = max(w, self.t[q].n)
            total += self.t[q].n
        try:
            dist = np.full((n, k + w), np.inf)
            ind = np.zeros((n, k + w), dtype=np.intp)
        except MemoryError:
            raise MemoryError(
                "the k-NN lists with the rows tied with the k-th need %d x %d entries "
                "(%s; %d tied rows in all, up to %d for one query row), which do not fit;"
                " vote with a tally of the ties (the estimators' ties='include') or use "
                "ties='index'" % (n, k + w, _bytes(16 * n * (k + w)), total, w)) from None
        cdef double[:, ::1] od = dist
        cdef intp[:, ::1] oi = ind
        with nogil:
            for q in range(n):
                t = &self.t[q]
                for h in range(k):
                    od[q, h] = D[q, h]
                    oi[q, h] = I[q, h]
                if t.n > 1:
                    qsort(t.j, t.n, sizeof(intp), _cmp_index)
                for h in range(t.n):
                    od[q, k + h] = D[q, k - 1]
                    oi[q, k + h] = t.j[h]
        return dist, ind


def _bytes(n):
    """A byte count in words (``"2.3 GB"``)."""
    n = float(n)
    for unit in ("bytes", "kB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1000.0


def tie_lists(ties, intp n):
    """The tie lists a k-NN kernel keeps for ``n`` query rows: None (``ties`` false),
    lists of the tied rows (``True``), or ``ties.lists(n)`` for an object that makes
    them (a tally of classes or targets, ``hdist._search.votes.TieTally``)."""
    if ties is None or ties is False:
        return None
    if ties is True:
        return TieLists(n)
    if isinstance(ties, TieLists):
        if len(ties) != n:
            raise ValueError("ties must hold one list per query row (%d), got %d"
                             % (n, len(ties)))
        return ties
    return ties.lists(n)
