/* Bit masks of the estimates of the matrix-product filter (hdist/_search/gemm_filter.py) at
 * or below a threshold: bit j of the result is set when e[j] <= s, for n <= 64 entries.  The
 * selection then visits only the set bits instead of testing every entry of a kept chunk with a branch.  SSE2 (every x86-64) compares four floats or
 * two doubles at once; elsewhere a plain loop.  Each comparison is the one the plain C
 * expression makes (IEEE single or double operations, no contraction): the masks do not
 * depend on the path. */
#ifndef HD_GEMM_SCAN_H
#define HD_GEMM_SCAN_H

#include <stdint.h>
#include <stddef.h>

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define HD_SCAN_SSE2 1
#else
#define HD_SCAN_SSE2 0
#endif

static inline uint64_t hd_le_mask_f(const float *e, ptrdiff_t n, float s)
{
    uint64_t m = 0;
    ptrdiff_t j = 0;
#if HD_SCAN_SSE2
    __m128 vs = _mm_set1_ps(s);
    for (; j + 4 <= n; j += 4)
        m |= (uint64_t)_mm_movemask_ps(_mm_cmple_ps(_mm_loadu_ps(e + j), vs)) << j;
#endif
    for (; j < n; j++)
        m |= (uint64_t)(e[j] <= s) << j;
    return m;
}

static inline uint64_t hd_le_mask_d(const double *e, ptrdiff_t n, double s)
{
    uint64_t m = 0;
    ptrdiff_t j = 0;
#if HD_SCAN_SSE2
    __m128d vs = _mm_set1_pd(s);
    for (; j + 2 <= n; j += 2)
        m |= (uint64_t)_mm_movemask_pd(_mm_cmple_pd(_mm_loadu_pd(e + j), vs)) << j;
#endif
    for (; j < n; j++)
        m |= (uint64_t)(e[j] <= s) << j;
    return m;
}

/* index of the lowest set bit of m != 0 */
static inline int hd_ctz64(uint64_t m)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(m);
#else
    int i = 0;
    while (!(m & 1)) {
        m >>= 1;
        i++;
    }
    return i;
#endif
}

#endif
