"""Edge cases of the brute-force, tree and filter paths against each other and the references.

Every path — the direct tile kernel (1 and 2 threads, every instruction-set variant), the
matrix-product filter, ``Metric.kneighbors``, ``NeighborsIndex`` brute / KD-tree / ball tree
with leaf sizes 1, 2, 5 and larger than n — must return bit-identical indices and distances;
the distances must be within 1e-12 relative of an exact (80-digit decimal) reference or of
``tests/reference.py``.  Data: values spanning 5e-324 .. 1e300 with exact zeros, p = 0.5,
0.3, 1, 3, 7, inf, all-missing rows under "one" / "max" / "ignore", duplicate rows, exact
ties, 3..4 reference rows with k = n, radii equal to returned distances, nominal values
unseen in fit; and KMedoids with duplicate points, k = 1 and k = n.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from decimal import Decimal, localcontext

import numpy as np
import pytest

from hdist import Metric, NeighborsIndex, _kernels
from hdist._search.searchers import GEMM_MIN_PAIRS, brute_radius
from hdist.cluster import KMedoids

from reference import CONTINUOUS, NOMINAL, Reference
from ref_pam import eager_swaps, kernel_swaps
from datadir import ROOT

# kinds are inferred from small tables of whole numbers on purpose (the warning for
# code-like numbers is asserted in tests/core/test_kinds.py)
pytestmark = [pytest.mark.filterwarnings("ignore:column .* not seen in fit:UserWarning"),
              pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")]
pytestmark += [pytest.mark.kernels, pytest.mark.sanitize]

P_VALUES = (0.5, 0.3, 1.0, 3.0, 7.0, math.inf)
POLICIES = ("one", "max", "ignore")


# ------------------------------------------------------------------------------------
# every path of one k-NN / radius question

def _paths(m, Q, direct, query, leaves=(1, 2, 5, 10 ** 6)):
    """``{path: answer}``: ``direct(rows, n_jobs, method)`` for the brute-force kernel and
    the filter, ``query(obj, n_jobs)`` for the Metric and every NeighborsIndex."""
    rows = m.encode(Q) if Q is not None else m.train_
    out = {}
    for nj in (1, 2):
        out["direct%d" % nj] = direct(rows, nj, "direct")
        out["filter%d" % nj] = direct(rows, nj, "gemm")
        out["metric%d" % nj] = query(m, nj)
    try:
        for isa in _kernels.isa_variants():
            _kernels.set_isa(isa)
            out["isa-" + isa] = direct(rows, 1, "direct")
    finally:
        _kernels.set_isa("best")
    for algo in ("brute", "kd_tree", "ball_tree"):
        for leaf in ((32,) if algo == "brute" else leaves):
            try:
                idx = NeighborsIndex(m, algorithm=algo, leaf_size=leaf).fit()
            except ValueError as exc:   # no triangle inequality for this metric and data
                assert algo == "ball_tree" and "not exact" in str(exc)
                break
            for nj in (1, 2):
                out["%s-%d-%d" % (algo, leaf, nj)] = query(idx, nj)
    return out


def knn_rows(m, rows, k, exclude_self, threads, method="auto"):
    """The metric's brute-force k-NN of encoded ``rows`` by ``method``: ``(dist, ind)``."""
    f = m._fitted()._search_index()._brute.knn(rows, k, threads, exclude_self=exclude_self,
                                               method=method)
    return f.dist, f.ind


def radius_rows(m, rows, r, threads, method):
    """Brute-force radius lists of encoded ``rows`` over the training rows by ``method``."""
    f = brute_radius(m.plan_, rows, m.train_, m._ctrain(), r, threads, method=method)
    return f.dist, f.ind


def knn_paths(m, Q, k):
    """``{path: (distances, indices)}`` over every brute-force, filter and tree path."""
    return _paths(m, Q, lambda rows, nj, how: knn_rows(m, rows, k, False, nj, method=how),
                  lambda obj, nj: obj.kneighbors(Q, k, n_jobs=nj))


def radius_paths(m, Q, r):
    return _paths(m, Q, lambda rows, nj, how: radius_rows(m, rows, r, nj, how),
                  lambda obj, nj: obj.radius_neighbors(Q, r, n_jobs=nj), leaves=(1, 3, 10 ** 6))


def assert_paths_identical(m, Q, k):
    res = knn_paths(m, Q, k)
    d0, i0 = res["direct1"]
    for name, (d, i) in res.items():
        assert np.array_equal(i, i0), name
        assert np.array_equal(d, d0), name
    return d0, i0


def close(a, b):
    return (a == b) | np.isclose(a, b, rtol=1e-12, atol=0.0)


# ------------------------------------------------------------------------------------
# an exact reference for extreme magnitudes (tests/reference.py works in float64, whose
# d ** p underflows where the true distance does not)

def _missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def exact_distances(X, Q, kinds, p, missing):
    """d(Q_i, X_j) in 80-digit decimals: |x - y| / range, overlap, "one"/"max"/"ignore"."""
    m = len(kinds)
    with localcontext() as ctx:
        ctx.prec = 80
        lo, hi = {}, {}
        for a in range(m):
            if kinds[a] == CONTINUOUS:
                vals = [Decimal(float(v)) for v in X[:, a] if not _missing(v)]
                lo[a], hi[a] = min(vals), max(vals)
        out = np.empty((len(Q), len(X)))
        for i, u in enumerate(Q):
            for j, v in enumerate(X):
                terms = []
                for a in range(m):
                    gone = _missing(u[a]) or _missing(v[a])
                    if gone and missing == "ignore":
                        continue
                    if kinds[a] == NOMINAL:
                        terms.append(Decimal(1 if gone or u[a] != v[a] else 0))
                        continue
                    span = hi[a] - lo[a]
                    if not gone:
                        terms.append(abs(Decimal(float(u[a])) - Decimal(float(v[a]))) / span)
                    elif missing == "max":
                        if _missing(u[a]) and _missing(v[a]):
                            terms.append(Decimal(1))
                        else:
                            x = Decimal(float(v[a] if _missing(u[a]) else u[a]))
                            terms.append(max(x - lo[a], hi[a] - x) / span)
                    else:
                        terms.append(Decimal(1))
                if not terms:
                    terms = [Decimal(1)] * m
                if p == math.inf:
                    out[i, j] = float(max(terms))
                    continue
                P = Decimal(float(p))
                tot = sum(t ** P for t in terms if t != 0) * m / len(terms)
                out[i, j] = float(tot ** (1 / P)) if tot != 0 else 0.0
    return out


#: non-negative with minimum 0, 5e-324 .. 1e300 (columns far from 0: tests/test_offsets.py)
MAGNITUDES = [0.0, 5e-324, 1e-310, 1e-300, 2e-300, 1e-150, 1.0, 3.0, 1e150, 1e300, 7e299]


def extreme_table(seed, n=40, nq=9, p_missing=0.15):
    rng = np.random.default_rng(seed)
    X = np.empty((n + nq, 4), dtype=object)
    X[:, 0] = rng.choice(MAGNITUDES, n + nq)
    X[:, 1] = rng.choice(MAGNITUDES[:7], n + nq)          # range 1: tiny differences count
    X[:, 2] = rng.choice(["a", "b", "c"], n + nq)
    X[:, 3] = rng.choice([1e-300, 5e-324, 0.0, 1e300], n + nq)
    miss = rng.random(X.shape) < p_missing
    miss[:2] = False
    X[miss] = None
    X[n // 2, :] = None                                  # an all-missing training row
    X[-1, :] = None                                      # and query
    X[n:, 2][::3] = "unseen"
    X[0, 0], X[0, 1], X[0, 3] = 0.0, 0.0, 0.0
    return X[:n], X[n:]


@pytest.mark.parametrize("p", P_VALUES)
@pytest.mark.parametrize("missing", POLICIES)
def test_extreme_magnitudes_every_path_exact(p, missing):
    X, Q = extreme_table(int(1000 * (p if p < 100 else 9)) + len(missing))
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL, CONTINUOUS]
    m = Metric("minkowski", p=p, missing=missing, nominal=[2]).fit(X)
    k = 7
    d, i = assert_paths_identical(m, Q, k)
    E = exact_distances(X, Q, kinds, p, missing)
    assert close(d, np.take_along_axis(E, i, 1)).all()
    assert close(d, np.sort(E, axis=1)[:, :k]).all()   # the k smallest, in order


# ------------------------------------------------------------------------------------
# ties, duplicates, all-missing rows, tiny reference sets with k = n

def tie_table(seed, n, nq, p_missing=0.2):
    rng = np.random.default_rng(seed)
    X = np.empty((n + nq, 4), dtype=object)
    X[:, 0] = rng.choice([0.0, 0.25, 0.5, 1.0], n + nq)    # exact binary fractions
    X[:, 1] = rng.choice([0.1, 0.2, 0.7, 1.3], n + nq)      # equal |x - y| from decimals
    X[:, 2] = rng.choice(["a", "b"], n + nq)
    X[:, 3] = rng.choice(["u", "v", "w"], n + nq)
    miss = rng.random(X.shape) < p_missing
    miss[:2] = False
    X[miss] = None
    X[n - 1, :] = None
    X[3:6] = X[2]                                            # duplicate rows
    X[n:, 3][::2] = "unseen"
    X[-1, :] = None
    return X[:n], X[n:]


@pytest.mark.parametrize("p", P_VALUES + (2.0,))
@pytest.mark.parametrize("missing", POLICIES)
def test_ties_duplicates_and_k_equal_n(p, missing):
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL, NOMINAL]
    for s, n in enumerate((6, 7, 43)):
        X, Q = tie_table(int(97 * (p if p < 100 else 11)) + 7 * s + len(missing), n, 6)
        m = Metric("minkowski", p=p, missing=missing, nominal=[2, 3]).fit(X)
        ref = Reference(kinds, p=p, missing=missing).fit([list(X[:, a]) for a in range(4)])
        Xr, Qr = [tuple(r) for r in X], [tuple(r) for r in Q]
        D = ref.pairwise(Qr, Xr)
        k = n if n < 10 else 17
        d, i = assert_paths_identical(m, Q, k)
        dref, iref = ref.kneighbors(Qr, Xr, k, D=D)
        assert close(d, dref).all()
        # the order may differ from the reference only between rows whose reference
        # distances are equal up to rounding
        for q, c in np.argwhere(i != iref):
            assert math.isclose(D[q, i[q, c]], D[q, iref[q, c]], rel_tol=1e-12)
        # exact ties keep index order
        tied = d[:, 1:] == d[:, :-1]
        assert tied.any()
        assert (i[:, 1:][tied] > i[:, :-1][tied]).all()
        # duplicate rows 2..5 get bit-identical distances
        P = m.pairwise(Q, X)
        assert (P[:, 2:6] == P[:, 2:3]).all()


@pytest.mark.parametrize("n", (1, 2, 3))
def test_one_to_three_reference_rows(n):
    """An index over 1..3 rows (a row and its duplicates, then a different row), k = 1..n;
    with n >= 2 also the metric fitted on those rows alone."""
    X, Q = tie_table(n, 6, 5)
    R = X[[0, 5, 4][:n]].copy()
    if n == 3:
        R[-1, 1] = 0.7
    for p in (0.5, 2.0, 7.0, math.inf):
        for missing in POLICIES:
            m = Metric("minkowski", p=p, missing=missing, nominal=[2, 3]).fit(X)
            P = m.pairwise(Q, R)
            for k in range(1, n + 1):
                exp = None
                for algo, leaf in (("brute", 32), ("kd_tree", 1), ("kd_tree", 5),
                                   ("ball_tree", 1), ("ball_tree", 5)):
                    try:
                        idx = NeighborsIndex(m, algorithm=algo, leaf_size=leaf).fit(R)
                    except ValueError as exc:
                        assert algo == "ball_tree" and "not exact" in str(exc)
                        continue
                    for nj in (1, 2):
                        d, i = idx.kneighbors(Q, k, n_jobs=nj)
                        exp = (d, i) if exp is None else exp
                        assert np.array_equal(d, exp[0]) and np.array_equal(i, exp[1])
                assert np.array_equal(exp[0], np.take_along_axis(P, exp[1], 1))
                if n >= 2:
                    mr = Metric("minkowski", p=p, missing=missing, nominal=[2, 3]).fit(R)
                    d, i = assert_paths_identical(mr, Q, k)
                    assert np.array_equal(d, np.take_along_axis(mr.pairwise(Q, R), i, 1))


# ------------------------------------------------------------------------------------
# radius: 0, and exactly each returned distance, inclusive on every path

@pytest.mark.parametrize("p", P_VALUES + (2.0,))
def test_radius_at_returned_distances(p):
    for s, (missing, agg) in enumerate([("one", "sum"), ("max", "mean"), ("ignore", "sum"),
                                        ("ignore", "mean")]):
        X, Q = tie_table(int(31 * (p if p < 100 else 5)) + s, 30, 6)
        m = Metric("minkowski", p=p, missing=missing, aggregate=agg,
                   nominal=[2, 3]).fit(X)
        P = m.pairwise(Q, X)
        d, i = m.kneighbors(Q, len(X))
        assert np.array_equal(np.take_along_axis(P, i, 1), d)
        radii = [0.0] + sorted(set(P.ravel().tolist()))[::4]
        for r in radii:
            for name, (D, I) in radius_paths(m, Q, r).items():
                for q in range(len(Q)):
                    exp = np.flatnonzero(P[q] <= r)
                    order = np.lexsort((exp, P[q, exp]))
                    assert np.array_equal(I[q], exp[order]), (name, r, q)
                    assert np.array_equal(D[q], P[q, exp[order]]), (name, r, q)


# ------------------------------------------------------------------------------------
# HDIST_ISA=baseline vs the best variant, in fresh processes

_ISA_SCRIPT = r"""
import sys, math, numpy as np
sys.path[:0] = [%r, %r, %r]
from test_review_edges import extreme_table, tie_table
from hdist import Metric, _kernels
out = [_kernels.isa()]
for p in (0.5, 0.3, 3.0, math.inf):
    for missing in ("ignore", "max"):
        X, Q = extreme_table(3)
        m = Metric("minkowski", p=p, missing=missing, nominal=[2]).fit(X)
        d, i = m.kneighbors(Q, 9, n_jobs=2)
        out.append(d.tobytes().hex() + i.tobytes().hex())
        X, Q = tie_table(4, 300, 40)
        m = Metric("minkowski", p=p, missing=missing, nominal=[2, 3]).fit(X)
        out.append(m.pairwise(Q, X, n_jobs=2).tobytes().hex())
print("\n".join(out))
"""


def test_isa_environment_baseline_equals_best():
    root = str(ROOT)
    tests = os.path.join(root, "tests")
    script = _ISA_SCRIPT % (root, tests, os.path.join(tests, "kernels"))
    outs = {}
    for isa in ("baseline", "best"):
        env = dict(os.environ, HDIST_ISA=isa)
        res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        outs[isa] = res.stdout.split("\n")
    assert outs["baseline"][0] == "baseline"
    assert outs["baseline"][1:] == outs["best"][1:]


# ------------------------------------------------------------------------------------
# KMedoids: duplicate points, k = 1, k = n

def test_kmedoids_duplicates_k1_and_kn():
    rng = np.random.default_rng(8)
    base = rng.random((6, 2))
    X = np.repeat(base, [5, 1, 3, 1, 2, 4], axis=0)     # duplicates everywhere
    n = len(X)
    m = Metric("euclidean").fit(X)
    D = m.pairwise(X)
    # k = 1: the medoid minimizes the total distance (smallest total among all rows)
    km = KMedoids(1, metric=m, random_state=0).fit(X)
    totals = D.sum(axis=0)
    assert math.isclose(km.inertia_, totals.min(), rel_tol=1e-12)
    assert (km.labels_ == 0).all()
    # k = n: every row is a medoid, zero loss
    km = KMedoids(n, metric=m, random_state=0).fit(X)
    assert sorted(km.medoid_indices_.tolist()) == list(range(n))
    assert km.inertia_ == 0.0
    # k = 6 distinct points among duplicates: zero loss is reachable and found
    km = KMedoids(6, metric=m, random_state=1, n_init=3).fit(X)
    assert km.inertia_ == 0.0
    assert len(set(map(tuple, X[km.medoid_indices_]))) == 6
    # the compiled swaps equal the plain eager-swap reference from every start
    for s in range(5):
        r = np.random.default_rng(s)
        for k in (1, 2, 4, n):
            med = r.choice(n, k, replace=False)
            order = r.permutation(n)
            a = eager_swaps(D, med, order)
            b = kernel_swaps(D, med, order, n_threads=2, chunk=5)
            assert np.array_equal(a[0], b[0]) and math.isclose(a[1], b[1], rel_tol=1e-12,
                                                              abs_tol=1e-300)


# ------------------------------------------------------------------------------------
# the matrix-product filter itself (the paths above fall back to the direct kernel where
# queries hold unseen values or the policy is "ignore"): ties, duplicates, missing values,
# radii equal to returned distances, tiny tiles and chunks

def _seen_queries(Q):
    Q = Q.copy()
    Q[:, 3][Q[:, 3] == "unseen"] = "u"
    return Q


@pytest.mark.parametrize("name", ("euclidean", "hvdm"))
@pytest.mark.parametrize("missing", ("one", "max"))
def test_filter_ties_and_radius_at_returned_distances(name, missing):
    from hdist._search import gemm_filter as _gemm
    from hdist._kernels import CRows
    X, Q = tie_table(len(name) + len(missing), 300, 40)
    Q = _seen_queries(Q)
    m = Metric(name, missing=missing, nominal=[2, 3]).fit(X, np.arange(len(X)) % 3)
    st, rows = m._fitted(), m.encode(Q)
    cQ, cR = CRows(rows), st.crows()
    tiles = dict(r_chunk=8, r_tile=64, q_block=16)
    for k in (1, 7, 300):
        d0, i0 = knn_rows(m, rows, k, False, 1, method="direct")
        for dtype, kw, nj in ((np.float32, {}, 2), (np.float32, tiles, 1),
                              (np.float64, {}, 1), (np.float64, tiles, 2)):
            res = _gemm.knn(st.plan, rows, st.train, cQ, cR, k, nj, dtype=dtype, **kw)
            assert res is not None
            assert np.array_equal(res[1], i0) and np.array_equal(res[0], d0)
    P = m.pairwise(Q, X)
    for r in [0.0] + sorted(set(P.ravel().tolist()))[::15]:
        for kw in ({}, tiles):
            D, I = _gemm.radius(st.plan, rows, st.train, cQ, cR, r, 2, **kw)
            for q in range(len(Q)):
                exp = np.flatnonzero(P[q] <= r)
                order = np.lexsort((exp, P[q, exp]))
                assert np.array_equal(I[q], exp[order]) and np.array_equal(D[q], P[q, exp[order]])


@pytest.mark.parametrize("missing", ("one", "max"))
def test_filter_extreme_magnitudes_equal_direct(missing):
    from hdist._search import gemm_filter as _gemm
    from hdist._kernels import CRows
    rng = np.random.default_rng(len(missing))
    X = rng.choice(MAGNITUDES, (200, 3)).astype(object)
    X[rng.random(X.shape) < 0.1] = None
    X[0] = 0.0
    Q = rng.choice(MAGNITUDES, (40, 3)).astype(object)
    Q[rng.random(Q.shape) < 0.1] = None
    m = Metric("euclidean", missing=missing).fit(X)
    st, rows = m._fitted(), m.encode(Q)
    for nj in (1, 2):
        res = _gemm.knn(st.plan, rows, st.train, CRows(rows), st.crows(), 9, nj)
        assert res is not None
        d0, i0 = knn_rows(m, rows, 9, False, 1, method="direct")
        assert np.array_equal(res[0], d0) and np.array_equal(res[1], i0)
    assert_paths_identical(m, Q, 9)


# ------------------------------------------------------------------------------------
# "ignore" with zero and tiny weights (known components of weight 0 only: every component
# counts 1), the mean, and exclude_self on every index

@pytest.mark.parametrize("p", (0.5, 0.3, 1.0, 3.0, math.inf))
def test_ignore_with_zero_and_tiny_weights(p):
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL, NOMINAL]
    for s, w in enumerate(([0, 1, 0, 2], [0, 0, 1, 0], [1e-20, 1e-20, 1, 1],
                           [3, 0.5, 0, 0])):
        for agg in ("sum", "mean"):
            X, Q = tie_table(int(13 * (p if p < 100 else 3)) + s, 60, 8, p_missing=0.35)
            m = Metric("minkowski", p=p, missing="ignore", weights=w, aggregate=agg,
                       nominal=[2, 3]).fit(X)
            ref = Reference(kinds, p=p, missing="ignore", weights=w,
                            aggregate=agg).fit([list(X[:, a]) for a in range(4)])
            D = ref.pairwise([tuple(r) for r in Q], [tuple(r) for r in X])
            d, i = assert_paths_identical(m, Q, 9)
            assert close(d, np.take_along_axis(D, i, 1)).all()
            assert close(d, np.sort(D, axis=1)[:, :9]).all()
            d0, i0 = m.kneighbors(None, 5, exclude_self=True, n_jobs=1)
            assert (i0 != np.arange(len(X))[:, None]).all()
            for algo, leaf in (("brute", 32), ("kd_tree", 1), ("kd_tree", 1000)):
                idx = NeighborsIndex(m, algorithm=algo, leaf_size=leaf).fit()
                for nj in (1, 2):
                    dd, ii = idx.kneighbors(None, 5, exclude_self=True, n_jobs=nj)
                    assert np.array_equal(dd, d0) and np.array_equal(ii, i0)


@pytest.mark.parametrize("p", (0.3, 2.0, math.inf))
@pytest.mark.parametrize("missing", ("one", "ignore"))
def test_public_entry_points_above_the_filter_threshold(p, missing):
    """Metric.kneighbors / radius_neighbors and NeighborsIndex("auto") with enough pairs for
    the filter (where the plan allows it) equal the direct kernel."""
    X, Q = tie_table(7, 2000, 200)
    Q = _seen_queries(Q)
    m = Metric("minkowski", p=p, missing=missing, nominal=[2, 3]).fit(X)
    rows = m.encode(Q)
    assert rows.n * m.n_train_ >= GEMM_MIN_PAIRS
    d0, i0 = knn_rows(m, rows, 10, False, 1, method="direct")
    idx = NeighborsIndex(m).fit()
    for d, i in (m.kneighbors(Q, 10, n_jobs=2), idx.kneighbors(Q, 10, n_jobs=2)):
        assert np.array_equal(d, d0) and np.array_equal(i, i0)
    r = float(np.median(d0))
    D0, I0 = radius_rows(m, rows, r, 1, "direct")
    for D, I in (m.radius_neighbors(Q, r, n_jobs=2), idx.radius_neighbors(Q, r, n_jobs=2)):
        assert all(np.array_equal(a, b) for a, b in zip(I, I0))
        assert all(np.array_equal(a, b) for a, b in zip(D, D0))
