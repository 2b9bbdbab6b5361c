"""The compiled kernels: they see arrays only (a CPlan and CRows), never a schema, a
metric or an estimator.

- ``plan``: :class:`CPlan` and :class:`CRows`, the shared declarations (``plan.pxd``: the
  pair function every path computes a distance with, the (distance, index) order, the
  heaps), OpenMP's presence and the thread count of a call;
- ``tiles``: the tile kernel (``tile.h``, one variant per instruction set, chosen at
  import) and the brute-force paths on it: pairwise matrices, k-NN, radius search, and
  the same searches over the probed lists of an inverted-file store (``lists.pxi``);
- ``gemm``: the matrix-product filter's products, selection and exact recheck;
- ``pam``: FasterPAM's assignment and swaps over distance rows (k-medoids);
- ``trees``: the KD-tree and ball tree (build, insertion, queries).

This module gathers the names the layers above use, all public.  The rules that size a
call's work (the thread count of a call, ``plan._threads_for``: one thread below
``SERIAL_PAIRS`` pairs; the rows of a parallel region, ``plan._region_rows``; the chunks
of the tile kernel and of the matrix-product filter, ``plan._knn_chunk``,
``plan._radius_chunk_rows``, ``gemm._query_chunks``) stay inside the modules that apply
them.
"""
from . import gemm, pam, plan, tiles, trees
from .gemm import (GEMM_BLOCK_ROWS, GEMM_CACHED_PANELS, GEMM_MAX_CHUNK, GEMM_MAX_QUERY_CHUNK,
                   GEMM_REGION_PAIRS, GemmKnnSelect, RefMissing, aligned_empty, bf16_bounds,
                   bf16_bounds_available, gemm_panels, gemm_products, gemm_radius_lists,
                   gemm_radius_select, gemm_select, miss_codes, miss_lists, query_coded,
                   query_continuous, query_norms, set_bf16_bounds)
from .pam import pam_assign, pam_swaps
from .plan import (REGION_PAIRS, SAFE_RANGE, SERIAL_PAIRS, STREAM_BYTES, THREAD_REGION_PAIRS,
                   CPlan, CRows, TieLists, omp_max_threads, openmp_enabled)
from .tiles import (ATTR_MAJOR_BYTES, TILE_ROWS, finalize_array, finish_heaps, isa,
                    isa_variants, knn, knn_lists, pair_terms, pairwise, radius,
                    radius_lists, reduced_radius)


def set_isa(name):
    """Use the tile kernel variant ``name`` ("baseline", "avx2", "avx512" or "best") in
    every module that dispatches on it; returns the name in use.

    Call it with no kernel running (results are identical on every variant; this exists to
    test that and to measure)."""
    chosen = tiles.set_isa(name)
    gemm.use_isa(tiles.isa_index())
    return chosen
