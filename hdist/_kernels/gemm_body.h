/* Products of the matrix-product filter (hdist/_search/gemm_filter.py), included once per
 * instruction set by tile.h with HD_SFX defined (a suffix for every function name) and HD_GEMM_ISA
 * (0 plain C, 1 AVX2 with FMA, 2 AVX-512).  No include guard on purpose.
 *
 * One panel of HD_GQB query rows stored attribute-major (Xt[k HD_GQB + i]; the first nqb
 * are stored, the others are padding) against npan panels of HD_GPW reference rows stored
 * the same way (Y[(p K + k) HD_GPW + j]), both made by gemm_panels (gemm.pyx):
 *
 *     G[i ldg + p HD_GPW + j] = sum_k Xt[k HD_GQB + i] Y[(p K + k) HD_GPW + j].
 *
 * The block of estimates (HD_GQB x up to GEMM_BLOCK_ROWS floats) stays in the cache for
 * the selection that follows; the reference panels are read once per block of queries.
 * These are the filter's estimates only: the vector variants use fused multiply-adds, so
 * an estimate may differ between variants in its last bits.  The filter's rounding margin
 * bounds the error of any order of the sum, with or without fused operations, and every
 * pair it keeps is then computed exactly: results do not depend on the variant.
 *
 * With add (hd_gadd, NULL: none), a query row i with a table add->tab[i] gets its tested
 * values instead of its estimates, while they are still in registers:
 *
 *     ((G + col_0) + ... + col_{nm-1}) + (tab[a] + tab[b]),   ab[j] = a + 256 b,
 *
 * col_t the row j entries of add->gy + add->mi[i][t] add->gstride (without add->ab, the
 * columns alone: no table term, the row's tab only marks it), the sums hd_prep
 * (hdist/_kernels/scan_body.h) makes from the stored estimates, operation for operation (plain
 * float additions, no contraction).  With add->bf16 (HD_GEMM_ISA 3) the two entries come
 * from the tables rounded down to bfloat16 and one dot product adds them (at most two
 * roundings, subnormals flushed): lower values, which the selection's recheck accounts
 * for.  The codes and columns of rows past add->nt (the padding of a last panel) are not
 * read; those rows' values are unspecified. */

#if HD_GEMM_ISA < 2
/* the additions of add for the query rows of G whose table is given, rows [0, nt), after
 * the products (the AVX-512 form makes them in registers) */
static void HD_SFX(hd_gemm_adds)(float *G, hd_intp nqb, hd_intp ldg, const hd_gadd *add)
{
    hd_intp i, j, t, nt = add->nt;
    const unsigned short *HD_RESTRICT ab = add->ab;
    for (i = 0; i < nqb; i++) {
        const float *HD_RESTRICT tab = add->tab[i];
        float *HD_RESTRICT g = G + i * ldg;
        if (!tab)
            continue;
        /* column after column, then the table: loops the compiler vectorizes */
        for (t = 0; t < add->nm[i]; t++) {
            const float *HD_RESTRICT col = add->gy + add->mi[i][t] * add->gstride;
            for (j = 0; j < nt; j++)
                g[j] = g[j] + col[j];
        }
        if (ab)
            for (j = 0; j < nt; j++)
                g[j] = g[j] + (tab[ab[j] & 255] + tab[ab[j] >> 8]);
    }
}
#endif

#if HD_GEMM_ISA >= 2

/* the block's 8 query rows' sums of two panels, a0..a7 and b0..b7 (of one panel: a0..a7),
 * plus x[i] times the panels' vectors u and v (u): the product's step, also the step of a
 * column the whole block adds (hd_gemm_union) */
#define HD_FMA8X2(x, u, v)                                                                  \
    do {                                                                                    \
        __m512 s_;                                                                          \
        s_ = _mm512_set1_ps((x)[0]); a0 = _mm512_fmadd_ps(s_, u, a0); b0 = _mm512_fmadd_ps(s_, v, b0); \
        s_ = _mm512_set1_ps((x)[1]); a1 = _mm512_fmadd_ps(s_, u, a1); b1 = _mm512_fmadd_ps(s_, v, b1); \
        s_ = _mm512_set1_ps((x)[2]); a2 = _mm512_fmadd_ps(s_, u, a2); b2 = _mm512_fmadd_ps(s_, v, b2); \
        s_ = _mm512_set1_ps((x)[3]); a3 = _mm512_fmadd_ps(s_, u, a3); b3 = _mm512_fmadd_ps(s_, v, b3); \
        s_ = _mm512_set1_ps((x)[4]); a4 = _mm512_fmadd_ps(s_, u, a4); b4 = _mm512_fmadd_ps(s_, v, b4); \
        s_ = _mm512_set1_ps((x)[5]); a5 = _mm512_fmadd_ps(s_, u, a5); b5 = _mm512_fmadd_ps(s_, v, b5); \
        s_ = _mm512_set1_ps((x)[6]); a6 = _mm512_fmadd_ps(s_, u, a6); b6 = _mm512_fmadd_ps(s_, v, b6); \
        s_ = _mm512_set1_ps((x)[7]); a7 = _mm512_fmadd_ps(s_, u, a7); b7 = _mm512_fmadd_ps(s_, v, b7); \
    } while (0)
#define HD_FMA8(x, u)                                                                       \
    do {                                                                                    \
        a0 = _mm512_fmadd_ps(_mm512_set1_ps((x)[0]), u, a0);                                \
        a1 = _mm512_fmadd_ps(_mm512_set1_ps((x)[1]), u, a1);                                \
        a2 = _mm512_fmadd_ps(_mm512_set1_ps((x)[2]), u, a2);                                \
        a3 = _mm512_fmadd_ps(_mm512_set1_ps((x)[3]), u, a3);                                \
        a4 = _mm512_fmadd_ps(_mm512_set1_ps((x)[4]), u, a4);                                \
        a5 = _mm512_fmadd_ps(_mm512_set1_ps((x)[5]), u, a5);                                \
        a6 = _mm512_fmadd_ps(_mm512_set1_ps((x)[6]), u, a6);                                \
        a7 = _mm512_fmadd_ps(_mm512_set1_ps((x)[7]), u, a7);                                \
    } while (0)

/* the mask of the rows of the panel at row r0 of the block that exist (below add->nt) */
static HD_INLINE __mmask16 HD_SFX(hd_gemm_rows)(const hd_gadd *add, hd_intp r0)
{
    hd_intp left = add->nt - r0;
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}

/* the codes of the panel at row r0 of the block, widened (rows past nt, or no ab: 0):
 * a + 256 b in each 32-bit lane, or with bfloat16 tables (HD_GEMM_ISA 3) a in its low half
 * and b in its high half, the indices of a permutation of 16-bit entries */
static HD_INLINE __m512i HD_SFX(hd_gemm_codes)(const hd_gadd *add, hd_intp r0, __mmask16 mk)
{
    __m512i x;
    if (!add->ab)
        return _mm512_setzero_si512();       /* no table: not read */
    x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, add->ab + r0));
#if HD_GEMM_ISA == 3
    x = _mm512_or_si512(_mm512_and_si512(x, _mm512_set1_epi32(255)),
                        _mm512_slli_epi32(_mm512_srli_epi32(x, 8), 16));
#endif
    return x;
}

/* add's terms for query row n to the sums *a of the panel at row r0 of the block and,
 * when b is not NULL, *b of the next one: its first nm columns (0: the union of the
 * block's columns was added already, hd_gemm_union), then its table; ia, ja (ib, jb) the
 * first and second codes of their rows (the permutation reads the low 5 bits of each
 * index), ma (mb) the rows that exist */
static HD_INLINE void HD_SFX(hd_gemm_add)(const hd_gadd *add, hd_intp n, hd_intp r0,
                                          hd_intp nm, __mmask16 ma, __m512i ia, __m512i ja,
                                          __m512 *a, __mmask16 mb, __m512i ib, __m512i jb,
                                          __m512 *b)
{
    hd_intp t;
    for (t = 0; t < nm; t++) {
        const float *col = add->gy + add->mi[n][t] * add->gstride + r0;
        *a = _mm512_add_ps(*a, _mm512_maskz_loadu_ps(ma, col));
        if (b)
            *b = _mm512_add_ps(*b, _mm512_maskz_loadu_ps(mb, col + HD_GPW));
    }
    if (!add->ab)
        return;     /* the columns alone */
    {
#if HD_GEMM_ISA == 3
    __m512i t16 = _mm512_loadu_si512((const void *)add->t16[n]);
    __m512i one = _mm512_set1_epi16(0x3F80);      /* 1.0 in bfloat16 */
#else
    const float *tab = add->tab[n];
    __m512 tlo = _mm512_loadu_ps(tab), thi = _mm512_loadu_ps(tab + 16);
#endif
#if HD_GEMM_ISA == 3
    /* each lane's two entries, tab[a] and tab[b], side by side, and their sum with the
     * lane's value by one dot product with (1, 1) (rounded to nearest, subnormals
     * flushed to zero: at most two roundings of the sum, and 1e-38, which the
     * selection's margin covers) */
    (void)ja;
    (void)jb;
    *a = _mm512_dpbf16_ps(*a, (__m512bh)_mm512_permutexvar_epi16(ia, t16), (__m512bh)one);
    if (b)
        *b = _mm512_dpbf16_ps(*b, (__m512bh)_mm512_permutexvar_epi16(ib, t16),
                              (__m512bh)one);
#else
    *a = _mm512_add_ps(*a, _mm512_add_ps(_mm512_permutex2var_ps(tlo, ia, thi),
                                         _mm512_permutex2var_ps(tlo, ja, thi)));
    if (b)
        *b = _mm512_add_ps(*b, _mm512_add_ps(_mm512_permutex2var_ps(tlo, ib, thi),
                                             _mm512_permutex2var_ps(tlo, jb, thi)));
#endif
    }
}

static void HD_SFX(hd_gemm_blk)(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                                hd_intp K, float *G, hd_intp ldg, const hd_gadd *add)
{
    hd_intp i, k, p, w, nu = -1;
    const float *ucol[HD_GEMM_UNION];
    const float(*ucoef)[HD_GQB] = NULL;
    if (add) {
        /* the block's union of columns, merged by the caller (hd_gemm_union_set) once for
         * all the blocks of reference rows this block of queries meets */
        nu = add->nu;
        ucoef = (const float(*)[HD_GQB])add->uc;
        for (w = 0; w < nu; w++)
            ucol[w] = add->gy + add->ua[w] * add->gstride;
    }
    for (p = 0; p + 1 < npan; p += 2) {
        /* two panels (32 rows) at a time: 16 independent sums, two loads per 16 FMAs */
        const float *y = Y + p * K * HD_GPW;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
               a6 = a0, a7 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0, b4 = a0, b5 = a0,
               b6 = a0, b7 = a0;
        for (k = 0; k < K; k++) {
            const float *x = Xt + k * HD_GQB;
            __m512 u = _mm512_loadu_ps(y + k * HD_GPW);
            __m512 v = _mm512_loadu_ps(y + (K + k) * HD_GPW);
            HD_FMA8X2(x, u, v);
        }
        if (add) {
            /* named sums, not an array indexed at run time: they stay in registers; the
             * codes and masks are shared by the query rows */
            __mmask16 ma = HD_SFX(hd_gemm_rows)(add, p * HD_GPW);
            __mmask16 mb = HD_SFX(hd_gemm_rows)(add, (p + 1) * HD_GPW);
            __m512i ia = HD_SFX(hd_gemm_codes)(add, p * HD_GPW, ma);
            __m512i ib = HD_SFX(hd_gemm_codes)(add, (p + 1) * HD_GPW, mb);
            __m512i ja = _mm512_srli_epi32(ia, 8), jb = _mm512_srli_epi32(ib, 8);
            for (w = 0; w < nu; w++) {
                /* a column of the block's union as one more term of the product */
                const float *x = ucoef[w];
                const float *col = ucol[w] + p * HD_GPW;
                __m512 cu = _mm512_maskz_loadu_ps(ma, col);
                __m512 cv = _mm512_maskz_loadu_ps(mb, col + HD_GPW);
                HD_FMA8X2(x, cu, cv);
            }
#define HD_ADD2(n)                                                                     \
            if (nqb > n && add->tab[n])                                                \
                HD_SFX(hd_gemm_add)(add, n, p * HD_GPW, nu < 0 ? add->nm[n] : 0, ma, ia, ja, \
                                    &a##n, mb, ib, jb, &b##n);
            HD_ADD2(0) HD_ADD2(1) HD_ADD2(2) HD_ADD2(3)
            HD_ADD2(4) HD_ADD2(5) HD_ADD2(6) HD_ADD2(7)
#undef HD_ADD2
        }
        {
            __m512 av[HD_GQB] = {a0, a1, a2, a3, a4, a5, a6, a7};
            __m512 bv[HD_GQB] = {b0, b1, b2, b3, b4, b5, b6, b7};
            for (i = 0; i < nqb; i++) {
                _mm512_storeu_ps(G + i * ldg + p * HD_GPW, av[i]);
                _mm512_storeu_ps(G + i * ldg + (p + 1) * HD_GPW, bv[i]);
            }
        }
    }
    for (; p < npan; p++) {
        const float *y = Y + p * K * HD_GPW;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0,
               a6 = a0, a7 = a0;
        for (k = 0; k < K; k++) {
            const float *x = Xt + k * HD_GQB;
            __m512 u = _mm512_loadu_ps(y + k * HD_GPW);
            HD_FMA8(x, u);
        }
        if (add) {
            __mmask16 ma = HD_SFX(hd_gemm_rows)(add, p * HD_GPW);
            __m512i ia = HD_SFX(hd_gemm_codes)(add, p * HD_GPW, ma);
            __m512i ja = _mm512_srli_epi32(ia, 8);
            for (w = 0; w < nu; w++) {
                const float *x = ucoef[w];
                __m512 cu = _mm512_maskz_loadu_ps(ma, ucol[w] + p * HD_GPW);
                HD_FMA8(x, cu);
            }
#define HD_ADD1(n)                                                                     \
            if (nqb > n && add->tab[n])                                                \
                HD_SFX(hd_gemm_add)(add, n, p * HD_GPW, nu < 0 ? add->nm[n] : 0, ma, ia, ja, \
                                    &a##n, ma, ia, ja, NULL);
            HD_ADD1(0) HD_ADD1(1) HD_ADD1(2) HD_ADD1(3)
            HD_ADD1(4) HD_ADD1(5) HD_ADD1(6) HD_ADD1(7)
#undef HD_ADD1
        }
        {
            __m512 av[HD_GQB] = {a0, a1, a2, a3, a4, a5, a6, a7};
            for (i = 0; i < nqb; i++)
                _mm512_storeu_ps(G + i * ldg + p * HD_GPW, av[i]);
        }
    }
}

#undef HD_FMA8X2
#undef HD_FMA8

#elif HD_GEMM_ISA == 1

/* four query rows against one panel (two 8-float halves): 8 sums in 16 registers */
static HD_INLINE void HD_SFX(hd_gemm_4x16)(const float *Xt, hd_intp n4, const float *y,
                                           hd_intp K, float *G, hd_intp ldg)
{
    hd_intp i, k;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0,
           b3 = a0;
    for (k = 0; k < K; k++) {
        const float *x = Xt + k * HD_GQB;
        __m256 u = _mm256_loadu_ps(y + k * HD_GPW);
        __m256 v = _mm256_loadu_ps(y + k * HD_GPW + 8);
        __m256 s;
        s = _mm256_broadcast_ss(x + 0); a0 = _mm256_fmadd_ps(s, u, a0); b0 = _mm256_fmadd_ps(s, v, b0);
        s = _mm256_broadcast_ss(x + 1); a1 = _mm256_fmadd_ps(s, u, a1); b1 = _mm256_fmadd_ps(s, v, b1);
        s = _mm256_broadcast_ss(x + 2); a2 = _mm256_fmadd_ps(s, u, a2); b2 = _mm256_fmadd_ps(s, v, b2);
        s = _mm256_broadcast_ss(x + 3); a3 = _mm256_fmadd_ps(s, u, a3); b3 = _mm256_fmadd_ps(s, v, b3);
    }
    {
        __m256 av[4] = {a0, a1, a2, a3};
        __m256 bv[4] = {b0, b1, b2, b3};
        for (i = 0; i < n4; i++) {
            _mm256_storeu_ps(G + i * ldg, av[i]);
            _mm256_storeu_ps(G + i * ldg + 8, bv[i]);
        }
    }
}

static void HD_SFX(hd_gemm_blk)(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                                hd_intp K, float *G, hd_intp ldg, const hd_gadd *add)
{
    hd_intp p, h;
    for (h = 0; h < nqb; h += 4)
        for (p = 0; p < npan; p++)
            HD_SFX(hd_gemm_4x16)(Xt + h, nqb - h < 4 ? nqb - h : 4, Y + p * K * HD_GPW, K,
                                 G + h * ldg + p * HD_GPW, ldg);
    if (add)
        HD_SFX(hd_gemm_adds)(G, nqb, ldg, add);
}

#else

static void HD_SFX(hd_gemm_blk)(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                                hd_intp K, float *G, hd_intp ldg, const hd_gadd *add)
{
    hd_intp i, j, k, p;
    for (i = 0; i < nqb; i++) {
        const float *x = Xt + i;
        for (p = 0; p < npan; p++) {
            const float *y = Y + p * K * HD_GPW;
            float acc[HD_GPW];
            for (j = 0; j < HD_GPW; j++)
                acc[j] = 0.0f;
            for (k = 0; k < K; k++) {
                float xk = x[k * HD_GQB];
                for (j = 0; j < HD_GPW; j++)
                    acc[j] = acc[j] + xk * y[k * HD_GPW + j];
            }
            for (j = 0; j < HD_GPW; j++)
                G[i * ldg + p * HD_GPW + j] = acc[j];
        }
    }
    if (add)
        HD_SFX(hd_gemm_adds)(G, nqb, ldg, add);
}

#endif
