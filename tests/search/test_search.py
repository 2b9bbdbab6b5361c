"""One algorithm choice: Metric.kneighbors / radius_neighbors run the search that
NeighborsIndex's "auto" rule picks (hdist._search.choice), and both say which path ran."""
from __future__ import annotations

import numpy as np
import pytest

import hdist._search.choice
import hdist._search.index
from hdist import Metric, NeighborsIndex
from hdist._search.index import auto_algorithm

from test_trees import brute_index, mixed_data


def _cases():
    rng = np.random.default_rng(3)
    n = 4000
    U = rng.random((n, 16))
    S = rng.random((n, 2)) @ rng.normal(size=(2, 12))
    X, Q, y, nom = mixed_data(8, 3000, 30, n_cont=2, n_nom=2, p_missing=0.05)
    return [
        (Metric("euclidean"), U, None, U[:25] + 0.01),           # brute, filter
        (Metric("manhattan"), U, None, U[:25] + 0.01),           # brute, direct
        (Metric("euclidean"), S, None, S[:25] + 0.01),           # KD-tree by the pilot
        (Metric("manhattan"), U[:, :3], None, U[:25, :3] + 0.01),  # KD-tree, few dims
        (Metric("hvdm", nominal=nom), X, y, Q),                  # KD-tree, mixed, missing
        (Metric("gower", nominal=nom), X[:1000], None, Q),       # brute: few rows
    ]


@pytest.fixture
def even_race(monkeypatch):
    """The pilot's race (``hdist._search.choice.race``) run on both sides and called even.  The
    real one times the two searches by the clock: on a busy machine two fits of the same
    rows can time them the other way round (0.07 ms on the tree against 0.17 ms by brute
    force, reversed by the scheduler), and the Metric and the index then each keep the
    search their own race favoured.  An even race keeps the KD-tree (``t_tree <=
    t_brute``), as the break-even rule does without a race for those rows."""
    def even(tree_query, brute_query):
        tree_query()
        brute_query()
        return 0.0, 0.0
    monkeypatch.setattr(hdist._search.choice, "race", even)


def test_metric_uses_the_index_choice(even_race, monkeypatch):
    # the Metric decides on its first call however small (its rule otherwise waits for
    # AUTO_DECIDE_PAIRS pairs: test_small_calls_wait_for_the_decision)
    monkeypatch.setattr(hdist._search.choice, "AUTO_DECIDE_PAIRS", 0)
    seen = set()
    for metric, X, y, Q in _cases():
        metric.fit(X, y)
        d, i = metric.kneighbors(Q, 6)
        algo = metric.search_["algorithm"]
        idx = NeighborsIndex(metric).fit()
        assert algo == idx.algorithm_
        assert auto_algorithm(metric.plan_, len(X), NeighborsIndex(metric).fit()._pilot) \
            == algo
        seen.add(algo)
        d0, i0 = brute_index(metric).kneighbors(Q, 6)
        assert np.array_equal(d, d0) and np.array_equal(i, i0)
        d2, i2 = idx.kneighbors(Q, 6)
        assert np.array_equal(d2, d0) and np.array_equal(i2, i0)
        assert idx.search_["algorithm"] == algo
        # the training rows themselves, without their own row, and in progress blocks
        de, ie = metric.kneighbors(None, 3, exclude_self=True)
        db, ib = brute_index(metric).kneighbors(None, 3, exclude_self=True)
        assert np.array_equal(de, db) and np.array_equal(ie, ib)
        dp, ip = metric.kneighbors(None, 3, exclude_self=True, progress=lambda a, b: None)
        assert np.array_equal(dp, db) and np.array_equal(ip, ib)
        # radius lists, with and without the query's own row
        r = float(np.median(d0[:, -1]))
        D, I = metric.radius_neighbors(Q, r)
        assert metric.search_["algorithm"] == algo
        D0, I0 = brute_index(metric).radius_neighbors(Q, r)
        assert all(np.array_equal(a, b) for a, b in zip(I, I0))
        assert all(np.array_equal(a, b) for a, b in zip(D, D0))
        for prog in (None, lambda a, b: None):
            D, I = metric.radius_neighbors(None, r, exclude_self=True, progress=prog)
            D0, I0 = brute_index(metric).radius_neighbors(None, r, exclude_self=True)
            assert all(np.array_equal(a, b) for a, b in zip(I, I0))
            assert all(np.array_equal(a, b) for a, b in zip(D, D0))
    assert seen == {"brute", "kd_tree"}


def test_search_says_which_path_ran():
    metric, U, _, Q = _cases()[0]
    metric.fit(U)
    metric.kneighbors(U[:100] + 0.01, 5, n_jobs=1)     # 4e5 pairs: the filter pays
    s = metric.search_
    assert (s["algorithm"], s["path"], s["threads"]) == ("brute", "filter", 1)
    assert "pilot" in s["why"] and "matrix-product filter" in s["why"]
    m = Metric("manhattan").fit(U)
    m.kneighbors(Q, 5, n_jobs=2)
    assert (m.search_["path"], m.search_["threads"]) == ("direct", 2)
    m.radius_neighbors(Q, 0.1)
    assert m.search_["path"] == "direct" and "radius" in m.search_["why"]
    small = Metric("manhattan").fit(U[:100])
    small.kneighbors(Q, 5)
    assert small.search_["algorithm"] == "brute" and "100 rows" in small.search_["why"]
    low = Metric("manhattan").fit(U[:, :2])
    low.kneighbors(Q[:, :2], 5)
    assert low.search_["path"] == "kd_tree" and "dimensions" in low.search_["why"]
    idx = NeighborsIndex(low, algorithm="ball_tree").fit()
    idx.kneighbors(Q[:, :2], 5)
    assert idx.search_["path"] == "ball_tree" and "asked for" in idx.search_["why"]
    # a new fit forgets the last search
    low.fit(U[:, :2])
    assert not hasattr(low, "search_")


@pytest.fixture
def tree_builds(monkeypatch):
    """The number of rows of every tree built (``hdist._kernels.trees.build``)."""
    from hdist._kernels import trees as _trees
    built = []
    real = _trees.build

    def build(kind, cplan, crows, *args, **kw):
        built.append(crows.n)
        return real(kind, cplan, crows, *args, **kw)
    monkeypatch.setattr(_trees, "build", build)
    return built


def test_the_pilot_builds_no_tree_over_all_rows(tree_builds, monkeypatch):
    """Where the KD-tree prunes nothing (16 uniform attributes, as the 40 of the
    census-like job), the rule decides on trees over samples of the rows: no tree over
    all of them is built before (or after) the first answer, by the index or the Metric."""
    from hdist._search.choice import AUTO_PILOT_ROWS
    n = 3 * AUTO_PILOT_ROWS
    X = np.random.default_rng(5).random((n, 16))
    metric = Metric("manhattan").fit(X)
    idx = NeighborsIndex(metric).fit()
    assert idx.algorithm_ == "brute"
    assert tree_builds and max(tree_builds) <= AUTO_PILOT_ROWS
    del tree_builds[:]
    monkeypatch.setattr(hdist._search.choice, "AUTO_DECIDE_PAIRS", 0)
    d, i = metric.kneighbors(X[:40] + 0.01, 5)
    assert metric.search_["algorithm"] == "brute" and "pilot" in metric.search_["why"]
    assert tree_builds and max(tree_builds) <= AUTO_PILOT_ROWS
    d0, i0 = brute_index(metric).kneighbors(X[:40] + 0.01, 5)
    assert np.array_equal(d, d0) and np.array_equal(i, i0)


def test_small_calls_wait_for_the_decision(tree_builds, even_race, monkeypatch):
    """Metric calls searching fewer pairs than AUTO_DECIDE_PAIRS in all are answered by
    brute force without the pilot; the call that reaches it decides, once."""
    monkeypatch.setattr(hdist._search.choice, "AUTO_DECIDE_PAIRS", 4000 * 60)
    metric, S, _, Q = _cases()[2]          # a KD-tree by the pilot
    metric.fit(S)
    ref = brute_index(metric).kneighbors(Q, 4)
    for _ in range(2):                      # 2 x 25 queries of 4000 rows
        res = metric.kneighbors(Q, 4)
        assert metric.search_["algorithm"] == "brute" and "so far" in metric.search_["why"]
        assert all(np.array_equal(a, b) for a, b in zip(res, ref))
    assert not tree_builds
    res = metric.kneighbors(Q, 4)
    assert metric.search_["algorithm"] == "kd_tree" and tree_builds
    assert metric.search_["phases"]["decide"] > 0
    assert all(np.array_equal(a, b) for a, b in zip(res, ref))
    n_builds = len(tree_builds)
    metric.kneighbors(Q, 4)
    assert len(tree_builds) == n_builds and metric.search_["phases"]["decide"] == 0


def test_search_times_its_phases():
    """``search_["phases"]``: seconds of each phase of the last k-NN call, none negative,
    their sum within the call's total."""
    from hdist._core.progress import PHASES
    X, Q, y, nom = mixed_data(9, 3000, 40, n_cont=3, n_nom=3, p_missing=0.1)
    metric = Metric("hvdm", nominal=nom).fit(X, y)
    for algo in ("brute", "kd_tree", "ivf"):
        idx = NeighborsIndex(metric, algorithm=algo).fit()
        for kw in ({}, {"progress": lambda a, b: None}):
            idx.kneighbors(Q, 5, **kw)
            ph = idx.search_["phases"]
            assert set(ph) == set(PHASES) | {"total"}
            assert all(v >= 0 for v in ph.values())
            assert ph["kernel"] > 0 and ph["encode"] > 0
            assert sum(ph[p] for p in PHASES) <= ph["total"] + 1e-9
    metric.kneighbors(Q, 5)
    ph = metric.search_["phases"]
    assert set(ph) == set(PHASES) | {"total"} and ph["kernel"] > 0
    assert sum(ph[p] for p in PHASES) <= ph["total"] + 1e-9
