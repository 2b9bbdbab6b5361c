# The fused k-NN search and the radius selection of the matrix-product filter
# (included by gemm.pyx, whose declarations they use).

cdef int _fused_chunk(const PlanS* P, const RowsS* QS, const RowsS* RS, const _SelS* S,
                      const float* Xp, intp K, const float* Yp, intp a0, intp a1,
                      intp rt, const intp* order) noexcept nogil:
    """Queries ``a0 .. a1`` (``a0`` a multiple of ``HD_GQB``) of
    :meth:`GemmKnnSelect.search`: per block of ``rt`` reference rows, per panel of
    ``HD_GQB`` queries, the products into a buffer of the cache, then the selection of
    each row as :meth:`GemmKnnSelect.tile` makes it.  1: out of memory.  ``order`` (NULL:
    none): the queries in the order of the rows of ``Xp`` (row ``i`` is query
    ``order[i]``), a permutation that puts queries missing the same attributes side by
    side.

    With terms against the reference rows' missing values (``S.has_h``, codes ``S.ab``),
    the chunk's queries' bounds and tables (:func:`_query_tables`) are made here, in the
    chunk's order, not
    for all queries before the parallel region: ``S.hb``, ``S.tab`` and ``S.t16`` are not
    read.  With an order, the chunk's heaps are copied into that order for the search and
    back after it; the blocks' columns are merged once (``hd_gemm_union_set``)."""
    # the block of estimates on a 64-byte boundary (rt is a multiple of HD_GPW, so every
    # row of it is): a vector stored across two cache lines costs two stores, and one
    # read back at once is not forwarded from the store
    cdef void* mem = malloc(HD_GQB * rt * sizeof(float) + 64)
    cdef float* G = <float*> (((<size_t> mem) + 63) & ~(<size_t> 63))
    cdef intp r0, nt, qb, nqb, i, q, n = a1 - a0
    cdef hd_gadd add
    cdef _SelS L = S[0]         # S with the chunk's own tables
    cdef void* tmem = NULL
    cdef double* hbc
    cdef float* tabc
    cdef unsigned short* t16c
    # per block of HD_GQB queries, what its product adds (all but the reference rows'
    # block: the codes, columns and their number, set per block of rows), and whether it
    # adds anything
    cdef intp nblk = (n + HD_GQB - 1) // HD_GQB, b
    cdef hd_gadd* adds = <hd_gadd*> malloc(max(nblk, 1) * (sizeof(hd_gadd) + 1))
    cdef unsigned char* has = <unsigned char*> (adds + max(nblk, 1))
    cdef int bf16
    # with an order, the chunk's heaps in that order (copied in and back): the selection
    # then meets them one after another in memory, not scattered over all the queries'
    cdef double* hdc = NULL
    cdef intp* hic = NULL
    if order != NULL and n > 0:
        hdc = <double*> malloc(n * S.k * (sizeof(double) + sizeof(intp)))
        hic = <intp*> (hdc + n * S.k)
    if mem == NULL or adds == NULL or (order != NULL and n > 0 and hdc == NULL):
        free(mem)
        free(adds)
        free(hdc)
        return 1
    if hdc != NULL:
        for i in range(n):
            q = order[a0 + i]
            memcpy(hdc + i * S.k, S.HD + q * S.k, S.k * sizeof(double))
            memcpy(hic + i * S.k, S.HI + q * S.k, S.k * sizeof(intp))
        L.HD, L.HI, L.heap_rows = hdc, hic, 1
    L.hb, L.tab, L.t16 = NULL, NULL, NULL
    if S.has_h and S.ab != NULL and n > 0:
        # each query's tables on a 64-byte boundary (the product loads them whole)
        tmem = malloc(n * (2 * sizeof(double) + 32 * sizeof(float)
                           + 32 * sizeof(unsigned short)) + 64)
        if tmem == NULL:
            free(mem)
            free(adds)
            free(hdc)
            return 1
        tabc = <float*> (((<size_t> tmem) + 63) & ~(<size_t> 63))
        t16c = <unsigned short*> (tabc + 32 * n)
        hbc = <double*> (t16c + 32 * n)
        _query_tables(S.hq, S.nh, order, a0, n, hbc, tabc, t16c)
        L.hb, L.tab, L.t16 = hbc, tabc, t16c
    # the product adds the terms of the query rows whose reference-missing terms are
    # bounded by the codes (and their own columns): hd_prep's values, made while the sums
    # are in registers.  The kind of table is read once for the chunk: the product and the
    # selection agree even if the variant is changed meanwhile (which the rules forbid).
    bf16 = hd_gemm_bf16() and L.t16 != NULL
    memset(&add, 0, sizeof(hd_gadd))
    for b in range(nblk):
        qb = a0 + b * HD_GQB
        nqb = min(<intp> HD_GQB, a1 - qb)
        # the reference rows' block (ab, gy, nt) is set per block of rows
        add.ab, add.gy, add.nt = NULL, NULL, 0
        add.bf16 = bf16
        has[b] = False
        for i in range(HD_GQB):
            add.tab[i], add.t16[i], add.mi[i], add.nm[i] = NULL, NULL, NULL, 0
            if i >= nqb:
                continue
            q = order[qb + i] if order != NULL else qb + i
            if _tabled(&L, qb + i - a0):
                has[b] = True
                add.tab[i] = L.tab + 32 * (qb + i - a0)
                add.t16[i] = L.t16 + 32 * (qb + i - a0) if bf16 else NULL
            elif S.cols_only and S.qptr[q + 1] > S.qptr[q]:
                # its columns alone (add.ab NULL): the table is only a mark
                has[b] = True
                add.tab[i] = _NO_TABLE
            if add.tab[i] != NULL and S.qptr != NULL and S.qptr[q + 1] > S.qptr[q]:
                add.nm[i] = S.qptr[q + 1] - S.qptr[q]
                add.mi[i] = S.qidx + S.qptr[q]
        # the block's columns merged once, for every block of reference rows
        add.gstride = S.gstride
        hd_gemm_union_set(&add, nqb)
        adds[b] = add
    r0 = 0
    while r0 < S.nr:
        nt = min(rt, S.nr - r0)
        for b in range(nblk):
            qb = a0 + b * HD_GQB
            nqb = min(<intp> HD_GQB, a1 - qb)
            if has[b]:
                adds[b].ab = S.ab + r0 if S.ab != NULL else NULL
                adds[b].gy = <const float*> S.gy + r0 if S.gy != NULL else NULL
                adds[b].nt = nt
            hd_gemm_blk(Xp + (qb // HD_GQB) * K * HD_GQB, nqb, Yp + (r0 // HD_GPW) * K * HD_GPW,
                        (nt + HD_GPW - 1) // HD_GPW, K, G, rt, &adds[b] if has[b] else NULL)
            _select_tile(P, QS, RS, &L, <const float*> G, rt, nqb, nt, qb, r0,
                         &adds[b] if has[b] else NULL, order, a0)
        r0 = r0 + rt
    if hdc != NULL:
        for i in range(n):
            q = order[a0 + i]
            memcpy(S.HD + q * S.k, hdc + i * S.k, S.k * sizeof(double))
            memcpy(S.HI + q * S.k, hic + i * S.k, S.k * sizeof(intp))
    free(mem)
    free(tmem)
    free(adds)
    free(hdc)
    return 0


cdef class GemmKnnSelect:
    """The heap updates of one filtered k-NN search (``hdist._search.gemm_filter.knn``),
    tile by tile.

    Takes the arguments of :func:`gemm_select` that stay fixed during a search, checks
    them once (``ny_max`` and ``gmin`` over all chunks of ``r_chunk`` reference rows, the
    whole of ``qptr``/``qidx`` and ``rptr``/``ridx``), and keeps them; :meth:`tile` then
    checks only the tile's shape and position and runs the rows of the tile without the
    GIL, one after another, exactly as ``gemm_select`` with one thread.  ``dtype`` is the
    precision of the tiles, ``gy`` and ``hc`` (float32 or float64).  ``ties`` (a
    :class:`TieLists` of one list per query row, or None) keeps the rows tied with each
    query's k-th (``heap_offer``).  ``fused``: only :meth:`search` will run, which makes
    the queries' bounds and tables of the reference-missing terms chunk by chunk, in its
    threads; they are then not made here for all queries, and :meth:`tile` is refused."""
    cdef CPlan plan
    cdef TieLists ties
    cdef CRows Q, R
    cdef _SelS s
    cdef int npy_type
    cdef double[:, ::1] HD
    cdef intp[:, ::1] HI
    cdef const double[::1] nx, ny_max
    cdef const float[:, ::1] gy_f
    cdef const double[:, ::1] gy_d
    cdef const float[::1] hc_f
    cdef const double[::1] hc_d
    cdef const intp[::1] qptr, qidx, rptr, ridx
    cdef const double[:, ::1] gmin, hq
    cdef double[:, ::1] hb
    cdef const unsigned short[::1] ab
    cdef const float[:, ::1] tab
    cdef const unsigned short[:, ::1] tab16
    cdef bint fused

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def __init__(self, CPlan plan, CRows Q, CRows R, const double[::1] nx,
                 const double[::1] ny_max, intp r_chunk, double[:, ::1] HD,
                 intp[:, ::1] HI, double eps, dtype, bint exclude_self=False,
                 intp self_offset=0, gy=None, const intp[::1] qptr=None,
                 const intp[::1] qidx=None, const double[:, ::1] gmin=None,
                 const double[:, ::1] hq=None, const intp[::1] rptr=None,
                 const intp[::1] ridx=None, hc=None, TieLists ties=None,
                 RefMissing refmiss=None, bint fused=False):
        cdef intp nq = Q.s.n, nr = R.s.n, nch
        if refmiss is not None:
            # the reference rows' missing attributes, checked and coded once
            if rptr is not None or ridx is not None:
                raise ValueError("refmiss replaces rptr and ridx")
            rptr, ridx = refmiss.rptr, refmiss.ridx
        dt = np.dtype(dtype)
        if dt == np.float32:
            self.npy_type = cnp.NPY_FLOAT32
        elif dt == np.float64:
            self.npy_type = cnp.NPY_FLOAT64
        else:
            raise TypeError("dtype must be float32 or float64, got %s" % dt)
        if r_chunk < 1 or r_chunk > GEMM_MAX_CHUNK:
            raise ValueError("r_chunk must be in [1, %d], got %d" % (GEMM_MAX_CHUNK, r_chunk))
        nch = (nr + r_chunk - 1) // r_chunk
        if nx.shape[0] != nq:
            raise ValueError("nx must have one entry per query row")
        if ny_max.shape[0] < nch:
            raise ValueError("ny_max must have one entry per chunk of r_chunk reference rows")
        if HD.shape[0] != nq or HI.shape[0] != nq or HD.shape[1] != HI.shape[1] \
                or HD.shape[1] < 1:
            raise ValueError("HD and HI must both be (queries, k) with k >= 1")
        if not eps >= 0.0:
            raise ValueError("eps must be >= 0")
        self.plan, self.Q, self.R = plan, Q, R
        self.nx, self.ny_max, self.HD, self.HI = nx, ny_max, HD, HI
        self.s.nx = &nx[0] if nq > 0 else NULL
        self.s.ny_max = &ny_max[0] if ny_max.shape[0] > 0 else NULL
        self.s.HD = &HD[0, 0] if nq > 0 else NULL
        self.s.HI = &HI[0, 0] if nq > 0 else NULL
        self.s.k, self.s.nq, self.s.nr, self.s.r_chunk = HD.shape[1], nq, nr, r_chunk
        self.s.heap_rows = 0
        self.s.eps, self.s.excl, self.s.self_off = eps, exclude_self, self_offset
        if ties is not None and len(ties) != nq:
            raise ValueError("ties must hold one list per query row")
        self.ties = ties
        self.s.ties = ties.t if ties is not None else NULL
        self._keep_columns(gy, qptr, qidx, gmin, nch)
        self._keep_ref_missing(hq, rptr, ridx, hc, refmiss, fused)
        self.fused = fused
        # without reference-missing terms, the fused search's product adds the columns of
        # the queries that miss values (the selection then tests those sums as they are)
        self.s.cols_only = self.npy_type == cnp.NPY_FLOAT32 and not self.s.has_h \
            and self.s.gy != NULL and self.s.qidx != NULL

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    cdef int _keep_columns(self, gy, const intp[::1] qptr, const intp[::1] qidx,
                           const double[:, ::1] gmin, intp nch) except -1:
        """Check and keep the columns of the attributes the queries miss: ``gy`` (one
        column per reference row), ``qptr``/``qidx`` (the attributes of each query, rows
        of ``gy``) and ``gmin`` (``gy``'s smallest per chunk; None: none)."""
        cdef intp nq = self.Q.s.n, nr = self.R.s.n, t, m = 0
        self.s.gy, self.s.gstride, self.s.qptr, self.s.qidx = NULL, 0, NULL, NULL
        self.s.gmin, self.s.mstride = NULL, 0
        if (qptr is None) != (qidx is None) or (qptr is None) != (gy is None):
            raise ValueError("gy, qptr and qidx go together")
        if gy is not None:
            if self.npy_type == cnp.NPY_FLOAT32:
                self.gy_f = gy
                m = self.gy_f.shape[0]
                if self.gy_f.shape[1] != nr:
                    raise ValueError("gy must have one column per reference row")
                self.s.gy = &self.gy_f[0, 0] if m > 0 and nr > 0 else NULL
            else:
                self.gy_d = gy
                m = self.gy_d.shape[0]
                if self.gy_d.shape[1] != nr:
                    raise ValueError("gy must have one column per reference row")
                self.s.gy = &self.gy_d[0, 0] if m > 0 and nr > 0 else NULL
            self.s.gstride = nr
            if qptr.shape[0] != nq + 1 or qptr[0] != 0 or qptr[nq] > qidx.shape[0]:
                raise ValueError("qptr must have one entry per query row plus one, from 0 "
                                 "to at most the length of qidx")
            for t in range(nq):
                if qptr[t + 1] < qptr[t]:
                    raise ValueError("qptr must be non-decreasing")
            for t in range(qptr[nq]):
                if qidx[t] < 0 or qidx[t] >= m:
                    raise ValueError("qidx must index the rows of gy")
            self.qptr, self.qidx = qptr, qidx
            self.s.qptr = &qptr[0]
            self.s.qidx = &qidx[0] if qidx.shape[0] > 0 else NULL
            if gmin is not None:
                if gmin.shape[0] != m or gmin.shape[1] < nch:
                    raise ValueError("gmin must have one row per row of gy and one column "
                                     "per chunk of r_chunk reference rows")
                self.gmin = gmin
                self.s.gmin = &gmin[0, 0] if m > 0 and nch > 0 else NULL
                self.s.mstride = gmin.shape[1]
        return 0

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    cdef int _keep_ref_missing(self, const double[:, ::1] hq, const intp[::1] rptr,
                               const intp[::1] ridx, hc, RefMissing refmiss,
                               bint fused) except -1:
        """Check and keep the queries' terms against the reference rows' missing attributes
        (``hq``, ``rptr``/``ridx``, ``hc``, all None or all given; ``refmiss``: the rows
        already checked and coded), the reference rows' codes and, unless ``fused``, each
        query's bounds and tables."""
        cdef intp nq = self.Q.s.n, nr = self.R.s.n, t
        self.s.has_h, self.s.nh = 0, 0
        self.s.hq, self.s.rptr, self.s.ridx, self.s.hc = NULL, NULL, NULL, NULL
        self.s.hb = NULL
        self.s.ab, self.s.tab, self.s.t16 = NULL, NULL, NULL
        self.s.cols_only = 0
        given = [a is None for a in (hq, rptr, ridx, hc)]
        if any(given) and not all(given):
            raise ValueError("hq, rptr, ridx and hc go together")
        if hq is not None:
            if self.npy_type == cnp.NPY_FLOAT32:
                self.hc_f = hc
                t = self.hc_f.shape[0]
            else:
                self.hc_d = hc
                t = self.hc_d.shape[0]
            if t != nr:
                raise ValueError("hc must have one entry per reference row")
            if hq.shape[0] != nq:
                raise ValueError("hq must have one row per query row")
            if rptr.shape[0] != nr + 1:
                raise ValueError("rptr must have one entry per reference row plus one")
            if refmiss is not None:
                if refmiss.ncol != hq.shape[1]:
                    raise ValueError("refmiss must index the columns of hq")
                ok = _ref_counts_ok(rptr, self.hc_f, nr) \
                    if self.npy_type == cnp.NPY_FLOAT32 else _ref_counts_ok(rptr, self.hc_d, nr)
            else:
                ok = _ref_miss_ok(rptr, ridx, self.hc_f, hq.shape[1], 0, nr) \
                    if self.npy_type == cnp.NPY_FLOAT32 \
                    else _ref_miss_ok(rptr, ridx, self.hc_d, hq.shape[1], 0, nr)
            if not ok:
                raise ValueError("rptr and ridx must index ridx and the columns of hq, hc "
                                 "count the entries of each row")
            if hq.shape[1] > 0 and ridx.shape[0] > 0 and nq > 0:
                self.hq, self.rptr, self.ridx = hq, rptr, ridx
                self.s.has_h, self.s.nh = 1, hq.shape[1]
                self.s.hq, self.s.rptr, self.s.ridx = &hq[0, 0], &rptr[0], &ridx[0]
                self.s.hc = &self.hc_f[0] if self.npy_type == cnp.NPY_FLOAT32 \
                    else <const void*> &self.hc_d[0]
                if self.npy_type == cnp.NPY_FLOAT32:
                    # the reference rows' codes (rptr and ridx are checked above)
                    if refmiss is not None:
                        self.ab = refmiss.ab
                    else:
                        self.ab = np.empty(nr, dtype=np.uint16)
                        with nogil:
                            _fill_row_codes(hq.shape[1], &rptr[0], &ridx[0], nr,
                                            <unsigned short*> &self.ab[0])
                    self.s.ab = &self.ab[0]
                if not fused and self.npy_type == cnp.NPY_FLOAT32:
                    # each query's bounds of its terms against missing reference values
                    # and its tables, float32 and bfloat16 (for the product's additions on
                    # machines with AVX512_BF16), for tile(): as search() makes them
                    hb_a = np.empty((nq, 2))
                    tab_a = np.empty((nq, 32), dtype=np.float32)
                    t16_a = np.empty((nq, 32), dtype=np.uint16)
                    self.hb, self.tab, self.tab16 = hb_a, tab_a, t16_a
                    self.s.hb, self.s.tab = &self.hb[0, 0], &self.tab[0, 0]
                    self.s.t16 = &self.tab16[0, 0]
                    with nogil:
                        _query_tables(&hq[0, 0], hq.shape[1], NULL, 0, nq,
                                      &self.hb[0, 0], <float*> self.s.tab,
                                      <unsigned short*> self.s.t16)
                elif not fused:
                    # float64: the bounds only (the codes are float32's)
                    self.hb = _all_hq_bounds(hq)
                    self.s.hb = &self.hb[0, 0]
        return 0

    @cython.boundscheck(HDIST_DEBUG)
    @cython.wraparound(False)
    def search(self, const float[:, ::1] X not None, const float[:, :, ::1] Yp not None,
               int n_threads, intp q_chunk=0, intp r_block=0):
        """The whole search in one call (float32 only): the query features ``X [nq, K]``
        times the reference panels ``Yp`` (:func:`gemm_panels`), a block of ``HD_GQB``
        queries against ``r_block`` reference rows (0: about ``GEMM_BLOCK_ROWS``, a
        multiple of ``r_chunk`` and of the panel height) at a time, each block selected as
        :meth:`tile` selects a tile.  Threads take chunks of ``q_chunk`` queries (rounded
        up to whole panels of ``HD_GQB``), each
        chunk reading the reference panels once (0: half a thread's share of the
        queries, between 32 and ``GEMM_MAX_QUERY_CHUNK``: large reference sets do not fit
        in the caches, so the fewer passes over them the better, while each thread still
        gets two chunks; a quarter of its share when the panels take at most
        ``GEMM_CACHED_PANELS`` bytes, which the caches hold: the threads then end closer
        together); signals are checked between parallel regions, each of which gives every
        thread as many chunks, at least that many (:func:`_query_chunks`)."""
        cdef intp nq = self.s.nq, nr = self.s.nr, K = X.shape[1], unit, b0, b1, c, nch
        cdef intp rt, qc, region
        cdef int failed = 0
        if self.npy_type != cnp.NPY_FLOAT32:
            raise TypeError("search() runs float32 searches only")
        if X.shape[0] != nq or K < 1:
            raise ValueError("X must be [queries, K] with K >= 1")
        if Yp.shape[1] != K or Yp.shape[2] != HD_GPW or Yp.shape[0] * HD_GPW < nr:
            raise ValueError("Yp must be [panels, %d, %d] covering every reference row"
                             % (K, HD_GPW))
        if q_chunk < 0:
            raise ValueError("q_chunk must be >= 0")
        unit = self.s.r_chunk * HD_GPW // math.gcd(self.s.r_chunk, HD_GPW)
        rt = r_block if r_block > 0 else GEMM_BLOCK_ROWS
        if rt % unit != 0:
            rt = max(1, rt // unit) * unit
        n_threads = _threads_for(n_threads, nq * nr)
        qc, region = _query_chunks(nq, nr, n_threads,
                                   Yp.shape[0] * K * HD_GPW * sizeof(float), q_chunk)
        if nq == 0 or nr == 0:
            return
        # queries missing the same attributes side by side: a block of them adds each
        # shared column once, as a term of its product (hd_gemm_blk)
        cdef const intp[::1] order = _spread_blocks(miss_order(self.qptr, self.qidx), qc) \
            if self.s.qidx != NULL else None
        cdef const intp* op = &order[0] if order is not None else NULL
        cdef const float[:, :, ::1] Xp = gemm_panels(X, HD_GQB, order)
        for b0 in range(0, nq, region):
            b1 = min(nq, b0 + region)
            nch = (b1 - b0 + qc - 1) // qc
            with nogil:
                for c in prange(nch, num_threads=n_threads, schedule="dynamic"):
                    failed += _fused_chunk(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                                           &Xp[0, 0, 0], K, &Yp[0, 0, 0], b0 + c * qc,
                                           min(b1, b0 + c * qc + qc), rt, op)
            if failed:
                raise MemoryError()
            PyErr_CheckSignals()

    def tile(self, cnp.ndarray G not None, intp q0, intp r0):
        """Update the heaps of queries ``q0 .. q0 + G.shape[0]`` with reference rows
        ``r0 .. r0 + G.shape[1]`` (``r0`` a multiple of ``r_chunk``) from the tile of
        estimates ``G`` (rows of unit stride, in the search's precision)."""
        cdef intp nb, nt, ldg, isz
        if self.fused:
            raise ValueError("this selection was made for search() only (fused=True)")
        if cnp.PyArray_NDIM(G) != 2 or cnp.PyArray_TYPE(G) != self.npy_type:
            raise TypeError("G must be a 2-d array of the search's precision")
        isz = cnp.PyArray_ITEMSIZE(G)
        nb = cnp.PyArray_DIM(G, 0)
        nt = cnp.PyArray_DIM(G, 1)
        if nb == 0 or nt == 0:
            return
        ldg = cnp.PyArray_STRIDE(G, 0)
        if (nt > 1 and cnp.PyArray_STRIDE(G, 1) != isz) or ldg % isz != 0 \
                or (nb > 1 and ldg < nt * isz) or not cnp.PyArray_ISALIGNED(G):
            raise ValueError("G must have aligned rows of unit stride")
        if q0 < 0 or q0 + nb > self.s.nq or r0 < 0 or r0 + nt > self.s.nr \
                or r0 % self.s.r_chunk != 0:
            raise ValueError("the tile must lie within the queries and reference rows, "
                             "r0 a multiple of r_chunk")
        ldg = ldg // isz
        with nogil:
            if self.npy_type == cnp.NPY_FLOAT32:
                _select_tile(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                             <const float*> cnp.PyArray_DATA(G), ldg, nb, nt, q0, r0, NULL,
                             NULL, 0)
            else:
                _select_tile(&self.plan.s, &self.Q.s, &self.R.s, &self.s,
                             <const double*> cnp.PyArray_DATA(G), ldg, nb, nt, q0, r0, NULL,
                             NULL, 0)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_radius_select(CPlan plan, CRows Q, CRows R, const real[:, ::1] G,
                       const double[::1] nx, const double[::1] ny_max, intp q0, intp r0,
                       intp r_chunk, double r, double eps, bint exclude_self=False,
                       intp self_offset=0, const real[:, ::1] gy=None,
                       const intp[::1] qptr=None, const intp[::1] qidx=None,
                       const double[:, ::1] gmin=None, const double[:, ::1] hq=None,
                       const intp[::1] rptr=None, const intp[::1] ridx=None,
                       const real[::1] hc=None, const unsigned short[::1] ab=None,
                       const float[:, ::1] tab=None):
    """The pairs of queries ``q0 .. q0 + G.shape[0]`` and reference rows
    ``r0 .. r0 + G.shape[1]`` within true distance ``r`` (inclusive), filtered by the
    estimates as :func:`gemm_select` does against the reduced bound of ``r``.
    ``ab``/``tab`` (float32 tiles only; with ``hq``): the codes of :func:`miss_codes` for
    all reference and query rows, which bound the terms of a reference row's missing
    attributes more tightly than ``hc``.

    Returns ``(query, index, distance)`` arrays of the hits, in query order (unsorted
    within a query); the distances are bit-identical to :func:`radius`'s."""
    cdef const PlanS* P = &plan.s
    cdef const RowsS* QS = &Q.s
    cdef const RowsS* RS = &R.s
    cdef intp nb = G.shape[0], nt = G.shape[1], ii, q, cnt = 0, before, h
    cdef intp gstride = gy.shape[1] if gy is not None else 0
    cdef const real* gyp = &gy[0, 0] if gy is not None and gy.shape[0] > 0 else NULL
    cdef int excl = exclude_self
    cdef Hit* buf = NULL
    cdef intp cap = 0
    cdef intp* owner = NULL
    cdef intp* tmpo
    cdef intp ocap = 0
    cdef intp[::1] qv, jv
    cdef double[::1] dv
    cdef const double* gm = &gmin[0, 0] if gmin is not None and gmin.shape[0] > 0 else NULL
    cdef intp mstride = gmin.shape[1] if gmin is not None else 0
    cdef int has_h
    cdef _Codes cd
    cdef const _Codes* cdp = NULL
    cdef _RowArgs A
    _check_select(G, r_chunk, gy, qptr, qidx, Q.s.n, R.s.n, nx, ny_max, q0, r0, gmin)
    _check_ref_miss(hq, rptr, ridx, hc, Q.s.n, R.s.n, r0, nt)
    has_h = hq is not None and hq.shape[1] > 0 and ridx.shape[0] > 0
    if has_h and not _ref_miss_ok(rptr, ridx, hc, hq.shape[1], r0, nt):
        raise ValueError("rptr and ridx must index ridx and the columns of hq, hc count "
                         "the entries of each row")
    if (ab is None) != (tab is None) or (ab is not None and hq is None):
        raise ValueError("ab and tab go together, with hq")
    if ab is not None:
        if ab.shape[0] != R.s.n or tab.shape[0] != Q.s.n or tab.shape[1] != 32:
            raise ValueError("ab must have one entry per reference row, tab 32 per query")
        for h in range(r0, r0 + nt):
            if (ab[h] & 255) >= 32 or (ab[h] >> 8) >= 32:
                raise ValueError("the codes in ab must be below 32")
        if real is float and has_h and nt > 0 and nb > 0:
            cd.ab = &ab[0]
            cd.t16 = NULL
            cdp = &cd
    try:
        with nogil:
            # the arguments the rows share; the query's own are set per row
            A.P, A.QS, A.RS, A.nt, A.r0, A.r_chunk = P, QS, RS, nt, r0, r_chunk
            A.gy, A.gstride, A.gmin, A.mstride = gyp, gstride, gm, mstride
            A.nh = hq.shape[1] if has_h else 0
            A.rptr = &rptr[0] if has_h else NULL
            A.ridx = &ridx[0] if has_h else NULL
            A.hc = &hc[0] if has_h else NULL
            A.hq, A.hb, A.cd, A.hd, A.hi, A.k, A.tl = NULL, NULL, cdp, NULL, NULL, 0, NULL
            A.r, A.buf, A.cap, A.excl, A.self_off, A.given = r, &buf, &cap, excl, \
                self_offset, 0
            for ii in range(nb):
                q = q0 + ii
                A.q, A.ny_max, A.epsx = q, &ny_max[0], eps * nx[q]
                A.mi = _miss_of(qptr, qidx, q, &A.nm)
                before = cnt
                if A.nm == 0 and not has_h:
                    cnt = _filter_row(&A, &G[ii, 0], cnt, <_Complete*> NULL)
                else:
                    A.hq = &hq[q, 0] if has_h else NULL
                    if real is float:
                        if cdp != NULL:
                            cd.tab = &tab[q, 0]
                    cnt = _filter_row(&A, &G[ii, 0], cnt, <_Missing*> NULL)
                if cnt < 0:
                    break
                if cnt > ocap:
                    ocap = cap
                    tmpo = <intp*> realloc(owner, ocap * sizeof(intp))
                    if tmpo == NULL:
                        cnt = -1
                        break
                    owner = tmpo
                for h in range(before, cnt):
                    owner[h] = q
        if cnt < 0:
            raise MemoryError("radius search ran out of memory")
        qs = np.empty(cnt, dtype=np.intp)
        js = np.empty(cnt, dtype=np.intp)
        ds = np.empty(cnt)
        qv, jv, dv = qs, js, ds
        for h in range(cnt):
            qv[h] = owner[h]
            jv[h] = buf[h].j
            dv[h] = buf[h].d
        return qs, js, ds
    finally:
        free(buf)
        free(owner)


@cython.boundscheck(HDIST_DEBUG)
@cython.wraparound(False)
def gemm_radius_lists(const intp[::1] qs, const intp[::1] js, const double[::1] ds,
                      intp nq, int n_threads=1):
    """The hits ``(query, index, distance)`` of :func:`gemm_radius_select`, in any order,
    as :func:`radius` returns them: two lists of ``nq`` arrays (distances, indices), each
    query's sorted by (distance, index), the queries shared by ``n_threads``."""
    cdef intp n = qs.shape[0], h, q, qq
    cdef Hit* buf
    if js.shape[0] != n or ds.shape[0] != n:
        raise ValueError("qs, js and ds must have the same length")
    starts = np.zeros(nq + 1, dtype=np.intp)
    pos = np.empty(nq + 1, dtype=np.intp)
    D = np.empty(n)
    I = np.empty(n, dtype=np.intp)
    cdef intp[::1] st = starts, ps = pos, Iv = I
    cdef double[::1] Dv = D
    for h in range(n):
        q = qs[h]
        if q < 0 or q >= nq:
            raise ValueError("query %d of a hit is not in [0, %d)" % (q, nq))
        st[q + 1] += 1
    for q in range(nq):
        st[q + 1] += st[q]
    ps[:] = st
    buf = <Hit*> malloc(max(1, n) * sizeof(Hit))
    if buf == NULL:
        raise MemoryError("radius search ran out of memory")
    try:
        with nogil:
            for h in range(n):
                q = qs[h]
                buf[ps[q]].d = ds[h]
                buf[ps[q]].j = js[h]
                ps[q] += 1
            for qq in prange(nq, num_threads=max(1, n_threads), schedule="dynamic"):
                sort_hits(&buf[st[qq]], st[qq + 1] - st[qq])
            for h in range(n):
                Dv[h] = buf[h].d
                Iv[h] = buf[h].j
    finally:
        free(buf)
    return ([D[st[q]:st[q + 1]] for q in range(nq)],
            [I[st[q]:st[q + 1]] for q in range(nq)])
