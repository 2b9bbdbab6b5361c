/* The per-term power of a general p (pmode 3): the one function every path uses for
 * d^p -- pair_reduced and the trees (_kernels.pxd) and every variant of the tile kernel
 * (_tile.h) -- so that a pair's distance is bit-identical on every path.
 *
 * p = 0.5: sqrt(d).  IEEE 754 requires sqrt to be correctly rounded, so the term is within
 * half an ulp of the exact d^(1/2) (pow is not required to be correctly rounded; glibc's
 * is within 0.52 ulp), the same on every instruction set, and several times faster than
 * pow.  d is never -0 here (a product of fabs and a positive scale, or a sum of such), so
 * sqrt(-0) = -0 does not arise.
 */
#ifndef HDIST_PW_H
#define HDIST_PW_H

#include <math.h>

static inline double hd_pw_gen(double d, double p)
{
    return p == 0.5 ? sqrt(d) : pow(d, p);
}

#endif
