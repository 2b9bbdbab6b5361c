"""Plain-numpy k-medoids references for tests/kernels/test_pam.py (never used by hdist itself).

``eager_swaps`` is FasterPAM's search (Schubert & Rousseeuw 2021) written from its
definition: candidates are taken in the given order, cycling; for a candidate ``j`` that
is not a medoid, the loss of every swap "medoid slot ``i`` becomes ``j``" is computed from
scratch (each row's distance to its nearest medoid, weighted), the best slot kept (the
smaller slot among equal losses), and the swap made at once when it lowers the loss.  It
stops once ``len(order)`` candidates in a row brought no swap, or after ``max_iter``
passes over the order.  No nearest / second-nearest bookkeeping, no removal loss: an
independent check of the kernels' incremental formulas.
"""
import numpy as np


def loss_of(D, med, w=None):
    """``Σ_o w_o min_i D[med_i, o]``."""
    dmin = D[np.asarray(med)].min(axis=0)
    return float(dmin.sum() if w is None else dmin @ w)


def swap_losses(D, med, w=None):
    """``L[i, j]``: the loss ``Σ_o w_o min(min_{l != i} D[med_l, o], D[j, o])`` of the
    medoids ``med`` with slot ``i`` given to row ``j`` (``inf`` where ``j`` is a medoid),
    every single swap from its definition."""
    D = np.asarray(D, dtype=np.float64)
    med = np.asarray(med)
    n, k = D.shape[1], med.size
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    L = np.empty((k, D.shape[0]))
    for i in range(k):
        rest = np.delete(D[med], i, axis=0)
        keep = rest.min(axis=0) if k > 1 else np.full(n, np.inf)
        L[i] = np.minimum(keep[None, :], D) @ w
    L[:, med] = np.inf
    return L


def eager_swaps(D, med, order, w=None, max_iter=100):
    """Returns ``(medoids by slot, loss, passes, swaps)``."""
    med = np.array(med, dtype=np.intp)
    order = np.asarray(order)
    k = med.size
    cur = loss_of(D, med, w)
    since = passes = swaps = 0
    while passes < max_iter and since < order.size:
        passes += 1
        for j in order:
            if since >= order.size:
                break
            since += 1
            if j in med:
                continue
            trial = np.empty(k)
            for i in range(k):
                m2 = med.copy()
                m2[i] = j
                trial[i] = loss_of(D, m2, w)
            b = int(np.argmin(trial))
            if trial[b] < cur - 1e-12 * cur:
                med[b] = j
                cur = trial[b]
                swaps += 1
                since = 1
    return med, cur, passes, swaps


def fasterpam_state(D, med, w=None):
    """Run the compiled FasterPAM kernels from medoids ``med``; returns the arrays they
    need, so a test can call ``pam_swaps`` with an order of its choice."""
    from hdist._kernels import pam_assign
    n = D.shape[0]
    med = np.array(med, dtype=np.intp)
    st = dict(Dm=np.ascontiguousarray(D[med]), med=med, near=np.empty(n, dtype=np.intp),
              seco=np.empty(n, dtype=np.intp), dn=np.empty(n), ds=np.empty(n),
              w=np.empty(0) if w is None else np.ascontiguousarray(w, dtype=np.float64))
    st["loss"] = np.array([pam_assign(st["Dm"], med, st["near"], st["seco"], st["dn"],
                                      st["ds"], st["w"])])
    return st


def kernel_swaps(D, med, order, w=None, max_iter=100, n_threads=1, chunk=None):
    """The kernels' FasterPAM over the full matrix ``D`` in ``order`` (optionally fed in
    chunks of candidates, as KMedoids feeds tiles).  Same return as ``eager_swaps``."""
    from hdist._kernels import pam_swaps
    st = fasterpam_state(D, med, w)
    order = np.ascontiguousarray(order, dtype=np.intp)
    state = np.zeros(2, dtype=np.intp)
    chunk = chunk or max(order.size, 1)
    passes = 0
    while passes < max_iter and state[0] < order.size:
        passes += 1
        for t0 in range(0, order.size, chunk):
            idx = order[t0:t0 + chunk]
            pam_swaps(D, idx, idx, st["Dm"], st["med"], st["near"], st["seco"], st["dn"],
                      st["ds"], st["w"], state, st["loss"], order.size, n_threads)
            if state[0] >= order.size:
                break
    return st["med"], float(st["loss"][0]), passes, int(state[1])
