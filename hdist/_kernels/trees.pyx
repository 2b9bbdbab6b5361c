# cython: language_level=3
"""Exact KD-tree and ball tree over a Plan (Witten & Frank, "Finding nearest neighbors efficiently").

Both trees are flat arrays (one row per node, children by explicit index), so they pickle
as plain numpy arrays and grow by appending nodes on insertion.  A leaf's rows are
contiguous in tree order, and their reduced distances to a query come from the brute
force's tile kernel (``tile_block``, ``_kernels/plan.pxd``: the operations of ``pair_reduced``,
bit for bit, vectorized across the rows); candidates are ordered by ``(true distance,
training index)``, so a tree returns exactly brute force's neighbors, ties included.
KD-tree k-NN queries run in batches that traverse the tree together (``kd_batch``), and
scan a subtree of at most ``KD_UNIT`` rows, stored as one attribute-major block
(``leaf_major``), in one tile per member instead of bounding the nodes inside it.

KD-tree
    A node stores, per attribute, what a lower bound of the reduced distance from a query
    to any of its rows needs: the interval of the (pre-scaled) values and the smallest
    "other side missing" penalty of its rows (continuous); a 64-bit set of value buckets
    (nominal codes modulo 64; exact for at most 64 values) and flags for missing and, for
    table attributes, unseen codes; per-component intervals (embedded vectors).  A term's
    lower bound is the smallest term any row of the node can give; the bound of the node
    sums (or maximises, for p = inf) them in the kernel's own order, so by the monotonicity
    of rounded addition it never exceeds a row's computed reduced distance.  Components
    the "ignore" policy may skip count 0, and the known-weight rescaling is bounded by the
    weight skipped for certain; where ``pow`` or the rescaling round, the bound is lowered
    by a relative margin of a few hundred ulps.
    Nodes are split on the attribute of largest spread in units of the reduced distance
    (continuous: the term of the value range; nominal: the largest term between present
    values; missing-versus-present when the missing penalty is larger), continuous values
    at the median, nominal value sets in two groups of about equal size.
Ball tree
    Pivots are data rows; the radius is the largest true distance of a row of the node to
    its pivot; a node is split by the two far rows (Witten & Frank): the row farthest from the
    pivot, the row farthest from that one, each row going to the nearer of the two
    (moving the rows nearest the boundary when a side would keep under a tenth of the
    rows).  A pivot is the row, among a dozen evenly spaced candidates, whose largest
    distance to an evenly spaced sample is smallest.  Pruning uses the triangle
    inequality on true distances with a relative safety margin, so it is offered only for
    metrics (docs/metrics.md, section 8; the caller checks).

Included files hold the parts: ``tree_split.pxi`` the KD-tree's split of a node,
``tree_query.pxi`` the trees' k-NN and radius queries and the leaf-major copy of the rows.
"""
import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free, realloc, qsort
from libc.string cimport memcpy
from libc.math cimport INFINITY, sqrt, fabs
from libc.stdint cimport uint64_t

from hdist._kernels.plan cimport (PlanS, RowsS, CPlan, CRows, TieList, TieLists, intp,
                                  tie_add, tie_displaced, pw, acc, pair_reduced,
                                  finalize, reduced_bound, true_of, Hit,
                                  _hit_push)
from hdist._kernels.tiles cimport AttrRows, tile_block, _take_hits, sort_hits
from hdist._kernels.tiles import TILE_ROWS, tile_view
from hdist._kernels.plan import tie_lists

cnp.import_array()

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static int hdist_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    static int hdist_popcount64(unsigned long long x) { return (int)__popcnt64(x); }
    #else
    static int hdist_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    static int hdist_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    #endif
    """
    int hdist_ctz64(unsigned long long x) noexcept nogil
    int hdist_popcount64(unsigned long long x) noexcept nogil

cdef extern from *:
    """
    /* ask for the cache lines of [p, p + bytes) ahead of their use (a hint only) */
    static void hdist_prefetch(const void *p, ptrdiff_t bytes) {
    #if defined(__GNUC__) || defined(__clang__)
        const char *c = (const char *)p;
        ptrdiff_t i;
        for (i = 0; i < bytes; i += 64)
            __builtin_prefetch(c + i, 0, 3);
    #else
        (void)p; (void)bytes;
    #endif
    }
    """
    void hdist_prefetch(const void* p, Py_ssize_t nbytes) noexcept nogil

cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1

# per-attribute node flags
cdef enum:
    F_PRESENT = 1   # some row has a (seen, for tables) value
    F_MISSING = 2   # some row is missing
    F_UNSEEN = 4    # some row has a value unseen in fit (table attributes)

# split kinds (KD-tree), recorded so that inserted rows can be routed
cdef enum:
    S_CONT = 0
    S_CONT_MISS = 1
    S_OVER = 2
    S_OVER_MISS = 3
    S_TAB = 4
    S_TAB_MISS = 5
    S_EMB = 6
    S_EMB_MISS = 7
    S_POS = 8

cdef double TINY = 1e-290


ctypedef struct TreeS:
    intp* start
    intp* end
    intp* left
    intp* right
    intp* minidx
    intp* depth
    signed char* sk     # split kind
    intp* sa            # split attribute (block position)
    intp* sdim          # split column of an embedded attribute
    double* sthr        # continuous threshold: x < thr goes left
    uint64_t* smask     # nominal buckets going left
    unsigned char* sfl  # bit 0: missing rows go left
    double* c_lo
    double* c_hi
    double* c_pen       # smallest "other side missing" term of the node's present rows
    unsigned char* c_fl
    uint64_t* o_mask
    unsigned char* o_fl
    uint64_t* t_mask
    unsigned char* t_fl
    double* e_lo
    double* e_hi
    unsigned char* e_fl
    intp* pivot         # ball tree: training index of the pivot row
    double* radius


def node_fields(kind, intp mc, intp mo, intp mt, intp me, intp D):
    """(name, dtype, width) of the per-node arrays of a tree of ``kind``."""
    f = [("start", np.intp, 1), ("end", np.intp, 1), ("left", np.intp, 1),
         ("right", np.intp, 1), ("minidx", np.intp, 1), ("depth", np.intp, 1)]
    if kind == "kd_tree":
        f += [("sk", np.int8, 1), ("sa", np.intp, 1), ("sdim", np.intp, 1),
              ("sthr", np.float64, 1), ("smask", np.uint64, 1), ("sfl", np.uint8, 1),
              ("c_lo", np.float64, mc), ("c_hi", np.float64, mc), ("c_pen", np.float64, mc),
              ("c_fl", np.uint8, mc), ("o_mask", np.uint64, mo), ("o_fl", np.uint8, mo),
              ("t_mask", np.uint64, mt), ("t_fl", np.uint8, mt), ("e_lo", np.float64, D),
              ("e_hi", np.float64, D), ("e_fl", np.uint8, me)]
    elif kind == "ball_tree":
        f += [("pivot", np.intp, 1), ("radius", np.float64, 1)]
    else:
        raise ValueError("unknown tree kind %r" % (kind,))
    return f


cdef class Nodes:
    """Per-node arrays with room to grow, and a C view (``TreeS``) of them."""
    cdef public dict arrays
    cdef public intp nn
    cdef intp cap
    cdef list fields
    cdef TreeS s

    def __init__(self, fields, intp cap, arrays=None, intp nn=0, bint copy=True):
        self.fields = list(fields)
        self.arrays = {}
        self.cap = max(cap, nn, 1)
        self.nn = nn
        for name, dt, w in self.fields:
            if not copy:
                # a read-only view for queries: the caller checked the layout
                self.arrays[name] = arrays[name]
                continue
            a = np.zeros((self.cap, w), dtype=dt)
            if arrays is not None and nn:
                a[:nn] = np.asarray(arrays[name]).reshape(nn, w)
            self.arrays[name] = a
        if not copy:
            self.cap = nn
        self._bind()

    cdef void* _ptr(self, name):
        a = self.arrays.get(name)
        if a is None:
            return NULL
        return cnp.PyArray_DATA(a)

    cdef _bind(self):
        self.s.start = <intp*> self._ptr("start")
        self.s.end = <intp*> self._ptr("end")
        self.s.left = <intp*> self._ptr("left")
        self.s.right = <intp*> self._ptr("right")
        self.s.minidx = <intp*> self._ptr("minidx")
        self.s.depth = <intp*> self._ptr("depth")
        self.s.sk = <signed char*> self._ptr("sk")
        self.s.sa = <intp*> self._ptr("sa")
        self.s.sdim = <intp*> self._ptr("sdim")
        self.s.sthr = <double*> self._ptr("sthr")
        self.s.smask = <uint64_t*> self._ptr("smask")
        self.s.sfl = <unsigned char*> self._ptr("sfl")
        self.s.c_lo = <double*> self._ptr("c_lo")
        self.s.c_hi = <double*> self._ptr("c_hi")
        self.s.c_pen = <double*> self._ptr("c_pen")
        self.s.c_fl = <unsigned char*> self._ptr("c_fl")
        self.s.o_mask = <uint64_t*> self._ptr("o_mask")
        self.s.o_fl = <unsigned char*> self._ptr("o_fl")
        self.s.t_mask = <uint64_t*> self._ptr("t_mask")
        self.s.t_fl = <unsigned char*> self._ptr("t_fl")
        self.s.e_lo = <double*> self._ptr("e_lo")
        self.s.e_hi = <double*> self._ptr("e_hi")
        self.s.e_fl = <unsigned char*> self._ptr("e_fl")
        self.s.pivot = <intp*> self._ptr("pivot")
        self.s.radius = <double*> self._ptr("radius")

    cdef intp new_node(self, intp start, intp end, intp depth) except -1:
        cdef intp node
        if self.nn == self.cap:
            self.cap = 2 * self.cap
            for name in list(self.arrays):
                old = self.arrays[name]
                new = np.zeros((self.cap, old.shape[1]), dtype=old.dtype)
                new[:self.nn] = old[:self.nn]
                self.arrays[name] = new
            self._bind()
        node = self.nn
        self.nn += 1
        self.s.start[node] = start
        self.s.end[node] = end
        self.s.left[node] = -1
        self.s.right[node] = -1
        self.s.depth[node] = depth
        return node

    def export(self):
        """The arrays trimmed to the nodes in use (copies)."""
        return {name: a[:self.nn].copy() for name, a in self.arrays.items()}


# ---------------------------------------------------------------------------
# small helpers

cdef inline bint before(double d1, intp i1, double d2, intp i2) noexcept nogil:
    return d1 < d2 or (d1 == d2 and i1 < i2)


cdef inline void sorted_insert(double* hd, intp* hi, intp k, double d, intp j) noexcept nogil:
    """Insert (d, j) into the ascending list hd/hi of length k, dropping its last entry.
    The caller has checked that (d, j) comes before that entry."""
    cdef intp p = k - 1
    while p > 0 and before(d, j, hd[p - 1], hi[p - 1]):
        hd[p] = hd[p - 1]
        hi[p] = hi[p - 1]
        p -= 1
    hd[p] = d
    hi[p] = j


cdef inline bint sorted_offer(double* hd, intp* hi, intp k, double d, intp j, TieList* t,
                              intp nr) noexcept nogil:
    """``heap_offer`` for an ascending list (its k-th entry last): True when (d, j) was
    inserted."""
    cdef double od
    cdef intp oj
    if before(d, j, hd[k - 1], hi[k - 1]):
        od = hd[k - 1]
        oj = hi[k - 1]
        sorted_insert(hd, hi, k, d, j)
        if t != NULL:
            tie_displaced(t, od, oj, hd[k - 1], nr)
        return True
    if t != NULL and d == hd[k - 1]:
        tie_add(t, j)
    return False


cdef inline double true_dist(const PlanS* P, const RowsS* A, intp i, const RowsS* B,
                             intp j) noexcept nogil:
    return true_of(P, A, i, B, j, pair_reduced(P, A, i, B, j, P.pmode, INFINITY))


cdef inline void swap2(double* key, intp* idx, intp a, intp b) noexcept nogil:
    cdef double t = key[a]
    cdef intp u = idx[a]
    key[a] = key[b]
    idx[a] = idx[b]
    key[b] = t
    idx[b] = u


cdef void select_kth(double* key, intp* idx, intp n, intp kth) noexcept nogil:
    """Rearrange so that position ``kth`` holds the kth smallest (key, idx) pair, with
    smaller pairs before it and larger after (quickselect, deterministic pivots)."""
    cdef intp lo = 0, hi = n - 1, i, st, m
    cdef unsigned long long rng = 0x9E3779B97F4A7C15ULL ^ <unsigned long long> n
    cdef double pk
    cdef intp pi
    while lo < hi:
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL
        m = lo + <intp> ((rng >> 33) % <unsigned long long> (hi - lo + 1))
        swap2(key, idx, m, hi)
        pk = key[hi]
        pi = idx[hi]
        st = lo
        for i in range(lo, hi):
            if before(key[i], idx[i], pk, pi):
                swap2(key, idx, i, st)
                st += 1
        swap2(key, idx, st, hi)
        if st == kth:
            return
        elif st < kth:
            lo = st + 1
        else:
            hi = st - 1


cdef int cmp_intp(const void* a, const void* b) noexcept nogil:
    cdef intp x = (<const intp*> a)[0]
    cdef intp y = (<const intp*> b)[0]
    return (x > y) - (x < y)


cdef intp stable_partition(intp* perm, const unsigned char* side, intp s, intp e,
                           intp* tmp) noexcept nogil:
    """Move positions with side 0 before those with side 1 (``side`` indexed from s),
    keeping order within each side.  Returns the first position of side 1."""
    cdef intp pos, a = s, b = 0
    for pos in range(s, e):
        if side[pos - s] == 0:
            perm[a] = perm[pos]
            a += 1
        else:
            tmp[b] = perm[pos]
            b += 1
    for pos in range(b):
        perm[a + pos] = tmp[pos]
    return a


# ---------------------------------------------------------------------------
# KD-tree: node bounds

cdef void kd_init(const PlanS* P, TreeS* T, intp node, intp D) noexcept nogil:
    cdef intp a
    for a in range(P.mc):
        T.c_lo[node * P.mc + a] = INFINITY
        T.c_hi[node * P.mc + a] = -INFINITY
        T.c_pen[node * P.mc + a] = INFINITY
        T.c_fl[node * P.mc + a] = 0
    for a in range(P.mo):
        T.o_mask[node * P.mo + a] = 0
        T.o_fl[node * P.mo + a] = 0
    for a in range(P.mt):
        T.t_mask[node * P.mt + a] = 0
        T.t_fl[node * P.mt + a] = 0
    for a in range(D):
        T.e_lo[node * D + a] = INFINITY
        T.e_hi[node * D + a] = -INFINITY
    for a in range(P.me):
        T.e_fl[node * P.me + a] = 0
    T.minidx[node] = -1


cdef void kd_widen(const PlanS* P, TreeS* T, intp node, const RowsS* R, intp j) noexcept nogil:
    """Widen the bounds of ``node`` so that they cover row j of R."""
    cdef intp a, b, off, cx, D = R.D
    cdef double x
    cdef intp base
    base = node * P.mc
    for a in range(P.mc):
        x = R.c[j * P.mc + a]
        if x == x:
            T.c_fl[base + a] |= F_PRESENT
            if x < T.c_lo[base + a]:
                T.c_lo[base + a] = x
            if x > T.c_hi[base + a]:
                T.c_hi[base + a] = x
            if R.cpen[j * P.mc + a] < T.c_pen[base + a]:
                T.c_pen[base + a] = R.cpen[j * P.mc + a]
        else:
            T.c_fl[base + a] |= F_MISSING
    base = node * P.mo
    for a in range(P.mo):
        cx = R.o[j * P.mo + a]
        if cx >= 0:
            T.o_fl[base + a] |= F_PRESENT
            T.o_mask[base + a] |= (<uint64_t> 1) << (cx & 63)
        else:
            T.o_fl[base + a] |= F_MISSING
    base = node * P.mt
    for a in range(P.mt):
        cx = R.t[j * P.mt + a]
        if cx < 0:
            T.t_fl[base + a] |= F_MISSING
        elif cx >= P.t_V[a]:
            T.t_fl[base + a] |= F_UNSEEN
        else:
            T.t_fl[base + a] |= F_PRESENT
            T.t_mask[base + a] |= (<uint64_t> 1) << (cx & 63)
    for a in range(P.me):
        off = P.e_off[a]
        if R.e[j * D + off] == R.e[j * D + off]:
            T.e_fl[node * P.me + a] |= F_PRESENT
            for b in range(off, P.e_off[a + 1]):
                x = R.e[j * D + b]
                if x < T.e_lo[node * D + b]:
                    T.e_lo[node * D + b] = x
                if x > T.e_hi[node * D + b]:
                    T.e_hi[node * D + b] = x
        else:
            T.e_fl[node * P.me + a] |= F_MISSING
    if T.minidx[node] < 0 or j < T.minidx[node]:
        T.minidx[node] = j


# ---------------------------------------------------------------------------
# KD-tree: the lower bound of a query to a node

ctypedef struct QCtx:
    const double* qc       # query's continuous values
    const double* qpen     # query's "other side missing" terms
    const int* qo
    const int* qt
    const double* qe
    double* bm             # [mt * 64] smallest table term from the query to each bucket
    double* tun            # [mt] table term from the query to an unseen code
    double margin          # relative lowering where pow or the rescaling round


cdef void kd_prepare(const PlanS* P, const RowsS* Q, intp q, QCtx* C) noexcept nogil:
    cdef intp a, v, V, r, off
    cdef int cx
    cdef double t
    C.qc = Q.c + q * P.mc
    C.qpen = Q.cpen + q * P.mc
    C.qo = Q.o + q * P.mo
    C.qt = Q.t + q * P.mt
    C.qe = Q.e + q * Q.D
    for a in range(P.mt):
        cx = C.qt[a]
        for v in range(64):
            C.bm[a * 64 + v] = INFINITY
        if cx < 0:
            continue
        V = P.t_V[a]
        r = cx if cx < V else V
        off = P.t_off[a] + r * (V + 1)
        for v in range(V):
            t = 0.0 if v == cx else P.t_tab[off + v]
            if t < C.bm[a * 64 + (v & 63)]:
                C.bm[a * 64 + (v & 63)] = t
        C.tun[a] = P.t_tab[off + V]


cdef inline double embed_gap(const double* x, const double* lo, const double* hi, intp dim,
                             int q, int pmode, double p) noexcept nogil:
    """Smallest embedded term from vector x to the box [lo, hi] (same operations as
    ``embed_term`` applied to the per-component gaps)."""
    cdef intp c
    cdef double n = 0.0, g
    for c in range(dim):
        if x[c] < lo[c]:
            g = lo[c] - x[c]
        elif x[c] > hi[c]:
            g = x[c] - hi[c]
        else:
            g = 0.0
        if q == 2:
            n += g * g
        else:
            n += g
    if q == 2:
        if pmode == 2:
            return n
        return pw(sqrt(n), pmode, p)
    return pw(n, pmode, p)


cdef inline double with_missing(double t, unsigned char fl, bint skippable,
                                double pen) noexcept nogil:
    """A term's lower bound once the node's rows with a missing value count: they give
    ``pen``, or may be skipped ("ignore")."""
    if fl & F_MISSING:
        if skippable:
            return 0.0
        if pen < t:
            return pen
    return t


cdef inline bint skipped(bint sk, bint qmiss, unsigned char fl, double w,
                        double* skipw) noexcept nogil:
    """True (and ``w`` added to ``skipw``) when "ignore" skips the component for every row
    of the node: the query's value, or every row's value, is missing."""
    if sk and (qmiss or fl == F_MISSING):
        skipw[0] += w
        return True
    return False


cdef double kd_lower(const PlanS* P, const TreeS* T, const QCtx* C, intp node, intp D,
                     double kth) noexcept nogil:
    """A lower bound of the reduced distance from the query to every row of ``node``.

    Per attribute: the smallest term any row of the node can give.  Under "ignore", a
    component every row skips (the query's value or all the node's values are missing)
    adds its weight to ``skipw``; one that only some rows skip counts 0."""
    cdef int pm = P.pmode
    cdef double p = P.p
    cdef int ign = P.has_ignore
    cdef double s = 0.0, t, x, skipw = 0.0, kmax
    cdef intp a, base, off
    cdef int cx
    cdef unsigned char fl
    cdef bint sk
    cdef uint64_t m
    cdef bint fast = not ign and pm <= 2
    cdef double g, h, d
    base = node * P.mc
    for a in range(P.mc):
        fl = T.c_fl[base + a]
        x = C.qc[a]
        if fast and fl == F_PRESENT and x == x:
            # the common case, without branches on the data: the gap between x and the
            # node's interval (the same operations as below where it is positive)
            g = T.c_lo[base + a] - x
            h = x - T.c_hi[base + a]
            g = h if h > g else g
            d = g * P.c_inv[a]
            t = P.c_w[a] * (d * d if pm == 2 else d)
            s = acc(s, t if g > 0.0 else 0.0, pm)
            continue
        sk = ign and P.c_ign[a]
        if skipped(sk, x != x, fl, P.c_w[a], &skipw):
            continue
        t = INFINITY
        if x != x:
            if fl & F_PRESENT:
                t = T.c_pen[base + a]
            t = with_missing(t, fl, 0, P.c_both[a])
        else:
            if fl & F_PRESENT:
                if x < T.c_lo[base + a]:
                    t = P.c_w[a] * pw((T.c_lo[base + a] - x) * P.c_inv[a], pm, p)
                elif x > T.c_hi[base + a]:
                    t = P.c_w[a] * pw((x - T.c_hi[base + a]) * P.c_inv[a], pm, p)
                else:
                    t = 0.0
            t = with_missing(t, fl, sk, C.qpen[a])
        s = acc(s, t, pm)
    if not ign and s * C.margin > kth:
        return s * C.margin
    base = node * P.mo
    for a in range(P.mo):
        fl = T.o_fl[base + a]
        cx = C.qo[a]
        sk = ign and P.o_ign[a]
        if skipped(sk, cx < 0, fl, P.o_rw[a], &skipw):
            continue
        t = P.o_miss[a]
        if cx >= 0:
            t = INFINITY
            if fl & F_PRESENT:
                t = 0.0 if (T.o_mask[base + a] >> (cx & 63)) & 1 else P.o_w[a]
            t = with_missing(t, fl, sk, P.o_miss[a])
        s = acc(s, t, pm)
    if not ign and s * C.margin > kth:
        return s * C.margin
    base = node * P.mt
    for a in range(P.mt):
        fl = T.t_fl[base + a]
        cx = C.qt[a]
        sk = ign and P.t_ign[a]
        if skipped(sk, cx < 0, fl, P.t_rw[a], &skipw):
            continue
        t = P.t_miss[a]
        if cx >= 0:
            t = INFINITY
            if fl & F_PRESENT:
                m = T.t_mask[base + a]
                while m:
                    x = C.bm[a * 64 + hdist_ctz64(m)]
                    if x < t:
                        t = x
                    m &= m - 1
            if fl & F_UNSEEN:
                # an unseen query value may equal an unseen row value (term 0)
                x = 0.0 if cx >= P.t_V[a] else C.tun[a]
                if x < t:
                    t = x
            t = with_missing(t, fl, sk, P.t_miss[a])
        s = acc(s, t, pm)
    if not ign and s * C.margin > kth:
        return s * C.margin
    for a in range(P.me):
        fl = T.e_fl[node * P.me + a]
        off = P.e_off[a]
        x = C.qe[off]
        sk = ign and P.e_ign[a]
        if skipped(sk, x != x, fl, P.e_rw[a], &skipw):
            continue
        t = P.e_miss[a]
        if x == x:
            t = INFINITY
            if fl & F_PRESENT:
                t = P.e_rw[a] * embed_gap(C.qe + off, T.e_lo + node * D + off,
                                          T.e_hi + node * D + off, P.e_off[a + 1] - off,
                                          P.e_q[a], pm, p)
            t = with_missing(t, fl, sk, P.e_miss[a])
        s = acc(s, t, pm)
    if ign and skipw > 0.0 and pm != 0:
        # every row of the node skips at least the weight skipw: the rescaling
        # W / (known weight) is at least W / (W - skipw)
        kmax = P.w_all - skipw
        if kmax > 0.0:
            s = s * (P.w_all / kmax)
    return s * C.margin


# ---------------------------------------------------------------------------
# KD-tree: build

ctypedef struct BuildS:
    const PlanS* P
    const RowsS* R        # every row, in index order
    intp* perm            # tree position -> row index
    double* rowdist       # ball tree: distance of each position to its leaf's pivot
    intp leaf
    intp D
    double* key           # scratch, one per row
    double* aux           # scratch, one per row
    intp* itmp            # scratch, one per row
    unsigned char* side   # scratch, one per row


include "tree_split.pxi"


cdef int kd_route(const PlanS* P, const TreeS* T, intp node, const RowsS* R, intp j,
                  intp D) noexcept nogil:
    """0 when an inserted row j goes to the left child of ``node``, 1 for the right."""
    cdef int kind = T.sk[node]
    cdef intp a = T.sa[node]
    cdef double x
    cdef int cx
    if kind == S_CONT or kind == S_CONT_MISS or kind == S_EMB or kind == S_EMB_MISS:
        if kind == S_CONT or kind == S_CONT_MISS:
            x = R.c[j * P.mc + a]
        else:
            x = R.e[j * D + P.e_off[a]]
            if x == x and kind == S_EMB:
                x = R.e[j * D + T.sdim[node]]
        if x != x:
            return 0 if (T.sfl[node] & 1) else 1
        return 0 if x < T.sthr[node] else 1
    if kind == S_OVER or kind == S_OVER_MISS or kind == S_TAB or kind == S_TAB_MISS:
        cx = R.o[j * P.mo + a] if (kind == S_OVER or kind == S_OVER_MISS) else R.t[j * P.mt + a]
        if cx < 0:
            return 0 if (T.sfl[node] & 1) else 1
        if kind == S_OVER_MISS or kind == S_TAB_MISS:
            return 0
        if kind == S_TAB and cx >= P.t_V[a]:
            return 1
        return 0 if (T.smask[node] >> (cx & 63)) & 1 else 1
    return 1


# ---------------------------------------------------------------------------
# ball tree: build

cdef intp ball_pivot(BuildS* B, intp s, intp e) noexcept nogil:
    """A central row of perm[s:e): among a few evenly spaced candidates, the one whose
    largest distance to an evenly spaced sample is smallest."""
    cdef intp n = e - s, nc, ns, c, t, ci, ti, best_c = s
    cdef double worst, best = INFINITY, d
    nc = 12 if n > 12 else n
    ns = 64 if n > 64 else n
    for c in range(nc):
        ci = s + (c * n) // nc + (n // (2 * nc))
        if ci >= e:
            ci = e - 1
        worst = 0.0
        for t in range(ns):
            ti = s + (t * n) // ns
            d = true_dist(B.P, B.R, B.perm[ci], B.R, B.perm[ti])
            if d > worst:
                worst = d
            if worst >= best:
                break
        if worst < best:
            best = worst
            best_c = ci
    return B.perm[best_c]


cdef intp ball_split(BuildS* B, TreeS* T, intp node, intp s, intp e) noexcept nogil:
    """Split perm[s:e) by the two far rows (Witten & Frank), each row going to the nearer one
    (but at least a tenth of the rows to each side); rowdist must hold the distances to
    the node's pivot.  Returns the first position of the right child."""
    cdef intp n = e - s, pos, far1 = B.perm[s], far2
    cdef intp nearer1 = 0, lo = n // 10, cut
    cdef double best = -1.0, d
    for pos in range(s, e):
        if B.rowdist[pos] > best:
            best = B.rowdist[pos]
            far1 = B.perm[pos]
    best = -1.0
    far2 = far1
    for pos in range(s, e):
        d = true_dist(B.P, B.R, far1, B.R, B.perm[pos])
        B.aux[pos - s] = d
        if d > best:
            best = d
            far2 = B.perm[pos]
    for pos in range(s, e):
        B.key[pos - s] = B.aux[pos - s] - true_dist(B.P, B.R, far2, B.R, B.perm[pos])
        if B.key[pos - s] < 0.0:
            nearer1 += 1
    # each row goes to the nearer far row, unless that leaves under a tenth on one side
    cut = nearer1
    if cut < lo:
        cut = lo
    if cut > n - lo:
        cut = n - lo
    if cut < 1:
        cut = 1
    if cut > n - 1:
        cut = n - 1
    select_kth(B.key, B.perm + s, n, cut)
    return s + cut


# ---------------------------------------------------------------------------
# building and growing (shared loop)

cdef class Builder:
    """Builds a tree (or regrows the subtree below a leaf) over rows in index order."""
    cdef CPlan plan
    cdef CRows rows
    cdef Nodes nodes
    cdef object perm_arr, rowdist_arr, scratch
    cdef BuildS B
    cdef int kd
    cdef object report          # None, or a callable(rows placed in leaves, rows)
    cdef intp placed, total

    def __init__(self, kind, CPlan plan, CRows rows, Nodes nodes, perm, rowdist,
                 intp leaf_size, report=None):
        self.plan = plan
        self.report = report
        self.placed = 0
        self.total = perm.shape[0]
        self.rows = rows
        self.nodes = nodes
        self.kd = kind == "kd_tree"
        self.perm_arr = perm
        self.rowdist_arr = rowdist
        n = max(1, perm.shape[0])
        self.scratch = (np.empty(n), np.empty(n), np.empty(n, dtype=np.intp),
                        np.empty(n, dtype=np.uint8))
        self.B.P = &plan.s
        self.B.R = &rows.s
        self.B.perm = <intp*> cnp.PyArray_DATA(perm)
        self.B.rowdist = <double*> cnp.PyArray_DATA(rowdist)
        self.B.leaf = leaf_size
        self.B.D = rows.s.D
        self.B.key = <double*> cnp.PyArray_DATA(self.scratch[0])
        self.B.aux = <double*> cnp.PyArray_DATA(self.scratch[1])
        self.B.itmp = <intp*> cnp.PyArray_DATA(self.scratch[2])
        self.B.side = <unsigned char*> cnp.PyArray_DATA(self.scratch[3])

    def grow(self, intp root):
        """Process ``root`` (its start/end/depth set) and everything below it."""
        cdef list stack = [root]
        cdef intp node, s, e, mid, pos, L, Rn, d, j, piv, done = 0
        cdef double rad, dd
        cdef TreeS* T
        while stack:
            node = stack.pop()
            done += 1
            if done % 256 == 0:
                PyErr_CheckSignals()
            T = &self.nodes.s
            s = T.start[node]
            e = T.end[node]
            d = T.depth[node]
            T.left[node] = -1
            T.right[node] = -1
            if self.kd:
                with nogil:
                    kd_init(self.B.P, T, node, self.B.D)
                    for pos in range(s, e):
                        kd_widen(self.B.P, T, node, self.B.R, self.B.perm[pos])
                    mid = -1
                    if e - s > self.B.leaf:
                        mid = kd_split(&self.B, T, node, s, e)
            else:
                with nogil:
                    piv = ball_pivot(&self.B, s, e)
                    rad = 0.0
                    j = -1
                    for pos in range(s, e):
                        dd = true_dist(self.B.P, self.B.R, piv, self.B.R, self.B.perm[pos])
                        self.B.rowdist[pos] = dd
                        if dd > rad:
                            rad = dd
                        if j < 0 or self.B.perm[pos] < j:
                            j = self.B.perm[pos]
                    T.pivot[node] = piv
                    T.radius[node] = rad
                    T.minidx[node] = j
                    mid = -1
                    if e - s > self.B.leaf:
                        mid = ball_split(&self.B, T, node, s, e)
            if mid < 0:
                if self.report is not None:
                    self.placed += e - s
                    if done % 256 == 0 or self.placed == self.total:
                        self.report(self.placed, self.total)
                continue
            L = self.nodes.new_node(s, mid, d + 1)
            Rn = self.nodes.new_node(mid, e, d + 1)
            T = &self.nodes.s
            T.left[node] = L
            T.right[node] = Rn
            stack.append(Rn)
            stack.append(L)


def build(kind, CPlan plan, CRows rows, intp leaf_size, report=None):
    """Build a tree of ``kind`` over all rows of ``rows`` (index order).

    ``report``: None, or a callable receiving ``(rows placed in leaves, rows)`` every few
    hundred nodes and a final ``(rows, rows)``.

    Returns ``(nodes, perm, rowdist)``: the per-node arrays (dict), the row index at each
    tree position, and each position's distance to its leaf's pivot (ball tree; empty
    for the KD-tree)."""
    if leaf_size < 1:
        raise ValueError("leaf_size must be >= 1, got %d" % leaf_size)
    cdef intp n = rows.s.n
    cdef const PlanS* P = &plan.s
    if n == 0:
        raise ValueError("cannot build a tree over 0 rows")
    fields = node_fields(kind, P.mc, P.mo, P.mt, P.me, rows.s.D)
    nodes = Nodes(fields, max(16, 4 * n // max(1, leaf_size) + 4))
    perm = np.arange(n, dtype=np.intp)
    rowdist = np.zeros(n if kind == "ball_tree" else 0)
    nodes.new_node(0, n, 0)
    Builder(kind, plan, rows, nodes, perm, rowdist, leaf_size, report).grow(0)
    return nodes.export(), perm, rowdist


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def insert(kind, CPlan plan, CRows rows, dict arrays, perm, rowdist, intp n_old,
           intp leaf_size):
    """Insert rows ``n_old .. rows.n - 1`` of ``rows`` (every row, index order) into a
    tree: each new row descends to a leaf, widening the bounds (KD) or radii (ball) of
    the nodes on its way; leaves then hold their new rows, and a leaf with more than
    ``leaf_size`` rows is split further.  Returns ``(nodes, perm, rowdist)``."""
    cdef intp n = rows.s.n, nn, i, j, node, c, L
    cdef const PlanS* P = &plan.s
    cdef const PlanS* PP = &plan.s
    cdef const RowsS* RS = &rows.s
    cdef intp D = rows.s.D
    cdef double d0, d1, dl = 0.0
    fields = node_fields(kind, P.mc, P.mo, P.mt, P.me, D)
    nn = len(arrays["start"])
    cdef Nodes nodes = Nodes(fields, nn + 4 * (n - n_old) // max(1, leaf_size) + 16, arrays, nn)
    cdef TreeS* T = &nodes.s
    cdef int kd = kind == "kd_tree"
    leaf_of = np.empty(n - n_old, dtype=np.intp)
    new_rd = np.zeros(n - n_old)
    cdef intp[::1] lf = leaf_of
    cdef double[::1] nrd = new_rd
    with nogil:
        for i in range(n - n_old):
            j = n_old + i
            node = 0
            if not kd:
                dl = true_dist(PP, RS, T.pivot[0], RS, j)
            while True:
                if kd:
                    kd_widen(PP, T, node, RS, j)
                elif dl > T.radius[node]:
                    T.radius[node] = dl
                if T.left[node] < 0:
                    break
                if kd:
                    c = kd_route(PP, T, node, RS, j, D)
                    node = T.right[node] if c else T.left[node]
                else:
                    d0 = true_dist(PP, RS, T.pivot[T.left[node]], RS, j)
                    d1 = true_dist(PP, RS, T.pivot[T.right[node]], RS, j)
                    if d1 < d0:
                        node = T.right[node]
                        dl = d1
                    else:
                        node = T.left[node]
                        dl = d0
            lf[i] = node
            nrd[i] = dl if not kd else 0.0
    # leaves in position order receive their new rows after their old ones
    is_leaf = nodes.arrays["left"][:nn, 0] < 0
    leaves = np.flatnonzero(is_leaf)
    leaves = leaves[np.argsort(nodes.arrays["start"][leaves, 0], kind="stable")]
    rank = np.empty(nn, dtype=np.intp)
    rank[leaves] = np.arange(len(leaves))
    sizes = nodes.arrays["end"][leaves, 0] - nodes.arrays["start"][leaves, 0]
    old_rank = np.repeat(np.arange(len(leaves)), sizes)
    keys = np.concatenate([old_rank, rank[leaf_of]])
    second = np.concatenate([np.zeros(n_old, np.intp), np.ones(n - n_old, np.intp)])
    order = np.lexsort((np.arange(n), second, keys))
    perm = np.ascontiguousarray(np.concatenate([perm, np.arange(n_old, n)])[order])
    if not kd:
        rowdist = np.ascontiguousarray(np.concatenate([rowdist, new_rd])[order])
    # node sizes bottom-up (children always have larger ids than their parent)
    size = np.zeros(nn, dtype=np.intp)
    size[leaves] = sizes + np.bincount(rank[leaf_of], minlength=len(leaves))
    cdef intp[::1] sz = size
    with nogil:
        for node in range(nn - 1, -1, -1):
            if T.left[node] >= 0:
                sz[node] = sz[T.left[node]] + sz[T.right[node]]
        T.start[0] = 0
        for node in range(nn):
            T.end[node] = T.start[node] + sz[node]
            if T.left[node] >= 0:
                T.start[T.left[node]] = T.start[node]
                T.start[T.right[node]] = T.start[node] + sz[T.left[node]]
    builder = Builder(kind, plan, rows, nodes, perm, rowdist, leaf_size)
    for L in leaves:
        if sz[L] > leaf_size:
            builder.grow(L)
    return nodes.export(), perm, rowdist


include "tree_query.pxi"
