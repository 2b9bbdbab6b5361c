"""The matrix-product filter with values missing in the reference rows.

The terms of the attributes a reference row misses are not in the product: a pair is
first tested with a lower bound of them (the row's number of missing attributes times
the query's smallest term, or the sum of the query's negative terms) and then with its
own terms.  Radius searches at every distance some pair has exactly put pairs right at
the threshold, where a bound that is too high would lose them.
"""
import numpy as np
import pytest

import hdist
from hdist._search import gemm_filter as _gemm
from hdist import _kernels
from hdist._kernels import CRows, gemm_radius_select, gemm_select, miss_codes

from test_gemm import knn_rows, radius_rows


def table(n, seed, levels, missing):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 5), dtype=object)
    X[:, 0] = rng.choice([0.0, 0.25, 0.5, 1.0], n)
    X[:, 1] = rng.choice([0.1, 0.2, 0.7, 1.3], n)
    X[:, 2] = rng.choice(["a", "b"], n)
    X[:, 3] = rng.choice(["u%d" % v for v in range(levels)], n)
    X[:, 4] = rng.choice(["p", "q", "r"], n)
    M = rng.random(X.shape) < missing
    M[:3] = False                       # every value seen in the first rows
    X[M] = None
    return X


# hvdm: every query term against a missing value is > 0 (the count bound); heom with a
# 12-valued attribute on the float64 product (no projection on the span of the one-hot
# codes): a code farther from the centre than the missing penalty gives negative terms
# (the bound of their sum)
@pytest.mark.parametrize("name,levels,sign", [("hvdm", 3, 1), ("heom", 12, -1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", [61, 62])
def test_radius_at_every_distance_with_missing_reference_values(name, levels, sign, dtype,
                                                                 seed):
    X = table(330, seed, levels, 0.3)
    X, Q = X[:290], X[290:]
    m = hdist.Metric(name, nominal=[2, 3, 4]).fit(X, np.arange(290) % 3)
    st, rows = m._fitted(), m.encode(Q)
    F = _gemm._prepare(st.plan, rows, st.train, {}, 8, dtype)
    assert F.ridx.size > 0 and F.H.shape[1] == 5
    assert (F.H.min() < 0) == (sign < 0 and dtype == np.float64)
    P = m.pairwise(Q, X)
    for r in sorted(set(P.ravel().tolist()))[::5]:
        D, I = _gemm.radius(st.plan, rows, st.train, CRows(rows), st.crows(), r, 1,
                            dtype=dtype, r_chunk=8, r_tile=64, q_block=16)
        for q in range(len(Q)):
            assert sorted(I[q].tolist()) == np.flatnonzero(P[q] <= r).tolist(), (r, q)


@pytest.mark.parametrize("name,levels", [("hvdm", 3), ("heom", 12)])
@pytest.mark.parametrize("n_jobs", [1, 2])
def test_knn_with_missing_reference_values_equals_direct(name, levels, n_jobs):
    X = table(700, 63, levels, 0.25)
    m = hdist.Metric(name, nominal=[2, 3, 4]).fit(X[:500], np.arange(500) % 3)
    rows = m.encode(X[500:])
    d1, i1 = knn_rows(m, rows, 9, False, n_jobs, "direct")
    res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 9, n_jobs,
                    r_chunk=16, r_tile=128, q_block=32)
    assert res is not None
    np.testing.assert_array_equal(i1, res[1])
    np.testing.assert_array_equal(d1, res[0])


def test_reference_missing_arguments_are_checked():
    X = table(200, 64, 3, 0.3)
    m = hdist.Metric("hvdm", nominal=[2, 3, 4]).fit(X[:150], np.arange(150) % 3)
    st, rows = m._fitted(), m.encode(X[150:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, 8)
    G = (F.Xg @ F.Yg.T).astype(np.float32)
    HD = np.full((rows.n, 3), np.inf)
    HI = np.full((rows.n, 3), st.train.n, dtype=np.intp)
    kw = F.extra()
    args = (st.plan.cplan, CRows(rows), st.crows(), G, F.nx, F.ny_chunk, 0, 0, 8, HD, HI,
            F.eps, 1)
    with pytest.raises(ValueError, match="go together"):
        gemm_select(*args, **{**kw, "hc": None})
    with pytest.raises(ValueError, match="one row per query"):
        gemm_select(*args, **{**kw, "hq": np.ascontiguousarray(F.H[1:])})
    bad = F.hc.copy()
    bad[np.flatnonzero(bad)[0]] += 1           # a count above the row's entries
    with pytest.raises(ValueError, match="count"):
        gemm_select(*args, **{**kw, "hc": bad})
    ridx = F.ridx.copy()
    ridx[0] = F.H.shape[1]                      # past the columns of hq
    with pytest.raises(ValueError, match="index"):
        gemm_select(*args, **{**kw, "ridx": ridx})
    gemm_select(*args, **kw)                    # consistent: runs
    assert np.isfinite(HD).all()


def test_tile_position_and_lengths_are_checked():
    # a tile beyond the query or reference rows, or arrays shorter than the tile needs,
    # are refused before the kernel reads past them
    X = table(200, 68, 3, 0.3)
    m = hdist.Metric("hvdm", nominal=[2, 3, 4]).fit(X[:150], np.arange(150) % 3)
    st, rows = m._fitted(), m.encode(X[150:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, 8)
    nq, nr = rows.n, st.train.n
    G = np.ascontiguousarray((F.Xg @ F.Yg.T).astype(np.float32))
    kw = F.extra()
    head = (st.plan.cplan, CRows(rows), st.crows())

    def knn(G, nx, ny, q0, r0, HD=None, **extra):
        HD = np.full((nq, 3), np.inf) if HD is None else HD
        HI = np.full(HD.shape, nr, dtype=np.intp)
        gemm_select(*head, G, nx, ny, q0, r0, 8, HD, HI, F.eps, 1, **{**kw, **extra})

    def rad(G, nx, ny, q0, r0, **extra):
        gemm_radius_select(*head, G, nx, ny, q0, r0, 8, 0.5, F.eps, **{**kw, **extra})

    for run in (knn, rad):
        with pytest.raises(ValueError, match="within"):
            run(np.ascontiguousarray(G[:, :64]), F.nx, F.ny_chunk, 0, nr - 32)          # past the reference rows
        with pytest.raises(ValueError, match="within"):
            run(G[:10], F.nx, F.ny_chunk, nq - 5, 0)               # past the query rows
        with pytest.raises(ValueError, match="within"):
            run(G, F.nx, F.ny_chunk, -1, 0)
        with pytest.raises(ValueError, match="nx"):
            run(G, F.nx[:-1], F.ny_chunk, 0, 0)
        with pytest.raises(ValueError, match="ny_max"):
            run(G, F.nx, F.ny_chunk[:-1], 0, 0)
        with pytest.raises(ValueError, match="gy"):
            run(G, F.nx, F.ny_chunk, 0, 0, gy=np.ascontiguousarray(F.g[:, :-1]))
        with pytest.raises(ValueError, match="qidx"):
            run(G, F.nx, F.ny_chunk, 0, 0, gy=np.ascontiguousarray(F.g[:1]),
                gmin=np.ascontiguousarray(F.gmin[:1]))     # qidx names rows gy lacks
        with pytest.raises(ValueError, match="gmin"):
            run(G, F.nx, F.ny_chunk, 0, 0, gmin=np.ascontiguousarray(F.gmin[:, :-1]))
        with pytest.raises(ValueError, match="multiple of r_chunk"):
            run(np.ascontiguousarray(G[:, 4:]), F.nx, F.ny_chunk, 0, 4)
    with pytest.raises(ValueError, match="HD and HI"):
        knn(G, F.nx, F.ny_chunk, 0, 0, HD=np.full((nq - 1, 3), np.inf))
    knn(G, F.nx, F.ny_chunk, 0, 0)                 # consistent: runs
    rad(G, F.nx, F.ny_chunk, 0, 0)


@pytest.mark.parametrize("isa", _kernels.isa_variants())
def test_radius_tiles_with_the_codes_equal_those_without(isa):
    # the radius filter bounds a reference row's missing terms by its codes (miss_codes):
    # the same hits, bit for bit, as with the bound of their count, on every variant, and
    # the same as the direct kernel
    X = table(700, 67, 3, 0.3)
    m = hdist.Metric("hvdm", nominal=[2, 3, 4]).fit(X[:600], np.arange(600) % 3)
    st, rows = m._fitted(), m.encode(X[600:])
    F = _gemm._prepare(st.plan, rows, st.train, {}, 64)
    assert F.ridx.size > 0 and F.H.min() >= 0
    H = F.H
    hb = np.column_stack([np.zeros(len(H)), H.min(axis=1)])
    ab, tab = miss_codes(H, hb, F.rptr, F.ridx)
    r = float(np.quantile(m.pairwise(X[600:620], X[:600]), 0.05))
    before = _kernels.isa()
    _kernels.set_isa(isa)
    try:
        for r0 in (0, 192, 512):
            G = np.ascontiguousarray((F.Xg @ F.Yg[r0:].T).astype(np.float32))
            args = (st.plan.cplan, CRows(rows), st.crows(), G, F.nx,
                    F.ny_chunk[r0 // 64:], 0, r0, 64, r, F.eps)
            plain = gemm_radius_select(*args, **F.extra())
            coded = gemm_radius_select(*args, **F.extra(), ab=ab, tab=tab)
            for a, b in zip(plain, coded):
                np.testing.assert_array_equal(a, b)
            assert len(plain[0]) > 50
    finally:
        _kernels.set_isa(before)
    D, I = _gemm.radius(st.plan, rows, st.train, CRows(rows), st.crows(), r, 2)
    dd, di = radius_rows(m, rows, r, False, 2, 0, "direct")
    for a, b, c, d in zip(I, di, D, dd):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(c, d)
    args = (st.plan.cplan, CRows(rows), st.crows(), G, F.nx, F.ny_chunk[512 // 64:], 0,
            512, 64, r, F.eps)
    with pytest.raises(ValueError, match="go together"):
        gemm_radius_select(*args, **F.extra(), ab=ab)
    with pytest.raises(ValueError, match="go together"):
        gemm_radius_select(*args, ab=ab, tab=tab)
    with pytest.raises(ValueError, match="one entry per reference row"):
        gemm_radius_select(*args, **F.extra(), ab=ab[1:], tab=tab)
    with pytest.raises(ValueError, match="32 per query"):
        gemm_radius_select(*args, **F.extra(), ab=ab, tab=np.zeros((len(tab), 31), np.float32))
    bad = ab.copy()
    bad[600 - 1] = 32
    with pytest.raises(ValueError, match="below 32"):
        gemm_radius_select(*args, **F.extra(), ab=bad, tab=tab)


@pytest.mark.parametrize("r_chunk", [5, 64, 100, 256])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_chunks_of_any_length_against_the_masks(r_chunk, dtype, missing):
    # the kept entries of a chunk are read from bit masks of 64: chunks shorter, equal
    # and longer, with a tail that is not a multiple of the vector width
    X = table(900, 65, 3, missing)
    m = hdist.Metric("hvdm", nominal=[2, 3, 4]).fit(X[:700], np.arange(700) % 3)
    rows = m.encode(X[700:])
    d1, i1 = knn_rows(m, rows, 12, False, 1, "direct")
    res = _gemm.knn(m.plan_, rows, m.train_, CRows(rows), m._ctrain(), 12, 2,
                    r_chunk=r_chunk, r_tile=2 * r_chunk + 3, q_block=64, dtype=dtype)
    np.testing.assert_array_equal(i1, res[1])
    np.testing.assert_array_equal(d1, res[0])


@pytest.mark.parametrize("levels", [3, 12])
def test_query_features_looked_up_per_value_equal_the_per_row_ones(levels):
    # the query side of nominal attributes comes from a table per value (centred,
    # projected, squared norm, missing row): the same as projecting each row
    X = table(400, 66, levels, 0.2)
    m = hdist.Metric("hvdm", nominal=[2, 3, 4]).fit(X[:300], np.arange(300) % 3)
    st, rows = m._fitted(), m.encode(X[300:])
    cache = {}
    assert _gemm._prepare(st.plan, rows, st.train, cache, 8) is not None
    ref = cache["ref"]
    assert sorted(ref["vtab"]) == [2, 3, 4]
    cols, norms = [], np.zeros(rows.n)
    for a, (E, pres, A, B, vals, codes) in enumerate(_gemm._attributes(st.plan, rows)):
        Et = _gemm._centred(E, pres, ref["centres"][a], ref["bases"][a])
        cols.append(Et)
        norms += np.einsum("ij,ij->i", Et, Et)
    Xq, H, qptr, qidx = _gemm._queries(st.plan, rows, ref)
    np.testing.assert_allclose(Xq[:, :-2], np.hstack(cols), rtol=0, atol=1e-12)
    np.testing.assert_allclose(Xq[:, -2], norms, rtol=1e-12)
    assert qidx.size > 0 and np.all(Xq[:, -1] == 1.0)
