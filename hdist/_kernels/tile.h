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

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pw.h"
#include "terms.h"

typedef ptrdiff_t hd_intp;

#if defined(_MSC_VER) && !defined(__cplusplus) && !defined(inline)
#define inline __inline     /* MSVC's C mode before C11 */
#endif

/* most reference rows per call */
#define HD_TB 512

typedef struct {
    hd_intp mc, mo, mt, me;
    int pmode;                 /* 0: p = inf, 1: p = 1, 2: p = 2, 3: other p, 4: p = 0.5,
                                  5: p = 3, 6: p = 4 */
    double p;
    int ign;                   /* some attribute uses the "ignore" policy */
    double w_all, w_max;
    int ign_unit;              /* every weight counted by "ignore" is ign_w, and every sum
                                  of n <= m of them is n ign_w exactly: the known weight is
                                  ign_all - ign_w * (skipped count), not summed per row */
    double ign_w, ign_all;
    const double *c_inv;       /* continuous: d = |x - y| * c_inv */
    const double *c_tw;        /* continuous: term = c_tw * d^p */
    const double *c_both;
    const double *c_rw;        /* weights counted by the "ignore" rule */
    const unsigned char *c_ign;
    const double *o_w, *o_miss, *o_rw;
    const unsigned char *o_ign;
    const double *t_tab;
    const hd_intp *t_off;
    const int *t_V;
    const double *t_miss, *t_rw;
    const unsigned char *t_ign;
    const hd_intp *e_off;
    const unsigned char *e_q;
    const double *e_miss, *e_rw;
    const unsigned char *e_ign;
} hd_tplan;

typedef struct {
    const double *c, *cpen;
    const int *o, *t;
    const double *e;
} hd_tq;

typedef struct {
    hd_intp ld;                /* distance between two attributes' rows */
    const double *c, *cpen;    /* [mc, ld] */
    const int *o, *t;          /* [mo, ld], [mt, ld] */
    const double *e;           /* [D, ld] */
} hd_tr;

/* the "ignore" bookkeeping of a tile: per-row known weight kw and skipped count ns, held
 * as one value (K, NS) while every row has the same (uni) */
typedef struct {
    double *kw, *ns;
    int uni;
    double K, NS;
} hd_ignst;

typedef int (*hd_tile_fn)(const hd_tplan *, const hd_tq *, const hd_tr *, hd_intp, hd_intp,
                          double, double *);

#if defined(__GNUC__)
#define HD_RESTRICT __restrict__
#define HD_INLINE inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define HD_RESTRICT __restrict
#define HD_INLINE __inline
#else
#define HD_RESTRICT
#define HD_INLINE inline
#endif

/* the matrix-product filter's blocks: query rows per block, reference rows per panel */
#define HD_GQB 8
#define HD_GPW 16
/* most columns a block of queries adds as terms of its product (hd_gemm_union) */
#define HD_GEMM_UNION 16
/* most columns the AVX-512 filter adds in one pass (hdist/_kernels/scan_body.h) */
#define HD_PREP_COLS 64
/* the first rows offered to a k-NN heap (hd_seeds, hdist/_kernels/scan_body.h): at most
 * HD_SEED_MAX, from groups of the row interleaved HD_SEED_LANES apart */
#define HD_SEED_MAX 16
#define HD_SEED_LANES 64

/* What the filter's product adds to the estimates of a block of reference rows before
 * storing them (hdist/_kernels/gemm_body.h), per query row of a panel: the columns of the
 * attributes it misses and its table of bounds looked up by the rows' codes.  With the
 * float tables these are the values hd_prep computes from the stored estimates, in the
 * same order of additions; with bf16 set, the bfloat16 tables' (a dot product). */
typedef struct {
    const unsigned short *ab;     /* the codes of the block's rows (miss_codes), from its first
                                   * (NULL: no table is added, only the columns) */
    const float *gy;              /* the added columns, from the block's first row */
    hd_intp gstride;              /* distance between two columns of gy */
    hd_intp nt;                   /* rows of the block (the last panel may be partial) */
    const float *tab[HD_GQB];     /* per query row: its 32 entries (NULL: the product alone;
                                   * not read when ab is NULL) */
    const unsigned short *t16[HD_GQB];  /* the same rounded down to bfloat16 (given with
                                         * every table when bf16 is set) */
    const hd_intp *mi[HD_GQB];    /* per query row: the columns it adds */
    hd_intp nm[HD_GQB];           /* and their number */
    int bf16;                     /* 1: the bfloat16 tables, with the AVX512_BF16 variant
                                   * (set from hd_gemm_bf16(), read once per block) */
    /* the rows' columns merged (hd_gemm_union_set, before the product): their number (-1:
     * none, the rows add their own), attributes and coefficients */
    hd_intp nu;
    hd_intp ua[HD_GEMM_UNION];
    float uc[HD_GEMM_UNION][HD_GQB];
} hd_gadd;

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

typedef void (*hd_gemm_fn)(const float *, hd_intp, const float *, hd_intp, hd_intp, float *,
                           hd_intp, const hd_gadd *);

typedef hd_intp (*hd_scan_fn)(const float *, hd_intp, hd_intp, hd_intp, hd_intp,
                              const float *);
typedef hd_intp (*hd_seeds_fn)(const float *, hd_intp, hd_intp, hd_intp *);
typedef void (*hd_prep_fn)(const float *, hd_intp, hd_intp, const float *, const float *,
                           hd_intp, const hd_intp *, hd_intp, const float *, float,
                           const unsigned short *, const float *, float *);

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

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(HDIST_NO_DISPATCH)
#define HD_X86_DISPATCH 1
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2")
#define HD_SFX(name) name##_avx2
#include "tile_body.h"
#undef HD_SFX
#define HD_T float
#define HD_SFX(name) name##_f_avx2
#include "scan_body.h"
#undef HD_SFX
#undef HD_T
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define HD_SFX(name) name##_avx2
#define HD_GEMM_ISA 1
#include "gemm_body.h"
#undef HD_GEMM_ISA
#undef HD_SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")
#define HD_SFX(name) name##_avx512
#define HD_GEMM_ISA 2
#include "tile_body.h"
#include "gemm_body.h"
#undef HD_GEMM_ISA
#undef HD_SFX
#define HD_T float
#define HD_SFX(name) name##_f_avx512
#define HD_SCAN_VPERM 1
#include "scan_body.h"
#undef HD_SCAN_VPERM
#undef HD_SFX
#undef HD_T
#pragma GCC pop_options
/* the product with the tables in bfloat16 (one permutation and one dot product per panel
 * and query row instead of two permutations and two additions): the AVX-512 variant on
 * machines that have AVX512_BF16 (GCC 10 and later compile it) */
#if __GNUC__ >= 10
#define HD_HAVE_BF16 1
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,prefer-vector-width=512")
#define HD_SFX(name) name##_avx512bf
#define HD_GEMM_ISA 3
#include "gemm_body.h"
#undef HD_GEMM_ISA
#undef HD_SFX
#pragma GCC pop_options
#else
#define HD_HAVE_BF16 0
#endif
#else
#define HD_X86_DISPATCH 0
#define HD_HAVE_BF16 0
#endif

#define HD_NISA 3
static const char *hd_isa_names[HD_NISA] = {"baseline", "avx2", "avx512"};
static hd_tile_fn hd_fns[HD_NISA][7] = {
    {hd_tile_inf_base, hd_tile_l1_base, hd_tile_l2_base, hd_tile_gen_base, hd_tile_half_base,
     hd_tile_cube_base, hd_tile_quart_base},
#if HD_X86_DISPATCH
    {hd_tile_inf_avx2, hd_tile_l1_avx2, hd_tile_l2_avx2, hd_tile_gen_avx2, hd_tile_half_avx2,
     hd_tile_cube_avx2, hd_tile_quart_avx2},
    {hd_tile_inf_avx512, hd_tile_l1_avx512, hd_tile_l2_avx512, hd_tile_gen_avx512,
     hd_tile_half_avx512, hd_tile_cube_avx512, hd_tile_quart_avx512},
#else
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL},
#endif
};
/* one entry per variant of a function compiled for every instruction set */
#if HD_X86_DISPATCH
#define HD_VARIANTS(name) {name##_base, name##_avx2, name##_avx512}
#else
#define HD_VARIANTS(name) {name##_base, NULL, NULL}
#endif
static hd_gemm_fn hd_gemm_fns[HD_NISA] = HD_VARIANTS(hd_gemm_blk);
static hd_scan_fn hd_scan_fns[HD_NISA] = HD_VARIANTS(hd_scan_f);
static hd_prep_fn hd_prep_fns[HD_NISA] = HD_VARIANTS(hd_prep_f);
static hd_seeds_fn hd_seeds_fns[HD_NISA] = HD_VARIANTS(hd_seeds_f);
#undef HD_VARIANTS
static int hd_isa = 0;
/* 1: the AVX-512 variant's product adds the bfloat16 tables (hd_gemm_blk); set only when
 * the machine has AVX512_BF16 (hd_bf16_set) */
static int hd_bf16 = 0;

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
    return hd_fns[hd_isa][P->pmode](P, Q, R, j0, nb, bound, s);
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
        hd_gemm_blk_avx512bf(Xt, nqb, Y, npan, K, G, ldg, add);
        return;
    }
#endif
    hd_gemm_fns[hd_isa](Xt, nqb, Y, npan, K, G, ldg, add);
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
    return hd_scan_fns[hd_isa](g, n, rc, c_first, c_end, th);
}

/* The first rows offered to a k-NN heap, from a float row of tested values
 * (hdist/_kernels/scan_body.h; hd_seeds_d, the same for double values, is defined above). */
static inline hd_intp hd_seeds_f(const float *v, hd_intp n, hd_intp ns, hd_intp *pos)
{
    return hd_seeds_fns[hd_isa](v, n, ns, pos);
}

/* The values the chunk scan tests for a float query row with missing values
 * (hdist/_kernels/scan_body.h; hd_prep_d, the same in double, is defined above). */
static inline void hd_prep_f(const float *g, hd_intp n, hd_intp rc, const float *th1,
                             const float *gy, hd_intp gstride, const hd_intp *mi, hd_intp nm,
                             const float *hc, float hm, const unsigned short *ab,
                             const float *tab, float *v)
{
    hd_prep_fns[hd_isa](g, n, rc, th1, gy, gstride, mi, nm, hc, hm, ab, tab, v);
}

#endif
