"""The per-term power of a general p (``hdist/_pw.h``: ``hd_pw_gen``).

p = 0.5 takes ``sqrt`` (correctly rounded by IEEE 754, hence at least as accurate as
``pow(d, 0.5)``, which glibc rounds wrongly in about 1 case in 1 000): every path (tile
kernel on every instruction set, pair kernel, trees) must use it, so that distances stay
bit-identical across paths, and stay within 1e-12 of a high-precision reference.
"""
from __future__ import annotations

from decimal import Decimal, getcontext

import numpy as np
import pytest

from hdist import Metric, NeighborsIndex
from hdist import _kernels


def _data(seed, n, m=6, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)) * np.logspace(-3, 3, m) * scale
    # exact ties and zero differences, far and tiny differences
    X[::7, 0] = X[0, 0]
    X[1::11, 2] = X[1, 2] + 2.0 ** -40
    return X


def _sqrt_sum(m, Q):
    """Reduced p = 0.5 distances in the kernels' operation order, with numpy's sqrt:
    sum over attributes in order of ``w_a * sqrt(|x - y| * c_inv[a])``."""
    P = m.plan_
    q = m.encode(Q).c
    r = m.train_.c
    s = np.zeros((q.shape[0], r.shape[0]))
    for a in range(q.shape[1]):
        d = np.abs(q[:, a][:, None] - r[:, a][None, :]) * P.c_inv[a]
        s = s + P.c_rw[a] * np.sqrt(d)
    return s


def test_half_power_is_sqrt_on_every_path():
    X = _data(0, 400)
    Q = _data(1, 60, scale=1.5)
    m = Metric("fractional").fit(X)
    want = _sqrt_sum(m, Q)
    before = _kernels.isa()
    try:
        for name in _kernels.isa_variants():
            _kernels.set_isa(name)
            for nj in (1, 2):
                got = m.pairwise(Q, X, reduced=True, n_jobs=nj)
                assert np.array_equal(got, want), (name, nj)
    finally:
        _kernels.set_isa(before)
    # the pair kernel (trees, matrix-product recheck) computes the same terms
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    for i in range(0, 60, 7):
        for j in range(0, 400, 13):
            assert _kernels.pair_terms(m.plan_.cplan, cq, i, ct, j)[-1] == want[i, j]


@pytest.mark.parametrize("algorithm", ["kd_tree", "brute"])
def test_half_power_trees_equal_brute(algorithm):
    X = _data(2, 900)
    Q = _data(3, 40, scale=1.2)
    m = Metric("fractional").fit(X)
    d0, i0 = m.kneighbors(Q, 7, n_jobs=1)
    idx = NeighborsIndex(m, algorithm=algorithm).fit(X)
    d, i = idx.kneighbors(Q, 7)
    assert np.array_equal(d, d0) and np.array_equal(i, i0)
    want = np.sort(m.pairwise(Q, X), axis=1)[:, :7]
    assert np.array_equal(d0, want)


def test_half_power_against_high_precision():
    # 50 significant digits: sqrt and the final square exact to far below 1e-12
    getcontext().prec = 50
    X = _data(4, 120)
    X[5] = X[4] * (1 + 1e-15)            # differences near the rounding of the values
    X[6] = X[4] + 1e-300                 # a subnormal-scale difference
    Q = np.vstack([_data(5, 15, scale=3.0), X[4:7]])
    m = Metric("fractional").fit(X)
    got = m.pairwise(Q, X)
    P = m.plan_
    q, r = m.encode(Q).c, m.train_.c
    worst = 0.0
    for i in range(len(Q)):
        for j in range(len(X)):
            s = Decimal(0)
            for a in range(q.shape[1]):
                d = abs(Decimal(q[i, a]) - Decimal(r[j, a])) * Decimal(P.c_inv[a])
                s += Decimal(P.c_rw[a]) * d.sqrt()
            exact = s * s
            if exact == 0:
                assert got[i, j] == 0.0
                continue
            worst = max(worst, float(abs(Decimal(got[i, j]) - exact) / exact))
    assert worst < 1e-12, worst


# p = 3 and p = 4: products of d (hd_pw_gen), the same on every path

def _pow_terms(d, p):
    """The kernels' term for p = 3 / 4, in their operation order, with numpy."""
    if p == 3.0:
        return (d * d) * d
    s = d * d
    return s * s


def _int_power_sum(m, Q, p):
    P = m.plan_
    q = m.encode(Q).c
    r = m.train_.c
    s = np.zeros((q.shape[0], r.shape[0]))
    for a in range(q.shape[1]):
        d = np.abs(q[:, a][:, None] - r[:, a][None, :]) * P.c_inv[a]
        s = s + P.c_rw[a] * _pow_terms(d, p)
    return s


@pytest.mark.parametrize("p", [3.0, 4.0])
def test_integer_power_is_a_product_on_every_path(p):
    X = _data(6, 400)
    Q = _data(7, 60, scale=1.5)
    m = Metric("minkowski", p=p).fit(X)
    want = _int_power_sum(m, Q, p)
    before = _kernels.isa()
    try:
        for name in _kernels.isa_variants():
            _kernels.set_isa(name)
            for nj in (1, 2):
                got = m.pairwise(Q, X, reduced=True, n_jobs=nj)
                assert np.array_equal(got, want), (name, nj)
    finally:
        _kernels.set_isa(before)
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    for i in range(0, 60, 7):
        for j in range(0, 400, 13):
            assert _kernels.pair_terms(m.plan_.cplan, cq, i, ct, j)[-1] == want[i, j]


@pytest.mark.parametrize("p", [3.0, 4.0])
@pytest.mark.parametrize("algorithm", ["kd_tree", "ball_tree", "brute"])
def test_integer_power_trees_equal_brute(p, algorithm):
    X = _data(8, 900)
    X[::5, 1] = X[0, 1]                     # ties on an attribute
    Q = _data(9, 40, scale=1.2)
    m = Metric("minkowski", p=p).fit(X)
    d0, i0 = m.kneighbors(Q, 7, n_jobs=1)
    idx = NeighborsIndex(m, algorithm=algorithm).fit(X)
    d, i = idx.kneighbors(Q, 7)
    assert np.array_equal(d, d0) and np.array_equal(i, i0)
    want = np.sort(m.pairwise(Q, X), axis=1)[:, :7]
    assert np.array_equal(d0, want)
    r = float(np.median(d0[:, -1]))
    rd, ri = idx.radius_neighbors(Q, r)
    for q in range(len(Q)):
        full = m.pairwise(Q[q:q + 1], X)[0]
        assert np.array_equal(np.sort(ri[q]), np.flatnonzero(full <= r))


@pytest.mark.parametrize("p", [3.0, 4.0])
def test_integer_power_against_high_precision(p):
    getcontext().prec = 60
    X = _data(10, 120)
    X[5] = X[4] * (1 + 1e-15)
    X[6] = X[4] + 1e-70                  # a difference whose p-th power is tiny
    Q = np.vstack([_data(11, 15, scale=3.0), X[4:7]])
    m = Metric("minkowski", p=p).fit(X)
    got = m.pairwise(Q, X)
    P = m.plan_
    q, r = m.encode(Q).c, m.train_.c
    e = int(p)
    worst = 0.0
    for i in range(len(Q)):
        for j in range(len(X)):
            s = Decimal(0)
            for a in range(q.shape[1]):
                d = abs(Decimal(q[i, a]) - Decimal(r[j, a])) * Decimal(P.c_inv[a])
                s += Decimal(P.c_rw[a]) * d ** e
            if s == 0:
                assert got[i, j] == 0.0
                continue
            exact = s ** (Decimal(1) / Decimal(e))
            worst = max(worst, float(abs(Decimal(got[i, j]) - exact) / exact))
    assert worst < 1e-12, worst
