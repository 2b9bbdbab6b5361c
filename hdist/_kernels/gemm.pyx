# cython: language_level=3
"""The matrix-product filter's compiled side: the products of the queries' and the
reference rows' embeddings (float32 panels, optionally with bfloat16 tables of the missing
values' bounds), the selection of the candidates whose estimate can beat the current k-th
(or lie within a radius), and their exact distances.  Included files hold the parts:
``gemm_filter.pxi`` one query row's selection (the heap update or the radius hits),
``gemm_missing.pxi`` the missing values' codes and tables and the queries' embeddings,
``gemm_search.pxi`` the fused k-NN search and the radius selection.
"""
import math

import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange, parallel
from libc.stdlib cimport malloc, free, realloc
from libc.string cimport memcpy, memset
from libc.math cimport INFINITY, isnan, fabs, fma, fmax, sqrt, pow

from hdist._kernels.plan cimport *
from hdist._kernels.plan import _c, _region_rows, _threads_for, SAFE_RANGE
from hdist._kernels.ctile cimport *
from hdist._kernels.tiles cimport sort_hits

cnp.import_array()

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


def use_isa(int index):
    """Follow the tile kernel's instruction-set variant (``tiles.isa_index()``): this
    module's products and scans dispatch on their own copy of the choice."""
    if hd_isa_set(index) != 0:
        raise ValueError("instruction set %d is not available on this machine" % index)
    if not hd_isa_available(2):
        hd_bf16_set(0)


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


def _init_bf16():
    import os
    from hdist._kernels.tiles import isa_index
    use_isa(isa_index())
    # HDIST_BF16=0: the filter's product keeps its float32 tables on AVX512_BF16 machines
    off = os.environ.get("HDIST_BF16", "1").strip().lower() in ("0", "no", "false", "off")
    hd_bf16_set(0 if off or not hd_bf16_available() else 1)


_init_bf16()


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
    # fewest reference rows of a tile from which _filter_row seeds an empty heap
    SEED_ROWS = 256

#: most reference rows per chunk of the matrix-product filter (``r_chunk``)
GEMM_MAX_CHUNK = GEMM_MAX_CHUNK_C


# the mark of a query row whose columns the product adds without a table (never read)
cdef float _NO_TABLE[32]


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
    cdef double lb = 0.0, hm = INFINITY, h
    # in locals: the outputs may alias hq as far as the compiler knows
    for t in range(nh):
        h = hq[t]
        if h < 0.0:
            lb = lb + h
        if h < hm:
            hm = h
    lbq[0] = lb
    hmin[0] = hm


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


cdef inline bint _seeded(const intp* seeds, intp ns, intp jj) noexcept nogil:
    """True when ``jj`` is one of ``seeds[0 .. ns)``."""
    cdef intp t
    for t in range(ns):
        if seeds[t] == jj:
            return True
    return False


include "gemm_filter.pxi"


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


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef int _ref_counts_ok(const intp[::1] rptr, const real[::1] hc, intp nr) noexcept nogil:
    """1 when ``hc`` counts the entries of each of the ``nr`` rows of ``rptr`` (checked
    otherwise, :class:`RefMissing`)."""
    cdef intp j
    if rptr.shape[0] != nr + 1 or hc.shape[0] != nr:
        return 0
    for j in range(nr):
        if hc[j] != rptr[j + 1] - rptr[j]:
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
    int cols_only         # no reference-missing terms: the product adds the columns of
                          # the queries that miss values (without a table)
    TieList* ties         # per query, the rows tied with its k-th (NULL: not kept)
    int heap_rows         # 1: HD/HI hold the heaps of a chunk's rows, in its order (the
                          # row tq of _select_row), not those of all queries


cdef inline bint _tabled(const _SelS* S, intp q) noexcept nogil:
    """True when :func:`_filter_row` bounds the reference rows' missing terms of query
    ``q`` with the codes (float32): it has such terms and none is negative."""
    return S.ab != NULL and S.has_h and S.nh > 0 and S.hb != NULL and S.hb[2 * q] == 0.0


cdef inline void _select_row(const PlanS* P, const RowsS* QS, const RowsS* RS,
                             const _SelS* S, const real* g, intp nt, intp q, intp tq,
                             intp r0, const double* nyp, bint given,
                             const unsigned short* t16) noexcept nogil:
    """Query row ``q`` of a tile whose estimates are ``g[0 .. nt)`` (reference rows from
    ``r0``, ``nyp`` the norms' bounds from the tile's first chunk): the complete-row
    variant of :func:`_filter_row` when neither side misses a value, else the other.
    ``tq``: the query's row of ``S.hb`` and ``S.tab`` (and of its heap with
    ``S.heap_rows``).  ``given``: ``g`` holds the tested
    values instead (only when :func:`_tabled`), made with the query's bfloat16 table
    ``t16`` (NULL: its float table)."""
    cdef _RowArgs A
    cdef _Codes cd
    cdef intp h = tq if S.heap_rows else q       # its heap
    A.P, A.QS, A.RS, A.q = P, QS, RS, q
    A.nt, A.r0, A.r_chunk, A.ny_max, A.epsx = nt, r0, S.r_chunk, nyp, S.eps * S.nx[q]
    A.gy, A.gstride, A.gmin, A.mstride = S.gy, S.gstride, S.gmin, S.mstride
    A.mi, A.nm = NULL, 0
    if S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
        A.nm = S.qptr[q + 1] - S.qptr[q]
        A.mi = S.qidx + S.qptr[q]
    A.hd, A.hi, A.k = S.HD + h * S.k, S.HI + h * S.k, S.k
    A.tl = S.ties + q if S.ties != NULL else NULL
    A.r, A.buf, A.cap, A.excl, A.self_off = 0.0, NULL, NULL, S.excl, S.self_off
    A.hq, A.nh, A.rptr, A.ridx, A.hc, A.hb, A.cd = NULL, 0, NULL, NULL, NULL, NULL, NULL
    A.given = 0
    if A.nm == 0 and not S.has_h:
        _filter_row(&A, g, 0, <_Complete*> NULL)
    else:
        if S.has_h:
            A.hq, A.nh, A.rptr, A.ridx, A.hc = S.hq + q * S.nh, S.nh, S.rptr, S.ridx, S.hc
            A.hb = S.hb + 2 * tq if S.hb != NULL else NULL
        if S.ab != NULL:
            cd.ab, cd.tab = S.ab, S.tab + 32 * tq
            # the bfloat16 entries when the product added them
            cd.t16 = t16 if given else NULL
            A.cd = &cd
        A.given = given
        _filter_row(&A, g, 0, <_Missing*> NULL)


cdef void _select_tile(const PlanS* P, const RowsS* QS, const RowsS* RS, const _SelS* S,
                       const real* G, intp ldg, intp nb, intp nt, intp q0,
                       intp r0, const hd_gadd* add, const intp* order,
                       intp tbase) noexcept nogil:
    """The rows of one tile in order: what ``gemm_select`` does with one thread.  ``add``
    (NULL: none; at most HD_GQB rows) the additions ``hd_gemm_blk`` made to the rows.
    ``order`` (NULL: none): row ``ii`` is query ``order[q0 + ii]``.  Row ``ii``'s bounds
    and table are row ``q0 + ii - tbase`` of ``S.hb`` and ``S.tab``."""
    cdef intp ii
    cdef const double* nyp = S.ny_max + r0 // S.r_chunk
    for ii in range(nb):
        _select_row(P, QS, RS, S, G + ii * ldg, nt,
                    order[q0 + ii] if order != NULL else q0 + ii, q0 + ii - tbase, r0, nyp,
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
    p = 2 distance, see ``hdist._search.gemm_filter``) as a filter.

    The estimate of a pair is ``G[i, j]`` plus ``gy[a, r0 + j]`` for every attribute ``a``
    missing in query ``q`` (``qidx[qptr[q]:qptr[q + 1]]``); ``gmin[a, c]``, the smallest
    ``gy[a]`` over chunk ``c`` of all reference rows, lets a chunk be dismissed before
    those additions.  ``hq[q, t]`` (``hdist._search.gemm_filter``: the query's term
    against a missing value, less its product share) is added for every attribute ``t`` reference row ``j``
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
    S.ties = NULL
    S.ab, S.tab, S.t16 = NULL, NULL, NULL
    S.cols_only = 0
    S.heap_rows = 0
    with nogil:
        for ii in prange(nb, num_threads=n_threads, schedule="static"):
            _select_row(P, QS, RS, &S, &G[ii, 0], nt, q0 + ii, q0 + ii, r0, S.ny_max, 0,
                        NULL)


#: reference rows per block of the fused filter (rounded to panels and chunks): its 8 x 2048
#: estimates (64 KB) stay in a core's L2 cache; fewer, longer blocks measured 2-3 % faster
#: than 512 rows (in L1) on 2 000 x 20 000 HVDM, with and without missing values
GEMM_BLOCK_ROWS = 2048
#: pairs per parallel region of the fused filter (signals are checked between regions)
GEMM_REGION_PAIRS = 1 << 26
#: most queries per chunk of the fused filter (each chunk reads the reference panels once)
GEMM_MAX_QUERY_CHUNK = 512
#: reference panels up to this size (bytes) are read from the caches, so that a pass over
#: them costs little: the fused filter's default chunks give each thread four chunks
#: rather than two.  With only two, a thread on a slower core (a virtual machine's cores
#: differed by up to 60 % in speed) ends the search up to a whole chunk after the others:
#: on a 16-core VM, 2 000 x 20 000 HVDM on 4-16 threads took 7-25 % less time with four;
#: on 2 cores of another machine, no difference
GEMM_CACHED_PANELS = 8 << 20


def _query_chunks(intp nq, intp nr, int n_threads, Py_ssize_t panel_bytes, intp q_chunk=0):
    """``(chunk, region)``: the queries per chunk of the fused filter and per parallel
    region (:meth:`GemmKnnSelect.search`), both whole panels of ``HD_GQB`` queries;
    ``panel_bytes`` is the size of the reference panels, ``q_chunk`` > 0 a chosen
    chunk."""
    cdef intp per = 4 if panel_bytes <= GEMM_CACHED_PANELS else 2
    cdef intp qc = q_chunk if q_chunk > 0 else \
        min(GEMM_MAX_QUERY_CHUNK, max(32, (nq + per * n_threads - 1) // (per * n_threads)))
    qc = (qc + HD_GQB - 1) // HD_GQB * HD_GQB      # whole panels of queries
    # a region holds whole rounds of chunks, ``per`` for every thread (fewer, down to one,
    # where that would hold a thread past THREAD_REGION_PAIRS between signal checks): a
    # region of one chunk per thread keeps every thread waiting at its end for the slowest
    # (census-like HVDM 30 000 x 10 000 on 2 threads: 1.6x the one-thread rate, 2.0x with
    # two chunks per thread)
    cdef intp wave = qc * n_threads
    cdef intp region = max(_region_rows(n_threads, nr, qc, per, 1),
                           GEMM_REGION_PAIRS // max(1, nr))
    region = (region + wave - 1) // wave * wave
    return qc, region


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def aligned_empty(shape, dtype):
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary (a
    cache line): the products' vector loads of the reference panels and columns then
    never straddle two lines, which costs two loads each (numpy's own arrays start on 16
    bytes, wherever the allocator puts them)."""
    dt = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(d < 0 for d in shape):
        raise ValueError("negative dimensions are not allowed")
    cdef intp nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    raw = np.empty(nbytes + 64, dtype=np.uint8)
    cdef intp off = (-raw.ctypes.data) % 64
    return raw[off:off + nbytes].view(dt).reshape(shape)


def gemm_panels(const float[:, ::1] Y not None, intp height=HD_GPW,
                const intp[::1] order=None):
    """``Y [n, K]`` as panels of ``height`` rows stored attribute-major, ``[ceil(n /
    height), K, height]``, the last zero-padded: the layout :meth:`GemmKnnSelect.search`
    reads (reference rows in panels of ``HD_GPW``, queries of ``HD_GQB``).  ``order``
    (None: the rows in turn): row ``i`` of the panels is row ``order[i]`` of ``Y``, in one
    pass (as ``gemm_panels(Y[order])``).  The panels start on a 64-byte boundary
    (:func:`aligned_empty`)."""
    cdef intp n = Y.shape[0] if order is None else order.shape[0], K = Y.shape[1]
    cdef intp npan, p, h, k, i, r
    if height < 1:
        raise ValueError("height must be >= 1")
    if order is not None:
        for i in range(n):
            if order[i] < 0 or order[i] >= Y.shape[0]:
                raise ValueError("order must index the rows of Y")
    npan = (n + height - 1) // height
    out_a = aligned_empty((npan, K, height), np.float32)
    cdef float[:, :, ::1] out = out_a
    with nogil:
        for p in range(npan):
            for h in range(height):
                i = p * height + h
                if i < n:
                    r = order[i] if order is not None else i
                    for k in range(K):
                        out[p, k, h] = Y[r, k]
                else:
                    for k in range(K):
                        out[p, k, h] = 0.0
    return out_a


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef _bf16_down(const float[:, ::1] tab):
    """The float32 tables ``tab`` (entries >= 0) rounded down to bfloat16, as 16-bit words
    (``hd_bf16_bits``: the upper half of each entry's bits, which rounds toward zero)."""
    out = aligned_empty((tab.shape[0], tab.shape[1]), np.uint16)
    cdef unsigned short[:, ::1] o = out
    cdef intp i, t
    for i in range(tab.shape[0]):
        for t in range(tab.shape[1]):
            o[i, t] = hd_bf16_bits(tab[i, t])
    return out


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
    tables rounded down).  With ``gy`` and no ``ab``: the estimates plus the columns alone
    (the fused search without reference-missing terms).  The padding rows after the last
    reference row hold zeros without additions, else unspecified values (the selection
    never reads them)."""
    cdef intp nq = X.shape[0], K = X.shape[1], npan = Yp.shape[0], q, i, t, n = 0
    cdef hd_gadd add
    cdef bint adds = ab is not None or gy is not None
    t16a = None
    if Yp.shape[1] != K or Yp.shape[2] != HD_GPW:
        raise ValueError("Yp must be [panels, %d, %d]" % (K, HD_GPW))
    out = np.zeros((nq, npan * HD_GPW), dtype=np.float32)
    cdef float[:, ::1] G = out
    if ab is None and tab is not None:
        raise ValueError("tab needs ab")
    if not adds and (qptr is not None or qidx is not None or rows is not None):
        raise ValueError("qptr, qidx and rows need ab or gy")
    if adds:
        n = ab.shape[0] if ab is not None else gy.shape[1]
        if rows is not None and rows.shape[0] != nq:
            raise ValueError("rows must have one entry per query")
        if ab is not None and (tab is None or tab.shape[0] != nq or tab.shape[1] != 32):
            raise ValueError("tab must have 32 entries per query")
        if n > npan * HD_GPW or n < (npan - 1) * HD_GPW + 1:
            raise ValueError("ab (gy) must have one code (column) per reference row of the "
                             "panels")
        for t in range(n if ab is not None else 0):
            if (ab[t] & 255) >= 32 or (ab[t] >> 8) >= 32:
                raise ValueError("the codes in ab must be below 32")
        if (gy is None) != (qptr is None) or (gy is None) != (qidx is None):
            raise ValueError("gy, qptr and qidx go together")
        if gy is not None:
            if gy.shape[1] != n or qptr.shape[0] != nq + 1 or \
                    not _query_miss_ok(qptr, qidx, 0, nq, gy.shape[0]):
                raise ValueError("gy must have a column per reference row, qptr and qidx "
                                 "index its rows for every query")
        for i in range(nq if ab is not None else 0):
            for t in range(32):
                if not tab[i, t] >= 0:
                    raise ValueError("tab must hold entries >= 0")
        t16a = _bf16_down(tab) if ab is not None else np.zeros((max(nq, 1), 32), np.uint16)
    cdef const unsigned short[:, ::1] t16 = t16a
    if nq == 0 or npan == 0 or K == 0:
        return out
    cdef const float[:, :, ::1] Xp = gemm_panels(X, HD_GQB)
    with nogil:
        q = 0
        while q < nq:
            if adds:
                add.ab = &ab[0] if ab is not None else NULL
                add.nt, add.bf16 = n, hd_gemm_bf16() and ab is not None
                add.gy = &gy[0, 0] if gy is not None and gy.shape[0] > 0 else NULL
                add.gstride = n
                for i in range(HD_GQB):
                    add.tab[i], add.t16[i], add.mi[i], add.nm[i] = NULL, NULL, NULL, 0
                    if q + i < nq and (rows is None or rows[q + i] != 0):
                        if ab is not None:
                            add.tab[i], add.t16[i] = &tab[q + i, 0], &t16[q + i, 0]
                        else:
                            add.tab[i] = _NO_TABLE
                        if gy is not None and qptr[q + i + 1] > qptr[q + i]:
                            add.mi[i] = &qidx[qptr[q + i]]
                            add.nm[i] = qptr[q + i + 1] - qptr[q + i]
                hd_gemm_union_set(&add, min(<intp> HD_GQB, nq - q))
            hd_gemm_blk(&Xp[q // HD_GQB, 0, 0], min(<intp> HD_GQB, nq - q), &Yp[0, 0, 0],
                        npan, K, &G[q, 0], npan * HD_GPW, &add if adds else NULL)
            q = q + HD_GQB
    return out


include "gemm_missing.pxi"


include "gemm_search.pxi"
