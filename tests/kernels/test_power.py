"""The per-term power of a general p (``hdist/_kernels/pw.h``: ``hd_pw_gen``).

p = 0.5 takes ``sqrt`` (correctly rounded by IEEE 754, hence at least as accurate as
``pow(d, 0.5)``, which glibc rounds wrongly in about 1 case in 1 000); p = 3 and p = 4
take products, ``(d * d) * d`` and ``(d * d) * (d * d)``.  Every path (tile kernel on every
instruction set, pair kernel, trees) must use the same formula, so that distances stay
bit-identical across paths, and stay within 1e-12 of a high-precision reference.
"""
from __future__ import annotations

from decimal import Decimal, getcontext

import numpy as np
import pytest

from hdist import Metric, NeighborsIndex
from hdist import _kernels

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


def _data(seed, n, m=6, scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m)) * np.logspace(-3, 3, m) * scale
    # exact ties and zero differences, far and tiny differences
    X[::7, 0] = X[0, 0]
    X[1::11, 2] = X[1, 2] + 2.0 ** -40
    return X


def _cube(d):
    return (d * d) * d


def _fourth(d):
    s = d * d
    return s * s


#: p -> (the kernels' term in their operation order, with numpy; its exact power)
TERMS = {0.5: (np.sqrt, lambda d: d.sqrt()),
         3.0: (_cube, lambda d: d ** 3),
         4.0: (_fourth, lambda d: d ** 4)}


def _metric(p, X):
    return Metric("fractional").fit(X) if p == 0.5 else Metric("minkowski", p=p).fit(X)


def _reduced_sum(m, Q, term):
    """Reduced distances in the kernels' operation order: sum over attributes in order of
    ``w_a * term(|x - y| * c_inv[a])``."""
    P = m.plan_
    q = m.encode(Q).c
    r = m.train_.c
    s = np.zeros((q.shape[0], r.shape[0]))
    for a in range(q.shape[1]):
        d = np.abs(q[:, a][:, None] - r[:, a][None, :]) * P.c_inv[a]
        s = s + P.c_rw[a] * term(d)
    return s


@pytest.mark.parametrize("p,seeds", [(0.5, (0, 1)), (3.0, (6, 7)), (4.0, (6, 7))])
def test_power_is_the_same_on_every_path(p, seeds):
    X = _data(seeds[0], 400)
    Q = _data(seeds[1], 60, scale=1.5)
    m = _metric(p, X)
    want = _reduced_sum(m, Q, TERMS[p][0])
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


@pytest.mark.parametrize("p,algorithm", [(0.5, "kd_tree"), (0.5, "brute"),
                                         (3.0, "kd_tree"), (3.0, "ball_tree"), (3.0, "brute"),
                                         (4.0, "kd_tree"), (4.0, "ball_tree"), (4.0, "brute")])
def test_power_trees_equal_brute(p, algorithm):
    if p == 0.5:
        X, Q = _data(2, 900), _data(3, 40, scale=1.2)
    else:
        X, Q = _data(8, 900), _data(9, 40, scale=1.2)
        X[::5, 1] = X[0, 1]                 # ties on an attribute
    m = _metric(p, X)
    d0, i0 = m.kneighbors(Q, 7, n_jobs=1)
    idx = NeighborsIndex(m, algorithm=algorithm).fit(X)
    d, i = idx.kneighbors(Q, 7)
    assert np.array_equal(d, d0) and np.array_equal(i, i0)
    want = np.sort(m.pairwise(Q, X), axis=1)[:, :7]
    assert np.array_equal(d0, want)
    if p == 0.5:
        return
    r = float(np.median(d0[:, -1]))
    rd, ri = idx.radius_neighbors(Q, r)
    for q in range(len(Q)):
        full = m.pairwise(Q[q:q + 1], X)[0]
        assert np.array_equal(np.sort(ri[q]), np.flatnonzero(full <= r))


@pytest.mark.parametrize("p", [0.5, 3.0, 4.0])
def test_power_against_high_precision(p):
    # 50-60 significant digits: the powers and the final root exact to far below 1e-12
    getcontext().prec = 50 if p == 0.5 else 60
    seeds = (4, 5) if p == 0.5 else (10, 11)
    X = _data(seeds[0], 120)
    X[5] = X[4] * (1 + 1e-15)            # differences near the rounding of the values
    # a subnormal-scale difference (p = 0.5); one whose p-th power is tiny (p = 3, 4)
    X[6] = X[4] + (1e-300 if p == 0.5 else 1e-70)
    Q = np.vstack([_data(seeds[1], 15, scale=3.0), X[4:7]])
    m = _metric(p, X)
    got = m.pairwise(Q, X)
    P = m.plan_
    q, r = m.encode(Q).c, m.train_.c
    exact_term = TERMS[p][1]
    root = Decimal(1) / Decimal(p)
    worst = 0.0
    for i in range(len(Q)):
        for j in range(len(X)):
            s = Decimal(0)
            for a in range(q.shape[1]):
                d = abs(Decimal(q[i, a]) - Decimal(r[j, a])) * Decimal(P.c_inv[a])
                s += Decimal(P.c_rw[a]) * exact_term(d)
            if s == 0:
                assert got[i, j] == 0.0
                continue
            exact = s * s if p == 0.5 else s ** root
            worst = max(worst, float(abs(Decimal(got[i, j]) - exact) / exact))
    assert worst < 1e-12, worst
