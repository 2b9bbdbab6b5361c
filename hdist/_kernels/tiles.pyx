# cython: language_level=3
"""Brute-force kernels over a Plan: pairwise matrices, streaming top-k and radius search.

Every function here sees only arrays (``CPlan`` and ``CRows``); it knows nothing of
schemas, metrics or estimators.  The work is split in blocks of query rows; the GIL is
released for each block and signals (Ctrl-C) are checked between blocks.  Results never
depend on the number of threads or on the block and tile sizes: candidates are ordered
by ``(reduced distance, training index)`` and a pair's distance is always computed by
the same inline function (``pair_reduced`` in ``_kernels.pxd``).
"""
import math

import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free, realloc, qsort
from libc.math cimport INFINITY, isnan, fabs, fma

cnp.import_array()

cdef extern from *:
    """
    #if HDIST_HAVE_OPENMP
    #include <omp.h>
    static int hdist_openmp_enabled(void) { return 1; }
    static int hdist_max_threads(void) { return omp_get_max_threads(); }
    static int hdist_thread_id(void) { return omp_get_thread_num(); }
    #else
    static int hdist_openmp_enabled(void) { return 0; }
    static int hdist_max_threads(void) { return 1; }
    static int hdist_thread_id(void) { return 0; }
    #endif
    """
    int hdist_openmp_enabled() noexcept nogil
    int hdist_max_threads() noexcept nogil
    int hdist_thread_id() noexcept nogil

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

cdef extern from "_gemm_scan.h":
    unsigned long long hd_le_mask_f(const float* e, intp n, float s) noexcept nogil
    unsigned long long hd_le_mask_d(const double* e, intp n, double s) noexcept nogil
    int hd_ctz64(unsigned long long m) noexcept nogil

cdef extern from "_tile.h":
    enum: HD_TB
    enum: HD_NISA
    ctypedef struct hd_tplan:
        intp mc, mo, mt, me
        int pmode
        double p
        int ign
        double w_all, w_max
        int ign_unit
        double ign_w, ign_all
        const double* c_inv
        const double* c_tw
        const double* c_both
        const double* c_rw
        const unsigned char* c_ign
        const double* o_w
        const double* o_miss
        const double* o_rw
        const unsigned char* o_ign
        const double* t_tab
        const intp* t_off
        const int* t_V
        const double* t_miss
        const double* t_rw
        const unsigned char* t_ign
        const intp* e_off
        const unsigned char* e_q
        const double* e_miss
        const double* e_rw
        const unsigned char* e_ign
    ctypedef struct hd_tq:
        const double* c
        const double* cpen
        const int* o
        const int* t
        const double* e
    ctypedef struct hd_tr:
        intp ld
        const double* c
        const double* cpen
        const int* o
        const int* t
        const double* e
    const char* hd_isa_names[]
    int hd_isa
    int hd_isa_available(int isa) noexcept nogil
    int hd_isa_best() noexcept nogil
    int hd_isa_set(int isa) noexcept nogil
    int hd_tile(const hd_tplan* P, const hd_tq* Q, const hd_tr* R, intp j0, intp nb,
                double bound, double* s) noexcept nogil
    enum: HD_GQB
    enum: HD_GPW
    intp hd_scan_f(const float* g, intp n, intp rc, intp c_first, intp c_end,
                   const float* th) noexcept nogil
    intp hd_scan_d(const double* g, intp n, intp rc, intp c_first, intp c_end,
                   const double* th) noexcept nogil
    void hd_prep_f(const float* g, intp n, intp rc, const float* th1, const float* gy,
                   intp gstride, const intp* mi, intp nm, const float* hc, float hm,
                   const unsigned short* ab, const float* tab, float* v) noexcept nogil
    void hd_prep_d(const double* g, intp n, intp rc, const double* th1, const double* gy,
                   intp gstride, const intp* mi, intp nm, const double* hc, double hm,
                   const unsigned short* ab, const double* tab, double* v) noexcept nogil
    ctypedef struct hd_gadd:
        const unsigned short* ab
        const float* gy
        intp gstride, nt
        const float* tab[8]
        const unsigned short* t16[8]
        const intp* mi[8]
        intp nm[8]
        int bf16
    void hd_gemm_blk(const float* Xt, intp nqb, const float* Y, intp npan, intp K, float* G,
                     intp ldg, const hd_gadd* add) noexcept nogil
    int hd_bf16_available() noexcept nogil
    int hd_bf16_set(int on) noexcept nogil
    int hd_gemm_bf16() noexcept nogil
    float hd_bf16_float(unsigned short h) noexcept nogil


def isa_variants():
    """Names of the tile kernel's instruction-set variants this machine runs, best last."""
    return [hd_isa_names[i].decode() for i in range(HD_NISA) if hd_isa_available(i)]


def isa():
    """Name of the tile kernel variant in use."""
    return hd_isa_names[hd_isa].decode()


def set_isa(name):
    """Use the tile kernel variant ``name`` ("baseline", "avx2", "avx512" or "best").

    Call it with no kernel running (results are identical on every variant; this exists to
    test that and to measure)."""
    names = [hd_isa_names[i].decode() for i in range(HD_NISA)]
    if name == "best":
        hd_isa_set(hd_isa_best())
        return isa()
    if name not in names:
        raise ValueError("HDIST_ISA / isa must be one of %s or 'best', got %r"
                         % (names, name))
    if hd_isa_set(names.index(name)) != 0:
        raise ValueError("instruction set %r is not available on this machine (available: %s)"
                         % (name, isa_variants()))
    return isa()


def bf16_bounds():
    """True when the filter's product adds its bounds of the reference rows' missing-value
    terms from bfloat16 tables (the AVX-512 variant on a machine with AVX512_BF16)."""
    return bool(hd_gemm_bf16())


def bf16_bounds_available():
    """True when this machine has AVX512_BF16 (and the AVX-512 variant)."""
    return bool(hd_bf16_available())


def set_bf16_bounds(bint on):
    """Use (when the machine has AVX512_BF16) or not the bfloat16 tables; call it with no
    kernel running (results are identical either way: this exists to test that and to
    measure)."""
    if hd_bf16_set(on) != 0:
        raise ValueError("AVX512_BF16 is not available on this machine")


def _init_isa():
    import os
    import warnings
    want = os.environ.get("HDIST_ISA", "best").strip().lower() or "best"
    try:
        set_isa(want)
    except ValueError as exc:
        warnings.warn("HDIST_ISA ignored: %s" % exc, RuntimeWarning)
        set_isa("best")
    # HDIST_BF16=0: the filter's product keeps its float32 tables on AVX512_BF16 machines
    off = os.environ.get("HDIST_BF16", "1").strip().lower() in ("0", "no", "false", "off")
    hd_bf16_set(0 if off or not hd_bf16_available() else 1)


_init_isa()


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


def _region_rows(int n_threads, Py_ssize_t n_other):
    """Query rows per parallel region: few barriers (a thread that waits at one burns the
    core its preempted partner needs on a loaded machine), still many chunks per thread."""
    return max(64, 16 * n_threads, REGION_PAIRS // max(1, n_other))


def _threads_for(int n_threads, Py_ssize_t pairs):
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1, got %d" % n_threads)
    return 1 if pairs < SERIAL_PAIRS else n_threads


cdef class CPlan:
    """C view of a :class:`hdist._plan.Plan` (kept alive by this object)."""

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
    """C view of encoded rows (a :class:`hdist._plan.Rows`)."""

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


# ---------------------------------------------------------------------------
# ordering of candidates: (distance, index) lexicographic

cdef inline bint _before(double d1, intp i1, double d2, intp i2) noexcept nogil:
    return d1 < d2 or (d1 == d2 and i1 < i2)


cdef inline void heap_push(double* hd, intp* hi, intp k, double d, intp j) noexcept nogil:
    """Replace the root of a full max-heap (on (d, j)) by (d, j) and sift down.
    The caller has checked that (d, j) comes before the root."""
    cdef intp pos = 0, child, right
    while True:
        child = 2 * pos + 1
        if child >= k:
            break
        right = child + 1
        if right < k and _before(hd[child], hi[child], hd[right], hi[right]):
            child = right
        if _before(d, j, hd[child], hi[child]):
            hd[pos] = hd[child]
            hi[pos] = hi[child]
            pos = child
        else:
            break
    hd[pos] = d
    hi[pos] = j


cdef inline void heap_sort(double* hd, intp* hi, intp k) noexcept nogil:
    """Sort a max-heap in place into ascending (d, j) order."""
    cdef intp end = k - 1
    cdef double d
    cdef intp j
    while end > 0:
        d = hd[end]
        j = hi[end]
        hd[end] = hd[0]
        hi[end] = hi[0]
        # sift (d, j) down from the root in heap [0, end)
        heap_push(hd, hi, end, d, j)
        end -= 1


cdef void _unit_weights(const PlanS* P, hd_tplan* T) noexcept:
    """``T.ign_unit``: every weight the "ignore" rule counts (in attribute order, as
    ``pair_reduced`` sums them) is one value ``w`` and each partial sum of ``n`` of them is
    ``n w`` exactly, so the known weight of a row is ``ign_all - w * skipped`` with the bits
    of the sum: the tile kernel then counts skips only (Gower's unit weights)."""
    cdef intp a, n = 0
    cdef double w = 0.0, acc = 0.0, v
    cdef int ok = 1
    T.ign_unit, T.ign_w, T.ign_all = 0, 0.0, 0.0
    for a in range(P.mc + P.mo + P.mt + P.me):
        if a < P.mc:
            v = P.c_w[a]
        elif a < P.mc + P.mo:
            v = P.o_rw[a - P.mc]
        elif a < P.mc + P.mo + P.mt:
            v = P.t_rw[a - P.mc - P.mo]
        else:
            v = P.e_rw[a - P.mc - P.mo - P.mt]
        if n == 0:
            w = v
        n += 1
        acc = acc + v
        # fma(n, w, -acc) is n w - acc without rounding: 0 when the sum is n w exactly
        if v != w or fma(<double> n, w, -acc) != 0.0:
            ok = 0
    if ok and n > 0 and w > 0.0:
        T.ign_unit, T.ign_w, T.ign_all = 1, w, acc


cdef hd_tplan _tplan(CPlan plan) except *:
    """The tile kernel's view of a plan."""
    cdef const PlanS* P = &plan.s
    cdef hd_tplan T
    T.mc = P.mc
    T.mo = P.mo
    T.mt = P.mt
    T.me = P.me
    # p = 0.5, 3 and 4 have their own entries (sqrt and products, vectorized), the same
    # values as hd_pw_gen's
    T.pmode = P.pmode
    if P.pmode == 3:
        T.pmode = 4 if P.p == 0.5 else (5 if P.p == 3.0 else (6 if P.p == 4.0 else 3))
    T.p = P.p
    T.ign = P.has_ignore
    T.w_all = P.w_all
    T.w_max = P.w_max
    _unit_weights(P, &T)
    T.c_inv = P.c_inv
    T.c_tw = P.c_w
    T.c_both = P.c_both
    T.c_rw = P.c_w
    T.c_ign = P.c_ign
    T.o_w = P.o_w
    T.o_miss = P.o_miss
    T.o_rw = P.o_rw
    T.o_ign = P.o_ign
    T.t_tab = P.t_tab
    T.t_off = P.t_off
    T.t_V = P.t_V
    T.t_miss = P.t_miss
    T.t_rw = P.t_rw
    T.t_ign = P.t_ign
    T.e_off = P.e_off
    T.e_q = P.e_q
    T.e_miss = P.e_miss
    T.e_rw = P.e_rw
    T.e_ign = P.e_ign
    return T


#: largest attribute-major copy of a reference set kept with it (bytes); larger sets are
#: transposed tile by tile into per-thread buffers
ATTR_MAJOR_BYTES = 1 << 30


cdef hd_tr _tref(CRows R) except *:
    """Attribute-major copy of R's rows (made once per CRows, kept with it); ``ld = 0``
    when the copy would exceed ``ATTR_MAJOR_BYTES``."""
    cdef hd_tr T
    keep = R._keep
    am = keep.get("_attr_major")
    if am is None and sum(keep[k].nbytes for k in ("c", "cpen", "o", "t", "e")) > ATTR_MAJOR_BYTES:
        T.ld = 0
        return T
    if am is None:
        am = {}
        for name, dtype in (("c", np.float64), ("cpen", np.float64), ("o", np.intc),
                            ("t", np.intc), ("e", np.float64)):
            a = keep[name]
            if a.ndim == 2 and a.size:
                a = np.ascontiguousarray(a.T)
            else:
                a = np.zeros(1, dtype=dtype)
            am[name] = a
        # another thread may have stored its copy meanwhile: everyone uses the stored one
        am = keep.setdefault("_attr_major", am)
    T.ld = R.s.n
    T.c = <const double*> cnp.PyArray_DATA(am["c"])
    T.cpen = <const double*> cnp.PyArray_DATA(am["cpen"])
    T.o = <const int*> cnp.PyArray_DATA(am["o"])
    T.t = <const int*> cnp.PyArray_DATA(am["t"])
    T.e = <const double*> cnp.PyArray_DATA(am["e"])
    return T


cdef inline void _tq_row(const PlanS* P, const RowsS* Q, intp q, hd_tq* out) noexcept nogil:
    out.c = Q.c + q * P.mc
    out.cpen = Q.cpen + q * P.mc
    out.o = Q.o + q * P.mo
    out.t = Q.t + q * P.mt
    out.e = Q.e + q * Q.D


cdef intp _tile_doubles(const PlanS* P, const RowsS* R) noexcept nogil:
    """Size (in doubles) of a buffer holding HD_TB rows of R attribute-major."""
    return HD_TB * (2 * P.mc + R.D + (P.mo + P.mt + 1) // 2 + 1)


cdef object _tile_buffers(CPlan plan, CRows R, int n_threads, const hd_tr* whole,
                          double** base, intp* stride):
    """Per-thread tile buffers when R has no attribute-major copy: thread t transposes
    into ``base + t * stride`` (``base = NULL`` otherwise)."""
    base[0] = NULL
    stride[0] = 0
    if whole.ld:
        return None
    buf = np.empty((n_threads, _tile_doubles(&plan.s, &R.s)))
    base[0] = <double*> cnp.PyArray_DATA(buf)
    stride[0] = buf.shape[1]
    return buf


cdef inline hd_tr _tile_of(const PlanS* P, const RowsS* R, const hd_tr* whole, intp t0,
                           intp nb, double* mem, intp* j0) noexcept nogil:
    """Rows [t0, t0 + nb) of R attribute-major: a view of the whole copy, or the rows
    transposed into mem (then ``*j0 = 0``)."""
    cdef hd_tr T
    cdef intp a, j, r, mc = P.mc, mo = P.mo, mt = P.mt, D = R.D
    cdef double* c
    cdef double* cp
    cdef double* e
    cdef int* o
    cdef int* t
    if whole.ld:
        j0[0] = t0
        return whole[0]
    j0[0] = 0
    c = mem
    cp = c + mc * nb
    e = cp + mc * nb
    o = <int*> (e + D * nb)
    t = o + mo * nb
    for j in range(nb):
        r = t0 + j
        for a in range(mc):
            c[a * nb + j] = R.c[r * mc + a]
            cp[a * nb + j] = R.cpen[r * mc + a]
        for a in range(D):
            e[a * nb + j] = R.e[r * D + a]
        for a in range(mo):
            o[a * nb + j] = R.o[r * mo + a]
        for a in range(mt):
            t[a * nb + j] = R.t[r * mt + a]
    T.ld = nb
    T.c = c
    T.cpen = cp
    T.e = e
    T.o = o
    T.t = t
    return T


cdef inline double* _mem_of(double* base, intp stride) noexcept nogil:
    """This thread's tile buffer."""
    if base == NULL:
        return NULL
    return base + hdist_thread_id() * stride


cdef void scan_tile(const hd_tplan* T, const PlanS* P, const RowsS* Q, const RowsS* RS,
                    const hd_tr* whole, double* mem, intp q0, intp q1, intp r0, intp r1,
                    double* hd, intp* hi, intp k, intp tile, int excl,
                    intp self_off) noexcept nogil:
    """Update the heaps of queries [q0, q1) with reference rows [r0, r1), tile by tile
    (each tile's reduced distances computed by the tile kernel, ``hd_tile``)."""
    cdef double buf[HD_TB]
    cdef hd_tq qr
    cdef hd_tr R
    cdef intp t0, t1, q, j, qk, j0
    cdef double s, bound
    t0 = r0
    while t0 < r1:
        t1 = t0 + tile
        if t1 > r1:
            t1 = r1
        R = _tile_of(P, RS, whole, t0, t1 - t0, mem, &j0)
        for q in range(q0, q1):
            qk = (q - q0) * k
            bound = reduced_bound(P, hd[qk])
            _tq_row(P, Q, q, &qr)
            if hd_tile(T, &qr, &R, j0, t1 - t0, bound, buf):
                continue        # every row of the tile is beyond the k-th distance
            for j in range(t0, t1):
                s = buf[j - t0]
                if s > bound or (excl and j == q + self_off):
                    continue
                # heaps hold (true distance, index): the k-th place is decided on the
                # distance returned
                s = true_of(P, Q, q, RS, j, s)
                if _before(s, j, hd[qk], hi[qk]):
                    heap_push(hd + qk, hi + qk, k, s, j)
                    bound = reduced_bound(P, hd[qk])
        t0 = t1


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def knn(CPlan plan, CRows Q, CRows R, intp k, int n_threads, intp tile=256,
        intp block=0, bint exclude_self=False, intp self_offset=0, strategy=None):
    """Exact k nearest reference rows for every query row.

    Returns ``(dist, ind)``, both ``[n_q, k]``, sorted by (distance, index); ``dist`` holds
    true distances.  ``exclude_self`` skips reference ``q + self_offset`` for query ``q``.
    ``strategy`` is "queries" (parallel over query rows) or "references" (parallel over
    reference rows, one heap set per thread, merged at the end); None chooses.
    """
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nq = Q.s.n, nr = R.s.n
    cdef intp i, q, b0, b1, nb, t, c, per, r0, r1, j
    cdef int excl = exclude_self
    if k < 1 or k > nr - (1 if exclude_self else 0):
        raise ValueError("k must be in [1, %d], got %d" % (nr - (1 if exclude_self else 0), k))
    if tile < 1:
        raise ValueError("tile must be >= 1")
    tile = min(tile, HD_TB)
    n_threads = _threads_for(n_threads, nq * nr)
    dist = np.full((nq, k), np.inf)
    ind = np.full((nq, k), nr, dtype=np.intp)   # sentinel index > every real index
    cdef double[:, ::1] D = dist
    cdef intp[:, ::1] I = ind
    if nq == 0:
        return dist, ind
    if strategy is None:
        strategy = "queries" if nq >= 8 * n_threads or nr < 4096 else "references"
    if block <= 0:
        block = _region_rows(n_threads, nr)
    cdef double* td
    cdef intp* ti
    cdef intp nt
    cdef hd_tplan TP = _tplan(plan)
    cdef hd_tr TR = _tref(R)
    cdef double* mem
    cdef intp mstride
    keep_mem = _tile_buffers(plan, R, n_threads, &TR, &mem, &mstride)
    if strategy == "queries":
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            nb = b1 - b0
            # one small chunk of queries per iteration; chunks are independent
            per = 8
            with nogil:
                for c in prange((nb + per - 1) // per, num_threads=n_threads, schedule="dynamic"):
                    scan_tile(&TP, P, QS, RS, &TR, _mem_of(mem, mstride),
                              b0 + c * per, min(b1, b0 + c * per + per), 0, nr,
                               &D[b0 + c * per, 0], &I[b0 + c * per, 0], k, tile, excl,
                               self_offset)
            PyErr_CheckSignals()
    elif strategy == "references":
        nt = n_threads
        tdist = np.full((nt, nq, k), np.inf)
        tind = np.full((nt, nq, k), nr, dtype=np.intp)
        # one parallel region per span of at least 2^20 rows (few regions for few queries;
        # signals are still checked between spans)
        span = max(block * tile, 1 << 20)
        for b0 in range(0, nr, span):
            b1 = min(nr, b0 + span)
            td = <double*> cnp.PyArray_DATA(tdist)
            ti = <intp*> cnp.PyArray_DATA(tind)
            per = (b1 - b0 + nt - 1) // nt
            with nogil:
                for t in prange(nt, num_threads=n_threads, schedule="static"):
                    r0 = b0 + t * per
                    r1 = min(b1, r0 + per)
                    if r0 < r1:
                        scan_tile(&TP, P, QS, RS, &TR, _mem_of(mem, mstride), 0, nq, r0, r1,
                                  td + t * nq * k, ti + t * nq * k,
                                   k, tile, excl, self_offset)
            PyErr_CheckSignals()
        # merge: the k best of all thread heaps under (d, j)
        td = <double*> cnp.PyArray_DATA(tdist)
        ti = <intp*> cnp.PyArray_DATA(tind)
        with nogil:
            for q in range(nq):
                for t in range(nt):
                    for i in range(k):
                        if _before(td[(t * nq + q) * k + i], ti[(t * nq + q) * k + i],
                                   D[q, 0], I[q, 0]):
                            heap_push(&D[q, 0], &I[q, 0], k, td[(t * nq + q) * k + i],
                                      ti[(t * nq + q) * k + i])
    else:
        raise ValueError("strategy must be 'queries' or 'references', got %r" % (strategy,))
    finish_heaps(plan, dist, ind)
    return dist, ind


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def finish_heaps(CPlan plan, double[:, ::1] D, intp[:, ::1] I):
    """Turn per-query max-heaps of (true distance, index) into sorted rows, in place."""
    cdef intp q, nq = D.shape[0], k = D.shape[1]
    with nogil:
        for q in range(nq):
            heap_sort(&D[q, 0], &I[q, 0], k)


ctypedef struct Hit:
    double d
    intp j


ctypedef fused real:
    float
    double


cdef enum:
    GEMM_MAX_CHUNK_C = 256
    # chunks whose thresholds _filter_row computes at once
    SCAN_WINDOW = 64
    # most reference rows of a segment whose tested values _filter_row computes at once
    PREP_ROWS = 2048
    # attributes with a code of their own in miss_codes (the others are counted)
    CODED_ATTRS = 24

#: most reference rows per chunk of the matrix-product filter (``r_chunk``)
GEMM_MAX_CHUNK = GEMM_MAX_CHUNK_C


cdef inline unsigned long long _le_mask(const real* e, intp n, real s) noexcept nogil:
    """Bit j set when ``e[j] <= s``, for ``n <= 64``."""
    if real is float:
        return hd_le_mask_f(e, n, s)
    return hd_le_mask_d(e, n, s)


cdef inline real _below(double t, const real* like) noexcept nogil:
    """``t >= 0`` in the product's precision, never above it (0 below 1e-30)."""
    if t < 1e-30:
        return 0
    if real is float:
        return <float> (t * (1.0 - 2.0 ** -22))
    return t * (1.0 - 2.0 ** -50)


cdef inline real _threshold(double tau, double margin, const real* like) noexcept nogil:
    """``tau + margin`` (> 0) in the product's precision (that of ``like``), never below
    it: enlarged by 2^-22 before the conversion, which rounds by at most 2^-24 (the
    margin holds at least 1e-30, far above float's smallest normal)."""
    if real is float:
        return <float> ((tau + margin) * (1.0 + 2.0 ** -22))
    return tau + margin


cdef inline real _above(double t, const real* like) noexcept nogil:
    """``t`` in the product's precision, never below it."""
    if real is float:
        return <float> (t + fabs(t) * 2.0 ** -22)
    return t + fabs(t) * 2.0 ** -50


cdef inline real _lower(real Sr, double sub, double mag, const real* like) noexcept nogil:
    """``Sr - sub`` in the product's precision, never below its exact value: ``mag``
    bounds the magnitudes summed into ``sub`` and the slack ``mag 2^-20`` covers the
    rounding of those float64 additions (and subtractions), which are monotone."""
    if mag == 0.0:
        return Sr
    return _above(Sr - sub + (fabs(Sr) + mag) * 2.0 ** -20, like)


ctypedef struct _Complete:
    int unused


ctypedef struct _Missing:
    int unused


# the kind of one query row of the filter: no missing value on either side (the pair's
# estimate is the product alone), or some (added columns and terms); chosen per row so
# that the common complete case keeps the shortest loop
ctypedef fused miss_t:
    _Complete
    _Missing


cdef inline void _hq_bounds(const double* hq, intp nh, double* lbq,
                            double* hmin) noexcept nogil:
    """The sum of the negative ``hq[0 .. nh)`` and their smallest (INFINITY when nh = 0),
    in the order :func:`_filter_row` needs them."""
    cdef intp t
    lbq[0] = 0.0
    hmin[0] = INFINITY
    for t in range(nh):
        if hq[t] < 0.0:
            lbq[0] = lbq[0] + hq[t]
        if hq[t] < hmin[0]:
            hmin[0] = hq[t]


ctypedef struct _Codes:
    # two codes per reference row, ab[j] = a + 256 b, and the query's table of 32 lower
    # bounds (miss_codes): tab[a] + tab[b] bounds the terms of the attributes
    # row j misses, more tightly than hc[j] times the smallest
    const unsigned short* ab
    const float* tab
    # the table rounded down to bfloat16, when the product added those instead (NULL: not)
    const unsigned short* t16


cdef inline bint _code_exact(unsigned short code, intp nh) noexcept nogil:
    """True when a reference row's codes (:func:`miss_codes`) are those of the
    attributes it misses (at most two, each coded), not a count."""
    return (code >> 8) == 31 or (code >> 8) < min(nh, <intp> CODED_ATTRS)


cdef intp _filter_row(const PlanS* P, const RowsS* QS, const RowsS* RS, intp q,
                      const real* g, intp nt, intp r0, intp r_chunk, const double* ny_max,
                      double epsx, const real* gy, intp gstride, const intp* mi, intp nm,
                      const double* gmin, intp mstride, const double* hq, intp nh,
                      const intp* rptr, const intp* ridx, const real* hc, const double* hb,
                      const _Codes* cd, double* hd, intp* hi, intp k, double r, Hit** buf,
                      intp* cap, intp cnt, int excl, intp self_off, bint given,
                      miss_t* kind) noexcept nogil:
    """One query row of :func:`gemm_select` (``buf`` NULL: update the heap ``hd``/``hi``
    of ``k`` entries) or of :func:`gemm_radius_select` (append the hits within ``r`` to
    ``buf[0]`` from position ``cnt``).  Returns the new count, or -1 when out of memory.

    ``hq`` (NULL: none) holds the query's ``nh`` terms against the attributes missing in
    reference rows (``rptr``/``ridx``: those of each row, ``hc`` their number).  When
    they are all >= 0, a lower bound of row ``j``'s is added to its estimate before the
    test: ``hc[j]`` times the smallest, ``hm``, or with the codes ``cd`` (float only) the
    terms of its first two such attributes, or of one and the others' number times ``hm``
    (:func:`miss_codes`).  Else
    the estimates are tested against ``Sr - lbq``, ``lbq`` the sum of the negative terms.
    A pair passing is tested again, with its own terms added in float64, against ``Sr``.
    ``kind`` (a NULL pointer) selects the compiled variant: ``_Complete`` only when
    ``nm == 0`` and ``hq`` is NULL.  ``hb`` (NULL: computed here) holds that sum and
    smallest, :func:`_hq_bounds`, computed once per query.  ``given``: ``g`` already holds
    the tested values the codes give (``hd_gemm_blk``'s additions: ``hd_prep``'s values
    with the float table, lower ones from the bfloat16 table ``cd.t16``); only with ``cd``
    and a query whose terms are all >= 0."""
    cdef real vb[PREP_ROWS]
    cdef real th1[SCAN_WINDOW]
    cdef real th2[SCAN_WINDOW]
    cdef const real* tv
    cdef const real* vt = vb      # the tested values of the segment from row sj
    cdef real ev, tsum
    cdef double dsum
    cdef double tau = reduced_bound(P, r if buf != NULL else hd[0]), s, corr
    cdef real Sr, Sl        # the threshold of the pair and that of its tested value
    cdef intp c0 = 0, c1, c = 0, jj, j, t, cg = r0 // r_chunk, ci, cend
    cdef intp nc = (nt + r_chunk - 1) // r_chunk, cw = 0, cw_end = 0
    cdef intp s0 = 0, s1 = 0, sj = 0, sn = 0
    cdef intp seg = max(1, min(SCAN_WINDOW, PREP_ROWS // r_chunk))
    cdef double lb, mag, lbq = 0.0, hmin = INFINITY
    cdef real hm = 0
    cdef const real* hcx = NULL
    cdef const unsigned short* ab = NULL
    cdef const real* tab = NULL
    cdef unsigned long long mask
    cdef intp b0
    cdef Hit* tmp
    cdef bint stale = True, pre = False, fused = False
    if miss_t is _Missing:
        if hb != NULL:
            lbq, hmin = hb[0], hb[1]
        else:
            _hq_bounds(hq, nh, &lbq, &hmin)
        if nh > 0 and lbq == 0.0:
            # every term against a missing reference value is >= 0: a lower bound of
            # each row's is added to its estimate
            hm = _below(hmin, g)
            if real is float and cd != NULL:
                ab, tab = cd.ab + r0, cd.tab
            elif hm != 0:
                hcx = hc + r0
        # the tested values are computed a segment at a time (hdist/_scan_body.h) when
        # something is added to the estimates, unless the product made them (given)
        fused = nm > 0 or hcx != NULL or ab != NULL
    while c < nc:
        if stale or c >= cw_end:
            # the thresholds of the next chunks (SCAN_WINDOW at most), with the current
            # bound: Sr, for a row with missing values Sl = Sr less the reference-missing
            # terms' sum of negative parts.  They are recomputed whenever the bound drops,
            # so each chunk is tested exactly as if its threshold were computed when it is
            # reached.
            cw = c
            cw_end = min(nc, c + SCAN_WINDOW)
            for ci in range(cw, cw_end):
                Sr = _threshold(tau, epsx * ny_max[ci], g)
                if miss_t is _Complete:
                    th2[ci - cw] = Sr
                else:
                    th2[ci - cw] = _lower(Sr, lbq, fabs(lbq), g)
            stale = False
        if miss_t is _Missing:
            if fused and given and c >= s1:
                # the product computed them: one segment, the whole row
                s0, s1, sj, sn, vt = 0, nc, 0, nt, g
            elif fused and c >= s1:
                # the next segment's tested values; with nothing added but the query's
                # columns, a chunk is computed only when its product alone passes Sl less
                # the chunk's smallest added columns (the slack covers the rounding of the
                # additions, which are monotone, and the threshold is rounded up)
                s0 = c
                s1 = min(nc, c + seg)
                sj = s0 * r_chunk
                sn = min(nt, s1 * r_chunk) - sj
                pre = hcx == NULL and ab == NULL and gmin != NULL and tau < INFINITY
                if pre:
                    for ci in range(s0, s1):
                        Sr = _threshold(tau, epsx * ny_max[ci], g)
                        lb = lbq
                        mag = fabs(lbq)
                        for t in range(nm):
                            lb = lb + gmin[mi[t] * mstride + cg + ci]
                            mag = mag + fabs(gmin[mi[t] * mstride + cg + ci])
                        th1[ci - s0] = _lower(Sr, lb, mag, g)
                if real is float:
                    hd_prep_f(g + sj, sn, r_chunk, &th1[0] if pre else NULL,
                              gy + r0 + sj if nm > 0 else NULL, gstride, mi, nm,
                              hcx + sj if hcx != NULL else NULL, hm,
                              ab + sj if ab != NULL else NULL, tab, vb)
                else:
                    hd_prep_d(g + sj, sn, r_chunk, &th1[0] if pre else NULL,
                              gy + r0 + sj if nm > 0 else NULL, gstride, mi, nm,
                              hcx + sj if hcx != NULL else NULL, hm, NULL, NULL, vb)
        # the first chunk from c on with a value at or below its threshold
        # (hdist/_scan_body.h)
        if miss_t is _Missing and fused:
            cend = min(cw_end, s1)
            if real is float:
                c = s0 + hd_scan_f(vt, sn, r_chunk, c - s0, cend - s0, th2 + (c - cw))
            else:
                c = s0 + hd_scan_d(vt, sn, r_chunk, c - s0, cend - s0, th2 + (c - cw))
        else:
            cend = cw_end
            if real is float:
                c = hd_scan_f(g, nt, r_chunk, c, cend, th2 + (c - cw))
            else:
                c = hd_scan_d(g, nt, r_chunk, c, cend, th2 + (c - cw))
        if c >= cend:
            continue
        c0 = c * r_chunk
        c1 = min(nt, c0 + r_chunk)
        Sr = _threshold(tau, epsx * ny_max[c], g)
        tv = g + c0
        Sl = th2[c - cw]
        if miss_t is _Missing:
            if fused:
                tv = vt + (c0 - sj)
        b0 = 0
        mask = 0
        while True:
            # the entries of the chunk at or below the threshold, 64 at a time
            if mask == 0:
                if b0 >= c1 - c0:
                    break
                mask = _le_mask(tv + b0, min(64, c1 - c0 - b0), Sl)
                b0 = b0 + 64
                continue
            jj = b0 - 64 + hd_ctz64(mask)
            mask = mask & (mask - 1)
            j = r0 + c0 + jj
            # the threshold may have dropped since the mask was taken
            if tv[jj] > Sl:
                continue
            if miss_t is _Missing:
                # a row whose codes are its own attributes (miss_codes) was tested with its
                # terms up to rounding (float32, or bfloat16 with the product's tables: 2^-8
                # of the terms): the test below would seldom reject it, and
                # its entries of rptr/ridx are cache misses; the exact kernel decides
                if hq != NULL and (ab == NULL or not _code_exact(ab[c0 + jj], nh)):
                    # the estimate with the query's columns (the sum hdist/_scan_body.h
                    # makes: the tested value itself when nothing else is added), and the
                    # terms of the attributes row j misses, in float64
                    corr = 0.0
                    for t in range(rptr[j], rptr[j + 1]):
                        corr = corr + hq[ridx[t]]
                    if given:
                        # the estimate with the columns, e, is not stored: tv = e + tsum
                        # rounded once (at most 2^-24 |tv|), so e is at least tv - tsum
                        # less that, and the slack also covers the float64 roundings
                        if real is float and cd.t16 != NULL:
                            # the bfloat16 entries the product added (hd_gemm_blk): a dot
                            # product, at most two roundings and a flush to zero of 1e-38
                            dsum = <double> hd_bf16_float(cd.t16[ab[c0 + jj] & 255]) \
                                + <double> hd_bf16_float(cd.t16[ab[c0 + jj] >> 8])
                        else:
                            tsum = tab[ab[c0 + jj] & 255] + tab[ab[c0 + jj] >> 8]
                            dsum = tsum
                        if (<double> tv[jj] - dsum) - (fabs(tv[jj]) + dsum) * 2.0 ** -22 \
                                - 1e-30 + corr > <double> Sr:
                            continue
                    else:
                        if hcx == NULL and ab == NULL:
                            ev = tv[jj]
                        else:
                            ev = g[c0 + jj]
                            for t in range(nm):
                                ev = ev + gy[mi[t] * gstride + j]
                        if <double> ev + corr > <double> Sr:
                            continue
            if excl and j == q + self_off:
                continue
            s = pair_reduced(P, QS, q, RS, j, 2, tau)
            if s > tau:
                continue
            s = true_of(P, QS, q, RS, j, s)
            if buf == NULL:
                if _before(s, j, hd[0], hi[0]):
                    heap_push(hd, hi, k, s, j)
                    tau = reduced_bound(P, hd[0])
                    Sr = _threshold(tau, epsx * ny_max[c], g)
                    Sl = Sr if miss_t is _Complete else _lower(Sr, lbq, fabs(lbq), g)
                    stale = True
            elif s <= r:
                if cnt == cap[0]:
                    cap[0] = 2 * cap[0] + 16
                    tmp = <Hit*> realloc(buf[0], cap[0] * sizeof(Hit))
                    if tmp == NULL:
                        return -1
                    buf[0] = tmp
                buf[0][cnt].d = s
                buf[0][cnt].j = j
                cnt = cnt + 1
        c0 = c1
        c = c + 1
    return cnt


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef inline const intp* _miss_of(const intp[::1] qptr, const intp[::1] qidx, intp q,
                                 intp* nm) noexcept nogil:
    if qptr is None or qptr[q + 1] == qptr[q]:
        nm[0] = 0
        return NULL
    nm[0] = qptr[q + 1] - qptr[q]
    return &qidx[qptr[q]]


cdef int _query_miss_ok(const intp[::1] qptr, const intp[::1] qidx, intp q0, intp nb,
                        intp m) noexcept:
    """1 when the entries of queries ``q0 .. q0 + nb`` in ``qptr``/``qidx`` index ``qidx``
    and ``m`` rows within bounds (O(nb) per tile)."""
    cdef intp q, t
    if qptr[q0] < 0 or qptr[q0 + nb] > qidx.shape[0]:
        return 0
    for q in range(q0, q0 + nb):
        if qptr[q + 1] < qptr[q]:
            return 0
    for t in range(qptr[q0], qptr[q0 + nb]):
        if qidx[t] < 0 or qidx[t] >= m:
            return 0
    return 1


def _check_select(G, intp r_chunk, gy, qptr, qidx, intp nq_all, intp nr_all, nx, ny_max,
                  intp q0, intp r0, gmin):
    """Validate a tile's position and the arrays the selection indexes for it (the kernels
    read them without bounds checks)."""
    cdef intp nb = G.shape[0], nt = G.shape[1], nc
    if r_chunk < 1 or r_chunk > GEMM_MAX_CHUNK:
        raise ValueError("r_chunk must be in [1, %d], got %d" % (GEMM_MAX_CHUNK, r_chunk))
    if (qptr is None) != (qidx is None) or (qptr is not None and gy is None):
        raise ValueError("gy, qptr and qidx go together")
    if qptr is not None and qptr.shape[0] != nq_all + 1:
        raise ValueError("qptr must have one entry per query row plus one")
    if q0 < 0 or r0 < 0 or q0 + nb > nq_all or r0 + nt > nr_all:
        raise ValueError("the tile must lie within the query and reference rows")
    if nx.shape[0] < nq_all:
        raise ValueError("nx must have one entry per query row")
    nc = (nt + r_chunk - 1) // r_chunk
    if ny_max.shape[0] < nc:
        raise ValueError("ny_max must have one entry per chunk of r_chunk rows of the tile")
    if qptr is not None:
        if not _query_miss_ok(qptr, qidx, q0, nb, gy.shape[0]):
            raise ValueError("qptr must index qidx, and qidx the rows of gy, for the tile's "
                             "queries")
        if gy.shape[1] < r0 + nt:
            raise ValueError("gy must have a column per reference row")
        if gmin is not None:
            if r0 % r_chunk != 0:
                raise ValueError("r0 must be a multiple of r_chunk when gmin is given")
            if gmin.shape[0] < gy.shape[0] or gmin.shape[1] < r0 // r_chunk + nc:
                raise ValueError("gmin must have a row per row of gy and a column per chunk "
                                 "of r_chunk reference rows")


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef int _ref_miss_ok(const intp[::1] rptr, const intp[::1] ridx, const real[::1] hc,
                      intp ncol, intp r0, intp nt) noexcept nogil:
    """1 when the rows ``r0 .. r0 + nt`` of ``rptr``/``ridx`` index ``ridx`` and ``ncol``
    columns within bounds and ``hc`` counts their entries (O(nt) per tile, against
    O(nt) per query of the tile)."""
    cdef intp j, t
    if r0 < 0 or r0 + nt + 1 > rptr.shape[0] or r0 + nt > hc.shape[0] or rptr[r0] < 0 \
            or rptr[r0 + nt] > ridx.shape[0]:
        return 0
    for j in range(r0, r0 + nt):
        if rptr[j + 1] < rptr[j] or hc[j] != rptr[j + 1] - rptr[j]:
            return 0
    for t in range(rptr[r0], rptr[r0 + nt]):
        if ridx[t] < 0 or ridx[t] >= ncol:
            return 0
    return 1


def _check_ref_miss(hq, rptr, ridx, hc, intp nq_all, intp nr_all, intp r0, intp nt):
    """Validate the reference-missing arguments (all None, or all given and consistent:
    the kernels index them without bounds checks)."""
    given = [a is None for a in (hq, rptr, ridx, hc)]
    if all(given):
        return
    if any(given):
        raise ValueError("hq, rptr, ridx and hc go together")
    if hc.shape[0] != nr_all:
        raise ValueError("hc must have one entry per reference row")
    if hq.shape[0] != nq_all:
        raise ValueError("hq must have one row per query row")
    if rptr.shape[0] != nr_all + 1:
        raise ValueError("rptr must have one entry per reference row plus one")


ctypedef struct _SelS:
    # the arguments of a filtered k-NN selection that do not change between its tiles
    # (GemmKnnSelect keeps one for a whole search; gemm_select fills one per call)
    const double* nx
    const double* ny_max
    double* HD
    intp* HI
    intp k, nq, nr, r_chunk, gstride, mstride, nh, self_off
    double eps
    int excl, has_h
    const void* gy
    const intp* qptr
    const intp* qidx
    const double* gmin
    const double* hq
    const intp* rptr
    const intp* ridx
    const void* hc
    const double* hb      # per query, _hq_bounds of its hq row (NULL: computed per row)
    const unsigned short* ab      # per reference row, _Codes (NULL: none)
    const float* tab      # per query, 32 entries
    const unsigned short* t16     # per query, the same in bfloat16 (rounded down)


cdef inline bint _tabled(const _SelS* S, intp q) noexcept nogil:
    """True when :func:`_filter_row` bounds the reference rows' missing terms of query
    ``q`` with the codes (float32): it has such terms and none is negative."""
    return S.ab != NULL and S.has_h and S.nh > 0 and S.hb != NULL and S.hb[2 * q] == 0.0


cdef inline void _select_row(const PlanS* P, const RowsS* QS, const RowsS* RS,
                             const _SelS* S, const real* g, intp nt, intp q, intp r0,
                             const double* nyp, bint given,
                             const unsigned short* t16) noexcept nogil:
    """Query row ``q`` of a tile whose estimates are ``g[0 .. nt)`` (reference rows from
    ``r0``, ``nyp`` the norms' bounds from the tile's first chunk): the complete-row
    variant of :func:`_filter_row` when neither side misses a value, else the other.
    ``given``: ``g`` holds the tested values instead (only when :func:`_tabled`), made
    with the query's bfloat16 table ``t16`` (NULL: its float table)."""
    cdef intp nm = 0
    cdef const intp* mi = NULL
    cdef _Codes cd
    if S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
        nm = S.qptr[q + 1] - S.qptr[q]
        mi = S.qidx + S.qptr[q]
    if nm == 0 and not S.has_h:
        _filter_row(P, QS, RS, q, g, nt, r0, S.r_chunk, nyp, S.eps * S.nx[q],
                    <const real*> S.gy, S.gstride, mi, nm, S.gmin, S.mstride, NULL, 0,
                    NULL, NULL, NULL, NULL, NULL, S.HD + q * S.k, S.HI + q * S.k, S.k, 0.0,
                    NULL, NULL, 0, S.excl, S.self_off, 0, <_Complete*> NULL)
    else:
        if S.ab != NULL:
            cd.ab, cd.tab = S.ab, S.tab + 32 * q
            # the bfloat16 entries when the product added them
            cd.t16 = t16 if given else NULL
        _filter_row(P, QS, RS, q, g, nt, r0, S.r_chunk, nyp, S.eps * S.nx[q],
                    <const real*> S.gy, S.gstride, mi, nm, S.gmin, S.mstride,
                    S.hq + q * S.nh if S.has_h else NULL, S.nh if S.has_h else 0,
                    S.rptr if S.has_h else NULL, S.ridx if S.has_h else NULL,
                    <const real*> S.hc if S.has_h else NULL,
                    S.hb + 2 * q if S.has_h and S.hb != NULL else NULL,
                    &cd if S.ab != NULL else NULL, S.HD + q * S.k,
                    S.HI + q * S.k, S.k, 0.0, NULL, NULL, 0, S.excl, S.self_off, given,
                    <_Missing*> NULL)


cdef void _select_tile(const PlanS* P, const RowsS* QS, const RowsS* RS, const _SelS* S,
                       const real* G, intp ldg, intp nb, intp nt, intp q0,
                       intp r0, const hd_gadd* add) noexcept nogil:
    """The rows of one tile in order: what ``gemm_select`` does with one thread.  ``add``
    (NULL: none; at most HD_GQB rows) the additions ``hd_gemm_blk`` made to the rows."""
    cdef intp ii
    cdef const double* nyp = S.ny_max + r0 // S.r_chunk
    for ii in range(nb):
        _select_row(P, QS, RS, S, G + ii * ldg, nt, q0 + ii, r0, nyp,
                    add != NULL and add.tab[ii] != NULL,
                    add.t16[ii] if add != NULL and add.bf16 else NULL)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_select(CPlan plan, CRows Q, CRows R, const real[:, ::1] G, const double[::1] nx,
                const double[::1] ny_max, intp q0, intp r0, intp r_chunk,
                double[:, ::1] HD, intp[:, ::1] HI, double eps, int n_threads,
                bint exclude_self=False, intp self_offset=0, const real[:, ::1] gy=None,
                const intp[::1] qptr=None, const intp[::1] qidx=None,
                const double[:, ::1] gmin=None, const double[:, ::1] hq=None,
                const intp[::1] rptr=None, const intp[::1] ridx=None,
                const real[::1] hc=None):
    """Update the heaps of queries ``q0 .. q0 + G.shape[0]`` with reference rows
    ``r0 .. r0 + G.shape[1]``, using ``G[i, j]`` (a matrix-product estimate of the reduced
    p = 2 distance, see ``hdist._gemm``) as a filter.

    The estimate of a pair is ``G[i, j]`` plus ``gy[a, r0 + j]`` for every attribute ``a``
    missing in query ``q`` (``qidx[qptr[q]:qptr[q + 1]]``); ``gmin[a, c]``, the smallest
    ``gy[a]`` over chunk ``c`` of all reference rows, lets a chunk be dismissed before
    those additions.  ``hq[q, t]`` (``hdist._gemm``: the query's term against a missing
    value, less its product share) is added for every attribute ``t`` reference row ``j``
    misses (``ridx[rptr[j]:rptr[j + 1]]``; ``hc[j]`` of them), after a first test that
    adds a lower bound of those instead.  A pair is computed exactly
    (``pair_reduced``) unless ``estimate - eps nx[q] ny > tau``, ``tau`` the reduced bound
    of the query's current k-th distance (``reduced_bound``) and ``ny`` bounded by
    ``ny_max[c]`` over chunk ``c`` of ``r_chunk`` reference rows: that margin bounds the
    rounding error of both computations, so the kept set is exactly the brute-force one.
    A chunk none of whose estimates passes is skipped after one vectorised test."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nb = G.shape[0], nt = G.shape[1], ii
    cdef _SelS S
    _check_select(G, r_chunk, gy, qptr, qidx, Q.s.n, R.s.n, nx, ny_max, q0, r0, gmin)
    if HD.shape[0] != Q.s.n or HI.shape[0] != Q.s.n or HD.shape[1] != HI.shape[1] \
            or HD.shape[1] < 1:
        raise ValueError("HD and HI must both be (queries, k) with k >= 1")
    _check_ref_miss(hq, rptr, ridx, hc, Q.s.n, R.s.n, r0, nt)
    has_h = hq is not None and hq.shape[1] > 0 and ridx.shape[0] > 0
    if has_h and not _ref_miss_ok(rptr, ridx, hc, hq.shape[1], r0, nt):
        raise ValueError("rptr and ridx must index ridx and the columns of hq, hc count "
                         "the entries of each row")
    if nb == 0 or nt == 0:
        return
    # the arguments as one search's fixed state (ny_max starts at the tile's chunk)
    S.nx, S.ny_max, S.HD, S.HI = &nx[0], &ny_max[0], &HD[0, 0], &HI[0, 0]
    S.k, S.nq, S.nr, S.r_chunk = HD.shape[1], Q.s.n, R.s.n, r_chunk
    S.eps, S.excl, S.self_off = eps, exclude_self, self_offset
    S.gy = &gy[0, 0] if gy is not None and gy.shape[0] > 0 else NULL
    S.gstride = gy.shape[1] if gy is not None else 0
    S.qptr = &qptr[0] if qptr is not None else NULL
    S.qidx = &qidx[0] if qidx is not None and qidx.shape[0] > 0 else NULL
    S.gmin = &gmin[0, 0] if gmin is not None and gmin.shape[0] > 0 else NULL
    S.mstride = gmin.shape[1] if gmin is not None else 0
    S.has_h = has_h
    S.nh = hq.shape[1] if has_h else 0
    S.hq = &hq[0, 0] if has_h else NULL
    S.rptr = &rptr[0] if has_h else NULL
    S.ridx = &ridx[0] if has_h else NULL
    S.hc = &hc[0] if has_h else NULL
    S.hb = NULL
    S.ab, S.tab, S.t16 = NULL, NULL, NULL
    with nogil:
        for ii in prange(nb, num_threads=n_threads, schedule="static"):
            _select_row(P, QS, RS, &S, &G[ii, 0], nt, q0 + ii, r0, S.ny_max, 0, NULL)


#: reference rows per block of the fused filter (rounded to panels and chunks): its 8 x 2048
#: estimates (64 KB) stay in a core's L2 cache; fewer, longer blocks measured 2-3 % faster
#: than 512 rows (in L1) on 2 000 x 20 000 HVDM, with and without missing values
GEMM_BLOCK_ROWS = 2048
#: pairs per parallel region of the fused filter (signals are checked between regions)
GEMM_REGION_PAIRS = 1 << 26
#: most queries per chunk of the fused filter (each chunk reads the reference panels once)
GEMM_MAX_QUERY_CHUNK = 512


def gemm_panels(const float[:, ::1] Y not None, intp height=HD_GPW):
    """``Y [n, K]`` as panels of ``height`` rows stored attribute-major, ``[ceil(n /
    height), K, height]``, the last zero-padded: the layout :meth:`GemmKnnSelect.search`
    reads (reference rows in panels of ``HD_GPW``, queries of ``HD_GQB``)."""
    n, K = Y.shape[0], Y.shape[1]
    if height < 1:
        raise ValueError("height must be >= 1")
    npan = (n + height - 1) // height
    out = np.zeros((npan * height, K), dtype=np.float32)
    out[:n] = Y
    return np.ascontiguousarray(out.reshape(npan, height, K).transpose(0, 2, 1))


cdef _bf16_down(const float[:, ::1] tab):
    """The float32 tables ``tab`` (entries >= 0) rounded down to bfloat16, as 16-bit words:
    the upper half of each entry's bits (cutting the lower half rounds toward zero)."""
    return (np.asarray(tab).view(np.uint32) >> 16).astype(np.uint16)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_products(const float[:, ::1] X not None, const float[:, :, ::1] Yp not None,
                  const unsigned short[::1] ab=None, const float[:, ::1] tab=None,
                  const float[:, ::1] gy=None, const intp[::1] qptr=None,
                  const intp[::1] qidx=None, const unsigned char[::1] rows=None):
    """``X [nq, K]`` times the panels ``Yp`` (:func:`gemm_panels`) as the fused filter
    computes them, ``[nq, panels x HD_GPW]`` in float32: a test hook for the products of
    every instruction-set variant.  With ``ab`` (one code per reference row,
    :func:`miss_codes`) and ``tab`` (32 entries per query), the tested values the product
    makes instead for the queries with ``rows[q]`` != 0 (None: all): each query's
    estimates plus the rows of ``gy`` it misses (``qidx[qptr[q]:qptr[q + 1]]``; None:
    none) plus ``tab[q, a] + tab[q, b]`` per row, in bfloat16 when :func:`bf16_bounds` (the
    tables rounded down).  The padding rows after the last reference row hold zeros
    without ``ab``, else unspecified values (the selection never reads them)."""
    cdef intp nq = X.shape[0], K = X.shape[1], npan = Yp.shape[0], q, i, t, n = 0
    cdef hd_gadd add
    cdef bint adds = ab is not None
    t16a = None
    if Yp.shape[1] != K or Yp.shape[2] != HD_GPW:
        raise ValueError("Yp must be [panels, %d, %d]" % (K, HD_GPW))
    out = np.zeros((nq, npan * HD_GPW), dtype=np.float32)
    cdef float[:, ::1] G = out
    if not adds and (tab is not None or gy is not None or qptr is not None
                     or qidx is not None or rows is not None):
        raise ValueError("tab, gy, qptr, qidx and rows need ab")
    if adds:
        n = ab.shape[0]
        if rows is not None and rows.shape[0] != nq:
            raise ValueError("rows must have one entry per query")
        if tab is None or tab.shape[0] != nq or tab.shape[1] != 32:
            raise ValueError("tab must have 32 entries per query")
        if n > npan * HD_GPW or n < (npan - 1) * HD_GPW + 1:
            raise ValueError("ab must have one code per reference row of the panels")
        for t in range(n):
            if (ab[t] & 255) >= 32 or (ab[t] >> 8) >= 32:
                raise ValueError("the codes in ab must be below 32")
        if (gy is None) != (qptr is None) or (gy is None) != (qidx is None):
            raise ValueError("gy, qptr and qidx go together")
        if gy is not None:
            if gy.shape[1] != n or qptr.shape[0] != nq + 1 or \
                    not _query_miss_ok(qptr, qidx, 0, nq, gy.shape[0]):
                raise ValueError("gy must have a column per reference row, qptr and qidx "
                                 "index its rows for every query")
        for i in range(nq):
            for t in range(32):
                if not tab[i, t] >= 0:
                    raise ValueError("tab must hold entries >= 0")
        t16a = _bf16_down(tab)
    cdef const unsigned short[:, ::1] t16 = t16a
    if nq == 0 or npan == 0 or K == 0:
        return out
    cdef const float[:, :, ::1] Xp = gemm_panels(X, HD_GQB)
    with nogil:
        q = 0
        while q < nq:
            if adds:
                add.ab, add.nt, add.bf16 = &ab[0], n, hd_gemm_bf16()
                add.gy = &gy[0, 0] if gy is not None and gy.shape[0] > 0 else NULL
                add.gstride = n
                for i in range(HD_GQB):
                    add.tab[i], add.t16[i], add.mi[i], add.nm[i] = NULL, NULL, NULL, 0
                    if q + i < nq and (rows is None or rows[q + i] != 0):
                        add.tab[i], add.t16[i] = &tab[q + i, 0], &t16[q + i, 0]
                        if gy is not None and qptr[q + i + 1] > qptr[q + i]:
                            add.mi[i] = &qidx[qptr[q + i]]
                            add.nm[i] = qptr[q + i + 1] - qptr[q + i]
            hd_gemm_blk(&Xp[q // HD_GQB, 0, 0], min(<intp> HD_GQB, nq - q), &Yp[0, 0, 0],
                        npan, K, &G[q, 0], npan * HD_GPW, &add if adds else NULL)
            q = q + HD_GQB
    return out


cdef void _fill_codes(const double* hq, intp nq, intp nh, const double* hb,
                      const intp* rptr, const intp* ridx, intp nr, unsigned short* ab,
                      float* tab) noexcept nogil:
    """:func:`miss_codes` on checked arguments: ``ab [nr]`` and ``tab [nq, 32]`` (zeros
    on entry) filled from ``hq [nq, nh]``, ``hb [nq, 2]`` and ``rptr``/``ridx``."""
    cdef intp na = min(nh, <intp> CODED_ATTRS), j, t, q, m, first, nco
    cdef float hm
    for j in range(nr):
        nco = 0
        first = 31
        for t in range(rptr[j], rptr[j + 1]):
            if ridx[t] < na:
                if nco == 0:
                    first = ridx[t]
                nco = nco + 1
        m = rptr[j + 1] - rptr[j]
        if m == nco and m <= 2:
            ab[j] = <unsigned short> (first + 256 * (31 if m < 2 else ridx[rptr[j] + 1]))
        else:
            m = m - (1 if nco > 0 else 0)
            ab[j] = <unsigned short> (first + 256 * (na + min(m, 31 - na) - 1))
    for q in range(nq):
        if hb[2 * q] == 0.0:
            for t in range(na):
                tab[32 * q + t] = _below(hq[q * nh + t], <const float*> NULL)
            hm = _below(hb[2 * q + 1], <const float*> NULL)
            for m in range(1, 32 - na):
                tab[32 * q + na + m - 1] = <float> m * hm


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef _all_hq_bounds(const double[:, ::1] hq):
    """``[nq, 2]``: each query row's :func:`_hq_bounds`."""
    cdef intp t
    out = np.empty((hq.shape[0], 2))
    cdef double[:, ::1] hb = out
    for t in range(hq.shape[0]):
        _hq_bounds(&hq[t, 0], hq.shape[1], &hb[t, 0], &hb[t, 1])
    return out


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def query_coded(const int[:, ::1] codes not None, const double[::1] ev not None,
                const intp[::1] ev_off not None, const intp[::1] width not None,
                const double[::1] sv not None, const unsigned char[::1] ok not None,
                const intp[::1] sv_off not None, const double[::1] miss not None,
                const intp[::1] hcol not None, double[:, ::1] X not None, intp x0,
                double[::1] const not None, double[:, ::1] H not None,
                cnp.uint8_t[:, ::1] absent not None, intp a0):
    """The matrix-product filter's query side for ``na`` nominal attributes whose values
    are looked up (``hdist._gemm._queries``): row ``i``'s code ``v = codes[i, a]`` (< 0:
    missing, the table's last row) selects row ``v`` of the attribute's table of
    ``width[a]`` columns (``ev[ev_off[a]:]``, row-major), which is written to
    ``X[i, x0 + ...]``, the attributes' blocks side by side; its ``s = sv[sv_off[a] + v]``
    is added to ``const[i]`` (attribute after attribute, in order), ``H[i, hcol[a]]``
    (``hcol[a] >= 0``) is ``miss[a] - s`` (``miss[a]`` when missing) and
    ``absent[i, a0 + a]`` flags a missing value.  Returns False, with the outputs partly
    written, when a selected row has ``ok`` 0 (a value off the span the tables project
    on); a code at or past the table's last row is a ``ValueError``."""
    cdef intp n = codes.shape[0], na = codes.shape[1], i, a, d, v, nv, x, w, h
    cdef double sa
    if ev_off.shape[0] != na + 1 or width.shape[0] != na or sv_off.shape[0] != na + 1 \
            or miss.shape[0] != na or hcol.shape[0] != na:
        raise ValueError("ev_off and sv_off need na + 1 entries, width, miss and hcol na")
    if sv_off[0] < 0 or sv_off[na] > sv.shape[0] or ok.shape[0] != sv.shape[0] \
            or ev_off[0] < 0 or ev_off[na] > ev.shape[0]:
        raise ValueError("the offsets must lie within sv, ok and ev")
    x = x0
    for a in range(na):
        nv = sv_off[a + 1] - sv_off[a]
        if nv < 1 or width[a] < 0 or ev_off[a + 1] - ev_off[a] != nv * width[a] \
                or (hcol[a] >= H.shape[1]):
            raise ValueError("attribute %d: its tables must hold nv >= 1 rows of width "
                             "columns, hcol a column of H" % a)
        x = x + width[a]
    if x0 < 0 or x > X.shape[1] or X.shape[0] != n or const.shape[0] != n \
            or (H.shape[0] != n and H.shape[1] > 0) or absent.shape[0] != n \
            or a0 < 0 or a0 + na > absent.shape[1]:
        raise ValueError("X, const, H and absent must have one row per code row and the "
                         "columns the attributes fill")
    cdef int status = 0
    with nogil:
        for i in range(n):
            x = x0
            for a in range(na):
                nv = sv_off[a + 1] - sv_off[a]
                v = codes[i, a]
                if v >= nv - 1:
                    status = 2
                    break
                absent[i, a0 + a] = v < 0
                if v < 0:
                    v = nv - 1
                if not ok[sv_off[a] + v]:
                    status = 1
                    break
                w = width[a]
                for d in range(w):
                    X[i, x + d] = ev[ev_off[a] + v * w + d]
                x = x + w
                sa = sv[sv_off[a] + v]
                const[i] = const[i] + sa
                h = hcol[a]
                if h >= 0:
                    H[i, h] = miss[a] if codes[i, a] < 0 else miss[a] - sa
            if status:
                break
    if status == 2:
        raise ValueError("codes must be below their table's last row (the missing value's)")
    return status == 0


def miss_codes(const double[:, ::1] hq not None, hb, const intp[::1] rptr not None,
               const intp[::1] ridx not None):
    """The filter's tighter bound of the terms of the attributes a reference row misses:
    ``(ab, tab)``, ``ab[j] = a + 256 b`` two codes per reference row (below 32) and
    ``tab[q]`` a table of 32 float32 lower bounds per query, so that
    ``tab[q, a] + tab[q, b]`` (in float32) never exceeds the sum of ``hq[q, t]`` over the
    attributes ``t`` row ``j`` misses (``ridx[rptr[j]:rptr[j + 1]]``, distinct columns of
    ``hq``).  ``hb[q]`` is the query's sum of negative terms and smallest term
    (:func:`_hq_bounds`; None: computed here); a query with a negative term keeps a table
    of zeros (the filter then bounds its rows otherwise).

    The first ``na = min(nh, 24)`` attributes have a code each, their entry the query's
    term rounded down; entries ``na .. 30`` hold ``m`` times the rounded-down smallest
    term for ``m = 1 .. 31 - na``, and entry 31 is 0.  A row missing at most two
    attributes, both coded, gets their codes (31 for none): its terms up to rounding.  Any
    other row gets the code of its first coded attribute (31: none) and that of the number
    of its other attributes (at most ``31 - na``).  Every entry rounds down and the terms
    are >= 0, so a row's two entries and their float32 sum never exceed its terms' sum."""
    cdef intp nq = hq.shape[0], nh = hq.shape[1], nr = rptr.shape[0] - 1, j, t
    cdef const double[:, ::1] hbv = _all_hq_bounds(hq) if hb is None else hb
    if nr < 0 or hbv.shape[0] != nq or hbv.shape[1] != 2:
        raise ValueError("rptr must have one entry per reference row plus one, hb one row "
                         "of two per query")
    if nr > 0 and (rptr[0] < 0 or rptr[nr] > ridx.shape[0]):
        raise ValueError("rptr must index ridx")
    for j in range(nr):
        if rptr[j + 1] < rptr[j]:
            raise ValueError("rptr must be non-decreasing")
    for t in range(ridx.shape[0]):
        if ridx[t] < 0 or ridx[t] >= nh:
            raise ValueError("ridx must index the columns of hq")
    ab_a = np.empty(nr, dtype=np.uint16)
    tab_a = np.zeros((nq, 32), dtype=np.float32)
    cdef unsigned short[::1] ab = ab_a
    cdef float[:, ::1] tab = tab_a
    _fill_codes(&hq[0, 0] if nq > 0 and nh > 0 else NULL, nq, nh,
                &hbv[0, 0] if nq > 0 else NULL, &rptr[0],
                &ridx[0] if ridx.shape[0] > 0 else NULL, nr, &ab[0] if nr > 0 else NULL,
                &tab[0, 0] if nq > 0 else NULL)
    return ab_a, tab_a


cdef int _fused_chunk(const PlanS* P, const RowsS* QS, const RowsS* RS, const _SelS* S,
                      const float* Xp, intp K, const float* Yp, intp a0, intp a1,
                      intp rt) noexcept nogil:
    """Queries ``a0 .. a1`` (``a0`` a multiple of ``HD_GQB``) of
    :meth:`GemmKnnSelect.search`: per block of ``rt`` reference rows, per panel of
    ``HD_GQB`` queries, the products into a buffer of the cache, then the selection of
    each row as :meth:`GemmKnnSelect.tile` makes it.  1: out of memory."""
    # the block of estimates on a 64-byte boundary (rt is a multiple of HD_GPW, so every
    # row of it is): a vector stored across two cache lines costs two stores, and one
    # read back at once is not forwarded from the store
    cdef void* mem = malloc(HD_GQB * rt * sizeof(float) + 64)
    cdef float* G = <float*> (((<size_t> mem) + 63) & ~(<size_t> 63))
    cdef intp r0, nt, qb, nqb, i, q
    cdef hd_gadd add
    cdef bint adds
    if mem == NULL:
        return 1
    r0 = 0
    while r0 < S.nr:
        nt = min(rt, S.nr - r0)
        qb = a0
        while qb < a1:
            nqb = min(<intp> HD_GQB, a1 - qb)
            # the product adds the terms of the query rows whose reference-missing terms
            # are bounded by the codes (and their own columns): hd_prep's values, made
            # while the sums are in registers
            adds = False
            # the kind of table, once for the block: the product and the selection agree
            # even if the variant is changed meanwhile (which the rules forbid)
            add.bf16 = hd_gemm_bf16() and S.t16 != NULL
            for i in range(HD_GQB):
                add.tab[i], add.t16[i], add.mi[i], add.nm[i] = NULL, NULL, NULL, 0
                q = qb + i
                if i < nqb and _tabled(S, q):
                    adds = True
                    add.tab[i] = S.tab + 32 * q
                    add.t16[i] = S.t16 + 32 * q if add.bf16 else NULL
                    if S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
                        add.nm[i] = S.qptr[q + 1] - S.qptr[q]
                        add.mi[i] = S.qidx + S.qptr[q]
            if adds:
                add.ab = S.ab + r0
                add.gy = <const float*> S.gy + r0 if S.gy != NULL else NULL
                add.gstride, add.nt = S.gstride, nt
            hd_gemm_blk(Xp + (qb // HD_GQB) * K * HD_GQB, nqb, Yp + (r0 // HD_GPW) * K * HD_GPW,
                        (nt + HD_GPW - 1) // HD_GPW, K, G, rt, &add if adds else NULL)
            _select_tile(P, QS, RS, S, <const float*> G, rt, nqb, nt, qb, r0,
                         &add if adds else NULL)
            qb = qb + HD_GQB
        r0 = r0 + rt
    free(mem)
    return 0


cdef class GemmKnnSelect:
    """The heap updates of one filtered k-NN search (``hdist._gemm.knn``), tile by tile.

    Takes the arguments of :func:`gemm_select` that stay fixed during a search, checks
    them once (``ny_max`` and ``gmin`` over all chunks of ``r_chunk`` reference rows, the
    whole of ``qptr``/``qidx`` and ``rptr``/``ridx``), and keeps them; :meth:`tile` then
    checks only the tile's shape and position and runs the rows of the tile without the
    GIL, one after another, exactly as ``gemm_select`` with one thread.  ``dtype`` is the
    precision of the tiles, ``gy`` and ``hc`` (float32 or float64)."""
    cdef CPlan plan
    cdef CRows Q, R
    cdef _SelS s
    cdef int npy_type
    cdef double[:, ::1] HD
    cdef intp[:, ::1] HI
    cdef const double[::1] nx, ny_max
    cdef const float[:, ::1] gy_f
    cdef const double[:, ::1] gy_d
    cdef const float[::1] hc_f
    cdef const double[::1] hc_d
    cdef const intp[::1] qptr, qidx, rptr, ridx
    cdef const double[:, ::1] gmin, hq
    cdef double[:, ::1] hb
    cdef const unsigned short[::1] ab
    cdef const float[:, ::1] tab
    cdef const unsigned short[:, ::1] tab16

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def __init__(self, CPlan plan, CRows Q, CRows R, const double[::1] nx,
                 const double[::1] ny_max, intp r_chunk, double[:, ::1] HD,
                 intp[:, ::1] HI, double eps, dtype, bint exclude_self=False,
                 intp self_offset=0, gy=None, const intp[::1] qptr=None,
                 const intp[::1] qidx=None, const double[:, ::1] gmin=None,
                 const double[:, ::1] hq=None, const intp[::1] rptr=None,
                 const intp[::1] ridx=None, hc=None):
        cdef intp nq = Q.s.n, nr = R.s.n, nch, t, m = 0
        dt = np.dtype(dtype)
        if dt == np.float32:
            self.npy_type = cnp.NPY_FLOAT32
        elif dt == np.float64:
            self.npy_type = cnp.NPY_FLOAT64
        else:
            raise TypeError("dtype must be float32 or float64, got %s" % dt)
        if r_chunk < 1 or r_chunk > GEMM_MAX_CHUNK:
            raise ValueError("r_chunk must be in [1, %d], got %d" % (GEMM_MAX_CHUNK, r_chunk))
        nch = (nr + r_chunk - 1) // r_chunk
        if nx.shape[0] != nq:
            raise ValueError("nx must have one entry per query row")
        if ny_max.shape[0] < nch:
            raise ValueError("ny_max must have one entry per chunk of r_chunk reference rows")
        if HD.shape[0] != nq or HI.shape[0] != nq or HD.shape[1] != HI.shape[1] \
                or HD.shape[1] < 1:
            raise ValueError("HD and HI must both be (queries, k) with k >= 1")
        if not eps >= 0.0:
            raise ValueError("eps must be >= 0")
        self.plan, self.Q, self.R = plan, Q, R
        self.nx, self.ny_max, self.HD, self.HI = nx, ny_max, HD, HI
        self.s.nx = &nx[0] if nq > 0 else NULL
        self.s.ny_max = &ny_max[0] if ny_max.shape[0] > 0 else NULL
        self.s.HD = &HD[0, 0] if nq > 0 else NULL
        self.s.HI = &HI[0, 0] if nq > 0 else NULL
        self.s.k, self.s.nq, self.s.nr, self.s.r_chunk = HD.shape[1], nq, nr, r_chunk
        self.s.eps, self.s.excl, self.s.self_off = eps, exclude_self, self_offset
        self.s.gy, self.s.gstride, self.s.qptr, self.s.qidx = NULL, 0, NULL, NULL
        self.s.gmin, self.s.mstride = NULL, 0
        if (qptr is None) != (qidx is None) or (qptr is None) != (gy is None):
            raise ValueError("gy, qptr and qidx go together")
        if gy is not None:
            if self.npy_type == cnp.NPY_FLOAT32:
                self.gy_f = gy
                m = self.gy_f.shape[0]
                if self.gy_f.shape[1] != nr:
                    raise ValueError("gy must have one column per reference row")
                self.s.gy = &self.gy_f[0, 0] if m > 0 and nr > 0 else NULL
            else:
                self.gy_d = gy
                m = self.gy_d.shape[0]
                if self.gy_d.shape[1] != nr:
                    raise ValueError("gy must have one column per reference row")
                self.s.gy = &self.gy_d[0, 0] if m > 0 and nr > 0 else NULL
            self.s.gstride = nr
            if qptr.shape[0] != nq + 1 or qptr[0] != 0 or qptr[nq] > qidx.shape[0]:
                raise ValueError("qptr must have one entry per query row plus one, from 0 "
                                 "to at most the length of qidx")
            for t in range(nq):
                if qptr[t + 1] < qptr[t]:
                    raise ValueError("qptr must be non-decreasing")
            for t in range(qptr[nq]):
                if qidx[t] < 0 or qidx[t] >= m:
                    raise ValueError("qidx must index the rows of gy")
            self.qptr, self.qidx = qptr, qidx
            self.s.qptr = &qptr[0]
            self.s.qidx = &qidx[0] if qidx.shape[0] > 0 else NULL
            if gmin is not None:
                if gmin.shape[0] != m or gmin.shape[1] < nch:
                    raise ValueError("gmin must have one row per row of gy and one column "
                                     "per chunk of r_chunk reference rows")
                self.gmin = gmin
                self.s.gmin = &gmin[0, 0] if m > 0 and nch > 0 else NULL
                self.s.mstride = gmin.shape[1]
        self.s.has_h, self.s.nh = 0, 0
        self.s.hq, self.s.rptr, self.s.ridx, self.s.hc = NULL, NULL, NULL, NULL
        self.s.hb = NULL
        self.s.ab, self.s.tab, self.s.t16 = NULL, NULL, NULL
        given = [a is None for a in (hq, rptr, ridx, hc)]
        if any(given) and not all(given):
            raise ValueError("hq, rptr, ridx and hc go together")
        if hq is not None:
            if self.npy_type == cnp.NPY_FLOAT32:
                self.hc_f = hc
                t = self.hc_f.shape[0]
            else:
                self.hc_d = hc
                t = self.hc_d.shape[0]
            if t != nr:
                raise ValueError("hc must have one entry per reference row")
            if hq.shape[0] != nq:
                raise ValueError("hq must have one row per query row")
            if rptr.shape[0] != nr + 1:
                raise ValueError("rptr must have one entry per reference row plus one")
            ok = _ref_miss_ok(rptr, ridx, self.hc_f, hq.shape[1], 0, nr) \
                if self.npy_type == cnp.NPY_FLOAT32 \
                else _ref_miss_ok(rptr, ridx, self.hc_d, hq.shape[1], 0, nr)
            if not ok:
                raise ValueError("rptr and ridx must index ridx and the columns of hq, hc "
                                 "count the entries of each row")
            if hq.shape[1] > 0 and ridx.shape[0] > 0 and nq > 0:
                self.hq, self.rptr, self.ridx = hq, rptr, ridx
                self.s.has_h, self.s.nh = 1, hq.shape[1]
                self.s.hq, self.s.rptr, self.s.ridx = &hq[0, 0], &rptr[0], &ridx[0]
                self.s.hc = &self.hc_f[0] if self.npy_type == cnp.NPY_FLOAT32 \
                    else <const void*> &self.hc_d[0]
                # each query's bounds of its terms against missing reference values, once
                self.hb = _all_hq_bounds(hq)
                self.s.hb = &self.hb[0, 0]
                if self.npy_type == cnp.NPY_FLOAT32:
                    # rptr and ridx are checked above
                    self.ab = np.empty(nr, dtype=np.uint16)
                    self.tab = np.zeros((nq, 32), dtype=np.float32)
                    self.s.ab, self.s.tab = &self.ab[0], &self.tab[0, 0]
                    with nogil:
                        _fill_codes(&hq[0, 0], nq, hq.shape[1], &self.hb[0, 0], &rptr[0],
                                    &ridx[0], nr, <unsigned short*> self.s.ab,
                                    <float*> self.s.tab)
                    # the tables in bfloat16, for the product's additions on machines
                    # with AVX512_BF16
                    self.tab16 = _bf16_down(self.tab)
                    self.s.t16 = &self.tab16[0, 0]

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def search(self, const float[:, ::1] X not None, const float[:, :, ::1] Yp not None,
               int n_threads, intp q_chunk=0, intp r_block=0):
        """The whole search in one call (float32 only): the query features ``X [nq, K]``
        times the reference panels ``Yp`` (:func:`gemm_panels`), a block of ``HD_GQB``
        queries against ``r_block`` reference rows (0: about ``GEMM_BLOCK_ROWS``, a
        multiple of ``r_chunk`` and of the panel height) at a time, each block selected as
        :meth:`tile` selects a tile.  Threads take chunks of ``q_chunk`` queries (rounded
        up to whole panels of ``HD_GQB``), each
        chunk reading the reference panels once (0: half a thread's share of the
        queries, between 32 and ``GEMM_MAX_QUERY_CHUNK``: large reference sets do not fit
        in the caches, so the fewer passes over them the better, while each thread still
        gets two chunks); signals are checked between parallel regions."""
        cdef intp nq = self.s.nq, nr = self.s.nr, K = X.shape[1], unit, b0, b1, c, nch
        cdef intp rt, qc
        cdef int failed = 0
        if self.npy_type != cnp.NPY_FLOAT32:
            raise TypeError("search() runs float32 searches only")
        if X.shape[0] != nq or K < 1:
            raise ValueError("X must be [queries, K] with K >= 1")
        if Yp.shape[1] != K or Yp.shape[2] != HD_GPW or Yp.shape[0] * HD_GPW < nr:
            raise ValueError("Yp must be [panels, %d, %d] covering every reference row"
                             % (K, HD_GPW))
        if q_chunk < 0:
            raise ValueError("q_chunk must be >= 0")
        unit = self.s.r_chunk * HD_GPW // math.gcd(self.s.r_chunk, HD_GPW)
        rt = r_block if r_block > 0 else GEMM_BLOCK_ROWS
        if rt % unit != 0:
            rt = max(1, rt // unit) * unit
        n_threads = _threads_for(n_threads, nq * nr)
        qc = q_chunk if q_chunk > 0 else \
            min(GEMM_MAX_QUERY_CHUNK, max(32, (nq + 2 * n_threads - 1) // (2 * n_threads)))
        qc = (qc + HD_GQB - 1) // HD_GQB * HD_GQB      # whole panels of queries
        region = max(qc * n_threads, GEMM_REGION_PAIRS // max(1, nr))
        region = (region + qc - 1) // qc * qc
        if nq == 0 or nr == 0:
            return
        cdef const float[:, :, ::1] Xp = gemm_panels(X, HD_GQB)
        for b0 in range(0, nq, region):
            b1 = min(nq, b0 + region)
            nch = (b1 - b0 + qc - 1) // qc
            with nogil:
                for c in prange(nch, num_threads=n_threads, schedule="dynamic"):
                    failed += _fused_chunk(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                                           &Xp[0, 0, 0], K, &Yp[0, 0, 0], b0 + c * qc,
                                           min(b1, b0 + c * qc + qc), rt)
            if failed:
                raise MemoryError()
            PyErr_CheckSignals()

    def tile(self, cnp.ndarray G not None, intp q0, intp r0):
        """Update the heaps of queries ``q0 .. q0 + G.shape[0]`` with reference rows
        ``r0 .. r0 + G.shape[1]`` (``r0`` a multiple of ``r_chunk``) from the tile of
        estimates ``G`` (rows of unit stride, in the search's precision)."""
        cdef intp nb, nt, ldg, isz
        if cnp.PyArray_NDIM(G) != 2 or cnp.PyArray_TYPE(G) != self.npy_type:
            raise TypeError("G must be a 2-d array of the search's precision")
        isz = cnp.PyArray_ITEMSIZE(G)
        nb = cnp.PyArray_DIM(G, 0)
        nt = cnp.PyArray_DIM(G, 1)
        if nb == 0 or nt == 0:
            return
        ldg = cnp.PyArray_STRIDE(G, 0)
        if (nt > 1 and cnp.PyArray_STRIDE(G, 1) != isz) or ldg % isz != 0 \
                or (nb > 1 and ldg < nt * isz) or not cnp.PyArray_ISALIGNED(G):
            raise ValueError("G must have aligned rows of unit stride")
        if q0 < 0 or q0 + nb > self.s.nq or r0 < 0 or r0 + nt > self.s.nr \
                or r0 % self.s.r_chunk != 0:
            raise ValueError("the tile must lie within the queries and reference rows, "
                             "r0 a multiple of r_chunk")
        ldg = ldg // isz
        with nogil:
            if self.npy_type == cnp.NPY_FLOAT32:
                _select_tile(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                             <const float*> cnp.PyArray_DATA(G), ldg, nb, nt, q0, r0, NULL)
            else:
                _select_tile(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                             <const double*> cnp.PyArray_DATA(G), ldg, nb, nt, q0, r0, NULL)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_radius_select(CPlan plan, CRows Q, CRows R, const real[:, ::1] G,
                       const double[::1] nx, const double[::1] ny_max, intp q0, intp r0,
                       intp r_chunk, double r, double eps, bint exclude_self=False,
                       intp self_offset=0, const real[:, ::1] gy=None,
                       const intp[::1] qptr=None, const intp[::1] qidx=None,
                       const double[:, ::1] gmin=None, const double[:, ::1] hq=None,
                       const intp[::1] rptr=None, const intp[::1] ridx=None,
                       const real[::1] hc=None, const unsigned short[::1] ab=None,
                       const float[:, ::1] tab=None):
    """The pairs of queries ``q0 .. q0 + G.shape[0]`` and reference rows
    ``r0 .. r0 + G.shape[1]`` within true distance ``r`` (inclusive), filtered by the
    estimates as :func:`gemm_select` does against the reduced bound of ``r``.
    ``ab``/``tab`` (float32 tiles only; with ``hq``): the codes of :func:`miss_codes` for
    all reference and query rows, which bound the terms of a reference row's missing
    attributes more tightly than ``hc``.

    Returns ``(query, index, distance)`` arrays of the hits, in query order (unsorted
    within a query); the distances are bit-identical to :func:`radius`'s."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nb = G.shape[0], nt = G.shape[1], ii, q, nm, cnt = 0, before, h
    cdef intp gstride = gy.shape[1] if gy is not None else 0
    cdef const real* gyp = &gy[0, 0] if gy is not None and gy.shape[0] > 0 else NULL
    cdef const intp* mi
    cdef int excl = exclude_self
    cdef Hit* buf = NULL
    cdef intp cap = 0
    cdef intp* owner = NULL
    cdef intp* tmpo
    cdef intp ocap = 0
    cdef intp[::1] qv, jv
    cdef double[::1] dv
    cdef const double* gm = &gmin[0, 0] if gmin is not None and gmin.shape[0] > 0 else NULL
    cdef intp mstride = gmin.shape[1] if gmin is not None else 0
    cdef int has_h
    cdef _Codes cd
    cdef const _Codes* cdp = NULL
    _check_select(G, r_chunk, gy, qptr, qidx, Q.s.n, R.s.n, nx, ny_max, q0, r0, gmin)
    _check_ref_miss(hq, rptr, ridx, hc, Q.s.n, R.s.n, r0, nt)
    has_h = hq is not None and hq.shape[1] > 0 and ridx.shape[0] > 0
    if has_h and not _ref_miss_ok(rptr, ridx, hc, hq.shape[1], r0, nt):
        raise ValueError("rptr and ridx must index ridx and the columns of hq, hc count "
                         "the entries of each row")
    if (ab is None) != (tab is None) or (ab is not None and hq is None):
        raise ValueError("ab and tab go together, with hq")
    if ab is not None:
        if ab.shape[0] != R.s.n or tab.shape[0] != Q.s.n or tab.shape[1] != 32:
            raise ValueError("ab must have one entry per reference row, tab 32 per query")
        for h in range(r0, r0 + nt):
            if (ab[h] & 255) >= 32 or (ab[h] >> 8) >= 32:
                raise ValueError("the codes in ab must be below 32")
        if real is float and has_h and nt > 0 and nb > 0:
            cd.ab = &ab[0]
            cd.t16 = NULL
            cdp = &cd
    try:
        with nogil:
            for ii in range(nb):
                q = q0 + ii
                mi = _miss_of(qptr, qidx, q, &nm)
                before = cnt
                if nm == 0 and not has_h:
                    cnt = _filter_row(P, QS, RS, q, &G[ii, 0], nt, r0, r_chunk,
                                      &ny_max[0], eps * nx[q], gyp, gstride, mi, nm, gm,
                                      mstride, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL,
                                      NULL, 0, r, &buf, &cap, cnt, excl, self_offset,
                                      0, <_Complete*> NULL)
                else:
                    if real is float:
                        if cdp != NULL:
                            cd.tab = &tab[q, 0]
                    cnt = _filter_row(P, QS, RS, q, &G[ii, 0], nt, r0, r_chunk,
                                      &ny_max[0], eps * nx[q], gyp, gstride, mi, nm, gm,
                                      mstride, &hq[q, 0] if has_h else NULL,
                                      hq.shape[1] if has_h else 0,
                                      &rptr[0] if has_h else NULL,
                                      &ridx[0] if has_h else NULL,
                                      &hc[0] if has_h else NULL, NULL, cdp, NULL, NULL,
                                      0, r, &buf, &cap, cnt, excl, self_offset, 0,
                                      <_Missing*> NULL)
                if cnt < 0:
                    break
                if cnt > ocap:
                    ocap = cap
                    tmpo = <intp*> realloc(owner, ocap * sizeof(intp))
                    if tmpo == NULL:
                        cnt = -1
                        break
                    owner = tmpo
                for h in range(before, cnt):
                    owner[h] = q
        if cnt < 0:
            raise MemoryError("radius search ran out of memory")
        qs = np.empty(cnt, dtype=np.intp)
        js = np.empty(cnt, dtype=np.intp)
        ds = np.empty(cnt)
        qv, jv, dv = qs, js, ds
        for h in range(cnt):
            qv[h] = owner[h]
            jv[h] = buf[h].j
            dv[h] = buf[h].d
        return qs, js, ds
    finally:
        free(buf)
        free(owner)


cdef void _sort_hits(Hit* a, Hit* tmp, intp n) noexcept nogil:
    """Sort ``a[0:n]`` by (distance, index): insertion sort on runs of 16, then bottom-up
    merges through ``tmp`` (n entries), comparisons inlined (``qsort``'s indirect calls
    cost most of the time on the short lists of a radius search)."""
    cdef intp lo, hi, i, j, w, m, e, x, y, k
    cdef Hit h
    cdef Hit* src = a
    cdef Hit* dst = tmp
    cdef Hit* sw
    for lo in range(0, n, 16):
        hi = lo + 16 if lo + 16 < n else n
        for i in range(lo + 1, hi):
            h = a[i]
            j = i - 1
            while j >= lo and _before(h.d, h.j, a[j].d, a[j].j):
                a[j + 1] = a[j]
                j = j - 1
            a[j + 1] = h
    w = 16
    while w < n:
        lo = 0
        while lo < n:
            m = lo + w if lo + w < n else n
            e = lo + 2 * w if lo + 2 * w < n else n
            x = lo
            y = m
            k = lo
            while x < m and y < e:
                if _before(src[y].d, src[y].j, src[x].d, src[x].j):
                    dst[k] = src[y]
                    y = y + 1
                else:
                    dst[k] = src[x]
                    x = x + 1
                k = k + 1
            while x < m:
                dst[k] = src[x]
                x = x + 1
                k = k + 1
            while y < e:
                dst[k] = src[y]
                y = y + 1
                k = k + 1
            lo = e
        sw = src
        src = dst
        dst = sw
        w = 2 * w
    if src != a:
        for i in range(n):
            a[i] = src[i]


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_radius_lists(const intp[::1] qs, const intp[::1] js, const double[::1] ds,
                      intp nq):
    """The hits ``(query, index, distance)`` of :func:`gemm_radius_select`, in any order,
    as :func:`radius` returns them: two lists of ``nq`` arrays (distances, indices), each
    query's sorted by (distance, index)."""
    cdef intp n = qs.shape[0], h, q
    cdef Hit* buf
    if js.shape[0] != n or ds.shape[0] != n:
        raise ValueError("qs, js and ds must have the same length")
    starts = np.zeros(nq + 1, dtype=np.intp)
    pos = np.empty(nq + 1, dtype=np.intp)
    D = np.empty(n)
    I = np.empty(n, dtype=np.intp)
    cdef intp[::1] st = starts, ps = pos, Iv = I
    cdef double[::1] Dv = D
    for h in range(n):
        q = qs[h]
        if q < 0 or q >= nq:
            raise ValueError("query %d of a hit is not in [0, %d)" % (q, nq))
        st[q + 1] += 1
    for q in range(nq):
        st[q + 1] += st[q]
    ps[:] = st
    buf = <Hit*> malloc(2 * max(1, n) * sizeof(Hit))
    if buf == NULL:
        raise MemoryError("radius search ran out of memory")
    try:
        with nogil:
            for h in range(n):
                q = qs[h]
                buf[ps[q]].d = ds[h]
                buf[ps[q]].j = js[h]
                ps[q] += 1
            for q in range(nq):
                _sort_hits(&buf[st[q]], &buf[n + st[q]], st[q + 1] - st[q])
            for h in range(n):
                Dv[h] = buf[h].d
                Iv[h] = buf[h].j
    finally:
        free(buf)
    return ([D[st[q]:st[q + 1]] for q in range(nq)],
            [I[st[q]:st[q + 1]] for q in range(nq)])


cdef void _pairwise_row(const hd_tplan* T, const PlanS* P, const RowsS* X, intp i,
                        const RowsS* YS, const hd_tr* whole, double* mem, intp jstart,
                        intp ny, double* out, int red) noexcept nogil:
    """Row i of a pairwise matrix from column jstart on."""
    cdef double buf[HD_TB]
    cdef hd_tq qr
    cdef hd_tr Y
    cdef intp t0, t1, j, j0
    cdef double s
    _tq_row(P, X, i, &qr)
    t0 = jstart
    while t0 < ny:
        t1 = t0 + HD_TB
        if t1 > ny:
            t1 = ny
        Y = _tile_of(P, YS, whole, t0, t1 - t0, mem, &j0)
        hd_tile(T, &qr, &Y, j0, t1 - t0, INFINITY, buf)
        for j in range(t0, t1):
            s = buf[j - t0]
            if not red:
                s = true_of(P, X, i, YS, j, s)
            out[i * ny + j] = s
        t0 = t1


cdef enum:
    MIRROR = 64   # columns per tile of a symmetric matrix's mirror copy


cdef void _mirror_tile(double* out, intp ny, intp b0, intp b1, intp j0) noexcept nogil:
    """``out[j, i] = out[i, j]`` for the rows ``b0 <= i < b1`` and the columns
    ``j0 <= j < j0 + MIRROR`` right of the diagonal (``j > i``), 16 rows at a time so the
    lines read stay in the first-level cache while the written rows are contiguous."""
    cdef intp i0, i1, i, j, j1 = min(j0 + MIRROR, ny)
    for i0 in range(b0, b1, 16):
        i1 = min(i0 + 16, b1)
        for j in range(j0, j1):
            for i in range(i0, min(i1, j)):
                out[j * ny + i] = out[i * ny + j]


def pairwise(CPlan plan, CRows X, CRows Y, double[:, ::1] out, int n_threads,
             bint symmetric=False, bint reduced=False):
    """Fill ``out[i, j]`` with the distance of X row i and Y row j.

    With ``symmetric`` (X is Y), each pair is computed once, right of the diagonal, and
    copied to the left by cache-sized tiles after each block of rows.
    ``reduced`` keeps the reduced distance (no root, no mean)."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* XS = &X.s
    cdef const RowsS* YS = &Y.s
    cdef intp nx = X.s.n, ny = Y.s.n, i, j, b0, b1, block
    cdef int red = reduced
    cdef int sym = symmetric
    if out.shape[0] != nx or out.shape[1] != ny:
        raise ValueError("out has shape (%d, %d), expected (%d, %d)"
                         % (out.shape[0], out.shape[1], nx, ny))
    n_threads = _threads_for(n_threads, nx * ny)
    block = _region_rows(n_threads, ny)
    cdef hd_tplan TP = _tplan(plan)
    cdef hd_tr TY = _tref(Y)
    cdef double* o = &out[0, 0] if nx and ny else NULL
    cdef double* mem
    cdef intp mstride
    keep_mem = _tile_buffers(plan, Y, n_threads, &TY, &mem, &mstride)
    for b0 in range(0, nx, block):
        b1 = min(nx, b0 + block)
        with nogil:
            for i in prange(b0, b1, num_threads=n_threads, schedule="dynamic"):
                _pairwise_row(&TP, P, XS, i, YS, &TY, _mem_of(mem, mstride), i if sym else 0,
                              ny, o, red)
            if sym:   # the block's rows, right of the diagonal, copied into its columns
                for j in prange((ny - b0 + MIRROR - 1) // MIRROR, num_threads=n_threads,
                                schedule="static"):
                    _mirror_tile(o, ny, b0, b1, b0 + j * MIRROR)
        PyErr_CheckSignals()
    return np.asarray(out)


cdef int _cmp_hit(const void* a, const void* b) noexcept nogil:
    cdef const Hit* x = <const Hit*> a
    cdef const Hit* y = <const Hit*> b
    if _before(x.d, x.j, y.d, y.j):
        return -1
    if _before(y.d, y.j, x.d, x.j):
        return 1
    return 0


def reduced_radius(CPlan plan, double r):
    """A reduced-distance bound that every pair within true distance ``r`` stays under:
    ``r^p`` (times the total weight for the mean), enlarged by a relative 1e-6, far above
    the rounding of the sum, the mean and the root (``r`` itself for p = inf)."""
    cdef const PlanS* P = &plan.s
    cdef double red
    if r == INFINITY:
        return INFINITY
    if P.pmode == 0:
        return r * (1.0 + 1e-6) + 1e-300
    red = pow(r, P.p)
    if P.mean:
        red = red * P.w_all
    red = red * (1.0 + 1e-6 + 8.0 * P.p * 2.0 ** -52) + 1e-300
    if P.pmode >= 2 and red < SAFE_RANGE[0]:
        red = SAFE_RANGE[0]     # smaller sums are recomputed exactly (true_of)
    if P.pmode == 3 and P.p < 1.0 and r < 1e-290:
        # true distances underflow to 0 below (5e-324)^p (reduced_bound)
        red = fmax(red, 2.0 * pow(5e-324, P.p) * (P.w_all if P.mean else 1.0))
    return red


cdef intp _radius_row(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q,
                      const RowsS* RS, const hd_tr* whole, double* mem, intp nr, double r,
                      double rred, int excl, intp self_off, Hit** out) noexcept nogil:
    """Reference rows within true distance r of query q, sorted, into a new buffer
    ``*out`` (freed by the caller).  Returns their count, or -1 when out of memory.
    ``rred`` (``reduced_radius``): a tile whose rows all pass it is abandoned, and a row
    past it is not finalized (its true distance exceeds r)."""
    cdef double tb[HD_TB]
    cdef hd_tq qr
    cdef hd_tr R
    cdef intp t0, t1, j, j0, cap = 16, cnt = 0
    cdef double d
    cdef Hit* tmp
    cdef Hit* buf = <Hit*> malloc(cap * sizeof(Hit))
    out[0] = NULL
    if buf == NULL:
        return -1
    _tq_row(P, Q, q, &qr)
    t0 = 0
    while t0 < nr:
        t1 = t0 + HD_TB
        if t1 > nr:
            t1 = nr
        R = _tile_of(P, RS, whole, t0, t1 - t0, mem, &j0)
        if hd_tile(T, &qr, &R, j0, t1 - t0, rred, tb):
            t0 = t1
            continue
        for j in range(t0, t1):
            if tb[j - t0] > rred or (excl and j == q + self_off):
                continue
            d = true_of(P, Q, q, RS, j, tb[j - t0])
            if d <= r:
                if cnt == cap:
                    cap = cap * 2
                    tmp = <Hit*> realloc(buf, cap * sizeof(Hit))
                    if tmp == NULL:
                        free(buf)
                        return -1
                    buf = tmp
                buf[cnt].d = d
                buf[cnt].j = j
                cnt = cnt + 1
        t0 = t1
    if cnt > 0:
        qsort(buf, cnt, sizeof(Hit), _cmp_hit)
    out[0] = buf
    return cnt


def radius(CPlan plan, CRows Q, CRows R, double r, int n_threads, bint exclude_self=False,
           intp self_offset=0, intp block=0):
    """All reference rows within true distance ``r`` (inclusive) of each query row,
    sorted by (distance, index).  Returns two lists of arrays."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nq = Q.s.n, nr = R.s.n, q, b0, b1, cnt, h
    cdef int excl = exclude_self
    cdef double rred = reduced_radius(plan, r)
    cdef Hit** bufs
    cdef intp* counts
    out_d = []
    out_i = []
    n_threads = _threads_for(n_threads, nq * nr)
    if block <= 0:
        block = min(max(1, nq), _region_rows(n_threads, nr))
    cdef hd_tplan TP = _tplan(plan)
    cdef hd_tr TR = _tref(R)
    cdef double* mem
    cdef intp mstride
    keep_mem = _tile_buffers(plan, R, n_threads, &TR, &mem, &mstride)
    bufs = <Hit**> malloc(max(1, block) * sizeof(Hit*))
    counts = <intp*> malloc(max(1, block) * sizeof(intp))
    if bufs == NULL or counts == NULL:
        free(bufs)
        free(counts)
        raise MemoryError()
    for q in range(block):
        bufs[q] = NULL
    try:
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            for q in range(b1 - b0):
                bufs[q] = NULL
                counts[q] = 0
            with nogil:
                for q in prange(b0, b1, num_threads=n_threads, schedule="dynamic"):
                    counts[q - b0] = _radius_row(&TP, P, QS, q, RS, &TR, _mem_of(mem, mstride),
                                                 nr, r, rred, excl, self_offset,
                                                 &bufs[q - b0])
            for q in range(b1 - b0):
                if counts[q] < 0:
                    raise MemoryError("radius search ran out of memory")
            for q in range(b1 - b0):
                cnt = counts[q]
                dq = np.empty(cnt)
                iq = np.empty(cnt, dtype=np.intp)
                for h in range(cnt):
                    dq[h] = bufs[q][h].d
                    iq[h] = bufs[q][h].j
                free(bufs[q])
                bufs[q] = NULL
                out_d.append(dq)
                out_i.append(iq)
            PyErr_CheckSignals()
    finally:
        for q in range(block):
            free(bufs[q])
        free(bufs)
        free(counts)
    return out_d, out_i


def pair_terms(CPlan plan, CRows A, intp i, CRows B, intp j):
    """Per-block term values of one pair, for ``explain``.

    Returns ``(terms_c, terms_o, terms_t, terms_e, skipped_c, skipped_o, skipped_t,
    skipped_e, reduced)``: the weighted, raised term of every attribute of each block
    (0 where skipped), boolean masks of the components skipped by the "ignore" policy,
    and the pair's reduced distance as the kernels compute it."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* AS = &A.s
    cdef const RowsS* BS = &B.s
    cdef intp a, cx, cy, V
    cdef double x, y
    tc = np.zeros(P.mc)
    to = np.zeros(P.mo)
    tt = np.zeros(P.mt)
    te = np.zeros(P.me)
    sc = np.zeros(P.mc, dtype=bool)
    so = np.zeros(P.mo, dtype=bool)
    st = np.zeros(P.mt, dtype=bool)
    se = np.zeros(P.me, dtype=bool)
    for a in range(P.mc):
        x = AS.c[i * P.mc + a]
        y = BS.c[j * P.mc + a]
        if not isnan(x) and not isnan(y):
            tc[a] = P.c_w[a] * pw(fabs(x - y) * P.c_inv[a], P.pmode, P.p)
        elif P.c_ign[a]:
            sc[a] = True
        elif not isnan(x):
            tc[a] = AS.cpen[i * P.mc + a]
        elif not isnan(y):
            tc[a] = BS.cpen[j * P.mc + a]
        else:
            tc[a] = P.c_both[a]
    for a in range(P.mo):
        cx = AS.o[i * P.mo + a]
        cy = BS.o[j * P.mo + a]
        if cx >= 0 and cy >= 0:
            to[a] = P.o_w[a] if cx != cy else 0.0
        elif P.o_ign[a]:
            so[a] = True
        else:
            to[a] = P.o_miss[a]
    for a in range(P.mt):
        cx = AS.t[i * P.mt + a]
        cy = BS.t[j * P.mt + a]
        if cx >= 0 and cy >= 0:
            if cx != cy:
                V = P.t_V[a]
                cx = min(cx, V)
                cy = min(cy, V)
                tt[a] = P.t_tab[P.t_off[a] + cx * (V + 1) + cy]
        elif P.t_ign[a]:
            st[a] = True
        else:
            tt[a] = P.t_miss[a]
    for a in range(P.me):
        x = AS.e[i * AS.D + P.e_off[a]]
        y = BS.e[j * BS.D + P.e_off[a]]
        if not isnan(x) and not isnan(y):
            te[a] = P.e_rw[a] * embed_term(AS.e + i * AS.D + P.e_off[a],
                                           BS.e + j * BS.D + P.e_off[a],
                                           P.e_off[a + 1] - P.e_off[a], P.e_q[a], P.pmode,
                                           P.p)
        elif P.e_ign[a]:
            se[a] = True
        else:
            te[a] = P.e_miss[a]
    red = pair_reduced(P, AS, i, BS, j, P.pmode, INFINITY)
    return tc, to, tt, te, sc, so, st, se, red


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def finalize_array(CPlan plan, double[::1] s):
    """Apply :c:func:`finalize` to an array of reduced distances in place."""
    cdef intp i
    for i in range(s.shape[0]):
        s[i] = finalize(&plan.s, s[i])
    return np.asarray(s)


# -- k-medoids: FasterPAM's swap phase over distance rows ------------------------------------
# Schubert & Rousseeuw (2021), "Fast and eager k-medoids clustering", Algorithm 2 (FasterPAM):
# every row o keeps its nearest medoid slot near[o] at distance dn[o] and the second nearest
# seco[o] at ds[o]; removal[i] = sum over the rows of slot i of w (ds - dn) is the loss added
# when medoid i goes.  The change of the loss when row j replaces medoid i is then
#   removal[i] + delta_j[i] + acc_j,
# with acc_j and delta_j one pass over the distance row d(j, .).  A swap that lowers the loss
# is made at once (eager).  Every sum runs over o in index order on one thread, so a result
# depends only on the data, the initial medoids and the order of the candidates.

cdef void _pam_removal(intp n, intp k, const intp* near, const double* dn, const double* ds,
                       const double* w, double* removal) noexcept nogil:
    cdef intp o
    for o in range(k):
        removal[o] = 0.0
    if k == 1:
        return
    for o in range(n):
        if w == NULL:
            removal[near[o]] += ds[o] - dn[o]
        else:
            removal[near[o]] += w[o] * (ds[o] - dn[o])


cdef double _pam_change(const double* row, intp n, intp k, const intp* near,
                        const double* dn, const double* ds, const double* w,
                        const double* removal, double* delta, intp* slot) noexcept nogil:
    """The least change of the loss when the row with distances ``row`` becomes a medoid in
    place of medoid ``slot[0]`` (smallest slot among equal changes)."""
    cdef intp o, i, b = 0
    cdef double acc = 0.0, d, best
    if k == 1:   # every row moves to the new medoid
        for o in range(n):
            if w == NULL:
                acc += row[o] - dn[o]
            else:
                acc += w[o] * (row[o] - dn[o])
        slot[0] = 0
        return acc
    for i in range(k):
        delta[i] = 0.0
    if w == NULL:
        for o in range(n):
            d = row[o]
            if d < ds[o]:
                if d < dn[o]:      # the new medoid becomes the nearest
                    acc += d - dn[o]
                    delta[near[o]] += dn[o] - ds[o]
                else:              # ... or the second nearest, if near[o] goes
                    delta[near[o]] += d - ds[o]
    else:
        for o in range(n):
            d = row[o]
            if d < ds[o]:
                if d < dn[o]:
                    acc += w[o] * (d - dn[o])
                    delta[near[o]] += w[o] * (dn[o] - ds[o])
                else:
                    delta[near[o]] += w[o] * (d - ds[o])
    # delta is summed from zero, then removal added: a candidate that duplicates medoid i
    # gets exactly 0 for slot i (the same terms, negated, in the same order)
    best = delta[0] + removal[0]
    for i in range(1, k):
        d = delta[i] + removal[i]
        if d < best:
            best = d
            b = i
    slot[0] = b
    return best + acc


cdef inline void _pam_second(intp k, intp n, const double* Dm, intp o, intp nb, intp b,
                             double d, intp* seco, double* ds) noexcept nogil:
    """Second nearest medoid of row o, whose nearest is slot nb: slot b at distance d, or a
    nearer one of the others (strictly nearer: ties keep b, then the smaller slot)."""
    cdef intp i
    cdef intp s = b
    cdef double sd = d, x
    for i in range(k):
        if i == nb or i == b:
            continue
        x = Dm[i * n + o]
        if x < sd:
            sd = x
            s = i
    seco[o] = s
    ds[o] = sd


cdef double _pam_swap(const double* row, intp n, intp k, intp b, intp j, double* Dm,
                      intp* med, intp* near, intp* seco, double* dn, double* ds,
                      const double* w) noexcept nogil:
    """Row j becomes medoid slot b; the nearest / second nearest of every row are updated.
    Returns the new loss."""
    cdef intp o
    cdef double d, loss = 0.0
    med[b] = j
    for o in range(n):
        Dm[b * n + o] = row[o]
    for o in range(n):
        d = row[o]
        if o == j:
            if near[o] != b:
                seco[o] = near[o]
                ds[o] = dn[o]
            near[o] = b
            dn[o] = 0.0
        elif near[o] == b:           # its nearest medoid is replaced
            if d < ds[o]:
                dn[o] = d
            else:
                near[o] = seco[o]
                dn[o] = ds[o]
                _pam_second(k, n, Dm, o, near[o], b, d, seco, ds)
        elif d < dn[o]:
            seco[o] = near[o]
            ds[o] = dn[o]
            near[o] = b
            dn[o] = d
        elif d < ds[o]:
            seco[o] = b
            ds[o] = d
        elif seco[o] == b:           # its second nearest is replaced by a farther row
            _pam_second(k, n, Dm, o, near[o], b, d, seco, ds)
        if w == NULL:
            loss += dn[o]
        else:
            loss += w[o] * dn[o]
    return loss


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def pam_assign(const double[:, ::1] Dm, const intp[::1] med, intp[::1] near, intp[::1] seco,
               double[::1] dn, double[::1] ds, const double[::1] w):
    """Nearest and second nearest medoid slot of every row (ties: the smaller slot; a medoid
    is its own nearest, at distance 0, whatever ``Dm`` holds for it: a row with missing
    values is at a positive distance from itself).  ``Dm[i, o]``: distance of medoid i to
    row o; ``w`` empty for unit weights.  Returns the loss ``sum w dn``."""
    cdef intp k = Dm.shape[0], n = Dm.shape[1], o, i
    cdef double d, loss = 0.0
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    if med.shape[0] != k or near.shape[0] != n or seco.shape[0] != n or dn.shape[0] != n \
            or ds.shape[0] != n or (wp != NULL and w.shape[0] != n) or k < 1:
        raise ValueError("pam_assign: inconsistent shapes")
    with nogil:
        for o in range(n):
            near[o] = 0
            dn[o] = 0.0 if o == med[0] else Dm[0, o]
            seco[o] = -1
            ds[o] = INFINITY
            for i in range(1, k):
                d = Dm[i, o]
                if d < dn[o] or o == med[i]:
                    seco[o] = near[o]
                    ds[o] = dn[o]
                    near[o] = i
                    dn[o] = d
                elif seco[o] < 0 or d < ds[o]:
                    seco[o] = i
                    ds[o] = d
            if o == med[near[o]]:
                dn[o] = 0.0
            if wp == NULL:
                loss += dn[o]
            else:
                loss += wp[o] * dn[o]
    return loss


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def pam_swaps(const double[:, ::1] D, const intp[::1] rows, const intp[::1] cand,
              double[:, ::1] Dm, intp[::1] med, intp[::1] near, intp[::1] seco,
              double[::1] dn, double[::1] ds, const double[::1] w, intp[::1] state,
              double[::1] loss, intp n_visit, int n_threads):
    """FasterPAM's eager swaps over the candidate rows ``cand`` in order.

    ``D[rows[t]]`` holds the distances of candidate ``cand[t]`` to every row, 0 at its own
    position (a medoid is at distance 0 from itself, as in :func:`pam_assign`); ``Dm`` the
    medoids' rows, ``med`` their row indices, ``near/seco/dn/ds`` the assignment of
    :func:`pam_assign`, ``w`` the row weights (empty: all 1), ``loss`` ``[1]`` the current
    loss.  ``state = [visited since the last swap, swaps]``.  Stops early once ``n_visit``
    candidates in a row brought no swap (a local optimum) or when a swap fails to lower the
    recomputed loss (rounding); returns how many candidates of ``cand`` were used.

    With ``n_threads > 1`` the changes of the next few candidates are computed in parallel
    against the current medoids and taken in order; after a swap the rest of the batch is
    computed again, so the swaps made are those of one thread, whatever ``n_threads``."""
    cdef intp k = Dm.shape[0], n = Dm.shape[1], T = cand.shape[0]
    cdef intp since = state[0], nswap = state[1]
    cdef intp pos = 0, t, nb, j, used, bmax, bcur
    cdef double cur = loss[0], new
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    cdef bint stop = False
    if med.shape[0] != k or near.shape[0] != n or seco.shape[0] != n or dn.shape[0] != n \
            or ds.shape[0] != n or (wp != NULL and w.shape[0] != n) or rows.shape[0] != T \
            or D.shape[1] != n or loss.shape[0] != 1 or state.shape[0] != 2:
        raise ValueError("pam_swaps: inconsistent shapes")
    if T and (np.min(rows) < 0 or np.max(rows) >= D.shape[0] or np.min(cand) < 0
              or np.max(cand) >= n):
        raise ValueError("pam_swaps: row index out of range")
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1, got %d" % n_threads)
    bmax = 1 if n_threads == 1 else 32 * n_threads
    cdef double* removal = <double*>malloc(k * sizeof(double))
    cdef double* delta = <double*>malloc(bmax * k * sizeof(double))
    cdef double* chg = <double*>malloc(bmax * sizeof(double))
    cdef intp* slot = <intp*>malloc(bmax * sizeof(intp))
    cdef unsigned char* skip = <unsigned char*>malloc(bmax)
    if removal == NULL or delta == NULL or chg == NULL or slot == NULL or skip == NULL:
        free(removal); free(delta); free(chg); free(slot); free(skip)
        raise MemoryError()
    bcur = n_threads
    try:
        with nogil:
            _pam_removal(n, k, &near[0], &dn[0], &ds[0], wp, removal)
            while pos < T and since < n_visit and not stop:
                nb = min(bcur, T - pos, n_visit - since)
                for t in range(nb):   # a medoid is its own nearest: not a candidate
                    j = cand[pos + t]
                    skip[t] = med[near[j]] == j
                if nb == 1 or n_threads == 1:
                    for t in range(nb):
                        if not skip[t]:
                            chg[t] = _pam_change(&D[rows[pos + t], 0], n, k, &near[0], &dn[0],
                                                 &ds[0], wp, removal, delta, &slot[t])
                else:
                    for t in prange(nb, num_threads=n_threads, schedule="static", chunksize=1):
                        if not skip[t]:
                            chg[t] = _pam_change(&D[rows[pos + t], 0], n, k, &near[0], &dn[0],
                                                 &ds[0], wp, removal, delta + t * k, &slot[t])
                used = nb
                for t in range(nb):
                    since = since + 1
                    if skip[t] or not chg[t] < 0.0:
                        continue
                    j = cand[pos + t]
                    new = _pam_swap(&D[rows[pos + t], 0], n, k, slot[t], j, &Dm[0, 0], &med[0],
                                    &near[0], &seco[0], &dn[0], &ds[0], wp)
                    nswap = nswap + 1
                    since = 1
                    used = t + 1
                    if not new < cur:
                        stop = True
                    cur = new
                    _pam_removal(n, k, &near[0], &dn[0], &ds[0], wp, removal)
                    break
                if used == nb and bcur < bmax:
                    bcur = min(bmax, 2 * bcur)
                elif used < nb:
                    bcur = n_threads
                pos = pos + used
    finally:
        free(removal); free(delta); free(chg); free(slot); free(skip)
    state[0] = n_visit if stop else since
    state[1] = nswap
    loss[0] = cur
    return pos


#: most reference rows one tile_block call takes
TILE_ROWS = HD_TB


def tile_view(CPlan plan):
    """The tile kernel's view of ``plan`` for ``tile_block`` (``_kernels.pxd``): a buffer
    that points into ``plan``, which the caller keeps alive."""
    cdef hd_tplan TP = _tplan(plan)
    buf = np.zeros(sizeof(hd_tplan), dtype=np.uint8)
    (<hd_tplan*> cnp.PyArray_DATA(buf))[0] = TP
    return buf


cdef int tile_block(const void* view, const PlanS* P, const RowsS* Q, intp q,
                    const AttrRows* R, intp j0, intp nb, double bound,
                    double* s) noexcept nogil:
    """Reduced distances ``s[0 .. nb)`` of query row q to rows ``j0 .. j0 + nb`` of the
    attribute-major rows R (``nb <= TILE_ROWS``), bit-identical to ``pair_reduced``;
    returns 1 when every row exceeds ``bound`` (``s`` is then meaningless), as
    ``hd_tile``.  ``view`` comes from ``tile_view(plan)``."""
    cdef hd_tq qr
    cdef hd_tr Rt
    Rt.ld = R.ld
    Rt.c = R.c
    Rt.cpen = R.cpen
    Rt.o = R.o
    Rt.t = R.t
    Rt.e = R.e
    _tq_row(P, Q, q, &qr)
    return hd_tile(<const hd_tplan*> view, &qr, &Rt, j0, nb, bound, s)
