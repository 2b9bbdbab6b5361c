/* The per-attribute terms of a pair's reduced distance: one source for every variant of
 * the CPU's tile kernel (tile_body.h) and for the device kernels
 * (hdist/_kernels/cuda/knn.cu, compiled by NVRTC for a GPU or by the host compiler for
 * the emulated device), so that a term is the same floating-point operations, in the
 * same order, wherever it is computed (pair_reduced, _kernels/plan.pxd, defines them).
 *
 * pm is the tile kernel's kind of p: 0 p = inf, 1 p = 1, 2 p = 2, 3 any other p
 * (hd_pw_gen), 4 p = 0.5 (sqrt), 5 p = 3 and 6 p = 4 (hd_pw_gen's products).  Callers pass
 * it as a constant, so that the tests on it are resolved at compile time.
 *
 * No function here contracts a product and a sum into a fused multiply-add: the host
 * compiles with -ffp-contract=off and the device with --fmad=false.
 */
#ifndef HDIST_TERMS_H
#define HDIST_TERMS_H

#include "pw.h"

/* HD_TERM: a term function, always inlined (the tile kernel's loops must stay
 * vectorizable); a device function under CUDA */
#ifndef HD_TERM
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HD_TERM __device__ static __forceinline__
#elif defined(__GNUC__)
#define HD_TERM static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define HD_TERM static __forceinline
#else
#define HD_TERM static inline
#endif
#endif

/* d^p (p = inf and p = 1: d) */
HD_TERM double hd_pw_pm(double d, const int pm, double p)
{
    return pm == 2 ? d * d : (pm == 3 ? hd_pw_gen(d, p) : (pm == 4 ? sqrt(d) :
           (pm == 5 ? (d * d) * d : (pm == 6 ? (d * d) * (d * d) : d))));
}

/* the sum with one more term: max for p = inf, else the sum */
HD_TERM double hd_acc_pm(double s, double t, const int pm)
{
    return pm == 0 ? (t > s ? t : s) : s + t;
}

/* continuous attribute, both values present: cw (|x - y| ci)^p */
HD_TERM double hd_cont_term(double x, double y, double ci, double cw, const int pm, double p)
{
    double d = fabs(x - y) * ci;
    double t = hd_pw_pm(d, pm, p);
    return cw * t;
}

/* value table: the column of reference code cy (>= 0) in the query's row of a table of
 * V learned values (V: every unseen value); a missing code reads column 0, a value the
 * caller replaces by the missing term */
HD_TERM int hd_tab_col(int cy, int V)
{
    return cy < 0 ? 0 : (cy < V ? cy : V);
}

/* value table: the entry t read for codes cx, cy, or 0 for the same unseen value twice
 * (unseen: cx >= V; the learned values have T[v, v] = 0 in the table itself) */
HD_TERM double hd_tab_sel(double t, int unseen, int cx, int cy)
{
    return (unseen & (cy == cx)) ? 0.0 : t;
}

/* embedded attribute: the norm after one more coordinate, (x - y)^2 for q = 2 ... */
HD_TERM double hd_emb_q2(double n, double x, double y)
{
    double dlt = x - y;
    return n + dlt * dlt;
}

/* ... and |x - y| for q = 1 */
HD_TERM double hd_emb_q1(double n, double x, double y)
{
    return n + fabs(x - y);
}

/* embedded attribute: the weighted term rw (n^(1/q))^p of its summed norm n */
HD_TERM double hd_emb_term(double n, int q2, double rw, const int pm, double p)
{
    double t;
    if (q2 && pm == 2)
        t = n;
    else if (q2) {
        double r = sqrt(n);
        t = hd_pw_pm(r, pm, p);
    } else
        t = hd_pw_pm(n, pm, p);
    return rw * t;
}

/* the "ignore" rule (docs/metrics.md, section 6) on a sum v that skipped some attribute,
 * with known weight k: v w_all / k, or every component counted once when nothing is
 * known (p = inf: v itself, or w_max) */
HD_TERM double hd_rescale_one(double v, double k, double w_all, double w_max, const int pm)
{
    if (k > 0.0)
        return pm == 0 ? v : v * (w_all / k);
    return pm == 0 ? w_max : w_all;
}

#endif
