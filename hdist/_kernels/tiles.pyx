# cython: language_level=3
"""The tile kernel and what runs on it: pairwise matrices, streaming top-k and radius
search over blocks of reference rows, and the instruction-set variant in use.

Every function here sees only arrays (``CPlan`` and ``CRows``); it knows nothing of
schemas, metrics or estimators.  The work is split in blocks of query rows; the GIL is
released for each block and signals (Ctrl-C) are checked between blocks.  Results never
depend on the number of threads or on the block and tile sizes: candidates are ordered
by ``(reduced distance, training index)`` and a pair's distance is always computed by
the same operations as the inline ``pair_reduced`` (``plan.pxd``).
"""
import math

import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, calloc, free, realloc, qsort
from libc.math cimport INFINITY, isnan, fabs, fma, fmax, sqrt, pow
from libc.stdint cimport uint64_t
from libc.string cimport memcpy, memset

from hdist._kernels.plan cimport *
from hdist._kernels.plan import (_c, _knn_chunk, _radius_chunk_rows, _region_rows,
                                 _threads_for, SAFE_RANGE, tie_lists)
from hdist._kernels.ctile cimport *
from hdist._kernels.tiles cimport AttrRows

cnp.import_array()

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


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


def isa_index():
    """Index of the variant in use among all variants ("baseline", "avx2", "avx512")."""
    return hd_isa


def _init_isa():
    import os
    import warnings
    want = os.environ.get("HDIST_ISA", "best").strip().lower() or "best"
    try:
        set_isa(want)
    except ValueError as exc:
        warnings.warn("HDIST_ISA ignored: %s" % exc, RuntimeWarning)
        set_isa("best")


_init_isa()


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


cdef Py_ssize_t _ref_bytes(CRows R) except -1:
    """Bytes of R's rows that the tile kernel reads (its attribute-major copy's)."""
    keep = R._keep
    return sum(keep[k].nbytes for k in ("c", "cpen", "o", "t", "e"))


cdef intp _rows_per_chunk(intp chunk, intp n, intp n_other, int n_threads, CRows R,
                          bint share) except -1:
    """Rows per chunk, each chunk one pass over R's ``n_other`` rows: ``chunk`` when
    positive (all ``n`` rows at most, so that the count of chunks cannot overflow), else
    the rule for R's size: :func:`_knn_chunk`, or with ``share`` :func:`_radius_chunk_rows`
    (smaller chunks where a thread would get fewer than 8)."""
    if chunk > 0:
        return min(chunk, max(1, n))
    if share:
        return _radius_chunk_rows(n, n_other, n_threads, _ref_bytes(R))
    return _knn_chunk(n, n_other, n_threads, _ref_bytes(R))


cdef hd_tr _tref(CRows R) except *:
    """Attribute-major copy of R's rows (made once per CRows, kept with it); ``ld = 0``
    when the copy would exceed ``ATTR_MAJOR_BYTES``."""
    cdef hd_tr T
    keep = R._keep
    am = keep.get("_attr_major")
    if am is None and _ref_bytes(R) > ATTR_MAJOR_BYTES:
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
                    intp self_off, TieList* ties) noexcept nogil:
    """Update the heaps of queries [q0, q1) with reference rows [r0, r1), tile by tile
    (each tile's reduced distances computed by the tile kernel, ``hd_tile``); ``ties``
    (NULL: none) the tie lists of queries q0 .. q1, which keep the rows at the k-th
    distance that do not fit (``heap_offer``)."""
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
                if heap_offer(hd + qk, hi + qk, k, s, j,
                              ties + (q - q0) if ties != NULL else NULL, RS.n):
                    bound = reduced_bound(P, hd[qk])
        t0 = t1


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def knn(CPlan plan, CRows Q, CRows R, intp k, int n_threads, intp tile=256,
        intp block=0, bint exclude_self=False, intp self_offset=0, strategy=None,
        ties=False, intp chunk=0):
    """Exact k nearest reference rows for every query row.

    Returns ``(dist, ind)``, both ``[n_q, k]``, sorted by (distance, index); ``dist`` holds
    true distances.  ``exclude_self`` skips reference ``q + self_offset`` for query ``q``.
    ``strategy`` is "queries" (parallel over query rows) or "references" (parallel over
    reference rows, one heap set per thread, merged at the end); None chooses.
    ``ties``: the lists also hold, after the k-th, every other row at the k-th distance
    (:meth:`TieLists.widen`: width k plus the most ties of a row, padded with ``inf``
    and index 0), found in the same pass; or a :class:`TieLists` tally (or an object
    whose ``lists(n_q)`` makes one, :func:`tie_lists`) that counts them, the lists then
    of width k.
    ``chunk``: queries per pass over the reference rows in the "queries" strategy (0:
    :func:`_knn_chunk`'s rule).
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
    # one small chunk of queries per iteration of the "queries" strategy; chunks are
    # independent
    per = _rows_per_chunk(chunk, nq, nr, n_threads, R, False)
    if block <= 0:
        block = _region_rows(n_threads, nr, 8)
    cdef double* td
    cdef intp* ti
    cdef intp nt
    cdef hd_tplan TP = _tplan(plan)
    cdef hd_tr TR = _tref(R)
    cdef double* mem
    cdef intp mstride
    cdef TieLists tl = tie_lists(ties, nq)
    cdef TieList* tq = tl.t if tl is not None else NULL
    cdef TieLists ttl = None
    cdef TieList* tt = NULL
    keep_mem = _tile_buffers(plan, R, n_threads, &TR, &mem, &mstride)
    if strategy == "queries":
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            nb = b1 - b0
            with nogil:
                for c in prange((nb + per - 1) // per, num_threads=n_threads, schedule="dynamic"):
                    scan_tile(&TP, P, QS, RS, &TR, _mem_of(mem, mstride),
                              b0 + c * per, min(b1, b0 + c * per + per), 0, nr,
                               &D[b0 + c * per, 0], &I[b0 + c * per, 0], k, tile, excl,
                               self_offset, tq + b0 + c * per if tq != NULL else NULL)
            PyErr_CheckSignals()
    elif strategy == "references":
        nt = n_threads
        tdist = np.full((nt, nq, k), np.inf)
        tind = np.full((nt, nq, k), nr, dtype=np.intp)
        if tl is not None:
            ttl = tl.like(nt * nq)
            tt = ttl.t
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
                                   k, tile, excl, self_offset,
                                   tt + t * nq if tt != NULL else NULL)
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
                if tq != NULL:
                    _merge_ties(td, ti, tt, nt, nq, k, q, D[q, 0], I[q, 0], nr, &tq[q])
    else:
        raise ValueError("strategy must be 'queries' or 'references', got %r" % (strategy,))
    finish_heaps(plan, dist, ind)
    if tl is not None:
        return tl.widen(dist, ind)
    return dist, ind


cdef void _merge_ties(const double* td, const intp* ti, TieList* tt, intp nt, intp nq,
                      intp k, intp q, double dk, intp ik, intp nr,
                      TieList* out) noexcept nogil:
    """Query q's rows tied with its k-th ``(dk, ik)`` (the merged heap's root) from the
    threads' heaps and tie lists of the "references" strategy: the entries of a thread's
    heap at distance dk after the k-th, and the tie list of each thread whose own k-th
    distance is dk (a thread whose k-th lies further holds all its rows at dk in its
    heap)."""
    cdef intp t, i, j
    cdef double d
    for t in range(nt):
        for i in range(k):
            d = td[(t * nq + q) * k + i]
            j = ti[(t * nq + q) * k + i]
            if d == dk and j < nr and _before(dk, ik, d, j):
                tie_add(out, j)
        if td[(t * nq + q) * k] == dk:
            tie_merge(out, &tt[t * nq + q])


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def finish_heaps(CPlan plan, double[:, ::1] D, intp[:, ::1] I):
    """Turn per-query max-heaps of (true distance, index) into sorted rows, in place."""
    cdef intp q, nq = D.shape[0], k = D.shape[1]
    with nogil:
        for q in range(nq):
            heap_sort(&D[q, 0], &I[q, 0], k)


cdef void _pairwise_rows(const hd_tplan* T, const PlanS* P, const RowsS* X, intp i0,
                         intp i1, const RowsS* YS, const hd_tr* whole, double* mem, int sym,
                         intp ny, double* out, int red) noexcept nogil:
    """Rows [i0, i1) of a pairwise matrix, tile by tile (each tile of Y read once for all
    the rows); with ``sym``, row i from column i on."""
    cdef double buf[HD_TB]
    cdef hd_tq qr
    cdef hd_tr Y
    cdef intp t0, t1, j, j0, i, js
    cdef double s
    t0 = i0 if sym else 0
    while t0 < ny:
        t1 = t0 + HD_TB
        if t1 > ny:
            t1 = ny
        Y = _tile_of(P, YS, whole, t0, t1 - t0, mem, &j0)
        for i in range(i0, i1):
            js = i if sym and i > t0 else t0
            if js >= t1:
                continue
            _tq_row(P, X, i, &qr)
            hd_tile(T, &qr, &Y, j0 + (js - t0), t1 - js, INFINITY, buf)
            for j in range(js, t1):
                s = buf[j - js]
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
             bint symmetric=False, bint reduced=False, intp chunk=0):
    """Fill ``out[i, j]`` with the distance of X row i and Y row j.

    With ``symmetric`` (X is Y), each pair is computed once, right of the diagonal, and
    copied to the left by cache-sized tiles after each block of rows.
    ``reduced`` keeps the reduced distance (no root, no mean).  ``chunk``: rows of X per
    pass over Y's rows (0: :func:`_radius_chunk_rows`' rule)."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* XS = &X.s
    cdef const RowsS* YS = &Y.s
    cdef intp nx = X.s.n, ny = Y.s.n, i, j, b0, b1, block, per, c, nb
    cdef int red = reduced
    cdef int sym = symmetric
    if out.shape[0] != nx or out.shape[1] != ny:
        raise ValueError("out has shape (%d, %d), expected (%d, %d)"
                         % (out.shape[0], out.shape[1], nx, ny))
    n_threads = _threads_for(n_threads, nx * ny)
    per = _rows_per_chunk(chunk, nx, ny, n_threads, Y, True)
    block = _region_rows(n_threads, ny, 8)
    cdef hd_tplan TP = _tplan(plan)
    cdef hd_tr TY = _tref(Y)
    cdef double* o = &out[0, 0] if nx and ny else NULL
    cdef double* mem
    cdef intp mstride
    keep_mem = _tile_buffers(plan, Y, n_threads, &TY, &mem, &mstride)
    for b0 in range(0, nx, block):
        b1 = min(nx, b0 + block)
        nb = b1 - b0
        with nogil:
            for c in prange((nb + per - 1) // per, num_threads=n_threads, schedule="dynamic"):
                _pairwise_rows(&TP, P, XS, b0 + c * per, min(b1, b0 + c * per + per), YS,
                               &TY, _mem_of(mem, mstride), sym, ny, o, red)
            if sym:   # the block's rows, right of the diagonal, copied into its columns
                for j in prange((ny - b0 + MIRROR - 1) // MIRROR, num_threads=n_threads,
                                schedule="static"):
                    _mirror_tile(o, ny, b0, b1, b0 + j * MIRROR)
        PyErr_CheckSignals()
    return np.asarray(out)


cdef inline void _insert_hits(Hit* a, intp n) noexcept nogil:
    """Insertion sort of ``a[0:n]`` by (distance, index)."""
    cdef intp i, j
    cdef Hit h
    for i in range(1, n):
        h = a[i]
        j = i - 1
        while j >= 0 and _before(h.d, h.j, a[j].d, a[j].j):
            a[j + 1] = a[j]
            j = j - 1
        a[j + 1] = h


cdef void _merge_hits(Hit* a, Hit* tmp, intp n) noexcept nogil:
    """Sort ``a[0:n]`` by (distance, index): insertion sort on runs of 16, then bottom-up
    merges through ``tmp`` (n entries), comparisons inlined."""
    cdef intp lo, i, w, m, e, x, y, k
    cdef Hit* src = a
    cdef Hit* dst = tmp
    cdef Hit* sw
    for lo in range(0, n, 16):
        _insert_hits(a + lo, 16 if lo + 16 < n else n - lo)
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
        memcpy(a, src, n * sizeof(Hit))


cdef inline uint64_t _hit_key(double d) noexcept nogil:
    """The bits of ``d`` as an unsigned integer, in the order of the values (-0.0 as 0.0:
    equal distances, equal keys; in integers, whatever the compiler's handling of signed
    zeros)."""
    cdef uint64_t b
    memcpy(&b, &d, sizeof(double))
    if b == (<uint64_t> 1) << 63:
        b = 0
    return b ^ (((<uint64_t> 0) - (b >> 63)) | ((<uint64_t> 1) << 63))


cdef inline intp _hit_buckets(intp n) noexcept nogil:
    """The buckets :func:`sort_hits` spreads ``n`` hits over: a power of two >= n / 2."""
    cdef intp nb = 16
    while nb < n // 2:
        nb = 2 * nb
    return nb


cdef void _bucket_hits(Hit* a, Hit* tmp, intp* cnt, intp n) noexcept nogil:
    """Sort ``a[0:n]`` by (distance, index) through ``tmp`` (n entries) and ``cnt``
    (:func:`_hit_buckets` + 1): the hits go, in one counting pass, to buckets of equal
    width over their distances' keys (the buckets in the distances' order), and each
    bucket is then sorted on its own.  A radius search's distances spread over a binade
    or two, so that most buckets hold a few hits: about three times as fast as a merge
    sort from a few hundred hits, whose comparisons' branches the processor cannot
    predict."""
    cdef uint64_t kmin = 0xFFFFFFFFFFFFFFFF, kmax = 0, k, span
    cdef intp i, b, lo, hi, nb = _hit_buckets(n)
    cdef int s = 0
    for i in range(n):
        k = _hit_key(a[i].d)
        if k < kmin:
            kmin = k
        if k > kmax:
            kmax = k
    span = kmax - kmin
    while (span >> s) >= <uint64_t> nb:
        s = s + 1
    memset(cnt, 0, (nb + 1) * sizeof(intp))
    for i in range(n):
        cnt[<intp> ((_hit_key(a[i].d) - kmin) >> s) + 1] += 1
    for b in range(nb):
        cnt[b + 1] += cnt[b]
    for i in range(n):
        b = <intp> ((_hit_key(a[i].d) - kmin) >> s)
        tmp[cnt[b]] = a[i]
        cnt[b] += 1
    # cnt[b]: the end of bucket b
    lo = 0
    for b in range(nb):
        hi = cnt[b]
        if hi - lo > 16:
            _merge_hits(tmp + lo, a + lo, hi - lo)
        elif hi - lo > 1:
            _insert_hits(tmp + lo, hi - lo)
        lo = hi
    memcpy(a, tmp, n * sizeof(Hit))


cdef void sort_hits(Hit* a, intp n) noexcept nogil:
    """Sort the hits ``a[0:n]`` of one query by (distance, index): insertion sort up to
    16 hits, :func:`_bucket_hits` beyond (``qsort`` where its buffers cannot be had: the
    same order, the indices of one query's hits being distinct)."""
    cdef intp nb
    cdef void* mem
    if n <= 16:
        _insert_hits(a, n)
        return
    nb = _hit_buckets(n)
    mem = malloc(n * sizeof(Hit) + (nb + 1) * sizeof(intp))
    if mem == NULL:
        qsort(a, n, sizeof(Hit), _cmp_hit)
        return
    _bucket_hits(a, <Hit*> mem, <intp*> ((<Hit*> mem) + n), n)
    free(mem)


cdef int _take_hits(Hit** bufs, intp* counts, intp nb, list out_d,
                    list out_i) except -1:
    """Append the hits of buffers ``bufs[0 .. nb]`` (``counts`` of each) to ``out_d`` and
    ``out_i`` as two new arrays each, distances (float64) and indices (intp); each buffer
    is freed, NULL and its count 0 afterwards."""
    cdef intp q, h, cnt
    cdef double* dp
    cdef intp* ip
    for q in range(nb):
        cnt = counts[q]
        dq = np.empty(cnt)
        iq = np.empty(cnt, dtype=np.intp)
        dp = <double*> cnp.PyArray_DATA(dq)
        ip = <intp*> cnp.PyArray_DATA(iq)
        for h in range(cnt):
            dp[h] = bufs[q][h].d
            ip[h] = bufs[q][h].j
        free(bufs[q])
        bufs[q] = NULL
        counts[q] = 0
        out_d.append(dq)
        out_i.append(iq)
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


cdef int _radius_chunk(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q0,
                       intp q1, const RowsS* RS, const hd_tr* whole, double* mem, intp nr,
                       double r, double rred, int excl, intp self_off, Hit** bufs,
                       intp* counts) noexcept nogil:
    """Reference rows within true distance r of each query of [q0, q1), tile by tile
    (each tile read once for all the chunk's queries, as in ``scan_tile``): query q's
    ``counts[q - q0]`` rows, sorted, in a new buffer ``bufs[q - q0]`` (NULL when none;
    freed by the caller).  Returns 0, or -1 when out of memory (that query's count -1).
    ``rred`` (``reduced_radius``): a tile whose rows all pass it is abandoned, and a row
    past it is not finalized (its true distance exceeds r)."""
    cdef double tb[HD_TB]
    cdef hd_tq qr
    cdef hd_tr R
    cdef intp t0, t1, j, j0, q
    cdef double d
    for q in range(q0, q1):
        bufs[q - q0] = NULL
        counts[q - q0] = 0
    t0 = 0
    while t0 < nr:
        t1 = t0 + HD_TB
        if t1 > nr:
            t1 = nr
        R = _tile_of(P, RS, whole, t0, t1 - t0, mem, &j0)
        for q in range(q0, q1):
            _tq_row(P, Q, q, &qr)
            if hd_tile(T, &qr, &R, j0, t1 - t0, rred, tb):
                continue
            for j in range(t0, t1):
                if tb[j - t0] > rred or (excl and j == q + self_off):
                    continue
                d = true_of(P, Q, q, RS, j, tb[j - t0])
                if d <= r and _hit_push(&bufs[q - q0], &counts[q - q0], d, j) < 0:
                    counts[q - q0] = -1
                    return -1
        t0 = t1
    for q in range(q0, q1):
        if counts[q - q0] > 1:
            sort_hits(bufs[q - q0], counts[q - q0])
    return 0


def radius(CPlan plan, CRows Q, CRows R, double r, int n_threads, bint exclude_self=False,
           intp self_offset=0, intp block=0, intp chunk=0):
    """All reference rows within true distance ``r`` (inclusive) of each query row,
    sorted by (distance, index).  Returns two lists of arrays.  ``chunk``: queries per
    pass over the reference rows (0: :func:`_radius_chunk_rows`' rule)."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nq = Q.s.n, nr = R.s.n, q, b0, b1, c, nb, per
    cdef int excl = exclude_self
    cdef double rred = reduced_radius(plan, r)
    cdef Hit** bufs
    cdef intp* counts
    out_d = []
    out_i = []
    n_threads = _threads_for(n_threads, nq * nr)
    per = _rows_per_chunk(chunk, nq, nr, n_threads, R, True)
    if block <= 0:
        block = min(max(1, nq), _region_rows(n_threads, nr, 8))
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
            nb = b1 - b0
            with nogil:
                for c in prange((nb + per - 1) // per, num_threads=n_threads,
                                schedule="dynamic"):
                    _radius_chunk(&TP, P, QS, b0 + c * per, min(b1, b0 + c * per + per), RS,
                                  &TR, _mem_of(mem, mstride), nr, r, rred, excl, self_offset,
                                  &bufs[c * per], &counts[c * per])
            for q in range(b1 - b0):
                if counts[q] < 0:
                    raise MemoryError("radius search ran out of memory")
            _take_hits(bufs, counts, b1 - b0, out_d, out_i)
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


#: most reference rows one tile_block call takes
TILE_ROWS = HD_TB


def tile_view(CPlan plan):
    """The tile kernel's view of ``plan`` for ``tile_block`` (``_kernels/plan.pxd``): a buffer
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


include "lists.pxi"
