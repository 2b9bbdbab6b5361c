"""The tile kernel (``hdist/_kernels/tile.h``) against the pair kernel and the plain reference.

Brute-force k-NN, radius search and pairwise matrices compute a query against a block of
reference rows stored attribute-major, one instruction-set variant chosen at import.  Every
pair must get exactly the value of the pair kernel (``pair_reduced``, reached here through
``_kernels.pair_terms``), on every variant, and agree with the numpy reference of the test
suite: random mixed tables with missing and unseen values, p in {1, 2, inf, 0.5, 3}, the
"ignore" policy, value tables and embedded vectors.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from hdist import Metric
from hdist import _kernels
from hdist._core import statistics as _estimators

import strategies as S
from reference import reference_metric
from datadir import ROOT

# the random query tables hold unseen values on purpose
pytestmark = pytest.mark.filterwarnings("ignore:column .* not seen in fit:UserWarning")
pytestmark = [pytestmark, pytest.mark.kernels, pytest.mark.sanitize]

STYLES = ["float", "object", "Int64", "category", "code", "float", "boolean", "offset",
          "float"]

CASES = [
    ("manhattan", {}), ("euclidean", {}), ("chebyshev", {}), ("fractional", {}),
    ("minkowski", dict(p=3.0)),
    ("heom", dict(missing="ignore")), ("heom", dict(p=0.5, missing="ignore")),
    ("chebyshev", dict(missing="ignore")), ("minkowski", dict(p=3.0, missing="ignore")),
    ("gower", dict(weights=[1, 2, 0, 1, 1, 3, 1, 1, 0.5])),
    ("hvdm", {}), ("hvdm", dict(p=1.0, missing="ignore")), ("hvdm", dict(missing="max")),
    ("heom", dict(missing="symbol")),
]


def _fit(seed, preset, params, n=130, n_queries=41, p_missing=0.2):
    train, queries = S.random_table(seed, n, STYLES, p_missing=p_missing, n_queries=n_queries)
    y = S.random_labels(seed, train.n)
    m = Metric(preset, nominal=train.override(), continuous=train.continuous_names(),
               **params).fit(train.frame(), y)
    return m, train, queries, y


def _pair_kernel(m, Q):
    """Reduced distances by the pair kernel, one call per pair."""
    cq = _kernels.CRows(m.encode(Q))
    ct = _kernels.CRows(m.train_)
    out = np.empty((cq.n, ct.n))
    for i in range(cq.n):
        for j in range(ct.n):
            out[i, j] = _kernels.pair_terms(m.plan_.cplan, cq, i, ct, j)[-1]
    return out


@pytest.mark.parametrize("preset,params", CASES)
def test_tile_equals_pair_kernel_and_reference(preset, params):
    m, train, queries, y = _fit(11, preset, params)
    Q = queries.frame()
    tile = m.pairwise(Q, train.frame(), reduced=True, n_jobs=1)
    assert np.array_equal(tile, _pair_kernel(m, Q))
    ref_params = {k: v for k, v in params.items()}
    r = reference_metric(preset, train.kinds, **ref_params).fit(train.columns, y)
    want = np.asarray(r.pairwise(queries.rows(), train.rows(), reduced=True), dtype=float)
    np.testing.assert_allclose(tile, want, rtol=1e-10, atol=1e-12 * max(1.0, want.max()))


@pytest.mark.parametrize("preset,params", [("hvdm", {}), ("hvdm", dict(vdm="N1")),
                                           ("hvdm", dict(p=0.5, missing="ignore")),
                                           ("hvdm", dict(p=np.inf))])
def test_tile_embedded_block(monkeypatch, preset, params):
    # no value table fits: nominal attributes become embedded class-probability vectors
    monkeypatch.setattr(_estimators, "TABLE_BUDGET", 0)
    m, train, queries, y = _fit(12, preset, params)
    assert m.plan_.me > 0
    Q = queries.frame()
    tile = m.pairwise(Q, train.frame(), reduced=True, n_jobs=1)
    assert np.array_equal(tile, _pair_kernel(m, Q))
    r = reference_metric(preset, train.kinds, **params).fit(train.columns, y)
    want = np.asarray(r.pairwise(queries.rows(), train.rows(), reduced=True), dtype=float)
    np.testing.assert_allclose(tile, want, rtol=1e-10, atol=1e-12 * max(1.0, want.max()))


@pytest.mark.parametrize("preset,params", [("manhattan", {}), ("chebyshev", {}),
                                           ("gower", {}), ("heom", dict(p=0.5)),
                                           ("heom", dict(p=3.0, missing="ignore")),
                                           ("hvdm", {})])
def test_every_isa_variant_identical(preset, params):
    m, train, queries, _ = _fit(13, preset, params, n=600, n_queries=60)
    Q, X = queries.frame(), train.frame()
    before = _kernels.isa()
    results = {}
    try:
        for name in _kernels.isa_variants():
            assert _kernels.set_isa(name) == name
            d, i = m.kneighbors(Q, 6, n_jobs=2)
            p = m.pairwise(Q, X, n_jobs=2)
            rd, ri = m.radius_neighbors(Q, float(np.median(p)), n_jobs=2)
            results[name] = (d, i, p, rd, ri)
    finally:
        _kernels.set_isa(before)
    assert "baseline" in results
    base = results["baseline"]
    for name, got in results.items():
        for a, b in zip(got[:3], base[:3]):
            assert np.array_equal(a, b), name
        for a, b in zip(got[3:], base[3:]):
            assert all(np.array_equal(u, v) for u, v in zip(a, b)), name


@pytest.mark.parametrize("preset,params", [("manhattan", {}), ("heom", dict(p=3.0)),
                                           ("chebyshev", dict(missing="ignore"))])
def test_tile_sizes_and_offsets(preset, params):
    # tiles of every size and starting point (the early exit at block ends included)
    m, train, queries, _ = _fit(14, preset, params, n=700, n_queries=30, p_missing=0.1)
    cq = _kernels.CRows(m.encode(queries.frame()))
    ct = _kernels.CRows(m.train_)
    base = _kernels.knn(m.plan_.cplan, cq, ct, 9, 1, tile=1)
    for tile in (2, 7, 64, 100, 512, 5000):
        for nj, strategy in ((1, "queries"), (2, "queries"), (2, "references")):
            d, i = _kernels.knn(m.plan_.cplan, cq, ct, 9, nj, tile=tile, strategy=strategy)
            assert np.array_equal(d, base[0]) and np.array_equal(i, base[1]), (tile, nj)
    # a pairwise block that starts mid-tile (symmetric path) equals the full matrix
    full = m.pairwise(train.frame(), n_jobs=2)
    assert np.array_equal(full, full.T)
    assert np.array_equal(full, m.pairwise(train.frame(), train.frame(), n_jobs=1))


def test_isa_environment_variable():
    code = ("import hdist, hdist._core.config, hdist._kernels as k; print(k.isa()); "
            "print(hdist._core.config.config()['isa'])")
    env = dict(os.environ, HDIST_ISA="baseline")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["baseline", "baseline"]
    env["HDIST_ISA"] = "no-such-isa"
    out = subprocess.run([sys.executable, "-W", "error", "-c", "import hdist._kernels"],
                         env=env, capture_output=True, text=True, timeout=120,
                         cwd=str(ROOT))
    assert out.returncode != 0 and "HDIST_ISA" in out.stderr
    with pytest.raises(ValueError, match="must be one of"):
        _kernels.set_isa("sse9")


def test_bf16_environment_variable():
    # HDIST_BF16=0 keeps the filter's float32 tables; by default the bfloat16 ones are
    # used exactly when the machine has AVX512_BF16 (and the AVX-512 variant runs)
    code = ("import hdist._core.config as c, hdist._kernels as k; "
            "print(k.bf16_bounds(), c.config()['bf16_bounds'], k.bf16_bounds_available())")
    root = str(ROOT)
    for value, isa in (("0", "best"), ("1", "best"), ("1", "baseline")):
        env = dict(os.environ, HDIST_BF16=value, HDIST_ISA=isa)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=120, cwd=root)
        assert out.returncode == 0, out.stderr
        on, reported, available = out.stdout.split()
        assert on == reported
        want = value == "1" and available == "True" and isa == "best" \
            and "avx512" in _kernels.isa_variants()
        assert on == str(want), (value, isa, out.stdout)
    if not _kernels.bf16_bounds_available():
        with pytest.raises(ValueError, match="AVX512_BF16"):
            _kernels.set_bf16_bounds(True)


@pytest.mark.parametrize("preset,params", [("heom", dict(missing="ignore")), ("hvdm", {}),
                                           ("gower", {})])
def test_tile_by_tile_transposition(monkeypatch, preset, params):
    # a reference set too large for an attribute-major copy is transposed tile by tile
    # into per-thread buffers: same results on every path
    m, train, queries, _ = _fit(15, preset, params, n=900, n_queries=25)
    Q = queries.frame()
    want_p = m.pairwise(Q, train.frame(), n_jobs=1)
    want_k = m.kneighbors(Q, 5, n_jobs=1)
    r = float(np.median(want_p))
    want_r = m.radius_neighbors(Q, r, n_jobs=1)
    # the symmetric matrix: the upper triangle of the full one, also in chunks of rows
    # larger than a tile (rows whose diagonal lies past the chunk's first tiles)
    want_s = m.pairwise(train.frame(), n_jobs=1)
    full = m.pairwise(train.frame(), train.frame(), n_jobs=1)
    assert np.array_equal(np.triu(want_s), np.triu(full)) and np.array_equal(want_s, want_s.T)
    for chunk in (1, 600):
        got = np.empty_like(want_s)
        _kernels.pairwise(m.plan_.cplan, _kernels.CRows(m.train_), _kernels.CRows(m.train_),
                          got, 2, symmetric=True, chunk=chunk)
        assert np.array_equal(got, want_s), chunk
    monkeypatch.setattr(_kernels.tiles, "ATTR_MAJOR_BYTES", 0)
    cq = _kernels.CRows(m.encode(Q))
    for nj in (1, 2):
        ct = _kernels.CRows(m.train_)      # fresh: no copy cached
        got = np.empty_like(want_p)
        _kernels.pairwise(m.plan_.cplan, cq, ct, got, nj)
        assert np.array_equal(got, want_p)
        for chunk in (1, 8, 600):          # rows per pass over the tiles, > a tile too
            got = np.empty_like(want_s)
            _kernels.pairwise(m.plan_.cplan, ct, ct, got, nj, symmetric=True, chunk=chunk)
            assert np.array_equal(got, want_s), chunk
            dl, il = _kernels.radius(m.plan_.cplan, cq, ct, r, nj, chunk=chunk)
            assert all(np.array_equal(a, b) for a, b in zip(il, want_r[1]))
            assert all(np.array_equal(a, b) for a, b in zip(dl, want_r[0]))
        for strategy in ("queries", "references"):
            d, i = _kernels.knn(m.plan_.cplan, cq, ct, 5, nj, tile=77, strategy=strategy)
            assert np.array_equal(d, want_k[0]) and np.array_equal(i, want_k[1])
        dl, il = _kernels.radius(m.plan_.cplan, cq, ct, r, nj)
        assert all(np.array_equal(a, b) for a, b in zip(il, want_r[1]))
        assert all(np.array_equal(a, b) for a, b in zip(dl, want_r[0]))
