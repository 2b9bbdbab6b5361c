# cython: language_level=3
"""k-medoids: FasterPAM's assignment and eager swap phase over rows of a distance matrix
(``hdist.cluster.KMedoids``).
"""
import math

import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport INFINITY
from hdist._kernels.plan cimport intp

cnp.import_array()


# -- k-medoids: FasterPAM's swap phase over distance rows ------------------------------------
# Schubert & Rousseeuw (2021), "Fast and eager k-medoids clustering", Algorithm 2 (FasterPAM):
# every row o keeps its nearest medoid slot near[o] at distance dn[o] and the second nearest
# seco[o] at ds[o]; removal[i] = sum over the rows of slot i of w (ds - dn) is the loss added
# when medoid i goes.  The change of the loss when row j replaces medoid i is then
#   removal[i] + delta_j[i] + acc_j,
# with acc_j and delta_j one pass over the distance row d(j, .).  A swap that lowers the loss
# is made at once (eager) when the loss recomputed over the new assignment is lower; a swap
# whose change was negative only by rounding (the recomputed loss not lower) is undone and the
# search goes on.  Every sum runs over o in index order on one thread, so a result depends
# only on the data, the initial medoids and the order of the candidates.

cdef void _pam_removal(intp n, intp k, const intp* near, const double* dn, const double* ds,
                       const double* w, double* removal) noexcept nogil:
    cdef intp o
    for o in range(k):
        removal[o] = 0.0
    if k == 1:
        return
    for o in range(n):
        if w == NULL:
            removal[near[o]] += ds[o] - dn[o]
        else:
            removal[near[o]] += w[o] * (ds[o] - dn[o])


cdef double _pam_change(const double* row, intp n, intp k, const intp* near,
                        const double* dn, const double* ds, const double* w,
                        const double* removal, double* delta, intp* slot) noexcept nogil:
    """The least change of the loss when the row with distances ``row`` becomes a medoid in
    place of medoid ``slot[0]`` (smallest slot among equal changes)."""
    cdef intp o, i, b = 0
    cdef double acc = 0.0, d, best
    if k == 1:   # every row moves to the new medoid
        for o in range(n):
            if w == NULL:
                acc += row[o] - dn[o]
            else:
                acc += w[o] * (row[o] - dn[o])
        slot[0] = 0
        return acc
    for i in range(k):
        delta[i] = 0.0
    if w == NULL:
        for o in range(n):
            d = row[o]
            if d < ds[o]:
                if d < dn[o]:      # the new medoid becomes the nearest
                    acc += d - dn[o]
                    delta[near[o]] += dn[o] - ds[o]
                else:              # ... or the second nearest, if near[o] goes
                    delta[near[o]] += d - ds[o]
    else:
        for o in range(n):
            d = row[o]
            if d < ds[o]:
                if d < dn[o]:
                    acc += w[o] * (d - dn[o])
                    delta[near[o]] += w[o] * (dn[o] - ds[o])
                else:
                    delta[near[o]] += w[o] * (d - ds[o])
    # delta is summed from zero, then removal added: a candidate that duplicates medoid i
    # gets exactly 0 for slot i (the same terms, negated, in the same order)
    best = delta[0] + removal[0]
    for i in range(1, k):
        d = delta[i] + removal[i]
        if d < best:
            best = d
            b = i
    slot[0] = b
    return best + acc


cdef inline void _pam_second(intp k, intp n, const double* Dm, intp o, intp nb, intp b,
                             double d, intp* seco, double* ds) noexcept nogil:
    """Second nearest medoid of row o, whose nearest is slot nb: slot b at distance d, or a
    nearer one of the others (strictly nearer: ties keep b, then the smaller slot)."""
    cdef intp i
    cdef intp s = b
    cdef double sd = d, x
    for i in range(k):
        if i == nb or i == b:
            continue
        x = Dm[i * n + o]
        if x < sd:
            sd = x
            s = i
    seco[o] = s
    ds[o] = sd


cdef double _pam_swap(const double* row, intp n, intp k, intp b, intp j, double* Dm,
                      intp* med, intp* near, intp* seco, double* dn, double* ds,
                      const double* w) noexcept nogil:
    """Row j becomes medoid slot b; the nearest / second nearest of every row are updated.
    Returns the new loss."""
    cdef intp o
    cdef double d, loss = 0.0
    med[b] = j
    for o in range(n):
        Dm[b * n + o] = row[o]
    for o in range(n):
        d = row[o]
        if near[o] == b:             # its nearest medoid is replaced
            if d < ds[o]:
                dn[o] = d
            else:
                near[o] = seco[o]
                dn[o] = ds[o]
                _pam_second(k, n, Dm, o, near[o], b, d, seco, ds)
        elif d < dn[o]:
            seco[o] = near[o]
            ds[o] = dn[o]
            near[o] = b
            dn[o] = d
        elif d < ds[o]:
            seco[o] = b
            ds[o] = d
        elif seco[o] == b:           # its second nearest is replaced by a farther row
            _pam_second(k, n, Dm, o, near[o], b, d, seco, ds)
        if w == NULL:
            loss += dn[o]
        else:
            loss += w[o] * dn[o]
    return loss


cdef inline bint _is_medoid(intp k, const intp* med, intp j) noexcept nogil:
    cdef intp i
    for i in range(k):
        if med[i] == j:
            return True
    return False


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def pam_assign(const double[:, ::1] Dm, const intp[::1] med, intp[::1] near, intp[::1] seco,
               double[::1] dn, double[::1] ds, const double[::1] w):
    """Nearest and second nearest medoid slot of every row, by the distances ``Dm``
    (ties: the smaller slot).  ``Dm[i, o]``: distance of medoid i to row o, taken as it
    is for the medoid's own row too (a row with missing values is at a positive distance
    from itself, and may then be nearer another medoid); ``w`` empty for unit weights.
    Returns the loss ``sum w dn``."""
    cdef intp k = Dm.shape[0], n = Dm.shape[1], o, i
    cdef double d, loss = 0.0
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    if med.shape[0] != k or near.shape[0] != n or seco.shape[0] != n or dn.shape[0] != n \
            or ds.shape[0] != n or (wp != NULL and w.shape[0] != n) or k < 1:
        raise ValueError("pam_assign: inconsistent shapes")
    with nogil:
        for o in range(n):
            near[o] = 0
            dn[o] = Dm[0, o]
            seco[o] = -1
            ds[o] = INFINITY
            for i in range(1, k):
                d = Dm[i, o]
                if d < dn[o]:
                    seco[o] = near[o]
                    ds[o] = dn[o]
                    near[o] = i
                    dn[o] = d
                elif seco[o] < 0 or d < ds[o]:
                    seco[o] = i
                    ds[o] = d
            if wp == NULL:
                loss += dn[o]
            else:
                loss += wp[o] * dn[o]
    return loss


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def pam_swaps(const double[:, ::1] D, const intp[::1] rows, const intp[::1] cand,
              double[:, ::1] Dm, intp[::1] med, intp[::1] near, intp[::1] seco,
              double[::1] dn, double[::1] ds, const double[::1] w, intp[::1] state,
              double[::1] loss, intp n_visit, int n_threads):
    """FasterPAM's eager swaps over the candidate rows ``cand`` in order.

    ``D[rows[t]]`` holds the distances of candidate ``cand[t]`` to every row, its own
    included (positive for a row with missing values, as in :func:`pam_assign`); ``Dm`` the
    medoids' rows, ``med`` their row indices, ``near/seco/dn/ds`` the assignment of
    :func:`pam_assign`, ``w`` the row weights (empty: all 1), ``loss`` ``[1]`` the current
    loss.  ``state = [visited since the last swap, swaps]``.  A swap is kept when the loss
    recomputed after it is lower than the current loss; otherwise (a change negative only by
    rounding) the medoid, its row of ``Dm`` and the assignment are restored bit for bit and
    the candidate counts as visited without a swap.  Stops early once ``n_visit`` candidates
    in a row brought no swap (a local optimum); returns how many candidates of ``cand`` were
    used.

    With ``n_threads > 1`` the changes of the next few candidates are computed in parallel
    against the current medoids and taken in order; after a swap the rest of the batch is
    computed again (an undone swap leaves the state as it was, so the batch goes on), so the
    swaps made are those of one thread, whatever ``n_threads``."""
    cdef intp k = Dm.shape[0], n = Dm.shape[1], T = cand.shape[0]
    cdef intp since = state[0], nswap = state[1]
    cdef intp pos = 0, t, nb, j, used, bmax, bcur, b, old
    cdef double cur = loss[0], new
    cdef const double* wp = &w[0] if w.shape[0] else NULL
    if med.shape[0] != k or near.shape[0] != n or seco.shape[0] != n or dn.shape[0] != n \
            or ds.shape[0] != n or (wp != NULL and w.shape[0] != n) or rows.shape[0] != T \
            or D.shape[1] != n or loss.shape[0] != 1 or state.shape[0] != 2:
        raise ValueError("pam_swaps: inconsistent shapes")
    if T and (np.min(rows) < 0 or np.max(rows) >= D.shape[0] or np.min(cand) < 0
              or np.max(cand) >= n):
        raise ValueError("pam_swaps: row index out of range")
    if n_threads < 1:
        raise ValueError("n_threads must be >= 1, got %d" % n_threads)
    bmax = 1 if n_threads == 1 else 32 * n_threads
    cdef double* removal = <double*>malloc(k * sizeof(double))
    cdef double* delta = <double*>malloc(bmax * k * sizeof(double))
    cdef double* chg = <double*>malloc(bmax * sizeof(double))
    cdef intp* slot = <intp*>malloc(bmax * sizeof(intp))
    cdef unsigned char* skip = <unsigned char*>malloc(bmax)
    # what a swap changes, kept to undo it: the medoid's row of Dm and the assignment
    cdef double* keep_d = <double*>malloc(3 * max(n, 1) * sizeof(double))
    cdef intp* keep_i = <intp*>malloc(2 * max(n, 1) * sizeof(intp))
    if removal == NULL or delta == NULL or chg == NULL or slot == NULL or skip == NULL \
            or keep_d == NULL or keep_i == NULL:
        free(removal); free(delta); free(chg); free(slot); free(skip)
        free(keep_d); free(keep_i)
        raise MemoryError()
    bcur = n_threads
    try:
        with nogil:
            _pam_removal(n, k, &near[0], &dn[0], &ds[0], wp, removal)
            while pos < T and since < n_visit:
                nb = min(bcur, T - pos, n_visit - since)
                for t in range(nb):   # a medoid is not a candidate
                    j = cand[pos + t]
                    skip[t] = _is_medoid(k, &med[0], j)
                if nb == 1 or n_threads == 1:
                    for t in range(nb):
                        if not skip[t]:
                            chg[t] = _pam_change(&D[rows[pos + t], 0], n, k, &near[0], &dn[0],
                                                 &ds[0], wp, removal, delta, &slot[t])
                else:
                    for t in prange(nb, num_threads=n_threads, schedule="static", chunksize=1):
                        if not skip[t]:
                            chg[t] = _pam_change(&D[rows[pos + t], 0], n, k, &near[0], &dn[0],
                                                 &ds[0], wp, removal, delta + t * k, &slot[t])
                used = nb
                for t in range(nb):
                    since = since + 1
                    if skip[t] or not chg[t] < 0.0:
                        continue
                    j = cand[pos + t]
                    b = slot[t]
                    old = med[b]
                    memcpy(keep_d, &Dm[b, 0], n * sizeof(double))
                    memcpy(keep_d + n, &dn[0], n * sizeof(double))
                    memcpy(keep_d + 2 * n, &ds[0], n * sizeof(double))
                    memcpy(keep_i, &near[0], n * sizeof(intp))
                    memcpy(keep_i + n, &seco[0], n * sizeof(intp))
                    new = _pam_swap(&D[rows[pos + t], 0], n, k, b, j, &Dm[0, 0], &med[0],
                                    &near[0], &seco[0], &dn[0], &ds[0], wp)
                    if not new < cur:   # negative only by rounding: undone, not the end
                        med[b] = old
                        memcpy(&Dm[b, 0], keep_d, n * sizeof(double))
                        memcpy(&dn[0], keep_d + n, n * sizeof(double))
                        memcpy(&ds[0], keep_d + 2 * n, n * sizeof(double))
                        memcpy(&near[0], keep_i, n * sizeof(intp))
                        memcpy(&seco[0], keep_i + n, n * sizeof(intp))
                        continue
                    nswap = nswap + 1
                    since = 1
                    used = t + 1
                    cur = new
                    _pam_removal(n, k, &near[0], &dn[0], &ds[0], wp, removal)
                    break
                if used == nb and bcur < bmax:
                    bcur = min(bmax, 2 * bcur)
                elif used < nb:
                    bcur = n_threads
                pos = pos + used
    finally:
        free(removal); free(delta); free(chg); free(slot); free(skip)
        free(keep_d); free(keep_i)
    state[0] = since
    state[1] = nswap
    loss[0] = cur
    return pos
