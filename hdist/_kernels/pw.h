/* The per-term power of a general p (pmode 3): the one function every path uses for
 * d^p -- pair_reduced and the trees (_kernels/plan.pxd) and every variant of the tile kernel
 * (tile.h) -- so that a pair's distance is bit-identical on every path.
 *
 * p = 0.5: sqrt(d).  IEEE 754 requires sqrt to be correctly rounded, so the term is within
 * half an ulp of the exact d^(1/2) (pow is not required to be correctly rounded; glibc's
 * is within 0.52 ulp), the same on every instruction set, and several times faster than
 * pow.  d is never -0 here (a product of fabs and a positive scale, or a sum of such), so
 * sqrt(-0) = -0 does not arise.
 *
 * p = 3 and p = 4: products, (d * d) * d and (d * d) * (d * d).  Each rounding is monotone,
 * so the term never decreases as d grows (the trees' bounds rely on it); the relative
 * error is below 2 ulps (3 for p = 4), far inside the 1e-12 the distances promise; and a
 * multiplication is the same on every instruction set and vectorizes, where pow costs
 * about 20 ns.  Overflow gives +inf and underflow 0 as pow does; sums outside the safe
 * range are recomputed on scaled terms by the callers, as for every p.
 */
#ifndef HDIST_PW_H
#define HDIST_PW_H

/* HD_FN qualifies the functions shared by the host's kernels and the device's
 * (hdist/_kernels/cuda/knn.cu, compiled by NVRTC, or by the host compiler for the
 * emulated device): "static inline" on the host, a device function under CUDA. */
#ifndef HD_FN
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HD_FN __device__ static inline
#else
#define HD_FN static inline
#endif
#endif

#if !defined(__CUDACC_RTC__)
#include <math.h>
#endif

HD_FN double hd_pw_gen(double d, double p)
{
    double s;
    if (p == 0.5)
        return sqrt(d);
    if (p == 3.0)
        return (d * d) * d;
    if (p == 4.0) {
        s = d * d;
        return s * s;
    }
    return pow(d, p);
}

#endif
