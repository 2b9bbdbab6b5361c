/* The tile kernel compiled for AVX2: hd_tile_fns_avx2 (hdist/_kernels/isa/tile_variant.h). */
#include "tile_types.h"

#if HD_X86_DISPATCH
#define HD_SFX(name) name##_avx2
#define HD_TARGET "avx2"
#include "tile_variant.h"
#endif
