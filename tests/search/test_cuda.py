"""device="cuda": the GPU searcher (hdist/_search/cuda.py) against the CPU path, bit for bit.

Runs on the emulated device (``HDIST_CUDA_EMULATE=1``: the same kernel source compiled by
the host's C compiler, its grid run as loops, driven by the same Python driver); with
``HDIST_TEST_CUDA_DEVICE=gpu`` (ci/gpu.sh) the same tests run on a real GPU through CuPy.
Every comparison is of float64 bit patterns: k-NN lists (with tie lists and tallies, and
with exclude_self), radius lists and pairwise matrices, for every kind of block the tile
kernel computes (continuous, overlap, value tables, embedded vectors), p = 1, 2, 0.5, 3, 4
and inf, weights and every missing-value policy, on random mixed tables with missing
values and on real datasets.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hdist
from hdist import _kernels
from hdist._core import statistics as _statistics
from hdist._search import cuda as _cuda
from hdist._search.cuda import CudaSearcher, CudaUnavailableError
from hdist._search.votes import TieTally

import strategies as S
from strategies import tables

REAL_GPU = os.environ.get("HDIST_TEST_CUDA_DEVICE", "emulated") == "gpu"

pytestmark = [pytest.mark.filterwarnings("ignore:column .* not seen in fit:UserWarning")]

STYLES = ["float", "object", "Int64", "category", "code", "float", "boolean", "offset",
          "float"]

CASES = [
    ("heom", {}), ("heom", dict(p=1.0)), ("heom", dict(p=0.5, missing="ignore")),
    ("heom", dict(p=3.0)), ("minkowski", dict(p=4.0, missing="ignore")),
    ("manhattan", {}), ("euclidean", {}), ("chebyshev", {}),
    ("chebyshev", dict(missing="ignore")), ("fractional", {}),
    ("gower", {}), ("gower", dict(weights=[1, 2, 0, 1, 1, 3, 1, 1, 0.5])),
    ("hvdm", {}), ("hvdm", dict(p=1.0, missing="ignore")), ("hvdm", dict(missing="max")),
    ("hvdm", dict(vdm="N1")), ("heom", dict(missing="symbol")), ("dvdm", {}),
    ("ivdm", {}), ("pvdm", {}), ("hvdm", dict(p=math.inf)),
]


@pytest.fixture(autouse=True)
def _device(monkeypatch):
    """The emulated device unless the real GPU is asked for."""
    if REAL_GPU:
        monkeypatch.delenv("HDIST_CUDA_EMULATE", raising=False)
    else:
        monkeypatch.setenv("HDIST_CUDA_EMULATE", "1")


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def assert_same(got, want):
    """Equal arrays, float64 compared bit for bit."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    if want.dtype.kind == "f":
        bad = np.flatnonzero(_bits(got).ravel() != _bits(want).ravel())
        assert bad.size == 0, "%d entries differ, first at %s: %r vs %r" % (
            bad.size, np.unravel_index(bad[0], want.shape), got.ravel()[bad[0]],
            want.ravel()[bad[0]])
    else:
        assert np.array_equal(got, want)


def _fit(seed, preset, params, n=150, n_queries=37, p_missing=0.2):
    train, queries = S.random_table(seed, n, STYLES, p_missing=p_missing, n_queries=n_queries)
    y = S.random_labels(seed, train.n)
    m = hdist.Metric(preset, nominal=train.override(), continuous=train.continuous_names(),
                     **params).fit(train.frame(), y)
    idx = hdist.NeighborsIndex(m, algorithm="brute").fit(train.frame())
    return idx, queries.frame(), y


def _searcher(idx, **kw):
    s = CudaSearcher(idx.metric_.plan_, idx._rows, **kw)
    s.build()
    return s


def _cpu_pairwise(idx, rows):
    out = np.empty((rows.n, idx._rows.n))
    _kernels.pairwise(idx.metric_.plan_.cplan, _kernels.CRows(rows),
                      _kernels.CRows(idx._rows), out, 1)
    return out


def _check_all(idx, Q, k=5, **kw):
    """knn (plain, tie lists, exclude_self), radius (and exclude_self) and pairwise of the
    device against the CPU's brute force."""
    s = _searcher(idx, **kw)
    rows = idx._query_rows(Q, False)
    d, i = idx.kneighbors(Q, k)
    f = s.knn(rows, k, 1)
    assert_same(f.dist, d)
    assert_same(f.ind, i)
    assert f.path == "cuda"
    assert np.array_equal(f.evaluations, np.full(rows.n, idx._rows.n))
    dt, it = idx._kneighbors(Q, k, ties=True)
    ft = s.knn(rows, k, 1, ties=True)
    assert_same(ft.dist, dt)
    assert_same(ft.ind, it)
    ds, is_ = idx.kneighbors(None, k, exclude_self=True)
    fs = s.knn(idx._rows, k, 1, exclude_self=True)
    assert_same(fs.dist, ds)
    assert_same(fs.ind, is_)
    finite = d[:, -1][np.isfinite(d[:, -1])]
    r = float(np.median(finite)) if finite.size else 1.0
    rd, ri = idx.radius_neighbors(Q, r)
    fr = s.radius(rows, r, 1)
    assert len(fr.dist) == len(rd)
    for a, b, c, e in zip(fr.dist, rd, fr.ind, ri):
        assert_same(a, b)
        assert_same(c, e)
    rd, ri = idx.radius_neighbors(None, r, exclude_self=True)
    fr = s.radius(idx._rows, r, 1, exclude_self=True)
    for a, b, c, e in zip(fr.dist, rd, fr.ind, ri):
        assert_same(a, b)
        assert_same(c, e)
    assert_same(s.pairwise(rows), _cpu_pairwise(idx, rows))
    return s


@pytest.mark.parametrize("preset,params", CASES)
def test_random_mixed_tables_bit_identical(preset, params):
    idx, Q, _ = _fit(3, preset, params)
    _check_all(idx, Q)


@pytest.mark.parametrize("preset,params", [("hvdm", {}), ("hvdm", dict(vdm="N1")),
                                           ("hvdm", dict(p=0.5, missing="ignore")),
                                           ("hvdm", dict(p=math.inf)), ("pvdm", {})])
def test_embedded_block(monkeypatch, preset, params):
    # no value table fits: nominal attributes become embedded vectors
    monkeypatch.setattr(_statistics, "TABLE_BUDGET", 0)
    idx, Q, _ = _fit(12, preset, params)
    assert idx.metric_.plan_.me > 0
    _check_all(idx, Q)


@pytest.mark.parametrize("preset,params", [("heom", {}), ("hvdm", dict(missing="max")),
                                           ("gower", {})])
def test_32_bit_codes(preset, params):
    """The kernels' variant that reads 32-bit codes (the one for codes past 32 767)."""
    idx, Q, _ = _fit(8, preset, params)
    s = _check_all(idx, Q, small_codes=False)
    assert not s.code16_
    assert _searcher(idx).code16_


def test_codes_beyond_16_bits():
    """A nominal attribute with 40 000 values: its codes do not fit 16 bits, so the rows
    go up with 32-bit codes."""
    import pandas as pd
    rng = np.random.default_rng(2)
    n = 40_000
    X = pd.DataFrame({"id": np.array(["v%d" % i for i in range(n)], dtype=object),
                      "x": rng.normal(size=n)})
    m = hdist.Metric("heom", nominal=["id"], continuous=["x"]).fit(X)
    idx = hdist.NeighborsIndex(m, algorithm="brute").fit(X)
    s = _searcher(idx)
    assert not s.code16_
    rows = idx._query_rows(X.iloc[-5:], False)
    d, i = idx.kneighbors(X.iloc[-5:], 3)
    f = s.knn(rows, 3, 1)
    assert_same(f.dist, d)
    assert_same(f.ind, i)


@pytest.mark.parametrize("preset,params", [("heom", {}), ("gower", {}), ("hvdm", {}),
                                           ("chebyshev", {})])
def test_small_blocks_many_chunks(monkeypatch, preset, params):
    """Blocks of 7 queries, 3 threads per block and chunks of a few rows: every merge of
    the device's heaps runs."""
    monkeypatch.setattr(CudaSearcher, "_knn_chunks", lambda self, nqb, K, T: 5)
    idx, Q, _ = _fit(5, preset, params, n=90, n_queries=23)
    _check_all(idx, Q, k=4, block_rows=7, threads_per_block=3)


def _tie_heavy(seed, n=300, p=2.0, preset="minkowski"):
    """Whole numbers of a small range and nominal columns of two values: large groups of
    rows at the same distance."""
    rng = np.random.default_rng(seed)
    import pandas as pd
    X = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float),
                      "b": rng.integers(0, 2, n).astype(float),
                      "c": rng.choice(["x", "y"], n), "d": rng.choice(["u", "v"], n)})
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    kw = dict(p=p) if preset == "minkowski" else {}
    m = hdist.Metric(preset, nominal=["c", "d"], continuous=["a", "b"], **kw).fit(X)
    return hdist.NeighborsIndex(m, algorithm="brute").fit(X), X


@pytest.mark.parametrize("p", [1.0, 2.0, 0.5, math.inf])
def test_large_tie_groups(p):
    """The k-th distance shared by many rows: the device's candidates are asked again
    with more room until certified (tie lists hold every tied row)."""
    idx, X = _tie_heavy(7, p=p)
    s = _check_all(idx, X.iloc[::9], k=6)
    assert s.knn(idx._query_rows(X.iloc[::9], False), 6, 1, ties=True).extra["rounds"] >= 2


def test_tie_groups_beyond_k_max_finished_on_the_cpu(monkeypatch):
    monkeypatch.setattr(_cuda, "K_MAX", 16)
    idx, X = _tie_heavy(8)
    s = _check_all(idx, X.iloc[::11], k=6)
    f = s.knn(idx._query_rows(X.iloc[::11], False), 6, 1, ties=True)
    assert f.extra["host_queries"] > 0


def test_tie_tally_equals_the_cpu():
    idx, X = _tie_heavy(9, preset="heom")
    codes = np.arange(idx._rows.n) % 3
    rows = idx._query_rows(X.iloc[::5], False)
    cpu = TieTally(codes=codes, n_classes=3)
    d, i = idx._kneighbors(X.iloc[::5], 4, ties=cpu)
    dev = TieTally(codes=codes, n_classes=3)
    f = _searcher(idx).knn(rows, 4, 1, ties=dev)
    assert_same(f.dist, d)
    assert_same(f.ind, i)
    (c1, a1), (c2, a2) = dev.result(rows.n), cpu.result(rows.n)
    assert np.array_equal(c1, c2) and c1.sum() > 0
    assert_same(a1, a2)


def test_duplicates_outside_the_trusted_range():
    """Duplicate rows: reduced distance 0 at p = 2, outside the range where the root of
    the reduced distance is trusted, finished by the CPU's pair function."""
    import pandas as pd
    rng = np.random.default_rng(1)
    base = pd.DataFrame({"x": rng.normal(size=40), "c": rng.choice(["a", "b", "c"], 40)})
    X = pd.concat([base, base.iloc[:15]], ignore_index=True)
    m = hdist.Metric("heom", nominal=["c"], continuous=["x"]).fit(X)
    idx = hdist.NeighborsIndex(m, algorithm="brute").fit(X)
    _check_all(idx, X.iloc[::3], k=3)


@pytest.mark.needs_data
@pytest.mark.parametrize("name", ["Zoo", "Glass", "credit-a", "german"])
def test_real_data_bit_identical(name):
    from strategies import load_dataset
    ds = load_dataset(name, codes_as_numbers=False)
    frame = ds.frame()
    y = np.array(ds.y, dtype=object)
    nominal = [c for c, kind in zip(ds.table.names, ds.table.kinds) if kind != "continuous"]
    for preset in ("heom", "hvdm", "gower"):
        m = hdist.Metric(preset, nominal=nominal, continuous="rest").fit(frame, y)
        idx = hdist.NeighborsIndex(m, algorithm="brute").fit(frame)
        _check_all(idx, frame.iloc[::5], k=5)


def test_general_p_refused():
    idx, _, _ = _fit(4, "minkowski", dict(p=1.5))
    reason = CudaSearcher.refusal(idx.metric_.plan_, idx._rows)
    assert reason and "p = 1.5" in reason
    with pytest.raises(ValueError, match="pow"):
        CudaSearcher(idx.metric_.plan_, idx._rows)


def test_bad_parameters_named():
    idx, _, _ = _fit(4, "heom", {}, n=20, n_queries=2)
    with pytest.raises(ValueError, match="block_rows"):
        CudaSearcher(idx.metric_.plan_, idx._rows, block_rows=0)
    with pytest.raises(ValueError, match="threads_per_block"):
        CudaSearcher(idx.metric_.plan_, idx._rows, threads_per_block=0)
    with pytest.raises(TypeError, match="colour"):
        CudaSearcher(idx.metric_.plan_, idx._rows, colour=1)
    s = _searcher(idx)
    with pytest.raises(ValueError, match="k must be"):
        s.knn(idx._rows, 0, 1)


@pytest.mark.skipif(REAL_GPU, reason="the real GPU run has CuPy")
def test_without_cupy_the_error_names_it(monkeypatch):
    monkeypatch.delenv("HDIST_CUDA_EMULATE", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)
    idx, _, _ = _fit(4, "heom", {}, n=20, n_queries=2)
    s = CudaSearcher(idx.metric_.plan_, idx._rows)
    with pytest.raises(CudaUnavailableError, match="CuPy"):
        s.build()


def _short_of_memory(monkeypatch, s, fails):
    """Make the launches of searcher ``s`` raise MemoryError where
    ``fails(kernel, grid, args, count)`` says so (``count``: launches so far, this one
    included); returns the launches that ran, ``(kernel, grid)``."""
    launch = s.dev.launch
    ran, count = [], [0]

    def short(kernel, grid, block, shared, args):
        count[0] += 1
        if fails(kernel, grid, args, count[0]):
            raise MemoryError("out of memory")
        ran.append((kernel, grid))
        launch(kernel, grid, block, shared, args)

    monkeypatch.setattr(s.dev, "launch", short)
    return ran


def _check_knn(idx, s, Q, k, ties=False):
    d, i = idx._kneighbors(Q, k, ties=ties)
    f = s.knn(idx._query_rows(Q, False), k, 1, ties=ties)
    assert_same(f.dist, d)
    assert_same(f.ind, i)
    return f


def test_out_of_memory_splits_the_block(monkeypatch):
    """A block that does not fit in device memory is split until it does; the results
    are unchanged."""
    idx, Q, _ = _fit(6, "hvdm", {}, n=80, n_queries=30)
    s = _searcher(idx)
    ran = _short_of_memory(monkeypatch, s, lambda kernel, grid, args, count: grid[0] > 4)
    _check_knn(idx, s, Q, 3)
    rows = idx._query_rows(Q, False)
    assert_same(s.pairwise(rows), _cpu_pairwise(idx, rows))
    assert ran and max(grid[0] for _, grid in ran) <= 4


def test_out_of_memory_with_a_block_pending(monkeypatch):
    """Out of memory while the block before is still pending: that block is finished
    (its memory freed) and the launch tried again."""
    idx, Q, _ = _fit(7, "heom", {}, n=70, n_queries=26)
    s = _searcher(idx, block_rows=5)
    ran = _short_of_memory(monkeypatch, s, lambda kernel, grid, args, count: count == 5)
    _check_knn(idx, s, Q, 4)
    assert len(ran) > 5


def test_out_of_memory_asking_again_finishes_on_the_cpu(monkeypatch):
    """No room for a larger K when a query's candidates are not certified: the CPU's
    kernel answers those queries."""
    idx, X = _tie_heavy(10)
    s = _searcher(idx)
    # K (args[-4]) beyond the first round's 14 does not fit
    _short_of_memory(monkeypatch, s,
                     lambda kernel, grid, args, count: kernel == "hd_knn_scan" and args[-4] > 14)
    f = _check_knn(idx, s, X.iloc[::13], 6, ties=True)
    assert f.extra["host_queries"] > 0


def test_insert_uploads_again():
    idx, Q, _ = _fit(2, "gower", {}, n=60, n_queries=9)
    s = _searcher(idx)
    new = idx._query_rows(Q, False)
    rows = idx._rows.concat(new)
    s.insert(rows, new, idx._rows.n)
    idx.insert(Q)
    rows_q = idx._query_rows(Q.iloc[:4], False)
    d, i = idx.kneighbors(Q.iloc[:4], 3)
    f = s.knn(rows_q, 3, 1)
    assert_same(f.dist, d)
    assert_same(f.ind, i)


def test_cpu_searches_never_import_cupy():
    """A CPU-only installation is unchanged: importing the device's module and searching
    on the CPU loads no CuPy."""
    import subprocess
    code = ("import sys, numpy as np, hdist, hdist._search.cuda\n"
            "X = np.random.default_rng(0).normal(size=(50, 3))\n"
            "hdist.NeighborsIndex('euclidean').fit(X).kneighbors(X[:3], 2)\n"
            "assert 'cupy' not in sys.modules, 'cupy imported'\n")
    env = dict(os.environ)
    env.pop("HDIST_CUDA_EMULATE", None)
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# random tables of whole numbers: the kinds inferred are the ones meant (the warning itself
# is tested in tests/core)
@pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=tables(min_rows=2, max_rows=24, n_queries=(1, 6), labels=True, max_cols=5),
       name=st.sampled_from(sorted({i.name for i in hdist.METRICS.values()})),
       policy=st.sampled_from(("one", "max", "ignore", "symbol")),
       p=st.sampled_from((0.5, 1.0, 2.0, 3.0, 4.0, math.inf)), k=st.integers(1, 6))
def test_random_tables_every_preset(data, name, policy, p, k):
    """Every preset, missing-value policy and p the device serves, on random small tables
    (hypothesis), against the CPU's brute force."""
    train, queries, y = data
    info = hdist.METRICS[name]
    assume(train.m >= 2 or info.nominal not in ("hds", "add"))
    nominal = list(range(train.m)) if info.continuous is None else train.nominal_positions()
    params = {"missing": policy, "nominal": nominal}
    if "p" in info.params and name != "fractional":
        params["p"] = p
    m = hdist.Metric(name, **params).fit(train.object_array(), y)
    assume(CudaSearcher.refusal(m.plan_) is None)
    idx = hdist.NeighborsIndex(m, algorithm="brute").fit(train.object_array())
    k = min(k, train.n - 1) if train.n > 1 else 1
    Q = queries.object_array()
    s = _searcher(idx)
    rows = idx._query_rows(Q, False)
    d, i = idx._kneighbors(Q, k, ties=True)
    f = s.knn(rows, k, 1, ties=True)
    assert_same(f.dist, d)
    assert_same(f.ind, i)
    if train.n > k:
        d, i = idx.kneighbors(None, k, exclude_self=True)
        f = s.knn(idx._rows, k, 1, exclude_self=True)
        assert_same(f.dist, d)
        assert_same(f.ind, i)
    assert_same(s.pairwise(rows), _cpu_pairwise(idx, rows))


def test_edge_sizes():
    """One reference row; k equal to every row; exclude_self over two rows; queries with
    every value missing."""
    import pandas as pd
    X = pd.DataFrame({"x": [1.0, 2.0, np.nan, 4.0], "c": ["a", None, "b", "a"]})
    m = hdist.Metric("heom", nominal=["c"], continuous=["x"]).fit(X)
    for rows_X in (X.iloc[:1], X.iloc[:2], X):
        idx = hdist.NeighborsIndex(m, algorithm="brute").fit(rows_X)
        n = len(rows_X)
        Q = pd.DataFrame({"x": [np.nan, 3.0], "c": [None, "z"]})
        rows = idx._query_rows(Q, False)
        s = _searcher(idx)
        d, i = idx._kneighbors(Q, n, ties=True)
        f = s.knn(rows, n, 1, ties=True)
        assert_same(f.dist, d)
        assert_same(f.ind, i)
        if n > 1:
            d, i = idx.kneighbors(None, n - 1, exclude_self=True)
            f = s.knn(idx._rows, n - 1, 1, exclude_self=True)
            assert_same(f.dist, d)
            assert_same(f.ind, i)
        assert_same(s.pairwise(rows), _cpu_pairwise(idx, rows))
        f = s.radius(rows, np.inf, 1)
        rd, ri = idx.radius_neighbors(Q, np.inf)
        for a, b, c, e in zip(f.dist, rd, f.ind, ri):
            assert_same(a, b)
            assert_same(c, e)


def test_neighbors_index_algorithm_cuda():
    """The searcher registered as "cuda": NeighborsIndex(algorithm="cuda") answers as
    brute force does (k-NN, exclude_self, radius, insertion, a pickled copy) and says so in
    search_."""
    import pickle
    train, queries = S.random_table(9, 150, STYLES, p_missing=0.2, n_queries=37)
    m = hdist.Metric("hvdm", nominal=train.override(), continuous=train.continuous_names())
    m.fit(train.frame(), S.random_labels(9, train.n))
    idx = hdist.NeighborsIndex(m, algorithm="brute").fit(train.frame())
    dev = hdist.NeighborsIndex(m, algorithm="cuda").fit(train.frame())
    Q = queries.frame()
    assert dev.algorithm_ == "cuda"
    d, i = dev.kneighbors(Q, 4)
    want = idx.kneighbors(Q, 4)
    assert_same(d, want[0])
    assert_same(i, want[1])
    assert dev.search_["path"] == "cuda"
    d, i = dev.kneighbors(None, 3, exclude_self=True)
    want = idx.kneighbors(None, 3, exclude_self=True)
    assert_same(d, want[0])
    assert_same(i, want[1])
    for a, b in zip(dev.radius_neighbors(Q, 0.8)[0], idx.radius_neighbors(Q, 0.8)[0]):
        assert_same(a, b)
    again = pickle.loads(pickle.dumps(dev))
    assert_same(again.kneighbors(Q, 4)[0], idx.kneighbors(Q, 4)[0])
    dev.insert(Q.iloc[:5])
    idx.insert(Q.iloc[:5])
    d, i = dev.kneighbors(Q, 4)
    want = idx.kneighbors(Q, 4)
    assert_same(d, want[0])
    assert_same(i, want[1])


def test_classifier_votes_with_tied_rows():
    """A k-NN classifier on the "cuda" algorithm with ties="include" (the tied rows
    tallied, exclude_self in leave-one-out) votes as on brute force."""
    train, queries = S.random_table(4, 120, STYLES, p_missing=0.2, n_queries=30)
    y = np.array(S.random_labels(4, train.n), dtype=object)
    kw = dict(metric="heom", ties="include",
              metric_params=dict(nominal=train.override(),
                                 continuous=train.continuous_names()))
    dev = hdist.KNeighborsClassifier(7, algorithm="cuda", **kw).fit(train.frame(), y)
    cpu = hdist.KNeighborsClassifier(7, algorithm="brute", **kw).fit(train.frame(), y)
    assert_same(dev.predict_proba(queries.frame()), cpu.predict_proba(queries.frame()))
    assert np.array_equal(dev.predict(None), cpu.predict(None))


def test_threads_searching_at_once():
    """Searches from several threads at once (the emulated device runs one grid at a
    time: its grid position is one set of variables)."""
    import threading
    idx, Q, _ = _fit(11, "gower", {}, n=300, n_queries=40)
    s = _searcher(idx, block_rows=8)
    rows = idx._query_rows(Q, False)
    want = idx.kneighbors(Q, 5)
    got, errors = [None] * 6, []

    def search(t):
        try:
            got[t] = s.knn(rows, 5, 1)
        except Exception as e:      # reported below
            errors.append(e)

    threads = [threading.Thread(target=search, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for f in got:
        assert_same(f.dist, want[0])
        assert_same(f.ind, want[1])


def test_interrupted_between_blocks_then_usable(monkeypatch):
    """Ctrl-C between two blocks stops the search there; the searcher answers the next
    search as before."""
    idx, Q, _ = _fit(12, "heom", {}, n=80, n_queries=30)
    s = _searcher(idx, block_rows=6)
    launch = s.dev.launch
    count = [0]

    def interrupted(kernel, grid, block, shared, args):
        count[0] += 1
        if count[0] == 5:
            raise KeyboardInterrupt
        launch(kernel, grid, block, shared, args)

    monkeypatch.setattr(s.dev, "launch", interrupted)
    with pytest.raises(KeyboardInterrupt):
        s.knn(idx._query_rows(Q, False), 3, 1)
    _check_knn(idx, s, Q, 3)


@pytest.mark.parametrize("targets", [1, 2])
def test_regressor_tallies_tied_targets_as_the_cpu(targets):
    """A k-NN regressor on the "cuda" algorithm with ties="include": the tied rows'
    targets are summed as the compiled tally sums them (queries and leave-one-out)."""
    import pandas as pd
    rng = np.random.default_rng(3)
    n = 400
    X = pd.DataFrame({"a": rng.integers(0, 3, n).astype(float), "c": rng.choice(["x", "y"], n)})
    y = rng.normal(size=n) * 1e3 + 0.1
    if targets == 2:
        y = np.column_stack([y, 3.7 * y - 1.0])
    kw = dict(metric="heom", ties="include",
              metric_params=dict(nominal=["c"], continuous=["a"]))
    dev = hdist.KNeighborsRegressor(5, algorithm="cuda", **kw).fit(X, y)
    cpu = hdist.KNeighborsRegressor(5, algorithm="brute", **kw).fit(X, y)
    assert_same(dev.predict(X.iloc[:100]), cpu.predict(X.iloc[:100]))
    assert_same(dev.predict(None), cpu.predict(None))
