/* Tile kernel of hdist: reduced distances of one query row against a block of reference
 * rows stored attribute-major, compiled once per instruction set and chosen at import.
 *
 * The kernel sees only arrays: hd_tplan (per-attribute constants of a fitted plan),
 * hd_tq (one query row, row-major) and hd_tr (reference rows, attribute-major, ld apart).
 * Every variant performs, for every pair, the floating-point operations of pair_reduced
 * (_kernels/plan.pxd) in the same order, without contraction into fused multiply-adds
 * (-ffp-contract=off), so results are identical on every instruction set.
 */
#ifndef HDIST_TILE_H
#define HDIST_TILE_H

#include "tile_types.h"

/* The columns the block's query rows with a table add (the first nqb rows of add),
 * merged: the attributes in increasing order (ua, at most HD_GEMM_UNION) and per
 * attribute a coefficient per query row, 1 when the row adds it, else 0 (uc).  Returns
 * their number, or -1 when the rows add them one by one instead: a row's columns not in
 * increasing order (the merged order must be each row's own), more than HD_GEMM_UNION of
 * them, or a union so wide that adding each column to every row of the block costs more
 * than the rows' own additions.  Added as fused multiply-adds, 1 g + e rounds as e + g and
 * 0 g + e is e (g finite), so each row gets its columns' sums in its own order, exactly as
 * one by one.  It depends on the query rows only: a caller that meets the same block of
 * queries against several blocks of reference rows merges once (hd_gemm_union_set). */
static inline hd_intp hd_gemm_union(const hd_gadd *add, hd_intp nqb, hd_intp ua[HD_GEMM_UNION],
                                    float uc[HD_GEMM_UNION][HD_GQB])
{
    hd_intp n, t, u, nu = 0, pairs = 0, a, pos[HD_GQB];
    for (n = 0; n < nqb; n++) {
        pos[n] = 0;
        if (!add->tab[n])
            continue;
        for (t = 1; t < add->nm[n]; t++)
            if (add->mi[n][t] <= add->mi[n][t - 1])
                return -1;
        pairs += add->nm[n];
    }
    if (pairs == 0)
        return -1;
    /* merge: the smallest attribute any row has not taken yet, until none is left */
    for (;;) {
        a = -1;
        for (n = 0; n < nqb; n++)
            if (add->tab[n] && pos[n] < add->nm[n] && (a < 0 || add->mi[n][pos[n]] < a))
                a = add->mi[n][pos[n]];
        if (a < 0)
            break;
        if (nu == HD_GEMM_UNION)
            return -1;
        ua[nu] = a;
        for (u = 0; u < HD_GQB; u++)
            uc[nu][u] = 0.0f;
        for (n = 0; n < nqb; n++)
            if (add->tab[n] && pos[n] < add->nm[n] && add->mi[n][pos[n]] == a) {
                uc[nu][n] = 1.0f;
                pos[n]++;
            }
        nu++;
    }
    /* a column for the whole block: 2 loads, 8 broadcasts and 16 multiply-adds per
     * 32 rows; a row's own: about 2 loads, 2 additions and 5 instructions of its loop */
    return 26 * nu <= 9 * pairs ? nu : -1;
}

/* add->nu, ua and uc from the first nqb rows of add (hd_gemm_union) */
static inline void hd_gemm_union_set(hd_gadd *add, hd_intp nqb)
{
    add->nu = hd_gemm_union(add, nqb, add->ua, add->uc);
}

/* The baseline variant, compiled into each module that includes this file; the others are
 * in hdist/_kernels/isa/ (tile_types.h). */
#define HD_SFX(name) name##_base
#define HD_GEMM_ISA 0
#include "tile_body.h"
#include "gemm_body.h"
#undef HD_GEMM_ISA
#undef HD_SFX
#define HD_T float
#define HD_SFX(name) name##_f_base
#include "scan_body.h"
#undef HD_SFX
#undef HD_T
/* the float64 product (features beyond float32's range) is rare: its scan is compiled
 * for the baseline only */
#define HD_T double
#define HD_SFX(name) name##_d
#include "scan_body.h"
#undef HD_SFX
#undef HD_T

#define HD_NISA 3
static const char *hd_isa_names[HD_NISA] = {"baseline", "avx2", "avx512"};
static int hd_isa = 0;
/* 1: the AVX-512 variant's product adds the bfloat16 tables (hd_gemm_blk); set only when
 * the machine has AVX512_BF16 (hd_bf16_set) */
static int hd_bf16 = 0;

/* The tile kernel's entry points of variant isa, one per kind of p.  The tables are named
 * only in inline functions, so that a module that calls none of the tile kernel (or of the
 * filter, hd_filter_fns_of) needs no variant of it linked, whatever the optimization. */
static inline const hd_tile_fn *hd_tile_fns_of(int isa)
{
    static const hd_tile_fn base[HD_NPMODE] = {
        hd_tile_inf_base, hd_tile_l1_base, hd_tile_l2_base, hd_tile_gen_base,
        hd_tile_half_base, hd_tile_cube_base, hd_tile_quart_base};
#if HD_X86_DISPATCH
    static const hd_tile_fn *const fns[HD_NISA] = {base, hd_tile_fns_avx2, hd_tile_fns_avx512};
#else
    static const hd_tile_fn *const fns[HD_NISA] = {base, NULL, NULL};
#endif
    return fns[isa];
}

/* the filter's float entry points of variant isa */
static inline const hd_filter_fns *hd_filter_fns_of(int isa)
{
    static const hd_filter_fns base = {hd_gemm_blk_base, hd_scan_f_base, hd_prep_f_base,
                                       hd_seeds_f_base};
#if HD_X86_DISPATCH
    static const hd_filter_fns *const fns[HD_NISA] = {&base, &hd_filter_fns_avx2,
                                                      &hd_filter_fns_avx512};
#else
    static const hd_filter_fns *const fns[HD_NISA] = {&base, NULL, NULL};
#endif
    return fns[isa];
}
/* 1 when this machine runs variant isa */
static int hd_isa_available(int isa)
{
    if (isa == 0)
        return 1;
#if HD_X86_DISPATCH
    __builtin_cpu_init();
    if (isa == 1)
        return __builtin_cpu_supports("avx2");
    if (isa == 2)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
               && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
#endif
    return 0;
}

/* 1 when this machine has AVX512_BF16 (and the AVX-512 variant) */
static int hd_bf16_available(void)
{
#if HD_X86_DISPATCH && HD_HAVE_BF16
    return hd_isa_available(2) && __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

/* use (on = 1) or not the bfloat16 tables; 0 on success, -1 when unavailable */
static int hd_bf16_set(int on)
{
    if (on && !hd_bf16_available())
        return -1;
    hd_bf16 = on != 0;
    return 0;
}

/* the best variant this machine runs */
static int hd_isa_best(void)
{
    int isa;
    for (isa = HD_NISA - 1; isa > 0; isa--)
        if (hd_isa_available(isa))
            return isa;
    return 0;
}

/* select a variant (call with no kernel running); 0 on success, -1 when unavailable */
static int hd_isa_set(int isa)
{
    if (isa < 0 || isa >= HD_NISA || !hd_isa_available(isa))
        return -1;
    hd_isa = isa;
    return 0;
}

/* Reduced distances s[0..nb) of query Q to reference rows j0 .. j0 + nb (nb <= HD_TB):
 * pair_reduced's value, or for a row whose value exceeds bound possibly another value
 * above bound (as pair_reduced's early exit).  Returns 1 when the rows were abandoned
 * because every partial sum (after a block of attributes) exceeded bound, so that every
 * final value does; s is then meaningless. */
static inline int hd_tile(const hd_tplan *P, const hd_tq *Q, const hd_tr *R, hd_intp j0,
                          hd_intp nb, double bound, double *s)
{
    return hd_tile_fns_of(hd_isa)[P->pmode](P, Q, R, j0, nb, bound, s);
}

/* The filter's estimates of a panel of query rows (the first nqb <= HD_GQB of it) against
 * npan panels of reference rows (hdist/_kernels/gemm_body.h):
 * G[i ldg + p HD_GPW + j] = sum_k Xt[k HD_GQB + i] Y[(p K + k) HD_GPW + j], and with add
 * (NULL: none) the tested values of the rows with a table instead. */
static inline void hd_gemm_blk(const float *Xt, hd_intp nqb, const float *Y, hd_intp npan,
                               hd_intp K, float *G, hd_intp ldg, const hd_gadd *add)
{
#if HD_X86_DISPATCH && HD_HAVE_BF16
    if (add && add->bf16) {
        hd_gemm_fn_avx512bf(Xt, nqb, Y, npan, K, G, ldg, add);
        return;
    }
#endif
    hd_filter_fns_of(hd_isa)->gemm(Xt, nqb, Y, npan, K, G, ldg, add);
}

/* a bfloat16 value (its bits) as a float: exact */
static inline float hd_bf16_float(unsigned short h)
{
    union {
        unsigned int u;
        float f;
    } v;
    v.u = (unsigned int)h << 16;
    return v.f;
}

/* the upper half of a float's bits: the float rounded toward zero to bfloat16 */
static inline unsigned short hd_bf16_bits(float f)
{
    union {
        unsigned int u;
        float f;
    } v;
    v.f = f;
    return (unsigned short)(v.u >> 16);
}

/* 1 when the filter's product should add the bfloat16 tables (add->bf16) rather than the
 * float ones: read once per block, so that the product and the selection agree */
static inline int hd_gemm_bf16(void)
{
    return hd_bf16 && hd_isa == 2;
}

/* The filter's chunk scan (hdist/_kernels/scan_body.h): the first chunk in [c_first, c_end) of a
 * row of float values with one at or below its threshold th[c - c_first], or c_end
 * (hd_scan_d, the same for double values, is defined above). */
static inline hd_intp hd_scan_f(const float *g, hd_intp n, hd_intp rc, hd_intp c_first,
                                hd_intp c_end, const float *th)
{
    return hd_filter_fns_of(hd_isa)->scan(g, n, rc, c_first, c_end, th);
}

/* The first rows offered to a k-NN heap, from a float row of tested values
 * (hdist/_kernels/scan_body.h; hd_seeds_d, the same for double values, is defined above). */
static inline hd_intp hd_seeds_f(const float *v, hd_intp n, hd_intp ns, hd_intp *pos)
{
    return hd_filter_fns_of(hd_isa)->seeds(v, n, ns, pos);
}

/* The values the chunk scan tests for a float query row with missing values
 * (hdist/_kernels/scan_body.h; hd_prep_d, the same in double, is defined above). */
static inline void hd_prep_f(const float *g, hd_intp n, hd_intp rc, const float *th1,
                             const float *gy, hd_intp gstride, const hd_intp *mi, hd_intp nm,
                             const float *hc, float hm, const unsigned short *ab,
                             const float *tab, float *v)
{
    hd_filter_fns_of(hd_isa)->prep(g, n, rc, th1, gy, gstride, mi, nm, hc, hm, ab, tab, v);
}

#endif
