/* The matrix-product filter's float product (hdist/_kernels/gemm_body.h, AVX2 with fused
 * multiply-adds) and chunk scan (hdist/_kernels/scan_body.h, AVX2): the table of their
 * entry points (hdist/_kernels/tile_types.h), from which tile.h dispatches. */
#include "tile_types.h"

#if HD_X86_DISPATCH
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx2")
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

const hd_filter_fns hd_filter_fns_avx2 = {hd_gemm_blk_avx2, hd_scan_f_avx2, hd_prep_f_avx2,
                                          hd_seeds_f_avx2};
#endif
