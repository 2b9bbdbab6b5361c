"""Exactness of the KD-tree and ball tree (hdist.NeighborsIndex) against brute force.

docs/metrics.md §8: every algorithm returns the same ``(distances, indices)``, ties broken by
the smaller training index, for every thread count.  Trees are compared with
``array_equal`` to the brute-force kernel (the same compiled pair function computes every
distance, so equality is exact), and the brute-force answers are checked against the
plain reference of ``tests/reference.py`` where it covers the metric.
"""
from __future__ import annotations

import math
import pickle
import sys
import zlib

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import hdist
from hdist import Metric, NeighborsIndex
from hdist._search.index import ball_tree_refusal, auto_algorithm

from reference import CONTINUOUS, NOMINAL, reference_metric
from strategies import load_dataset, random_table, tables

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")
pytestmark = [pytestmark, pytest.mark.kernels, pytest.mark.sanitize, pytest.mark.trees]

P_VALUES = (0.5, 1.0, 2.0, 3.0, math.inf)
POLICIES = ("one", "max", "ignore", "symbol")
N_JOBS = (1, 2, 3)


def presets():
    """Every preset registered at test time (aliases once)."""
    seen = []
    for info in hdist.METRICS.values():
        if info.name not in seen:
            seen.append(info.name)
    return seen


def p_values(name):
    info = hdist.METRICS[name]
    if "p" not in info.params:
        return [info.defaults["p"]]
    if name == "fractional":
        return [0.5]
    return list(P_VALUES)


# ------------------------------------------------------------------------------------
# data

def mixed_data(seed, n, nq, n_cont=3, n_nom=3, p_missing=0.1, card=(2, 6), dup=0.3):
    """Object arrays (train, queries) with continuous columns (some values repeated, so
    that exact ties occur), nominal string columns, missing cells, and query rows with
    unseen values and values outside the training range."""
    rng = np.random.default_rng(seed)
    m = n_cont + n_nom
    X = np.empty((n + nq, m), dtype=object)
    for a in range(n_cont):
        scale = float(rng.choice([1e-3, 1.0, 50.0]))
        v = np.round(rng.normal(size=n + nq) * scale, 3)
        rep = rng.random(n + nq) < dup
        v[rep] = rng.choice(v[:max(1, n // 10)], size=int(rep.sum()))
        v[n:] *= rng.choice([1.0, 3.0], size=nq)      # some queries outside the range
        X[:, a] = v
    for a in range(n_cont, m):
        V = int(rng.integers(card[0], card[1] + 1))
        vals = np.array(["v%d" % i for i in range(V)], dtype=object)
        col = vals[rng.integers(0, V, n + nq)]
        unseen = rng.random(nq) < 0.15
        col[n:][unseen] = "new%d" % a
        X[:, a] = col
    miss = rng.random((n + nq, m)) < p_missing
    miss[:2] = False                                    # every column keeps a value
    X[miss] = None
    y = rng.integers(0, 3, n)
    return X[:n], X[n:], y, list(range(n_cont, m))


def nominal_data(seed, n, nq, m=6, card=3, p_missing=0.0):
    """Nominal-only rows with few values: exact ties everywhere."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, card, (n + nq, m)).astype(object)
    X = np.vectorize(lambda v: "abcdefgh"[v], otypes=[object])(X)
    if p_missing:
        miss = rng.random(X.shape) < p_missing
        miss[:2] = False
        X[miss] = None
    y = rng.integers(0, 2, n)
    return X[:n], X[n:], y, list(range(m))


def make_metric(name, p=None, missing=None, nominal=None, **extra):
    params = dict(extra)
    if p is not None and "p" in hdist.METRICS[name].params:
        params["p"] = p
    if missing is not None:
        params["missing"] = missing
    if nominal is not None:
        params["nominal"] = nominal
    return Metric(name, **params)


def fitted(name, X, y, **kw):
    info = hdist.METRICS[name]
    m = make_metric(name, **kw)
    return m.fit(X, y if (info.needs_y or info.continuous not in (None, "diff")) else None)


# ------------------------------------------------------------------------------------
# comparison helpers

def brute_index(metric, X=None):
    return NeighborsIndex(metric, algorithm="brute").fit(X)


def assert_same_knn(tree, brute, Q, k, n_jobs=N_JOBS, exclude_self=False):
    d0, i0 = brute.kneighbors(Q, k, exclude_self=exclude_self, n_jobs=1)
    for nj in n_jobs:
        d, i = tree.kneighbors(Q, k, exclude_self=exclude_self, n_jobs=nj)
        assert np.array_equal(i, i0), (tree.algorithm_, nj)
        assert np.array_equal(d, d0), (tree.algorithm_, nj)
    return d0, i0


def assert_same_radius(tree, brute, Q, r, n_jobs=(1, 2), exclude_self=False):
    D0, I0 = brute.radius_neighbors(Q, r, exclude_self=exclude_self, n_jobs=1)
    for nj in n_jobs:
        D, I = tree.radius_neighbors(Q, r, exclude_self=exclude_self, n_jobs=nj)
        assert len(D) == len(D0)
        for a, b, c, e in zip(D, D0, I, I0):
            assert np.array_equal(c, e)
            assert np.array_equal(a, b)


def check_all_algorithms(metric, Q, k=5, leaf_sizes=(1, 6, 40), radius=True,
                         n_jobs=N_JOBS):
    """KD-tree (and the ball tree where it is offered, else its refusal) equal brute
    force, for queries Q and for the indexed rows themselves with exclude_self."""
    brute = brute_index(metric)
    n = brute.n_train_
    k = min(k, n - 1)
    d0, _ = assert_same_knn(brute, brute, Q, k, n_jobs=(1,))
    reason = ball_tree_refusal(metric.plan_, metric.train_)
    algos = ["kd_tree"] + (["ball_tree"] if reason is None else [])
    if reason is not None:
        with pytest.raises(ValueError, match="not exact"):
            NeighborsIndex(metric, algorithm="ball_tree").fit()
    for algo in algos:
        for leaf in leaf_sizes:
            tree = NeighborsIndex(metric, algorithm=algo, leaf_size=leaf).fit()
            assert tree.algorithm_ == algo
            assert_same_knn(tree, brute, Q, k, n_jobs=n_jobs)
            assert_same_knn(tree, brute, None, k, n_jobs=n_jobs[:1], exclude_self=True)
            counts = tree.n_distance_evaluations_
            assert counts.shape == (n,) and (counts >= 0).all()
            if radius:
                finite = d0[np.isfinite(d0)]
                r = float(np.median(finite)) if finite.size else 1.0
                assert_same_radius(tree, brute, Q, r, n_jobs=n_jobs[:2])
    return algos


# ------------------------------------------------------------------------------------
# every preset, p, policy, with and without missing values

@pytest.mark.parametrize("name", presets())
@pytest.mark.parametrize("policy", POLICIES)
def test_presets_exact(name, policy):
    """Two values of p per (preset, policy), rotating so that every p meets every
    preset; the second case has no missing values."""
    info = hdist.METRICS[name]
    nominal_only = info.continuous is None
    ps = p_values(name)
    first = POLICIES.index(policy)
    for t in range(min(2, len(ps))):
        p = ps[(first + 2 * t) % len(ps)]
        seed = zlib.crc32(("%s-%s-%d" % (name, policy, t)).encode()) % 1000
        p_missing = 0.15 if t == 0 else 0.0
        if nominal_only:
            X, Q, y, nom = nominal_data(seed, 90, 12, m=4, card=4, p_missing=p_missing)
        else:
            X, Q, y, nom = mixed_data(seed, 90, 12, n_cont=2, n_nom=2, p_missing=p_missing)
        metric = fitted(name, X, y, p=p, missing=policy, nominal=nom)
        check_all_algorithms(metric, Q, k=4, leaf_sizes=(1, 7) if t else (3, 40),
                             n_jobs=(1, 3) if t else (2,))


@pytest.mark.parametrize("p", P_VALUES)
def test_weights_and_mean(p):
    X, Q, y, nom = mixed_data(5, 200, 20, n_cont=3, n_nom=3, p_missing=0.1)
    w = [0.0, 2.5, 1.0, 0.3, 0.0, 4.0]
    for policy in ("one", "ignore", "max"):
        for agg in ("sum", "mean"):
            metric = Metric("minkowski", p=p, weights=w, missing=policy, aggregate=agg,
                            nominal=nom).fit(X)
            check_all_algorithms(metric, Q, k=6, leaf_sizes=(5,), n_jobs=(1, 2))


def test_policy_per_kind():
    X, Q, y, nom = mixed_data(9, 250, 25, p_missing=0.2)
    for miss in ({"continuous": "ignore", "nominal": "symbol"},
                 {"continuous": "max", "nominal": "ignore"},
                 {"continuous": "max", "nominal": "symbol"}):
        for name in ("heom", "hvdm", "ivdm"):
            metric = fitted(name, X, y, missing=miss, nominal=nom)
            check_all_algorithms(metric, Q, k=5, leaf_sizes=(4,), n_jobs=(2,))


def test_nominal_ties():
    """Nominal-heavy data: thousands of exact ties, decided by the smaller index."""
    X, Q, y, nom = nominal_data(3, 800, 30, m=6, card=3)
    for name, kw in (("heom", {}), ("hvdm", {}), ("vdm", {}), ("hds", {}),
                     ("gower", {}), ("heom", {"p": math.inf})):
        metric = fitted(name, X, y, nominal=nom, **kw)
        for k in (1, 10, 60):
            check_all_algorithms(metric, Q, k=k, leaf_sizes=(8,), radius=(k == 10),
                                 n_jobs=(1, 3))


def test_duplicate_rows_split_by_position():
    """Identical rows cannot be split by value: leaves must still stay small and the
    answer must prefer the smallest indices."""
    X = np.array([[1.0, "a"]] * 300 + [[2.0, "b"]] * 300, dtype=object)
    metric = Metric("heom", nominal=[1]).fit(X)
    brute = brute_index(metric)
    for algo in ("kd_tree", "ball_tree"):
        tree = NeighborsIndex(metric, algorithm=algo, leaf_size=10).fit()
        assert tree.depth_ >= 5
        d, i = assert_same_knn(tree, brute, X[:3], 7)
        assert i[0].tolist() == list(range(7))
        if algo == "kd_tree":
            # exact ties at the k-th distance prune subtrees whose rows all have larger
            # indices: far fewer evaluations than rows
            tree.kneighbors(X[:1], 7)
            assert tree.n_distance_evaluations_[0] < 100


def test_embedded_high_cardinality_vdm(monkeypatch):
    """Nominal attributes above the table budget are embedded probability rows."""
    from hdist._core import statistics as _estimators
    monkeypatch.setattr(_estimators, "TABLE_BUDGET", 16)
    X, Q, y, nom = mixed_data(11, 300, 30, n_cont=2, n_nom=2, card=(8, 12), p_missing=0.1)
    for vdm, policy in (("N1", "one"), ("N2", "max"), ("N3", "ignore"), ("N2", "symbol")):
        metric = Metric("hvdm", vdm=vdm, missing=policy, nominal=nom).fit(X, y)
        assert metric.plan_.me == 2
        check_all_algorithms(metric, Q, k=5, leaf_sizes=(6,), n_jobs=(1, 2))


def test_many_values_overlap_buckets():
    """More than 64 nominal values: node value sets are kept modulo 64."""
    rng = np.random.default_rng(4)
    n = 800
    X = np.empty((n, 3), dtype=object)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.integers(0, 300, n).astype(str)
    X[:, 2] = rng.integers(0, 90, n).astype(str)
    Q = X[:30].copy()
    Q[:10, 1] = "unseen"
    for name in ("heom", "hvdm"):
        metric = fitted(name, X, rng.integers(0, 4, n), nominal=[1, 2])
        check_all_algorithms(metric, Q, k=5, leaf_sizes=(4,), n_jobs=(2,))


# ------------------------------------------------------------------------------------
# random tables (hypothesis)

@given(data=tables(min_rows=2, max_rows=30, n_queries=(1, 8), labels=True, max_cols=5),
       name=st.sampled_from(presets()), policy=st.sampled_from(POLICIES),
       p=st.sampled_from(P_VALUES), leaf=st.integers(1, 8), k=st.integers(1, 6))
def test_random_tables(data, name, policy, p, leaf, k):
    train, queries, y = data
    info = hdist.METRICS[name]
    # hds and add describe a nominal value by the other columns: they need two or more
    assume(train.m >= 2 or info.nominal not in ("hds", "add"))
    if info.continuous is None:
        # nominal-only presets: declare every column nominal
        nominal = list(range(train.m))
    else:
        nominal = train.nominal_positions()
    if name == "fractional":
        p = 0.5
    X = train.object_array()
    Q = queries.object_array()
    metric = make_metric(name, p=p, missing=policy, nominal=nominal)
    metric.fit(X, y)
    k = min(k, train.n)
    brute = brute_index(metric)
    algos = ["kd_tree"]
    if ball_tree_refusal(metric.plan_, metric.train_) is None:
        algos.append("ball_tree")
    for algo in algos:
        tree = NeighborsIndex(metric, algorithm=algo, leaf_size=leaf).fit()
        assert_same_knn(tree, brute, Q, k, n_jobs=(1, 2))
        d, _ = brute.kneighbors(Q, k)
        assert_same_radius(tree, brute, Q, float(d[:, -1].max()), n_jobs=(2,))


# ------------------------------------------------------------------------------------
# real datasets

def dataset_arrays(name, limit=None):
    ds = load_dataset(name)
    t = ds.table
    X = t.object_array()
    nom = t.nominal_positions()
    y = np.array(ds.y, dtype=object) if ds.y is not None else None
    if limit is not None:
        X, y = X[:limit], (None if y is None else y[:limit])
    return X, y, nom


@pytest.mark.parametrize("dataset,presets_", [
    ("credit-a", ("heom", "hvdm", "gower", "hds", "ivdm")),
    ("PimaIndiansDiabetes2", ("heom", "manhattan", "gower", "chebyshev")),
    ("Zoo", ("heom", "vdm", "add", "hvdm")),
    ("german", ("hvdm", "fractional", "dvdm")),
    ("modeldata_credit_data", ("heom", "hvdm")),
    ("adult_train", ("heom", "hvdm")),
])
@pytest.mark.needs_data
def test_real_datasets(dataset, presets_):
    X, y, nom = dataset_arrays(dataset, limit=1500)
    rng = np.random.default_rng(0)
    Q = X[rng.choice(len(X), 30, replace=False)]
    for t, name in enumerate(presets_):
        info = hdist.METRICS[name]
        nominal = list(range(X.shape[1])) if info.continuous is None else nom
        for policy in (("one", "max", "ignore")[t % 3], "symbol" if t % 2 else "max"):
            metric = make_metric(name, missing=policy, nominal=nominal)
            metric.fit(X, y if y is not None else None)
            check_all_algorithms(metric, Q, k=7, leaf_sizes=(16,), n_jobs=(1, 2))


@pytest.mark.needs_data
def test_real_data_against_reference():
    """The trees agree with the plain reference implementation (the documented formulas)."""
    X, y, nom = dataset_arrays("credit-a", limit=150)
    kinds = [NOMINAL if a in nom else CONTINUOUS for a in range(X.shape[1])]
    cols = [list(X[:, a]) for a in range(X.shape[1])]
    rows = list(map(tuple, X))
    for preset, params in (("heom", {}), ("gower", {}), ("heom", {"missing": "max"}),
                           ("hvdm", {"p": 1.0})):
        ref = reference_metric(preset, kinds, **params).fit(cols, list(y))
        metric = Metric(preset, nominal=nom, **params).fit(X, y)
        Dref = ref.pairwise(rows[:25], rows)
        for algo in ("kd_tree", "ball_tree"):
            if algo == "ball_tree" and ball_tree_refusal(metric.plan_, metric.train_):
                continue
            tree = NeighborsIndex(metric, algorithm=algo, leaf_size=8).fit()
            d, i = tree.kneighbors(X[:25], 6)
            # the k-th distances are the reference's, and each returned distance is
            # the reference distance of that pair
            kth = np.sort(Dref, axis=1)[:, :6]
            np.testing.assert_allclose(d, kth, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(d, np.take_along_axis(Dref, i, axis=1),
                                       rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------
# insertion, pickling, statistics

@pytest.mark.parametrize("algo", ["kd_tree", "ball_tree"])
def test_insert_equals_fresh_build(algo):
    X, Q, y, nom = mixed_data(21, 700, 30, p_missing=0.0 if algo == "ball_tree" else 0.1)
    # rows to insert: unseen nominal values, values beyond the fitted range
    extra = Q.copy()
    metric = Metric("hvdm", nominal=nom, missing="max").fit(X[:200], y[:200])
    idx = NeighborsIndex(metric, algorithm=algo, leaf_size=8).fit()
    new = []
    for chunk in (X[200:203], X[203:450], extra, X[450:]):
        new.append(idx.insert(chunk))
    allX = np.concatenate([X[:200], X[200:203], X[203:450], extra, X[450:]])
    assert np.array_equal(np.concatenate(new), np.arange(200, len(allX)))
    assert idx.n_train_ == len(allX)
    assert idx.depth_ <= 2 * max(1, idx.balanced_depth()) or \
        idx.depth_ <= idx._searcher.fresh_depth
    fresh = NeighborsIndex(metric, algorithm=algo, leaf_size=8).fit(allX)
    brute = NeighborsIndex(metric, algorithm="brute").fit(allX)
    queries = np.concatenate([Q, X[:10]])
    d0, i0 = assert_same_knn(fresh, brute, queries, 9)
    assert_same_knn(idx, brute, queries, 9)
    assert_same_knn(idx, brute, None, 4, n_jobs=(2,), exclude_self=True)
    assert_same_radius(idx, brute, queries, float(np.median(d0)))


def test_insert_small_batches_and_rebuild():
    """Many single-row insertions keep the tree exact; a tree deeper than twice the
    balanced depth is rebuilt."""
    X, Q, y, nom = mixed_data(8, 400, 20, p_missing=0.1)
    metric = Metric("heom", nominal=nom).fit(X)
    idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=4).fit(X[:20])
    for j in range(20, 400):
        idx.insert(X[j:j + 1])
        assert idx.depth_ <= max(2 * max(1, idx.balanced_depth()), idx._searcher.fresh_depth)
    brute = NeighborsIndex(metric, algorithm="brute").fit(X)
    assert_same_knn(idx, brute, Q, 6)


def test_insert_into_ball_tree_refused_keeps_index():
    X, Q, y, nom = mixed_data(2, 300, 10, p_missing=0.0)
    metric = Metric("heom", nominal=nom).fit(X)
    idx = NeighborsIndex(metric, algorithm="ball_tree").fit()
    bad = Q.copy()
    bad[0, 0] = None       # a missing continuous value under "one"
    with pytest.raises(ValueError, match="ball tree.*missing"):
        idx.insert(bad)
    assert idx.n_train_ == 300
    auto = NeighborsIndex(metric, algorithm="auto").fit()
    auto.insert(bad)
    assert auto.algorithm_ != "ball_tree" and auto.n_train_ == 310


def test_auto_switches_as_rows_arrive():
    X, Q, y, nom = mixed_data(12, 6000, 20, n_cont=2, n_nom=1, p_missing=0.0)
    metric = Metric("heom", nominal=nom).fit(X)
    idx = NeighborsIndex(metric).fit(X[:100])
    assert idx.algorithm_ == "brute"
    idx.insert(X[100:])
    assert idx.algorithm_ == auto_algorithm(metric.plan_, len(X)) == "kd_tree"
    assert_same_knn(idx, brute_index(metric, X), Q, 5, n_jobs=(2,))


@pytest.mark.parametrize("algo", ["brute", "kd_tree", "ball_tree"])
def test_pickle_round_trip(algo):
    X, Q, y, nom = mixed_data(6, 300, 20, p_missing=0.0)
    idx = NeighborsIndex("hvdm", algorithm=algo, leaf_size=10).fit(X, y)
    d, i = idx.kneighbors(Q, 5)
    back = pickle.loads(pickle.dumps(idx))
    d2, i2 = back.kneighbors(Q, 5)
    assert np.array_equal(d, d2) and np.array_equal(i, i2)
    # still insertable after the round trip, with the same unseen-value codes
    back.insert(Q[:5])
    idx.insert(Q[:5])
    assert np.array_equal(back.kneighbors(Q, 5)[1], idx.kneighbors(Q, 5)[1])


def test_unseen_values_in_inserted_rows_and_queries():
    """An unseen value in an inserted row equals the same unseen value in a query."""
    X = np.array([[0.0, "a"], [1.0, "b"], [2.0, "a"], [3.0, "b"]] * 20, dtype=object)
    metric = Metric("heom", nominal=[1]).fit(X)
    for algo in ("brute", "kd_tree", "ball_tree"):
        idx = NeighborsIndex(metric, algorithm=algo, leaf_size=2).fit()
        idx.insert(np.array([[10.0, "zz"], [10.0, "yy"]], dtype=object))
        d, i = idx.kneighbors(np.array([[10.0, "zz"], [10.0, "yy"]], dtype=object), 1)
        assert i[:, 0].tolist() == [80, 81] and d[:, 0].tolist() == [0.0, 0.0]


def test_distance_evaluations_show_pruning():
    rng = np.random.default_rng(1)
    n = 6000
    X = np.column_stack([rng.normal(size=n), rng.normal(size=n),
                         rng.integers(0, 4, n).astype(str)]).astype(object)
    X[:, 0] = X[:, 0].astype(float)
    X[:, 1] = X[:, 1].astype(float)
    metric = Metric("heom", nominal=[2]).fit(X)
    kd = NeighborsIndex(metric, algorithm="kd_tree").fit()
    kd.kneighbors(X[:100], 5)
    assert kd.n_distance_evaluations_.shape == (100,)
    assert kd.n_distance_evaluations_.mean() < n / 20
    brute = NeighborsIndex(metric, algorithm="brute").fit()
    brute.kneighbors(X[:100], 5)
    assert (brute.n_distance_evaluations_ == n).all()
    assert kd.tree_nbytes_ <= 2 * kd.data_nbytes_


# ------------------------------------------------------------------------------------
# ball tree refusals and the two-sided row bound

def test_ball_tree_refusals():
    X, Q, y, nom = mixed_data(1, 100, 5, p_missing=0.2)
    Xc, _, _, _ = mixed_data(1, 100, 5, p_missing=0.0)
    Xcm = Xc.copy()
    Xcm[5:40:3, 0] = None       # missing continuous values only
    cases = [
        (Metric("fractional", nominal=nom).fit(Xc), "p = 0.5 < 1"),
        (Metric("gower", nominal=nom).fit(Xc), "'ignore'"),
        (Metric("heom", nominal=nom).fit(X), "missing values in the indexed rows"),
        (Metric("hvdm", nominal=nom, vdm="N3", missing={"continuous": "max"}).fit(Xcm, y),
         None),
    ]
    for metric, why in cases:
        reason = ball_tree_refusal(metric.plan_, metric.train_)
        if why is None:
            assert reason is None
            NeighborsIndex(metric, algorithm="ball_tree").fit()
            continue
        assert why in reason
        with pytest.raises(ValueError, match="ball_tree"):
            NeighborsIndex(metric, algorithm="ball_tree").fit()
        auto = NeighborsIndex(metric, algorithm="auto").fit()
        assert auto.algorithm_ in ("brute", "kd_tree")
    # VDM N3 with 3 classes may reach sqrt(6) > 2: missing nominal values are refused
    Xn = Xc.copy()
    Xn[::7, nom[0]] = None
    yn = np.where(np.equal(Xc[:, nom[0]], "v0"), 0, np.where(np.equal(Xc[:, nom[0]], "v1"),
                                                             1, 2))
    metric = Metric("hvdm", nominal=nom, vdm="N3").fit(Xn, yn)
    assert float(np.max(metric.plan_.components[nom[0]].table)) > 2
    assert "> 2" in ball_tree_refusal(metric.plan_, metric.train_)


def test_ball_tree_queries_with_missing_values():
    """Queries missing a value where |x - y| / δ exceeds 2 among the indexed rows: the
    ball tree must not use the query as a triangle's middle point."""
    rng = np.random.default_rng(0)
    n = 2000
    x0 = np.concatenate([rng.normal(size=n - 20), rng.normal(size=20) * 60])
    X = np.column_stack([x0, rng.normal(size=n), rng.integers(0, 3, n)]).astype(object)
    metric = Metric("hvdm", nominal=[2], normalization="4std").fit(X, rng.integers(0, 2, n))
    assert (x0.max() - x0.min()) / metric.delta_["0"] > 2
    Q = X[rng.choice(n, 60)].copy()
    Q[:, 0] = None
    brute = brute_index(metric)
    tree = NeighborsIndex(metric, algorithm="ball_tree", leaf_size=8).fit()
    assert_same_knn(tree, brute, Q, 8, n_jobs=(1, 2))
    assert_same_radius(tree, brute, Q, 0.6)


# ------------------------------------------------------------------------------------
# API errors and conventions

def test_errors():
    X, Q, y, nom = mixed_data(0, 50, 5)
    with pytest.raises(ValueError, match="algorithm"):
        NeighborsIndex("heom", algorithm="kdtree")
    with pytest.raises(ValueError, match="leaf_size"):
        NeighborsIndex("heom", leaf_size=0)
    with pytest.raises(ValueError, match="leaf_size must be >= 1 and <= %d" % sys.maxsize):
        NeighborsIndex("heom", leaf_size=2 ** 63)     # no C integer overflow at fit
    with pytest.raises(TypeError, match="leaf_size"):
        NeighborsIndex("heom", leaf_size=2.5)
    with pytest.raises(TypeError, match="metric"):
        NeighborsIndex(3)
    with pytest.raises(ValueError, match="metric_params"):
        NeighborsIndex(Metric("heom").fit(X), metric_params={"p": 1})
    with pytest.raises(RuntimeError, match="not fitted"):
        NeighborsIndex("heom").kneighbors(Q)
    with pytest.raises(ValueError, match="X is needed"):
        NeighborsIndex("heom").fit()
    idx = NeighborsIndex("heom", algorithm="kd_tree", metric_params={"nominal": nom}).fit(X)
    with pytest.raises(ValueError, match="larger than"):
        idx.kneighbors(Q, 51)
    with pytest.raises(ValueError, match="exclude_self"):
        idx.kneighbors(Q, 3, exclude_self=True)
    with pytest.raises(ValueError, match="r must"):
        idx.radius_neighbors(Q, -1.0)
    with pytest.raises(ValueError, match="columns"):
        idx.insert(X[:, :3])
    assert idx.n_train_ == 50


def test_return_conventions_match_metric():
    X, Q, y, nom = mixed_data(4, 120, 10)
    metric = Metric("heom", nominal=nom).fit(X)
    idx = NeighborsIndex(metric, algorithm="kd_tree").fit()
    d, i = metric.kneighbors(Q, 4)
    d2, i2 = idx.kneighbors(Q, 4)
    assert np.array_equal(d, d2) and np.array_equal(i, i2)
    assert np.array_equal(idx.kneighbors(Q, 4, return_distance=False), i)
    D, I = metric.radius_neighbors(Q, 0.5)
    D2, I2 = idx.radius_neighbors(Q, 0.5)
    assert D2.dtype == object and I2.dtype == object and len(I2) == len(Q)
    assert all(np.array_equal(a, b) for a, b in zip(I, I2))
    I3 = idx.radius_neighbors(Q, 0.5, return_distance=False)
    assert all(np.array_equal(a, b) for a, b in zip(I, I3))
    for r in (0.0, math.inf):
        assert_same_radius(idx, brute_index(metric), Q, r)
    # an unfitted Metric passed in is left untouched; a fitted one is used as it is
    m = Metric("heom", nominal=nom)
    NeighborsIndex(m).fit(X)
    assert not hasattr(m, "plan_")
    assert NeighborsIndex(metric).fit().metric_ is metric


def test_auto_rule():
    """Small indexes: brute force; few dimensions: KD-tree; otherwise a pilot decides,
    seeing structure the dimension alone does not show.  Never the ball tree."""
    rng = np.random.default_rng(0)
    n = 4000
    U = rng.random((n, 16))
    S = rng.random((n, 2)) @ rng.normal(size=(2, 12))      # 12 columns, 2-d structure
    cases = [(U, "euclidean", "brute"), (U, "manhattan", "brute"),
             (S, "euclidean", "kd_tree"), (S[:1000], "euclidean", "brute"),
             (U[:, :3], "manhattan", "kd_tree")]
    for X, name, expect in cases:
        metric = Metric(name).fit(X)
        idx = NeighborsIndex(metric).fit()
        assert idx.algorithm_ == expect, (name, X.shape)
        assert auto_algorithm(metric.plan_, len(X), idx._pilot) == expect
        assert_same_knn(idx, brute_index(metric), X[:20] + 0.01, 5, n_jobs=(2,))


def test_block_size_does_not_matter():
    from hdist._kernels import trees as _trees
    X, Q, y, nom = mixed_data(13, 400, 50, p_missing=0.1)
    metric = Metric("hvdm", nominal=nom, missing="max").fit(X, y)
    for algo in ("kd_tree", "ball_tree"):
        idx = NeighborsIndex(metric, algorithm=algo, leaf_size=5).fit()
        rows = metric.encode(Q)
        two = idx._searcher._two_sided(rows)
        ref = _trees.knn(*idx._searcher._args(rows), 7, 2, False, two)
        for block in (1, 3, 64):
            got = _trees.knn(*idx._searcher._args(rows), 7, 3, False, two, block)
            assert all(np.array_equal(a, b) for a, b in zip(ref, got))
            rd = _trees.radius(*idx._searcher._args(rows), 0.3, 1.0, 2, False, two, block)
            r0 = _trees.radius(*idx._searcher._args(rows), 0.3, 1.0, 1, False, two)
            for a, b in zip(rd[:2], r0[:2]):
                assert all(np.array_equal(u, v) for u, v in zip(a, b))


def test_kd_tree_builds_on_every_numpy():
    """The first call of the quick start on numpy >= 2.5: ``leaf_major`` read ``order[-1]``
    of a numpy array in code compiled with ``wraparound=False``, so Cython handed -1 to
    numpy's item slot, which numpy 2.5 no longer wraps (IndexError: index -33 is out of
    bounds).  Every KD-tree build failed; the neighbours are now those of brute force."""
    X = np.random.default_rng(0).normal(size=(3000, 3))
    m = Metric("euclidean").fit(X)
    d, i = m.kneighbors(X[:5], 2)
    assert m.search_["algorithm"] == "kd_tree"
    db, ib = NeighborsIndex(m, algorithm="brute").fit(X).kneighbors(X[:5], 2)
    assert np.array_equal(i, ib) and np.array_equal(d, db)
    assert np.array_equal(i[:, 0], np.arange(5))
