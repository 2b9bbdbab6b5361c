/* The emulated device's launches: each function runs one kernel of knn.cu over its grid
 * (emulate.h's loops), with the kernel's arguments after the grid's size.  The one file
 * the host's C compiler builds for HDIST_CUDA_EMULATE=1 includes it (hdist/_search/cuda.py
 * compiles it into a shared library at first use, with the tile kernel's floating-point
 * flags); a header, so that installed packages carry it with the other sources. */
#include <stdlib.h>

#include "knn.cu"

#if defined(_WIN32)
#define HD_EXPORT __declspec(dllexport)
#else
#define HD_EXPORT __attribute__((visibility("default")))
#endif

/* 0 on success, -1 when the shared memory could not be allocated */
HD_EXPORT int hd_emu_knn_scan(hd_ll gx, hd_ll gy, hd_ll bx, hd_ll shm, HD_SCAN_PARAMS, hd_ll q0,
                              hd_ll excl, hd_ll self_off, hd_ll K, hd_ll chunk, double *bd,
                              hd_ll *bj)
{
    void *buf = malloc(shm > 0 ? (size_t)shm : 1);
    if (buf == NULL)
        return -1;
    HD_EMU_GRID(gx, gy, bx, buf,
                hd_knn_scan(H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re, Qc, Qcp, Qo, Qt, Qe, q0, excl,
                            self_off, K, chunk, bd, bj));
    free(buf);
    return 0;
}

HD_EXPORT int hd_emu_knn_merge(hd_ll gx, hd_ll gy, hd_ll bx, hd_ll shm, hd_ll chunks, hd_ll K,
                               double *bd, hd_ll *bj, double *od, hd_ll *oj)
{
    (void)shm;
    HD_EMU_GRID(gx, gy, bx, NULL, hd_knn_merge(chunks, K, bd, bj, od, oj));
    return 0;
}

HD_EXPORT int hd_emu_radius_scan(hd_ll gx, hd_ll gy, hd_ll bx, hd_ll shm, HD_SCAN_PARAMS,
                                 hd_ll q0, hd_ll excl, hd_ll self_off, double rred,
                                 hd_ll chunk, hd_ll cap, unsigned int *cnt, double *hs,
                                 hd_ll *hj)
{
    (void)shm;
    HD_EMU_GRID(gx, gy, bx, NULL,
                hd_radius_scan(H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re, Qc, Qcp, Qo, Qt, Qe, q0,
                               excl, self_off, rred, chunk, cap, cnt, hs, hj));
    return 0;
}

HD_EXPORT int hd_emu_pairwise(hd_ll gx, hd_ll gy, hd_ll bx, hd_ll shm, HD_SCAN_PARAMS,
                              hd_ll chunk, double *out)
{
    (void)shm;
    HD_EMU_GRID(gx, gy, bx, NULL,
                hd_pairwise(H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re, Qc, Qcp, Qo, Qt, Qe, chunk,
                            out));
    return 0;
}
