"""The matrix-product filter's query side, ``hdist._search.gemm_filter._queries``, equals a
plain numpy computation of the same features bit for bit.

The library computes the continuous attributes and looks the nominal attributes' values
up in one compiled pass each (``hdist._kernels.query_continuous``,
``hdist._kernels.query_coded``) and the margin's norms in another
(``hdist._kernels.query_norms``); the reference below computes each attribute with
numpy, one array operation at a time, in the same order.  Compared on random mixed data
with missing values under several metrics and policies, projected and unprojected
tables, embedded attributes, off-span and unseen values, and no rows at all.
"""
import numpy as np
import pytest

import hdist
from hdist._search import gemm_filter as _gemm
from hdist._kernels import query_coded, query_continuous, query_norms

from test_gemm import CASES, mixed


def queries_numpy(plan, Q, ref):
    """``(X, H, qptr, qidx)``, None or "off-span", as ``_gemm._queries`` documents them."""
    attrs = _gemm._attributes(plan, Q, coded=True)
    if attrs is None:
        return None
    n, mc = Q.n, plan.mc
    cols, const, hs = [], np.zeros(n), {}
    need_h = set(ref["miss"])
    absent = np.zeros((n, len(attrs)), dtype=bool)
    for a in range(mc):
        # one continuous attribute at a time (the library takes them as one block)
        v, pres = attrs[a][0][:, 0], attrs[a][1]
        et = np.where(pres, v - ref["centres"][a][0], 0.0)
        s = et * et
        cols.append(et[:, None])
        const += s
        hs[a] = np.where(pres, Q.cpen[:, a] - s, plan.c_both[a])
        absent[:, a] = ~pres
    for a in range(mc, len(attrs)):
        E, pres, A, B, vals, codes = attrs[a]
        c, basis = ref["centres"][a], ref["bases"][a]
        if vals is not None:
            Ev, sv, ok = ref["vtab"][a]
            idx = np.where(pres, codes, len(sv) - 1)
            if not ok[idx].all():
                return "off-span"
            Et, s = Ev[idx], sv[idx]
        else:
            if basis is not None and not _gemm._in_span(E[pres] - c, basis):
                return "off-span"
            Et = _gemm._centred(E, pres, c, basis)
            s = np.einsum("ij,ij->i", Et, Et)
        cols.append(Et)
        const += s
        hs[a] = np.where(pres, A - s, B)
        absent[:, a] = ~pres
    X = np.hstack(cols + [np.column_stack([const, np.ones(n)])])
    H = np.zeros((n, len(ref["miss"])))
    for h, a in enumerate(ref["miss"]):
        H[:, h] = hs[a]
    qptr = np.zeros(n + 1, dtype=np.intp)
    np.cumsum(absent.sum(axis=1), out=qptr[1:])
    qidx = np.nonzero(absent)[1].astype(np.intp)
    return X, H, qptr, qidx


def assert_same(got, want):
    if want is None or isinstance(want, str):
        assert got == want
        return
    assert not isinstance(got, str) and got is not None
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        # bit for bit, the sign of zeros included
        np.testing.assert_array_equal(g.view(np.uint8) if g.dtype.kind == "f" else g,
                                      w.view(np.uint8) if w.dtype.kind == "f" else w)


@pytest.mark.parametrize("name,params", CASES)
@pytest.mark.parametrize("missing", [0.0, 0.2])
@pytest.mark.parametrize("project", [True, False])
def test_query_side_equals_numpy(name, params, missing, project):
    X, y, nom = mixed(700, missing=missing, seed=len(params) + int(missing * 100))
    m = hdist.get_metric(name, nominal=nom, **params).fit(X[:500], y[:500])
    ref = _gemm._reference(m.plan_, m.train_, {}, project)[0]
    for Q in (X[500:], X[500:500], X[500:501]):
        rows = m.encode(Q)
        assert_same(_gemm._queries(m.plan_, rows, ref), queries_numpy(m.plan_, rows, ref))


def test_off_span_unseen_and_embedded(monkeypatch):
    # unseen values: off the span of the projected tables ("off-span"), or refused by
    # the overlap attributes (None); an embedded (high-cardinality) attribute after the
    # looked-up ones
    X, y, nom = mixed(900, missing=0.1, seed=31)
    m = hdist.get_metric("hvdm", nominal=nom).fit(X[:600], y[:600])
    ref = _gemm._reference(m.plan_, m.train_, {}, True)[0]
    Q = X[600:].copy()
    Q[::7, nom[2]] = 555.0
    rows = m.encode(Q)
    assert _gemm._queries(m.plan_, rows, ref) == "off-span"
    assert_same(_gemm._queries(m.plan_, rows, ref), queries_numpy(m.plan_, rows, ref))
    full = _gemm._reference(m.plan_, m.train_, {}, False)[0]
    assert_same(_gemm._queries(m.plan_, rows, full), queries_numpy(m.plan_, rows, full))
    h = hdist.get_metric("heom", nominal=nom).fit(X[:600])
    ref = _gemm._reference(h.plan_, h.train_, {}, True)[0]
    rows = h.encode(Q)
    assert _gemm._queries(h.plan_, rows, ref) is None
    assert_same(_gemm._queries(h.plan_, rows, ref), queries_numpy(h.plan_, rows, ref))
    monkeypatch.setattr(hdist._core.statistics, "TABLE_BUDGET", 1000)
    rng = np.random.default_rng(11)
    n = 2400
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 2000, n).astype(float),
                         rng.integers(0, 5, n).astype(float)])
    X[rng.random(X.shape) < 0.1] = np.nan
    y = rng.integers(0, 4, n)
    m = hdist.get_metric("hvdm", nominal=[1, 2]).fit(X[:2000], y[:2000])
    assert m.plan_.me == 1 and m.plan_.mt == 1
    for project in (True, False):
        ref = _gemm._reference(m.plan_, m.train_, {}, project)[0]
        rows = m.encode(X[2000:])
        assert_same(_gemm._queries(m.plan_, rows, ref), queries_numpy(m.plan_, rows, ref))


def test_query_coded_refuses_bad_arguments():
    one = np.zeros(1, np.intp)
    X, H = np.zeros((2, 3)), np.zeros((2, 1))
    const, absent = np.zeros(2), np.zeros((2, 1), np.uint8)
    ev, sv, ok = np.zeros(6), np.zeros(3), np.ones(3, np.uint8)
    good = dict(codes=np.array([[0], [-1]], np.int32), ev=ev,
                ev_off=np.array([0, 6], np.intp), width=np.array([2], np.intp), sv=sv, ok=ok,
                sv_off=np.array([0, 3], np.intp), miss=np.ones(1), hcol=0 * one, X=X, x0=0,
                const=const, H=H, absent=absent, a0=0)

    def call(**kw):
        args = dict(good, **kw)
        return query_coded(*args.values())

    assert call() is True
    np.testing.assert_array_equal(absent[:, 0], [0, 1])
    np.testing.assert_array_equal(H[:, 0], [1.0, 1.0])
    for kw in (dict(codes=np.array([[2], [0]], np.int32)),      # the missing row's code
               dict(codes=np.array([[7], [0]], np.int32)),      # past the table
               dict(ev_off=np.array([0, 4], np.intp)),          # table of the wrong size
               dict(sv_off=np.array([0, 4], np.intp)),          # past sv
               dict(hcol=np.array([1], np.intp)),               # no such column of H
               dict(x0=2),                                       # past X's columns
               dict(a0=1),                                       # past absent's columns
               dict(const=np.zeros(3))):                         # not one per row
        with pytest.raises(ValueError):
            call(**kw)
    assert call(ok=np.array([1, 0, 1], np.uint8)) is True
    assert call(ok=np.array([0, 1, 1], np.uint8)) is False      # row 0: off the span


def test_query_continuous_refuses_bad_arguments():
    c = np.array([[1.0, np.nan], [2.0, 3.0]])
    X, H = np.zeros((2, 4)), np.zeros((2, 1))
    const, absent = np.zeros(2), np.zeros((2, 2), np.uint8)
    good = dict(c=c, cpen=np.full((2, 2), 5.0), elo=np.zeros(2), scale=np.ones(2),
                centre=np.array([1.0, 0.0]), both=np.array([7.0, 8.0]),
                hcol=np.array([-1, 0], np.intp), X=X, const=const, H=H, absent=absent)

    def call(**kw):
        args = dict(good, **kw)
        return query_continuous(*args.values())

    call()
    np.testing.assert_array_equal(X[:, :2], [[0.0, 0.0], [1.0, 3.0]])
    np.testing.assert_array_equal(const, [0.0, 10.0])
    np.testing.assert_array_equal(H[:, 0], [8.0, 5.0 - 9.0])      # both missing / present
    np.testing.assert_array_equal(absent, [[0, 1], [0, 0]])
    for kw in (dict(cpen=np.zeros((2, 1))), dict(elo=np.zeros(1)), dict(scale=np.ones(3)),
               dict(centre=np.zeros(1)), dict(both=np.zeros(1)),
               dict(hcol=np.array([0, 1], np.intp)),           # no such column of H
               dict(X=np.zeros((2, 1))), dict(const=np.zeros(3)),
               dict(absent=np.zeros((2, 1), np.uint8)), dict(H=np.zeros((3, 1)))):
        with pytest.raises(ValueError):
            call(**kw)


@pytest.mark.parametrize("n,K,nh", [(0, 3, 2), (5, 0, 0), (40, 7, 3), (40, 7, 0)])
def test_query_norms_equal_numpy(n, K, nh):
    rng = np.random.default_rng(n + K + nh)
    X = rng.normal(size=(n, K)) * rng.choice([1e-3, 1.0, 1e5], size=(n, 1))
    H = rng.normal(size=(n, nh))
    qptr = np.concatenate([[0], np.cumsum(rng.integers(0, 4, n))]).astype(np.intp)
    xmax, s = query_norms(X, H, qptr)
    want = np.einsum("ij,ij->i", X, X) + np.einsum("ij,ij->i", H, H) + np.diff(qptr)
    np.testing.assert_allclose(s, want, rtol=1e-14)
    assert xmax == max(np.abs(X).max(initial=0), np.abs(H).max(initial=0))
    if n and K:
        for bad in (np.nan, np.inf, -np.inf):
            Xb = X.copy()
            Xb[n // 2, K - 1] = bad
            assert np.isnan(query_norms(Xb, H, qptr)[0])
        if nh:
            Hb = H.copy()
            Hb[0, 0] = np.nan
            assert np.isnan(query_norms(X, Hb, qptr)[0])
    with pytest.raises(ValueError):
        query_norms(X, H, qptr[:-1])
