/* The tile kernel compiled for AVX-512 (F, VL, DQ, BW): hd_tile_fns_avx512
 * (hdist/_kernels/isa/tile_variant.h). */
#include "tile_types.h"

#if HD_X86_DISPATCH
#define HD_SFX(name) name##_avx512
#define HD_TARGET "avx512f,avx512vl,avx512dq,avx512bw,prefer-vector-width=512"
#include "tile_variant.h"
#endif
