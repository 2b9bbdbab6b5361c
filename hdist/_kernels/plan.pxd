# cython: language_level=3
"""Declarations shared by every compiled module of hdist._kernels.

The kernels see only arrays: a :class:`CPlan` (per-attribute constants of a fitted
metric) and :class:`CRows` (encoded rows).  The inline term functions below are used by
the brute-force kernels (``tiles``, ``gemm``) and by the trees (``trees``), so every
algorithm computes a pair's distance with the same floating-point operations; the
(distance, index) order of candidates and the heaps that keep the k best are here too.
"""
from libc.math cimport fabs, fmax, sqrt, pow, INFINITY
from libc.stdlib cimport realloc, free

cdef extern from "openmp.h":
    int hdist_openmp_enabled() noexcept nogil
    int hdist_max_threads() noexcept nogil
    int hdist_thread_id() noexcept nogil

cdef extern from "pw.h":
    # d^p for a general p: sqrt for p = 0.5, pow otherwise (shared with the tile kernel)
    double hd_pw_gen(double d, double p) noexcept nogil

ctypedef Py_ssize_t intp

# pmode: 0 -> p = inf (max aggregation), 1 -> p = 1, 2 -> p = 2, 3 -> any other p
ctypedef struct PlanS:
    intp mc          # continuous ("diff") attributes
    intp mo          # nominal attributes compared by overlap
    intp mt          # nominal attributes with a value table
    intp me          # attributes embedded as vectors (class posteriors, VDM rows)
    int pmode
    double p
    double inv_p
    int has_ignore   # some attribute uses the "ignore" missing policy
    int mean         # divide the reduced distance by the total weight
    double w_all     # sum of all weights
    double w_max     # largest weight (p = inf, nothing known)
    double slack     # 1 + 2^-40 · max(1, p): see reduced_bound
    const double* c_w       # weights: a continuous term is c_w · pw(|x - y| · c_inv)
    const double* c_inv     # 1 / (δ · 2^e) for values encoded as x · 2^e
    const double* c_elo     # min · 2^e, max · 2^e: the training range in encoded units
    const double* c_ehi     # (Weka's "max" rule)
    const unsigned char* c_maxp  # the "max" policy (its penalty depends on the value)
    int c_anymax            # some c_maxp: else every row's cpen[a] is c_w[a]
    const unsigned char* c_ign
    const double* c_both    # term when both values are missing
    const double* o_w       # term when the values differ (pre-weighted)
    const double* o_sel     # [4 mo]: (0, o_w[a], o_miss[a], o_miss[a]) per attribute
    const double* o_miss    # term when a value is missing
    const double* o_rw
    const unsigned char* o_ign
    const double* t_tab     # concatenated (V+1) x (V+1) tables, pre-weighted, pre-raised
    const double* t_raw     # the same tables unweighted and unraised (general p only)
    const intp* t_off
    const int* t_V          # index of the "unseen" row of each table
    const double* t_miss
    const double* t_rw
    const unsigned char* t_ign
    const intp* e_off       # column offsets of each embedded attribute (me + 1)
    const unsigned char* e_q
    const double* e_miss
    const double* e_rw      # weights: an embedded term is e_rw · embed_term(x, y)
    const unsigned char* e_ign

ctypedef struct RowsS:
    intp n
    const double* c      # [n, mc] continuous values x · 2^e, NaN = missing
    const double* cpen   # [n, mc] term when the other value is missing
    const int* o         # [n, mo] overlap codes, -1 = missing
    const int* t         # [n, mt] table codes, -1 = missing
    const double* e      # [n, D] embedded vectors, NaN in the first entry = missing
    intp D
    int c_nan            # some continuous value is missing (selects a branch-free path)


cdef class CPlan:
    cdef PlanS s
    cdef object _keep


cdef class CRows:
    cdef RowsS s
    cdef object _keep


ctypedef struct TieList:
    # the rows outside a query's k best at exactly its current k-th distance: their
    # indices (``cap`` -1 once an allocation failed), or, with ``acc`` set, only their
    # tally -- ``n`` rows, and per class their count (``code``: the reference rows'
    # class codes, ``m`` classes) or per target their sum (``val``: the reference rows'
    # targets [rows, m], each sum an unevaluated pair (sum, error) so that the order of
    # the additions does not show) -- in memory that does not grow with the ties
    intp* j
    intp n
    intp cap
    const intp* code
    const double* val
    double* acc
    intp m


cdef class TieLists:
    cdef TieList* t
    cdef intp n


cdef inline double pw(double d, int pmode, double p) noexcept nogil:
    if pmode == 2:
        return d * d
    elif pmode == 1 or pmode == 0:
        return d
    return hd_pw_gen(d, p)


cdef inline double acc(double s, double t, int pmode) noexcept nogil:
    if pmode == 0:
        return t if t > s else s
    return s + t


cdef inline double embed_term(const double* x, const double* y, intp dim, int q,
                              int pmode, double p) noexcept nogil:
    """Term of one embedded attribute: ``(Σ_c |x_c - y_c|^q)^(p/q)``."""
    if pmode == 2:
        return embed_term_t(x, y, dim, q, p, <PL2*> NULL)
    if pmode == 1:
        return embed_term_t(x, y, dim, q, p, <PL1*> NULL)
    if pmode == 0:
        return embed_term_t(x, y, dim, q, p, <PInf*> NULL)
    return embed_term_t(x, y, dim, q, p, <PGen*> NULL)


# Tags of a fused type: each kernel is compiled once per kind of p, so that the inner
# loops carry no test on p (p = inf, 1, 2, other).
ctypedef struct PInf:
    char tag
ctypedef struct PL1:
    char tag
ctypedef struct PL2:
    char tag
ctypedef struct PGen:
    char tag
ctypedef fused pmode_t:
    PInf
    PL1
    PL2
    PGen


cdef inline double pw_t(double d, double p, pmode_t* pm) noexcept nogil:
    if pmode_t is PL2:
        return d * d
    elif pmode_t is PGen:
        return hd_pw_gen(d, p)
    else:
        return d


cdef inline double acc_t(double s, double t, pmode_t* pm) noexcept nogil:
    if pmode_t is PInf:
        return t if t > s else s
    else:
        return s + t


cdef inline double embed_term_t(const double* x, const double* y, intp dim, int q,
                                double p, pmode_t* pm) noexcept nogil:
    cdef intp c
    cdef double n = 0.0, dlt
    if q == 2:
        for c in range(dim):
            dlt = x[c] - y[c]
            n += dlt * dlt
        if pmode_t is PL2:
            return n
        return pw_t(sqrt(n), p, pm)
    for c in range(dim):
        n += fabs(x[c] - y[c])
    return pw_t(n, p, pm)


cdef inline double pair_reduced_t(const PlanS* P, const RowsS* A, intp i,
                                  const RowsS* B, intp j, pmode_t* pm,
                                  double bound) noexcept nogil:
    """``pair_reduced`` compiled for one kind of p (the fused type ``pmode_t``)."""
    cdef double s = 0.0, x, y, t, kw = 0.0
    cdef intp a, cx, cy, V, nskip = 0
    cdef const double* xa
    cdef const double* ya
    cdef const int* ia
    cdef const int* ja
    cdef double p = P.p
    cdef int ign = P.has_ignore
    cdef double cand[4]
    cdef const double* xp
    cdef const double* yp
    # continuous block
    if P.mc:
        xa = A.c + i * P.mc
        ya = B.c + j * P.mc
        if not ign and (A.c_nan or B.c_nan):
            # missing values are frequent and unpredictable: select the term by an index
            # (0 both present, 1 y missing, 2 x missing, 3 both) instead of branching.
            # Without the "max" policy the term against a missing value is the weight
            # (Rows.cpen holds it for every row): read from the plan, not the rows
            xp = A.cpen + i * P.mc if P.c_anymax else P.c_w
            yp = B.cpen + j * P.mc if P.c_anymax else P.c_w
            for a in range(P.mc):
                x = xa[a]
                y = ya[a]
                cand[0] = P.c_w[a] * pw_t(fabs(x - y) * P.c_inv[a], p, pm)
                cand[1] = xp[a]
                cand[2] = yp[a]
                cand[3] = P.c_both[a]
                s = acc_t(s, cand[2 * (x != x) + (y != y)], pm)
        else:
            # no missing value (branches predicted), or the "ignore" policy
            for a in range(P.mc):
                x = xa[a]
                y = ya[a]
                if x == x and y == y:
                    t = P.c_w[a] * pw_t(fabs(x - y) * P.c_inv[a], p, pm)
                elif ign and P.c_ign[a]:
                    nskip += 1
                    continue
                elif x == x:
                    t = A.cpen[i * P.mc + a]
                elif y == y:
                    t = B.cpen[j * P.mc + a]
                else:
                    t = P.c_both[a]
                if ign:
                    kw += P.c_w[a]
                s = acc_t(s, t, pm)
        if not ign and s > bound:
            return s
    # overlap block
    if P.mo:
        ia = A.o + i * P.mo
        ja = B.o + j * P.mo
        for a in range(P.mo):
            cx = ia[a]
            cy = ja[a]
            if not ign:
                # equality and missingness are unpredictable: select the term by a load,
                # o_sel[4a:4a+4] = (0, w_a, miss_a, miss_a), rather than by branches
                s = acc_t(s, P.o_sel[4 * a + ((cx != cy) | (((cx | cy) < 0) << 1))], pm)
            elif cx >= 0 and cy >= 0:
                s = acc_t(s, P.o_sel[4 * a + (cx != cy)], pm)
            elif ign and P.o_ign[a]:
                nskip += 1
                continue
            else:
                s = acc_t(s, P.o_miss[a], pm)
            if ign:
                kw += P.o_rw[a]
        if not ign and s > bound:
            return s
    # table block
    if P.mt:
        ia = A.t + i * P.mt
        ja = B.t + j * P.mt
        for a in range(P.mt):
            cx = ia[a]
            cy = ja[a]
            if cx >= 0 and cy >= 0:
                V = P.t_V[a]
                if cx < V and cy < V:
                    # learned values: T[v, v] = 0, so no test of equality is needed
                    t = P.t_tab[P.t_off[a] + cx * (V + 1) + cy]
                elif cx == cy:
                    t = 0.0         # the same unseen value twice
                else:
                    t = P.t_tab[P.t_off[a] + (cx if cx < V else V) * (V + 1)
                                + (cy if cy < V else V)]
                s = acc_t(s, t, pm)
            elif ign and P.t_ign[a]:
                nskip += 1
                continue
            else:
                s = acc_t(s, P.t_miss[a], pm)
            if ign:
                kw += P.t_rw[a]
        if not ign and s > bound:
            return s
    # embedded block
    if P.me:
        xa = A.e + i * A.D
        ya = B.e + j * B.D
        for a in range(P.me):
            x = xa[P.e_off[a]]
            y = ya[P.e_off[a]]
            if x == x and y == y:
                t = P.e_rw[a] * embed_term_t(xa + P.e_off[a], ya + P.e_off[a],
                                             P.e_off[a + 1] - P.e_off[a], P.e_q[a], p, pm)
            elif ign and P.e_ign[a]:
                nskip += 1
                continue
            else:
                t = P.e_miss[a]
            if ign:
                kw += P.e_rw[a]
            s = acc_t(s, t, pm)
    if ign and nskip:
        if pmode_t is PInf:
            s = rescale_ignore(P, s, kw, 0)
        else:
            s = rescale_ignore(P, s, kw, 1)
    return s


cdef inline double pair_reduced(const PlanS* P, const RowsS* A, intp i,
                                const RowsS* B, intp j, int pmode,
                                double bound) noexcept nogil:
    """Reduced distance of row i of A and row j of B.

    Returns ``sum_a w_a d_a^p`` (``max_a w_a d_a`` for p = inf), rescaled for the
    "ignore" policy.  Without "ignore", the sum is abandoned as soon as a partial sum
    exceeds ``bound`` (the returned value is then only known to exceed ``bound``).
    ``pmode`` selects the code compiled for p = inf (0), 1, 2 or any other p (3).
    """
    if pmode == 2:
        return pair_reduced_t(P, A, i, B, j, <PL2*> NULL, bound)
    if pmode == 1:
        return pair_reduced_t(P, A, i, B, j, <PL1*> NULL, bound)
    if pmode == 0:
        return pair_reduced_t(P, A, i, B, j, <PInf*> NULL, bound)
    return pair_reduced_t(P, A, i, B, j, <PGen*> NULL, bound)


cdef inline double rescale_ignore(const PlanS* P, double s, double kw,
                                  int pmode) noexcept nogil:
    """The "ignore" rule (docs/metrics.md, section 6) for skipped components: d^p = (sum over known) / (known weight)
    * (total weight); nothing known (or no known weight) -> every component counts 1."""
    if kw > 0.0:
        if pmode == 0:
            return s
        return s * (P.w_all / kw)
    if pmode == 0:
        return P.w_max
    return P.w_all


cdef inline double finalize(const PlanS* P, double s) noexcept nogil:
    """True distance from a reduced one (monotone non-decreasing in ``s``)."""
    if P.mean and P.pmode != 0:
        s = s / P.w_all
    if P.pmode == 2:
        return sqrt(s)
    if P.pmode == 3:
        return pow(s, P.inv_p)
    return s


cdef inline double reduced_bound(const PlanS* P, double d) noexcept nogil:
    """A reduced distance ``b`` such that every ``s > b`` has ``finalize(s) > d``.

    Searches keep their candidates ordered by (true distance, index), so that equal
    returned distances are in index order and the k-th boundary is decided on the distance
    the caller sees; a pair whose reduced distance exceeds ``reduced_bound(kth)`` cannot
    enter (and may be abandoned early).  Exact where ``finalize`` is the identity; elsewhere
    a relative slack of 2^-40 · max(1, p) (far above the rounding of the root and the mean)
    and a tiny absolute one keep the bound safe."""
    cdef double b
    if d == INFINITY:
        return INFINITY
    if P.pmode == 2:
        b = d * d
    elif P.pmode == 3:
        b = pow(d, P.p)
    else:
        b = d
    if P.mean and P.pmode != 0:
        b = b * P.w_all
    elif P.pmode == 0 or P.pmode == 1:
        return b
    b = b * P.slack + 1e-300
    if P.pmode >= 2 and b < 1e-280:
        # a pair under 1e-280 is compared on its exactly recomputed true distance
        b = 1e-280
    if P.pmode == 3 and P.p < 1.0 and d < 1e-290:
        # finalize(s) = s^(1/p) underflows below (5e-324)^p (1e-97 at p = 0.3): every such
        # s has a true distance at most the smallest subnormal, so it may tie with d
        b = fmax(b, 2.0 * pow(5e-324, P.p) * (P.w_all if P.mean else 1.0))
    return b



# A reduced distance of p = 2 or a general p (pmode 2, 3) is trusted between these bounds;
# outside them a term may have underflowed (d^p below the smallest normal float64, e.g.
# p = 1000, d = 0.3, or p = 2, d = 1e-300) or the sum overflowed while the true distance is
# finite, and the true distance is computed again with every term scaled by the largest one
# (as hypot does).
# (literal 1e-280 and 1e280 below; hdist._kernels.SAFE_RANGE exposes them)


cdef inline int raw_component(const PlanS* P, const RowsS* A, intp i, const RowsS* B,
                              intp j, intp g, double* d, double* w) noexcept nogil:
    """Component ``g`` (blocks in kernel order) of a pair, unweighted and not raised:
    ``d`` its distance d_a, ``w`` its weight.  Returns 1 when the "ignore" policy skips it."""
    cdef double x, y, v, pen
    cdef intp a, cx, cy, V, c
    cdef const double* xv
    cdef const double* yv
    if g < P.mc:
        a = g
        w[0] = P.c_w[a]
        x = A.c[i * P.mc + a]
        y = B.c[j * P.mc + a]
        if x == x and y == y:
            d[0] = fabs(x - y) * P.c_inv[a]
            return 0
        if P.has_ignore and P.c_ign[a]:
            return 1
        if x == x or y == y:
            v = x if x == x else y
            if P.c_maxp[a] and P.c_inv[a] > 0.0:
                pen = v - P.c_elo[a]
                if P.c_ehi[a] - v > pen:
                    pen = P.c_ehi[a] - v
                d[0] = (pen if pen > 0.0 else 0.0) * P.c_inv[a]
            elif w[0] > 0.0:
                d[0] = pow((A.cpen[i * P.mc + a] if x == x else B.cpen[j * P.mc + a]) / w[0],
                           P.inv_p)
            else:
                d[0] = 0.0
        elif P.c_maxp[a] and P.c_inv[a] > 0.0:
            d[0] = (P.c_ehi[a] - P.c_elo[a]) * P.c_inv[a]
        else:
            d[0] = pow(P.c_both[a] / w[0], P.inv_p) if w[0] > 0.0 else 0.0
        return 0
    g -= P.mc
    if g < P.mo:
        a = g
        w[0] = P.o_rw[a]
        cx = A.o[i * P.mo + a]
        cy = B.o[j * P.mo + a]
        if cx >= 0 and cy >= 0:
            d[0] = 0.0 if cx == cy else 1.0
            return 0
        if P.has_ignore and P.o_ign[a]:
            return 1
        d[0] = 1.0
        return 0
    g -= P.mo
    if g < P.mt:
        a = g
        w[0] = P.t_rw[a]
        cx = A.t[i * P.mt + a]
        cy = B.t[j * P.mt + a]
        if cx >= 0 and cy >= 0:
            V = P.t_V[a]
            if cx == cy:
                d[0] = 0.0
            else:
                d[0] = P.t_raw[P.t_off[a] + (cx if cx < V else V) * (V + 1)
                               + (cy if cy < V else V)]
            return 0
        if P.has_ignore and P.t_ign[a]:
            return 1
        d[0] = 1.0
        return 0
    a = g - P.mt
    w[0] = P.e_rw[a]
    xv = A.e + i * A.D + P.e_off[a]
    yv = B.e + j * B.D + P.e_off[a]
    if xv[0] == xv[0] and yv[0] == yv[0]:
        v = 0.0
        if P.e_q[a] == 2:
            for c in range(P.e_off[a + 1] - P.e_off[a]):
                v += (xv[c] - yv[c]) * (xv[c] - yv[c])
            d[0] = sqrt(v)
        else:
            for c in range(P.e_off[a + 1] - P.e_off[a]):
                v += fabs(xv[c] - yv[c])
            d[0] = v
        return 0
    if P.has_ignore and P.e_ign[a]:
        return 1
    d[0] = 1.0
    return 0


cdef inline double pair_true_scaled(const PlanS* P, const RowsS* A, intp i, const RowsS* B,
                                    intp j) noexcept nogil:
    """True distance of a pair for a general p, every term scaled by the largest one:
    ``M · (Σ_a w_a (d_a / M)^p)^(1/p)``, with the "ignore" rescaling and the mean, so that
    no term underflows or overflows unless the distance itself does."""
    cdef intp g, m = P.mc + P.mo + P.mt + P.me, nskip = 0
    cdef double d = 0.0, w = 0.0, M = 0.0, S = 0.0, kw = 0.0
    for g in range(m):
        if raw_component(P, A, i, B, j, g, &d, &w):
            nskip += 1
            continue
        kw += w
        if w > 0.0 and d > M:
            M = d
    if nskip and kw <= 0.0:
        # nothing known: every component counts 1
        S = P.w_all
        M = 1.0
    elif M == INFINITY:
        return INFINITY
    elif M > 0.0:
        for g in range(m):
            if raw_component(P, A, i, B, j, g, &d, &w):
                continue
            if w > 0.0:
                S += w * pow(d / M, P.p)
        if nskip:
            S = S * (P.w_all / kw)
    if P.mean:
        S = S / P.w_all
    return M * pow(S, P.inv_p)


cdef inline double true_of(const PlanS* P, const RowsS* A, intp i, const RowsS* B, intp j,
                           double s) noexcept nogil:
    """The true distance of a pair whose complete reduced distance is ``s``."""
    if P.pmode >= 2 and not (s >= 1e-280 and s <= 1e280):
        return pair_true_scaled(P, A, i, B, j)
    return finalize(P, s)


ctypedef struct Hit:
    double d
    intp j


# ---------------------------------------------------------------------------
# ordering of candidates: (distance, index) lexicographic

cdef inline bint _before(double d1, intp i1, double d2, intp i2) noexcept nogil:
    return d1 < d2 or (d1 == d2 and i1 < i2)


cdef inline int _cmp_hit(const void* a, const void* b) noexcept nogil:
    """qsort's order of hits: (distance, index)."""
    cdef const Hit* x = <const Hit*> a
    cdef const Hit* y = <const Hit*> b
    if _before(x.d, x.j, y.d, y.j):
        return -1
    if _before(y.d, y.j, x.d, x.j):
        return 1
    return 0


cdef inline int _hit_push(Hit** buf, intp* cnt, double d, intp j) noexcept nogil:
    """Append the hit (d, j) to ``*buf``, which holds ``*cnt``: room for 16 at first,
    doubled whenever a power of two >= 16 is reached.  Returns -1 when out of memory
    (``*buf`` freed and NULL)."""
    cdef intp c = cnt[0]
    cdef Hit* b
    if c == 0 or (c >= 16 and (c & (c - 1)) == 0):
        b = <Hit*> realloc(buf[0], (16 if c == 0 else 2 * c) * sizeof(Hit))
        if b == NULL:
            free(buf[0])
            buf[0] = NULL
            return -1
        buf[0] = b
    buf[0][c].d = d
    buf[0][c].j = j
    cnt[0] = c + 1
    return 0


cdef inline void heap_push(double* hd, intp* hi, intp k, double d, intp j) noexcept nogil:
    """Replace the root of a full max-heap (on (d, j)) by (d, j) and sift down.
    The caller has checked that (d, j) comes before the root."""
    cdef intp pos = 0, child, right
    while True:
        child = 2 * pos + 1
        if child >= k:
            break
        right = child + 1
        if right < k and _before(hd[child], hi[child], hd[right], hi[right]):
            child = right
        if _before(d, j, hd[child], hi[child]):
            hd[pos] = hd[child]
            hi[pos] = hi[child]
            pos = child
        else:
            break
    hd[pos] = d
    hi[pos] = j


cdef inline void heap_sort(double* hd, intp* hi, intp k) noexcept nogil:
    """Sort a max-heap in place into ascending (d, j) order."""
    cdef intp end = k - 1
    cdef double d
    cdef intp j
    while end > 0:
        d = hd[end]
        j = hi[end]
        hd[end] = hd[0]
        hi[end] = hi[0]
        # sift (d, j) down from the root in heap [0, end)
        heap_push(hd, hi, end, d, j)
        end -= 1


# ---------------------------------------------------------------------------
# the rows tied with the k-th: a search asked for them keeps, beside each query's k best,
# the rows it met at exactly the k-th distance that did not fit (TieList).  Every row at
# the final k-th distance outside the k best is met with a reduced distance within the
# bound of that distance (so no filter or bound discards it) and is then either listed
# here or inside the k best; when the k-th distance drops, the list is emptied.

cdef inline void two_sum_add(double* a, double x) noexcept nogil:
    """``a[0] + a[1] += x`` with ``a[0]`` the rounded sum and ``a[1]`` its error
    (Knuth's TwoSum: ``a[0] + a[1]`` stays the exact sum up to the error's rounding)."""
    cdef double s = a[0] + x
    cdef double bb = s - a[0]
    a[1] += (a[0] - (s - bb)) + (x - bb)
    a[0] = s


cdef inline intp tie_width(const TieList* t) noexcept nogil:
    """Entries of a tally's ``acc``: one per class, two per target."""
    return t.m if t.code != NULL else 2 * t.m


cdef inline void tie_clear(TieList* t) noexcept nogil:
    """Empty the list (or its tally).  An empty tally is all zeros already (each
    addition counts in ``n``): a k-th distance that keeps dropping costs no loop."""
    cdef intp c
    if t.n == 0:
        return
    t.n = 0
    if t.acc != NULL:
        for c in range(tie_width(t)):
            t.acc[c] = 0.0


cdef inline void tie_add(TieList* t, intp j) noexcept nogil:
    """Append row ``j`` (on allocation failure ``t.cap`` becomes -1 for good), or count
    it in the tally."""
    cdef intp cap, c
    cdef intp* nj
    if t.acc != NULL:
        t.n += 1
        if t.code != NULL:
            t.acc[t.code[j]] += 1.0
        else:
            for c in range(t.m):
                two_sum_add(t.acc + 2 * c, t.val[j * t.m + c])
        return
    if t.cap < 0:
        return
    if t.n == t.cap:
        cap = 2 * t.cap if t.cap > 0 else 8
        nj = <intp*> realloc(t.j, cap * sizeof(intp))
        if nj == NULL:
            t.cap = -1
            return
        t.j = nj
        t.cap = cap
    t.j[t.n] = j
    t.n += 1


cdef inline void tie_displaced(TieList* t, double od, intp oj, double nd,
                               intp nr) noexcept nogil:
    """The k-th entry ``(od, oj)`` left the k best and the k-th distance is now ``nd``:
    it joins the ties when ``nd == od`` (not a placeholder index ``>= nr``); a smaller
    k-th distance leaves no tie with the listed rows."""
    if nd != od:
        tie_clear(t)
    elif oj < nr:
        tie_add(t, oj)


cdef inline void tie_merge(TieList* out, const TieList* src) noexcept nogil:
    """Add the rows (or the tally) of ``src`` to ``out`` (the same kind of list)."""
    cdef intp h, c
    if out.acc != NULL:
        out.n += src.n
        if out.code != NULL:
            for c in range(out.m):
                out.acc[c] += src.acc[c]
        else:
            for c in range(out.m):
                two_sum_add(out.acc + 2 * c, src.acc[2 * c])
                two_sum_add(out.acc + 2 * c, src.acc[2 * c + 1])
        return
    for h in range(src.n):
        tie_add(out, src.j[h])
    if src.cap < 0:
        out.cap = -1


cdef inline bint heap_offer(double* hd, intp* hi, intp k, double d, intp j, TieList* t,
                            intp nr) noexcept nogil:
    """Offer ``(d, j)`` to a full max-heap of k entries: pushed when it comes before the
    root (returns True: the k-th changed), else, with ``t`` (NULL: no tie list), listed
    when it ties with the root's distance."""
    cdef double od
    cdef intp oj
    if _before(d, j, hd[0], hi[0]):
        od = hd[0]
        oj = hi[0]
        heap_push(hd, hi, k, d, j)
        if t != NULL:
            tie_displaced(t, od, oj, hd[0], nr)
        return True
    if t != NULL and d == hd[0]:
        tie_add(t, j)
    return False
