/* The matrix-product filter's product with the tables in bfloat16 (one permutation and one
 * dot product per panel and query row instead of two permutations and two additions;
 * hdist/_kernels/gemm_body.h): the AVX-512 variant on machines that have AVX512_BF16,
 * called by tile.h's hd_gemm_blk for a block whose add->bf16 is set. */
#include "tile_types.h"

#if HD_X86_DISPATCH && HD_HAVE_BF16
#include <immintrin.h>
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512dq,avx512bw,avx512bf16,prefer-vector-width=512")
#define HD_SFX(name) name##_avx512bf
#define HD_GEMM_ISA 3
#include "gemm_body.h"
#undef HD_GEMM_ISA
#undef HD_SFX
#pragma GCC pop_options

const hd_gemm_fn hd_gemm_fn_avx512bf = hd_gemm_blk_avx512bf;
#endif
