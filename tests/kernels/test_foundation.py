"""Differential tests of hdist's foundation against the plain reference in reference.py.

Every public function of the foundation (``Metric.fit``, ``pairwise`` with and without
``Y`` and ``out=``, ``kneighbors`` with ``Q=None`` and ``exclude_self``,
``radius_neighbors``, ``explain``, ``value_distances``) is compared with the reference,
which is written from docs/metrics.md alone, for every preset of its §7 and the
parameters of its §2-6, on hypothesis tables, on fixed parameter sweeps and on the real
datasets.  Distances agree to ``rtol = 1e-10``; neighbor indices agree exactly wherever no
other candidate is within rounding of a tie, and exactly everywhere on data whose
distances are exact in floating point.

``get_metric`` and the parameters' checks are tested in tests/search/test_get_metric.py,
the input containers and kind inference in tests/core/test_schema_containers.py, the
printed explanation in tests/search/test_explanation_text.py, what ``import hdist``
loads in tests/faces/test_imports.py.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

import hdist
from hdist import Metric
from hdist import _kernels
from hdist._search.searchers import brute_knn

import strategies as S
from reference import (CONTINUOUS, INF, MISSING_SYMBOL, NEEDS_Y, NOMINAL,
                       reference_metric)

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = [pytest.mark.kernels, pytest.mark.sanitize,
              pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")]

pd = pytest.importorskip("pandas")

RTOL = 1e-10
TIE = 1e-9          # candidates closer than this (relative) count as tied
JOBS = 1            # threads of the differential checks (thread counts: invariance tests)

PRESETS = ["heom", "hvdm", "vdm", "minkowski", "euclidean", "manhattan", "chebyshev",
           "fractional", "gower"]
WITH_P = {"heom", "hvdm", "vdm", "minkowski", "fractional", "gower"}
WITH_DELTA = {"heom", "hvdm", "minkowski", "euclidean", "manhattan", "chebyshev",
              "fractional", "gower"}
WITH_VDM = {"hvdm", "vdm"}
REF_KEYS = ("p", "weights", "normalization", "trim", "vdm", "missing", "unseen",
            "aggregate")


# ======================================================================================
# helpers


def close(got, want, rtol=RTOL):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.abs(want).max())) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12 * scale)


def package_input(table, container):
    """``(X, nominal)``: the table in a container, and the ``nominal=`` it needs."""
    if container == "frame":
        return table.frame(), table.override()
    if container == "object":
        return table.object_array(), table.nominal_positions()
    if container == "mask":
        return table.object_array(), [k == NOMINAL for k in table.kinds]
    if container == "names":
        return table.frame(), table.nominal_names()
    if container == "arrow":
        return table.arrow(), table.override()
    if container == "polars":
        return table.polars(), table.override()
    if container == "structured":
        return table.structured_array(), table.override()
    raise AssertionError(container)


def continuous_for(preset, table, container):
    """``continuous=`` naming the table's continuous columns in ``container`` (declared:
    small integer values draw no ColumnKindWarning); none for the nominal-only presets and
    a boolean mask (which gives every column's kind)."""
    if hdist.METRICS[preset].continuous is None or container == "mask":
        return {}
    cont = table.continuous_names()
    if container == "object":
        cont = [table.names.index(c) for c in cont]
    return {"continuous": cont}


def as_container(table, container):
    return package_input(table, container)[0]


def column_names(table, container):
    """The column names the package sees: numpy 2-D arrays name columns "0", "1", ..."""
    if container in ("object", "mask"):
        return [str(a) for a in range(table.m)]
    return list(table.names)


def weights_for(spec, table, names):
    """A concrete weight setting: (package form, reference list)."""
    m = table.m
    if spec is None:
        return None, None
    if spec == "array":
        w = [(0.5, 2.0, 0.0, 1.5, 3.0, 1.0, 0.25)[a % 7] for a in range(m)]
        if not any(w):
            w[0] = 1.0
        return np.array(w), w
    if spec == "dict":
        d = {names[0]: 3.0}
        if m > 1:
            d[names[-1]] = 0.0
        return d, [d.get(nm, 1.0) for nm in names]
    raise AssertionError(spec)


def fit_both(preset, table, y=None, container="frame", weights=None, **params):
    """The package metric and the reference metric, both fitted on ``table``."""
    X, nominal = package_input(table, container)
    w_pkg, w_ref = weights_for(weights, table, column_names(table, container))
    pkg_params = {k: v for k, v in params.items() if v is not None}
    if w_pkg is not None:
        pkg_params["weights"] = w_pkg
    m = Metric(preset, nominal=nominal, **continuous_for(preset, table, container),
               **pkg_params).fit(X, y)
    ref_params = {k: v for k, v in pkg_params.items() if k in REF_KEYS}
    if w_ref is not None:
        ref_params["weights"] = w_ref
    r = reference_metric(preset, table.kinds, **ref_params).fit(table.columns, y)
    return m, r


def check_knn(D, I, R, k, exclude_self=False):
    """Package k-NN ``(D, I)`` against the reference distance matrix ``R``: distances
    close; every index's reference distance is its returned distance; indices equal to
    the reference's (distance, index) order wherever no rival is within ``TIE``."""
    nq, n = R.shape
    assert D.shape == I.shape == (nq, k)
    R = np.array(R, dtype=np.float64)
    if exclude_self:
        R[np.arange(nq), np.arange(nq)] = np.inf
    cols = np.arange(n)
    order = np.array([np.lexsort((cols, R[q]))[:k] for q in range(nq)]).reshape(nq, k)
    ref_d = np.take_along_axis(R, order, axis=1)
    close(D, ref_d)
    close(np.take_along_axis(R, I, axis=1), D)
    for q in range(nq):
        assert len(set(I[q].tolist())) == k
        # rivals of each reference position: candidates within TIE of its distance
        gap = np.abs(R[q][None, :] - ref_d[q][:, None])
        n_rivals = (gap <= TIE * np.maximum(1.0, np.abs(ref_d[q]))[:, None]).sum(axis=1)
        alone = n_rivals == 1
        assert np.array_equal(I[q][alone], order[q][alone]), (q, I[q], order[q])
    # exactly equal returned distances are ordered by index
    same = D[:, 1:] == D[:, :-1]
    assert np.all(I[:, 1:][same] > I[:, :-1][same])


def radii_between(R, count=4):
    """Radii in the middle of gaps (> 1e-6 relative) between the sorted distances of
    the whole matrix ``R``, so that rounding cannot move a row across one; plus 0 and a
    radius above every distance."""
    vals = np.unique(R)
    mids = [(a + b) / 2 for a, b in zip(vals[:-1], vals[1:])
            if b - a > 1e-6 * max(1.0, abs(b))]
    step = max(1, len(mids) // count)
    return [0.0] + mids[::step][:count] + [float(vals[-1]) * 2 + 1.0]


def check_radius(m, Q, R, radius_list, exclude_self=False):
    for r in radius_list:
        D, I = m.radius_neighbors(Q, r, exclude_self=exclude_self, n_jobs=JOBS)
        assert len(D) == len(I) == R.shape[0]
        for q in range(R.shape[0]):
            want = sorted((R[q, j], j) for j in range(R.shape[1])
                          if R[q, j] <= r and not (exclude_self and j == q))
            assert sorted(I[q].tolist()) == sorted(j for _, j in want), (q, r)
            close(D[q], [d for d, _ in want])
            close(R[q, I[q]], D[q])
            assert np.all(np.diff(D[q]) >= 0)


def check_explain(m, r, Xa, Xb, rows_a, rows_b, pairs):
    """``explain`` of row pairs: terms, skipped flags, reduced and distance equal the
    reference's; the terms add up (max for p = inf) to ``reduced``."""
    for i, j in pairs:
        ex = m.explain(_row(Xa, i), _row(Xb, j))
        terms, skipped, reduced = r.terms(rows_a[i], rows_b[j])
        close(ex.terms, terms)
        assert ex.skipped.tolist() == skipped
        close(ex.reduced, reduced)
        combined = ex.terms.max() if r.p == INF else ex.terms.sum()
        close(combined, ex.reduced)
        close(ex.distance, r.distance(rows_a[i], rows_b[j]))
        assert set(ex.to_dict()) == set(m.feature_names_in_)


def _row(X, i):
    """Row ``i`` of a container as a one-row table."""
    if hasattr(X, "iloc"):
        return X.iloc[[i]]
    if hasattr(X, "slice"):            # pyarrow / polars
        return X.slice(i, 1)
    return X[i:i + 1]


def check_value_tables(m, r, table):
    for a in table.nominal_positions():
        name = m.feature_names_in_[a]
        got = m.value_distances(name)
        labels, T = r.value_table(a)
        pos = {("<missing>" if lab is MISSING_SYMBOL else lab): k
               for k, lab in enumerate(got.index)}
        assert len(pos) == len(labels)
        idx = [pos["<missing>" if lab is MISSING_SYMBOL else lab] for lab in labels]
        close(got.to_numpy()[np.ix_(idx, idx)], T)
        # position and name give the same table
        assert got.equals(m.value_distances(a))


def check_everything(m, r, train, queries, container, k_values=(1, 3), full=True):
    """Every public function of a fitted metric against the fitted reference
    (``full=False``: a shorter round of the same checks)."""
    X = as_container(train, container)
    Q = as_container(queries, container)
    rows_t, rows_q = train.rows(), queries.rows()
    n = train.n
    Rq = r.pairwise(rows_q, rows_t)
    Rt = r.pairwise(rows_t)
    # pairwise: Y given, Y = None (symmetric path), reduced
    Dq = m.pairwise(Q, X, n_jobs=JOBS)
    close(Dq, Rq)
    Dt = m.pairwise(X, n_jobs=JOBS)
    close(Dt, Rt)
    assert np.array_equal(Dt, Dt.T)
    red = m.pairwise(Q, X, reduced=True, n_jobs=JOBS)
    close(red, r.pairwise(rows_q, rows_t, reduced=True))
    if full:
        assert np.array_equal(Dt, m.pairwise(X, X, n_jobs=JOBS))
        out = np.full(Dq.shape, -1.0)
        assert m.pairwise(Q, X, out=out, n_jobs=JOBS) is out
        assert np.array_equal(out, Dq)
    # k-NN: explicit queries, Q = None with and without exclude_self
    ks = sorted({min(kk, n - 1) for kk in k_values if kk >= 1} | {n - 1}) if full \
        else [min(3, n - 1)]
    for k in ks:
        D, I = m.kneighbors(Q, k, n_jobs=JOBS)
        check_knn(D, I, Rq, k)
        check_own_order(Dq, red, D, I, k)
        D, I = m.kneighbors(None, k, exclude_self=True, n_jobs=JOBS)
        check_knn(D, I, Rt, k, exclude_self=True)
    D, I = m.kneighbors(None, n, n_jobs=JOBS)
    check_knn(D, I, Rt, n)
    check_own_order(Dt, m.pairwise(X, reduced=True, n_jobs=JOBS), D, I, n)
    if full:
        D, I = m.kneighbors(Q, n, n_jobs=JOBS)
        check_knn(D, I, Rq, n)
    # radius neighbors
    check_radius(m, Q, Rq, radii_between(Rq, 4 if full else 2))
    if full:
        check_radius(m, None, Rt, radii_between(Rt, 2), exclude_self=True)
    # explain and value tables
    pairs = [(0, 0), (queries.n - 1, n - 1), (0, n // 2)]
    check_explain(m, r, Q, X, rows_q, rows_t, pairs if full else pairs[1:2])
    check_explain(m, r, X, X, rows_t, rows_t, [(0, 0), (1, n - 1)] if full else [(1, 1)])
    check_value_tables(m, r, train)


def check_own_order(true, red, D, I, k):
    """The k-NN result is the first k rows of the package's own pairwise matrix by
    (true distance, index), identical bit for bit -- the tie rule is decided on the
    distance returned: two reduced values 1 ulp apart can share one true distance -- and
    the reduced values never rank a row after one whose true distance is larger."""
    n = red.shape[1]
    for q in range(red.shape[0]):
        sel = np.lexsort((np.arange(n), true[q]))[:k]
        assert I[q].tolist() == sel.tolist()
        assert np.array_equal(D[q], true[q, sel])
        rest = np.setdiff1d(np.arange(n), sel)
        if rest.size and k:
            farther = true[q, rest][None, :] > true[q, sel][:, None]
            assert not np.any(farther & (red[q, rest][None, :] < red[q, sel][:, None]))


# ======================================================================================
# the reference itself, on cases worked by hand


def test_reference_hand_cases():
    """The reference reproduces values worked out by hand (HEOM, VDM N1/N2/N3, δ)."""
    cols = [[0.0, 1.0, 4.0], ["a", "b", "a"]]
    r = reference_metric("heom", [CONTINUOUS, NOMINAL]).fit(cols)
    rows = list(zip(*cols))
    # rows 0, 1: |0 - 1| / 4 = 0.25 and a != b -> sqrt(0.0625 + 1)
    assert r.distance(rows[0], rows[1]) == pytest.approx(math.sqrt(1.0625), rel=1e-15)
    # rows 0, 2: 4 / 4 = 1, equal nominal -> 1
    assert r.distance(rows[0], rows[2]) == 1.0
    # VDM on a nominal column: value a -> classes [0, 1], value b -> [1]
    y = [0, 1, 1]
    v = reference_metric("vdm", [NOMINAL]).fit([cols[1]], y)
    # P(.|a) = (1/2, 1/2), P(.|b) = (0, 1): N1 = 1/2 + 1/2 = 1
    assert v.distance(("a",), ("b",)) == pytest.approx(1.0)
    v2 = reference_metric("vdm", [NOMINAL], vdm="N2", p=2).fit([cols[1]], y)
    assert v2.distance(("a",), ("b",)) == pytest.approx(math.sqrt(0.5))
    v3 = reference_metric("vdm", [NOMINAL], vdm="N3", p=2).fit([cols[1]], y)
    assert v3.distance(("a",), ("b",)) == pytest.approx(math.sqrt(2 * 0.5))
    # unseen value: P = 0 -> N1 distance to b is 1; with priors (1/3, 2/3): 1/3 + 1/3
    assert v.distance(("new",), ("b",)) == pytest.approx(1.0)
    vp = reference_metric("vdm", [NOMINAL], unseen="prior").fit([cols[1]], y)
    assert vp.distance(("new",), ("b",)) == pytest.approx(2 / 3)
    # normalizations of [1, 2, 4, 7]: range 6; 4std = 4 sqrt(7); mean |diff| = 20 / 6
    from reference import normalization_factor
    x = [1.0, 2.0, 4.0, 7.0, None]
    assert normalization_factor(x, "range") == 6.0
    assert normalization_factor(x, "4std") == pytest.approx(4 * math.sqrt(7.0))
    assert normalization_factor(x, "mean_diff") == pytest.approx(20 / 6)
    assert normalization_factor(x, "trimmed_range", 0.25) == pytest.approx(
        np.quantile([1, 2, 4, 7], 0.75) - np.quantile([1, 2, 4, 7], 0.25))
    assert normalization_factor([3.0, 3.0], "range") == 1.0
    assert normalization_factor([3.0], "4std") == 1.0


# ======================================================================================
# deterministic parameter sweeps: every pair of parameter values of docs/metrics.md §2-6 for
# every preset (a greedy all-pairs covering array), on a fixed table with missing
# values, an all-missing row, a constant column and unseen query values

P_VALUES = [None, 0.5, 1.0, 2.0, 3.0, INF]
NORMS = [("range", None), ("trimmed_range", None), ("trimmed_range", 0.2),
         ("trimmed_range", 0.0), ("4std", None), ("mean_diff", None), ("none", None)]
MISSING = ["one", "max", "ignore", "symbol",
           {"continuous": "max", "nominal": "symbol"},
           {"continuous": "ignore", "nominal": "one"}, {"nominal": "ignore"},
           {"continuous": "symbol", "nominal": "max"}]


def factors_for(preset):
    f = {"missing": MISSING, "weights": [None, "array", "dict"],
         "aggregate": [None, "sum", "mean"]}
    if preset in WITH_P:
        f["p"] = [None, 0.25, 0.5, 0.9] if preset == "fractional" else P_VALUES
    if preset in WITH_DELTA:
        f["normalization"] = NORMS
    if preset in WITH_VDM:
        f["vdm"] = [None, "N1", "N2", "N3"]
        f["unseen"] = [None, "zero", "prior"]
    return f


def one_each(factors):
    """A short list of combinations in which every value of every factor occurs."""
    longest = max(len(v) for v in factors.values())
    return [{k: v[(i * 5 + j) % len(v)] if i >= len(v) else v[i]
             for j, (k, v) in enumerate(factors.items())} for i in range(longest)]


def all_pairs(factors):
    """A short list of combinations covering every pair of values of two factors."""
    names = list(factors)
    size = {n: len(factors[n]) for n in names}

    def key(a, i, b, j):
        return (a, i, b, j) if names.index(a) < names.index(b) else (b, j, a, i)

    todo = {key(a, i, b, j) for a, b in itertools.combinations(names, 2)
            for i in range(size[a]) for j in range(size[b])}
    combos = []
    while todo:
        a, i, b, j = min(todo)
        pick = {a: i, b: j}
        for c in names:
            if c not in pick:
                pick[c] = max(range(size[c]), key=lambda v: (
                    sum(key(x, pick[x], c, v) in todo for x in pick), -v))
        for x, z in itertools.combinations(names, 2):
            todo.discard(key(x, pick[x], z, pick[z]))
        combos.append({c: factors[c][pick[c]] for c in names})
    return combos


def sweep_params(combo):
    params = dict(combo)
    norm = params.pop("normalization", None)
    if norm is not None:
        params["normalization"] = norm[0]
        if norm[1] is not None:
            params["trim"] = norm[1]
    return params


MIXED_STYLES = ["float", "object", "Int64", "category", "ordered", "code", "float",
                "boolean", "offset"]
NOMINAL_STYLES = ["object", "category", "code", "boolean", "string"]


def sweep_tables(preset):
    styles = NOMINAL_STYLES if preset == "vdm" else MIXED_STYLES
    train, queries = S.random_table(11, 14, styles, p_missing=0.25, n_queries=5,
                                    constant=("c6",))
    for tab in (train, queries):      # a row where everything is missing
        for col in tab.columns:
            col.append(None)
    y = S.random_labels(11, train.n)
    return train, queries, y


@pytest.mark.parametrize("preset", PRESETS)
def test_parameter_sweep(preset):
    """Every pair of parameter values (heom, hvdm, vdm, gower); every value (the presets
    that differ from heom only by their default p)."""
    train, queries, y = sweep_tables(preset)
    f = factors_for(preset)
    combos = all_pairs(f) if preset in ("heom", "hvdm", "vdm", "gower") else one_each(f)
    containers = ["frame", "object", "mask", "names"]
    for c, combo in enumerate(combos):
        params = sweep_params(combo)
        weights = params.pop("weights")
        container = containers[c % len(containers)]
        m, r = fit_both(preset, train, y, container, weights, **params)
        try:
            check_everything(m, r, train, queries, container, full=c % 6 == 0)
        except AssertionError as exc:
            raise AssertionError("%s %r %s weights=%s: %s"
                                 % (preset, params, container, weights, exc)) from None


def test_all_pairs_covers_every_pair():
    f = factors_for("hvdm")
    combos = all_pairs(f)
    for a, b in itertools.combinations(f, 2):
        seen = {(repr(c[a]), repr(c[b])) for c in combos}
        assert len(seen) == len(f[a]) * len(f[b])


# ======================================================================================
# hypothesis: random tables, random parameters, random containers


@st.composite
def metric_params(draw, preset):
    """Any value of every parameter the preset takes."""
    return sweep_params({k: draw(st.sampled_from(v)) for k, v in factors_for(preset).items()})


@pytest.mark.parametrize("preset", PRESETS)
@given(data=st.data())
def test_random_tables(preset, data):
    kinds = None
    if preset == "vdm":
        kinds = data.draw(st.lists(st.just(NOMINAL), min_size=1, max_size=5))
    train, queries, y = data.draw(S.tables(min_rows=3, max_rows=14, n_queries=(1, 5),
                                           labels=preset in NEEDS_Y, kinds=kinds))
    params = data.draw(metric_params(preset))
    weights = params.pop("weights")
    container = data.draw(st.sampled_from(["frame", "object", "mask", "names", "structured",
                                           "arrow", "polars"]))
    m, r = fit_both(preset, train, y, container, weights, **params)
    check_everything(m, r, train, queries, container, k_values=(1, 2))


# ======================================================================================
# exact ties: distances exact in floating point, so indices must match exactly


@st.composite
def exact_tables(draw):
    """Nominal columns (overlap: 0/1 terms) and integer continuous columns compared
    without normalization: every reduced distance is an integer."""
    m = draw(st.integers(1, 4))
    kinds = [draw(st.sampled_from((CONTINUOUS, NOMINAL))) for _ in range(m)]
    styles = {CONTINUOUS: ["Int64"], NOMINAL: ["object", "category", "code"]}
    specs = draw(S.table_specs(kinds=kinds, styles=styles))
    for s in specs:
        if s.kind == CONTINUOUS:
            s.pool = [int(v) % 7 for v in s.pool]
            s.extra = [int(v) % 9 for v in s.extra]
    n = draw(st.integers(3, 16))
    train = S.table_from_specs(draw, specs, n)
    queries = S.table_from_specs(draw, specs, draw(st.integers(1, 6)), unseen=True)
    return train, queries


@pytest.mark.parametrize("preset,params", [
    ("manhattan", dict(normalization="none")),
    ("heom", dict(normalization="none", p=1)),
    ("euclidean", dict(normalization="none")),
    ("chebyshev", dict(normalization="none")),
    ("heom", dict(normalization="none", p=3, missing="ignore")),
])
@given(data=st.data())
def test_exact_ties(preset, params, data):
    train, queries = data.draw(exact_tables())
    m, r = fit_both(preset, train, None, "frame", None, **params)
    X, Q = train.frame(), queries.frame()
    R = r.pairwise(queries.rows(), train.rows(), reduced=True)
    for k in range(1, train.n + 1):
        D, I = m.kneighbors(Q, k, n_jobs=JOBS)
        for q in range(queries.n):
            want = sorted(range(train.n), key=lambda j: (R[q, j], j))[:k]
            assert I[q].tolist() == want
        close(D, r.kneighbors(queries.rows(), train.rows(), k)[0])
    D, I = m.kneighbors(None, train.n - 1, exclude_self=True, n_jobs=JOBS)
    Rt = r.pairwise(train.rows(), reduced=True)
    for q in range(train.n):
        want = sorted((j for j in range(train.n) if j != q), key=lambda j: (Rt[q, j], j))
        assert I[q].tolist() == want
    # radius exactly at an attained distance is inclusive
    Rtrue = r.pairwise(queries.rows(), train.rows())
    for rad in np.unique(Rtrue[0])[:3]:
        _, I = m.radius_neighbors(Q, float(rad), n_jobs=JOBS)
        assert I[0].tolist() == sorted((j for j in range(train.n) if Rtrue[0, j] <= rad),
                                       key=lambda j: (Rtrue[0, j], j))


# ======================================================================================
# explain, including the corners of "ignore" and p = inf


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, 3.0, INF])
@pytest.mark.parametrize("missing", ["ignore", "max", "one"])
@pytest.mark.parametrize("aggregate", ["sum", "mean"])
def test_explain_corners(p, missing, aggregate):
    cols = [[1.0, None, 3.0, 8.0], ["a", "b", None, "a"], [0.5, None, 0.5, 2.0]]
    kinds = [CONTINUOUS, NOMINAL, CONTINUOUS]
    table = S.Table(["x", "s", "z"], kinds, ["float", "object", "float"], cols, [[]] * 3)
    m, r = fit_both("heom", table, None, "frame", "array", p=p, missing=missing,
                    aggregate=aggregate)
    X = table.frame()
    rows = table.rows()
    # row 1 has x and z missing, row 2 has s missing: with "ignore" the pair (1, 2)
    # keeps no known component
    pairs = list(itertools.product(range(4), repeat=2))
    check_explain(m, r, X, X, rows, rows, pairs)
    close(m.pairwise(X), r.pairwise(rows))
    # single rows as a dict, a Series, a list
    ex = m.explain(X.iloc[0].to_dict(), X.iloc[3])
    close(ex.distance, r.distance(rows[0], rows[3]))
    ex2 = m.explain(list(rows[0]), list(rows[3]))
    close(ex2.terms, ex.terms)
    frame = ex.to_frame()
    assert list(frame.index) == ["x", "s", "z"]


# ======================================================================================
# value tables


@pytest.mark.parametrize("preset,params", [
    ("hvdm", {}), ("hvdm", dict(vdm="N1", missing="symbol")),
    ("hvdm", dict(vdm="N3", unseen="prior", missing="symbol")),
    ("vdm", {}), ("heom", {}), ("heom", dict(missing="symbol")), ("gower", {}),
])
def test_value_distances(preset, params):
    train, _, y = sweep_tables(preset)
    m, r = fit_both(preset, train, y, "frame", None, **params)
    check_value_tables(m, r, train)
    cont = [a for a in range(train.m) if train.kinds[a] == CONTINUOUS]
    if cont:
        with pytest.raises(ValueError, match="continuous"):
            m.value_distances(train.names[cont[0]])
    with pytest.raises(ValueError, match="no column named"):
        m.value_distances("no such column")
    with pytest.raises(ValueError, match="out of range"):
        m.value_distances(train.m + 3)


# ======================================================================================
# invariance: threads, kernel tiling and strategies, memory layouts


@pytest.fixture(scope="module")
def invariance_case():
    train, queries = S.random_table(5, 300, MIXED_STYLES, p_missing=0.15, n_queries=70)
    y = S.random_labels(5, train.n)
    return train, queries, y


@pytest.mark.parametrize("preset,params", [
    ("hvdm", {}), ("heom", dict(p=0.5, missing="ignore")), ("chebyshev", {}),
    ("gower", dict(weights=[1, 2, 0, 1, 1, 3, 1, 1, 0.5])),
])
def test_thread_tile_block_strategy_invariance(invariance_case, preset, params):
    train, queries, y = invariance_case
    m = Metric(preset, nominal=train.override(), **params).fit(train.frame(), y)
    Q = queries.frame()
    base_d, base_i = m.kneighbors(Q, 7, n_jobs=1)
    base_p = m.pairwise(Q, train.frame(), n_jobs=1)
    base_r = m.radius_neighbors(Q, float(np.median(base_p)), n_jobs=1)
    for nj in (1, 2, 3, None):
        d, i = m.kneighbors(Q, 7, n_jobs=nj)
        assert np.array_equal(d, base_d) and np.array_equal(i, base_i)
        assert np.array_equal(m.pairwise(Q, train.frame(), n_jobs=nj), base_p)
        rd, ri = m.radius_neighbors(Q, float(np.median(base_p)), n_jobs=nj)
        assert all(np.array_equal(a, b) for a, b in zip(rd, base_r[0]))
        assert all(np.array_equal(a, b) for a, b in zip(ri, base_r[1]))
        dl, il = _kernels.radius(m.plan_.cplan, _kernels.CRows(m.encode(Q)),
                                 _kernels.CRows(m.train_), float(np.median(base_p)),
                                 nj or 2, block=3)
        assert all(np.array_equal(a, b) for a, b in zip(il, base_r[1]))
        # queries in chunks, each tile of reference rows read once for a chunk's queries
        for chunk, block in ((1, 0), (3, 5), (8, 0), (32, 0), (0, 0), (0, 2)):
            dl, il = _kernels.radius(m.plan_.cplan, _kernels.CRows(m.encode(Q)),
                                     _kernels.CRows(m.train_), float(np.median(base_p)),
                                     nj or 2, block=block, chunk=chunk)
            assert len(il) == len(base_r[1])
            assert all(np.array_equal(a, b) for a, b in zip(il, base_r[1])), (chunk, block)
            assert all(np.array_equal(a, b) for a, b in zip(dl, base_r[0])), (chunk, block)
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    grid = all_pairs({"nj": [1, 2, 3], "tile": [1, 5, 256], "block": [1, 4, 0],
                      "strategy": ["queries", "references"], "chunk": [0, 1, 3, 8, 32]})
    for nj, tile, block, strategy, chunk in (tuple(g.values()) for g in grid):
        d, i = _kernels.knn(m.plan_.cplan, cq, ct, 7, nj, tile=tile, block=block,
                            strategy=strategy, chunk=chunk)
        assert np.array_equal(d, base_d), (nj, tile, block, strategy, chunk)
        assert np.array_equal(i, base_i), (nj, tile, block, strategy, chunk)
    # the rows tied with the k-th, found in the same pass, whatever the chunks of queries
    tie_d, tie_i = _kernels.knn(m.plan_.cplan, cq, ct, 7, 1, ties=True, chunk=8)
    assert np.array_equal(tie_d[:, :7], base_d) and np.array_equal(tie_i[:, :7], base_i)
    for nj, chunk, block in itertools.product((1, 3), (1, 5, 16, 32), (0, 4)):
        d, i = _kernels.knn(m.plan_.cplan, cq, ct, 7, nj, block=block, ties=True,
                            strategy="queries", chunk=chunk)
        assert np.array_equal(d, tie_d) and np.array_equal(i, tie_i), (nj, chunk, block)
    # rows of X in chunks per pass over Y's rows: the same matrices; the symmetric one is
    # the upper triangle of the full one, mirrored
    full = m.pairwise(train.frame(), train.frame(), n_jobs=1)
    sym = m.pairwise(train.frame(), n_jobs=1)
    assert np.array_equal(np.triu(sym), np.triu(full)) and np.array_equal(sym, sym.T)
    for nj, chunk in itertools.product((1, 3), (1, 3, 8, 32, 0)):
        got = np.empty_like(base_p)
        _kernels.pairwise(m.plan_.cplan, cq, ct, got, nj, chunk=chunk)
        assert np.array_equal(got, base_p), (nj, chunk)
        got = np.empty_like(sym)
        _kernels.pairwise(m.plan_.cplan, ct, ct, got, nj, symmetric=True, chunk=chunk)
        assert np.array_equal(got, sym), (nj, chunk)
    # a chunk larger than any query set is one chunk (its count of chunks, rounded up,
    # must not overflow to none)
    huge = 2 ** 63 - 1
    got = np.full_like(base_p, -1.0)
    _kernels.pairwise(m.plan_.cplan, cq, ct, got, 2, chunk=huge)
    assert np.array_equal(got, base_p)
    d, i = _kernels.knn(m.plan_.cplan, cq, ct, 7, 2, strategy="queries", chunk=huge)
    assert np.array_equal(d, base_d) and np.array_equal(i, base_i)
    dl, il = _kernels.radius(m.plan_.cplan, cq, ct, float(np.median(base_p)), 2, chunk=huge)
    assert all(np.array_equal(a, b) for a, b in zip(il, base_r[1]))
    # every row within an infinite radius: each query's hit buffer grows past 16, 32, ...
    # 256 rows, in the order of the full matrix's row sorted by (distance, index)
    for chunk in (1, 8, 0):
        dl, il = _kernels.radius(m.plan_.cplan, cq, ct, np.inf, 2, chunk=chunk)
        for q in range(len(il)):
            order = np.lexsort((np.arange(base_p.shape[1]), base_p[q]))
            assert np.array_equal(il[q], order) and np.array_equal(dl[q], base_p[q, order])
    # exclude_self through the kernel, both strategies
    ref_d, ref_i = m.kneighbors(None, 5, exclude_self=True, n_jobs=1)
    r = float(np.median(ref_d[:, -1]))
    rad_d, rad_i = m.radius_neighbors(None, r, exclude_self=True, n_jobs=1)
    assert sum(map(len, rad_i)) > 0
    for nj, chunk in itertools.product((1, 3), (1, 8, 32, 0)):
        dl, il = _kernels.radius(m.plan_.cplan, ct, ct, r, nj, exclude_self=True,
                                 chunk=chunk)
        assert all(np.array_equal(a, b) for a, b in zip(il, rad_i)), (nj, chunk)
        assert all(np.array_equal(a, b) for a, b in zip(dl, rad_d)), (nj, chunk)
    for nj, strategy in itertools.product((1, 2, 3), ("queries", "references")):
        d, i = _kernels.knn(m.plan_.cplan, ct, ct, 5, nj, tile=9, block=2,
                            exclude_self=True, strategy=strategy)
        assert np.array_equal(d, ref_d) and np.array_equal(i, ref_i)


@pytest.mark.parametrize("preset,params", [
    ("hvdm", {}), ("hvdm", dict(missing="max", vdm="N3")), ("heom", dict(missing="symbol")),
    ("euclidean", dict(normalization="mean_diff", weights=[2, 1, 0, 1, 1, 3, 1, 0.5, 1])),
])
def test_gemm_filter_equals_direct_kernel(preset, params):
    """For p = 2 the k-NN search may pre-filter candidates with a matrix product; the
    neighbors and distances must be exactly those of the direct kernel."""
    from hdist._search import gemm_filter as _gemm
    # queries without unseen values (an unseen nominal value sends the search to the
    # direct kernel)
    whole = S.random_table(9, 1720, MIXED_STYLES, p_missing=0.1)[0]
    train, queries, big_q = (whole.take(range(1500)), whole.take(range(1500, 1540)),
                             whole.take(range(1540, 1720)))
    y = S.random_labels(9, train.n)
    m = Metric(preset, nominal=train.override(), **params).fit(train.frame(), y)
    rows = m.encode(queries.frame())
    cq, ct = _kernels.CRows(rows), _kernels.CRows(m.train_)
    found = brute_knn(m.plan_, rows, m.train_, ct, 6, 1, method="direct")
    want = found.dist, found.ind
    for nj, dtype, q_block, r_tile in [(1, np.float32, 256, 4096), (2, np.float64, 7, 64),
                                       (3, np.float32, 16, 200)]:
        got = _gemm.knn(m.plan_, rows, m.train_, cq, ct, 6, nj, q_block=q_block,
                        r_tile=r_tile, dtype=dtype)
        assert got is not None
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    got = brute_knn(m.plan_, m.train_, m.train_, ct, 4, 2, exclude_self=True, method="gemm")
    direct = brute_knn(m.plan_, m.train_, m.train_, ct, 4, 1, exclude_self=True,
                       method="direct")
    assert np.array_equal(got.dist, direct.dist) and np.array_equal(got.ind, direct.ind)
    # the public method with enough pairs to take the filter, against the reference
    D, I = m.kneighbors(big_q.frame(), 6)
    found = brute_knn(m.plan_, m.encode(big_q.frame()), m.train_, ct, 6, 1, method="direct")
    Dd, Id = found.dist, found.ind
    assert np.array_equal(D, Dd) and np.array_equal(I, Id)
    r = reference_metric(preset, train.kinds, **params).fit(train.columns, y)
    sub = [0, 97, 179]
    R = r.pairwise([big_q.rows()[i] for i in sub], train.rows())
    check_knn(D[sub], I[sub], R, 6)


def test_layout_invariance(tmp_path):
    """Read-only, Fortran-order, strided and memory-mapped inputs give identical
    results (numeric arrays with a nominal code column, object arrays, frames)."""
    train, queries = S.random_table(8, 60, ["float", "code", "float", "code", "Int64"],
                                    p_missing=0.1, n_queries=12)
    y = S.random_labels(8, train.n)
    nom = train.nominal_positions()
    Xn, Qn = train.numeric_array(), queries.numeric_array()

    def results(X, Q):
        m = Metric("hvdm", nominal=nom).fit(X, y)
        return m.pairwise(Q, X), m.kneighbors(Q, 5), m.pairwise(X)

    base = results(Xn, Qn)
    r = reference_metric("hvdm", train.kinds).fit(train.columns, y)
    close(base[0], r.pairwise(queries.rows(), train.rows()))

    def variants(A, name):
        yield np.asfortranarray(A)
        ro = A.copy()
        ro.setflags(write=False)
        yield ro
        big = np.empty((A.shape[0] * 2, A.shape[1] * 3), dtype=A.dtype)
        big[::2, ::3] = A
        yield big[::2, ::3]
        if A.dtype != object:
            path = tmp_path / (name + ".npy")
            np.save(path, A)
            yield np.load(path, mmap_mode="r")
            mm = np.memmap(tmp_path / (name + ".dat"), dtype=A.dtype, mode="w+",
                           shape=A.shape, order="F")
            mm[:] = A
            mm.flush()
            yield np.memmap(tmp_path / (name + ".dat"), dtype=A.dtype, mode="r",
                            shape=A.shape, order="F")

    for Xv, Qv in zip(variants(Xn, "x"), variants(Qn, "q")):
        got = results(Xv, Qv)
        assert np.array_equal(got[0], base[0])
        assert np.array_equal(got[1][0], base[1][0])
        assert np.array_equal(got[1][1], base[1][1])
        assert np.array_equal(got[2], base[2])
    Xo, Qo = train.object_array(), queries.object_array()
    base_o = results(Xo, Qo)
    assert np.array_equal(base_o[0], base[0])
    for Xv, Qv in zip(variants(Xo, "xo"), variants(Qo, "qo")):
        got = results(Xv, Qv)
        assert np.array_equal(got[0], base[0])
        assert np.array_equal(got[1][1], base[1][1])
    # a frame over a Fortran-ordered block, and a frame view with a column step
    frame = pd.DataFrame(np.asfortranarray(Xn), columns=[str(a) for a in range(train.m)])
    m = Metric("hvdm", nominal=[str(a) for a in nom]).fit(frame, y)
    assert np.array_equal(m.pairwise(pd.DataFrame(Qn, columns=frame.columns), frame),
                          base[0])


def test_out_argument():
    train, queries, y = sweep_tables("heom")
    m = Metric("heom", nominal=train.override()).fit(train.frame())
    X, Q = train.frame(), queries.frame()
    want = m.pairwise(Q, X)
    out = np.empty((queries.n, train.n))
    assert m.pairwise(Q, X, out=out) is out and np.array_equal(out, want)
    sym = np.empty((train.n, train.n))
    assert np.array_equal(m.pairwise(X, out=sym), m.pairwise(X))
    with pytest.raises(ValueError, match="shape"):
        m.pairwise(Q, X, out=np.empty((train.n, queries.n)))
    with pytest.raises(ValueError, match="float64"):
        m.pairwise(Q, X, out=np.empty((queries.n, train.n), dtype=np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        m.pairwise(Q, X, out=np.empty((queries.n, train.n), order="F"))
    with pytest.raises(ValueError, match="C-contiguous"):
        m.pairwise(Q, X, out=np.empty((queries.n, train.n * 2))[:, ::2])
    ro = np.empty((queries.n, train.n))
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        m.pairwise(Q, X, out=ro)
    with pytest.raises(TypeError, match="out"):
        m.pairwise(Q, X, out=[[0.0] * train.n] * queries.n)


# ======================================================================================
# peers: R's cluster::daisy (Gower) and Weka's IBk Euclidean distance


@pytest.mark.needs_data
def test_gower_matches_daisy():
    """``gower`` reproduces R's ``cluster::daisy(flower, metric = "gower")``.

    daisy reads V1-V4 as nominal factors, V5 and V6 as ordinal (ranks scaled by the
    observed range of ranks: here an ordered pandas Categorical, continuous on its
    codes, or the integer ranks as numbers), V7 and V8 as numeric, and averages the
    terms over the variables both rows have."""
    ds = S.load_dataset("cluster_flower")
    want = S.read_matrix("cluster_flower.gower_daisy.csv")
    nominal = ["V1", "V2", "V3", "V4"]
    X = ds.frame()
    assert str(X["V5"].dtype) == "category" and X["V5"].cat.ordered
    got = Metric("gower", nominal=nominal).fit(X).pairwise(X)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    ranks = X.assign(V5=X["V5"].cat.codes + 1, V6=X["V6"].cat.codes + 1)
    got = Metric("gower", nominal=nominal).fit(ranks).pairwise(ranks)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    r = reference_metric("gower", ds.table.kinds).fit(ds.table.columns)
    np.testing.assert_allclose(r.pairwise(ds.table.rows()), want, rtol=0, atol=1e-12)


def test_weka_ibk_euclidean_by_hand():
    """Weka IBk's default distance is ``heom`` with range normalization and
    ``missing="max"``.

    Weka's EuclideanDistance normalizes a numeric value as ``v' = (v - min) / (max -
    min)`` with the training range; a nominal difference is 0 when equal, else 1; a
    missing value gives 1 for a nominal attribute, 1 for two missing numeric values, and
    ``max(v', 1 - v')`` when only one numeric value is missing; the distance is
    ``sqrt(Σ diff²)``.  The worked example below is computed by hand."""
    train = pd.DataFrame({"A": [1.0, 3.0, 5.0, np.nan],
                          "B": [10.0, np.nan, 20.0, 30.0],
                          "C": ["red", "blue", "red", "green"]})
    query = pd.DataFrame({"A": [2.0], "B": [np.nan], "C": ["red"]})
    # ranges: A in [1, 5] (width 4), B in [10, 30] (width 20); query A' = 0.25.
    # row 0 (1, 10, red):   A |0.25 - 0| = 0.25; B query missing, 10' = 0 ->
    #                       max(0, 1) = 1; C equal -> 0.        d² = 0.0625 + 1
    # row 1 (3, ?, blue):   A |0.25 - 0.5| = 0.25; B both missing -> 1; C -> 1
    #                                                           d² = 0.0625 + 1 + 1
    # row 2 (5, 20, red):   A |0.25 - 1| = 0.75; B 20' = 0.5 -> max(0.5, 0.5) = 0.5;
    #                       C equal -> 0.                       d² = 0.5625 + 0.25
    # row 3 (?, 30, green): A train missing, query 0.25 -> max(0.25, 0.75) = 0.75;
    #                       B 30' = 1 -> max(1, 0) = 1; C -> 1  d² = 0.5625 + 1 + 1
    want = np.sqrt([1.0625, 2.0625, 0.8125, 2.5625])
    for preset in ("heom", "euclidean"):
        m = Metric(preset, missing="max").fit(train)
        np.testing.assert_allclose(m.pairwise(query, train)[0], want, rtol=1e-15)
        d, i = m.kneighbors(query, 4)
        assert i[0].tolist() == [2, 0, 1, 3]
        np.testing.assert_allclose(d[0], want[[2, 0, 1, 3]], rtol=1e-15)


# ======================================================================================
# a nominal attribute with more than 50 000 distinct values


def test_high_cardinality():
    rng = np.random.default_rng(3)
    n = 60_000
    ids = rng.choice(55_000, size=n)
    ids[:55_000] = np.arange(55_000)           # every one of 55 000 values occurs
    y = rng.integers(3, size=n).tolist()
    x = np.round(rng.normal(size=n), 3)
    x[rng.random(n) < 0.01] = np.nan
    idcol = np.array(["k%d" % v for v in ids], dtype=object)
    idcol[rng.random(n) < 0.01] = None
    small = np.array(["a", "b", "c"], dtype=object)[rng.integers(3, size=n)]
    frame = pd.DataFrame({"id": idcol, "x": x, "s": small})
    columns = [list(idcol), [None if v != v else float(v) for v in x], list(small)]
    kinds = [NOMINAL, CONTINUOUS, NOMINAL]
    a = rng.integers(n, size=150)
    b = np.concatenate([rng.integers(n, size=140), a[:10]])
    queries = frame.iloc[a[:2]].copy()
    queries.iloc[1, 0] = "never-seen"
    qrows = [tuple(c[i] for c in columns) for i in a[:2]]
    qrows[1] = ("never-seen",) + qrows[1][1:]
    for preset in ("hvdm", "heom"):
        m = Metric(preset).fit(frame, y)
        assert "id" not in getattr(m, "value_tables_", {})
        assert m.plan_.mt <= 1                    # no table for "id" (at most "s")
        r = reference_metric(preset, kinds).fit(columns, y)
        got = np.diag(m.pairwise(frame.iloc[a], frame.iloc[b], n_jobs=JOBS))
        want = [r.distance(tuple(c[i] for c in columns), tuple(c[j] for c in columns))
                for i, j in zip(a, b)]
        close(got, want)
        D, I = m.kneighbors(queries, 4, n_jobs=JOBS)
        train_rows = list(zip(*columns))
        R = np.array([[r.distance(q, t) for t in train_rows] for q in qrows])
        check_knn(D, I, R, 4)
    assert m.plan_.mo == 2 and m.plan_.mt == 0
    hv = Metric("hvdm").fit(frame, y)
    assert hv.plan_.me == 1 and hv.plan_.mt == 1   # "id" embedded, "s" tabled


# ======================================================================================
# real datasets


REAL_CASES = [
    ("iris", "heom", {}), ("iris", "hvdm", {}), ("iris", "chebyshev", {}),
    ("iris", "fractional", dict(normalization="mean_diff")),
    ("credit-a", "heom", {}), ("credit-a", "hvdm", dict(missing="symbol")),
    ("credit-a", "gower", {}), ("credit-a", "manhattan", dict(missing="max")),
    ("german", "hvdm", dict(vdm="N3")), ("german", "heom",
                                         dict(normalization="trimmed_range")),
    ("modeldata_credit_data", "hvdm", {}), ("modeldata_credit_data", "gower", {}),
    ("modeldata_credit_data", "euclidean", dict(missing="ignore", normalization="4std")),
    ("Zoo", "heom", {}), ("Zoo", "hvdm", dict(missing="max", p=1)),
    ("Zoo", "vdm", {}),
    ("weather.nominal", "vdm", {}), ("weather.nominal", "hvdm", dict(vdm="N1")),
    ("weather.numeric", "hvdm", {}), ("weather.numeric", "heom", {}),
]


@pytest.fixture(scope="module")
def datasets():
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = S.load_dataset(name)
        return cache[name]
    return get


@pytest.mark.parametrize("name,preset,params", REAL_CASES)
@pytest.mark.needs_data
def test_real_datasets(datasets, name, preset, params):
    ds = datasets(name)
    table = ds.table
    kinds = list(table.kinds)
    nominal = table.override()
    if preset == "vdm" and CONTINUOUS in kinds:      # Zoo: legs as a nominal code
        kinds = [NOMINAL] * table.m
        nominal = "all"
    y = ds.y
    X = table.frame()
    m = Metric(preset, nominal=nominal, **params).fit(X, y)
    assert m.kinds_ == kinds
    r = reference_metric(preset, kinds, **params).fit(table.columns, y)
    rng = np.random.default_rng(len(name))
    n = table.n
    nq = min(n, 12 if n > 2000 else 25)
    qi = np.sort(rng.choice(n, size=nq, replace=False))
    Q = X.iloc[qi]
    rows = table.rows()
    R = r.pairwise([rows[i] for i in qi], rows)
    close(m.pairwise(Q, X, n_jobs=JOBS), R)
    D, I = m.kneighbors(Q, 5, n_jobs=JOBS)
    check_knn(D, I, R, 5)
    check_radius(m, Q.iloc[:3], R[:3], radii_between(R[:3], 2))
    if n <= 200:
        Rt = r.pairwise(rows)
        D, I = m.kneighbors(None, 3, exclude_self=True, n_jobs=JOBS)
        check_knn(D, I, Rt, 3, exclude_self=True)
        close(m.pairwise(X, n_jobs=JOBS), Rt)
    check_explain(m, r, Q, X, [rows[i] for i in qi], rows, [(0, 0), (1, 2)])
    if preset in WITH_VDM:
        check_value_tables(m, r, S.Table(table.names, kinds, table.styles, table.columns,
                                         table.levels))
