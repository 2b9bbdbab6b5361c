/* The data of hdist's tile kernel and matrix-product filter, and the entry points of their
 * instruction-set variants: what hdist/_kernels/tile.h (the baseline bodies and the
 * dispatch) and the files of the other variants (hdist/_kernels/isa/) share.
 *
 * Each variant is compiled in a file of its own (the bodies are large, and the files
 * compile in parallel) and exposes its functions through one table with external but
 * hidden linkage, so that every module linking it keeps its own copy.  tile.h selects an
 * entry of the table at run time.
 */
#ifndef HDIST_TILE_TYPES_H
#define HDIST_TILE_TYPES_H

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


typedef void (*hd_gemm_fn)(const float *, hd_intp, const float *, hd_intp, hd_intp, float *,
                           hd_intp, const hd_gadd *);

typedef hd_intp (*hd_scan_fn)(const float *, hd_intp, hd_intp, hd_intp, hd_intp,
                              const float *);
typedef hd_intp (*hd_seeds_fn)(const float *, hd_intp, hd_intp, hd_intp *);
typedef void (*hd_prep_fn)(const float *, hd_intp, hd_intp, const float *, const float *,
                           hd_intp, const hd_intp *, hd_intp, const float *, float,
                           const unsigned short *, const float *, float *);

/* kinds of p with an entry point of their own (hd_tplan.pmode) */
#define HD_NPMODE 7

/* the float entry points of the filter in one instruction set (hdist/_kernels/gemm_body.h,
 * hdist/_kernels/scan_body.h) */
typedef struct {
    hd_gemm_fn gemm;
    hd_scan_fn scan;
    hd_prep_fn prep;
    hd_seeds_fn seeds;
} hd_filter_fns;

/* The AVX2 and AVX-512 variants (x86-64, GCC: "#pragma GCC target" per function; never
 * -march=native).  Each table is defined in its own file, hdist/_kernels/isa/NAME.c. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(HDIST_NO_DISPATCH)
#define HD_X86_DISPATCH 1
/* the product with the tables in bfloat16: GCC 10 and later compile it */
#if __GNUC__ >= 10
#define HD_HAVE_BF16 1
#else
#define HD_HAVE_BF16 0
#endif
#if defined(_WIN32) || defined(__CYGWIN__)
#define HD_VARIANT extern
#else
#define HD_VARIANT extern __attribute__((visibility("hidden")))
#endif
HD_VARIANT const hd_tile_fn hd_tile_fns_avx2[HD_NPMODE];      /* tile_avx2.c */
HD_VARIANT const hd_tile_fn hd_tile_fns_avx512[HD_NPMODE];    /* tile_avx512.c */
HD_VARIANT const hd_filter_fns hd_filter_fns_avx2;            /* gemm_avx2.c */
HD_VARIANT const hd_filter_fns hd_filter_fns_avx512;          /* gemm_avx512.c */
#if HD_HAVE_BF16
HD_VARIANT const hd_gemm_fn hd_gemm_fn_avx512bf;              /* gemm_avx512bf.c */
#endif
#undef HD_VARIANT
#else
#define HD_X86_DISPATCH 0
#define HD_HAVE_BF16 0
#endif

#endif
