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

import numpy as np

from ._plan import IGNORE, TableComponent

#: largest augmented dimension for which the filter is used
MAX_DIM = 512
#: entries of a feature matrix beyond this magnitude risk overflow in the product
MAX_ABS = 1e100
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
    """Per attribute: (E [n, d] with zeros where missing, present [n], A [n], B)."""
    n = rows.n
    out = []
    for k in range(plan.mc):
        v = rows.c[:, k]
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
        E = rows.e[:, lo:hi]
        pres = ~np.isnan(E[:, 0]) if hi > lo else np.ones(n, bool)
        E = np.where(pres[:, None], E, 0.0)
        out.append((E, pres, np.full(n, plan.e_miss[k]), plan.e_miss[k]))
    return out


def features(plan, Q, R):
    """Augmented features ``(Xq, a, nx, Yr, b, ny)`` with
    ``reduced(q, j) ≈ Xq[q] · Yr[j] + a[q] + b[j]``; None when not applicable."""
    fq = _attributes(plan, Q)
    fr = _attributes(plan, R)
    if fq is None or fr is None:
        return None
    xs, ys = [], []
    xa, yb = [], []
    a = np.zeros(Q.n)
    b = np.zeros(R.n)
    for (Ex, px, Ax, B), (Ey, py, Ay, _) in zip(fq, fr):
        sx = np.einsum("ij,ij->i", Ex, Ex)
        sy = np.einsum("ij,ij->i", Ey, Ey)
        xs.append(Ex)
        ys.append(-2.0 * Ey)
        if px.all() and py.all():
            a += sx
            b += sy
            continue
        pxf = px.astype(np.float64)
        pyf = py.astype(np.float64)
        xa.append(np.column_stack([sx - pxf * Ax, pxf]))
        yb.append(np.column_stack([pyf, sy - pyf * Ay + B * pyf]))
        a += pxf * (Ax - B)
        b += pyf * (Ay - B) + B
    Xq = np.ascontiguousarray(np.hstack(xs + xa))
    Yr = np.ascontiguousarray(np.hstack(ys + yb))
    if Xq.shape[1] > MAX_DIM:
        return None
    for M in (Xq, Yr, a, b):
        if not np.all(np.isfinite(M)) or (M.size and np.abs(M).max() > MAX_ABS):
            return None
    nx = np.sqrt(np.einsum("ij,ij->i", Xq, Xq))
    ny = np.sqrt(np.einsum("ij,ij->i", Yr, Yr))
    return Xq, a, nx, Yr, b, ny


def knn(plan, Q, R, cQ, cR, k, n_threads, exclude_self=False, q_block=256, r_tile=2048):
    """Exact k-NN through the GEMM filter; None when the plan or data do not allow it."""
    if not eligible(plan):
        return None
    f = features(plan, Q, R)
    if f is None:
        return None
    Xq, a, nx, Yr, b, ny = f
    from ._kernels import finish_heaps, gemm_select
    nq, nr = Q.n, R.n
    dim = Xq.shape[1]
    # both computations' rounding: the product (dim terms), the additions, and the kernel's
    # own sum over m attributes; a generous constant keeps the filter provably conservative
    eps = 8.0 * (dim + plan.m + 16) * _U
    HD = np.full((nq, k), np.inf)
    HI = np.full((nq, k), nr, dtype=np.intp)
    buf = np.empty(q_block * r_tile)
    cplan = plan.cplan
    with _blas_limit(n_threads):
        for q0 in range(0, nq, q_block):
            q1 = min(nq, q0 + q_block)
            Xb = Xq[q0:q1]
            for r0 in range(0, nr, r_tile):
                r1 = min(nr, r0 + r_tile)
                G = buf[: (q1 - q0) * (r1 - r0)].reshape(q1 - q0, r1 - r0)
                np.matmul(Xb, Yr[r0:r1].T, out=G)
                gemm_select(cplan, cQ, cR, G, a, b, nx, ny, q0, r0, HD, HI, eps, n_threads,
                            exclude_self, 0)
    finish_heaps(cplan, HD, HI)
    return HD, HI
