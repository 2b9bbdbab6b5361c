# Included by tiles.pyx: searches over inverted lists.
#
# The reference rows are stored list by list, attribute-major (value (a, j) at
# [a * n + j], the layout ``_tref`` makes of a whole reference set), with ``offsets``
# delimiting the lists and ``ids`` giving each stored row's index in the indexed set.
# A query scans the lists its ``probes`` row names with the tile kernel (``hd_tile``):
# the same reduced distances, true distances and (distance, index) order as ``knn`` and
# ``radius`` over the same rows, so that probing every list returns what brute force
# returns.  The k-NN scan takes the queries in groups that read each list once for all
# the queries of the group probing it (``_knn_group``, ``_radius_group``).


#: a group of queries scanning their lists together holds about this many queries per
#: list it probes (_knn_group, _radius_group)
LIST_GROUP_PROBES = 32


def _list_group_rows(Py_ssize_t nq, int n_threads, Py_ssize_t n_lists,
                     Py_ssize_t probes):
    """Queries per group of a list scan (``_knn_group``, ``_radius_group``), ``probes``
    lists scanned together by each query: about ``LIST_GROUP_PROBES`` queries per list
    (at least 8), as long as every thread still gets a group; with fewer than 8 queries
    per thread, ``nq // n_threads`` (at least one), a group or more for every thread."""
    cdef Py_ssize_t per = max(8, LIST_GROUP_PROBES * n_lists // max(1, probes))
    return max(1, min(per, nq // max(1, n_threads)))


cdef object _store_array(store, str name, object dtype, intp m, intp n):
    """``store[name]``, checked: C-contiguous of ``dtype``, ``[m, n]`` (any non-empty
    array when ``m == 0``)."""
    a = store[name]
    if not isinstance(a, np.ndarray) or a.dtype != dtype or not a.flags.c_contiguous:
        raise ValueError("store[%r] must be a C-contiguous %s array" % (name, np.dtype(dtype)))
    if m and (a.ndim != 2 or a.shape[0] != m or a.shape[1] != n):
        raise ValueError("store[%r] has shape %s, expected (%d, %d)" % (name, a.shape, m, n))
    if not m and a.size < 1:
        raise ValueError("store[%r] must hold at least one element" % name)
    return a


cdef hd_tr _list_store(CPlan plan, store, intp n) except *:
    """The kernel's view of a list store: a dict of the attribute-major arrays ``c``,
    ``cpen`` ([mc, n] float64), ``o`` ([mo, n] intc), ``t`` ([mt, n] intc) and ``e``
    ([D, n] float64), each C-contiguous (an empty block may be any 1-element array of
    its dtype).  The arrays stay alive as long as ``store`` does."""
    cdef const PlanS* P = &plan.s
    cdef hd_tr T
    cdef intp D = 0
    if P.me:
        D = P.e_off[P.me]
    T.ld = n
    T.c = <const double*> cnp.PyArray_DATA(_store_array(store, "c", np.float64, P.mc, n))
    T.cpen = <const double*> cnp.PyArray_DATA(_store_array(store, "cpen", np.float64, P.mc, n))
    T.o = <const int*> cnp.PyArray_DATA(_store_array(store, "o", np.intc, P.mo, n))
    T.t = <const int*> cnp.PyArray_DATA(_store_array(store, "t", np.intc, P.mt, n))
    T.e = <const double*> cnp.PyArray_DATA(_store_array(store, "e", np.float64, D, n))
    return T


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef object _check_lists(intp n, intp[::1] offsets, intp[::1] ids, intp[:, ::1] probes):
    """Refuse offsets that do not delimit ``n`` stored rows, or probes naming no list."""
    cdef intp L = offsets.shape[0] - 1, l, q, p
    if L < 1 or offsets[0] != 0 or offsets[L] != n or ids.shape[0] != n:
        raise ValueError("offsets must run from 0 to the %d stored rows (ids: %d)"
                         % (n, ids.shape[0]))
    for l in range(L):
        if offsets[l + 1] < offsets[l]:
            raise ValueError("offsets must be non-decreasing")
    for q in range(probes.shape[0]):
        for p in range(probes.shape[1]):
            if probes[q, p] >= L or probes[q, p] < -1:
                raise ValueError("probes must name lists in [0, %d) or be -1, got %d"
                                 % (L, probes[q, p]))


cdef inline double _stored_true(const PlanS* P, const RowsS* Q, intp q, const hd_tr* S,
                                intp j, double s, double* scratch) noexcept nogil:
    """``true_of`` for stored row j: the rare pair whose reduced distance is outside the
    trusted range is computed again from a row-major copy of row j (in ``scratch``: 2 mc
    + D doubles, then mo + mt ints)."""
    cdef RowsS one
    cdef intp a, D
    cdef double* c
    cdef double* cp
    cdef double* e
    cdef int* o
    cdef int* t
    if not (P.pmode >= 2 and not (s >= 1e-280 and s <= 1e280)):
        return finalize(P, s)
    D = Q.D
    c = scratch
    cp = c + P.mc
    e = cp + P.mc
    o = <int*> (e + D)
    t = o + P.mo
    for a in range(P.mc):
        c[a] = S.c[a * S.ld + j]
        cp[a] = S.cpen[a * S.ld + j]
    for a in range(D):
        e[a] = S.e[a * S.ld + j]
    for a in range(P.mo):
        o[a] = S.o[a * S.ld + j]
    for a in range(P.mt):
        t[a] = S.t[a * S.ld + j]
    one.n = 1
    one.c = c
    one.cpen = cp
    one.o = o
    one.t = t
    one.e = e
    one.D = D
    one.c_nan = 1
    return pair_true_scaled(P, Q, q, &one, 0)


cdef inline intp _scratch_doubles(const PlanS* P, const RowsS* Q) noexcept nogil:
    return 2 * P.mc + Q.D + (P.mo + P.mt + 1) // 2 + 1


cdef inline void _offer_tile(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q,
                             const hd_tq* qr, const hd_tr* S, intp t0, intp t1,
                             const intp* ids, intp self_id, double* hd, intp* hi, intp k,
                             TieList* ties, intp n, double* scratch,
                             double* buf) noexcept nogil:
    """Offer stored rows ``t0 .. t1`` (at most ``HD_TB``) to query q's heap ``hd``/``hi``
    (``qr``: its row as the tile kernel reads it; ``buf``: room for ``HD_TB`` reduced
    distances), skipping indexed row ``self_id``."""
    cdef intp j, idx
    cdef double s, bound = reduced_bound(P, hd[0])
    if hd_tile(T, qr, S, t0, t1 - t0, bound, buf):
        return                  # every row of the tile is beyond the k-th distance
    for j in range(t0, t1):
        s = buf[j - t0]
        if s > bound:
            continue
        idx = ids[j]
        if idx == self_id:
            continue
        s = _stored_true(P, Q, q, S, j, s, scratch)
        if heap_offer(hd, hi, k, s, idx, ties, n):
            bound = reduced_bound(P, hd[0])


cdef intp _knn_probed(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q,
                      const hd_tr* S, const intp* off, const intp* ids, const intp* probes,
                      intp n_probe, double* hd, intp* hi, intp k, intp self_id,
                      double* scratch, TieList* ties, intp n) noexcept nogil:
    """Update query q's heap with the rows of its probed lists; returns the rows scanned.
    ``ties`` (NULL: none): q's tie list (``heap_offer``); ``n``: the sentinel index."""
    cdef double buf[HD_TB]
    cdef hd_tq qr
    cdef intp p, l, t0, t1, e, rows = 0
    _tq_row(P, Q, q, &qr)
    for p in range(n_probe):
        l = probes[p]
        if l < 0:
            break
        t0 = off[l]
        e = off[l + 1]
        rows += e - t0
        while t0 < e:
            t1 = min(t0 + HD_TB, e)
            _offer_tile(T, P, Q, q, &qr, S, t0, t1, ids, self_id, hd, hi, k, ties, n,
                        scratch, buf)
            t0 = t1
    return rows


cdef int _list_queries(const intp* pr, intp np_, intp q0, intp q1, intp L, intp first,
                       intp** start, intp** who) noexcept nogil:
    """The queries ``q0 .. q1`` of each list, from their probes ``first, first + 1, ...``
    (the probes end at the first -1): list l's are ``(*who)[(*start)[l] .. (*start)[l + 1]]``,
    ascending.  Both arrays are new (freed by the caller).  Returns 1 when out of memory
    (nothing allocated)."""
    cdef intp q, p, l, nm = 0
    cdef intp* st = <intp*> calloc(L + 1, sizeof(intp))
    cdef intp* w
    if st == NULL:
        return 1
    for q in range(q0, q1):
        for p in range(np_):
            l = pr[q * np_ + p]
            if l < 0:
                break
            if p >= first:
                st[l + 1] += 1
                nm += 1
    w = <intp*> malloc((nm + 1) * sizeof(intp))
    if w == NULL:
        free(st)
        return 1
    for l in range(L):
        st[l + 1] += st[l]
    # st[l] advances to the end of list l's part, which is where list l + 1's starts
    for q in range(q0, q1):
        for p in range(np_):
            l = pr[q * np_ + p]
            if l < 0:
                break
            if p >= first:
                w[st[l]] = q
                st[l] += 1
    for l in range(L, 0, -1):
        st[l] = st[l - 1]
    st[0] = 0
    start[0] = st
    who[0] = w
    return 0


cdef int _knn_group(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q0, intp q1,
                    const hd_tr* S, const intp* off, intp L, const intp* ids,
                    const intp* pr, intp np_, double* D, intp* I, intp k, const intp* selfs,
                    double* scratch, TieList* ties, intp n, intp* cnt) noexcept nogil:
    """Queries ``q0 .. q1``: each scans its first probed list (its nearest centre's: a
    tight k-th distance early), then the group's other probed lists are scanned list
    after list, each tile of a list by every query of the group that probes it while
    the tile is in the cache (queries scanning their lists one after another would read
    each list from memory once per query).  The rows each query is offered do not
    change, so neither do its results (heaps ordered by (distance, index)).  Returns 1
    when out of memory."""
    cdef double buf[HD_TB]
    cdef hd_tq qr
    cdef intp q, l, t0, t1, e, j
    cdef intp* start
    cdef intp* who
    for q in range(q0, q1):
        cnt[q] = _knn_probed(T, P, Q, q, S, off, ids, pr + q * np_, 1, D + q * k, I + q * k,
                             k, selfs[q], scratch, ties + q if ties != NULL else NULL, n)
    if np_ < 2 or _list_queries(pr, np_, q0, q1, L, 1, &start, &who):
        return 0 if np_ < 2 else 1
    for l in range(L):
        e = off[l + 1]
        for j in range(start[l], start[l + 1]):
            cnt[who[j]] += e - off[l]
        t0 = off[l]
        while t0 < e:
            t1 = min(t0 + HD_TB, e)
            for j in range(start[l], start[l + 1]):
                q = who[j]
                _tq_row(P, Q, q, &qr)
                _offer_tile(T, P, Q, q, &qr, S, t0, t1, ids, selfs[q], D + q * k,
                            I + q * k, k, ties + q if ties != NULL else NULL, n, scratch,
                            buf)
            t0 = t1
    free(who)
    free(start)
    return 0


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def knn_lists(CPlan plan, CRows Q, store, intp[::1] offsets, intp[::1] ids,
              intp[:, ::1] probes, intp k, int n_threads, self_ids=None, ties=False):
    """The ``k`` nearest stored rows of each query row among the lists it probes.

    ``store``, ``offsets`` and ``ids`` describe the rows list by list (see
    ``_list_store``); query q scans the lists ``probes[q, 0], probes[q, 1], ...`` up to
    the first -1.  ``self_ids`` (intp [n_q], optional): a stored index each query skips
    (-1: none).  Returns ``(dist, ind, scanned)``: ``[n_q, k]`` true distances and
    indices sorted by (distance, index) -- a query that met fewer than ``k`` rows keeps
    ``(inf, n)`` in its last places, ``n`` the stored rows -- and the rows each query
    scanned.  ``ties``: the lists also hold, after the k-th, every other scanned row at
    the k-th distance, as ``knn(..., ties=True)`` (:meth:`TieLists.widen`), or only
    their tally (a tally's :class:`TieLists`, :func:`tie_lists`).  Results do
    not depend on the thread count."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef intp nq = Q.s.n, n = ids.shape[0], np_ = probes.shape[1], b0, b1, c, per = 8
    cdef intp i, q, lo, hi_, block
    if probes.shape[0] != nq:
        raise ValueError("probes has %d rows for %d queries" % (probes.shape[0], nq))
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    cdef hd_tr S = _list_store(plan, store, n)
    _check_lists(n, offsets, ids, probes)
    cdef intp[::1] selfs
    if self_ids is None:
        selfs = np.full(max(1, nq), -1, dtype=np.intp)
    else:
        selfs = np.ascontiguousarray(self_ids, dtype=np.intp)
        if selfs.shape[0] != nq:
            raise ValueError("self_ids has %d entries for %d queries" % (selfs.shape[0], nq))
    dist = np.full((nq, k), np.inf)
    ind = np.full((nq, k), n, dtype=np.intp)   # sentinel index > every real index
    scanned = np.zeros(nq, dtype=np.intp)
    if nq == 0:
        return dist, ind, scanned
    cdef double[:, ::1] D = dist
    cdef intp[:, ::1] I = ind
    cdef intp[::1] cnt = scanned
    cdef hd_tplan TP = _tplan(plan)
    cdef const intp* off = &offsets[0]
    cdef const intp* idp = &ids[0] if n else NULL
    cdef const intp* pr = &probes[0, 0] if np_ else NULL
    cdef intp sd = _scratch_doubles(P, QS)
    cdef intp per_q = max(1, n * np_ // max(1, offsets.shape[0] - 1))
    cdef TieLists tl = tie_lists(ties, nq)
    cdef TieList* tq = tl.t if tl is not None else NULL
    n_threads = _threads_for(n_threads, nq * per_q)
    block = _region_rows(n_threads, per_q)
    if np_ == 0:
        finish_heaps(plan, dist, ind)
        if tl is not None:
            dist, ind = tl.widen(dist, ind)
        return dist, ind, scanned
    # per-thread room for a row copied out of the store (``_stored_true``)
    keep_scratch = np.empty((n_threads, sd))
    cdef double* scratch = <double*> cnp.PyArray_DATA(keep_scratch)
    # groups of queries that scan their lists together (_knn_group): enough that each
    # list is probed by several of them, while every thread still gets groups
    cdef intp L = offsets.shape[0] - 1
    cdef int failed = 0
    per = _list_group_rows(nq, n_threads, L, np_ - 1)
    block = max(block, 2 * n_threads * per)
    for b0 in range(0, nq, block):
        b1 = min(nq, b0 + block)
        with nogil:
            for c in prange((b1 - b0 + per - 1) // per, num_threads=n_threads,
                            schedule="dynamic"):
                lo = b0 + c * per
                hi_ = min(b1, lo + per)
                failed += _knn_group(&TP, P, QS, lo, hi_, &S, off, L, idp, pr, np_,
                                     &D[0, 0], &I[0, 0], k, &selfs[0], _mem_of(scratch, sd),
                                     tq, n, &cnt[0])
        if failed:
            raise MemoryError()
        PyErr_CheckSignals()
    finish_heaps(plan, dist, ind)
    if tl is not None:
        dist, ind = tl.widen(dist, ind)
    return dist, ind, scanned


cdef int _radius_group(const hd_tplan* T, const PlanS* P, const RowsS* Q, intp q0,
                       intp q1, const hd_tr* S, const intp* off, intp L, const intp* ids,
                       const intp* pr, intp np_, double r, double rred, const intp* selfs,
                       double* scratch, Hit** bufs, intp* counts,
                       intp* scanned) noexcept nogil:
    """Stored rows within true distance r of each query of ``q0 .. q1`` among the lists
    it probes: query q's ``counts[q - q0]`` rows, sorted by (distance, index), in a new
    buffer ``bufs[q - q0]`` (NULL when none; freed by the caller), and the rows it
    scanned in ``scanned[q]``.  The lists are scanned one after another, each tile of a
    list by every query of the group that probes it while the tile is in the cache (as
    ``_knn_group``); the rows each query meets, and so its sorted hits, are those of its
    own lists.  Returns 0, or -1 when out of memory (the count of a query whose buffer
    could not grow -1)."""
    cdef double tb[HD_TB]
    cdef hd_tq qr
    cdef intp q, l, t0, t1, e, j, h
    cdef double d
    cdef intp* start
    cdef intp* who
    for q in range(q0, q1):
        bufs[q - q0] = NULL
        counts[q - q0] = 0
        scanned[q] = 0
    if _list_queries(pr, np_, q0, q1, L, 0, &start, &who):
        return -1
    for l in range(L):
        e = off[l + 1]
        for h in range(start[l], start[l + 1]):
            scanned[who[h]] += e - off[l]
        t0 = off[l]
        while t0 < e:
            t1 = min(t0 + HD_TB, e)
            for h in range(start[l], start[l + 1]):
                q = who[h]
                _tq_row(P, Q, q, &qr)
                if hd_tile(T, &qr, S, t0, t1 - t0, rred, tb):
                    continue        # every row of the tile is beyond the radius
                for j in range(t0, t1):
                    if tb[j - t0] > rred or ids[j] == selfs[q]:
                        continue
                    d = _stored_true(P, Q, q, S, j, tb[j - t0], scratch)
                    if d <= r and _hit_push(&bufs[q - q0], &counts[q - q0], d, ids[j]) < 0:
                        counts[q - q0] = -1
                        free(who)
                        free(start)
                        return -1
            t0 = t1
    free(who)
    free(start)
    for q in range(q0, q1):
        if counts[q - q0] > 1:
            sort_hits(bufs[q - q0], counts[q - q0])
    return 0


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def radius_lists(CPlan plan, CRows Q, store, intp[::1] offsets, intp[::1] ids,
                 intp[:, ::1] probes, double r, int n_threads, self_ids=None):
    """Stored rows within true distance ``r`` (inclusive) of each query row among the
    lists it probes (arguments as for ``knn_lists``), sorted by (distance, index).
    Returns two lists of arrays (distances, indices) and the rows each query scanned."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef intp nq = Q.s.n, n = ids.shape[0], np_ = probes.shape[1], q, b0, b1
    cdef intp block
    cdef double rred = reduced_radius(plan, r)
    if probes.shape[0] != nq:
        raise ValueError("probes has %d rows for %d queries" % (probes.shape[0], nq))
    cdef hd_tr S = _list_store(plan, store, n)
    _check_lists(n, offsets, ids, probes)
    cdef intp[::1] selfs
    if self_ids is None:
        selfs = np.full(max(1, nq), -1, dtype=np.intp)
    else:
        selfs = np.ascontiguousarray(self_ids, dtype=np.intp)
        if selfs.shape[0] != nq:
            raise ValueError("self_ids has %d entries for %d queries" % (selfs.shape[0], nq))
    out_d = []
    out_i = []
    scanned = np.zeros(nq, dtype=np.intp)
    if nq == 0:
        return out_d, out_i, scanned
    cdef intp[::1] sc = scanned
    cdef hd_tplan TP = _tplan(plan)
    cdef const intp* off = &offsets[0]
    cdef const intp* idp = &ids[0] if n else NULL
    cdef const intp* pr = &probes[0, 0] if np_ else NULL
    cdef intp sd = _scratch_doubles(P, QS)
    cdef intp per_q = max(1, n * np_ // max(1, offsets.shape[0] - 1))
    cdef intp L = offsets.shape[0] - 1, per, c, lo, hi_
    cdef int failed = 0
    n_threads = _threads_for(n_threads, nq * per_q)
    # groups of queries that scan their lists together (_radius_group), as knn_lists'
    per = _list_group_rows(nq, n_threads, L, np_)
    block = min(nq, max(_region_rows(n_threads, per_q), 2 * n_threads * per))
    keep_scratch = np.empty((n_threads, sd))
    cdef double* scratch = <double*> cnp.PyArray_DATA(keep_scratch)
    cdef Hit** bufs = <Hit**> malloc(block * sizeof(Hit*))
    cdef intp* counts = <intp*> malloc(block * sizeof(intp))
    if bufs == NULL or counts == NULL:
        free(bufs)
        free(counts)
        raise MemoryError()
    for q in range(block):
        bufs[q] = NULL
        counts[q] = 0
    try:
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            if np_:
                with nogil:
                    for c in prange((b1 - b0 + per - 1) // per, num_threads=n_threads,
                                    schedule="dynamic"):
                        lo = b0 + c * per
                        hi_ = min(b1, lo + per)
                        failed += _radius_group(&TP, P, QS, lo, hi_, &S, off, L, idp, pr,
                                                np_, r, rred, &selfs[0],
                                                _mem_of(scratch, sd), &bufs[lo - b0],
                                                &counts[lo - b0], &sc[0])
            if failed:
                raise MemoryError("radius search ran out of memory")
            _take_hits(bufs, counts, b1 - b0, out_d, out_i)
            PyErr_CheckSignals()
    finally:
        for q in range(block):
            free(bufs[q])
        free(bufs)
        free(counts)
    return out_d, out_i, scanned
