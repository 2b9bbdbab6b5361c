"""The tile kernel's fused runs of attributes.

The tile kernel handles up to four consecutive continuous (or overlap) attributes whose
query values are present in one pass over the reference rows, keeping each row's partial
sum and "ignore" bookkeeping in registers.  A run ends at a missing query value, at the
end of its block, after four attributes, or where the "ignore" policy changes, so 9
attributes per block and queries missing values at chosen places give runs of every
length 1-4 at every offset.  Every pair must equal the pair kernel bit for bit on every
instruction set and tile size, and the plain reference of the test suite; the policies
skip (Gower's rule), keep (ignore on the other kind only) and count missing values, with
equal and mixed weights, for p in {1, 2, inf, 0.5, 3}.
"""
from __future__ import annotations

import numpy as np
import pytest

from hdist import Metric
from hdist import _kernels

from reference import reference_metric
from test_tile_ignore import _pair_kernel

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]

N_CONT, N_NOM = 9, 9
KINDS = ["continuous"] * N_CONT + ["nominal"] * N_NOM
NOMINAL = list(range(N_CONT, N_CONT + N_NOM))

# missing query values per block: runs (length@start) 4@0 4@4 1@8; 1@0 4@2 3@6;
# 2@0 4@3 2@7; 3@0 4@4 1@8 ...; every attribute missing; none missing
HOLES = [[], [1], [2], [3], [4], [0, 5], [1, 3, 6], [2, 7], [5, 6, 7, 8], [0, 8],
         list(range(9)), [4, 5]]


def _data(seed, n, p_missing, complete_rows=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=(n, N_CONT)) * np.arange(1, N_CONT + 1),
                         rng.integers(0, 4, size=(n, N_NOM)).astype(float)])
    miss = rng.random(X.shape) < p_missing
    miss[:complete_rows] = False
    X[miss] = np.nan
    return X


def _queries(seed):
    """Queries missing their values at HOLES in each block (each pattern twice in each)."""
    rng = np.random.default_rng(seed)
    h = len(HOLES)
    Q = _data(seed, 2 * h, 0.0)
    for i in range(len(Q)):
        Q[i, HOLES[i % h]] = np.nan
        Q[i, [N_CONT + a for a in HOLES[(5 * i + 3) % h]]] = np.nan
    # a few values the training data never had
    Q[rng.random(Q.shape) < 0.03] *= 7.0
    return Q


def _every_isa_and_tile(m, X, Q, want):
    """The tile kernel equals ``want`` (the pair kernel) on every variant; k-NN (whose
    tiles drop rows beyond the k-th distance early) equals the k first rows of the whole
    matrix by (distance, index) on every tile size."""
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    before = _kernels.isa()
    k = 6
    try:
        for name in _kernels.isa_variants():
            _kernels.set_isa(name)
            got = m.pairwise(Q, X, reduced=True, n_jobs=1)
            assert np.array_equal(got, want), name
            full = m.pairwise(Q, X, n_jobs=1)
            order = np.array([np.lexsort((np.arange(len(r)), r))[:k] for r in full])
            for tile in (3, 64, 512):
                d, i = _kernels.knn(m.plan_.cplan, cq, ct, k, 1, tile=tile)
                assert np.array_equal(i, order), (name, tile)
                assert np.array_equal(d, np.take_along_axis(full, order, 1)), (name, tile)
    finally:
        _kernels.set_isa(before)


def _fit(preset, params, X):
    return Metric(preset, nominal=NOMINAL, **params).fit(X)


def _reference(preset, params, X, Q):
    r = reference_metric(preset, KINDS, **params)
    r.fit([list(X[:, a]) for a in range(X.shape[1])])
    return np.asarray(r.pairwise([list(q) for q in Q], [list(x) for x in X], reduced=True),
                      dtype=float)


CASES = [
    ("gower", {}),
    ("gower", dict(weights=[1, 2, 0, 1, 0.5, 3, 1, 1, 2, 1, 0.25, 0, 2, 1, 1, 3, 0.5, 1])),
    ("heom", {}), ("manhattan", {}), ("chebyshev", {}),
    ("heom", dict(missing="ignore", p=1.0)), ("heom", dict(missing="ignore", p=np.inf)),
    ("heom", dict(missing="ignore", p=0.5)), ("heom", dict(missing="ignore", p=3.0)),
    # "ignore" on one kind: the other kind's runs keep every weight
    ("heom", dict(missing={"continuous": "ignore", "nominal": "one"}, p=1.0)),
    ("heom", dict(missing={"continuous": "one", "nominal": "ignore"},
                  weights=[0.5, 1, 2, 1, 1, 0, 1, 3, 1, 1, 2, 1, 1, 0.25, 1, 1, 2, 1])),
    ("heom", dict(missing="max", p=np.inf)),
    # equal weights whose partial sums are exact (the kernel then counts skips only and
    # derives the known weight) and equal weights whose sums round (it sums them per row)
    ("gower", dict(weights=[0.5] * 18)), ("gower", dict(weights=[0.1] * 18)),
    ("heom", dict(missing="ignore", p=2.0, weights=[3.0] * 18)),
]


@pytest.mark.parametrize("preset,params", CASES)
def test_runs_equal_pair_kernel_and_reference(preset, params):
    # reference rows complete in the first tiles and not in later ones, so the "ignore"
    # bookkeeping runs both as one value and per row
    X = _data(0, 300, 0.08, complete_rows=140)
    Q = _queries(1)
    m = _fit(preset, params, X)
    want = _pair_kernel(m, Q)
    _every_isa_and_tile(m, X, Q, want)
    ref = _reference(preset, params, X, Q)
    np.testing.assert_allclose(want, ref, rtol=1e-10, atol=1e-12 * max(1.0, ref.max()))


@pytest.mark.parametrize("p", [1.0, 2.0, np.inf, 0.5, 3.0])
@pytest.mark.parametrize("weights", [[1, 2, 1, 0.5, 1, 1, 3, 1, 1] * 2, [1] * 18])
def test_runs_with_policy_changes_inside_a_block(p, weights):
    # "ignore" on every other attribute and an overlap penalty unlike its weight: runs
    # end where the policy changes, and every mode of run meets every other one (with
    # unit weights the known weight follows from the skipped count)
    X = _data(2, 300, 0.1, complete_rows=100)
    Q = _queries(3)
    m = _fit("heom", dict(missing="ignore", p=p, weights=weights), X)
    plan = m.plan_
    plan.c_ign[1::2] = 0
    plan.o_ign[::3] = 0
    plan.o_miss[2] = 0.375 * plan.o_w[2]
    plan.o_miss[5] = 1.5 * plan.o_w[5]
    plan._cplan = None
    want = _pair_kernel(m, Q)
    # the changes took effect: some pair differs from the unchanged plan's value
    plain = _fit("heom", dict(missing="ignore", p=p, weights=weights), X)
    assert not np.array_equal(want, _pair_kernel(plain, Q))
    _every_isa_and_tile(m, X, Q, want)


def test_complete_data_without_ignore():
    # no missing value anywhere: every run of every length adds its terms only
    X = _data(4, 300, 0.0)
    Q = _data(5, 40, 0.0)
    for preset, params in (("heom", {}), ("manhattan", {}), ("chebyshev", {}),
                           ("gower", {}), ("heom", dict(p=0.5))):
        m = _fit(preset, params, X)
        want = _pair_kernel(m, Q)
        _every_isa_and_tile(m, X, Q, want)
        ref = _reference(preset, params, X, Q)
        np.testing.assert_allclose(want, ref, rtol=1e-10, atol=1e-12 * max(1.0, ref.max()))
