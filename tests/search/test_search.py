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
    monkeypatch.setattr(hdist._search.index, "race", even)


def test_metric_uses_the_index_choice(even_race):
    seen = set()
    for metric, X, y, Q in _cases():
        metric.fit(X, y)
        d, i = metric.kneighbors(Q, 6)
        algo = metric.search_["algorithm"]
        idx = NeighborsIndex(metric).fit()
        assert algo == idx.algorithm_
        # (the pilot switches the index it runs on to a KD-tree: a separate one)
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
