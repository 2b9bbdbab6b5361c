"""``device="cuda"`` on every public entry point: ``Metric.kneighbors``,
``radius_neighbors`` and ``pairwise``, ``NeighborsIndex``, the estimators and
``hdist knn --device``, each equal to ``device="cpu"`` bit for bit, and the errors
(an unknown device, a search structure other than brute force, no CuPy).

Runs on the emulated device (``HDIST_CUDA_EMULATE=1``) unless
``HDIST_TEST_CUDA_DEVICE=gpu`` asks for the real GPU (ci/gpu.sh), as
tests/search/test_cuda.py does.
"""
from __future__ import annotations

import math
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import hdist
from hdist import cli
from hdist.neighbors import CudaUnavailableError

import strategies as S
# test_cuda's autouse fixture: the emulated device unless the real GPU is asked for
from test_cuda import STYLES, _device, assert_same  # noqa: F401

pytestmark = [pytest.mark.filterwarnings("ignore:column .* not seen in fit:UserWarning"),
              pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")]

CASES = [("heom", {}), ("hvdm", {}), ("gower", {}), ("chebyshev", dict(missing="ignore")),
         ("hvdm", dict(p=1.0, missing="max")), ("ivdm", {})]


@pytest.fixture
def no_cupy(monkeypatch):
    """Neither the emulated device nor CuPy: ``import cupy`` fails."""
    monkeypatch.delenv("HDIST_CUDA_EMULATE", raising=False)
    monkeypatch.setitem(sys.modules, "cupy", None)


def _table(seed, n=140, n_queries=33):
    train, queries = S.random_table(seed, n, STYLES, p_missing=0.2, n_queries=n_queries)
    y = np.array(S.random_labels(seed, train.n), dtype=object)
    params = dict(nominal=train.override(), continuous=train.continuous_names())
    return train.frame(), queries.frame(), y, params


def _same_lists(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert_same(a, b)


def _radius(m, Q, k=5):
    """A radius that holds some rows and leaves others out: the median k-th distance."""
    d = m.kneighbors(Q, k)[0][:, -1]
    d = d[np.isfinite(d)]
    return float(np.median(d)) if d.size else 1.0


# -- Metric ----------------------------------------------------------------------------

@pytest.mark.parametrize("preset,params", CASES)
def test_metric_searches_and_pairwise_on_the_device(preset, params):
    X, Q, y, kinds = _table(1)
    m = hdist.Metric(preset, **kinds, **params).fit(X, y)
    for args, kw in (((Q, 5), {}), ((None, 4), dict(exclude_self=True))):
        want = m.kneighbors(*args, **kw)
        got = m.kneighbors(*args, device="cuda", **kw)
        assert m.search_["algorithm"] == "cuda" and m.search_["path"] == "cuda"
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])
    want = m._kneighbors(Q, 5, ties=True)
    got = m._kneighbors(Q, 5, ties=True, device="cuda")
    assert_same(got[0], want[0])
    assert_same(got[1], want[1])
    r = _radius(m, Q)
    for args, kw in (((Q, r), {}), ((None, r), dict(exclude_self=True))):
        wd, wi = m.radius_neighbors(*args, **kw)
        gd, gi = m.radius_neighbors(*args, device="cuda", **kw)
        _same_lists(gd, wd)
        _same_lists(gi, wi)
    for reduced in (False, True):
        assert_same(m.pairwise(Q, X, reduced=reduced, device="cuda"),
                    m.pairwise(Q, X, reduced=reduced))
        assert_same(m.pairwise(X, reduced=reduced, device="cuda"),
                    m.pairwise(X, reduced=reduced))


def test_metric_pairwise_by_blocks_and_into_out():
    X, Q, y, kinds = _table(2, n=90)
    m = hdist.Metric("hvdm", **kinds).fit(X, y)
    seen = []
    got = m.pairwise(X, device="cuda", progress=lambda done, total: seen.append(done))
    assert seen and seen[-1] == len(X)
    assert_same(got, m.pairwise(X))
    out = np.empty((len(Q), len(X)))
    assert m.pairwise(Q, X, out=out, device="cuda") is out
    assert_same(out, m.pairwise(Q, X))
    seen.clear()
    assert_same(m.pairwise(Q, X, device="cuda", progress=lambda d, t: seen.append(d)),
                m.pairwise(Q, X))
    assert seen[-1] == len(Q)


def test_metric_uploads_its_rows_once_per_fit():
    X, Q, y, kinds = _table(3, n=60)
    m = hdist.Metric("heom", **kinds).fit(X, y)
    m.kneighbors(Q, 3, device="cuda")
    index = m._search_index("cuda")
    searcher = index._searcher
    m.radius_neighbors(Q, 0.5, device="cuda")
    m.kneighbors(Q, 2, device="cuda")
    assert m._search_index("cuda") is index and index._searcher is searcher
    assert m._search_index("cpu") is not index
    m.fit(X.iloc[:50], y[:50])                  # a new fit: its rows uploaded again
    assert m._search_index("cuda") is not index
    d, i = m.kneighbors(Q, 3, device="cuda")
    assert_same(d, m.kneighbors(Q, 3)[0])
    again = pickle.loads(pickle.dumps(m))       # the device's copy is not pickled
    assert_same(again.kneighbors(Q, 3, device="cuda")[1], i)


# -- NeighborsIndex ----------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["auto", "brute"])
def test_neighbors_index_device(algorithm):
    X, Q, y, kinds = _table(4)
    m = hdist.Metric("gower", **kinds).fit(X, y)
    cpu = hdist.NeighborsIndex(m, algorithm=algorithm).fit()
    dev = hdist.NeighborsIndex(m, algorithm=algorithm, device="cuda").fit()
    assert dev.algorithm == algorithm and dev.device == "cuda"
    assert dev.algorithm_ == "cuda"
    assert "device='cuda'" in repr(dev) and "device" not in repr(cpu)
    for args, kw in (((Q, 6), {}), ((None, 6), dict(exclude_self=True))):
        got, want = dev.kneighbors(*args, **kw), cpu.kneighbors(*args, **kw)
        assert_same(got[0], want[0])
        assert_same(got[1], want[1])
    assert dev.search_["algorithm"] == "cuda" and "device='cuda'" in dev.search_["why"]
    r = _radius(cpu, Q)
    for args, kw in (((Q, r), {}), ((None, r), dict(exclude_self=True))):
        got, want = dev.radius_neighbors(*args, **kw), cpu.radius_neighbors(*args, **kw)
        _same_lists(got[0], want[0])
        _same_lists(got[1], want[1])
    dev.insert(Q.iloc[:4])
    cpu.insert(Q.iloc[:4])
    assert_same(dev.kneighbors(Q, 6)[1], cpu.kneighbors(Q, 6)[1])


# -- estimators ------------------------------------------------------------------------

def test_classifier_with_tied_rows_on_the_device():
    X, Q, y, kinds = _table(5, n=160)
    kw = dict(metric="heom", ties="include", metric_params=kinds)
    dev = hdist.KNeighborsClassifier(7, device="cuda", **kw).fit(X, y)
    cpu = hdist.KNeighborsClassifier(7, **kw).fit(X, y)
    assert dev.index_.algorithm_ == "cuda"
    assert_same(dev.predict_proba(Q), cpu.predict_proba(Q))
    assert_same(dev.predict_proba(None), cpu.predict_proba(None))      # exclude_self
    assert np.array_equal(dev.predict(None), cpu.predict(None))
    d, i = dev.kneighbors(Q, 4)
    assert_same(d, cpu.kneighbors(Q, 4)[0])
    assert_same(i, cpu.kneighbors(Q, 4)[1])


def test_regressor_and_nearest_neighbors_on_the_device():
    X, Q, _, kinds = _table(6, n=150)
    t = np.random.default_rng(6).normal(size=len(X)) * 100.0
    kw = dict(metric="gower", metric_params=kinds)
    dev = hdist.KNeighborsRegressor(5, device="cuda", **kw).fit(X, t)
    cpu = hdist.KNeighborsRegressor(5, **kw).fit(X, t)
    assert_same(dev.predict(Q), cpu.predict(Q))
    assert_same(dev.predict(None), cpu.predict(None))
    dev = hdist.NearestNeighbors(n_neighbors=4, radius=0.4, device="cuda", **kw).fit(X)
    cpu = hdist.NearestNeighbors(n_neighbors=4, radius=0.4, **kw).fit(X)
    assert_same(dev.kneighbors(Q)[0], cpu.kneighbors(Q)[0])
    got, want = dev.radius_neighbors(Q), cpu.radius_neighbors(Q)
    _same_lists(got[0], want[0])
    _same_lists(got[1], want[1])
    dev = hdist.KNeighborsTransformer(n_neighbors=3, device="cuda", **kw).fit(X)
    cpu = hdist.KNeighborsTransformer(n_neighbors=3, **kw).fit(X)
    assert (dev.transform(Q) != cpu.transform(Q)).nnz == 0


def test_imputer_on_the_device():
    X, Q, y, kinds = _table(7, n=120)
    dev = hdist.KNNImputer(n_neighbors=4, device="cuda", metric_params=kinds).fit(X, y)
    cpu = hdist.KNNImputer(n_neighbors=4, metric_params=kinds).fit(X, y)
    assert dev._index.algorithm_ == "cuda"
    pd.testing.assert_frame_equal(dev.transform(Q), cpu.transform(Q))
    pd.testing.assert_frame_equal(dev.transform(X), cpu.transform(X))


@pytest.mark.parametrize("cls", [hdist.KNeighborsClassifier, hdist.KNeighborsRegressor,
                                 hdist.NearestNeighbors, hdist.KNeighborsTransformer,
                                 hdist.KNNImputer])
def test_estimators_keep_device_as_given(cls):
    est = cls(device="cuda")
    assert est.get_params()["device"] == "cuda"
    assert clone(est).device == "cuda"
    assert cls().device == "cpu"
    assert est.set_params(device="cpu").device == "cpu"


# -- errors ----------------------------------------------------------------------------

def test_unknown_device_is_named():
    X, Q, y, kinds = _table(8, n=30, n_queries=3)
    m = hdist.Metric("heom", **kinds).fit(X, y)
    for call in (lambda: m.kneighbors(Q, 2, device="gpu"),
                 lambda: m.radius_neighbors(Q, 0.5, device="gpu"),
                 lambda: m.pairwise(Q, device="gpu"),
                 lambda: m.kneighbors(Q, 2, device=None),
                 lambda: hdist.NeighborsIndex("heom", device="gpu"),
                 lambda: hdist.KNeighborsClassifier(device="gpu").fit(X, y),
                 lambda: hdist.KNNImputer(device="gpu").fit(X, y)):
        with pytest.raises(ValueError, match="device must be one of"):
            call()


@pytest.mark.parametrize("algorithm", ["kd_tree", "ball_tree", "ivf"])
def test_a_search_structure_with_the_device_is_refused(algorithm):
    X, _, y, _ = _table(9, n=30, n_queries=3)
    match = "device='cuda'.*algorithm='%s'" % algorithm
    with pytest.raises(ValueError, match=match):
        hdist.NeighborsIndex("heom", algorithm=algorithm, device="cuda")
    with pytest.raises(ValueError, match=match):
        hdist.KNeighborsClassifier(algorithm=algorithm, device="cuda").fit(X, y)
    with pytest.raises(ValueError, match=match):
        hdist.KNNImputer(algorithm=algorithm, device="cuda").fit(X, y)


def test_a_metric_the_device_cannot_serve_is_refused():
    X, Q, y, kinds = _table(10, n=30, n_queries=3)
    m = hdist.Metric("minkowski", p=1.5, **kinds).fit(X, y)
    with pytest.raises(ValueError, match="p = 1.5"):
        m.kneighbors(Q, 2, device="cuda")
    with pytest.raises(ValueError, match="p = 1.5"):
        m.pairwise(Q, device="cuda")
    with pytest.raises(ValueError, match="device='cuda' is not exact here"):
        hdist.NeighborsIndex(m, device="cuda").fit()


def test_without_cupy_every_entry_point_names_it(no_cupy):
    X, Q, y, kinds = _table(11, n=30, n_queries=3)
    m = hdist.Metric("heom", **kinds).fit(X, y)
    assert hdist.CudaUnavailableError is CudaUnavailableError
    for call in (lambda: m.kneighbors(Q, 2, device="cuda"),
                 lambda: m.radius_neighbors(Q, 0.5, device="cuda"),
                 lambda: m.pairwise(Q, device="cuda"),
                 lambda: hdist.NeighborsIndex(m, device="cuda").fit(),
                 lambda: hdist.KNeighborsClassifier(device="cuda").fit(X, y),
                 lambda: hdist.KNNImputer(device="cuda").fit(X, y)):
        with pytest.raises(CudaUnavailableError, match="CuPy"):
            call()
    assert_same(m.kneighbors(Q, 2)[0], m.kneighbors(Q, 2, device="cpu")[0])


# -- the command line ----------------------------------------------------------------------

@pytest.fixture
def knn_files(tmp_path):
    rng = np.random.default_rng(12)
    n = 120
    X = pd.DataFrame({"a": rng.integers(0, 4, n).astype(float), "b": rng.normal(size=n),
                      "c": rng.choice(["x", "y", "z"], n), "label": rng.choice(["p", "q"], n)})
    X.loc[rng.random(n) < 0.1, "b"] = math.nan
    X.iloc[:90].to_csv(tmp_path / "train.csv", index=False)
    X.iloc[90:].drop(columns="label").to_csv(tmp_path / "query.csv", index=False)
    return ["knn", "--train", str(tmp_path / "train.csv"), "--query",
            str(tmp_path / "query.csv"), "--target", "label", "--k", "4", "--what", "both",
            "--metric", "hvdm"]


def _run(argv, capsys):
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def test_cli_device_cuda_writes_what_the_cpu_writes(knn_files, capsys, tmp_path):
    outs = {}
    for device in ("cpu", "cuda"):
        path = tmp_path / ("%s.csv" % device)
        status, _, err = _run(knn_files + ["--device", device, "-o", str(path)], capsys)
        assert status == 0, err
        outs[device] = path.read_bytes()
    assert outs["cuda"] == outs["cpu"]


def test_cli_unknown_device_is_a_usage_error(knn_files, capsys):
    with pytest.raises(SystemExit) as raised:
        cli.main(knn_files + ["--device", "gpu"])
    assert raised.value.code == 2
    assert "invalid choice: 'gpu'" in capsys.readouterr()[1]


def test_cli_device_cuda_with_a_tree_is_a_usage_error(knn_files, capsys):
    status, _, err = _run(knn_files + ["--device", "cuda", "--algorithm", "kd_tree"],
                          capsys)
    assert status == 2
    assert "device='cuda'" in err and "algorithm='kd_tree'" in err


def test_cli_device_cuda_without_cupy(knn_files, capsys, no_cupy):
    status, _, err = _run(knn_files + ["--device", "cuda"], capsys)
    assert status == 1
    assert "--device cuda" in err and "CuPy" in err


# -- the package ---------------------------------------------------------------------------

def test_the_package_data_ships_the_device_sources():
    """Every file the device code is compiled from (``cuda._SOURCES``: ``knn.cu``, the
    emulation headers, ``terms.h``, ``pw.h``) matches a package-data pattern of
    ``hdist._kernels``, so a wheel carries them; ``hdist[cuda]`` brings CuPy."""
    import ast
    import fnmatch
    import pathlib
    import re
    from hdist._search import cuda
    root = pathlib.Path(hdist.__file__).resolve().parents[1]
    if not (root / "pyproject.toml").exists():
        pytest.skip("pyproject.toml is not beside this hdist (installed wheel)")
    text = (root / "pyproject.toml").read_text()

    def listed(key):        # a one-line TOML list of strings
        m = re.search(r"^%s = (\[.*\])$" % re.escape(key), text, re.M)
        assert m, key
        return ast.literal_eval(m.group(1))
    patterns = listed('"hdist._kernels"')
    kernels = pathlib.Path(cuda._KERNEL_DIR)
    for path in cuda._SOURCES:
        rel = pathlib.Path(path).relative_to(kernels).as_posix()
        assert any(fnmatch.fnmatch(rel, p) and rel.count("/") == p.count("/")
                   for p in patterns), rel
    assert any(dep.startswith("cupy-cuda12x") for dep in listed("cuda"))
