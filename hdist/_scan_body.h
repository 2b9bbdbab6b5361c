/* The chunk scan of the matrix-product filter's selection (hdist/_kernels.pyx,
 * _filter_row), included by _tile.h once per instruction set and precision with HD_SFX
 * (a suffix for every function name) and HD_T (float or double) defined.  No include
 * guard on purpose.
 *
 * A row of estimates g[0 .. n) is cut into chunks of rc entries.  Chunk c is kept when
 *   - th1 is NULL or some g[j] <= th1[c - c_first], and
 *   - some v[j] <= th2[c - c_first], v[j] = ((g[j] + col_0[j]) + ...) + col_{nm-1}[j]
 *     (col_t = gy + mi[t] gstride, the columns added for the attributes the query misses),
 *     plus hc[j] hm when hc is not NULL.
 * The scan returns the first kept chunk in [c_first, c_end), or c_end; for a kept chunk
 * with nm > 0 the sums (without hc hm) are left in est[0 .. rc).  The comparisons and
 * the order of the additions are those of the plain C expressions (no contraction), so
 * every variant keeps the same chunks; the loops are written for the compiler to
 * vectorize (OR of comparisons, no early exit inside a chunk). */

static HD_INLINE int HD_SFX(hd_any_le)(const HD_T *v, hd_intp n, HD_T s)
{
    hd_intp j;
    int hit = 0;
    for (j = 0; j < n; j++)
        hit |= v[j] <= s;
    return hit;
}

static HD_INLINE int HD_SFX(hd_any_le_h)(const HD_T *v, const HD_T *hc, HD_T hm, hd_intp n,
                                         HD_T s)
{
    hd_intp j;
    int hit = 0;
    for (j = 0; j < n; j++)
        hit |= v[j] + hc[j] * hm <= s;
    return hit;
}

/* some ((v[j] + c1[j]) (+ c2[j], c2 not NULL)) (+ hc[j] hm, hc not NULL) <= s: the test
 * of a chunk with one or two added columns in one pass, without storing the sums */
static HD_INLINE int HD_SFX(hd_any_le_cols)(const HD_T *v, const HD_T *c1, const HD_T *c2,
                                            const HD_T *hc, HD_T hm, hd_intp n, HD_T s)
{
    hd_intp j;
    int hit = 0;
    if (c2 && hc)
        for (j = 0; j < n; j++)
            hit |= ((v[j] + c1[j]) + c2[j]) + hc[j] * hm <= s;
    else if (c2)
        for (j = 0; j < n; j++)
            hit |= (v[j] + c1[j]) + c2[j] <= s;
    else if (hc)
        for (j = 0; j < n; j++)
            hit |= (v[j] + c1[j]) + hc[j] * hm <= s;
    else
        for (j = 0; j < n; j++)
            hit |= v[j] + c1[j] <= s;
    return hit;
}

static inline hd_intp HD_SFX(hd_scan)(const HD_T *g, hd_intp n, hd_intp rc,
                                      hd_intp c_first, hd_intp c_end, const HD_T *th1,
                                      const HD_T *th2, const HD_T *gy, hd_intp gstride,
                                      const hd_intp *mi, hd_intp nm, const HD_T *hc, HD_T hm,
                                      HD_T *est)
{
    hd_intp c, j, t, j0, ln;
    for (c = c_first; c < c_end; c++) {
        const HD_T *v;
        j0 = c * rc;
        ln = n - j0 < rc ? n - j0 : rc;
        if (th1 && !HD_SFX(hd_any_le)(g + j0, ln, th1[c - c_first]))
            continue;
        v = g + j0;
        if (nm == 1 || nm == 2) {
            const HD_T *c1 = gy + mi[0] * gstride + j0;
            const HD_T *c2 = nm == 2 ? gy + mi[1] * gstride + j0 : NULL;
            if (!HD_SFX(hd_any_le_cols)(v, c1, c2, hc ? hc + j0 : NULL, hm, ln,
                                        th2[c - c_first]))
                continue;
            /* kept: the sums for the selection */
            for (j = 0; j < ln; j++)
                est[j] = c2 ? (v[j] + c1[j]) + c2[j] : v[j] + c1[j];
            return c;
        }
        if (nm > 2) {
            const HD_T *col = gy + mi[0] * gstride + j0;
            for (j = 0; j < ln; j++)
                est[j] = v[j] + col[j];
            for (t = 1; t < nm; t++) {
                col = gy + mi[t] * gstride + j0;
                for (j = 0; j < ln; j++)
                    est[j] = est[j] + col[j];
            }
            v = est;
        }
        if (hc ? HD_SFX(hd_any_le_h)(v, hc + j0, hm, ln, th2[c - c_first])
               : HD_SFX(hd_any_le)(v, ln, th2[c - c_first]))
            return c;
    }
    return c_end;
}
