/* The chunk scan of the matrix-product filter's selection (hdist/_kernels/gemm.pyx,
 * _filter_row), included by tile.h once per instruction set and precision with HD_SFX
 * (a suffix for every function name) and HD_T (float or double) defined, and
 * HD_SCAN_VPERM for the AVX-512 float variant.  No include guard on purpose.
 *
 * A row of tested values is cut into chunks of rc entries, and a chunk is kept when one of
 * its values is at or below the chunk's threshold.  For a query row with missing values
 * the values are computed first (in the fused k-NN search, the product kernel makes them
 * for queries with the codes: hdist/_kernels/gemm_body.h), else here a segment of rows at a time
 * (hd_prep): the columns added
 * for the attributes the query misses, then each reference row's lower bound of its terms
 * against the attributes it misses.  The comparisons and the order of the additions are
 * those of the plain C expressions (no contraction), so every variant keeps the same
 * chunks; the loops are written for the compiler to vectorize (OR of comparisons, no early
 * exit inside a chunk). */

static HD_INLINE int HD_SFX(hd_any_le)(const HD_T *v, hd_intp n, HD_T s)
{
    hd_intp j;
    int hit = 0;
    for (j = 0; j < n; j++)
        hit |= v[j] <= s;
    return hit;
}

/* The values the chunk scan tests for a query row with missing values, rows j0 .. j1 of a
 * segment (pointers at the segment's first row): v[j] = e[j] + b[j], or e[j] when neither
 * ab nor hc is given.  e[j] = ((g[j] + col_0[j]) + ...) + col_{nm-1}[j] is the estimate
 * with the columns of the attributes the query misses (col_t = gy + mi[t] gstride); b[j]
 * is the row's lower bound of its terms against the attributes it misses:
 * tab[a] + tab[b] with ab[j] = a + 256 b (codes below 32 into the 32 entries of tab),
 * else hc[j] hm.  The additions are those of the plain C expressions, in that order and
 * without contraction; the AVX-512 variant (at most HD_PREP_COLS columns) looks the
 * table up with a two-register permutation, which moves the same bits.  HD_PREP_E(j) is
 * e[j] for the kind ne of e: 0 g, 1 and 2 one or two columns added, 3 already in v. */
#define HD_PREP_E(j) \
    (ne == 0 ? g[j] : ne == 1 ? g[j] + c1[j] : ne == 2 ? (g[j] + c1[j]) + c2[j] : v[j])

static HD_INLINE void HD_SFX(hd_prep_rows)(const HD_T *HD_RESTRICT g, hd_intp j0,
                                           hd_intp j1, const HD_T *gy, hd_intp gstride,
                                           const hd_intp *mi, hd_intp nm,
                                           const HD_T *HD_RESTRICT hc, HD_T hm,
                                           const unsigned short *HD_RESTRICT ab,
                                           const HD_T *HD_RESTRICT tab, HD_T *HD_RESTRICT v)
{
    hd_intp j, t;
    int ne = nm < 3 ? (int)nm : 3;
    const HD_T *HD_RESTRICT c1 = nm > 0 ? gy + mi[0] * gstride : g;
    const HD_T *HD_RESTRICT c2 = nm > 1 ? gy + mi[1] * gstride : g;
#if defined(HD_SCAN_VPERM)
    /* with the codes, one pass whatever the number of columns: each vector of estimates
     * is summed in a register, column after column */
    if (ab && nm <= HD_PREP_COLS) {
        const float *cols[HD_PREP_COLS];
        __m512 tlo = _mm512_loadu_ps(tab), thi = _mm512_loadu_ps(tab + 16), acc;
        for (t = 0; t < nm; t++)
            cols[t] = gy + mi[t] * gstride;
        for (j = j0; j + 16 <= j1; j += 16) {
            /* the permutation reads the low 5 bits of each index */
            __m512i ix =
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(ab + j)));
            acc = _mm512_loadu_ps(g + j);
            for (t = 0; t < nm; t++)
                acc = _mm512_add_ps(acc, _mm512_loadu_ps(cols[t] + j));
            acc = _mm512_add_ps(acc, _mm512_add_ps(
                _mm512_permutex2var_ps(tlo, ix, thi),
                _mm512_permutex2var_ps(tlo, _mm512_srli_epi32(ix, 8), thi)));
            _mm512_storeu_ps(v + j, acc);
        }
        for (; j < j1; j++) {
            float e = g[j];
            for (t = 0; t < nm; t++)
                e = e + cols[t][j];
            v[j] = e + (tab[ab[j] & 255] + tab[ab[j] >> 8]);
        }
        return;
    }
#endif
    if (ne == 3) {
        for (j = j0; j < j1; j++)
            v[j] = (g[j] + c1[j]) + c2[j];
        for (t = 2; t < nm; t++) {
            const HD_T *HD_RESTRICT col = gy + mi[t] * gstride;
            for (j = j0; j < j1; j++)
                v[j] = v[j] + col[j];
        }
    }
    j = j0;
    if (!hc && !ab) {
        if (ne == 1)
            for (; j < j1; j++)
                v[j] = g[j] + c1[j];
        else if (ne == 2)
            for (; j < j1; j++)
                v[j] = (g[j] + c1[j]) + c2[j];
    } else if (ab) {
        for (; j < j1; j++)
            v[j] = HD_PREP_E(j) + (tab[ab[j] & 255] + tab[ab[j] >> 8]);
    } else {
        for (; j < j1; j++)
            v[j] = HD_PREP_E(j) + hc[j] * hm;
    }
}
#undef HD_PREP_E

/* hd_prep_rows over the rows [0, n) of a segment.  With th1 (one threshold per chunk of rc
 * rows), a chunk none of whose g[j] is at or below th1[c] is not computed: its values are
 * set to INFINITY, which no finite threshold keeps (th1 is given only once the bound is
 * finite, and the bound never grows; were a float threshold to overflow, such a chunk
 * would only cost exact checks). */
static inline void HD_SFX(hd_prep)(const HD_T *g, hd_intp n, hd_intp rc, const HD_T *th1,
                                   const HD_T *gy, hd_intp gstride, const hd_intp *mi,
                                   hd_intp nm, const HD_T *hc, HD_T hm,
                                   const unsigned short *ab, const HD_T *tab, HD_T *v)
{
    hd_intp c, j, j0, j1;
    if (!th1) {
        HD_SFX(hd_prep_rows)(g, 0, n, gy, gstride, mi, nm, hc, hm, ab, tab, v);
        return;
    }
    for (c = 0, j0 = 0; j0 < n; c++, j0 += rc) {
        j1 = n - j0 < rc ? n : j0 + rc;
        if (HD_SFX(hd_any_le)(g + j0, j1 - j0, th1[c]))
            HD_SFX(hd_prep_rows)(g, j0, j1, gy, gstride, mi, nm, hc, hm, ab, tab, v);
        else
            for (j = j0; j < j1; j++)
                v[j] = (HD_T)INFINITY;
    }
}

/* The first chunk in [c_first, c_end) of the row g[0 .. n), cut into chunks of rc entries,
 * with some g[j] <= th[c - c_first], or c_end. */
static inline hd_intp HD_SFX(hd_scan)(const HD_T *g, hd_intp n, hd_intp rc, hd_intp c_first,
                                      hd_intp c_end, const HD_T *th)
{
    hd_intp c, j0;
    for (c = c_first; c < c_end; c++) {
        j0 = c * rc;
        if (HD_SFX(hd_any_le)(g + j0, n - j0 < rc ? n - j0 : rc, th[c - c_first]))
            return c;
    }
    return c_end;
}

/* The first rows a k-NN heap is offered (hdist/_kernels/gemm.pyx, _filter_row), while its
 * bound is still infinite: positions of at most ns (<= HD_SEED_MAX) small values of
 * v[0 .. n).  The row is read as HD_SEED_LANES interleaved groups (entry j in group
 * j mod HD_SEED_LANES); the ns groups with the smallest minima give their minima's first
 * positions, in increasing order of those minima (NaN entries are passed over, and a
 * group with no entry below +inf gives none).  The rows found do not depend on these:
 * every row is still offered or filtered against the heap's bound, only tighter sooner. */
static inline hd_intp HD_SFX(hd_seeds)(const HD_T *HD_RESTRICT v, hd_intp n, hd_intp ns,
                                       hd_intp *pos)
{
    HD_T m[HD_SEED_LANES], bv[HD_SEED_MAX];
    hd_intp l, j, i, c = 0, bl[HD_SEED_MAX];
    if (ns > HD_SEED_MAX)
        ns = HD_SEED_MAX;
    if (ns <= 0)
        return 0;
    for (l = 0; l < HD_SEED_LANES; l++)
        m[l] = (HD_T)INFINITY;
    /* lane-wise minima (a vector minimum; a NaN entry is never taken) */
    for (j = 0; j + HD_SEED_LANES <= n; j += HD_SEED_LANES)
        for (l = 0; l < HD_SEED_LANES; l++)
            m[l] = v[j + l] < m[l] ? v[j + l] : m[l];
    for (l = 0; j + l < n; l++)
        m[l] = v[j + l] < m[l] ? v[j + l] : m[l];
    /* the ns smallest, by insertion */
    for (l = 0; l < HD_SEED_LANES; l++) {
        HD_T x = m[l];
        if (!(x < (HD_T)INFINITY) || (c == ns && !(x < bv[c - 1])))
            continue;
        i = c < ns ? c++ : c - 1;
        for (; i > 0 && x < bv[i - 1]; i--) {
            bv[i] = bv[i - 1];
            bl[i] = bl[i - 1];
        }
        bv[i] = x;
        bl[i] = l;
    }
    for (i = 0; i < c; i++) {
        for (j = bl[i]; j < n && v[j] != bv[i]; j += HD_SEED_LANES)
            ;
        pos[i] = j;
    }
    return c;
}
