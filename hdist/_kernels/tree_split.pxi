# The KD-tree's split of a node: the choice of the attribute (kd_choose) and the
# partition of the node's rows by its kind (included by trees.pyx, whose declarations
# they use).


ctypedef struct KdRule:
    # the split kd_choose picks for a node: its kind (S_*), attribute and, for an
    # embedding, the dimension
    int kind
    intp a
    intp dim


cdef void kd_choose(const BuildS* B, const TreeS* T, intp node, KdRule* rule) noexcept nogil:
    """The split of node ``node`` whose term spreads most over the node's box (a
    continuous range, a nominal set of two values or more, a table's largest term, an
    embedding dimension's range, or a missing-value term); S_POS when none is above 0."""
    cdef const PlanS* P = B.P
    cdef int pm = P.pmode
    cdef double p = P.p
    cdef intp a, b, off, V
    cdef int best_kind = S_POS
    cdef intp best_a = -1, best_dim = 0
    cdef double best = 0.0, v, vmax, ext
    cdef unsigned char fl
    cdef uint64_t mask
    cdef int b0
    for a in range(P.mc):
        fl = T.c_fl[node * P.mc + a]
        if fl & F_PRESENT:
            v = P.c_w[a] * pw((T.c_hi[node * P.mc + a] - T.c_lo[node * P.mc + a])
                              * P.c_inv[a], pm, p)
            if v > best:
                best, best_kind, best_a = v, S_CONT, a
            if fl & F_MISSING:
                v = T.c_pen[node * P.mc + a]
                if v > best:
                    best, best_kind, best_a = v, S_CONT_MISS, a
    for a in range(P.mo):
        fl = T.o_fl[node * P.mo + a]
        if hdist_popcount64(T.o_mask[node * P.mo + a]) >= 2 and P.o_w[a] > best:
            best, best_kind, best_a = P.o_w[a], S_OVER, a
        if (fl & F_PRESENT) and (fl & F_MISSING) and P.o_miss[a] > best:
            best, best_kind, best_a = P.o_miss[a], S_OVER_MISS, a
    for a in range(P.mt):
        fl = T.t_fl[node * P.mt + a]
        if fl & F_PRESENT:
            mask = T.t_mask[node * P.mt + a]
            V = P.t_V[a]
            b0 = hdist_ctz64(mask)
            off = P.t_off[a] + b0 * (V + 1)
            vmax = 0.0
            while mask:
                b = hdist_ctz64(mask)
                if P.t_tab[off + b] > vmax:
                    vmax = P.t_tab[off + b]
                mask &= mask - 1
            if (fl & F_UNSEEN) and P.t_tab[off + V] > vmax:
                vmax = P.t_tab[off + V]
            if vmax > best:
                best, best_kind, best_a = vmax, S_TAB, a
        if (fl & (F_PRESENT | F_UNSEEN)) and (fl & F_MISSING) and P.t_miss[a] > best:
            best, best_kind, best_a = P.t_miss[a], S_TAB_MISS, a
    for a in range(P.me):
        fl = T.e_fl[node * P.me + a]
        if fl & F_PRESENT:
            for b in range(P.e_off[a], P.e_off[a + 1]):
                ext = T.e_hi[node * B.D + b] - T.e_lo[node * B.D + b]
                v = P.e_rw[a] * pw(ext, pm, p)
                if v > best:
                    best, best_kind, best_a, best_dim = v, S_EMB, a, b
            if fl & F_MISSING and P.e_miss[a] > best:
                best, best_kind, best_a = P.e_miss[a], S_EMB_MISS, a
    rule.kind, rule.a, rule.dim = best_kind, best_a, best_dim


cdef intp kd_split_numeric(BuildS* B, TreeS* T, intp node, intp s, intp e,
                           const KdRule* rule) noexcept nogil:
    """Partition rows perm[s:e) on a continuous attribute or an embedding dimension: the
    rows with a value first, the missing after (order kept); unless the split is on the
    missing values or the present rows are at most half, the left child takes the
    ``(e - s) // 2`` smallest (value, index), the threshold recorded."""
    cdef const PlanS* P = B.P
    cdef const RowsS* R = B.R
    cdef intp n = e - s, half = n // 2, pos, j, cnt_p, mid
    cdef intp best_a = rule.a, best_dim = rule.dim
    cdef int best_kind = rule.kind
    cdef double x
    for pos in range(s, e):
        j = B.perm[pos]
        if best_kind == S_CONT or best_kind == S_CONT_MISS:
            x = R.c[j * P.mc + best_a]
        else:
            x = R.e[j * B.D + P.e_off[best_a]]
        B.side[pos - s] = 0 if x == x else 1
    mid = stable_partition(B.perm, B.side, s, e, B.itmp)
    cnt_p = mid - s
    if best_kind == S_CONT_MISS or best_kind == S_EMB_MISS or cnt_p <= half:
        return mid
    # median of the present values: left gets the `half` smallest (value, index)
    for pos in range(s, mid):
        j = B.perm[pos]
        if best_kind == S_CONT:
            B.key[pos - s] = R.c[j * P.mc + best_a]
        else:
            B.key[pos - s] = R.e[j * B.D + best_dim]
    select_kth(B.key, B.perm + s, cnt_p, half)
    T.sthr[node] = B.key[half]
    return s + half


cdef intp kd_split_missing(BuildS* B, intp s, intp e, const KdRule* rule) noexcept nogil:
    """Partition rows perm[s:e) on whether they miss a nominal attribute (overlap or
    table): the rows with a value first, order kept."""
    cdef const PlanS* P = B.P
    cdef const RowsS* R = B.R
    cdef intp pos, j
    cdef int cx
    for pos in range(s, e):
        j = B.perm[pos]
        if rule.kind == S_OVER_MISS:
            cx = R.o[j * P.mo + rule.a]
        else:
            cx = R.t[j * P.mt + rule.a]
        B.side[pos - s] = 0 if cx >= 0 else 1
    return stable_partition(B.perm, B.side, s, e, B.itmp)


cdef intp kd_bucket_order(const PlanS* P, const TreeS* T, intp node, const KdRule* rule,
                          const intp* counts, intp* order) noexcept nogil:
    """The node's present values (buckets) of a nominal split into ``order``, their number
    returned: overlap by count (descending), tables by their term to the first present
    bucket (ascending), so that similar values stay together; ties by value."""
    cdef intp best_a = rule.a, V = P.t_V[best_a] if rule.kind == S_TAB else 0
    cdef intp nb = 0, i, b, tmpi
    cdef double score[64]
    cdef double tmpd
    cdef uint64_t mask
    cdef int b0
    if rule.kind == S_OVER:
        mask = T.o_mask[node * P.mo + best_a]
    else:
        mask = T.t_mask[node * P.mt + best_a]
    b0 = hdist_ctz64(mask) if mask else 0
    while mask:
        b = hdist_ctz64(mask)
        order[nb] = b
        if rule.kind == S_OVER:
            score[nb] = -<double> counts[b]
        else:
            score[nb] = P.t_tab[P.t_off[best_a] + b0 * (V + 1) + b]
        nb += 1
        mask &= mask - 1
    for i in range(1, nb):
        tmpi = order[i]
        tmpd = score[i]
        b = i - 1
        while b >= 0 and (score[b] > tmpd or (score[b] == tmpd and order[b] > tmpi)):
            order[b + 1] = order[b]
            score[b + 1] = score[b]
            b -= 1
        order[b + 1] = tmpi
        score[b + 1] = tmpd
    return nb


cdef intp kd_split_nominal(BuildS* B, TreeS* T, intp node, intp s, intp e,
                           const KdRule* rule) noexcept nogil:
    """Partition rows perm[s:e) on a nominal attribute's values (overlap or table): the
    buckets in :func:`kd_bucket_order` go left while they hold at most half of the rows
    with a value (unseen values go right), the missing rows to the smaller side; the
    left set and that side recorded."""
    cdef const PlanS* P = B.P
    cdef const RowsS* R = B.R
    cdef intp best_a = rule.a, pos, j, V, i, nb
    cdef int best_kind = rule.kind, cx, miss_left
    cdef intp counts[64]
    cdef intp order[64]
    cdef intp U, M, total, cum
    cdef uint64_t leftmask
    # count rows per bucket
    for i in range(64):
        counts[i] = 0
    U = 0
    M = 0
    V = P.t_V[best_a] if best_kind == S_TAB else 0
    for pos in range(s, e):
        j = B.perm[pos]
        cx = R.o[j * P.mo + best_a] if best_kind == S_OVER else R.t[j * P.mt + best_a]
        if cx < 0:
            M += 1
        elif best_kind == S_TAB and cx >= V:
            U += 1
        else:
            counts[cx & 63] += 1
    nb = kd_bucket_order(P, T, node, rule, counts, order)
    total = U
    for i in range(nb):
        total += counts[order[i]]
    cum = counts[order[0]]
    leftmask = (<uint64_t> 1) << order[0]
    i = 1
    while i < nb - (0 if U > 0 else 1) and 2 * (cum + counts[order[i]]) <= total:
        cum += counts[order[i]]
        leftmask |= (<uint64_t> 1) << order[i]
        i += 1
    miss_left = 1 if cum < total - cum else 0
    T.smask[node] = leftmask
    T.sfl[node] = miss_left
    for pos in range(s, e):
        j = B.perm[pos]
        cx = R.o[j * P.mo + best_a] if best_kind == S_OVER else R.t[j * P.mt + best_a]
        if cx < 0:
            B.side[pos - s] = 0 if miss_left else 1
        elif best_kind == S_TAB and cx >= V:
            B.side[pos - s] = 1
        else:
            B.side[pos - s] = 0 if (leftmask >> (cx & 63)) & 1 else 1
    return stable_partition(B.perm, B.side, s, e, B.itmp)


cdef intp kd_split(BuildS* B, TreeS* T, intp node, intp s, intp e) noexcept nogil:
    """Choose a split of rows perm[s:e) (:func:`kd_choose`), partition them and record the
    rule.  Returns the first position of the right child (s < mid < e)."""
    cdef KdRule rule
    kd_choose(B, T, node, &rule)
    T.sk[node] = rule.kind
    T.sa[node] = rule.a
    T.sdim[node] = rule.dim
    T.sthr[node] = INFINITY
    T.smask[node] = 0
    T.sfl[node] = 0
    if rule.kind == S_POS:
        qsort(B.perm + s, e - s, sizeof(intp), cmp_intp)
        return s + (e - s) // 2
    if rule.kind == S_CONT or rule.kind == S_CONT_MISS or rule.kind == S_EMB \
            or rule.kind == S_EMB_MISS:
        return kd_split_numeric(B, T, node, s, e, &rule)
    if rule.kind == S_OVER_MISS or rule.kind == S_TAB_MISS:
        return kd_split_missing(B, s, e, &rule)
    return kd_split_nominal(B, T, node, s, e, &rule)
