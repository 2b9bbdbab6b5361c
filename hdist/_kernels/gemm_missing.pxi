# The missing values' side of the matrix-product filter: the codes and tables that bound
# the reference rows' missing terms, the queries' embeddings and their order by the
# attributes they miss (included by gemm.pyx, whose declarations they use).


cdef void _fill_row_codes(intp nh, const intp* rptr, const intp* ridx, intp nr,
                          unsigned short* ab) noexcept nogil:
    """The reference rows' half of :func:`miss_codes` on checked arguments: ``ab [nr]``
    from ``rptr``/``ridx`` (columns below ``nh``)."""
    cdef intp na = min(nh, <intp> CODED_ATTRS), j, t, m, first, nco
    for j in range(nr):
        nco = 0
        first = 31
        for t in range(rptr[j], rptr[j + 1]):
            if ridx[t] < na:
                if nco == 0:
                    first = ridx[t]
                nco = nco + 1
        m = rptr[j + 1] - rptr[j]
        if m == nco and m <= 2:
            ab[j] = <unsigned short> (first + 256 * (31 if m < 2 else ridx[rptr[j] + 1]))
        else:
            m = m - (1 if nco > 0 else 0)
            ab[j] = <unsigned short> (first + 256 * (na + min(m, 31 - na) - 1))


cdef inline void _fill_tab_row(const double* hq, intp nh, const double* hb,
                               float* tab) noexcept nogil:
    """One query's row of :func:`_fill_tabs`: ``tab [32]`` from its ``hq [nh]`` and
    ``hb [2]`` (zeros when a term is negative: the codes are not used then)."""
    cdef intp na = min(nh, <intp> CODED_ATTRS), t, m
    cdef float hm
    cdef float row[32]
    # made in a local row and copied once: stores through tab could alias hq and hb as
    # far as the compiler knows, which would reload them after each
    for t in range(32):
        row[t] = 0.0
    if hb[0] == 0.0:
        for t in range(na):
            row[t] = _below(hq[t], <const float*> NULL)
        hm = _below(hb[1], <const float*> NULL)
        for m in range(1, 32 - na):
            row[na + m - 1] = <float> m * hm
    memcpy(tab, row, 32 * sizeof(float))


cdef void _fill_tabs(const double* hq, intp nq, intp nh, const double* hb,
                     float* tab) noexcept nogil:
    """The queries' half of :func:`miss_codes` on checked arguments: ``tab [nq, 32]``
    from ``hq [nq, nh]`` and ``hb [nq, 2]``."""
    cdef intp q
    for q in range(nq):
        _fill_tab_row(hq + q * nh, nh, hb + 2 * q, tab + 32 * q)


cdef void _query_tables(const double* hq, intp nh, const intp* order, intp a0, intp n,
                        double* hb, float* tab, unsigned short* t16) noexcept nogil:
    """Queries ``order[a0 .. a0 + n)`` (``order`` NULL: ``a0 .. a0 + n``) of ``hq [., nh]``:
    row ``i`` of ``hb [n, 2]`` their :func:`_hq_bounds`, of ``tab [n, 32]`` their
    :func:`_fill_tab_row` and of ``t16 [n, 32]`` that table rounded toward zero to
    bfloat16 (``hd_bf16_bits``)."""
    cdef intp i, t, q
    cdef unsigned short row[32]
    for i in range(n):
        q = order[a0 + i] if order != NULL else a0 + i
        _hq_bounds(hq + q * nh, nh, hb + 2 * i, hb + 2 * i + 1)
        _fill_tab_row(hq + q * nh, nh, hb + 2 * i, tab + 32 * i)
        for t in range(32):
            row[t] = hd_bf16_bits(tab[32 * i + t])
        memcpy(t16 + 32 * i, row, 32 * sizeof(unsigned short))


cdef void _fill_codes(const double* hq, intp nq, intp nh, const double* hb,
                      const intp* rptr, const intp* ridx, intp nr, unsigned short* ab,
                      float* tab) noexcept nogil:
    """:func:`miss_codes` on checked arguments: ``ab [nr]`` and ``tab [nq, 32]`` filled
    from ``hq [nq, nh]``, ``hb [nq, 2]`` and ``rptr``/``ridx``."""
    _fill_row_codes(nh, rptr, ridx, nr, ab)
    _fill_tabs(hq, nq, nh, hb, tab)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef int _check_rows(const intp[::1] rptr, const intp[::1] ridx, intp ncol) except -1:
    """Refuse compressed rows (row ``j``: ``ridx[rptr[j]:rptr[j + 1]]``, ``rptr`` of one
    entry or more) that the kernels would read out of bounds: ``rptr`` from 0, within
    ``ridx`` and non-decreasing, the entries it spans below ``ncol``."""
    cdef intp nr = rptr.shape[0] - 1, j, t
    if rptr[0] != 0 or rptr[nr] > ridx.shape[0]:
        raise ValueError("rptr must index ridx, from 0")
    for j in range(nr):
        if rptr[j + 1] < rptr[j]:
            raise ValueError("rptr must be non-decreasing")
    for t in range(rptr[nr]):
        if ridx[t] < 0 or ridx[t] >= ncol:
            raise ValueError("ridx must index the columns of hq (%d)" % ncol)
    return 0


def _read_only_intp(a):
    """``a`` as a contiguous read-only intp array: itself when it is one, else a copy."""
    if isinstance(a, np.ndarray) and a.dtype == np.intp and a.ndim == 1 \
            and a.flags.c_contiguous and not a.flags.writeable:
        return a
    return np.array(a, dtype=np.intp, copy=True)


cdef class RefMissing:
    """The attributes each reference row misses, checked once per reference set:
    ``rptr``/``ridx`` (compressed rows: row ``j`` misses columns
    ``ridx[rptr[j]:rptr[j + 1]]`` of a query's ``hq``, distinct, below ``ncol``), and the
    rows' codes of :func:`miss_codes` (``ab``).  :class:`GemmKnnSelect` takes it instead
    of checking and coding the rows again for every search; the arrays are kept
    read-only."""
    cdef readonly object rptr, ridx, ab
    cdef readonly intp ncol
    cdef const intp[::1] rp
    cdef const intp[::1] ri

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def __init__(self, rptr, ridx, intp ncol):
        cdef intp nr
        rptr, ridx = _read_only_intp(rptr), _read_only_intp(ridx)
        if rptr.ndim != 1 or ridx.ndim != 1 or len(rptr) < 1:
            raise ValueError("rptr and ridx must be 1-d, rptr with one entry per reference "
                             "row plus one")
        if ncol < 0:
            raise ValueError("ncol must be >= 0")
        self.rp, self.ri = rptr, ridx
        nr = self.rp.shape[0] - 1
        _check_rows(self.rp, self.ri, ncol)
        ab = aligned_empty(nr, np.uint16)
        cdef unsigned short[::1] abv = ab
        if nr > 0:
            _fill_row_codes(ncol, &self.rp[0], &self.ri[0] if self.ri.shape[0] > 0 else NULL,
                            nr, &abv[0])
        rptr.flags.writeable = False
        ridx.flags.writeable = False
        ab.flags.writeable = False
        self.rptr, self.ridx, self.ab, self.ncol = rptr, ridx, ab, ncol

    def tables(self, const double[:, ::1] hq not None):
        """The queries' half of :func:`miss_codes` for these rows' codes ``ab``: ``tab``,
        32 float32 entries per row of ``hq`` (one column per attribute these rows can
        miss)."""
        if hq.shape[1] != self.ncol:
            raise ValueError("hq must have one column per attribute of ridx (%d), got %d"
                             % (self.ncol, hq.shape[1]))
        cdef intp nq = hq.shape[0]
        cdef const double[:, ::1] hb = _all_hq_bounds(hq)
        tab_a = aligned_empty((nq, 32), np.float32)
        tab_a[...] = 0
        cdef float[:, ::1] tab = tab_a
        if nq > 0 and self.ncol > 0:
            with nogil:
                _fill_tabs(&hq[0, 0], nq, hq.shape[1], &hb[0, 0], &tab[0, 0])
        return tab_a


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
cdef _all_hq_bounds(const double[:, ::1] hq):
    """``[nq, 2]``: each query row's :func:`_hq_bounds`."""
    cdef intp t
    out = np.empty((hq.shape[0], 2))
    cdef double[:, ::1] hb = out
    for t in range(hq.shape[0]):
        _hq_bounds(&hq[t, 0], hq.shape[1], &hb[t, 0], &hb[t, 1])
    return out


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def query_continuous(const double[:, ::1] c not None, const double[:, ::1] cpen not None,
                     const double[::1] elo not None, const double[::1] scale not None,
                     const double[::1] centre not None, const double[::1] both not None,
                     const intp[::1] hcol not None, double[:, ::1] X not None,
                     double[::1] const not None, double[:, ::1] H not None,
                     cnp.uint8_t[:, ::1] absent not None):
    """The matrix-product filter's query side for the ``mc`` continuous attributes
    (``hdist._search.gemm_filter._queries``), row by row: with ``v = (c[i, k] - elo[k])
    scale[k]`` (missing when NaN), ``X[i, k] = v - centre[k]`` (0 when missing), its
    square added to ``const[i]`` (attribute after attribute, in order),
    ``H[i, hcol[k]] = cpen[i, k] - X[i, k]^2`` (``both[k]`` when missing; ``hcol[k] < 0``:
    none) and ``absent[i, k]`` the missing flag: the float64 operations the numpy form
    makes, in its order."""
    cdef intp n = c.shape[0], mc = c.shape[1], i, k, h
    cdef double v, et, sq
    if cpen.shape[0] != n or cpen.shape[1] != mc or elo.shape[0] != mc \
            or scale.shape[0] != mc or centre.shape[0] != mc or both.shape[0] != mc \
            or hcol.shape[0] != mc:
        raise ValueError("cpen must have the shape of c, elo, scale, centre, both and hcol "
                         "one entry per column of c")
    for k in range(mc):
        if hcol[k] >= H.shape[1]:
            raise ValueError("hcol must name columns of H")
    if X.shape[0] != n or X.shape[1] < mc or const.shape[0] != n \
            or (H.shape[0] != n and H.shape[1] > 0) or absent.shape[0] != n \
            or absent.shape[1] < mc:
        raise ValueError("X, const, H and absent must have one row per row of c and the "
                         "columns the attributes fill")
    with nogil:
        for i in range(n):
            for k in range(mc):
                v = (c[i, k] - elo[k]) * scale[k]
                if v == v:
                    et = v - centre[k]
                    sq = et * et
                    absent[i, k] = 0
                else:
                    et = 0.0
                    sq = 0.0
                    absent[i, k] = 1
                X[i, k] = et
                const[i] = const[i] + sq
                h = hcol[k]
                if h >= 0:
                    H[i, h] = cpen[i, k] - sq if v == v else both[k]
    return None


cdef inline double _sq_row(const double* r, intp n, double t, double* xmax,
                           bint* bad) noexcept nogil:
    """``t`` plus the squares of ``r[0 .. n)``, in order; ``xmax`` raised to their largest
    magnitude, ``bad`` set when one is not finite."""
    cdef intp k
    cdef double a
    for k in range(n):
        a = r[k]
        if not fabs(a) <= 1.7976931348623157e308:
            bad[0] = True
        elif fabs(a) > xmax[0]:
            xmax[0] = fabs(a)
        t = t + a * a
    return t


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def query_norms(const double[:, ::1] X not None, const double[:, ::1] H not None,
                const intp[::1] qptr not None):
    """``(xmax, s)``: the largest magnitude in ``X`` and ``H`` (NaN when some entry is
    not finite) and per row ``s[i] = Σ X[i]^2 + Σ H[i]^2 + (qptr[i + 1] - qptr[i])``,
    the squared norm of the augmented query vector of the filter's rounding margin."""
    cdef intp n = X.shape[0], K = X.shape[1], nh = H.shape[1], i
    cdef double xmax = 0.0, t
    cdef bint bad = False
    if (H.shape[0] != n and nh > 0) or qptr.shape[0] != n + 1:
        raise ValueError("H must have one row per row of X, qptr one entry more")
    out = np.empty(n)
    cdef double[::1] sv = out
    with nogil:
        for i in range(n):
            t = _sq_row(&X[i, 0] if K > 0 else NULL, K, 0.0, &xmax, &bad)
            t = _sq_row(&H[i, 0] if nh > 0 else NULL, nh, t, &xmax, &bad)
            sv[i] = t + <double> (qptr[i + 1] - qptr[i])
    return (float("nan") if bad else xmax), out


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def query_coded(const int[:, ::1] codes not None, const double[::1] ev not None,
                const intp[::1] ev_off not None, const intp[::1] width not None,
                const double[::1] sv not None, const unsigned char[::1] ok not None,
                const intp[::1] sv_off not None, const double[::1] miss not None,
                const intp[::1] hcol not None, double[:, ::1] X not None, intp x0,
                double[::1] const not None, double[:, ::1] H not None,
                cnp.uint8_t[:, ::1] absent not None, intp a0):
    """The matrix-product filter's query side for ``na`` nominal attributes whose values
    are looked up (``hdist._search.gemm_filter._queries``): row ``i``'s code
    ``v = codes[i, a]`` (< 0: missing, the table's last row) selects row ``v`` of the attribute's table of
    ``width[a]`` columns (``ev[ev_off[a]:]``, row-major), which is written to
    ``X[i, x0 + ...]``, the attributes' blocks side by side; its ``s = sv[sv_off[a] + v]``
    is added to ``const[i]`` (attribute after attribute, in order), ``H[i, hcol[a]]``
    (``hcol[a] >= 0``) is ``miss[a] - s`` (``miss[a]`` when missing) and
    ``absent[i, a0 + a]`` flags a missing value.  Returns False, with the outputs partly
    written, when a selected row has ``ok`` 0 (a value off the span the tables project
    on); a code at or past the table's last row is a ``ValueError``."""
    cdef intp n = codes.shape[0], na = codes.shape[1], i, a, d, v, nv, x, w, h
    cdef double sa
    if ev_off.shape[0] != na + 1 or width.shape[0] != na or sv_off.shape[0] != na + 1 \
            or miss.shape[0] != na or hcol.shape[0] != na:
        raise ValueError("ev_off and sv_off need na + 1 entries, width, miss and hcol na")
    if sv_off[0] < 0 or sv_off[na] > sv.shape[0] or ok.shape[0] != sv.shape[0] \
            or ev_off[0] < 0 or ev_off[na] > ev.shape[0]:
        raise ValueError("the offsets must lie within sv, ok and ev")
    x = x0
    for a in range(na):
        nv = sv_off[a + 1] - sv_off[a]
        if nv < 1 or width[a] < 0 or ev_off[a + 1] - ev_off[a] != nv * width[a] \
                or (hcol[a] >= H.shape[1]):
            raise ValueError("attribute %d: its tables must hold nv >= 1 rows of width "
                             "columns, hcol a column of H" % a)
        x = x + width[a]
    if x0 < 0 or x > X.shape[1] or X.shape[0] != n or const.shape[0] != n \
            or (H.shape[0] != n and H.shape[1] > 0) or absent.shape[0] != n \
            or a0 < 0 or a0 + na > absent.shape[1]:
        raise ValueError("X, const, H and absent must have one row per code row and the "
                         "columns the attributes fill")
    cdef int status = 0
    with nogil:
        for i in range(n):
            x = x0
            for a in range(na):
                nv = sv_off[a + 1] - sv_off[a]
                v = codes[i, a]
                if v >= nv - 1:
                    status = 2
                    break
                absent[i, a0 + a] = v < 0
                if v < 0:
                    v = nv - 1
                if not ok[sv_off[a] + v]:
                    status = 1
                    break
                w = width[a]
                for d in range(w):
                    X[i, x + d] = ev[ev_off[a] + v * w + d]
                x = x + w
                sa = sv[sv_off[a] + v]
                const[i] = const[i] + sa
                h = hcol[a]
                if h >= 0:
                    H[i, h] = miss[a] if codes[i, a] < 0 else miss[a] - sa
            if status:
                break
    if status == 2:
        raise ValueError("codes must be below their table's last row (the missing value's)")
    return status == 0


def seed_rows(const real[::1] v not None, intp ns):
    """The positions of the rows a k-NN heap of ``ns`` entries is offered first from the
    tested values ``v`` (the selection's own rule, with this machine's variant for
    float32): at most ``min(ns, SEED_MAX)``, in increasing order of value."""
    cdef intp pos[HD_SEED_MAX]
    cdef intp n = v.shape[0], c, i
    if ns < 0:
        raise ValueError("ns must be >= 0, got %d" % ns)
    if n == 0:
        return np.zeros(0, dtype=np.intp)
    with nogil:
        if real is float:
            c = hd_seeds_f(&v[0], n, ns, pos)
        else:
            c = hd_seeds_d(&v[0], n, ns, pos)
    return np.array([pos[i] for i in range(c)], dtype=np.intp)


#: most rows a k-NN heap is offered first (``seed_rows``), and the fewest reference rows of
#: a tile from which the selection offers them
SEED_MAX = HD_SEED_MAX
SEED_MIN_ROWS = SEED_ROWS


def _spread_blocks(order, intp chunk):
    """``order`` with its whole blocks of ``HD_GQB`` queries dealt over the chunks of
    ``chunk`` queries (a multiple of ``HD_GQB``) that threads take: with ``n`` such chunks,
    the blocks ``0, n, 2n, ...``, then ``1, n + 1, 2n + 1, ...`` and so on (the last,
    partial block stays last), which the chunks then cut every ``chunk`` queries.  Each
    chunk so takes blocks from the whole order, a like share of the queries missing few and
    many attributes (whose costs differ), while each block keeps queries missing the same
    ones."""
    cdef intp nb = order.shape[0] // HD_GQB, per = max(1, chunk // HD_GQB)
    cdef intp nch = (nb + per - 1) // per
    if nch <= 1:
        return order
    head = np.asarray(order[:nb * HD_GQB]).reshape(nb, HD_GQB)
    deal = np.argsort(np.arange(nb) % nch, kind="stable")
    return np.concatenate([head[deal].ravel(), np.asarray(order[nb * HD_GQB:])])


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def miss_order(const intp[::1] qptr not None, const intp[::1] qidx not None):
    """A stable order of the queries (rows of ``qptr``) by the set of attributes each
    misses (``qidx[qptr[q]:qptr[q + 1]]``; the first 64 attributes decide): queries
    missing the same attributes come side by side, those missing none first."""
    cdef intp nq = qptr.shape[0] - 1, q, t
    if nq < 0 or qptr[0] < 0 or qptr[nq] > qidx.shape[0]:
        raise ValueError("qptr must index qidx")
    for q in range(nq):
        if qptr[q + 1] < qptr[q]:
            raise ValueError("qptr must be non-decreasing")
    out_a = np.empty(nq, dtype=np.intp)
    cdef intp[::1] out = out_a
    cdef cnp.uint64_t* keys = <cnp.uint64_t*> malloc(max(nq, 1) * sizeof(cnp.uint64_t))
    cdef intp* tmp = <intp*> malloc(max(nq, 1) * sizeof(intp))
    cdef cnp.uint64_t most = 0
    cdef intp count[256]
    cdef intp* src
    cdef intp* dst
    cdef intp* sw
    cdef int shift
    cdef intp b
    if keys == NULL or tmp == NULL:
        free(keys)
        free(tmp)
        raise MemoryError()
    with nogil:
        for q in range(nq):
            keys[q] = 0
            for t in range(qptr[q], qptr[q + 1]):
                if 0 <= qidx[t] < 64:
                    keys[q] = keys[q] | ((<cnp.uint64_t> 1) << qidx[t])
            most = most | keys[q]
            out[q] = q
        # a stable sort by the keys: least significant byte first, one counting pass per
        # byte up to the highest set (two for up to 16 attributes)
        src, dst = &out[0] if nq > 0 else tmp, tmp
        shift = 0
        while shift < 64 and (most >> shift) != 0:
            for b in range(256):
                count[b] = 0
            for q in range(nq):
                count[(keys[src[q]] >> shift) & 255] += 1
            t = 0
            for b in range(256):
                count[b], t = t, t + count[b]
            for q in range(nq):
                b = (keys[src[q]] >> shift) & 255
                dst[count[b]] = src[q]
                count[b] += 1
            sw = src
            src = dst
            dst = sw
            shift = shift + 8
        if nq > 0 and src != &out[0]:
            for q in range(nq):
                out[q] = src[q]
    free(keys)
    free(tmp)
    return out_a


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def miss_lists(const cnp.uint8_t[:, ::1] absent not None):
    """``(qptr, qidx)``: the non-zero columns of each row of ``absent`` as compressed
    rows (row ``i``'s are ``qidx[qptr[i]:qptr[i + 1]]``, in increasing order), what
    ``np.nonzero`` gives, in one pass."""
    cdef intp n = absent.shape[0], m = absent.shape[1], i, a, c = 0
    qptr_a = np.empty(n + 1, dtype=np.intp)
    cdef intp[::1] qptr = qptr_a
    with nogil:
        for i in range(n):
            qptr[i] = c
            for a in range(m):
                if absent[i, a]:
                    c = c + 1
        qptr[n] = c
    qidx_a = np.empty(c, dtype=np.intp)
    cdef intp[::1] qidx = qidx_a
    c = 0
    with nogil:
        for i in range(n):
            for a in range(m):
                if absent[i, a]:
                    qidx[c] = a
                    c = c + 1
    return qptr_a, qidx_a


def miss_codes(const double[:, ::1] hq not None, hb, const intp[::1] rptr not None,
               const intp[::1] ridx not None):
    """The filter's tighter bound of the terms of the attributes a reference row misses:
    ``(ab, tab)``, ``ab[j] = a + 256 b`` two codes per reference row (below 32) and
    ``tab[q]`` a table of 32 float32 lower bounds per query, so that
    ``tab[q, a] + tab[q, b]`` (in float32) never exceeds the sum of ``hq[q, t]`` over the
    attributes ``t`` row ``j`` misses (``ridx[rptr[j]:rptr[j + 1]]``, distinct columns of
    ``hq``).  ``hb[q]`` is the query's sum of negative terms and smallest term
    (:func:`_hq_bounds`; None: computed here); a query with a negative term keeps a table
    of zeros (the filter then bounds its rows otherwise).

    The first ``na = min(nh, 24)`` attributes have a code each, their entry the query's
    term rounded down; entries ``na .. 30`` hold ``m`` times the rounded-down smallest
    term for ``m = 1 .. 31 - na``, and entry 31 is 0.  A row missing at most two
    attributes, both coded, gets their codes (31 for none): its terms up to rounding.  Any
    other row gets the code of its first coded attribute (31: none) and that of the number
    of its other attributes (at most ``31 - na``).  Every entry rounds down and the terms
    are >= 0, so a row's two entries and their float32 sum never exceed its terms' sum."""
    cdef intp nq = hq.shape[0], nh = hq.shape[1], nr = rptr.shape[0] - 1, j, t
    cdef const double[:, ::1] hbv = _all_hq_bounds(hq) if hb is None else hb
    if nr < 0 or hbv.shape[0] != nq or hbv.shape[1] != 2:
        raise ValueError("rptr must have one entry per reference row plus one, hb one row "
                         "of two per query")
    _check_rows(rptr, ridx, nh)
    ab_a = aligned_empty(nr, np.uint16)
    tab_a = aligned_empty((nq, 32), np.float32)
    tab_a[...] = 0
    cdef unsigned short[::1] ab = ab_a
    cdef float[:, ::1] tab = tab_a
    _fill_codes(&hq[0, 0] if nq > 0 and nh > 0 else NULL, nq, nh,
                &hbv[0, 0] if nq > 0 else NULL, &rptr[0],
                &ridx[0] if ridx.shape[0] > 0 else NULL, nr, &ab[0] if nr > 0 else NULL,
                &tab[0, 0] if nq > 0 else NULL)
    return ab_a, tab_a
