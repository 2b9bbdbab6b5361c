# cython: language_level=3
"""The tile kernel for the other compiled modules (the trees' leaves), and the radius
searches' hits sorted and taken into arrays."""
from hdist._kernels.plan cimport Hit, PlanS, RowsS, intp


ctypedef struct AttrRows:
    intp ld              # rows stored attribute-major: value (a, j) at [a * ld + j]
    const double* c      # [mc, ld]
    const double* cpen   # [mc, ld]
    const int* o         # [mo, ld]
    const int* t         # [mt, ld]
    const double* e      # [D, ld]


cdef int tile_block(const void* view, const PlanS* P, const RowsS* Q, intp q,
                    const AttrRows* R, intp j0, intp nb, double bound,
                    double* s) noexcept nogil


cdef void sort_hits(Hit* a, intp n) noexcept nogil


cdef int _take_hits(Hit** bufs, intp* counts, intp nb, list out_d, list out_i) except -1
