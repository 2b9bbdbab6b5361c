# The trees' k-NN and radius queries and the leaf-major copy of the rows they scan
# (included by trees.pyx, whose declarations they use).

# ---------------------------------------------------------------------------
# queries

ctypedef struct QueryS:
    const PlanS* P
    const TreeS* T
    const RowsS* Q        # query rows
    const RowsS* Ro       # the indexed rows, in index order
    const intp* perm
    const double* rowdist
    const unsigned char* two  # ball: per query, whether the two-sided row bound holds
    intp D
    intp stack_cap
    int ball
    int excl
    double margin         # KD: relative lowering of the bounds
    double eta            # ball: relative error allowance on true distances
    double rred           # radius queries: the reduced-distance threshold
    double r              # radius queries: the true-distance radius
    const void* tview     # the tile kernel's view of the plan (tile_view)
    intp tnb              # most rows per tile_block call
    AttrRows lm           # R block by block: block [s, e) attribute-major at s * m, ld = e - s
    const intp* blk       # [nodes, 2]: the block [s, e) holding a node's rows; s < 0 for
                          # the nodes above the blocks (``leaf_major``)
    TieList* ties         # k-NN: per query, the rows tied with its k-th (NULL: not kept)


cdef inline bint past_kth(const QueryS* S, double d, double kth) noexcept nogil:
    """Whether rows at a distance of at least ``d``, all of larger index than the k-th,
    can be left out: at ``d == kth`` they would tie with it, which matters only when the
    ties are kept."""
    return d > kth or (d == kth and S.ties == NULL)


cdef inline double* leaf_buffer(const QueryS* S) noexcept nogil:
    """A buffer for the reduced distances of a leaf's rows; NULL when out of memory."""
    return <double*> malloc((S.tnb + 1) * sizeof(double))


cdef inline void leaf_prefetch(const QueryS* S, intp node) noexcept nogil:
    """Start loading the rows of leaf ``node`` (the blocks the tile kernel reads when
    the query has no missing value) so that the loads overlap."""
    cdef const PlanS* P = S.P
    cdef intp s0 = S.blk[2 * node], nl = S.blk[2 * node + 1] - S.blk[2 * node]
    if s0 < 0:
        return
    if P.mc:
        hdist_prefetch(S.lm.c + s0 * P.mc, nl * P.mc * sizeof(double))
    if P.mo:
        hdist_prefetch(S.lm.o + s0 * P.mo, nl * P.mo * sizeof(int))
    if P.mt:
        hdist_prefetch(S.lm.t + s0 * P.mt, nl * P.mt * sizeof(int))
    if P.me:
        hdist_prefetch(S.lm.e + s0 * S.D, nl * S.D * sizeof(double))


cdef inline intp leaf_chunk(const QueryS* S, intp q, intp node, intp e0, intp e1, double dq,
                            double kt, double bound, double* out, intp* nb) noexcept nogil:
    """The next tile of leaf ``node`` from tree position e0 on (the ball tree skips the
    leading rows its per-row bound rules out at ``kt``): returns its first position and
    sets ``nb`` to its row count, with their reduced distances in ``out``; ``nb`` is 0
    when the leaf is done, and minus the row count when every row exceeds ``bound``."""
    cdef intp n
    if S.ball:
        e0 = ball_trim(S, q, e0, e1, dq, kt)
    n = e1 - e0 if e1 - e0 < S.tnb else S.tnb
    nb[0] = n
    if n > 0 and leaf_tile(S, q, node, e0, n, bound, out):
        nb[0] = -n
    return e0


cdef inline int leaf_tile(const QueryS* S, intp q, intp node, intp e0, intp nb,
                          double bound, double* out) noexcept nogil:
    """Reduced distances of query q to the rows at tree positions [e0, e0 + nb) of leaf
    ``node`` (its block's rows stored attribute-major, ``leaf_major``) by the tile
    kernel: those of pair_reduced, bit for bit.  Returns 1 when every row exceeds
    ``bound``."""
    cdef const PlanS* P = S.P
    cdef intp s0 = S.blk[2 * node]
    cdef AttrRows L
    L.ld = S.blk[2 * node + 1] - s0
    L.c = S.lm.c + s0 * P.mc
    L.cpen = S.lm.cpen + s0 * P.mc
    L.o = S.lm.o + s0 * P.mo
    L.t = S.lm.t + s0 * P.mt
    L.e = S.lm.e + s0 * S.D
    return tile_block(S.tview, P, S.Q, q, &L, e0 - s0, nb, bound, out)


cdef inline intp ball_trim(const QueryS* S, intp q, intp e0, intp e1, double dq,
                           double kt) noexcept nogil:
    """First position of [e0, e1) whose row the ball tree's per-row bound cannot rule
    out at ``kt`` (e1 when none)."""
    while e0 < e1 and ball_row_lower(dq, S.rowdist[e0], S.eta, S.two[q]) > kt:
        e0 += 1
    return e0


cdef inline double ball_lower(double dqp, double rad, double eta) noexcept nogil:
    """A lower bound of the computed distance from the query to any row within ``rad``
    of a pivot at computed distance ``dqp`` (triangle inequality with margins)."""
    return (dqp * (1.0 - eta) - rad * (1.0 + eta)) * (1.0 - eta)


cdef inline double ball_row_lower(double dqp, double rd, double eta,
                                  unsigned char two_sided) noexcept nogil:
    """Lower bound of the computed d(q, x) from d(q, pivot) and d(x, pivot):
    d(q, x) >= d(q, p) - d(x, p) (x as middle point) and, when the query may serve as
    a middle point (``two_sided``), d(q, x) >= d(x, p) - d(q, p)."""
    cdef double a = dqp * (1.0 - eta) - rd * (1.0 + eta)
    cdef double b = rd * (1.0 - eta) - dqp * (1.0 + eta)
    if two_sided and b > a:
        a = b
    return a * (1.0 - eta)


cdef int knn_chunk(const QueryS* S, intp q0, intp q1, double* Dd, intp* Ii, intp k,
                   intp* cnt) noexcept nogil:
    """k nearest rows for queries [q0, q1); lists in Dd/Ii hold (true distance, index),
    initialised to (inf, sentinel).  Returns -1 when out of memory."""
    cdef const PlanS* P = S.P
    cdef const TreeS* T = S.T
    cdef intp cap = S.stack_cap
    cdef intp* snode = <intp*> malloc(cap * sizeof(intp))
    cdef double* slb = <double*> malloc(cap * sizeof(double))
    cdef double* sdq = <double*> malloc(cap * sizeof(double))
    cdef double* bm = <double*> malloc((P.mt * 64 + 1) * sizeof(double))
    cdef double* tun = <double*> malloc((P.mt + 1) * sizeof(double))
    cdef double* lbuf = leaf_buffer(S)
    cdef QCtx C
    cdef intp q, sp, node, pos, j, self_j, c, L, Rn, e0, nb
    cdef double lb, lbl, lbr, kth, s, dq, dql, dqr, kt = INFINITY
    cdef double* hd
    cdef intp* hi
    if snode == NULL or slb == NULL or sdq == NULL or bm == NULL or tun == NULL \
            or lbuf == NULL:
        free(snode)
        free(slb)
        free(sdq)
        free(bm)
        free(tun)
        free(lbuf)
        return -1
    C.bm = bm
    C.tun = tun
    C.margin = S.margin
    for q in range(q0, q1):
        hd = Dd + q * k
        hi = Ii + q * k
        self_j = q if S.excl else -1
        c = 0
        sp = 0
        if S.ball:
            dq = true_dist(P, S.Q, q, S.Ro, T.pivot[0])
            c += 1
            snode[0] = 0
            slb[0] = ball_lower(dq, T.radius[0], S.eta)
            sdq[0] = dq
        else:
            kd_prepare(P, S.Q, q, &C)
            snode[0] = 0
            slb[0] = kd_lower(P, T, &C, 0, S.D, INFINITY)
            sdq[0] = 0.0
        sp = 1
        while sp > 0:
            sp -= 1
            node = snode[sp]
            lb = slb[sp]
            kth = reduced_bound(P, hd[k - 1])
            if S.ball:
                kt = hd[k - 1] * (1.0 + S.eta) + TINY
                if lb > kt:
                    continue
            elif lb > kth or (T.minidx[node] > hi[k - 1] and lb < INFINITY
                              and past_kth(S, finalize(P, lb), hd[k - 1])):
                # every row of the node is at a distance >= finalize(lb) (the root and the
                # mean are monotone): at best a tie with the k-th, with a larger index
                continue
            L = T.left[node]
            if L < 0:
                # the leaf's rows are contiguous in tree order: the tile kernel computes
                # their reduced distances (those of pair_reduced, bit for bit) at once
                dq = sdq[sp]
                e0 = T.start[node]
                leaf_prefetch(S, node)
                if sp > 0:
                    leaf_prefetch(S, snode[sp - 1])     # often the next leaf scanned
                while True:
                    e0 = leaf_chunk(S, q, node, e0, T.end[node], dq, kt, kth, lbuf, &nb)
                    if nb <= 0:         # done, or every row beyond the k-th distance
                        c -= nb
                        e0 -= nb
                        if nb == 0:
                            break
                        continue
                    c += nb
                    for pos in range(e0, e0 + nb):
                        j = S.perm[pos]
                        s = lbuf[pos - e0]
                        if s > kth or j == self_j:
                            continue
                        if S.ball and ball_row_lower(dq, S.rowdist[pos], S.eta,
                                                     S.two[q]) > kt:
                            continue
                        s = true_of(P, S.Q, q, S.Ro, j, s)
                        if sorted_offer(hd, hi, k, s, j,
                                        S.ties + q if S.ties != NULL else NULL, S.Ro.n):
                            kth = reduced_bound(P, hd[k - 1])
                            if S.ball:
                                kt = hd[k - 1] * (1.0 + S.eta) + TINY
                    e0 += nb
                continue
            Rn = T.right[node]
            if S.ball:
                dql = true_dist(P, S.Q, q, S.Ro, T.pivot[L])
                dqr = true_dist(P, S.Q, q, S.Ro, T.pivot[Rn])
                c += 2
                lbl = ball_lower(dql, T.radius[L], S.eta)
                lbr = ball_lower(dqr, T.radius[Rn], S.eta)
            else:
                dql = 0.0
                dqr = 0.0
                lbl = kd_lower(P, T, &C, L, S.D, kth)
                lbr = kd_lower(P, T, &C, Rn, S.D, kth)
            # the nearer child is visited first (pushed last)
            if lbl <= lbr:
                snode[sp] = Rn
                slb[sp] = lbr
                sdq[sp] = dqr
                snode[sp + 1] = L
                slb[sp + 1] = lbl
                sdq[sp + 1] = dql
            else:
                snode[sp] = L
                slb[sp] = lbl
                sdq[sp] = dql
                snode[sp + 1] = Rn
                slb[sp + 1] = lbr
                sdq[sp + 1] = dqr
            sp += 2
        cnt[q] = c
    free(snode)
    free(slb)
    free(sdq)
    free(bm)
    free(tun)
    free(lbuf)
    return 0


cdef inline intp leaf_knn(const QueryS* S, intp q, intp node, intp e0, intp e1, double* hd,
                          intp* hi, intp k, intp self_j, double* lbuf,
                          double* kth) noexcept nogil:
    """Scan the rows at tree positions [e0, e1) of KD-tree node ``node`` (inside a block)
    for query q: their reduced distances by the tile kernel, candidates into q's sorted
    list hd/hi (``kth[0]``: the reduced bound of its last entry, kept current).  Returns
    the number of distances computed."""
    cdef intp nb, pos, j, c = 0
    cdef double s
    while e0 < e1:
        nb = e1 - e0 if e1 - e0 < S.tnb else S.tnb
        c += nb
        if not leaf_tile(S, q, node, e0, nb, kth[0], lbuf):
            for pos in range(e0, e0 + nb):
                s = lbuf[pos - e0]
                if s > kth[0]:
                    continue
                j = S.perm[pos]
                if j == self_j:
                    continue
                s = true_of(S.P, S.Q, q, S.Ro, j, s)
                if sorted_offer(hd, hi, k, s, j, S.ties + q if S.ties != NULL else NULL,
                                S.Ro.n):
                    kth[0] = reduced_bound(S.P, hd[k - 1])
        e0 += nb
    return c


cdef intp kd_home(const PlanS* P, const TreeS* T, const RowsS* Q, intp q, intp D) noexcept nogil:
    """The leaf that query row q falls in by the split rules (as an inserted row would)."""
    cdef intp node = 0
    while T.left[node] >= 0:
        node = T.right[node] if kd_route(P, T, node, Q, q, D) else T.left[node]
    return node


ctypedef struct BatchW:
    # one thread's scratch for batches of up to nb queries (kd_batch)
    intp nb
    intp* snode           # [cap] stack of nodes
    double* slb           # [cap * nb] each member's lower bound of each stacked node
    double* bl            # [nb] scratch bounds of the left child
    double* br            # [nb] ... and of the right one
    double* kth           # [nb] each member's reduced k-th bound
    intp* act             # [nb] members that need the current node
    intp* home            # [nb] each member's home leaf (scanned first)
    double* bm            # [nb * mt * 64]
    double* tun           # [nb * mt]
    QCtx* C               # [nb]
    double* lbuf
    # the members' bounds side by side (kd_lower_batch)
    int vec               # the plan allows it (no "ignore", p in {1, 2, inf}, no embedding)
    unsigned char* clean  # [nb] the member's query has every value present and seen
    unsigned char* isact  # [nb] the member needs the current node
    double* qcT           # [mc * nb] continuous values, attribute by attribute
    int* qoT              # [mo * nb] overlap codes
    double* bmT           # [mt * 64 * nb] table bounds per bucket (QCtx.bm), side by side
    double* tv            # [nb] scratch


cdef void batch_free(BatchW* W) noexcept nogil:
    free(W.snode)
    free(W.slb)
    free(W.bl)
    free(W.br)
    free(W.kth)
    free(W.act)
    free(W.home)
    free(W.bm)
    free(W.tun)
    free(W.C)
    free(W.lbuf)
    free(W.clean)
    free(W.isact)
    free(W.qcT)
    free(W.qoT)
    free(W.bmT)
    free(W.tv)


cdef int batch_alloc(const QueryS* S, intp nb, BatchW* W) noexcept nogil:
    """0, or -1 when out of memory (everything freed)."""
    cdef intp cap = S.stack_cap, mt = S.P.mt
    W.nb = nb
    W.snode = <intp*> malloc(cap * sizeof(intp))
    W.slb = <double*> malloc(cap * nb * sizeof(double))
    W.bl = <double*> malloc(nb * sizeof(double))
    W.br = <double*> malloc(nb * sizeof(double))
    W.kth = <double*> malloc(nb * sizeof(double))
    W.act = <intp*> malloc(nb * sizeof(intp))
    W.home = <intp*> malloc(nb * sizeof(intp))
    W.bm = <double*> malloc((nb * mt * 64 + 1) * sizeof(double))
    W.tun = <double*> malloc((nb * mt + 1) * sizeof(double))
    W.C = <QCtx*> malloc(nb * sizeof(QCtx))
    W.lbuf = leaf_buffer(S)
    W.clean = <unsigned char*> malloc(nb)
    W.isact = <unsigned char*> malloc(nb)
    W.qcT = <double*> malloc((S.P.mc * nb + 1) * sizeof(double))
    W.qoT = <int*> malloc((S.P.mo * nb + 1) * sizeof(int))
    W.bmT = <double*> malloc((mt * 64 * nb + 1) * sizeof(double))
    W.tv = <double*> malloc(nb * sizeof(double))
    if W.snode == NULL or W.slb == NULL or W.bl == NULL or W.br == NULL or W.kth == NULL \
            or W.act == NULL or W.home == NULL or W.bm == NULL or W.tun == NULL \
            or W.C == NULL or W.lbuf == NULL or W.clean == NULL or W.isact == NULL \
            or W.qcT == NULL or W.qoT == NULL or W.bmT == NULL or W.tv == NULL:
        batch_free(W)
        return -1
    return 0


cdef void unit_knn(const QueryS* S, intp node, const intp* qs, BatchW* W, intp na,
                   double* Dd, intp* Ii, intp k, intp* cnt) noexcept nogil:
    """Scan the rows of ``node`` (inside one block: one tile per member) for the members
    W.act[0 .. na), except each member's home leaf (scanned first)."""
    cdef const TreeS* T = S.T
    cdef intp i, m, q, h, s0 = T.start[node], e0 = T.end[node], hs, he, sj
    for i in range(na):
        m = W.act[i]
        q = qs[m]
        sj = q if S.excl else -1
        h = W.home[m]
        hs = T.start[h]
        he = T.end[h]
        if hs < s0 or he > e0:
            hs = he = e0
        if hs > s0:
            cnt[q] += leaf_knn(S, q, node, s0, hs, Dd + q * k, Ii + q * k, k, sj, W.lbuf,
                               &W.kth[m])
        if e0 > he:
            cnt[q] += leaf_knn(S, q, node, he, e0, Dd + q * k, Ii + q * k, k, sj, W.lbuf,
                               &W.kth[m])


cdef void batch_prepare(const QueryS* S, const intp* qs, BatchW* W) noexcept nogil:
    """The members' query values side by side, and which members are clean (every value
    present and, for tables, seen in fit); QCtx must be prepared."""
    cdef const PlanS* P = S.P
    cdef intp B = W.nb, m, a, v, q
    cdef int cx
    cdef unsigned char ok
    W.vec = not P.has_ignore and P.pmode <= 2 and P.me == 0
    for m in range(B):
        q = qs[m]
        ok = 1
        for a in range(P.mc):
            W.qcT[a * B + m] = S.Q.c[q * P.mc + a]
            if S.Q.c[q * P.mc + a] != S.Q.c[q * P.mc + a]:
                ok = 0
        for a in range(P.mo):
            cx = S.Q.o[q * P.mo + a]
            W.qoT[a * B + m] = cx
            if cx < 0:
                ok = 0
        for a in range(P.mt):
            cx = S.Q.t[q * P.mt + a]
            if cx < 0 or cx >= P.t_V[a]:
                ok = 0
            for v in range(64):
                W.bmT[(a * 64 + v) * B + m] = W.C[m].bm[a * 64 + v]
        W.clean[m] = ok


cdef void kd_lower_batch(const QueryS* S, BatchW* W, intp node, intp na,
                         double* out) noexcept nogil:
    """``kd_lower`` of ``node`` for the members W.act[0 .. na) into out[m] (INFINITY for
    the others).  Where the plan and the node allow (every row of the node with every
    value present and seen) and a quarter of the members or more need the node, the clean
    members' bounds are computed side by side without
    branches on the data: the operations of ``kd_lower`` on each member's terms, in the
    same attribute order, but without its early exits (a full sum is a bound too)."""
    cdef const PlanS* P = S.P
    cdef const TreeS* T = S.T
    cdef intp B = W.nb, a, m, i, b
    cdef int pm = P.pmode
    cdef bint vec = W.vec and 4 * na >= B     # worth it when many members need the node
    cdef double lo, hi, w, inv, x, g, h, d, t, ow
    cdef const double* xs
    cdef const double* row
    cdef const int* cs
    cdef uint64_t mask
    if vec:
        for a in range(P.mc):
            if T.c_fl[node * P.mc + a] != F_PRESENT:
                vec = False
        for a in range(P.mo):
            if T.o_fl[node * P.mo + a] != F_PRESENT:
                vec = False
        for a in range(P.mt):
            if T.t_fl[node * P.mt + a] != F_PRESENT:
                vec = False
    for m in range(B):
        out[m] = 0.0
    if vec:
        for a in range(P.mc):
            lo = T.c_lo[node * P.mc + a]
            hi = T.c_hi[node * P.mc + a]
            w = P.c_w[a]
            inv = P.c_inv[a]
            xs = W.qcT + a * B
            for m in range(B):
                x = xs[m]
                g = lo - x
                h = x - hi
                g = h if h > g else g
                d = g * inv
                t = w * (d * d if pm == 2 else d)
                out[m] = acc(out[m], t if g > 0.0 else 0.0, pm)
        for a in range(P.mo):
            mask = T.o_mask[node * P.mo + a]
            ow = P.o_w[a]
            cs = W.qoT + a * B
            for m in range(B):
                t = 0.0 if (mask >> (cs[m] & 63)) & 1 else ow
                out[m] = acc(out[m], t, pm)
        for a in range(P.mt):
            for m in range(B):
                W.tv[m] = INFINITY
            mask = T.t_mask[node * P.mt + a]
            while mask:
                b = hdist_ctz64(mask)
                row = W.bmT + (a * 64 + b) * B
                for m in range(B):
                    W.tv[m] = row[m] if row[m] < W.tv[m] else W.tv[m]
                mask &= mask - 1
            for m in range(B):
                out[m] = acc(out[m], W.tv[m], pm)
    for m in range(B):
        W.isact[m] = 0
    for i in range(na):
        m = W.act[i]
        W.isact[m] = 1
        if not (vec and W.clean[m]):
            out[m] = kd_lower(P, T, &W.C[m], node, S.D, W.kth[m])
    for m in range(B):
        if not W.isact[m]:
            out[m] = INFINITY


cdef int kd_batches(const QueryS* S, const intp* qs, const intp* homes, intp nq, intp per,
                    double* Dd, intp* Ii, intp k, intp* cnt) noexcept nogil:
    """``kd_batch`` on the queries qs[0 .. nq) in batches of ``per`` (one scratch for
    all).  Returns -1 when out of memory."""
    cdef BatchW W
    cdef intp b
    if batch_alloc(S, per, &W) < 0:
        return -1
    b = 0
    while b < nq:
        kd_batch(S, qs + b, homes + b, min(per, nq - b), &W, Dd, Ii, k, cnt)
        b += per
    batch_free(&W)
    return 0


cdef void kd_batch(const QueryS* S, const intp* qs, const intp* homes, intp nq, BatchW* Wp,
                   double* Dd, intp* Ii, intp k, intp* cnt) noexcept nogil:
    """k nearest rows of the queries qs[0 .. nq) by the KD-tree, traversed together.

    Each member first scans its home leaf ``homes[m]`` (its list holds close candidates
    from the start); then the batch descends the tree once: a node is entered when its
    lower bound passes some member's k-th bound, its children's bounds are computed for
    those members only, and a leaf's rows are scanned for each member that needs it, one
    after the other, so that they are read from memory once for the batch.  Every member
    keeps its own sorted list of (true distance, index) and counts its evaluations; the
    lists do not depend on the order in which rows reach them, so the answer is brute
    force's for any batch.  ``Wp``: scratch for at least nq members."""
    cdef const PlanS* P = S.P
    cdef const TreeS* T = S.T
    cdef BatchW W = Wp[0]
    cdef intp m, i, q, sp, node, na, L, Rn, vote, B = nq, mt = P.mt
    cdef double* lb
    cdef double* hd
    cdef intp* hi
    W.nb = nq
    for m in range(B):
        q = qs[m]
        W.C[m].bm = W.bm + m * mt * 64
        W.C[m].tun = W.tun + m * mt
        W.C[m].margin = S.margin
        kd_prepare(P, S.Q, q, &W.C[m])
        W.kth[m] = INFINITY
        W.home[m] = homes[m]
        cnt[q] = leaf_knn(S, q, homes[m], T.start[homes[m]], T.end[homes[m]], Dd + q * k,
                          Ii + q * k, k, q if S.excl else -1, W.lbuf, &W.kth[m])
        W.slb[m] = kd_lower(P, T, &W.C[m], 0, S.D, W.kth[m])
    batch_prepare(S, qs, &W)
    W.snode[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        node = W.snode[sp]
        lb = W.slb + sp * B
        na = 0
        for m in range(B):
            if lb[m] > W.kth[m]:
                continue
            q = qs[m]
            hd = Dd + q * k
            hi = Ii + q * k
            if T.minidx[node] > hi[k - 1] and lb[m] < INFINITY \
                    and past_kth(S, finalize(P, lb[m]), hd[k - 1]):
                # every row of the node is at a distance >= finalize(lb) (the root and
                # the mean are monotone): at best a tie with the k-th, larger index
                continue
            W.act[na] = m
            na += 1
        if na == 0:
            continue
        L = T.left[node]
        if L < 0 or S.blk[2 * node] >= 0:
            # a leaf, or a subtree inside one block (small enough that scanning it costs
            # less than the bounds below it): its rows (contiguous, attribute-major) are
            # scanned for every member in turn, so they stay in cache
            leaf_prefetch(S, node)
            if sp > 0:
                leaf_prefetch(S, W.snode[sp - 1])     # often the next one scanned
            unit_knn(S, node, qs, &W, na, Dd, Ii, k, cnt)
            continue
        Rn = T.right[node]
        kd_lower_batch(S, &W, L, na, W.bl)
        kd_lower_batch(S, &W, Rn, na, W.br)
        vote = 0
        for i in range(na):
            m = W.act[i]
            if W.bl[m] <= W.br[m]:
                vote += 1
        # the child nearer for most members is visited first (pushed last)
        if 2 * vote >= na:
            W.snode[sp] = Rn
            W.snode[sp + 1] = L
            memcpy(W.slb + sp * B, W.br, B * sizeof(double))
            memcpy(W.slb + (sp + 1) * B, W.bl, B * sizeof(double))
        else:
            W.snode[sp] = L
            W.snode[sp + 1] = Rn
            memcpy(W.slb + sp * B, W.bl, B * sizeof(double))
            memcpy(W.slb + (sp + 1) * B, W.br, B * sizeof(double))
        sp += 2


cdef int radius_chunk(const QueryS* S, intp q0, intp q1, Hit** hits, intp* nhits,
                      intp hoff, intp* cnt) noexcept nogil:
    """Rows within true distance S.r of queries [q0, q1): query q's ``nhits[q - hoff]``
    rows, sorted by (distance, index), in the buffer ``hits[q - hoff]`` (``_hit_push``;
    freed by the caller)."""
    cdef const PlanS* P = S.P
    cdef const TreeS* T = S.T
    cdef intp cap = S.stack_cap
    cdef intp* snode = <intp*> malloc(cap * sizeof(intp))
    cdef double* sdq = <double*> malloc(cap * sizeof(double))
    cdef double* bm = <double*> malloc((P.mt * 64 + 1) * sizeof(double))
    cdef double* tun = <double*> malloc((P.mt + 1) * sizeof(double))
    cdef double* lbuf = leaf_buffer(S)
    cdef QCtx C
    cdef intp q, sp, node, pos, j, self_j, c, L, Rn, ch, e0, nb
    cdef double s, d, dq, rt, lb
    cdef int status = 0
    if snode == NULL or sdq == NULL or bm == NULL or tun == NULL or lbuf == NULL:
        free(snode)
        free(sdq)
        free(bm)
        free(tun)
        free(lbuf)
        return -1
    C.bm = bm
    C.tun = tun
    C.margin = S.margin
    rt = S.r * (1.0 + S.eta) + TINY
    for q in range(q0, q1):
        self_j = q if S.excl else -1
        c = 0
        if S.ball:
            dq = true_dist(P, S.Q, q, S.Ro, T.pivot[0])
            c += 1
            if ball_lower(dq, T.radius[0], S.eta) > rt:
                cnt[q] = c
                continue
        else:
            kd_prepare(P, S.Q, q, &C)
            dq = 0.0
            if kd_lower(P, T, &C, 0, S.D, S.rred) > S.rred:
                cnt[q] = 0
                continue
        snode[0] = 0
        sdq[0] = dq
        sp = 1
        while sp > 0:
            sp -= 1
            node = snode[sp]
            dq = sdq[sp]
            L = T.left[node]
            if L < 0 or S.blk[2 * node] >= 0:
                # a leaf, or a KD-tree subtree inside one block: scanned whole
                e0 = T.start[node]
                leaf_prefetch(S, node)
                while True:
                    e0 = leaf_chunk(S, q, node, e0, T.end[node], dq, rt, S.rred, lbuf, &nb)
                    if nb <= 0:         # done, or every row outside the radius
                        c -= nb
                        e0 -= nb
                        if nb == 0:
                            break
                        continue
                    c += nb
                    for pos in range(e0, e0 + nb):
                        j = S.perm[pos]
                        s = lbuf[pos - e0]
                        if s > S.rred or j == self_j:
                            continue
                        if S.ball and ball_row_lower(dq, S.rowdist[pos], S.eta,
                                                     S.two[q]) > rt:
                            continue
                        d = true_of(P, S.Q, q, S.Ro, j, s)
                        if d <= S.r and _hit_push(&hits[q - hoff], &nhits[q - hoff], d,
                                                  j) < 0:
                            # the buffer is gone: the call fails, the rest of the query
                            # goes to a new one
                            status = -1
                            nhits[q - hoff] = 0
                    e0 += nb
                continue
            Rn = T.right[node]
            for ch in range(2):
                node = L if ch == 0 else Rn
                if S.ball:
                    dq = true_dist(P, S.Q, q, S.Ro, T.pivot[node])
                    c += 1
                    lb = ball_lower(dq, T.radius[node], S.eta)
                    if lb > rt:
                        continue
                else:
                    if kd_lower(P, T, &C, node, S.D, S.rred) > S.rred:
                        continue
                snode[sp] = node
                sdq[sp] = dq
                sp += 1
        cnt[q] = c
        if nhits[q - hoff] > 1:
            sort_hits(hits[q - hoff], nhits[q - hoff])
    free(snode)
    free(sdq)
    free(bm)
    free(tun)
    free(lbuf)
    return status


cdef class _Query:
    """Everything a batch query reads, kept alive together."""
    cdef QueryS s
    cdef object keep

    def __init__(self, kind, CPlan plan, Nodes nodes, CRows Q, CRows Rorig, dict lm,
                 perm, rowdist, intp depth, bint exclude_self, two_sided):
        if two_sided is None:
            two_sided = np.zeros(max(1, Q.s.n), dtype=np.uint8)
        two_sided = np.ascontiguousarray(two_sided, dtype=np.uint8)
        if two_sided.shape[0] < Q.s.n:
            raise ValueError("two_sided must have one entry per query row")
        cdef const PlanS* P = &plan.s
        cdef intp n = Rorig.s.n
        for name, width, dt in (("c", P.mc, np.float64), ("cpen", P.mc, np.float64),
                                ("o", P.mo, np.intc), ("t", P.mt, np.intc),
                                ("e", Rorig.s.D, np.float64)):
            a = lm.get(name)
            if (a is None or a.dtype != dt or not a.flags.c_contiguous
                    or a.shape != (max(1, n * width),)):
                raise ValueError("leaf_rows must come from leaf_major over these rows")
        blk = lm.get("block")
        if (blk is None or blk.dtype != np.intp or not blk.flags.c_contiguous
                or blk.shape != (nodes.nn, 2)):
            raise ValueError("leaf_rows must come from leaf_major over this tree")
        view = tile_view(plan)
        self.keep = (plan, nodes, Q, Rorig, perm, rowdist, two_sided, view, lm)
        self.s.blk = <const intp*> cnp.PyArray_DATA(blk)
        self.s.tview = <const void*> cnp.PyArray_DATA(view)
        self.s.tnb = TILE_ROWS
        self.s.lm.ld = 0
        self.s.lm.c = <const double*> cnp.PyArray_DATA(lm["c"])
        self.s.lm.cpen = <const double*> cnp.PyArray_DATA(lm["cpen"])
        self.s.lm.o = <const int*> cnp.PyArray_DATA(lm["o"])
        self.s.lm.t = <const int*> cnp.PyArray_DATA(lm["t"])
        self.s.lm.e = <const double*> cnp.PyArray_DATA(lm["e"])
        self.s.two = <const unsigned char*> cnp.PyArray_DATA(two_sided)
        self.s.P = &plan.s
        self.s.T = &nodes.s
        self.s.Q = &Q.s
        self.s.Ro = &Rorig.s
        self.s.perm = <const intp*> cnp.PyArray_DATA(perm)
        self.s.rowdist = <const double*> cnp.PyArray_DATA(rowdist)
        self.s.D = Rorig.s.D
        self.s.stack_cap = depth + 4
        self.s.ball = kind == "ball_tree"
        self.s.excl = exclude_self
        m = P.mc + P.mo + P.mt + P.me
        if P.pmode == 3 or P.has_ignore:
            self.s.margin = 1.0 - 4.0 * (m + Rorig.s.D + 16) * 2.0 ** -52
        else:
            self.s.margin = 1.0
        self.s.eta = max(1e-9, 64.0 * (m + Rorig.s.D + 64) * 2.0 ** -52)
        self.s.rred = INFINITY
        self.s.r = INFINITY
        self.s.ties = NULL


cdef void leaf_transpose(const PlanS* P, const RowsS* R, const intp* perm, intp s0, intp e0,
                         double* c, double* cp, int* o, int* t, double* e) noexcept nogil:
    """The rows at tree positions [s0, e0) attribute-major (ld = e0 - s0) at offset
    s0 * width of each block."""
    cdef intp a, j, r, nl = e0 - s0, mc = P.mc, mo = P.mo, mt = P.mt, D = R.D
    for j in range(nl):
        r = perm[s0 + j]
        for a in range(mc):
            c[s0 * mc + a * nl + j] = R.c[r * mc + a]
            cp[s0 * mc + a * nl + j] = R.cpen[r * mc + a]
        for a in range(mo):
            o[s0 * mo + a * nl + j] = R.o[r * mo + a]
        for a in range(mt):
            t[s0 * mt + a * nl + j] = R.t[r * mt + a]
        for a in range(D):
            e[s0 * D + a * nl + j] = R.e[r * D + a]


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def _blocks(const intp[::1] parent, const intp[::1] left, const intp[::1] start,
            const intp[::1] end, intp unit, unsigned char[::1] inside, unsigned char[::1] own,
            intp[:, ::1] blk):
    """Mark the blocks of ``leaf_major`` (parents come before their children)."""
    cdef intp i, nn = parent.shape[0]
    with nogil:
        for i in range(nn):
            if parent[i] >= 0 and inside[parent[i]]:
                inside[i] = 1
                blk[i, 0] = blk[parent[i], 0]
                blk[i, 1] = blk[parent[i], 1]
            elif left[i] < 0 or end[i] - start[i] <= unit:
                inside[i] = 1
                own[i] = 1
                blk[i, 0] = start[i]
                blk[i, 1] = end[i]


def leaf_major(CPlan plan, CRows R, perm, dict arrays, intp unit=0):
    """The indexed rows R in tree order (row ``perm[pos]`` at position ``pos``), block by
    block, each block's rows attribute-major as the tile kernel reads them: arrays ``c``,
    ``cpen``, ``o``, ``t``, ``e`` with block ``[s, e)`` at offset ``s * width`` and
    leading dimension ``e - s``, and ``block`` ``[nodes, 2]``: the block ``[s, e)``
    holding each node's rows (``s = -1`` for the nodes above the blocks).  The blocks are
    the leaves (``unit`` 0) or the largest subtrees of at most ``unit`` rows (and the
    larger leaves): a KD-tree k-NN query scans a block's rows in one tile instead of
    bounding the nodes inside it.  Made once per tree by its owner and passed to ``knn``
    and ``radius`` as ``leaf_rows`` (a leaf's rows sit together in memory, and its tile
    reads a few contiguous runs instead of one cache line per attribute)."""
    cdef const PlanS* P = &plan.s
    _check_state("kd_tree", arrays, perm, np.zeros(0), R.s.n)
    left = np.asarray(arrays["left"]).reshape(-1)
    right = np.asarray(arrays["right"]).reshape(-1)
    start = np.asarray(arrays["start"]).reshape(-1).astype(np.intp)
    end = np.asarray(arrays["end"]).reshape(-1).astype(np.intp)
    nn = left.shape[0]
    # a node is a block when it is a leaf or small enough and its parent is not inside one
    inside = np.zeros(nn, dtype=bool)       # the node is a block or lies inside one
    own = np.zeros(nn, dtype=bool)          # the node is a block
    blk = np.full((nn, 2), -1, dtype=np.intp)
    if nn:
        parent = np.full(nn, -1, dtype=np.intp)
        inner = np.flatnonzero(left >= 0)
        if (left[inner] <= inner).any() or (right[inner] <= inner).any():
            raise ValueError("the tree's children must come after their parents")
        parent[left[inner]] = inner
        parent[right[inner]] = inner
        _blocks(parent, left.astype(np.intp), start, end, unit, inside.view(np.uint8),
                own.view(np.uint8), blk)
    blocks = np.flatnonzero(own)
    starts = start[blocks]
    ends = end[blocks]
    cdef intp n = R.s.n, D = R.s.D, i, nl = blocks.shape[0]
    cdef const intp* pm = <const intp*> cnp.PyArray_DATA(perm)
    out = {"c": np.zeros(max(1, n * P.mc)), "cpen": np.zeros(max(1, n * P.mc)),
           "o": np.zeros(max(1, n * P.mo), dtype=np.intc),
           "t": np.zeros(max(1, n * P.mt), dtype=np.intc), "e": np.zeros(max(1, n * D)),
           "block": blk}
    order = np.argsort(starts)
    if nl == 0 or starts[order[0]] != 0 or ends[order[-1]] != n or \
            (starts[order[1:]] != ends[order[:-1]]).any() or (left[~inside] < 0).any():
        raise ValueError("the tree's leaves do not partition the %d rows" % n)
    if n and (perm.min() < 0 or perm.max() >= n):
        raise ValueError("perm holds positions outside the %d rows" % n)
    cdef double* c = <double*> cnp.PyArray_DATA(out["c"])
    cdef double* cp = <double*> cnp.PyArray_DATA(out["cpen"])
    cdef int* o = <int*> cnp.PyArray_DATA(out["o"])
    cdef int* t = <int*> cnp.PyArray_DATA(out["t"])
    cdef double* e = <double*> cnp.PyArray_DATA(out["e"])
    cdef intp[::1] st = starts.astype(np.intp)
    cdef intp[::1] en = ends.astype(np.intp)
    with nogil, cython.boundscheck(HDIST_DEBUG), cython.wraparound(False):
        for i in range(nl):
            leaf_transpose(P, &R.s, pm, st[i], en[i], c, cp, o, t, e)
    return out


def _check_state(kind, dict arrays, perm, rowdist, intp n):
    if perm.dtype != np.intp or not perm.flags.c_contiguous or perm.shape[0] != n:
        raise ValueError("perm must be a contiguous intp array of %d entries" % n)
    nr = n if kind == "ball_tree" else 0
    if rowdist.dtype != np.float64 or not rowdist.flags.c_contiguous or rowdist.shape[0] != nr:
        raise ValueError("rowdist must be a contiguous float64 array of %d entries" % nr)


def _nodes_view(kind, CPlan plan, CRows rows, dict arrays):
    cdef const PlanS* P = &plan.s
    fields = node_fields(kind, P.mc, P.mo, P.mt, P.me, rows.s.D)
    nn = arrays["start"].shape[0]
    for name, dt, w in fields:
        a = arrays[name]
        if a.dtype != dt or a.shape != (nn, w) or not a.flags.c_contiguous:
            raise ValueError("tree array %r has the wrong layout" % name)
    return Nodes(fields, nn, arrays, nn, False)


def knn(kind, CPlan plan, CRows Q, CRows R, dict leaf_rows, dict arrays, perm, rowdist,
        intp depth, intp k, int n_threads, bint exclude_self=False, two_sided=None,
        intp block=0, intp batch=0, ties=False):
    """Exact k nearest rows of each query by a tree.

    ``R``: the indexed rows (index order); ``leaf_rows``: ``leaf_major(plan, R, perm,
    arrays)``, made once per tree.  ``two_sided`` (ball tree, uint8 per query): 1 where the query may be the middle point
    of a triangle (see ``ball_row_lower``); None means 0 for every query.
    Returns ``(dist, ind, n_evaluations)``: true distances and row indices ``[n_q, k]``
    sorted by (distance, index) exactly as the brute-force kernel sorts them, and the
    number of pair distances computed for each query.

    The KD-tree answers queries in batches of ``batch`` (0: ``KD_BATCH``) that traverse
    the tree together (``kd_batch``), the queries ordered by the leaf they fall in, and
    scan a block of ``leaf_rows`` (a subtree of at most ``unit`` rows, see
    ``leaf_major``) at once; the ball tree answers queries one at a time.

    ``ties``: the lists also hold every other row at the k-th distance, as
    ``hdist._kernels.knn``'s (the nodes whose rows can at best tie with the k-th are
    entered then), or only their tally (``hdist._kernels.plan.tie_lists``)."""
    cdef intp nq = Q.s.n, n = R.s.n, b0, b1, nch, ch, per = 4, q, i, task = 4
    _check_state(kind, arrays, perm, rowdist, n)
    if k < 1 or k > n - (1 if exclude_self else 0):
        raise ValueError("k must be in [1, %d], got %d" % (n - (1 if exclude_self else 0), k))
    if exclude_self and nq != n:
        raise ValueError("exclude_self needs the indexed rows as queries")
    cdef Nodes nodes = _nodes_view(kind, plan, R, arrays)
    cdef _Query S = _Query(kind, plan, nodes, Q, R, leaf_rows, perm, rowdist, depth,
                           exclude_self, two_sided)
    cdef TieLists tl = tie_lists(ties, nq)
    S.s.ties = tl.t if tl is not None else NULL
    n_threads = max(1, n_threads)
    dist = np.full((nq, k), np.inf)
    ind = np.full((nq, k), n, dtype=np.intp)
    counts = np.zeros(nq, dtype=np.intp)
    cdef double* Dd = <double*> cnp.PyArray_DATA(dist)
    cdef intp* Ii = <intp*> cnp.PyArray_DATA(ind)
    cdef intp* Cc = <intp*> cnp.PyArray_DATA(counts)
    if block <= 0:
        block = max(256, 128 * n_threads)
    cdef bint kd = kind == "kd_tree"
    cdef intp* od = NULL
    cdef intp* hm = NULL
    if kd:
        # batches of queries in the order of their home leaves (ties by index)
        per = batch if batch > 0 else KD_BATCH
        order, homes = _kd_order(&S.s, nq)
        od = <intp*> cnp.PyArray_DATA(order)
        hm = <intp*> cnp.PyArray_DATA(homes)
        task = per * max(1, 64 // per)           # queries per task: one scratch each
        block = (max(block, task * n_threads) + task - 1) // task * task
    status = np.zeros(max(1, (block + per - 1) // per), dtype=np.intc)
    cdef int* st = <int*> cnp.PyArray_DATA(status)
    cdef int nt
    for b0 in range(0, nq, block):
        b1 = min(nq, b0 + block)
        nch = (b1 - b0 + (task if kd else per) - 1) // (task if kd else per)
        nt = min(n_threads, nch)
        with nogil:
            for ch in prange(nch, num_threads=nt, schedule="dynamic"):
                if kd:
                    st[ch] = kd_batches(&S.s, od + b0 + ch * task, hm + b0 + ch * task,
                                        min(task, b1 - b0 - ch * task), per, Dd, Ii, k, Cc)
                else:
                    st[ch] = knn_chunk(&S.s, b0 + ch * per, min(b1, b0 + ch * per + per),
                                       Dd, Ii, k, Cc)
        PyErr_CheckSignals()
        if (status < 0).any():
            raise MemoryError("tree query ran out of memory")
    if tl is not None:
        dist, ind = tl.widen(dist, ind)
    return dist, ind, counts


#: queries per KD-tree batch (``kd_batch``)
KD_BATCH = 16
#: rows of the largest KD-tree subtree stored (``leaf_major``) and scanned as one block
KD_UNIT = 128


cdef _kd_order(const QueryS* S, intp nq):
    """``(order, homes)``: the queries ordered by the tree position of their home leaf
    (``kd_home``; ties by index), and those leaves in that order."""
    cdef intp q
    homes = np.empty(max(1, nq), dtype=np.intp)
    pos = np.empty(max(1, nq), dtype=np.intp)
    cdef intp* hm = <intp*> cnp.PyArray_DATA(homes)
    cdef intp* hp = <intp*> cnp.PyArray_DATA(pos)
    with nogil:
        for q in range(nq):
            hm[q] = kd_home(S.P, S.T, S.Q, q, S.D)
            hp[q] = S.T.start[hm[q]]
    order = np.ascontiguousarray(np.argsort(pos[:nq], kind="stable"), dtype=np.intp)
    return order, np.ascontiguousarray(homes[:nq][order])


def radius(kind, CPlan plan, CRows Q, CRows R, dict leaf_rows, dict arrays, perm, rowdist,
           intp depth, double r, double rred, int n_threads, bint exclude_self=False,
           two_sided=None, intp block=0):
    """Rows within true distance ``r`` (inclusive) of each query, by a tree.

    ``R`` and ``leaf_rows`` as for ``knn``.  ``rred`` is a reduced-distance threshold that every pair with true distance <= r
    stays under (the caller computes it with a margin).  Returns ``(dists, inds,
    n_evaluations)``: lists of arrays sorted by (distance, index), and the counts."""
    cdef intp nq = Q.s.n, n = R.s.n, b0, b1, nch, ch, per = 4, q
    _check_state(kind, arrays, perm, rowdist, n)
    if exclude_self and nq != n:
        raise ValueError("exclude_self needs the indexed rows as queries")
    cdef Nodes nodes = _nodes_view(kind, plan, R, arrays)
    cdef _Query S = _Query(kind, plan, nodes, Q, R, leaf_rows, perm, rowdist, depth,
                           exclude_self, two_sided)
    S.s.r = r
    S.s.rred = rred
    n_threads = max(1, n_threads)
    counts = np.zeros(nq, dtype=np.intp)
    cdef intp* Cc = <intp*> cnp.PyArray_DATA(counts)
    if block <= 0:
        block = max(256, 128 * n_threads)
    cdef Hit** hits = <Hit**> malloc(block * sizeof(Hit*))
    cdef intp* nhits = <intp*> malloc(block * sizeof(intp))
    if hits == NULL or nhits == NULL:
        free(hits)
        free(nhits)
        raise MemoryError()
    status = np.zeros(max(1, (block + per - 1) // per), dtype=np.intc)
    cdef int* st = <int*> cnp.PyArray_DATA(status)
    cdef int nt
    out_d = []
    out_i = []
    for q in range(block):
        hits[q] = NULL
        nhits[q] = 0
    try:
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            nch = (b1 - b0 + per - 1) // per
            nt = min(n_threads, nch)
            status[:] = 0
            with nogil:
                for ch in prange(nch, num_threads=nt, schedule="dynamic"):
                    st[ch] = radius_chunk(&S.s, b0 + ch * per, min(b1, b0 + ch * per + per),
                                          hits, nhits, b0, Cc)
            PyErr_CheckSignals()
            if (status < 0).any():
                raise MemoryError("tree radius query ran out of memory")
            _take_hits(hits, nhits, b1 - b0, out_d, out_i)
    finally:
        for q in range(block):
            free(hits[q])
        free(hits)
        free(nhits)
    return out_d, out_i, counts
