/* One instruction-set variant of the tile kernel (hdist/_kernels/tile_body.h), included by
 * hdist/_kernels/isa/tile_NAME.c after tile_types.h with HD_SFX (the suffix NAME of its
 * functions' names) and HD_TARGET (the instruction sets its "#pragma GCC target" names)
 * defined: the bodies compiled for that target, and the table of their entry points,
 * hd_tile_fns_NAME (hdist/_kernels/tile_types.h), from which tile.h dispatches.  No
 * include guard on purpose. */
#define HD_PRAGMA_(x) _Pragma(#x)
#define HD_PRAGMA(x) HD_PRAGMA_(x)

#include <immintrin.h>
#pragma GCC push_options
HD_PRAGMA(GCC target(HD_TARGET))
#include "tile_body.h"
#pragma GCC pop_options

const hd_tile_fn HD_SFX(hd_tile_fns)[HD_NPMODE] = {
    HD_SFX(hd_tile_inf), HD_SFX(hd_tile_l1), HD_SFX(hd_tile_l2), HD_SFX(hd_tile_gen),
    HD_SFX(hd_tile_half), HD_SFX(hd_tile_cube), HD_SFX(hd_tile_quart)};

#undef HD_PRAGMA
#undef HD_PRAGMA_
