"""benchmarks/bench_ann.py runs end to end on a small table, and the plain HEOM and Gower
it measures its peers with give hdist's distances."""
import importlib.util
import pathlib
import re

import numpy as np
import pytest

import hdist

ROOT = pathlib.Path(__file__).resolve().parents[2]
if not (ROOT / "benchmarks" / "bench_ann.py").exists():
    # a run of the tests beside an installed wheel, without the source tree's benchmarks/
    pytest.skip("a smoke test of benchmarks/bench_ann.py, which is not beside these tests",
                allow_module_level=True)
SMALL = ["--rows", "3000", "--queries", "300", "--exact-queries", "100"]


def bench():
    spec = importlib.util.spec_from_file_location(
        "bench_ann", ROOT / "benchmarks" / "bench_ann.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table_rows(out, method):
    """(setting, queries/s, recall) of each row of ``method`` in the printed tables
    (columns: method 34, setting 14, build 9, queries/s 12, recall 9, ...)."""
    rows = []
    for line in out.splitlines():
        if line[2:3] != " " and line[2:36].strip() == method and len(line) > 84:
            rows.append((line[37:51].strip(), float(line[62:74]), float(line[75:84])))
    return rows


def test_runs_with_hdist_alone(capsys, tmp_path):
    plot = tmp_path / "ann.png"
    bench().main(SMALL + ["--peers", "none", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert re.search(r"^nproc \d+; load average [\d.]+ [\d.]+ [\d.]+$", out, re.M)
    assert "machine: " in out
    for title in ("HEOM, no missing values", "HEOM, 5 % missing", "Gower, 5 % missing",
                  "HVDM, 5 % missing"):
        assert "== %s: 3000 reference rows x 300 queries" % title in out
        assert "  -- %s\n" % title in out
    exact = table_rows(out, "hdist exact (brute)")
    assert len(exact) == 4 and all(q > 0 and r == 1.0 for _, q, r in exact)
    ivf = table_rows(out, "hdist ivf")
    assert ivf[0][0] == "n_probe=1" and len(ivf) >= 4 * 2
    # each sweep ends at recall >= 0.99 (probing every list at the latest: exact)
    ends = [r for (s, _, r), nxt in zip(ivf, ivf[1:] + [("n_probe=1",)])
            if nxt[0] == "n_probe=1"]
    assert len(ends) == 4 and min(ends) >= 0.99
    assert len(re.findall(r"hdist ivf: encoded reference rows \(data_nbytes_\) [\d.]+ MB; "
                          r"during the build: tracemalloc peak [\d.]+ MB = [\d.]+x", out)) == 4
    assert "\n== ratios\n" in out
    assert plot.stat().st_size > 0


def test_faiss_rows(capsys, tmp_path):
    pytest.importorskip("faiss", reason="faiss-cpu is a benchmark peer, installed by the "
                        "bench extra only")
    bench().main(SMALL + ["--peers", "faiss", "--cases", "heom,gower",
                          "--gower-peer-rows", "1000", "--plot", ""])
    out = capsys.readouterr().out
    # the embedding is exact: faiss' flat search finds hdist's HEOM neighbours
    assert [r for _, _, r in table_rows(out, "faiss IndexFlatL2 (embedding)")] == [1.0]
    ivf = table_rows(out, "faiss IndexIVFFlat (embedding)")
    assert ivf[0][0] == "nprobe=1" and ivf[-1][2] >= 0.99
    # float32 Gower: a row may swap with one within its rounding of the 10th
    assert table_rows(out, "faiss IndexFlat METRIC_GOWER")[0][2] >= 0.99
    assert "Gower, 5 % missing, first 1000 reference rows" in out
    assert table_rows(out, "faiss IndexHNSWFlat METRIC_GOWER")
    assert out.count("reference Gower of hdist's exact neighbours") == 2


@pytest.fixture(scope="module")
def tables():
    mod = bench()
    X, _ = mod.codes(400, 0, 0.05)
    Q, _ = mod.codes(30, 1, 0.05)
    return mod, X, Q


def test_recall_is_the_index_recall(tables):
    """The script's recall of hdist ivf's rows is NeighborsIndex.recall's."""
    mod, X, Q = tables
    m = hdist.Metric("gower", nominal=mod.NOMINAL, continuous="rest").fit(X)
    d_ex, _ = hdist.NeighborsIndex(m, algorithm="brute").fit().kneighbors(Q, 10)
    index = hdist.NeighborsIndex(m, algorithm="ivf", n_lists=20).fit()
    for p in (1, 3, 20):
        d, i = index.kneighbors(Q, 10, n_probe=p)
        assert mod.recall(i, lambda ind: d, d_ex) == index.recall(Q, 10, n_probe=p)
    assert mod.recall(i, lambda ind: d, d_ex) == 1.0


def test_reference_heom_is_hdist_heom(tables):
    mod, X, Q = tables
    X, Q = X.copy(), Q.copy()
    X[np.isnan(X)] = 1.0                       # HEOM's reference has no missing values
    Q[np.isnan(Q)] = 1.0
    D = hdist.Metric("heom", nominal=mod.NOMINAL, continuous="rest").fit(X).pairwise(Q, X)
    ind = np.tile(np.arange(len(X)), (len(Q), 1))
    np.testing.assert_allclose(mod.heom_pairs(X, Q, ind, mod.Scaled(X)), D, rtol=1e-12)
    # squared L2 on the embedding is HEOM squared
    E, Eq = mod.heom_embedding(X, mod.Scaled(X)), mod.heom_embedding(Q, mod.Scaled(X))
    L2 = ((Eq.astype(np.float64)[:, None, :] - E[None, :, :]) ** 2).sum(axis=2)
    np.testing.assert_allclose(L2, D * D, rtol=1e-5, atol=1e-6)


def test_reference_gower_is_hdist_gower(tables):
    mod, X, Q = tables
    Q = Q.copy()
    Q[0, mod.N_NOMINAL] = np.nanmax(X[:, mod.N_NOMINAL]) + 50.0   # outside the range
    Q[1] = np.nan                                                # nothing known: 1
    D = hdist.Metric("gower", nominal=mod.NOMINAL, continuous="rest").fit(X).pairwise(Q, X)
    s = mod.Scaled(X)
    G, Gq = mod.gower_rows(X, s), mod.gower_rows(Q, s)
    ind = np.tile(np.arange(len(X)), (len(Q), 1))
    np.testing.assert_allclose(mod.gower_pairs(G, Gq, ind), D, rtol=1e-12, atol=1e-15)
    assert (D[1] == 1.0).all()
    # faiss' coding: categories negative, continuous values clipped into [0, 1]
    F, Fq = mod.faiss_gower_rows(X, s, False), mod.faiss_gower_rows(Q, s, True)
    assert (F[:, :mod.N_NOMINAL][~np.isnan(F[:, :mod.N_NOMINAL])] <= -1).all()
    assert np.nanmax(F[:, mod.N_NOMINAL:]) == 1.0 and Fq[0, mod.N_NOMINAL] == 1.0


def test_numba_gower_is_the_reference(tables):
    pytest.importorskip("numba", reason="numba is a benchmark dependency, installed by "
                        "the bench extra only")
    mod, X, Q = tables
    s = mod.Scaled(X)
    G, Gq = mod.gower_rows(X, s), mod.gower_rows(Q, s)
    gower = mod.gower_function(mod.N_NOMINAL)
    got = np.array([[gower(q, x) for x in G[:50]] for q in Gq])
    ind = np.tile(np.arange(50), (len(Q), 1))
    np.testing.assert_allclose(got, mod.gower_pairs(G, Gq, ind), rtol=1e-12, atol=1e-15)


def test_profiles_give_rows_of_a_kind(tables):
    """make_census_like.codes(profiles=P): without profiles the draws are those of the
    table as it always was; with them, most nominal cells of a row equal those of another
    row of its kind, and the same seed and P give the same rows."""
    mod = tables[0]
    base, y0 = mod.codes(500, 3, 0.05)
    same, y1 = mod.codes(500, 3, 0.05, 0)
    assert np.array_equal(base, same, equal_nan=True) and np.array_equal(y0, y1)
    X, _ = mod.codes(500, 3, 0.0, 20)
    again, _ = mod.codes(500, 3, 0.0, 20)
    assert np.array_equal(X, again)
    nom = slice(0, mod.N_NOMINAL)

    def nearest_match(A):
        agree = (A[:, None, nom] == A[None, :, nom]).mean(axis=2)
        np.fill_diagonal(agree, 0.0)
        return agree.max(axis=1).mean()
    # each row shares most nominal values with its closest row of the same kind; the
    # independent draws of the plain table share far fewer
    assert nearest_match(X) > 0.75
    assert nearest_match(mod.codes(500, 3, 0.0)[0]) < nearest_match(X) - 0.1
