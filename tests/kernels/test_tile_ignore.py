"""The tile kernel under the "ignore" policy (Gower's rule) when missing values are rare.

While every row of a tile has the same known weight and skipped count, the kernel keeps
them as one value and fills per-row arrays only from the first attribute where rows
differ.  Reference rows here are complete in some tiles and not in others, and queries
have missing values or none, so both ways run; every pair must equal the pair kernel
bit for bit on every instruction set, and a plain Gower formula.
"""
from __future__ import annotations

import numpy as np
import pytest

from hdist import Metric
from hdist import _kernels

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]

N_CONT, N_NOM = 6, 5


def _data(seed, n, complete_rows):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=(n, N_CONT)) * np.arange(1, N_CONT + 1),
                         rng.integers(0, 4, size=(n, N_NOM)).astype(float)])
    miss = rng.random(X.shape) < 0.15
    miss[:complete_rows] = False
    X[miss] = np.nan
    return X


def _gower(Xq, Xr, lo, rng_, w):
    """Plain Gower: sum over the known components of w_a d_a over their weight; nothing
    known counts every component 1."""
    out = np.empty((len(Xq), len(Xr)))
    nom = np.arange(Xq.shape[1]) >= N_CONT
    for i, x in enumerate(Xq):
        d = np.where(nom, (x != Xr).astype(float), np.abs(x - Xr) / rng_)
        known = ~(np.isnan(x) | np.isnan(Xr))
        kw = (known * w).sum(1)
        s = np.where(known, d * w, 0.0).sum(1)
        out[i] = np.where(kw > 0, s / np.where(kw > 0, kw, 1.0), 1.0)
    return out


def _pair_kernel(m, Q):
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    return np.array([[_kernels.pair_terms(m.plan_.cplan, cq, i, ct, j)[-1]
                      for j in range(ct.n)] for i in range(cq.n)])


@pytest.mark.parametrize("preset,params", [
    ("gower", {}), ("gower", dict(weights=[1, 2, 0, 1, 0.5, 3, 1, 1, 2, 1, 0.25])),
    ("heom", dict(missing="ignore")), ("heom", dict(missing="ignore", p=np.inf)),
    ("heom", dict(missing="ignore", p=0.5)), ("heom", dict(missing="ignore", p=3.0))])
def test_ignore_tiles_equal_pair_kernel_on_every_isa(preset, params):
    X = _data(0, 700, complete_rows=520)
    Q = _data(1, 30, complete_rows=12)
    Q[3, :N_CONT] = np.nan                  # a query with no known continuous value
    Q[4] = np.nan                           # nothing known at all
    nominal = list(range(N_CONT, N_CONT + N_NOM))
    m = Metric(preset, nominal=nominal, **params).fit(X)
    want = _pair_kernel(m, Q)
    before = _kernels.isa()
    try:
        for name in _kernels.isa_variants():
            _kernels.set_isa(name)
            got = m.pairwise(Q, X, reduced=True, n_jobs=1)
            assert np.array_equal(got, want), name
            cq = _kernels.CRows(m.encode(Q))
            ct = _kernels.CRows(m.train_)
            base = _kernels.knn(m.plan_.cplan, cq, ct, 7, 1, tile=1)
            for tile in (5, 64, 256):
                for nj, strategy in ((1, "queries"), (2, "references")):
                    d, i = _kernels.knn(m.plan_.cplan, cq, ct, 7, nj, tile=tile,
                                        strategy=strategy)
                    assert np.array_equal(d, base[0]) and np.array_equal(i, base[1])
    finally:
        _kernels.set_isa(before)


def test_gower_against_plain_formula():
    X = _data(2, 600, complete_rows=400)
    Q = _data(3, 25, complete_rows=10)
    Q[4] = np.nan
    nominal = list(range(N_CONT, N_CONT + N_NOM))
    w = np.array([1, 2, 0, 1, 0.5, 3, 1, 1, 2, 1, 0.25])
    m = Metric("gower", nominal=nominal, weights=w).fit(X)
    lo, hi = np.nanmin(X, 0), np.nanmax(X, 0)
    want = _gower(Q, X, lo, np.where(hi > lo, hi - lo, 1.0), w)
    got = m.pairwise(Q, X, n_jobs=2)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    d, i = m.kneighbors(Q, 5, n_jobs=2)
    order = np.lexsort((np.broadcast_to(np.arange(len(X)), want.shape), got), axis=1)[:, :5]
    assert np.array_equal(i, order)
