"""KD-tree k-NN in batches of queries, and leaf rows stored in blocks of whole subtrees.

A KD-tree k-NN query runs in a batch of queries that traverse the tree together, each
member with its own sorted list; a subtree of at most ``unit`` rows is stored as one
attribute-major block (``hdist._kernels.trees.leaf_major``) and scanned in one tile.  The answer
must be brute force's, bit for bit, for every batch size, block size, leaf size and
thread count, ties and missing values included.
"""
from __future__ import annotations

import numpy as np
import pytest

from hdist import Metric, NeighborsIndex
from hdist._kernels import trees as _trees
from hdist._kernels import CRows

from reference import CONTINUOUS, NOMINAL, reference_metric
from test_trees import brute_index, mixed_data, nominal_data
from test_tree_tiles import CASES

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize, pytest.mark.trees]


def tree_knn(idx, rows, k, threads, batch, unit, exclude_self=False):
    """``_trees.knn`` on idx's KD-tree with leaf rows in blocks of ``unit`` rows."""
    t = idx._searcher
    lm = _trees.leaf_major(idx.metric_.plan_.cplan, t.crows(), t.perm, t.nodes, unit)
    args = list(idx._searcher._args(rows))
    args[4] = lm
    return _trees.knn(*args, k, threads, exclude_self, None, 0, batch)


@pytest.mark.parametrize("name,params", CASES)
def test_batches_equal_brute_force(name, params):
    """Every metric kind, missing values, unseen query values: batch sizes 1 to 64 (37
    queries: batches cut in the middle), blocks of single leaves to 128 rows, leaves of
    1 to 32 rows, 1 and 2 threads, k larger than a leaf."""
    X, Q, y, nom = mixed_data(41, 700, 37, n_cont=4, n_nom=3, p_missing=0.1)
    metric = Metric(name, nominal=nom, **params).fit(X, y)
    brute = brute_index(metric)
    rows = metric.encode(Q)
    k = 9
    d0, i0 = brute.kneighbors(Q, k, n_jobs=1)
    for leaf in (1, 5, 32):
        idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=leaf).fit()
        for unit in (0, 40, 128):
            for batch in (1, 3, 16, 64):
                for threads in (1, 2):
                    d, i, cnt = tree_knn(idx, rows, k, threads, batch, unit)
                    assert np.array_equal(i, i0), (leaf, unit, batch, threads)
                    assert np.array_equal(d, d0), (leaf, unit, batch, threads)
                    assert (cnt >= k).all() and (cnt <= len(X)).all()


def test_batches_exclude_self_and_large_k():
    """The indexed rows as queries without themselves; k above the block size."""
    X, Q, y, nom = mixed_data(43, 400, 5, n_cont=3, n_nom=2, p_missing=0.15)
    metric = Metric("heom", nominal=nom).fit(X, y)
    brute = brute_index(metric)
    idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=4).fit()
    for k in (1, 6, 150):
        d0, i0 = brute.kneighbors(None, k, exclude_self=True, n_jobs=1)
        for unit, batch in ((0, 1), (16, 7), (128, 16), (128, 400)):
            d, i, _ = tree_knn(idx, idx._rows, k, 2, batch, unit, exclude_self=True)
            assert np.array_equal(i, i0) and np.array_equal(d, d0), (k, unit, batch)
            assert not (i == np.arange(len(X))[:, None]).any()


def test_batches_with_ties():
    """Nominal rows with three values: exact ties at every distance, decided by index
    whatever order a member's list receives its rows in."""
    X, Q, y, nom = nominal_data(8, 900, 50, m=5, card=3, p_missing=0.05)
    for name in ("heom", "hvdm", "gower"):
        metric = Metric(name, nominal="all").fit(X, y)
        brute = brute_index(metric)
        rows = metric.encode(Q)
        d0, i0 = brute.kneighbors(Q, 25, n_jobs=1)
        assert (d0[:, 1:] == d0[:, :-1]).any()
        for leaf in (3, 32):
            idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=leaf).fit()
            for unit, batch in ((0, 1), (0, 8), (128, 5), (128, 50)):
                d, i, _ = tree_knn(idx, rows, 25, 2, batch, unit)
                assert np.array_equal(i, i0) and np.array_equal(d, d0), (name, leaf, unit)


def test_batches_against_reference():
    """The batched KD-tree against the plain reference (the documented formulas)."""
    rng = np.random.default_rng(5)
    n, nq = 300, 12
    X = np.empty((n + nq, 4), dtype=object)
    X[:, 0] = np.round(rng.normal(size=n + nq), 2)
    X[:, 1] = np.round(rng.random(n + nq) * 10, 1)
    X[:, 2] = rng.choice(["a", "b", "c"], n + nq)
    X[:, 3] = rng.choice(["u", "v"], n + nq)
    X[rng.random(X.shape) < 0.1] = None
    X[:2] = [[0.0, 1.0, "a", "u"], [1.0, 2.0, "b", "v"]]
    y = rng.integers(0, 2, n)
    Xr, Xq = X[:n], X[n:]
    kinds = [CONTINUOUS, CONTINUOUS, NOMINAL, NOMINAL]
    cols = [list(Xr[:, a]) for a in range(4)]
    for preset, params in (("heom", {}), ("gower", {}), ("hvdm", {"p": 1.0})):
        ref = reference_metric(preset, kinds, **params).fit(cols, list(y))
        Dref = ref.pairwise(list(map(tuple, Xq)), list(map(tuple, Xr)))
        metric = Metric(preset, nominal=[2, 3], **params).fit(Xr, y)
        idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=6).fit()
        rows = metric.encode(Xq)
        for unit, batch in ((0, 1), (64, 4), (128, 16)):
            d, i, _ = tree_knn(idx, rows, 7, 1, batch, unit)
            np.testing.assert_allclose(d, np.sort(Dref, axis=1)[:, :7], rtol=1e-12,
                                       atol=1e-12)
            np.testing.assert_allclose(d, np.take_along_axis(Dref, i, axis=1),
                                       rtol=1e-12, atol=1e-12)


def test_block_layout():
    """Blocks are the largest subtrees of at most ``unit`` rows (or larger leaves); they
    partition the rows, each holds its rows attribute-major at offset s * width (as an
    independent numpy transposition gives), and every node inside a block points to it;
    the nodes above the blocks hold -1."""
    X, Q, y, nom = mixed_data(3, 600, 10, n_cont=3, n_nom=2, p_missing=0.1)
    metric = Metric("hvdm", nominal=nom).fit(X, y)
    idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=7).fit()
    nodes, perm = idx._searcher.nodes, idx._searcher.perm
    start, end = nodes["start"][:, 0], nodes["end"][:, 0]
    left, right = nodes["left"][:, 0], nodes["right"][:, 0]
    rows = idx._rows.take(perm)
    for unit in (0, 50, 128, 10_000):
        lm = _trees.leaf_major(metric.plan_.cplan, idx._searcher.crows(), perm, nodes, unit)
        blk = lm["block"]
        own = np.flatnonzero((blk[:, 0] == start) & (blk[:, 1] == end))
        # blocks partition the rows
        order = own[np.argsort(start[own])]
        assert start[order[0]] == 0 and end[order[-1]] == len(X)
        assert (start[order[1:]] == end[order[:-1]]).all()
        for b in own:
            size = end[b] - start[b]
            assert left[b] < 0 or size <= unit
            parent = np.flatnonzero((left == b) | (right == b))
            if parent.size:     # the largest such subtree
                assert end[parent[0]] - start[parent[0]] > unit
            for name, block in (("c", rows.c), ("cpen", rows.cpen), ("o", rows.o),
                                ("t", rows.t)):
                width = block.shape[1]
                got = lm[name][start[b] * width:end[b] * width].reshape(width, size)
                assert np.array_equal(got, block[start[b]:end[b]].T, equal_nan=True)
        for v in range(len(start)):
            s, e = blk[v]
            if s < 0:
                assert left[v] >= 0 and end[v] - start[v] > unit
            else:
                assert s <= start[v] and end[v] <= e
        if unit == 0:
            assert (left[own] < 0).all() and (blk[left < 0, 0] == start[left < 0]).all()
    with pytest.raises(ValueError, match="leaf_major"):
        args = list(idx._searcher._args(metric.encode(Q)))
        args[4] = {k: v for k, v in args[4].items() if k != "block"}
        _trees.knn(*args, 3, 1)


@pytest.mark.parametrize("name,params", CASES)
def test_radius_over_blocks_equals_brute_force(name, params):
    """Radius searches scan a block (a subtree of at most ``unit`` rows) whole: the lists
    are brute force's for every block size, with and without the indexed rows' own."""
    from hdist._kernels import reduced_radius
    X, Q, y, nom = mixed_data(47, 500, 20, n_cont=4, n_nom=3, p_missing=0.1)
    metric = Metric(name, nominal=nom, **params).fit(X, y)
    brute = brute_index(metric)
    idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=5).fit()
    t = idx._searcher
    d0, _ = brute.kneighbors(Q, 8)
    r = float(np.median(d0))
    for rows, excl, QQ in ((metric.encode(Q), False, Q), (idx._rows, True, None)):
        D0, I0 = brute.radius_neighbors(QQ, r, exclude_self=excl, n_jobs=1)
        for unit in (0, 40, 128):
            lm = _trees.leaf_major(metric.plan_.cplan, t.crows(), t.perm, t.nodes, unit)
            args = list(idx._searcher._args(rows))
            args[4] = lm
            D, I, _ = _trees.radius(*args, r, reduced_radius(metric.plan_.cplan, r), 2, excl)
            assert len(D) == len(D0)
            for a, b, c, e in zip(D, D0, I, I0):
                assert np.array_equal(c, e) and np.array_equal(a, b), (unit, excl)
