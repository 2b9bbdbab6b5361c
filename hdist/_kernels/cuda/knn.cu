/* Device kernels of hdist: reduced distances of a block of query rows against every
 * reference row kept on the device, the k smallest per query selected on the device
 * (hd_knn_scan, hd_knn_merge), the rows within a radius (hd_radius_scan) and the
 * reduced-distance matrix of the block (hd_pairwise).
 *
 * A pair's reduced distance is pair_reduced's (hdist/_kernels/plan.pxd) without its early
 * exit: the terms are hdist/_kernels/terms.h's functions, the ones every variant of the
 * CPU's tile kernel uses, added in the same order (continuous, overlap, table, embedded
 * blocks, attributes in order, then the "ignore" rescale), accumulated in float64 and
 * compiled without contraction (--fmad=false), so the value is the CPU's bit for bit.
 * Candidates are ordered by (reduced distance, index); the driver
 * (hdist/_search/cuda.py) turns them into true distances on the host with the CPU's own
 * functions and decides the k-th place on the distance returned, as the CPU does.
 *
 * Compiled by NVRTC for a GPU (-I hdist/_kernels) or, with emulate.h, by the host's C
 * compiler for the emulated device: the kernels follow emulate.h's rule (phases
 * separated by barriers, nothing held in local variables across a barrier).
 *
 * Layouts: reference rows attribute-major with n apart (Rc, Rcp [mc, n], Ro [mo, n],
 * Rt [mt, n] as hd_code, Re [D, n]); query rows row-major (Qc, Qcp [nq, mc], Qo [nq, mo],
 * Qt [nq, mt], Qe [nq, D]).  The plan travels as four arrays: H (sizes and offsets,
 * HD_H_* below), PD (doubles: p, w_all, w_max, +inf, then the per-attribute constants),
 * PI (64-bit integers: the tables' offsets and sizes, the embedded offsets) and PB (bytes:
 * the policies and norms).
 */
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define HD_GLOBAL extern "C" __global__ void
#define HD_PHASE if (1)
#define HD_DYN_SHARED(type, name) \
    extern __shared__ double hd_dyn_shared[]; \
    type *name = (type *)hd_dyn_shared
#define HD_ATOMIC_INC(p) atomicAdd((p), 1u)
#else
#include "emulate.h"
#endif

#include "terms.h"

typedef long long hd_ll;

/* the reference rows' nominal codes: 16-bit where every code fits (HD_CODE16: half the
 * memory read per row), else 32-bit; -1 is missing either way */
#ifdef HD_CODE16
typedef short hd_code;
#else
typedef int hd_code;
#endif

/* H: sizes, then offsets into PD, PI and PB */
enum {
    HD_H_MC, HD_H_MO, HD_H_MT, HD_H_ME, HD_H_PM, HD_H_IGN, HD_H_N, HD_H_D,
    HD_H_C_INV, HD_H_C_W, HD_H_C_BOTH, HD_H_O_W, HD_H_O_MISS, HD_H_O_RW, HD_H_T_TAB,
    HD_H_T_MISS, HD_H_T_RW, HD_H_E_MISS, HD_H_E_RW,
    HD_H_T_OFF, HD_H_T_V, HD_H_E_OFF,
    HD_H_C_IGN, HD_H_O_IGN, HD_H_T_IGN, HD_H_E_Q, HD_H_E_IGN,
    HD_H_LEN
};

typedef struct {
    hd_ll mc, mo, mt, me, n, D;
    int pm, ign;
    double p, w_all, w_max, inf;
    const double *c_inv, *c_w, *c_both, *o_w, *o_miss, *o_rw, *t_tab, *t_miss, *t_rw,
        *e_miss, *e_rw;
    const hd_ll *t_off, *t_V, *e_off;
    const unsigned char *c_ign, *o_ign, *t_ign, *e_q, *e_ign;
    /* reference rows, attribute-major */
    const double *Rc, *Rcp, *Re;
    const hd_code *Ro, *Rt;
} hd_dplan;

__device__ static void hd_dplan_make(hd_dplan *P, const hd_ll *H, const double *PD,
                                     const hd_ll *PI, const unsigned char *PB,
                                     const double *Rc, const double *Rcp, const hd_code *Ro,
                                     const hd_code *Rt, const double *Re)
{
    P->mc = H[HD_H_MC];
    P->mo = H[HD_H_MO];
    P->mt = H[HD_H_MT];
    P->me = H[HD_H_ME];
    P->n = H[HD_H_N];
    P->D = H[HD_H_D];
    P->pm = (int)H[HD_H_PM];
    P->ign = (int)H[HD_H_IGN];
    P->p = PD[0];
    P->w_all = PD[1];
    P->w_max = PD[2];
    P->inf = PD[3];
    P->c_inv = PD + H[HD_H_C_INV];
    P->c_w = PD + H[HD_H_C_W];
    P->c_both = PD + H[HD_H_C_BOTH];
    P->o_w = PD + H[HD_H_O_W];
    P->o_miss = PD + H[HD_H_O_MISS];
    P->o_rw = PD + H[HD_H_O_RW];
    P->t_tab = PD + H[HD_H_T_TAB];
    P->t_miss = PD + H[HD_H_T_MISS];
    P->t_rw = PD + H[HD_H_T_RW];
    P->e_miss = PD + H[HD_H_E_MISS];
    P->e_rw = PD + H[HD_H_E_RW];
    P->t_off = PI + H[HD_H_T_OFF];
    P->t_V = PI + H[HD_H_T_V];
    P->e_off = PI + H[HD_H_E_OFF];
    P->c_ign = PB + H[HD_H_C_IGN];
    P->o_ign = PB + H[HD_H_O_IGN];
    P->t_ign = PB + H[HD_H_T_IGN];
    P->e_q = PB + H[HD_H_E_Q];
    P->e_ign = PB + H[HD_H_E_IGN];
    P->Rc = Rc;
    P->Rcp = Rcp;
    P->Ro = Ro;
    P->Rt = Rt;
    P->Re = Re;
}

/* Reduced distance of query row (qc, qcp, qo, qt, qe) and reference row j, for the kind
 * of p pm (a constant in each caller of hd_pair): pair_reduced's terms and order, and its
 * early exit: without the "ignore" policy the sum is abandoned once a block leaves it
 * above bound (the value returned then only exceeds bound, as every later sum would). */
HD_TERM double hd_pair_pm(const hd_dplan *P, const double *qc, const double *qcp,
                          const int *qo, const int *qt, const double *qe, hd_ll j,
                          double bound, const int pm)
{
    const hd_ll n = P->n;
    const double p = P->p;
    const int ign = P->ign;
    double s = 0.0, kw = 0.0, t;
    hd_ll a, c, nskip = 0;
    for (a = 0; a < P->mc; a++) {
        double x = qc[a], y = P->Rc[a * n + j];
        int xin = x == x, yin = y == y;
        if (xin && yin)
            t = hd_cont_term(x, y, P->c_inv[a], P->c_w[a], pm, p);
        else if (ign && P->c_ign[a]) {
            nskip++;
            continue;
        } else if (xin)
            t = qcp[a];
        else if (yin)
            t = P->Rcp[a * n + j];
        else
            t = P->c_both[a];
        if (ign)
            kw += P->c_w[a];
        s = hd_acc_pm(s, t, pm);
    }
    if (!ign && s > bound)
        return s;
    for (a = 0; a < P->mo; a++) {
        int cx = qo[a], cy = P->Ro[a * n + j];
        if (cx >= 0 && cy >= 0)
            t = cx != cy ? P->o_w[a] : 0.0;
        else if (ign && P->o_ign[a]) {
            nskip++;
            continue;
        } else
            t = P->o_miss[a];
        if (ign)
            kw += P->o_rw[a];
        s = hd_acc_pm(s, t, pm);
    }
    if (!ign && s > bound)
        return s;
    for (a = 0; a < P->mt; a++) {
        int cx = qt[a], cy = P->Rt[a * n + j];
        if (cx >= 0 && cy >= 0) {
            int V = (int)P->t_V[a];
            const double *row = P->t_tab + P->t_off[a] + (hd_ll)(cx < V ? cx : V) * (V + 1);
            t = hd_tab_sel(row[hd_tab_col(cy, V)], cx >= V, cx, cy);
        } else if (ign && P->t_ign[a]) {
            nskip++;
            continue;
        } else
            t = P->t_miss[a];
        if (ign)
            kw += P->t_rw[a];
        s = hd_acc_pm(s, t, pm);
    }
    if (!ign && s > bound)
        return s;
    for (a = 0; a < P->me; a++) {
        hd_ll off = P->e_off[a], dim = P->e_off[a + 1] - off;
        double x = qe[off], y = P->Re[off * n + j];
        if (x == x && y == y) {
            double nrm = 0.0;
            int q2 = P->e_q[a] == 2;
            for (c = 0; c < dim; c++) {
                if (q2)
                    nrm = hd_emb_q2(nrm, qe[off + c], P->Re[(off + c) * n + j]);
                else
                    nrm = hd_emb_q1(nrm, qe[off + c], P->Re[(off + c) * n + j]);
            }
            t = hd_emb_term(nrm, q2, P->e_rw[a], pm, p);
        } else if (ign && P->e_ign[a]) {
            nskip++;
            continue;
        } else
            t = P->e_miss[a];
        if (ign)
            kw += P->e_rw[a];
        s = hd_acc_pm(s, t, pm);
    }
    if (ign && nskip)
        s = hd_rescale_one(s, kw, P->w_all, P->w_max, pm);
    return s;
}

/* query row q of the block against reference row j (abandoned above bound: hd_pair_pm) */
__device__ static double hd_pair(const hd_dplan *P, const double *Qc, const double *Qcp,
                                 const int *Qo, const int *Qt, const double *Qe, hd_ll q,
                                 hd_ll j, double bound)
{
    const double *qc = Qc + q * P->mc, *qcp = Qcp + q * P->mc, *qe = Qe + q * P->D;
    const int *qo = Qo + q * P->mo, *qt = Qt + q * P->mt;
    switch (P->pm) {
    case 0: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 0);
    case 1: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 1);
    case 2: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 2);
    case 4: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 4);
    case 5: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 5);
    case 6: return hd_pair_pm(P, qc, qcp, qo, qt, qe, j, bound, 6);
    /* a general p (pm 3) needs pow() for each term, which the device does not round as
     * the host's C library does: the driver refuses it (CudaSearcher.refusal), and no
     * device code is made for it */
    default: return P->inf;
    }
}

/* the leading parameters of the scan kernels: the plan, the reference rows and the
 * block's query rows */
#define HD_SCAN_PARAMS                                                                    \
    const hd_ll *H, const double *PD, const hd_ll *PI, const unsigned char *PB,            \
        const double *Rc, const double *Rcp, const hd_code *Ro, const hd_code *Rt,        \
        const double *Re,                                                                 \
        const double *Qc, const double *Qcp, const int *Qo, const int *Qt, const double *Qe

/* (d1, j1) before (d2, j2): the candidates' order */
HD_FN int hd_before(double d1, hd_ll j1, double d2, hd_ll j2)
{
    return d1 < d2 || (d1 == d2 && j1 < j2);
}

/* replace the root of a full max-heap of k entries (on (d, j)) by (d, j), which comes
 * before it, and sift down (plan.pxd's heap_push) */
HD_FN void hd_heap_push(double *hd, hd_ll *hi, hd_ll k, double d, hd_ll j)
{
    hd_ll pos = 0, child, right;
    for (;;) {
        child = 2 * pos + 1;
        if (child >= k)
            break;
        right = child + 1;
        if (right < k && hd_before(hd[child], hi[child], hd[right], hi[right]))
            child = right;
        if (hd_before(d, j, hd[child], hi[child])) {
            hd[pos] = hd[child];
            hi[pos] = hi[child];
            pos = child;
        } else
            break;
    }
    hd[pos] = d;
    hi[pos] = j;
}

/* offer (d, j) to a full max-heap */
HD_FN void hd_heap_offer(double *hd, hd_ll *hi, hd_ll k, double d, hd_ll j)
{
    if (hd_before(d, j, hd[0], hi[0]))
        hd_heap_push(hd, hi, k, d, j);
}

/* The K smallest (reduced distance, index) of each query of the block within one chunk
 * of reference rows: grid (queries, chunks), blockDim.x threads, dynamic shared memory
 * of blockDim.x K (8 + 8) bytes.  Phase 1: each thread keeps a heap of the rows
 * chunk0 + t, + blockDim.x, ...; then log2(blockDim.x) phases merge the heaps pairwise
 * (thread t takes in the heap of t + step, for t a multiple of 2 step), and thread 0
 * writes the block's heap, bd/bj [queries, chunks, K] (unsorted; (inf, n) where the chunk
 * has fewer rows).  excl: query q skips reference row q0 + q + self_off. */
HD_GLOBAL hd_knn_scan(HD_SCAN_PARAMS, hd_ll q0, hd_ll excl, hd_ll self_off, hd_ll K,
                      hd_ll chunk, double *bd, hd_ll *bj)
{
    HD_DYN_SHARED(double, sh);
    hd_ll step;     /* block-uniform: the same in every thread */
    HD_PHASE {
        hd_dplan P;
        hd_ll tid = threadIdx.x, T = blockDim.x, q = blockIdx.x, i, j;
        hd_ll j0 = (hd_ll)blockIdx.y * chunk, j1;
        double *md = sh + tid * K;
        hd_ll *mj = (hd_ll *)(sh + T * K) + tid * K;
        hd_ll self;
        hd_dplan_make(&P, H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re);
        j1 = j0 + chunk < P.n ? j0 + chunk : P.n;
        self = excl ? q0 + q + self_off : -1;
        for (i = 0; i < K; i++) {
            md[i] = P.inf;
            mj[i] = P.n;
        }
        for (j = j0 + tid; j < j1; j += T) {
            double s;
            if (j == self)
                continue;
            /* a row whose sum passes the heap's root cannot enter: abandoned early */
            s = hd_pair(&P, Qc, Qcp, Qo, Qt, Qe, q, j, md[0]);
            hd_heap_offer(md, mj, K, s, j);
        }
    }
    __syncthreads();
    for (step = 1; step < (hd_ll)blockDim.x; step *= 2) {
        HD_PHASE {
            hd_ll tid = threadIdx.x, T = blockDim.x, i;
            if (tid % (2 * step) == 0 && tid + step < T) {
                double *md = sh + tid * K;
                hd_ll *mj = (hd_ll *)(sh + T * K) + tid * K;
                const double *od = sh + (tid + step) * K;
                const hd_ll *oj = (const hd_ll *)(sh + T * K) + (tid + step) * K;
                for (i = 0; i < K; i++)
                    hd_heap_offer(md, mj, K, od[i], oj[i]);
            }
        }
        __syncthreads();
    }
    HD_PHASE {
        if (threadIdx.x == 0) {
            hd_ll T = blockDim.x, i;
            hd_ll at = ((hd_ll)blockIdx.x * gridDim.y + blockIdx.y) * K;
            const hd_ll *mj = (const hd_ll *)(sh + T * K);
            for (i = 0; i < K; i++) {
                bd[at + i] = sh[i];
                bj[at + i] = mj[i];
            }
        }
    }
}

/* Merge the chunks' heaps of each query (bd/bj [queries, chunks, K]) into its K smallest,
 * sorted by (reduced distance, index): od/oj [queries, K].  Grid (queries, 1), one
 * thread; the first K entries of the query's first chunk serve as its heap. */
HD_GLOBAL hd_knn_merge(hd_ll chunks, hd_ll K, double *bd, hd_ll *bj, double *od, hd_ll *oj)
{
    HD_PHASE {
        if (threadIdx.x == 0) {
            hd_ll q = blockIdx.x, c, i, end;
            double *hd = bd + q * chunks * K;
            hd_ll *hi = bj + q * chunks * K;
            for (c = 1; c < chunks; c++)
                for (i = 0; i < K; i++)
                    hd_heap_offer(hd, hi, K, hd[c * K + i], hi[c * K + i]);
            /* heap sort (plan.pxd's heap_sort) */
            for (end = K - 1; end > 0; end--) {
                double d = hd[end];
                hd_ll j = hi[end];
                hd[end] = hd[0];
                hi[end] = hi[0];
                hd_heap_push(hd, hi, end, d, j);
            }
            for (i = 0; i < K; i++) {
                od[q * K + i] = hd[i];
                oj[q * K + i] = hi[i];
            }
        }
    }
}

/* The reference rows whose reduced distance is at most rred, per query of the block:
 * blockDim.x threads per block.  Query q's hits go to hs/hj [q, cap] in any order, counted
 * in cnt[q] (which may pass cap: the driver then asks again with room).  Grid (queries,
 * chunks), as every scan: the blocks the GPU runs at a time read the same chunk of
 * reference rows for consecutive queries, which the L2 cache then serves. */
HD_GLOBAL hd_radius_scan(HD_SCAN_PARAMS,
                         hd_ll q0, hd_ll excl, hd_ll self_off, double rred, hd_ll chunk,
                         hd_ll cap, unsigned int *cnt, double *hs, hd_ll *hj)
{
    HD_PHASE {
        hd_dplan P;
        hd_ll tid = threadIdx.x, T = blockDim.x, q = blockIdx.x, j;
        hd_ll j0 = (hd_ll)blockIdx.y * chunk, j1, self;
        hd_dplan_make(&P, H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re);
        j1 = j0 + chunk < P.n ? j0 + chunk : P.n;
        self = excl ? q0 + q + self_off : -1;
        for (j = j0 + tid; j < j1; j += T) {
            double s;
            hd_ll slot;
            if (j == self)
                continue;
            s = hd_pair(&P, Qc, Qcp, Qo, Qt, Qe, q, j, rred);
            if (!(s <= rred))
                continue;
            slot = (hd_ll)HD_ATOMIC_INC(cnt + q);
            if (slot < cap) {
                hs[q * cap + slot] = s;
                hj[q * cap + slot] = j;
            }
        }
    }
}

/* The reduced distances of the block's queries to every reference row: out [queries, n].
 * Grid (queries, chunks), blockDim.x threads. */
HD_GLOBAL hd_pairwise(HD_SCAN_PARAMS,
                      hd_ll chunk, double *out)
{
    HD_PHASE {
        hd_dplan P;
        hd_ll tid = threadIdx.x, T = blockDim.x, q = blockIdx.x, j;
        hd_ll j0 = (hd_ll)blockIdx.y * chunk, j1;
        hd_dplan_make(&P, H, PD, PI, PB, Rc, Rcp, Ro, Rt, Re);
        j1 = j0 + chunk < P.n ? j0 + chunk : P.n;
        for (j = j0 + tid; j < j1; j += T)
            out[q * P.n + j] = hd_pair(&P, Qc, Qcp, Qo, Qt, Qe, q, j, P.inf);
    }
}
