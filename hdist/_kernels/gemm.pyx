# cython: language_level=3
"""The matrix-product filter's compiled side: the products of the queries' and the
reference rows' embeddings (float32 panels, optionally with bfloat16 tables of the missing
values' bounds), the selection of the candidates whose estimate can beat the current k-th
(or lie within a radius), and their exact distances.  ``gemm_search.pxi`` (included) holds
the fused k-NN search and the radius selection.
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


cdef intp _filter_row(const PlanS* P, const RowsS* QS, const RowsS* RS, intp q,
                      const real* g, intp nt, intp r0, intp r_chunk, const double* ny_max,
                      double epsx, const real* gy, intp gstride, const intp* mi, intp nm,
                      const double* gmin, intp mstride, const double* hq, intp nh,
                      const intp* rptr, const intp* ridx, const real* hc, const double* hb,
                      const _Codes* cd, double* hd, intp* hi, intp k, TieList* tl,
                      double r, Hit** buf, intp* cap, intp cnt, int excl, intp self_off,
                      bint given, miss_t* kind) noexcept nogil:
    """One query row of :func:`gemm_select` (``buf`` NULL: update the heap ``hd``/``hi``
    of ``k`` entries, and the row's tie list ``tl`` unless NULL, ``heap_offer``) or of
    :func:`gemm_radius_select` (append the hits within ``r`` to ``buf[0]`` from position
    ``cnt``).  Returns the new count, or -1 when out of memory.

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
    and a query whose terms are all >= 0, or with no reference-missing terms (``hq`` NULL,
    ``cd`` NULL: the estimates plus the query's columns)."""
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
    cdef intp seeds[HD_SEED_MAX]
    cdef intp ns = 0
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
        # the tested values are computed a segment at a time (hdist/_kernels/scan_body.h) when
        # something is added to the estimates, unless the product made them (given)
        fused = nm > 0 or hcx != NULL or ab != NULL
    if buf == NULL and hd[0] == INFINITY and k + excl <= HD_SEED_MAX and nt >= SEED_ROWS \
            and (miss_t is _Complete or given or not fused):
        # the heap is not full: its first rows are those with the smallest tested values
        # of a few groups (hd_seeds), computed exactly, so that its bound is near its
        # final value before the scan below (which passes over them) instead of dropping
        # row after row, each drop a pair computed exactly
        if real is float:
            ns = hd_seeds_f(g, nt, k + excl, seeds)
        else:
            ns = hd_seeds_d(g, nt, k + excl, seeds)
        for jj in range(ns):
            j = r0 + seeds[jj]
            if excl and j == q + self_off:
                continue
            s = pair_reduced(P, QS, q, RS, j, 2, tau)
            if s > tau:
                continue
            s = true_of(P, QS, q, RS, j, s)
            if heap_offer(hd, hi, k, s, j, tl, RS.n):
                tau = reduced_bound(P, hd[0])
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
        # (hdist/_kernels/scan_body.h)
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
                    # the estimate with the query's columns (the sum hdist/_kernels/scan_body.h
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
            if ns > 0 and _seeded(seeds, ns, c0 + jj):
                continue
            s = pair_reduced(P, QS, q, RS, j, 2, tau)
            if s > tau:
                continue
            s = true_of(P, QS, q, RS, j, s)
            if buf == NULL:
                if heap_offer(hd, hi, k, s, j, tl, RS.n):
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
    cdef intp nm = 0
    cdef const intp* mi = NULL
    cdef _Codes cd
    cdef intp h = tq if S.heap_rows else q       # its heap
    if S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
        nm = S.qptr[q + 1] - S.qptr[q]
        mi = S.qidx + S.qptr[q]
    if nm == 0 and not S.has_h:
        _filter_row(P, QS, RS, q, g, nt, r0, S.r_chunk, nyp, S.eps * S.nx[q],
                    <const real*> S.gy, S.gstride, mi, nm, S.gmin, S.mstride, NULL, 0,
                    NULL, NULL, NULL, NULL, NULL, S.HD + h * S.k, S.HI + h * S.k, S.k,
                    S.ties + q if S.ties != NULL else NULL, 0.0, NULL, NULL, 0, S.excl,
                    S.self_off, 0, <_Complete*> NULL)
    else:
        if S.ab != NULL:
            cd.ab, cd.tab = S.ab, S.tab + 32 * tq
            # the bfloat16 entries when the product added them
            cd.t16 = t16 if given else NULL
        _filter_row(P, QS, RS, q, g, nt, r0, S.r_chunk, nyp, S.eps * S.nx[q],
                    <const real*> S.gy, S.gstride, mi, nm, S.gmin, S.mstride,
                    S.hq + q * S.nh if S.has_h else NULL, S.nh if S.has_h else 0,
                    S.rptr if S.has_h else NULL, S.ridx if S.has_h else NULL,
                    <const real*> S.hc if S.has_h else NULL,
                    S.hb + 2 * tq if S.has_h and S.hb != NULL else NULL,
                    &cd if S.ab != NULL else NULL, S.HD + h * S.k,
                    S.HI + h * S.k, S.k, S.ties + q if S.ties != NULL else NULL, 0.0, NULL,
                    NULL, 0, S.excl, S.self_off, given, <_Missing*> NULL)


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


cdef void _fill_row_codes(intp nh, const intp* rptr, const intp* ridx, intp nr,
                          unsigned short* ab) noexcept nogil:
    """The reference rows' half of :func:`miss_codes` on checked arguments: ``ab [nr]``
    from ``rptr``/``ridx`` (columns below ``nh``)."""
    cdef intp na = min(nh, <intp> CODED_ATTRS), j, t, m, first, nco
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


cdef inline void _fill_tab_row(const double* hq, intp nh, const double* hb,
                               float* tab) noexcept nogil:
    """One query's row of :func:`_fill_tabs`: ``tab [32]`` from its ``hq [nh]`` and
    ``hb [2]`` (zeros when a term is negative: the codes are not used then)."""
    cdef intp na = min(nh, <intp> CODED_ATTRS), t, m
    cdef float hm
    cdef float row[32]
    # made in a local row and copied once: stores through tab could alias hq and hb as
    # far as the compiler knows, which would reload them after each
    for t in range(32):
        row[t] = 0.0
    if hb[0] == 0.0:
        for t in range(na):
            row[t] = _below(hq[t], <const float*> NULL)
        hm = _below(hb[1], <const float*> NULL)
        for m in range(1, 32 - na):
            row[na + m - 1] = <float> m * hm
    memcpy(tab, row, 32 * sizeof(float))


cdef void _fill_tabs(const double* hq, intp nq, intp nh, const double* hb,
                     float* tab) noexcept nogil:
    """The queries' half of :func:`miss_codes` on checked arguments: ``tab [nq, 32]``
    from ``hq [nq, nh]`` and ``hb [nq, 2]``."""
    cdef intp q
    for q in range(nq):
        _fill_tab_row(hq + q * nh, nh, hb + 2 * q, tab + 32 * q)


cdef void _query_tables(const double* hq, intp nh, const intp* order, intp a0, intp n,
                        double* hb, float* tab, unsigned short* t16) noexcept nogil:
    """Queries ``order[a0 .. a0 + n)`` (``order`` NULL: ``a0 .. a0 + n``) of ``hq [., nh]``:
    row ``i`` of ``hb [n, 2]`` their :func:`_hq_bounds`, of ``tab [n, 32]`` their
    :func:`_fill_tab_row` and of ``t16 [n, 32]`` that table rounded toward zero to
    bfloat16 (``hd_bf16_bits``)."""
    cdef intp i, t, q
    cdef unsigned short row[32]
    for i in range(n):
        q = order[a0 + i] if order != NULL else a0 + i
        _hq_bounds(hq + q * nh, nh, hb + 2 * i, hb + 2 * i + 1)
        _fill_tab_row(hq + q * nh, nh, hb + 2 * i, tab + 32 * i)
        for t in range(32):
            row[t] = hd_bf16_bits(tab[32 * i + t])
        memcpy(t16 + 32 * i, row, 32 * sizeof(unsigned short))


cdef void _fill_codes(const double* hq, intp nq, intp nh, const double* hb,
                      const intp* rptr, const intp* ridx, intp nr, unsigned short* ab,
                      float* tab) noexcept nogil:
    """:func:`miss_codes` on checked arguments: ``ab [nr]`` and ``tab [nq, 32]`` filled
    from ``hq [nq, nh]``, ``hb [nq, 2]`` and ``rptr``/``ridx``."""
    _fill_row_codes(nh, rptr, ridx, nr, ab)
    _fill_tabs(hq, nq, nh, hb, tab)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef int _check_rows(const intp[::1] rptr, const intp[::1] ridx, intp ncol) except -1:
    """Refuse compressed rows (row ``j``: ``ridx[rptr[j]:rptr[j + 1]]``, ``rptr`` of one
    entry or more) that the kernels would read out of bounds: ``rptr`` from 0, within
    ``ridx`` and non-decreasing, the entries it spans below ``ncol``."""
    cdef intp nr = rptr.shape[0] - 1, j, t
    if rptr[0] != 0 or rptr[nr] > ridx.shape[0]:
        raise ValueError("rptr must index ridx, from 0")
    for j in range(nr):
        if rptr[j + 1] < rptr[j]:
            raise ValueError("rptr must be non-decreasing")
    for t in range(rptr[nr]):
        if ridx[t] < 0 or ridx[t] >= ncol:
            raise ValueError("ridx must index the columns of hq (%d)" % ncol)
    return 0


def _read_only_intp(a):
    """``a`` as a contiguous read-only intp array: itself when it is one, else a copy."""
    if isinstance(a, np.ndarray) and a.dtype == np.intp and a.ndim == 1 \
            and a.flags.c_contiguous and not a.flags.writeable:
        return a
    return np.array(a, dtype=np.intp, copy=True)


cdef class RefMissing:
    """The attributes each reference row misses, checked once per reference set:
    ``rptr``/``ridx`` (compressed rows: row ``j`` misses columns
    ``ridx[rptr[j]:rptr[j + 1]]`` of a query's ``hq``, distinct, below ``ncol``), and the
    rows' codes of :func:`miss_codes` (``ab``).  :class:`GemmKnnSelect` takes it instead
    of checking and coding the rows again for every search; the arrays are kept
    read-only."""
    cdef readonly object rptr, ridx, ab
    cdef readonly intp ncol
    cdef const intp[::1] rp
    cdef const intp[::1] ri

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def __init__(self, rptr, ridx, intp ncol):
        cdef intp nr
        rptr, ridx = _read_only_intp(rptr), _read_only_intp(ridx)
        if rptr.ndim != 1 or ridx.ndim != 1 or len(rptr) < 1:
            raise ValueError("rptr and ridx must be 1-d, rptr with one entry per reference "
                             "row plus one")
        if ncol < 0:
            raise ValueError("ncol must be >= 0")
        self.rp, self.ri = rptr, ridx
        nr = self.rp.shape[0] - 1
        _check_rows(self.rp, self.ri, ncol)
        ab = aligned_empty(nr, np.uint16)
        cdef unsigned short[::1] abv = ab
        if nr > 0:
            _fill_row_codes(ncol, &self.rp[0], &self.ri[0] if self.ri.shape[0] > 0 else NULL,
                            nr, &abv[0])
        rptr.flags.writeable = False
        ridx.flags.writeable = False
        ab.flags.writeable = False
        self.rptr, self.ridx, self.ab, self.ncol = rptr, ridx, ab, ncol

    def tables(self, const double[:, ::1] hq not None):
        """The queries' half of :func:`miss_codes` for these rows' codes ``ab``: ``tab``,
        32 float32 entries per row of ``hq`` (one column per attribute these rows can
        miss)."""
        if hq.shape[1] != self.ncol:
            raise ValueError("hq must have one column per attribute of ridx (%d), got %d"
                             % (self.ncol, hq.shape[1]))
        cdef intp nq = hq.shape[0]
        cdef const double[:, ::1] hb = _all_hq_bounds(hq)
        tab_a = aligned_empty((nq, 32), np.float32)
        tab_a[...] = 0
        cdef float[:, ::1] tab = tab_a
        if nq > 0 and self.ncol > 0:
            with nogil:
                _fill_tabs(&hq[0, 0], nq, hq.shape[1], &hb[0, 0], &tab[0, 0])
        return tab_a


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
def query_continuous(const double[:, ::1] c not None, const double[:, ::1] cpen not None,
                     const double[::1] elo not None, const double[::1] scale not None,
                     const double[::1] centre not None, const double[::1] both not None,
                     const intp[::1] hcol not None, double[:, ::1] X not None,
                     double[::1] const not None, double[:, ::1] H not None,
                     cnp.uint8_t[:, ::1] absent not None):
    """The matrix-product filter's query side for the ``mc`` continuous attributes
    (``hdist._search.gemm_filter._queries``), row by row: with ``v = (c[i, k] - elo[k])
    scale[k]`` (missing when NaN), ``X[i, k] = v - centre[k]`` (0 when missing), its
    square added to ``const[i]`` (attribute after attribute, in order),
    ``H[i, hcol[k]] = cpen[i, k] - X[i, k]^2`` (``both[k]`` when missing; ``hcol[k] < 0``:
    none) and ``absent[i, k]`` the missing flag: the float64 operations the numpy form
    makes, in its order."""
    cdef intp n = c.shape[0], mc = c.shape[1], i, k, h
    cdef double v, et, sq
    if cpen.shape[0] != n or cpen.shape[1] != mc or elo.shape[0] != mc \
            or scale.shape[0] != mc or centre.shape[0] != mc or both.shape[0] != mc \
            or hcol.shape[0] != mc:
        raise ValueError("cpen must have the shape of c, elo, scale, centre, both and hcol "
                         "one entry per column of c")
    for k in range(mc):
        if hcol[k] >= H.shape[1]:
            raise ValueError("hcol must name columns of H")
    if X.shape[0] != n or X.shape[1] < mc or const.shape[0] != n \
            or (H.shape[0] != n and H.shape[1] > 0) or absent.shape[0] != n \
            or absent.shape[1] < mc:
        raise ValueError("X, const, H and absent must have one row per row of c and the "
                         "columns the attributes fill")
    with nogil:
        for i in range(n):
            for k in range(mc):
                v = (c[i, k] - elo[k]) * scale[k]
                if v == v:
                    et = v - centre[k]
                    sq = et * et
                    absent[i, k] = 0
                else:
                    et = 0.0
                    sq = 0.0
                    absent[i, k] = 1
                X[i, k] = et
                const[i] = const[i] + sq
                h = hcol[k]
                if h >= 0:
                    H[i, h] = cpen[i, k] - sq if v == v else both[k]
    return None


cdef inline double _sq_row(const double* r, intp n, double t, double* xmax,
                           bint* bad) noexcept nogil:
    """``t`` plus the squares of ``r[0 .. n)``, in order; ``xmax`` raised to their largest
    magnitude, ``bad`` set when one is not finite."""
    cdef intp k
    cdef double a
    for k in range(n):
        a = r[k]
        if not fabs(a) <= 1.7976931348623157e308:
            bad[0] = True
        elif fabs(a) > xmax[0]:
            xmax[0] = fabs(a)
        t = t + a * a
    return t


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def query_norms(const double[:, ::1] X not None, const double[:, ::1] H not None,
                const intp[::1] qptr not None):
    """``(xmax, s)``: the largest magnitude in ``X`` and ``H`` (NaN when some entry is
    not finite) and per row ``s[i] = Σ X[i]^2 + Σ H[i]^2 + (qptr[i + 1] - qptr[i])``,
    the squared norm of the augmented query vector of the filter's rounding margin."""
    cdef intp n = X.shape[0], K = X.shape[1], nh = H.shape[1], i
    cdef double xmax = 0.0, t
    cdef bint bad = False
    if (H.shape[0] != n and nh > 0) or qptr.shape[0] != n + 1:
        raise ValueError("H must have one row per row of X, qptr one entry more")
    out = np.empty(n)
    cdef double[::1] sv = out
    with nogil:
        for i in range(n):
            t = _sq_row(&X[i, 0] if K > 0 else NULL, K, 0.0, &xmax, &bad)
            t = _sq_row(&H[i, 0] if nh > 0 else NULL, nh, t, &xmax, &bad)
            sv[i] = t + <double> (qptr[i + 1] - qptr[i])
    return (float("nan") if bad else xmax), out


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
    are looked up (``hdist._search.gemm_filter._queries``): row ``i``'s code
    ``v = codes[i, a]`` (< 0: missing, the table's last row) selects row ``v`` of the attribute's table of
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


def seed_rows(const real[::1] v not None, intp ns):
    """The positions of the rows a k-NN heap of ``ns`` entries is offered first from the
    tested values ``v`` (the selection's own rule, with this machine's variant for
    float32): at most ``min(ns, SEED_MAX)``, in increasing order of value."""
    cdef intp pos[HD_SEED_MAX]
    cdef intp n = v.shape[0], c, i
    if ns < 0:
        raise ValueError("ns must be >= 0, got %d" % ns)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    with nogil:
        if real is float:
            c = hd_seeds_f(&v[0], n, ns, pos)
        else:
            c = hd_seeds_d(&v[0], n, ns, pos)
    return np.array([pos[i] for i in range(c)], dtype=np.intp)


#: most rows a k-NN heap is offered first (``seed_rows``), and the fewest reference rows of
#: a tile from which the selection offers them
SEED_MAX = HD_SEED_MAX
SEED_MIN_ROWS = SEED_ROWS


def _spread_blocks(order, intp chunk):
    """``order`` with its whole blocks of ``HD_GQB`` queries dealt over the chunks of
    ``chunk`` queries (a multiple of ``HD_GQB``) that threads take: with ``n`` such chunks,
    the blocks ``0, n, 2n, ...``, then ``1, n + 1, 2n + 1, ...`` and so on (the last,
    partial block stays last), which the chunks then cut every ``chunk`` queries.  Each
    chunk so takes blocks from the whole order, a like share of the queries missing few and
    many attributes (whose costs differ), while each block keeps queries missing the same
    ones."""
    cdef intp nb = order.shape[0] // HD_GQB, per = max(1, chunk // HD_GQB)
    cdef intp nch = (nb + per - 1) // per
    if nch <= 1:
        return order
    head = np.asarray(order[:nb * HD_GQB]).reshape(nb, HD_GQB)
    deal = np.argsort(np.arange(nb) % nch, kind="stable")
    return np.concatenate([head[deal].ravel(), np.asarray(order[nb * HD_GQB:])])


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def miss_order(const intp[::1] qptr not None, const intp[::1] qidx not None):
    """A stable order of the queries (rows of ``qptr``) by the set of attributes each
    misses (``qidx[qptr[q]:qptr[q + 1]]``; the first 64 attributes decide): queries
    missing the same attributes come side by side, those missing none first."""
    cdef intp nq = qptr.shape[0] - 1, q, t
    if nq < 0 or qptr[0] < 0 or qptr[nq] > qidx.shape[0]:
        raise ValueError("qptr must index qidx")
    for q in range(nq):
        if qptr[q + 1] < qptr[q]:
            raise ValueError("qptr must be non-decreasing")
    out_a = np.empty(nq, dtype=np.intp)
    cdef intp[::1] out = out_a
    cdef cnp.uint64_t* keys = <cnp.uint64_t*> malloc(max(nq, 1) * sizeof(cnp.uint64_t))
    cdef intp* tmp = <intp*> malloc(max(nq, 1) * sizeof(intp))
    cdef cnp.uint64_t most = 0
    cdef intp count[256]
    cdef intp* src
    cdef intp* dst
    cdef intp* sw
    cdef int shift
    cdef intp b
    if keys == NULL or tmp == NULL:
        free(keys)
        free(tmp)
        raise MemoryError()
    with nogil:
        for q in range(nq):
            keys[q] = 0
            for t in range(qptr[q], qptr[q + 1]):
                if 0 <= qidx[t] < 64:
                    keys[q] = keys[q] | ((<cnp.uint64_t> 1) << qidx[t])
            most = most | keys[q]
            out[q] = q
        # a stable sort by the keys: least significant byte first, one counting pass per
        # byte up to the highest set (two for up to 16 attributes)
        src, dst = &out[0] if nq > 0 else tmp, tmp
        shift = 0
        while shift < 64 and (most >> shift) != 0:
            for b in range(256):
                count[b] = 0
            for q in range(nq):
                count[(keys[src[q]] >> shift) & 255] += 1
            t = 0
            for b in range(256):
                count[b], t = t, t + count[b]
            for q in range(nq):
                b = (keys[src[q]] >> shift) & 255
                dst[count[b]] = src[q]
                count[b] += 1
            sw = src
            src = dst
            dst = sw
            shift = shift + 8
        if nq > 0 and src != &out[0]:
            for q in range(nq):
                out[q] = src[q]
    free(keys)
    free(tmp)
    return out_a


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def miss_lists(const cnp.uint8_t[:, ::1] absent not None):
    """``(qptr, qidx)``: the non-zero columns of each row of ``absent`` as compressed
    rows (row ``i``'s are ``qidx[qptr[i]:qptr[i + 1]]``, in increasing order), what
    ``np.nonzero`` gives, in one pass."""
    cdef intp n = absent.shape[0], m = absent.shape[1], i, a, c = 0
    qptr_a = np.empty(n + 1, dtype=np.intp)
    cdef intp[::1] qptr = qptr_a
    with nogil:
        for i in range(n):
            qptr[i] = c
            for a in range(m):
                if absent[i, a]:
                    c = c + 1
        qptr[n] = c
    qidx_a = np.empty(c, dtype=np.intp)
    cdef intp[::1] qidx = qidx_a
    c = 0
    with nogil:
        for i in range(n):
            for a in range(m):
                if absent[i, a]:
                    qidx[c] = a
                    c = c + 1
    return qptr_a, qidx_a


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
    _check_rows(rptr, ridx, nh)
    ab_a = aligned_empty(nr, np.uint16)
    tab_a = aligned_empty((nq, 32), np.float32)
    tab_a[...] = 0
    cdef unsigned short[::1] ab = ab_a
    cdef float[:, ::1] tab = tab_a
    _fill_codes(&hq[0, 0] if nq > 0 and nh > 0 else NULL, nq, nh,
                &hbv[0, 0] if nq > 0 else NULL, &rptr[0],
                &ridx[0] if ridx.shape[0] > 0 else NULL, nr, &ab[0] if nr > 0 else NULL,
                &tab[0, 0] if nq > 0 else NULL)
    return ab_a, tab_a


cdef int _fused_chunk(const PlanS* P, const RowsS* QS, const RowsS* RS, const _SelS* S,
                      const float* Xp, intp K, const float* Yp, intp a0, intp a1,
                      intp rt, const intp* order) noexcept nogil:
    """Queries ``a0 .. a1`` (``a0`` a multiple of ``HD_GQB``) of
    :meth:`GemmKnnSelect.search`: per block of ``rt`` reference rows, per panel of
    ``HD_GQB`` queries, the products into a buffer of the cache, then the selection of
    each row as :meth:`GemmKnnSelect.tile` makes it.  1: out of memory.  ``order`` (NULL:
    none): the queries in the order of the rows of ``Xp`` (row ``i`` is query
    ``order[i]``), a permutation that puts queries missing the same attributes side by
    side.

    With terms against the reference rows' missing values (``S.has_h``, codes ``S.ab``),
    the chunk's queries' bounds and tables (:func:`_query_tables`) are made here, in the
    chunk's order, not
    for all queries before the parallel region: ``S.hb``, ``S.tab`` and ``S.t16`` are not
    read.  With an order, the chunk's heaps are copied into that order for the search and
    back after it; the blocks' columns are merged once (``hd_gemm_union_set``)."""
    # the block of estimates on a 64-byte boundary (rt is a multiple of HD_GPW, so every
    # row of it is): a vector stored across two cache lines costs two stores, and one
    # read back at once is not forwarded from the store
    cdef void* mem = malloc(HD_GQB * rt * sizeof(float) + 64)
    cdef float* G = <float*> (((<size_t> mem) + 63) & ~(<size_t> 63))
    cdef intp r0, nt, qb, nqb, i, q, n = a1 - a0
    cdef hd_gadd add
    cdef _SelS L = S[0]         # S with the chunk's own tables
    cdef void* tmem = NULL
    cdef double* hbc
    cdef float* tabc
    cdef unsigned short* t16c
    # per block of HD_GQB queries, what its product adds (all but the reference rows'
    # block: the codes, columns and their number, set per block of rows), and whether it
    # adds anything
    cdef intp nblk = (n + HD_GQB - 1) // HD_GQB, b
    cdef hd_gadd* adds = <hd_gadd*> malloc(max(nblk, 1) * (sizeof(hd_gadd) + 1))
    cdef unsigned char* has = <unsigned char*> (adds + max(nblk, 1))
    cdef int bf16
    # with an order, the chunk's heaps in that order (copied in and back): the selection
    # then meets them one after another in memory, not scattered over all the queries'
    cdef double* hdc = NULL
    cdef intp* hic = NULL
    if order != NULL and n > 0:
        hdc = <double*> malloc(n * S.k * (sizeof(double) + sizeof(intp)))
        hic = <intp*> (hdc + n * S.k)
    if mem == NULL or adds == NULL or (order != NULL and n > 0 and hdc == NULL):
        free(mem)
        free(adds)
        free(hdc)
        return 1
    if hdc != NULL:
        for i in range(n):
            q = order[a0 + i]
            memcpy(hdc + i * S.k, S.HD + q * S.k, S.k * sizeof(double))
            memcpy(hic + i * S.k, S.HI + q * S.k, S.k * sizeof(intp))
        L.HD, L.HI, L.heap_rows = hdc, hic, 1
    L.hb, L.tab, L.t16 = NULL, NULL, NULL
    if S.has_h and S.ab != NULL and n > 0:
        # each query's tables on a 64-byte boundary (the product loads them whole)
        tmem = malloc(n * (2 * sizeof(double) + 32 * sizeof(float)
                           + 32 * sizeof(unsigned short)) + 64)
        if tmem == NULL:
            free(mem)
            free(adds)
            free(hdc)
            return 1
        tabc = <float*> (((<size_t> tmem) + 63) & ~(<size_t> 63))
        t16c = <unsigned short*> (tabc + 32 * n)
        hbc = <double*> (t16c + 32 * n)
        _query_tables(S.hq, S.nh, order, a0, n, hbc, tabc, t16c)
        L.hb, L.tab, L.t16 = hbc, tabc, t16c
    # the product adds the terms of the query rows whose reference-missing terms are
    # bounded by the codes (and their own columns): hd_prep's values, made while the sums
    # are in registers.  The kind of table is read once for the chunk: the product and the
    # selection agree even if the variant is changed meanwhile (which the rules forbid).
    bf16 = hd_gemm_bf16() and L.t16 != NULL
    memset(&add, 0, sizeof(hd_gadd))
    for b in range(nblk):
        qb = a0 + b * HD_GQB
        nqb = min(<intp> HD_GQB, a1 - qb)
        # the reference rows' block (ab, gy, nt) is set per block of rows
        add.ab, add.gy, add.nt = NULL, NULL, 0
        add.bf16 = bf16
        has[b] = False
        for i in range(HD_GQB):
            add.tab[i], add.t16[i], add.mi[i], add.nm[i] = NULL, NULL, NULL, 0
            if i >= nqb:
                continue
            q = order[qb + i] if order != NULL else qb + i
            if _tabled(&L, qb + i - a0):
                has[b] = True
                add.tab[i] = L.tab + 32 * (qb + i - a0)
                add.t16[i] = L.t16 + 32 * (qb + i - a0) if bf16 else NULL
            elif S.cols_only and S.qptr[q + 1] > S.qptr[q]:
                # its columns alone (add.ab NULL): the table is only a mark
                has[b] = True
                add.tab[i] = _NO_TABLE
            if add.tab[i] != NULL and S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
                add.nm[i] = S.qptr[q + 1] - S.qptr[q]
                add.mi[i] = S.qidx + S.qptr[q]
        # the block's columns merged once, for every block of reference rows
        add.gstride = S.gstride
        hd_gemm_union_set(&add, nqb)
        adds[b] = add
    r0 = 0
    while r0 < S.nr:
        nt = min(rt, S.nr - r0)
        for b in range(nblk):
            qb = a0 + b * HD_GQB
            nqb = min(<intp> HD_GQB, a1 - qb)
            if has[b]:
                adds[b].ab = S.ab + r0 if S.ab != NULL else NULL
                adds[b].gy = <const float*> S.gy + r0 if S.gy != NULL else NULL
                adds[b].nt = nt
            hd_gemm_blk(Xp + (qb // HD_GQB) * K * HD_GQB, nqb, Yp + (r0 // HD_GPW) * K * HD_GPW,
                        (nt + HD_GPW - 1) // HD_GPW, K, G, rt, &adds[b] if has[b] else NULL)
            _select_tile(P, QS, RS, &L, <const float*> G, rt, nqb, nt, qb, r0,
                         &adds[b] if has[b] else NULL, order, a0)
        r0 = r0 + rt
    if hdc != NULL:
        for i in range(n):
            q = order[a0 + i]
            memcpy(S.HD + q * S.k, hdc + i * S.k, S.k * sizeof(double))
            memcpy(S.HI + q * S.k, hic + i * S.k, S.k * sizeof(intp))
    free(mem)
    free(tmem)
    free(adds)
    free(hdc)
    return 0


include "gemm_search.pxi"
