"""Matrix-product candidate filter for exact p = 2 k-NN.

For ``p = 2`` every term of HEOM/HVDM-like metrics is a squared Euclidean distance in a
small embedding: a scaled continuous value, a one-hot code (overlap: ``½‖e_v − e_w‖²``
times ``w``), a row of class probabilities (VDM N2/N3), a class-posterior vector.  Missing
values under the "one"/"max"/"symbol" policies keep the sum bilinear: with presence
``p_x``, penalty ``A_x`` (the term when the other value is missing) and both-missing term
``B``, one attribute contributes

    p_x p_y ‖e_x − e_y‖² + p_x (1 − p_y) A_x + (1 − p_x) p_y A_y + (1 − p_x)(1 − p_y) B
    = p_y (s_x − p_x A_x) + p_x (s_y − p_y A_y + B p_y) − 2 e_x·e_y
      + p_x (A_x − B) + p_y (A_y − B) + B,          s = ‖e‖² (e = 0 when missing),

so the reduced distance of all pairs of a tile is one matrix product of augmented
features plus row and column constants.  That estimate is only a *filter*: a pair is
computed exactly by the brute-force kernel's ``pair_reduced`` unless its estimate, minus a
bound on the rounding error of both computations, already exceeds the query's current
k-th distance.  The neighbors and distances returned are therefore exactly the brute
force ones, whatever the BLAS, its threads or the tile sizes.
"""
from __future__ import annotations

import threading

import numpy as np

from ._plan import IGNORE, TableComponent

#: largest augmented dimension for which the filter is used
MAX_DIM = 512
#: entries of a feature matrix beyond this magnitude risk overflow in the product
MAX_ABS = 1e100
#: the same for float32 products (squares of features stay far below float32's max)
MAX_ABS32 = 1e15
_U = 2.0 ** -53

_controller = None


def _blas_limit(n_threads):
    """Context limiting BLAS threads (threadpoolctl when installed, else a no-op)."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        import contextlib
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    return _controller.limit(limits=n_threads, user_api="blas")


def eligible(plan):
    """True when the plan's terms are all squared Euclidean (p = 2) embeddable."""
    if plan.pmode != 2 or plan.has_ignore:
        return False
    for a in plan.t_attr:
        if getattr(plan.components[a], "embedding", None) is None:
            return False
    if plan.me and not np.all(plan.e_q == 2):
        return False
    return True


def _attributes(plan, rows):
    """Per attribute: (E [n, d] with zeros where missing, present [n], A [n], B); None when
    the rows have unseen overlap values or the embedding would exceed ``MAX_DIM`` columns
    (checked before anything is allocated: a wide one-hot costs more than it saves)."""
    n = rows.n
    dim = plan.mc + 2 * plan.m + 2 + sum(plan.components[a].n_values for a in plan.o_attr) \
        + sum(np.shape(plan.components[a].embedding)[1] for a in plan.t_attr) + plan.D
    if dim > MAX_DIM:
        return None
    out = []
    for k in range(plan.mc):
        v = rows.c[:, k] * (plan.c_inv[k] * np.sqrt(plan.c_rw[k]))
        pres = ~np.isnan(v)
        out.append((np.where(pres, v, 0.0)[:, None], pres, rows.cpen[:, k], plan.c_both[k]))
    for k, a in enumerate(plan.o_attr):
        comp = plan.components[a]
        V = comp.n_values
        codes = rows.o[:, k]
        if (codes >= V).any():
            return None  # unseen values: equality of two unseen values has no embedding
        E = np.zeros((n, V))
        pres = codes >= 0
        E[np.flatnonzero(pres), codes[pres]] = np.sqrt(plan.weights[a] / 2.0)
        out.append((E, pres, np.full(n, plan.o_miss[k]), plan.o_miss[k]))
    for k, a in enumerate(plan.t_attr):
        comp = plan.components[a]
        emb = np.asarray(comp.embedding, dtype=np.float64)
        V = emb.shape[0] - 1
        codes = rows.t[:, k]
        pres = codes >= 0
        E = emb[np.clip(codes, 0, V)] * np.sqrt(plan.weights[a])
        E[~pres] = 0.0
        out.append((E, pres, np.full(n, plan.t_miss[k]), plan.t_miss[k]))
    for k in range(plan.me):
        lo, hi = plan.e_off[k], plan.e_off[k + 1]
        E = rows.e[:, lo:hi] * np.sqrt(plan.e_rw[k])
        pres = ~np.isnan(E[:, 0]) if hi > lo else np.ones(n, bool)
        E = np.where(pres[:, None], E, 0.0)
        out.append((E, pres, np.full(n, plan.e_miss[k]), plan.e_miss[k]))
    return out


def _miss_set(plan, attrs_q, attrs_r):
    return tuple(i for i, (fq, fr) in enumerate(zip(attrs_q, attrs_r))
                 if not (fq[1].all() and fr[1].all()))


def side_features(attrs, miss, query_side):
    """Augmented features of one side; ``reduced(q, j) ≈ Xq[q] · Yr[j]``.

    Query side: ``[e, (s - p A, p) per attribute in miss, a, 1]``;
    reference side: ``[-2 e, (p, s - p A + B p) per attribute in miss, 1, b]``.
    Returns ``(F, norms)`` or None when magnitudes make the product unsafe."""
    n = attrs[0][0].shape[0] if attrs else 0
    cols, extra = [], []
    const = np.zeros(n)
    for idx, (E, pres, A, B) in enumerate(attrs):
        s = np.einsum("ij,ij->i", E, E)
        cols.append(E if query_side else -2.0 * E)
        if idx not in miss:
            const += s
            continue
        pf = pres.astype(np.float64)
        if query_side:
            extra.append(s - pf * A)
            extra.append(pf)
            const += pf * (A - B)
        else:
            extra.append(pf)
            extra.append(s - pf * A + B * pf)
            const += pf * (A - B) + B
    ones = np.ones(n)
    tail = [const, ones] if query_side else [ones, const]
    F = np.hstack(cols + [np.column_stack(extra + tail)])
    if not np.all(np.isfinite(F)) or (F.size and np.abs(F).max() > MAX_ABS):
        return None
    return np.ascontiguousarray(F), np.sqrt(np.einsum("ij,ij->i", F, F))


def knn(plan, Q, R, cQ, cR, k, n_threads, exclude_self=False, q_block=256, r_tile=4096,
        r_chunk=64, dtype=np.float32, cache=None):
    """Exact k-NN through the GEMM filter; None when the plan or data do not allow it.

    ``cache`` (a dict kept by the caller for a fixed reference set ``R``) keeps the
    reference side's features between calls."""
    if not eligible(plan):
        return None
    aq = _attributes(plan, Q)
    if aq is None:
        return None
    cache = {} if cache is None else cache
    ar = cache.get("attrs")
    if ar is None:
        ar = _attributes(plan, R)
        if ar is None:
            return None
        cache["attrs"] = ar
    miss = _miss_set(plan, aq, ar)
    fq = side_features(aq, miss, True)
    key = (miss, np.dtype(dtype).str)
    fr = cache.get(key)
    if fr is None:
        fr = side_features(ar, miss, False)
        if fr is None or fq is None:
            return None
        Yr, ny = fr
        ymax = float(np.abs(Yr).max(initial=0))
        if dtype == np.float32 and ymax > MAX_ABS32:
            return knn(plan, Q, R, cQ, cR, k, n_threads, exclude_self, q_block, r_tile,
                       r_chunk, np.float64, cache)
        # the reference side in the product's precision, and ny's maximum per chunk
        fr = (Yr.astype(dtype), np.maximum.reduceat(ny, np.arange(0, R.n, r_chunk)), ymax)
        cache[key] = fr
    if fq is None:
        return None
    Xq, nx = fq
    Yg, ny_chunk, ymax = fr
    from ._kernels import finish_heaps, gemm_select
    nq, nr = Q.n, R.n
    dim = Xq.shape[1]
    if dtype == np.float32:
        if max(np.abs(Xq).max(initial=0), ymax) > MAX_ABS32:
            return knn(plan, Q, R, cQ, cR, k, n_threads, exclude_self, q_block, r_tile,
                       r_chunk, np.float64, cache)
        # rounding of the inputs to float32 (2 u), the float32 product of dim terms
        # (dim u) and the kernel's float64 sum; doubled for safety.  Underflowing products
        # lose relative accuracy: an absolute slack covers them.
        eps = 4.0 * (dim + 8) * 2.0 ** -24
    else:
        eps = 8.0 * (dim + plan.m + 16) * _U
    slack = 1e-30
    nx = nx + slack / eps
    Xg = Xq.astype(dtype)
    HD = np.full((nq, k), np.inf)
    HI = np.full((nq, k), nr, dtype=np.intp)
    cplan = plan.cplan
    r_tile = max(r_chunk, (r_tile // r_chunk) * r_chunk)

    stop = threading.Event()   # set when the caller is interrupted

    def run(q0, q1):
        # one chunk of queries: a BLAS product per reference tile, then the exact filter;
        # chunks touch disjoint heap rows, so they run in parallel threads
        buf = np.empty(min(q_block, q1 - q0) * r_tile, dtype=dtype)
        for a0 in range(q0, q1, q_block):
            a1 = min(q1, a0 + q_block)
            Xb = Xg[a0:a1]
            for r0 in range(0, nr, r_tile):
                if stop.is_set():
                    return
                r1 = min(nr, r0 + r_tile)
                G = buf[: (a1 - a0) * (r1 - r0)].reshape(a1 - a0, r1 - r0)
                np.matmul(Xb, Yg[r0:r1].T, out=G)
                gemm_select(cplan, cQ, cR, G, nx, ny_chunk[r0 // r_chunk:], a0, r0, r_chunk,
                            HD, HI, eps, 1, exclude_self, 0)

    # BLAS runs single-threaded inside each of our threads: BLAS's own thread pool and
    # OpenMP's would otherwise fight over the cores between tiles
    n_chunks = min(n_threads, max(1, nq // 16))
    bounds = np.linspace(0, nq, n_chunks + 1).astype(np.intp)
    with _blas_limit(1):
        if n_chunks == 1:
            run(0, nq)
        else:
            from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
            with ThreadPoolExecutor(n_chunks) as ex:
                futs = [ex.submit(run, bounds[c], bounds[c + 1]) for c in range(n_chunks)]
                try:
                    # wait in short slices: a SIGINT that lands on a worker thread is
                    # handled (KeyboardInterrupt) only when this thread runs Python again
                    pending = futs
                    while pending:
                        done, pending = wait(pending, timeout=0.05,
                                             return_when=FIRST_EXCEPTION)
                        for f in done:
                            f.result()
                except BaseException:
                    stop.set()      # the workers end at their next tile
                    raise
    finish_heaps(cplan, HD, HI)
    return HD, HI
