# cython: language_level=3
"""Exact KD-tree and ball tree over a Plan (Witten & Frank, "Finding nearest neighbors efficiently").

Both trees are flat arrays (one row per node, children by explicit index), so they pickle
as plain numpy arrays and grow by appending nodes on insertion.  A leaf's rows are
contiguous in tree order, and their reduced distances to a query come from the brute
force's tile kernel (``tile_block``, ``_kernels.pxd``: the operations of ``pair_reduced``,
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
"""
import numpy as np
cimport numpy as cnp
cimport cython
from cython.parallel cimport prange
from libc.stdlib cimport malloc, free, realloc, qsort
from libc.string cimport memcpy
from libc.math cimport INFINITY, sqrt, fabs
from libc.stdint cimport uint64_t

from hdist._kernels cimport (PlanS, RowsS, CPlan, CRows, intp, pw, acc, pair_reduced,
                             finalize, reduced_bound, true_of, AttrRows, tile_block)
from hdist._kernels import TILE_ROWS, tile_view

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


cdef intp kd_split(BuildS* B, TreeS* T, intp node, intp s, intp e) noexcept nogil:
    """Choose a split of rows perm[s:e), partition them and record the rule.
    Returns the first position of the right child (s < mid < e)."""
    cdef const PlanS* P = B.P
    cdef const RowsS* R = B.R
    cdef int pm = P.pmode
    cdef double p = P.p
    cdef intp n = e - s, half = n // 2, a, b, pos, j, off, V, cnt_p, i, nb, mid
    cdef intp best_a = -1, best_dim = 0
    cdef int best_kind = S_POS
    cdef double best = 0.0, v, vmax, ext
    cdef unsigned char fl
    cdef uint64_t mask
    cdef int cx, b0
    cdef intp counts[64]
    cdef intp order[64]
    cdef double score[64]
    cdef intp U, M, total, cum, tmpi
    cdef double tmpd
    cdef uint64_t leftmask
    cdef int miss_left
    cdef double x
    # --- choose
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
    T.sk[node] = best_kind
    T.sa[node] = best_a
    T.sdim[node] = best_dim
    T.sthr[node] = INFINITY
    T.smask[node] = 0
    T.sfl[node] = 0
    # --- partition
    if best_kind == S_POS:
        qsort(B.perm + s, n, sizeof(intp), cmp_intp)
        return s + half
    if best_kind == S_CONT or best_kind == S_CONT_MISS or best_kind == S_EMB \
            or best_kind == S_EMB_MISS:
        # present rows first, missing rows after (order kept)
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
    if best_kind == S_OVER_MISS or best_kind == S_TAB_MISS:
        for pos in range(s, e):
            j = B.perm[pos]
            if best_kind == S_OVER_MISS:
                cx = R.o[j * P.mo + best_a]
            else:
                cx = R.t[j * P.mt + best_a]
            B.side[pos - s] = 0 if cx >= 0 else 1
        return stable_partition(B.perm, B.side, s, e, B.itmp)
    # nominal value split: count rows per bucket
    for b in range(64):
        counts[b] = 0
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
    # order the present buckets: overlap by count (descending), tables by their term to
    # the first present bucket (ascending), so that similar values stay together
    nb = 0
    if best_kind == S_OVER:
        mask = T.o_mask[node * P.mo + best_a]
    else:
        mask = T.t_mask[node * P.mt + best_a]
    b0 = hdist_ctz64(mask) if mask else 0
    while mask:
        b = hdist_ctz64(mask)
        order[nb] = b
        if best_kind == S_OVER:
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
                              and finalize(P, lb) >= hd[k - 1]):
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
                        if before(s, j, hd[k - 1], hi[k - 1]):
                            sorted_insert(hd, hi, k, s, j)
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
                if before(s, j, hd[k - 1], hi[k - 1]):
                    sorted_insert(hd, hi, k, s, j)
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
                    and finalize(P, lb[m]) >= hd[k - 1]:
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


ctypedef struct HitBuf:
    double* d
    intp* j
    intp n
    intp cap


cdef inline int hit_add(HitBuf* h, double d, intp j) noexcept nogil:
    cdef double* nd
    cdef intp* nj
    if h.n == h.cap:
        h.cap = 2 * h.cap if h.cap else 16
        nd = <double*> realloc(h.d, h.cap * sizeof(double))
        if nd == NULL:
            return -1
        h.d = nd
        nj = <intp*> realloc(h.j, h.cap * sizeof(intp))
        if nj == NULL:
            return -1
        h.j = nj
    h.d[h.n] = d
    h.j[h.n] = j
    h.n += 1
    return 0


cdef int radius_chunk(const QueryS* S, intp q0, intp q1, HitBuf* hits, intp hoff,
                      intp* cnt) noexcept nogil:
    """Rows within true distance S.r of queries [q0, q1) into hits[q - hoff]."""
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
                        if d <= S.r and hit_add(&hits[q - hoff], d, j) < 0:
                            status = -1
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
        intp block=0, intp batch=0):
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
    ``leaf_major``) at once; the ball tree answers queries one at a time."""
    cdef intp nq = Q.s.n, n = R.s.n, b0, b1, nch, ch, per = 4, q, i, task = 4
    _check_state(kind, arrays, perm, rowdist, n)
    if k < 1 or k > n - (1 if exclude_self else 0):
        raise ValueError("k must be in [1, %d], got %d" % (n - (1 if exclude_self else 0), k))
    if exclude_self and nq != n:
        raise ValueError("exclude_self needs the indexed rows as queries")
    cdef Nodes nodes = _nodes_view(kind, plan, R, arrays)
    cdef _Query S = _Query(kind, plan, nodes, Q, R, leaf_rows, perm, rowdist, depth,
                           exclude_self, two_sided)
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
    cdef intp nq = Q.s.n, n = R.s.n, b0, b1, nch, ch, per = 4, q, h
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
    cdef HitBuf* hits = <HitBuf*> malloc(block * sizeof(HitBuf))
    if hits == NULL:
        raise MemoryError()
    status = np.zeros(max(1, (block + per - 1) // per), dtype=np.intc)
    cdef int* st = <int*> cnp.PyArray_DATA(status)
    cdef int nt
    out_d = []
    out_i = []
    for q in range(block):
        hits[q].d = NULL
        hits[q].j = NULL
        hits[q].n = 0
        hits[q].cap = 0
    try:
        for b0 in range(0, nq, block):
            b1 = min(nq, b0 + block)
            nch = (b1 - b0 + per - 1) // per
            nt = min(n_threads, nch)
            status[:] = 0
            with nogil:
                for ch in prange(nch, num_threads=nt, schedule="dynamic"):
                    st[ch] = radius_chunk(&S.s, b0 + ch * per, min(b1, b0 + ch * per + per),
                                          hits, b0, Cc)
            PyErr_CheckSignals()
            if (status < 0).any():
                raise MemoryError("tree radius query ran out of memory")
            for q in range(b1 - b0):
                dq = np.empty(hits[q].n)
                iq = np.empty(hits[q].n, dtype=np.intp)
                for h in range(hits[q].n):
                    dq[h] = hits[q].d[h]
                    iq[h] = hits[q].j[h]
                hits[q].n = 0
                o = np.lexsort((iq, dq))
                out_d.append(dq[o])
                out_i.append(iq[o])
    finally:
        for q in range(block):
            free(hits[q].d)
            free(hits[q].j)
        free(hits)
    return out_d, out_i, counts
