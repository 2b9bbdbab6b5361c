/* Products of the matrix-product filter (hdist/_gemm.py), included once per instruction
 * set by _tile.h with HD_SFX defined (a suffix for every function name) and HD_GEMM_ISA
 * (0 plain C, 1 AVX2 with FMA, 2 AVX-512).  No include guard on purpose.
 *
 * One panel of HD_GQB query rows stored attribute-major (Xt[k HD_GQB + i]; the first nqb
 * are stored, the others are padding) against npan panels of HD_GPW reference rows stored
 * the same way (Y[(p K + k) HD_GPW + j]), both made by gemm_panels (_kernels.pyx):
 *
 *     G[i ldg + p HD_GPW + j] = sum_k Xt[k HD_GQB + i] Y[(p K + k) HD_GPW + j].
 *
 * The block of estimates (HD_GQB x a few hundred floats) stays in the L1 cache for the
 * selection that follows; the reference panels are read once per block of queries.
 * These are the filter's estimates only: the vector variants use fused multiply-adds, so
 * an estimate may differ between variants in its last bits.  The filter's rounding margin
 * bounds the error of any order of the sum, with or without fused operations, and every
 * pair it keeps is then computed exactly: results do not depend on the variant. */

#if HD_GEMM_ISA == 2

static void HD_SFX(hd_gemm_blk)(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                                hd_intp K, float *G, hd_intp ldg)
{
    hd_intp i, k, p;
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
            __m512 s;
            s = _mm512_set1_ps(x[0]); a0 = _mm512_fmadd_ps(s, u, a0); b0 = _mm512_fmadd_ps(s, v, b0);
            s = _mm512_set1_ps(x[1]); a1 = _mm512_fmadd_ps(s, u, a1); b1 = _mm512_fmadd_ps(s, v, b1);
            s = _mm512_set1_ps(x[2]); a2 = _mm512_fmadd_ps(s, u, a2); b2 = _mm512_fmadd_ps(s, v, b2);
            s = _mm512_set1_ps(x[3]); a3 = _mm512_fmadd_ps(s, u, a3); b3 = _mm512_fmadd_ps(s, v, b3);
            s = _mm512_set1_ps(x[4]); a4 = _mm512_fmadd_ps(s, u, a4); b4 = _mm512_fmadd_ps(s, v, b4);
            s = _mm512_set1_ps(x[5]); a5 = _mm512_fmadd_ps(s, u, a5); b5 = _mm512_fmadd_ps(s, v, b5);
            s = _mm512_set1_ps(x[6]); a6 = _mm512_fmadd_ps(s, u, a6); b6 = _mm512_fmadd_ps(s, v, b6);
            s = _mm512_set1_ps(x[7]); a7 = _mm512_fmadd_ps(s, u, a7); b7 = _mm512_fmadd_ps(s, v, b7);
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
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[0]), u, a0);
            a1 = _mm512_fmadd_ps(_mm512_set1_ps(x[1]), u, a1);
            a2 = _mm512_fmadd_ps(_mm512_set1_ps(x[2]), u, a2);
            a3 = _mm512_fmadd_ps(_mm512_set1_ps(x[3]), u, a3);
            a4 = _mm512_fmadd_ps(_mm512_set1_ps(x[4]), u, a4);
            a5 = _mm512_fmadd_ps(_mm512_set1_ps(x[5]), u, a5);
            a6 = _mm512_fmadd_ps(_mm512_set1_ps(x[6]), u, a6);
            a7 = _mm512_fmadd_ps(_mm512_set1_ps(x[7]), u, a7);
        }
        {
            __m512 av[HD_GQB] = {a0, a1, a2, a3, a4, a5, a6, a7};
            for (i = 0; i < nqb; i++)
                _mm512_storeu_ps(G + i * ldg + p * HD_GPW, av[i]);
        }
    }
}

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
                                hd_intp K, float *G, hd_intp ldg)
{
    hd_intp p, h;
    for (h = 0; h < nqb; h += 4)
        for (p = 0; p < npan; p++)
            HD_SFX(hd_gemm_4x16)(Xt + h, nqb - h < 4 ? nqb - h : 4, Y + p * K * HD_GPW, K,
                                 G + h * ldg + p * HD_GPW, ldg);
}

#else

static void HD_SFX(hd_gemm_blk)(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                                hd_intp K, float *G, hd_intp ldg)
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
}

#endif
