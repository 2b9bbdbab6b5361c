/* The matrix-product filter's float product (hdist/_kernels/gemm_body.h) and chunk scan
 * (hdist/_kernels/scan_body.h) compiled for AVX-512 (F, VL, DQ, BW): the table of their
 * entry points (hdist/_kernels/tile_types.h), from which tile.h dispatches. */
#include "tile_types.h"

#if HD_X86_DISPATCH
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512")
#define HD_SFX(name) name##_avx512
#define HD_GEMM_ISA 2
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

const hd_filter_fns hd_filter_fns_avx512 = {hd_gemm_blk_avx512, hd_scan_f_avx512,
                                            hd_prep_f_avx512, hd_seeds_f_avx512};
#endif
