"""The per-search selector of the matrix-product k-NN filter (``GemmKnnSelect``).

It takes the arguments of ``gemm_select`` that stay fixed during a search once and then
selects tile by tile without the GIL: its heaps must equal ``gemm_select``'s bit for bit
on every tile layout (the same tiles: the same arrays; other tiles or the fused search:
the same sorted lists, as the rows an empty heap is offered first depend on its first
tile), and the filtered search must equal the direct kernel at tile
boundaries, with ``k`` equal to the number of reference rows, ``exclude_self``, the float64
product and missing values on either side.
"""
import numpy as np
import pytest

import hdist
from hdist._search import gemm_filter as _gemm
from hdist import _kernels
from hdist._kernels import (CRows, GemmKnnSelect, finish_heaps, gemm_panels, gemm_products,
                            gemm_select)
from test_review_edges import knn_rows

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


def mixed(n, n_cont=3, n_nom=3, missing=0.0, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    cols = [rng.normal(size=n) * scale * (a + 1) + y for a in range(n_cont)]
    cols += [rng.integers(0, rng.integers(2, 6), n).astype(float) for _ in range(n_nom)]
    X = np.column_stack(cols)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y, list(range(n_cont, n_cont + n_nom))


def prepared(n_ref, n_q, missing, seed, dtype=np.float32, r_chunk=16, name="hvdm"):
    X, y, nom = mixed(n_ref + n_q, missing=missing, seed=seed)
    m = hdist.get_metric(name, nominal=nom).fit(X[:n_ref], y[:n_ref])
    st, rows = m._fitted(), m.encode(X[n_ref:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, r_chunk, dtype)
    assert F is not None
    return m, st, rows, F


def heaps(nq, k, nr):
    return np.full((nq, k), np.inf), np.full((nq, k), nr, dtype=np.intp)


def assert_same_heaps(cp, HD0, HI0, HD1, HI1):
    """The heaps hold the same rows at the same distances, bit for bit, once sorted (the
    arrays' order depends on the order the rows were offered)."""
    A = [np.array(x) for x in (HD0, HI0, HD1, HI1)]
    finish_heaps(cp, A[0], A[1])
    finish_heaps(cp, A[2], A[3])
    np.testing.assert_array_equal(A[1], A[3])
    np.testing.assert_array_equal(A[0], A[2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("missing", [0.0, 0.2])
@pytest.mark.parametrize("q_block,r_tile", [(1, 16), (7, 48), (50, 208)])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_tiles_equal_gemm_select(dtype, missing, q_block, r_tile, exclude_self):
    m, st, rows, F = prepared(203, 57, missing, 5, dtype)
    if missing:
        assert F.qidx.size > 0 and F.ridx.size > 0     # both sides miss values
    assert F.Xg.dtype == dtype
    nq, nr, k = rows.n, st.train.n, 6
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    G = F.Xg @ F.Yg.T
    HD0, HI0 = heaps(nq, k, nr)
    HD1, HI1 = heaps(nq, k, nr)
    sel = GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps, dtype,
                        exclude_self, 0, **F.extra())
    n_tiles = 0
    for a0 in range(0, nq, q_block):
        for r0 in range(0, nr, r_tile):
            T = np.ascontiguousarray(G[a0:a0 + q_block, r0:r0 + r_tile])
            gemm_select(cp, cQ, cR, T, F.nx, F.ny_chunk[r0 // F.r_chunk:], a0, r0,
                        F.r_chunk, HD0, HI0, F.eps, 1, exclude_self, 0, **F.extra())
            sel.tile(T, a0, r0)
            n_tiles += 1
    assert n_tiles == -(-nq // q_block) * -(-nr // r_tile)
    np.testing.assert_array_equal(HI0, HI1)
    np.testing.assert_array_equal(HD0, HD1)
    finish_heaps(cp, HD1, HI1)
    # and the search the tiles make is the direct kernel's (queries at the front of the
    # training rows: exclude_self removes pair (q, q))
    d, i = knn_rows(m, rows, k, False, 1, "direct")
    if not exclude_self:
        np.testing.assert_array_equal(i, HI1)
        np.testing.assert_array_equal(d, HD1)


def test_tile_rows_of_any_stride():
    # a tile that is a view of a wider buffer (rows farther apart than their length)
    m, st, rows, F = prepared(150, 40, 0.1, 6)
    nq, nr = rows.n, st.train.n
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    wide = np.zeros((nq, nr + 9), dtype=np.float32)
    wide[:, :nr] = F.Xg @ F.Yg.T
    HD0, HI0 = heaps(nq, 4, nr)
    HD1, HI1 = heaps(nq, 4, nr)
    gemm_select(cp, cQ, cR, np.ascontiguousarray(wide[:, :nr]), F.nx, F.ny_chunk, 0, 0,
                F.r_chunk, HD0, HI0, F.eps, 1, **F.extra())
    GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps, np.float32,
                  **F.extra()).tile(wide[:, :nr], 0, 0)
    np.testing.assert_array_equal(HI0, HI1)
    np.testing.assert_array_equal(HD0, HD1)
    assert (HI1 < nr).all()


@pytest.fixture(params=_kernels.isa_variants())
def isa(request):
    before = _kernels.isa()
    _kernels.set_isa(request.param)
    yield request.param
    _kernels.set_isa(before)


@pytest.fixture(params=[(v, bf) for v in _kernels.isa_variants() for bf in (False, True)
                        if not bf or (v == "avx512" and _kernels.bf16_bounds_available())],
                ids=lambda p: p[0] + ("-bf16" if p[1] else ""))
def isa_bounds(request):
    before, bf_before = _kernels.isa(), _kernels.bf16_bounds()
    _kernels.set_isa(request.param[0])
    _kernels.set_bf16_bounds(request.param[1])
    yield request.param
    _kernels.set_isa(before)
    _kernels.set_bf16_bounds(bf_before)


@pytest.mark.parametrize("nq,n,K", [(1, 1, 1), (7, 33, 26), (8, 16, 5), (19, 100, 40),
                                    (9, 47, 600)])
def test_products_of_every_variant(isa, nq, n, K):
    # the fused search's own products against float64 ones: within the filter's rounding
    # bound (a float32 sum of K products), padded panel rows exactly 0
    rng = np.random.default_rng(nq * n + K)
    X = rng.normal(size=(nq, K)).astype(np.float32)
    Y = (rng.normal(size=(n, K)) * rng.choice([1e-3, 1.0, 1e3], size=(n, 1))).astype(np.float32)
    Yp = gemm_panels(Y)
    assert Yp.shape == (-(-n // 16), K, 16)
    G = gemm_products(X, Yp)
    ref = X.astype(np.float64) @ Y.astype(np.float64).T
    bound = (K + 2) * 2.0 ** -24 * (np.abs(X).astype(np.float64) @ np.abs(Y).T)
    assert np.all(np.abs(G[:, :n] - ref) <= bound)
    assert np.all(G[:, n:] == 0)


@pytest.mark.parametrize("missing", [0.0, 0.2, 0.5])
@pytest.mark.parametrize("q_chunk,r_block,r_chunk", [(1, 16, 16), (7, 48, 16), (32, 512, 64),
                                                     (50, 100, 5), (0, 0, 64)])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_search_equals_tiles(isa_bounds, missing, q_chunk, r_block, r_chunk, exclude_self):
    # the fused search (own products, blocks of 8 queries, threads over chunks of queries;
    # with missing values its product adds the tested values, from float or bfloat16
    # tables) keeps the rows the BLAS tiles keep, bit for bit, on every variant, and
    # returns the direct kernel's neighbours; with fused=True (the queries' tables made per
    # chunk only) as without
    m, st, rows, F = prepared(301, 67, missing, 9, r_chunk=r_chunk)
    nq, nr, k = rows.n, st.train.n, 5
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    HD0, HI0 = heaps(nq, k, nr)
    GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD0, HI0, F.eps, np.float32,
                  exclude_self, 0, **F.extra()).tile(F.Xg @ F.Yg.T, 0, 0)
    for n_threads, fused in ((1, False), (2, False), (1, True), (2, True)):
        HD1, HI1 = heaps(nq, k, nr)
        GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps, np.float32,
                      exclude_self, 0, fused=fused, **F.extra()).search(
                          F.Xg, F.Yp, n_threads, q_chunk, r_block)
        assert_same_heaps(cp, HD0, HI0, HD1, HI1)
    if not exclude_self:
        finish_heaps(cp, HD1, HI1)
        d, i = knn_rows(m, rows, k, False, 1, "direct")
        np.testing.assert_array_equal(i, HI1)
        np.testing.assert_array_equal(d, HD1)


@pytest.mark.parametrize("missing", [0.1, 0.3])
@pytest.mark.parametrize("r_chunk,r_block", [(64, 0), (64, 192), (128, 384)])
def test_search_with_missing_values_equals_the_direct_kernel(isa, missing, r_chunk, r_block):
    # missing values on both sides, several blocks of reference rows, chunks of whole
    # 64-row words and a last block that ends inside one: the fused search (codes of the
    # reference rows' missing attributes, the queries' added columns) finds the direct
    # kernel's neighbors and distances on every variant
    m, st, rows, F = prepared(1100, 90, missing, 21, r_chunk=r_chunk)
    assert F.qidx.size > 0 and F.ridx.size > 0
    assert (np.diff(F.rptr) > 2).any()        # rows whose codes are a count
    nq, nr, k = rows.n, st.train.n, 7
    d, i = knn_rows(m, rows, k, False, 1, "direct")
    for n_threads in (1, 2):
        HD, HI = heaps(nq, k, nr)
        GemmKnnSelect(st.plan.cplan, CRows(rows), st.crows(), F.nx, F.ny_chunk, F.r_chunk,
                      HD, HI, F.eps, np.float32, **F.extra()).search(F.Xg, F.Yp, n_threads,
                                                                     0, r_block)
        finish_heaps(st.plan.cplan, HD, HI)
        np.testing.assert_array_equal(HI, i)
        np.testing.assert_array_equal(HD, d)


def test_search_checks_its_arguments():
    m, st, rows, F = prepared(60, 20, 0.0, 3)
    nq, nr = rows.n, st.train.n
    HD, HI = heaps(nq, 3, nr)
    sel = GemmKnnSelect(st.plan.cplan, CRows(rows), st.crows(), F.nx, F.ny_chunk, F.r_chunk,
                        HD, HI, F.eps, np.float32, **F.extra())
    with pytest.raises(ValueError, match="X must be"):
        sel.search(F.Xg[:-1], F.Yp, 1)
    with pytest.raises(ValueError, match="Yp must be"):
        sel.search(F.Xg, F.Yp[:-1], 1)
    with pytest.raises(ValueError, match="Yp must be"):
        sel.search(F.Xg, np.ascontiguousarray(F.Yp[:, :-1]), 1)
    with pytest.raises(ValueError, match="q_chunk"):
        sel.search(F.Xg, F.Yp, 1, -1)
    sel64 = GemmKnnSelect(st.plan.cplan, CRows(rows), st.crows(), F.nx, F.ny_chunk,
                          F.r_chunk, HD, HI, F.eps, np.float64, **F.extra())
    with pytest.raises(TypeError, match="float32"):
        sel64.search(F.Xg, F.Yp, 1)


# tile boundaries of the defaults (512 x 512) with counts that are not multiples of them,
# k equal to the number of reference rows, the float64 product, missing values
@pytest.mark.parametrize("n_ref,n_q,k", [(513, 515, 5), (1030, 3, 1030), (511, 1, 511)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("missing", [0.0, 0.1])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_knn_at_tile_boundaries_equals_direct(n_ref, n_q, k, dtype, missing, n_jobs):
    X, y, nom = mixed(n_ref + n_q, missing=missing, seed=n_ref + n_q)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:n_ref], y[:n_ref])
    rows = m.encode(X[n_ref:])
    d1, i1 = knn_rows(m, rows, k, False, n_jobs, "direct")
    res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), k, n_jobs,
                    dtype=dtype)
    assert res is not None
    np.testing.assert_array_equal(i1, res[1])
    np.testing.assert_array_equal(d1, res[0])
    if k == n_ref:
        assert (np.sort(res[1], axis=1) == np.arange(n_ref)).all()


@pytest.mark.parametrize("q_block,r_tile,r_chunk", [(512, 512, 64), (33, 96, 32), (600, 64, 7)])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_knn_exclude_self_on_training_rows(q_block, r_tile, r_chunk, n_jobs):
    X, y, nom = mixed(530, missing=0.1, seed=9)
    m = hdist.get_metric("heom", nominal=nom).fit(X, y)
    d1, i1 = knn_rows(m, m.train_, 8, True, n_jobs, "direct")
    res = _gemm.knn(m.plan_, m.train_, m.train_, m._ctrain(), m._ctrain(), 8, n_jobs, True,
                    q_block=q_block, r_tile=r_tile, r_chunk=r_chunk)
    np.testing.assert_array_equal(i1, res[1])
    np.testing.assert_array_equal(d1, res[0])
    assert not (res[1] == np.arange(530)[:, None]).any()


def test_large_magnitudes_take_the_float64_product():
    # float32 cannot hold these magnitudes: _prepare falls back to the float64 product
    X, y, nom = mixed(400, missing=0.1, seed=11, scale=1e12)
    m = hdist.get_metric("hvdm", nominal=nom, normalization="none").fit(X[:300], y[:300])
    rows = m.encode(X[300:])
    st = m._fitted()
    F = _gemm._prepare(st.plan, rows, st.train, {}, 64)
    assert F is not None and F.Xg.dtype == np.float64
    d1, i1 = knn_rows(m, rows, 5, False, 2, "direct")
    res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 5, 2,
                    q_block=64, r_tile=128)
    np.testing.assert_array_equal(i1, res[1])
    np.testing.assert_array_equal(d1, res[0])


def test_bad_arguments_are_refused():
    m, st, rows, F = prepared(100, 30, 0.2, 12, r_chunk=8)
    nq, nr = rows.n, st.train.n
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    HD, HI = heaps(nq, 3, nr)
    kw = F.extra()
    args = (cp, cQ, cR, F.nx, F.ny_chunk, 8, HD, HI, F.eps, np.float32)

    def make(*a, **k):
        return GemmKnnSelect(*a, **{**kw, **k})

    with pytest.raises(TypeError, match="dtype"):
        make(*args[:-1], np.int32)
    with pytest.raises(ValueError, match="r_chunk"):
        make(*args[:5], 0, *args[6:])
    with pytest.raises(ValueError, match="ny_max"):
        make(*args[:4], F.ny_chunk[1:], *args[5:])
    with pytest.raises(ValueError, match="nx"):
        make(*args[:3], F.nx[1:], *args[4:])
    with pytest.raises(ValueError, match="HD and HI"):
        make(*args[:6], HD[:, :0].copy(), HI[:, :0].copy(), *args[8:])
    with pytest.raises(ValueError, match="go together"):
        make(*args, qidx=None)
    with pytest.raises(ValueError, match="go together"):
        make(*args, hc=None)
    bad = F.qidx.copy()
    bad[-1] = len(F.g)
    with pytest.raises(ValueError, match="qidx"):
        make(*args, qidx=bad)
    bad = F.qptr.copy()
    bad[1], bad[2] = bad[2] + 1, bad[2]
    with pytest.raises(ValueError, match="qptr"):
        make(*args, qptr=bad)
    bad = F.hc.copy()
    bad[np.flatnonzero(bad)[0]] += 1
    with pytest.raises(ValueError, match="count"):
        make(*args, hc=bad)
    with pytest.raises(ValueError):
        make(*args, gy=F.g.astype(np.float64))        # not the search's precision
    sel = make(*args)
    G = F.Xg @ F.Yg.T
    with pytest.raises(TypeError, match="precision"):
        sel.tile(G.astype(np.float64), 0, 0)
    with pytest.raises(TypeError, match="precision"):
        sel.tile(G[0], 0, 0)
    with pytest.raises(ValueError, match="unit stride"):
        sel.tile(G[:, ::2], 0, 0)
    with pytest.raises(ValueError, match="within"):
        sel.tile(G[:, :8], 0, 4)                       # r0 not a multiple of r_chunk
    with pytest.raises(ValueError, match="within"):
        sel.tile(G[:, :16], 0, nr - 8)                 # past the reference rows
    with pytest.raises(ValueError, match="within"):
        sel.tile(G[:2], nq - 1, 0)                     # past the queries
    with pytest.raises(ValueError, match="within"):
        sel.tile(G[:2], -1, 0)
    assert np.isinf(HD).all()                          # nothing ran
    sel.tile(G[:, :0], 0, 0)                           # empty: nothing to do
    sel.tile(G, 0, 0)
    assert np.isfinite(HD).all()


@pytest.mark.parametrize("nh", [1, 5, 24, 40])
def test_miss_codes_bound_the_terms(nh):
    # the codes' two float32 entries never exceed a row's terms against the attributes it
    # misses (exact rational sums), and equal them up to rounding for a row missing at
    # most two coded attributes; a query with a negative term keeps a table of zeros
    from fractions import Fraction
    rng = np.random.default_rng(nh)
    nq, nr = 12, 300
    hq = rng.random((nq, nh)) * rng.choice([1e-3, 1.0, 50.0], (nq, nh))
    hq[rng.random((nq, nh)) < 0.1] = 0.0
    hq[1, 0] = 1e-35                       # below the rounding's floor: entry 0
    hq[2, -1] = -0.5
    lbq = np.where(hq < 0, hq, 0.0).sum(axis=1)
    hb = np.column_stack([lbq, hq.min(axis=1)])
    miss = rng.random((nr, nh)) < rng.choice([0.02, 0.1, 0.6], nr)[:, None]
    rptr = np.zeros(nr + 1, dtype=np.intp)
    np.cumsum(miss.sum(axis=1), out=rptr[1:])
    ridx = np.nonzero(miss)[1].astype(np.intp)
    ab, tab = _kernels.miss_codes(hq, hb, rptr, ridx)
    ab2, tab2 = _kernels.miss_codes(hq, None, rptr, ridx)      # hb computed by the kernel
    np.testing.assert_array_equal(ab, ab2)
    np.testing.assert_array_equal(tab, tab2)
    assert ab.dtype == np.uint16 and tab.dtype == np.float32 and tab.shape == (nq, 32)
    a, b = ab & 255, ab >> 8
    assert a.max() < 32 and b.max() < 32
    assert np.all(tab[2] == 0) and np.all(tab[:, 31] == 0)
    na = min(nh, 24)
    n_exact = 0
    for q in range(nq):
        if lbq[q] < 0:
            continue
        got = tab[q, a] + tab[q, b]            # the float32 sum the filter makes
        assert got.dtype == np.float32
        for j in range(nr):
            cols = ridx[rptr[j]:rptr[j + 1]]
            exact = sum((Fraction(float(t)) for t in hq[q, cols]), Fraction(0))
            assert Fraction(float(got[j])) <= exact
            if len(cols) <= 2 and np.all(cols < na):
                assert float(got[j]) >= float(exact) * (1 - 2.0 ** -20) - 1e-30
                n_exact += 1
    assert n_exact > 100


def test_miss_codes_checks_its_arguments():
    hq, hb = np.ones((2, 3)), np.zeros((2, 2))
    rptr, ridx = np.array([0, 1, 2], dtype=np.intp), np.array([0, 2], dtype=np.intp)
    _kernels.miss_codes(hq, hb, rptr, ridx)
    with pytest.raises(ValueError, match="ridx must index the columns"):
        _kernels.miss_codes(hq, hb, rptr, np.array([0, 3], dtype=np.intp))
    with pytest.raises(ValueError, match="non-decreasing"):
        _kernels.miss_codes(hq, hb, np.array([0, 2, 1], dtype=np.intp), ridx)
    with pytest.raises(ValueError, match="rptr must index ridx"):
        _kernels.miss_codes(hq, hb, np.array([0, 1, 3], dtype=np.intp), ridx)
    with pytest.raises(ValueError, match="rptr must index ridx, from 0"):
        _kernels.miss_codes(hq, hb, np.array([1, 1, 2], dtype=np.intp), ridx)
    with pytest.raises(ValueError, match="hb one row of two per query"):
        _kernels.miss_codes(hq, np.zeros((3, 2)), rptr, ridx)


def random_missing(nr, nh, seed):
    rng = np.random.default_rng(seed)
    miss = rng.random((nr, nh)) < rng.choice([0.0, 0.05, 0.3, 0.9], nr)[:, None]
    rptr = np.zeros(nr + 1, dtype=np.intp)
    np.cumsum(miss.sum(axis=1), out=rptr[1:])
    return miss, rptr, np.nonzero(miss)[1].astype(np.intp)


@pytest.mark.parametrize("nh", [1, 3, 24, 40])
def test_reference_rows_checked_once_are_coded_as_miss_codes_codes_them(nh):
    miss, rptr, ridx = random_missing(500, nh, nh)
    rm = _kernels.RefMissing(rptr, ridx, nh)
    rng = np.random.default_rng(nh)
    hq = rng.random((9, nh)) * rng.choice([1e-3, 1.0, 50.0], (9, nh))
    hq[3, 0] = -0.25                   # a negative term: a table of zeros
    ab, tab = _kernels.miss_codes(hq, None, rptr, ridx)
    np.testing.assert_array_equal(rm.ab, ab)
    np.testing.assert_array_equal(rm.tables(hq), tab)
    assert np.all(tab[3] == 0) and tab[0].any()
    with pytest.raises(ValueError, match="one column per attribute"):
        rm.tables(np.ascontiguousarray(hq[:, :-1]))
    np.testing.assert_array_equal(rm.rptr, rptr)
    np.testing.assert_array_equal(rm.ridx, ridx)
    assert rm.ncol == nh
    # kept read-only, and the caller's arrays are not (copies)
    for a in (rm.rptr, rm.ridx, rm.ab):
        assert not a.flags.writeable
    assert rptr.flags.writeable and rm.rptr is not rptr
    # read-only intp arrays are taken as they are
    rm2 = _kernels.RefMissing(rm.rptr, rm.ridx, nh)
    assert rm2.rptr is rm.rptr and rm2.ridx is rm.ridx


def test_reference_rows_checked_once_refuse_bad_arguments():
    rptr, ridx = np.array([0, 1, 2], dtype=np.intp), np.array([0, 2], dtype=np.intp)
    _kernels.RefMissing(rptr, ridx, 3)
    with pytest.raises(ValueError, match="ridx must index"):
        _kernels.RefMissing(rptr, ridx, 2)
    with pytest.raises(ValueError, match="non-decreasing"):
        _kernels.RefMissing(np.array([0, 2, 1]), ridx, 3)
    with pytest.raises(ValueError, match="rptr must index ridx, from 0"):
        _kernels.RefMissing(np.array([0, 1, 3]), ridx, 3)
    with pytest.raises(ValueError, match="rptr must index ridx, from 0"):
        _kernels.RefMissing(np.array([1, 1, 2]), ridx, 3)
    with pytest.raises(ValueError, match="1-d"):
        _kernels.RefMissing(rptr[:, None], ridx, 3)
    with pytest.raises(ValueError, match="1-d"):
        _kernels.RefMissing(np.zeros(0, np.intp), ridx, 3)
    with pytest.raises(ValueError, match="ncol"):
        _kernels.RefMissing(rptr, ridx, -1)


def test_miss_order_puts_queries_missing_the_same_attributes_side_by_side():
    from hdist._kernels.gemm import miss_order
    rng = np.random.default_rng(5)
    absent = rng.random((400, 70)) < 0.03
    absent[::7, 66] = True                 # beyond the 64 attributes that decide
    qptr, qidx = _kernels.miss_lists(absent.view(np.uint8))
    order = miss_order(qptr, qidx)
    assert order.dtype == np.intp and sorted(order) == list(range(400))
    sets = [frozenset(np.flatnonzero(absent[q, :64])) for q in order]
    # each set of the first 64 attributes forms one run, queries missing none first, and
    # the queries of a run keep their order
    runs = [sets[0]] + [b for a, b in zip(sets, sets[1:]) if a != b]
    assert len(runs) == len(set(runs)) and runs[0] == frozenset()
    for key in set(sets):
        members = [q for q, k in zip(order, sets) if k == key]
        assert members == sorted(members)
    # the same order as a stable sort of the sets' bit masks (attributes 64 and up left
    # out), also with attributes in the highest byte of the mask
    for cols in (70, 16, 3):
        absent = rng.random((300, cols)) < 0.2
        qptr, qidx = _kernels.miss_lists(absent.view(np.uint8))
        keys = [sum(1 << int(a) for a in np.flatnonzero(absent[q, :64])) for q in range(300)]
        assert list(miss_order(qptr, qidx)) == sorted(range(300), key=lambda q: keys[q])
    assert len(miss_order(np.zeros(1, np.intp), np.zeros(0, np.intp))) == 0
    with pytest.raises(ValueError, match="index qidx"):
        miss_order(np.array([0, 5], np.intp), np.zeros(2, np.intp))
    with pytest.raises(ValueError, match="non-decreasing"):
        miss_order(np.array([0, 2, 1], np.intp), np.zeros(2, np.intp))


@pytest.mark.parametrize("n,m", [(0, 3), (5, 0), (300, 16)])
def test_miss_lists_are_the_nonzero_columns_of_each_row(n, m):
    absent = np.random.default_rng(n + m).random((n, m)) < 0.2
    qptr, qidx = _kernels.miss_lists(absent.view(np.uint8))
    assert qptr.dtype == np.intp and qidx.dtype == np.intp
    assert len(qptr) == n + 1 and qptr[0] == 0
    np.testing.assert_array_equal(np.diff(qptr), absent.sum(axis=1))
    np.testing.assert_array_equal(qidx, np.nonzero(absent)[1])


def test_search_with_reference_rows_checked_once(isa_bounds):
    # the selector given the reference rows' missing attributes checked and coded once
    # (RefMissing) keeps the heaps it keeps when given rptr/ridx, on every variant, and
    # refuses arguments that do not go with it
    X, y, nom = mixed(330, n_cont=6, n_nom=6, missing=0.25, seed=23)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:300], y[:300])
    st, rows = m._fitted(), m.encode(X[300:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, 16, np.float32)
    assert F.refmiss is not None and F.refmiss.rptr is F.rptr
    nq, nr, k = rows.n, st.train.n, 5
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    kw = F.extra()
    kw_once = F.extra(refmiss=True)
    assert set(kw_once) == set(kw) - {"rptr", "ridx"} | {"refmiss"}
    assert kw_once["refmiss"] is F.refmiss and all(kw_once[a] is kw[a] for a in kw
                                                   if a in kw_once)
    HD0, HI0 = heaps(nq, k, nr)
    GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD0, HI0, F.eps, np.float32,
                  **kw).search(F.Xg, F.Yp, 1, 0, 0)
    for fused in (False, True):
        HD1, HI1 = heaps(nq, k, nr)
        sel = GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps,
                            np.float32, fused=fused, **kw_once)
        sel.search(F.Xg, F.Yp, 2, 0, 0)
        np.testing.assert_array_equal(HI0, HI1)
        np.testing.assert_array_equal(HD0, HD1)
    with pytest.raises(ValueError, match="search"):
        sel.tile(F.Xg @ F.Yg.T, 0, 0)          # fused: made for search() only
    args = (cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps, np.float32)
    with pytest.raises(ValueError, match="replaces"):
        GemmKnnSelect(*args, **{**kw_once, "rptr": F.rptr, "ridx": F.ridx})
    with pytest.raises(ValueError, match="columns of hq"):
        GemmKnnSelect(*args, **{**kw_once, "hq": np.ascontiguousarray(F.H[:, 1:])})
    bad = F.hc.copy()
    bad[np.flatnonzero(bad)[0]] += 1
    with pytest.raises(ValueError, match="count"):
        GemmKnnSelect(*args, **{**kw_once, "hc": bad})


def fused_equals_tiles_and_direct(m, st, rows, F, k, chunks):
    """The fused search's heaps (1 and 2 threads, ``chunks`` its query chunk and reference
    block) equal the BLAS tiles' selected by ``gemm_select`` and the direct kernel's."""
    nq, nr = rows.n, st.train.n
    cQ, cR, cp = CRows(rows), st.crows(), st.plan.cplan
    HD0, HI0 = heaps(nq, k, nr)
    gemm_select(cp, cQ, cR, F.Xg @ F.Yg.T, F.nx, F.ny_chunk, 0, 0, F.r_chunk, HD0, HI0, F.eps,
                1, False, 0, **F.extra())
    for n_threads in (1, 2):
        HD1, HI1 = heaps(nq, k, nr)
        GemmKnnSelect(cp, cQ, cR, F.nx, F.ny_chunk, F.r_chunk, HD1, HI1, F.eps, np.float32,
                      False, 0, **F.extra()).search(F.Xg, F.Yp, n_threads, *chunks)
        assert_same_heaps(cp, HD0, HI0, HD1, HI1)
    finish_heaps(cp, HD1, HI1)
    d, i = knn_rows(m, rows, k, False, 1, "direct")
    np.testing.assert_array_equal(i, HI1)
    np.testing.assert_array_equal(d, HD1)


@pytest.mark.parametrize("name", ["hvdm", "heom"])
def test_search_of_queries_with_gaps_against_complete_rows(isa_bounds, name):
    # no reference row misses a value, queries do (many attributes, some all missing):
    # the product adds each such query's columns alone, without codes or tables; the heaps
    # equal the BLAS tiles' and the direct kernel's on every variant and thread count
    X, y, nom = mixed(460, n_cont=8, n_nom=8, missing=0.0, seed=29)
    Q = X[400:].copy()
    rng = np.random.default_rng(3)
    Q[rng.random(Q.shape) < 0.2] = np.nan
    Q[::9, :] = np.nan
    Q[1::9, :3] = np.nan
    m = hdist.get_metric(name, nominal=nom).fit(X[:400], y[:400])
    st, rows = m._fitted(), m.encode(Q)
    F = _gemm._prepare(st.plan, rows, st.train, {}, 16, np.float32)
    assert F.ridx.size == 0 and F.qidx.size > 0 and "hq" not in F.extra()
    fused_equals_tiles_and_direct(m, st, rows, F, 6, (8, 64))


@pytest.mark.parametrize("r_chunk", [16, 64])
def test_search_with_many_missing_attributes(isa_bounds, r_chunk):
    # more attributes missing in the reference rows than have codes, rows missing many of
    # them, and queries with negative terms (values far outside the reference range): the
    # heaps of the BLAS tiles without the codes, on every variant (with float and bfloat16
    # tables: panels mixing queries whose product adds the tested values with the others),
    # and the direct kernel
    X, y, nom = mixed(430, n_cont=20, n_nom=20, missing=0.3, seed=21)
    X[400:404, 0] = 1e3
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:400], y[:400])
    st, rows = m._fitted(), m.encode(X[400:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, r_chunk, np.float32)
    assert F.H.shape[1] > 31
    neg = (F.H < 0).any(axis=1)
    assert 1 <= neg.sum() < len(neg)
    fused_equals_tiles_and_direct(m, st, rows, F, 7, (0, 0))


def added_reference(X, Y, ab, tab, gy, qptr, qidx, bf16):
    """The tested values in plain numpy: the float32 estimates (given), the query's
    columns added one after another, then the two table entries' float32 sum (bf16: the
    entries rounded down to bfloat16, and the sum in float64)."""
    a, b = (ab & 255).astype(np.intp), (ab >> 8).astype(np.intp)
    out = X.copy()
    for q in range(len(X)):
        e = X[q].copy()
        for t in qidx[qptr[q]:qptr[q + 1]]:
            e = (e + gy[t]).astype(np.float32)
        if bf16:
            t16 = (tab[q].view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
            out[q] = e.astype(np.float64) + t16[a].astype(np.float64) + t16[b]
        else:
            out[q] = e + (tab[q, a] + tab[q, b])
    return out


@pytest.mark.parametrize("nq,n,K,nm", [(1, 1, 3, 0), (7, 33, 26, 2), (8, 16, 5, 1),
                                       (19, 100, 40, 3), (9, 47, 6, 0), (12, 30, 7, 2),
                                       (17, 63, 9, 1), (9, 40, 6, 33), (10, 50, 4, 70),
                                       (20, 70, 8, 12)])
@pytest.mark.parametrize("shared", [False, True])
def test_product_additions_of_every_variant(isa_bounds, nq, n, K, nm, shared):
    # the product's tested values (the codes' table entries and the query's columns added
    # to its estimates) against plain numpy: bit for bit with the float tables, within
    # two roundings with the bfloat16 ones; the queries given no table (every other one)
    # keep their products, also in the panels they share with the others.  shared: the
    # queries add the same columns, in increasing order, which the AVX-512 product adds
    # once per block as terms of its sums (up to 16 of them), each row its own
    rng = np.random.default_rng(nq * n + K + nm)
    X = rng.normal(size=(nq, K)).astype(np.float32)
    Y = rng.normal(size=(n, K)).astype(np.float32)
    Yp = gemm_panels(Y)
    ab = (rng.integers(0, 32, n) + 256 * rng.integers(0, 32, n)).astype(np.uint16)
    tab = np.abs(rng.normal(size=(nq, 32)) * rng.choice([1e-3, 1.0, 1e3], size=(nq, 1)))
    tab = tab.astype(np.float32)
    tab[:, 31] = 0
    # queries adding many columns too
    m_g = max(5, nm)
    gy = rng.normal(size=(m_g, n)).astype(np.float32)
    miss = [rng.choice(m_g, size=nm, replace=False) for _ in range(nq)]
    if shared:
        miss = [np.sort(miss[0])] * (nq - nq // 3) + [np.sort(m) for m in miss[:nq // 3]]
    qptr = np.cumsum([0] + [len(m) for m in miss]).astype(np.intp)
    qidx = np.concatenate([np.zeros(0, np.intp)] + [m.astype(np.intp) for m in miss])
    rows = (np.arange(nq) % 2 == 0).astype(np.uint8) if nq > 1 else np.ones(1, np.uint8)
    G = gemm_products(X, Yp, ab, tab, gy, qptr, qidx, rows)
    est = gemm_products(X, Yp)[:, :n]
    np.testing.assert_array_equal(G[rows == 0, :n], est[rows == 0])
    G, est, tab = G[rows == 1], est[rows == 1], tab[rows == 1]
    keep = np.nonzero(rows)[0]
    qidx = np.concatenate([np.zeros(0, np.intp)] + [qidx[qptr[q]:qptr[q + 1]] for q in keep])
    qptr = np.cumsum([0] + [qptr[q + 1] - qptr[q] for q in keep]).astype(np.intp)
    bf16 = isa_bounds[1]
    ref = added_reference(est, Y, ab, tab, gy, qptr, qidx, bf16)
    if bf16:
        t16 = (tab.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)
        size = np.abs(ref) + t16[:, ab & 255] + t16[:, ab >> 8]
        assert np.all(np.abs(G[:, :n] - ref) <= 2.0 ** -22 * size + 1e-30)
        assert not np.array_equal(G[:, :n], added_reference(est, Y, ab, tab, gy, qptr, qidx,
                                                            False)) or n == 1
    else:
        np.testing.assert_array_equal(G[:, :n], ref)
    # the columns alone (no reference-missing terms: no codes, no table), on every variant
    rows1 = np.ones(len(keep), np.uint8)
    Gc = gemm_products(np.ascontiguousarray(X[keep]), Yp, None, None, gy, qptr, qidx, rows1)
    cols = est.copy()
    for q in range(len(keep)):
        for t in qidx[qptr[q]:qptr[q + 1]]:
            cols[q] = (cols[q] + gy[t]).astype(np.float32)
    np.testing.assert_array_equal(Gc[:, :n], cols)


@pytest.mark.parametrize("n,K,height", [(0, 3, 16), (1, 1, 8), (37, 26, 16), (40, 5, 8)])
def test_panels_are_the_rows_attribute_major_and_padded(n, K, height):
    # the panels against numpy's reshaping, in the rows' order and in a given order (one
    # pass, as the rows gathered first)
    rng = np.random.default_rng(n + K)
    Y = rng.normal(size=(n, K)).astype(np.float32)
    npan = -(-n // height)
    pad = np.zeros((npan * height, K), np.float32)
    for order in (None, rng.permutation(n).astype(np.intp), rng.integers(0, max(n, 1), 3)):
        if order is not None and n == 0:
            continue
        rows = Y if order is None else Y[order]
        m = len(rows)
        npan = -(-m // height)
        pad = np.zeros((npan * height, K), np.float32)
        pad[:m] = rows
        want = pad.reshape(npan, height, K).transpose(0, 2, 1)
        got = gemm_panels(Y, height, None if order is None else np.asarray(order, np.intp))
        assert got.shape == want.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="index the rows"):
        gemm_panels(Y, height, np.array([n], np.intp))
    with pytest.raises(ValueError, match="index the rows"):
        gemm_panels(Y, height, np.array([-1], np.intp))
    with pytest.raises(ValueError, match="height"):
        gemm_panels(Y, 0)


def test_product_additions_arguments_are_checked():
    X = np.ones((2, 3), np.float32)
    Yp = gemm_panels(np.ones((20, 3), np.float32))
    ab = np.zeros(20, np.uint16)
    tab = np.zeros((2, 32), np.float32)
    with pytest.raises(ValueError, match="32 entries"):
        gemm_products(X, Yp, ab, tab[:1])
    with pytest.raises(ValueError, match="per reference row"):
        gemm_products(X, Yp, ab[:3], tab)
    with pytest.raises(ValueError, match="per reference row"):
        gemm_products(X, Yp, None, None, np.zeros((1, 3), np.float32),
                      np.array([0, 1, 1], np.intp), np.array([0], np.intp))
    with pytest.raises(ValueError, match="below 32"):
        gemm_products(X, Yp, np.full(20, 40, np.uint16), tab)
    with pytest.raises(ValueError, match=">= 0"):
        gemm_products(X, Yp, ab, tab - 1)
    with pytest.raises(ValueError, match="go together"):
        gemm_products(X, Yp, ab, tab, np.zeros((1, 20), np.float32))
    with pytest.raises(ValueError, match="needs ab"):
        gemm_products(X, Yp, None, tab)
    with pytest.raises(ValueError, match="one entry per query"):
        gemm_products(X, Yp, ab, tab, rows=np.ones(3, np.uint8))
    with pytest.raises(ValueError, match="index its rows"):
        gemm_products(X, Yp, ab, tab, np.zeros((1, 20), np.float32),
                      np.array([0, 1, 1], np.intp), np.array([3], np.intp))



def seeds_reference(v, ns, lanes=64, most=16):
    """The rows an empty heap is offered first, in plain numpy: the row read as ``lanes``
    interleaved groups, the ``min(ns, most)`` groups with the smallest minima (NaN passed
    over, groups without a value below +inf left out; equal minima: the lower group), and
    each one's first position of its minimum, in increasing order of the minima."""
    n = len(v)
    groups = []
    for g in range(min(lanes, n)):
        vals = v[g::lanes]
        ok = vals < np.inf
        if ok.any():
            mv = vals[ok].min()
            groups.append((mv, g, g + lanes * int(np.flatnonzero(vals == mv)[0])))
    groups.sort(key=lambda t: (t[0], t[1]))
    return np.array([p for _, _, p in groups[:min(ns, most)]], dtype=np.intp)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 5, 63, 64, 65, 300, 2048, 2111])
def test_seed_rows_equal_the_reference(isa, dtype, n):
    from hdist._kernels.gemm import SEED_MAX, seed_rows
    rng = np.random.default_rng(n)
    for trial in range(6):
        v = rng.normal(size=n).astype(dtype)
        if trial == 1:
            v = np.round(v, 1)                       # many equal values
        if trial == 2:
            v[rng.random(n) < 0.3] = np.nan
        if trial == 3:
            v[rng.random(n) < 0.5] = np.inf
            v[rng.random(n) < 0.2] = -np.inf
        if trial == 4:
            v[:] = np.nan
        if trial == 5:
            v[::3] = np.nan
            v[1::3] = np.inf
        for ns in (0, 1, 5, 16, 40):
            got = seed_rows(v, ns)
            np.testing.assert_array_equal(got, seeds_reference(v, ns), err_msg=str((trial, ns)))
            assert len(got) <= min(ns, SEED_MAX)
    with pytest.raises(ValueError, match="ns"):
        seed_rows(np.zeros(3), -1)


@pytest.mark.parametrize("missing", [0.0, 0.2])
@pytest.mark.parametrize("k", [1, 5, 15, 16, 17])
@pytest.mark.parametrize("exclude_self", [False, True])
def test_seeded_heaps_equal_the_direct_kernel(missing, k, exclude_self):
    # tiles wide enough for the selection to offer an empty heap its seeds first (with
    # exclude_self the query's own row is usually one), k around the most seeds, and tiles
    # too narrow for seeds: the same lists as the direct kernel
    from hdist._kernels.gemm import SEED_MIN_ROWS
    X, y, nom = mixed(700, missing=missing, seed=k)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X, y)
    rows = m.train_
    d, i = knn_rows(m, rows, k, exclude_self, 1, "direct")
    for r_tile in (SEED_MIN_ROWS - 1, SEED_MIN_ROWS, 700):
        res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), k, 2, exclude_self,
                        q_block=64, r_tile=r_tile, r_chunk=16)
        np.testing.assert_array_equal(i, res[1])
        np.testing.assert_array_equal(d, res[0])


@pytest.mark.parametrize("nq,chunk", [(0, 8), (5, 8), (8, 8), (64, 64), (250, 64),
                                      (2003, 504), (2000, 16)])
def test_spread_blocks_deal_whole_blocks_over_the_chunks(nq, chunk):
    # the fused search's order of the queries, its whole blocks of 8 dealt over the chunks
    # the threads take: a permutation of the order, each block kept whole, the last partial
    # block last, the blocks taken as 0, n, 2n, ..., then 1, n + 1, ... (n chunks)
    from hdist._kernels.gemm import _spread_blocks
    rng = np.random.default_rng(nq)
    order = rng.permutation(nq).astype(np.intp)
    got = np.asarray(_spread_blocks(order, chunk))
    assert sorted(got.tolist()) == sorted(order.tolist())
    nb, per = nq // 8, chunk // 8
    n = -(-nb // per)
    blocks = [order[8 * b:8 * b + 8] for b in range(nb)]
    want = [blocks[b] for c in range(n) for b in range(c, nb, n)] if n > 1 else blocks
    np.testing.assert_array_equal(got, np.concatenate(want + [order[8 * nb:]]))
    if n > 1:
        # the first chunk takes its blocks at a stride of n
        k0 = min(per, len(blocks[::n]))
        first = got[:8 * k0].reshape(-1, 8)
        np.testing.assert_array_equal(first, np.array(blocks[::n][:k0]))


def test_product_inputs_start_on_a_cache_line():
    # the arrays whose entries the product loads 16 at a time (reference panels, added
    # columns, codes, tables) start on a 64-byte boundary, whatever the allocator gives:
    # a vector load across two cache lines costs two
    rng = np.random.default_rng(3)
    for n in (1, 5, 16, 37, 300, 2049):
        Y = rng.normal(size=(n, 7)).astype(np.float32)
        assert gemm_panels(Y).ctypes.data % 64 == 0
        assert gemm_panels(Y, 8, np.arange(n, dtype=np.intp)[::-1].copy()).ctypes.data % 64 == 0
        absent = rng.random((n, 5)) < 0.3
        qptr, qidx = _kernels.miss_lists(absent.view(np.uint8))
        refmiss = _kernels.RefMissing(qptr, qidx, 5)
        hq = np.abs(rng.normal(size=(3, 5)))
        assert refmiss.ab.ctypes.data % 64 == 0 and refmiss.tables(hq).ctypes.data % 64 == 0
        ab, tab = _kernels.miss_codes(hq, None, qptr, qidx)
        assert ab.ctypes.data % 64 == 0 and tab.ctypes.data % 64 == 0
        np.testing.assert_array_equal(ab, refmiss.ab)
        np.testing.assert_array_equal(tab, refmiss.tables(hq))
    for shape, dtype in [((3, 5), np.float32), (7, np.uint16), ((0, 4), np.float64),
                         ((2, 3, 4), np.intp)]:
        a = _kernels.aligned_empty(shape, dtype)
        # (an empty array's address is numpy's choice: nothing is loaded from it)
        assert (a.size == 0 or a.ctypes.data % 64 == 0) and a.dtype == dtype
        assert a.flags.c_contiguous
        assert a.shape == ((shape,) if isinstance(shape, int) else shape)
        assert a.flags.writeable
    with pytest.raises(ValueError, match="negative"):
        _kernels.aligned_empty((2, -1), np.float32)
    # the filter's own columns of the reference rows' missing-query terms
    X, y, nom = mixed(300, n_cont=4, n_nom=4, missing=0.2, seed=4)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:250], y[:250])
    st, rows = m._fitted(), m.encode(X[250:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, 64, np.float32)
    assert F.g.ctypes.data % 64 == 0 and F.Yp.ctypes.data % 64 == 0
