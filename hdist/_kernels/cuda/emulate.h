/* The emulated device: the device kernels (knn.cu) compiled by the host's C compiler,
 * their grid run as loops, one block after another, on one host thread.
 *
 * The rule every kernel follows, so that the loops compute what a GPU computes:
 *
 *   1. A kernel's body is a sequence of phases.  A phase is one HD_PHASE { ... } block;
 *      on a GPU every thread of the block runs it, here it is a loop over threadIdx.x.
 *   2. __syncthreads() appears only between two phases, never inside one.  Phases (and
 *      the barriers between them) may sit in a loop or under a condition that is the
 *      same for every thread of the block: it reads only kernel arguments, blockIdx,
 *      blockDim, gridDim and block-uniform variables (rule 3).  Here __syncthreads()
 *      does nothing: the loop of the phase before it has finished every thread already.
 *   3. No thread's local variable lives across phases: what one phase hands to the next
 *      (or one thread to another) is in __shared__ or global memory.  A variable declared
 *      outside the phases holds a block-uniform value (the same in every thread, such as
 *      a merge step), never a thread's own.
 *   4. Inside a phase a thread reads no memory another thread of its block writes in that
 *      phase, except through atomic operations (here plain read-modify-writes, which
 *      give the same final values: the kernels only count with them).
 *   5. Blocks are independent (the grid's order does not matter), as CUDA requires.
 *
 * Under these rules the order in which the threads of a phase run cannot change a
 * result, so running them one by one is exact.  The kernels are C and C++ at once (no
 * templates, no references), and every function shared with the host's kernels
 * (hdist/_kernels/terms.h) is compiled here exactly as in the tile kernel (the host's
 * -ffp-contract=off, the device's --fmad=false).
 */
#ifndef HDIST_EMULATE_H
#define HDIST_EMULATE_H

#include <math.h>
#include <stddef.h>

typedef struct {
    long long x, y, z;
} hd_dim3;

/* the grid position of the running thread (one host thread runs the whole grid) */
static hd_dim3 threadIdx, blockIdx, blockDim, gridDim;
/* the block's dynamic shared memory (sized by the launch) */
static void *hd_emu_dyn_shared;

#define __device__
#define __shared__ static
#define __syncthreads() ((void)0)
#define HD_GLOBAL static void
#define HD_PHASE for (threadIdx.x = 0; threadIdx.x < blockDim.x; threadIdx.x++)
#define HD_DYN_SHARED(type, name) type *name = (type *)hd_emu_dyn_shared
#define HD_ATOMIC_INC(p) ((*(p))++)

/* run kernel over a grid of gx x gy blocks of bx threads with shm bytes of dynamic
 * shared memory (buf: a buffer of that size) */
#define HD_EMU_GRID(gx, gy, bx, buf, call)                                          \
    do {                                                                            \
        hd_emu_dyn_shared = (buf);                                                  \
        gridDim.x = (gx);                                                           \
        gridDim.y = (gy);                                                           \
        gridDim.z = 1;                                                              \
        blockDim.x = (bx);                                                          \
        blockDim.y = 1;                                                             \
        blockDim.z = 1;                                                             \
        threadIdx.y = threadIdx.z = blockIdx.z = 0;                                 \
        for (blockIdx.y = 0; blockIdx.y < gridDim.y; blockIdx.y++)                  \
            for (blockIdx.x = 0; blockIdx.x < gridDim.x; blockIdx.x++)              \
                call;                                                               \
    } while (0)

#endif
