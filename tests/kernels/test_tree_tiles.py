"""Tree leaves scanned by the tile kernel, and the radius search's early exit.

A KD-tree or ball-tree leaf is scanned by the brute force's tile kernel over the leaf's
rows stored attribute-major (``hdist._kernels.trees.leaf_major``); the radius search abandons a
tile whose rows all exceed the radius' reduced bound.  Both must leave every answer
bit-identical to brute force and to a full scan of the distance matrix.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from hdist import Metric, NeighborsIndex
from hdist import _kernels
from hdist._kernels import trees as _trees
from hdist._kernels import CRows
from hdist._search.index import ball_tree_refusal

from test_trees import assert_same_knn, assert_same_radius, brute_index, mixed_data, \
    nominal_data

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize, pytest.mark.trees]

#: (preset, parameters): p = 1, 2, inf, 0.5, table attributes, the "ignore" policy
CASES = [
    ("minkowski", {"p": 1.0}),
    ("minkowski", {"p": 2.0}),
    ("chebyshev", {}),
    ("fractional", {"p": 0.5}),
    ("hvdm", {}),
    ("gower", {}),
    ("heom", {"missing": "max"}),
]


def _fit(name, params, X, y, nom):
    return Metric(name, nominal=nom, **params).fit(X, y)


@pytest.mark.parametrize("name,params", CASES)
def test_leaf_tiles_equal_brute_force(name, params):
    X, Q, y, nom = mixed_data(31, 1300, 40, n_cont=4, n_nom=3, p_missing=0.1)
    metric = _fit(name, params, X, y, nom)
    brute = brute_index(metric)
    algos = ["kd_tree"] + (["ball_tree"] if ball_tree_refusal(metric.plan_, metric.train_)
                           is None else [])
    # leaf_size 2000: one leaf of 1300 rows, scanned in tiles of at most TILE_ROWS
    assert _kernels.TILE_ROWS < 1300
    for algo in algos:
        for leaf in (1, 6, 40, 2000):
            tree = NeighborsIndex(metric, algorithm=algo, leaf_size=leaf).fit()
            assert_same_knn(tree, brute, Q, 9, n_jobs=(1, 2))
            assert_same_knn(tree, brute, None, 4, n_jobs=(2,), exclude_self=True)
            d0, _ = brute.kneighbors(Q, 9)
            r = float(np.median(d0))
            assert_same_radius(tree, brute, Q, r, n_jobs=(1, 2))


def test_leaf_tiles_with_ties():
    """Nominal rows with few values (exact ties at every distance) and missing values."""
    X, Q, y, nom = nominal_data(5, 900, 30, m=5, card=3, p_missing=0.05)
    for name in ("heom", "hvdm", "gower"):
        metric = Metric(name, nominal="all").fit(X, y)
        brute = brute_index(metric)
        for leaf in (3, 32):
            tree = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=leaf).fit()
            d, i = assert_same_knn(tree, brute, Q, 25, n_jobs=(1, 2))
            assert (d[:, 1:] == d[:, :-1]).any()        # ties are there
            assert_same_radius(tree, brute, Q, float(d[0, 5]))


def test_leaf_major_layout():
    """Each leaf [s, e) holds its rows attribute-major at offset s * width, as an
    independent numpy transposition gives; the index makes the copy once per tree and
    again when the tree changes; leaves that do not partition the rows are refused."""
    X, Q, y, nom = mixed_data(2, 500, 10, n_cont=3, n_nom=2, p_missing=0.1)
    metric = Metric("hvdm", nominal=nom).fit(X, y)
    idx = NeighborsIndex(metric, algorithm="kd_tree", leaf_size=7).fit()
    cplan = metric.plan_.cplan
    nodes = idx._searcher.nodes
    lm = _trees.leaf_major(cplan, idx._searcher.crows(), idx._searcher.perm, nodes)
    assert idx._searcher.leaf_rows() is idx._searcher.leaf_rows()
    rows = idx._rows.take(idx._searcher.perm)
    leaves = np.flatnonzero(nodes["left"][:, 0] < 0)
    assert len(leaves) > 10
    for name, block in (("c", rows.c), ("cpen", rows.cpen), ("o", rows.o), ("t", rows.t)):
        width = block.shape[1]
        for leaf in leaves:
            s, e = int(nodes["start"][leaf, 0]), int(nodes["end"][leaf, 0])
            got = lm[name][s * width:e * width].reshape(width, e - s)
            assert np.array_equal(got, block[s:e].T, equal_nan=True), (name, leaf)
    first = idx._searcher.leaf_rows()
    perm = idx._searcher.perm
    idx.insert(Q)
    assert idx._searcher.leaf_rows() is not first
    with pytest.raises(ValueError, match="partition"):
        bad = {k: v.copy() for k, v in nodes.items()}
        bad["end"][np.flatnonzero(bad["left"][:, 0] < 0)[0], 0] -= 1
        _trees.leaf_major(cplan, CRows(metric.train_), perm, bad)
    assert_same_knn(idx, brute_index(metric, np.vstack([X, Q])), Q, 5, n_jobs=(2,))


@pytest.mark.parametrize("name,params", CASES)
def test_radius_early_exit_equals_full_scan(name, params):
    X, Q, y, nom = mixed_data(17, 700, 30, n_cont=4, n_nom=3, p_missing=0.1)
    metric = _fit(name, params, X, y, nom)
    D = metric.pairwise(Q, X)
    finite = np.sort(D[np.isfinite(D)])
    # radii on existing distances (pairs exactly at r are inside), between them, 0, inf
    radii = [0.0, float(finite[len(finite) // 50]), float(finite[len(finite) // 3]),
             float(np.nextafter(finite[len(finite) // 7], 0)), math.inf]
    for r in radii:
        for nj in (1, 2):
            dl, il = metric.radius_neighbors(Q, r, n_jobs=nj)
            for q in range(len(Q)):
                j = np.flatnonzero(D[q] <= r)
                o = np.lexsort((j, D[q, j]))
                assert np.array_equal(il[q], j[o]), (r, q)
                assert np.array_equal(dl[q], D[q, j[o]]), (r, q)
    # exclude_self on the training rows, every query in one block
    r = radii[2]
    DX = metric.pairwise(X)
    dl, il = metric.radius_neighbors(None, r, exclude_self=True)
    for q in (0, 1, 350, 699):
        j = np.flatnonzero(DX[q] <= r)
        j = j[j != q]
        o = np.lexsort((j, DX[q, j]))
        assert np.array_equal(il[q], j[o]) and np.array_equal(dl[q], DX[q, j[o]])


@pytest.mark.parametrize("name,params", CASES)
def test_reduced_radius_keeps_every_pair_within_r(name, params):
    """Every pair at true distance <= r has a reduced distance <= reduced_radius(r)."""
    X, Q, y, nom = mixed_data(23, 300, 40, n_cont=4, n_nom=3, p_missing=0.1)
    metric = _fit(name, params, X, y, nom)
    D = metric.pairwise(Q, X)
    S = metric.pairwise(Q, X, reduced=True)
    for r in np.quantile(D, [0.0, 0.01, 0.2, 0.5, 1.0]):
        rred = _kernels.reduced_radius(metric.plan_.cplan, float(r))
        inside = D <= r
        assert inside.any() and (S[inside] <= rred).all()
    assert _kernels.reduced_radius(metric.plan_.cplan, math.inf) == math.inf
