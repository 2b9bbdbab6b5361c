# cython: language_level=3
"""C declarations of the tile kernel, the matrix-product filter's bodies and their
instruction-set dispatch (``tile.h``, ``gemm_scan.h``): cimported by ``tiles`` and ``gemm``,
each of which holds its own copy of the dispatch state (``hd_isa``, ``hd_bf16``)."""
from hdist._kernels.plan cimport intp


cdef extern from "gemm_scan.h":
    unsigned long long hd_le_mask_f(const float* e, intp n, float s) noexcept nogil
    unsigned long long hd_le_mask_d(const double* e, intp n, double s) noexcept nogil
    int hd_ctz64(unsigned long long m) noexcept nogil

cdef extern from "tile.h":
    enum: HD_TB
    enum: HD_NISA
    ctypedef struct hd_tplan:
        intp mc, mo, mt, me
        int pmode
        double p
        int ign
        double w_all, w_max
        int ign_unit
        double ign_w, ign_all
        const double* c_inv
        const double* c_tw
        const double* c_both
        const double* c_rw
        const unsigned char* c_ign
        const double* o_w
        const double* o_miss
        const double* o_rw
        const unsigned char* o_ign
        const double* t_tab
        const intp* t_off
        const int* t_V
        const double* t_miss
        const double* t_rw
        const unsigned char* t_ign
        const intp* e_off
        const unsigned char* e_q
        const double* e_miss
        const double* e_rw
        const unsigned char* e_ign
    ctypedef struct hd_tq:
        const double* c
        const double* cpen
        const int* o
        const int* t
        const double* e
    ctypedef struct hd_tr:
        intp ld
        const double* c
        const double* cpen
        const int* o
        const int* t
        const double* e
    const char* hd_isa_names[]
    int hd_isa
    int hd_isa_available(int isa) noexcept nogil
    int hd_isa_best() noexcept nogil
    int hd_isa_set(int isa) noexcept nogil
    int hd_tile(const hd_tplan* P, const hd_tq* Q, const hd_tr* R, intp j0, intp nb,
                double bound, double* s) noexcept nogil
    enum: HD_GQB
    enum: HD_GPW
    intp hd_scan_f(const float* g, intp n, intp rc, intp c_first, intp c_end,
                   const float* th) noexcept nogil
    intp hd_scan_d(const double* g, intp n, intp rc, intp c_first, intp c_end,
                   const double* th) noexcept nogil
    enum: HD_SEED_MAX
    intp hd_seeds_f(const float* v, intp n, intp ns, intp* pos) noexcept nogil
    intp hd_seeds_d(const double* v, intp n, intp ns, intp* pos) noexcept nogil
    void hd_prep_f(const float* g, intp n, intp rc, const float* th1, const float* gy,
                   intp gstride, const intp* mi, intp nm, const float* hc, float hm,
                   const unsigned short* ab, const float* tab, float* v) noexcept nogil
    void hd_prep_d(const double* g, intp n, intp rc, const double* th1, const double* gy,
                   intp gstride, const intp* mi, intp nm, const double* hc, double hm,
                   const unsigned short* ab, const double* tab, double* v) noexcept nogil
    ctypedef struct hd_gadd:
        const unsigned short* ab
        const float* gy
        intp gstride, nt
        const float* tab[8]
        const unsigned short* t16[8]
        const intp* mi[8]
        intp nm[8]
        int bf16
        intp nu
    void hd_gemm_union_set(hd_gadd* add, intp nqb) noexcept nogil
    void hd_gemm_blk(const float* Xt, intp nqb, const float* Y, intp npan, intp K, float* G,
                     intp ldg, const hd_gadd* add) noexcept nogil
    int hd_bf16_available() noexcept nogil
    int hd_bf16_set(int on) noexcept nogil
    int hd_gemm_bf16() noexcept nogil
    float hd_bf16_float(unsigned short h) noexcept nogil
    unsigned short hd_bf16_bits(float f) noexcept nogil
