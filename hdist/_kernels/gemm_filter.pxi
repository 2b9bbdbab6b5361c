# One query row of the matrix-product filter's selection, the k-NN heap update or the
# radius hits (included by gemm.pyx, whose declarations it uses): the row's arguments
# (_RowArgs), the named steps of its scan and the scan itself (_filter_row).


ctypedef struct _RowArgs:
    # the arguments of one query row of the selection, set by its caller (gemm_select's
    # rows, _select_row, fill one per row; gemm_radius_select one per call, updating the
    # query's own fields per row).  The void pointers hold the type of the row's
    # estimates (float or double).
    const PlanS* P
    const RowsS* QS
    const RowsS* RS
    intp q                # the query row
    intp nt, r0, r_chunk  # the tile's reference rows r0 .. r0 + nt, by chunks of r_chunk
    const double* ny_max  # per chunk of the tile, the bound of the reference rows' norms
    double epsx           # eps times the query's norm
    const void* gy        # [., gstride]: the columns of the attributes a query misses
    intp gstride
    const intp* mi        # the attributes the query misses (nm of them), rows of gy
    intp nm
    const double* gmin    # [., mstride]: gy's smallest per chunk (NULL: none)
    intp mstride
    const double* hq      # the query's nh terms against the reference rows' missing
    intp nh               # attributes (NULL: none)
    const intp* rptr      # the attributes each reference row misses (compressed rows)
    const intp* ridx
    const void* hc        # their number per reference row
    const double* hb      # the query's _hq_bounds (NULL: computed here)
    const _Codes* cd      # the codes of miss_codes (float only; NULL: none)
    double* hd            # a k-NN search: the heap of k entries (distances, rows)
    intp* hi
    intp k
    TieList* tl           # the row's tie list (NULL: not kept)
    double r              # a radius search: the radius, and its hits (buf NULL: a k-NN
    Hit** buf             # search), cap entries allocated
    intp* cap
    int excl              # reference row q + self_off is skipped
    intp self_off
    bint given            # g holds the tested values (_filter_row)


cdef inline bint _row_terms(const _RowArgs* A, const real* g, double* lbq, real* hm,
                            const real** hcx, const unsigned short** ab,
                            const real** tab) noexcept nogil:
    """The bounds :func:`_filter_row` adds for the query's terms against the reference
    rows' missing attributes: ``lbq`` the sum of the negative ones (``A.hb``, or
    :func:`_hq_bounds`).  When none is negative, a lower bound of row ``j``'s terms is added
    to its estimate: ``hm``, the smallest rounded down, and either the codes ``ab``/``tab``
    (float only, with ``A.cd``) or, when ``hm`` is not 0, the counts ``hcx`` (both from the
    tile's first row).  True when the tested values are computed a segment at a time
    (hdist/_kernels/scan_body.h): something is added to the estimates."""
    cdef double hmin = INFINITY
    if A.hb != NULL:
        lbq[0], hmin = A.hb[0], A.hb[1]
    else:
        _hq_bounds(A.hq, A.nh, lbq, &hmin)
    if A.nh > 0 and lbq[0] == 0.0:
        # every term against a missing reference value is >= 0: a lower bound of
        # each row's is added to its estimate
        hm[0] = _below(hmin, g)
        if real is float and A.cd != NULL:
            ab[0], tab[0] = A.cd.ab + A.r0, A.cd.tab
        elif hm[0] != 0:
            hcx[0] = <const real*> A.hc + A.r0
    return A.nm > 0 or hcx[0] != NULL or ab[0] != NULL


cdef inline intp _seed_heap(const _RowArgs* A, const real* g, intp* seeds,
                            double* tau) noexcept nogil:
    """Offer the empty heap ``A.hd`` the rows with the smallest tested values ``g`` of a few
    groups (``hd_seeds``), computed exactly, so that its bound is near its final value
    before the scan (which passes over them) instead of dropping row after row, each drop
    a pair computed exactly.  Returns their number, their positions in ``seeds``; ``tau``:
    the reduced bound, updated."""
    cdef intp ns, jj, j
    cdef double s
    if real is float:
        ns = hd_seeds_f(g, A.nt, A.k + A.excl, seeds)
    else:
        ns = hd_seeds_d(g, A.nt, A.k + A.excl, seeds)
    for jj in range(ns):
        j = A.r0 + seeds[jj]
        if A.excl and j == A.q + A.self_off:
            continue
        s = pair_reduced(A.P, A.QS, A.q, A.RS, j, 2, tau[0])
        if s > tau[0]:
            continue
        s = true_of(A.P, A.QS, A.q, A.RS, j, s)
        if heap_offer(A.hd, A.hi, A.k, s, j, A.tl, A.RS.n):
            tau[0] = reduced_bound(A.P, A.hd[0])
    return ns


cdef inline void _window_thresholds(const _RowArgs* A, const real* g, intp cw, intp cw_end,
                                    double tau, double lbq, real* th2,
                                    miss_t* kind) noexcept nogil:
    """The thresholds of chunks ``cw .. cw_end`` into ``th2``, with the bound ``tau``: ``Sr``,
    for a row with missing values ``Sl`` = ``Sr`` less the reference-missing terms' sum of
    negative parts ``lbq``."""
    cdef const double* ny_max = A.ny_max
    cdef double epsx = A.epsx
    cdef intp ci
    cdef real Sr
    for ci in range(cw, cw_end):
        Sr = _threshold(tau, epsx * ny_max[ci], g)
        if miss_t is _Complete:
            th2[ci - cw] = Sr
        else:
            th2[ci - cw] = _lower(Sr, lbq, fabs(lbq), g)


cdef inline void _segment_values(const _RowArgs* A, const real* g, intp s0, intp s1,
                                 intp sj, intp sn, double tau, double lbq, const real* hcx,
                                 real hm, const unsigned short* ab, const real* tab,
                                 real* th1, real* vb) noexcept nogil:
    """The tested values of chunks ``s0 .. s1`` (the tile's rows ``sj .. sj + sn``) into
    ``vb`` (hdist/_kernels/scan_body.h): the estimates plus the query's columns and the
    bounds of :func:`_row_terms`.  With nothing added but the query's columns, a chunk is
    computed only when its product alone passes ``Sl`` less the chunk's smallest added
    columns (the slack covers the rounding of the additions, which are monotone, and the
    threshold is rounded up); ``th1`` holds those thresholds."""
    cdef const double* ny_max = A.ny_max
    cdef const double* gmin = A.gmin
    cdef const intp* mi = A.mi
    cdef const real* gy = <const real*> A.gy
    cdef intp nm = A.nm, mstride = A.mstride, cg = A.r0 // A.r_chunk, ci, t
    cdef double epsx = A.epsx, lb, mag
    cdef real Sr
    cdef bint pre = hcx == NULL and ab == NULL and gmin != NULL and tau < INFINITY
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
        hd_prep_f(g + sj, sn, A.r_chunk, &th1[0] if pre else NULL,
                  gy + A.r0 + sj if nm > 0 else NULL, A.gstride, mi, nm,
                  hcx + sj if hcx != NULL else NULL, hm,
                  ab + sj if ab != NULL else NULL, tab, vb)
    else:
        hd_prep_d(g + sj, sn, A.r_chunk, &th1[0] if pre else NULL,
                  gy + A.r0 + sj if nm > 0 else NULL, A.gstride, mi, nm,
                  hcx + sj if hcx != NULL else NULL, hm, NULL, NULL, vb)


cdef inline bint _terms_reject(const _RowArgs* A, const real* g, const real* tv, intp c0,
                               intp jj, const real* hcx, const unsigned short* ab,
                               const real* tab, real Sr) noexcept nogil:
    """True when the pair of reference row ``j = A.r0 + c0 + jj`` (``tv[jj]`` its tested
    value) fails the second test: the estimate with the query's columns (the sum
    hdist/_kernels/scan_body.h makes: the tested value itself when nothing else is added)
    and the terms of the attributes row ``j`` misses, in float64, above ``Sr``."""
    cdef intp j = A.r0 + c0 + jj, t
    cdef const real* gy = <const real*> A.gy
    cdef double corr = 0.0, dsum
    cdef real ev, tsum
    for t in range(A.rptr[j], A.rptr[j + 1]):
        corr = corr + A.hq[A.ridx[t]]
    if A.given:
        # the estimate with the columns, e, is not stored: tv = e + tsum
        # rounded once (at most 2^-24 |tv|), so e is at least tv - tsum
        # less that, and the slack also covers the float64 roundings
        if real is float and A.cd.t16 != NULL:
            # the bfloat16 entries the product added (hd_gemm_blk): a dot
            # product, at most two roundings and a flush to zero of 1e-38
            dsum = <double> hd_bf16_float(A.cd.t16[ab[c0 + jj] & 255]) \
                + <double> hd_bf16_float(A.cd.t16[ab[c0 + jj] >> 8])
        else:
            tsum = tab[ab[c0 + jj] & 255] + tab[ab[c0 + jj] >> 8]
            dsum = tsum
        return (<double> tv[jj] - dsum) - (fabs(tv[jj]) + dsum) * 2.0 ** -22 \
            - 1e-30 + corr > <double> Sr
    if hcx == NULL and ab == NULL:
        ev = tv[jj]
    else:
        ev = g[c0 + jj]
        for t in range(A.nm):
            ev = ev + gy[A.mi[t] * A.gstride + j]
    return <double> ev + corr > <double> Sr


cdef inline intp _append_hit(Hit** buf, intp* cap, intp cnt, double s,
                             intp j) noexcept nogil:
    """Hit ``(s, j)`` stored at ``buf[0][cnt]`` (``cap[0]`` entries, grown when full):
    the new count, or -1 when out of memory."""
    cdef Hit* tmp
    if cnt == cap[0]:
        cap[0] = 2 * cap[0] + 16
        tmp = <Hit*> realloc(buf[0], cap[0] * sizeof(Hit))
        if tmp == NULL:
            return -1
        buf[0] = tmp
    buf[0][cnt].d = s
    buf[0][cnt].j = j
    return cnt + 1


cdef intp _filter_row(const _RowArgs* A, const real* g, intp cnt,
                      miss_t* kind) noexcept nogil:
    """One query row of :func:`gemm_select` (``A.buf`` NULL: update the heap
    ``A.hd``/``A.hi`` and the tie list ``A.tl`` unless NULL, ``heap_offer``) or of
    :func:`gemm_radius_select` (append the hits within ``A.r`` to ``A.buf[0]`` from
    position ``cnt``), ``g`` the row's estimates.  Returns the new count, or -1 when out of
    memory.

    With the query's terms ``A.hq`` against the reference rows' missing attributes all
    >= 0, a lower bound of row ``j``'s is added to its estimate before the test
    (:func:`_row_terms`: ``A.hc[j]`` times the smallest, or the codes ``A.cd`` of
    :func:`miss_codes`); else the estimates are tested against ``Sr - lbq``, ``lbq`` the
    sum of the negative terms.  A pair passing is tested again with its own terms
    (:func:`_terms_reject`).  ``kind`` (a NULL pointer) selects the compiled variant:
    ``_Complete`` only when ``A.nm == 0`` and ``A.hq`` is NULL.  ``A.given``: ``g``
    already holds the tested values (``hd_gemm_blk``'s additions: ``hd_prep``'s values
    with the float table, lower ones from the bfloat16 table ``A.cd.t16``); only with
    ``A.cd`` and a query whose terms are all >= 0, or with no reference-missing terms
    (``A.hq`` NULL, ``A.cd`` NULL: the estimates plus the query's columns)."""
    cdef const PlanS* P = A.P
    cdef const RowsS* QS = A.QS
    cdef const RowsS* RS = A.RS
    cdef const double* ny_max = A.ny_max
    cdef const double* hq = A.hq
    cdef double* hd = A.hd
    cdef Hit** buf = A.buf
    cdef intp q = A.q, nt = A.nt, r0 = A.r0, r_chunk = A.r_chunk, self_off = A.self_off
    cdef double epsx = A.epsx, r = A.r
    cdef int excl = A.excl
    cdef bint given = A.given
    cdef real vb[PREP_ROWS]
    cdef real th1[SCAN_WINDOW]
    cdef real th2[SCAN_WINDOW]
    cdef const real* tv
    cdef const real* vt = vb      # the tested values of the segment from row sj
    cdef double tau = reduced_bound(P, r if buf != NULL else hd[0]), s
    cdef real Sr, Sl        # the threshold of the pair and that of its tested value
    cdef intp c0 = 0, c1, c = 0, jj, j, cend
    cdef intp nc = (nt + r_chunk - 1) // r_chunk, cw = 0, cw_end = 0
    cdef intp s0 = 0, s1 = 0, sj = 0, sn = 0
    cdef intp seg = max(1, min(SCAN_WINDOW, PREP_ROWS // r_chunk))
    cdef double lbq = 0.0
    cdef real hm = 0
    cdef const real* hcx = NULL
    cdef const unsigned short* ab = NULL
    cdef const real* tab = NULL
    cdef unsigned long long mask
    cdef intp b0
    cdef bint stale = True, fused = False
    cdef intp seeds[HD_SEED_MAX]
    cdef intp ns = 0
    if miss_t is _Missing:
        fused = _row_terms(A, g, &lbq, &hm, &hcx, &ab, &tab)
    if buf == NULL and hd[0] == INFINITY and A.k + excl <= HD_SEED_MAX and nt >= SEED_ROWS \
            and (miss_t is _Complete or given or not fused):
        # the heap is not full: its first rows are those of hd_seeds
        ns = _seed_heap(A, g, seeds, &tau)
    while c < nc:
        if stale or c >= cw_end:
            # the thresholds of the next chunks (SCAN_WINDOW at most), with the current
            # bound.  They are recomputed whenever the bound drops, so each chunk is
            # tested exactly as if its threshold were computed when it is reached.
            cw = c
            cw_end = min(nc, c + SCAN_WINDOW)
            _window_thresholds(A, g, cw, cw_end, tau, lbq, th2, kind)
            stale = False
        if miss_t is _Missing:
            if fused and given and c >= s1:
                # the product computed them: one segment, the whole row
                s0, s1, sj, sn, vt = 0, nc, 0, nt, g
            elif fused and c >= s1:
                # the next segment's tested values
                s0 = c
                s1 = min(nc, c + seg)
                sj = s0 * r_chunk
                sn = min(nt, s1 * r_chunk) - sj
                _segment_values(A, g, s0, s1, sj, sn, tau, lbq, hcx, hm, ab, tab, th1, vb)
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
                if hq != NULL and (ab == NULL or not _code_exact(ab[c0 + jj], A.nh)):
                    if _terms_reject(A, g, tv, c0, jj, hcx, ab, tab, Sr):
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
                if heap_offer(hd, A.hi, A.k, s, j, A.tl, RS.n):
                    tau = reduced_bound(P, hd[0])
                    Sr = _threshold(tau, epsx * ny_max[c], g)
                    Sl = Sr if miss_t is _Complete else _lower(Sr, lbq, fabs(lbq), g)
                    stale = True
            elif s <= r:
                cnt = _append_hit(buf, A.cap, cnt, s, j)
                if cnt < 0:
                    return -1
        c0 = c1
        c = c + 1
    return cnt
