# One query row of the matrix-product filter's selection, the k-NN heap update or the
# radius hits (included by gemm.pyx, whose declarations it uses).


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
