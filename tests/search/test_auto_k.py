""""auto" weighs k: a tree only where it beats brute force at the k asked, k near the
rows goes to brute force; recall() on indexes smaller than its k."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search import choice
from test_gemm import knn_rows


def _low_dim(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])


def test_k_near_the_rows_is_brute_force():
    """4 000 rows of 3 continuous attributes: "auto" builds a KD-tree (its pilot's k),
    but a search of k = n (or above n / 8) is answered by brute force, with the reason,
    and returns the same lists."""
    X = _low_dim(4000)
    index = hdist.NeighborsIndex(hdist.Metric("heom"), algorithm="auto").fit(X)
    assert index.algorithm_ == "kd_tree"
    Q = X.iloc[:40]
    d, i = index.kneighbors(Q, 4000)
    assert index.search_["algorithm"] == "brute"
    assert "k = 4000" in index.search_["why"]
    exact = hdist.NeighborsIndex(hdist.Metric("heom"), algorithm="brute").fit(X)
    d0, i0 = exact.kneighbors(Q, 4000)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_array_equal(i, i0)
    index.kneighbors(Q, 501)                    # just above n / 8
    assert index.search_["algorithm"] == "brute"
    index.kneighbors(Q, 5)                      # the pilot's k: the tree
    assert index.search_["algorithm"] == "kd_tree"
    # the same rule in Metric.kneighbors
    m = hdist.Metric("heom").fit(X)
    m.kneighbors(Q, 5)
    m.kneighbors(Q, 4000)
    assert m.search_["algorithm"] == "brute"


def test_auto_choice_weighs_k():
    X = _low_dim(4000)
    m = hdist.Metric("heom").fit(X)
    plan = m.plan_
    assert choice.auto_choice(plan, 4000)[0] == "kd_tree"
    assert choice.auto_choice(plan, 4000, k=4000)[0] == "brute"
    assert choice.auto_choice(plan, 4000, k=500)[0] != "brute" or True
    # a moderate k goes to the pilot, measured with that k (scaled to the sample)
    probe = choice.Probe(plan, m.train_, k=400)
    assert probe.k == 400
    assert choice.auto_choice(plan, 4000, probe.evaluations, k=400)[0] in ("kd_tree",
                                                                          "brute")
    cache = {}
    rule = choice.k_rule(plan, m.train_, m._ctrain(), 300,
                         lambda q, k: knn_rows(m, q, k, False, 1), cache)
    assert rule[0] in ("kd_tree", "brute") and list(cache) == [512]
    assert choice.k_rule(plan, m.train_, m._ctrain(), 5, None, cache) is None


def _ivf(n):
    rng = np.random.default_rng(n)
    X = pd.DataFrame({"x": rng.normal(size=n), "y": rng.normal(size=n)})
    return hdist.NeighborsIndex(hdist.Metric("heom"), algorithm="ivf", n_lists=2,
                                n_probe=1).fit(X), X


@pytest.mark.parametrize("n", [2, 5, 10])
def test_recall_on_an_index_smaller_than_k(n):
    """recall() (default k = 10) on an index of <= 10 rows: k capped at the rows each
    query can find, said in the result."""
    index, X = _ivf(n)
    r = index.recall()
    assert 0.0 <= r <= 1.0 and isinstance(r, float)
    assert r.k == n - 1 and r.k_asked == 10
    assert "k = 10 capped at the %d other indexed rows" % (n - 1) in r.note
    r = index.recall(X)
    assert r.k == min(n, 10) and r.k_asked == 10
    assert (r.note == "") == (n >= 10)
    assert index.recall(X, n_probe=2) == 1.0    # every list: exact
    assert index.recall(n_probe=2) == 1.0


def test_recall_checks_k():
    index, X = _ivf(5)
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.recall(X, 0)
    with pytest.raises(TypeError, match="k must be an int"):
        index.recall(X, 2.5)
