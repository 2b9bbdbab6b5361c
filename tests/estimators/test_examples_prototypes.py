"""examples/prototype_rules.py: the paper's tables as transcribed, the data it builds, and
its cross-validation on a tiny configuration (reads the shared Glass and Pima data)."""
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from datadir import ROOT, find_data_dir

EXAMPLES = ROOT / "examples"
if not (EXAMPLES / "prototype_rules.py").exists():
    # a run of the tests beside an installed wheel, without the source tree's examples/
    pytest.skip("tests examples/prototype_rules.py, which is not beside these tests",
                allow_module_level=True)


@pytest.fixture(scope="module")
def ex():
    found = find_data_dir()
    if found is not None:
        os.environ.setdefault("HDIST_DATA", str(found))
    sys.path.insert(0, str(EXAMPLES))
    try:
        spec = importlib.util.spec_from_file_location("prototype_rules",
                                                      EXAMPLES / "prototype_rules.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod      # its worker function is pickled by name (jobs=2)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(EXAMPLES))
    return mod


def test_paper_summary_rows_follow_from_its_cells(ex):
    # the printed mean/std rows of Table 2 are recomputed from the transcribed cells: a
    # mistyped cell, a setting in the wrong family or ddof=0 would break the agreement
    labels = [s[0] for s in ex.SETTINGS]
    rows = ex.summary_rows(labels, [[float(v) for v in ex.TABLE2[lab]] for lab in labels])
    summaries = [(lab, v) for lab, v in rows if lab.endswith(("mean", "std"))]
    assert len(summaries) == 10
    for lab, v in summaries:
        np.testing.assert_allclose(v, np.array(ex.TABLE2[lab], dtype=float), atol=1e-3,
                                   err_msg=lab)
    assert set(ex.TABLE1) == set(labels) and len(labels) == 24
    assert all(len(v) == 2 for v in ex.TABLE1.values())


def test_every_setting_is_a_preset_with_its_parameter(ex):
    import hdist
    for label, preset, params in ex.SETTINGS + [ex.EUCLIDEAN]:
        eff = hdist.Metric(preset, **params).effective_params()
        assert all(eff[k] == v for k, v in params.items()), label


def test_artificial_sets(ex):
    for kind in ex.TABLE1_SETS:
        X, y = ex.make_artificial(kind, seed=3)
        assert X.shape == (600, 2) and np.unique(y, return_counts=True)[1].tolist() == [200] * 3
        assert X.min().min() == 0.0 and X.max().max() == 1.0
        X2, _ = ex.make_artificial(kind, seed=3)
        assert X.equals(X2)


@pytest.mark.needs_data
def test_real_sets_scaled_to_unit_interval(ex):
    glass = ex.load_real("glass")[0]
    assert glass.shape == (214, 9)
    np.testing.assert_allclose(glass.min(), 0.0, atol=1e-12)
    np.testing.assert_allclose(glass.max(), 1.0)
    pima = ex.load_real("pima")[0]
    assert not pima.isna().any().any()          # UCI's zeros back in place of the gaps
    pima_missing = ex.load_real("pima", pima_missing=True)[0]
    assert pima_missing.isna().sum().sum() == 652
    # a restored zero is the scaled column's minimum (no attribute is negative)
    gaps = pima_missing["insulin"].isna()
    assert (pima.loc[gaps, "insulin"] == 0.0).all()


# jobs=2 runs the folds in a process pool, whose workers Linux forks from this process
# (which runs threads): Python 3.12 and later warn about that fork
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork\\(\\) may "
                            "lead to deadlocks in the child:DeprecationWarning")
def test_tiny_cross_validation(ex):
    data = {"iris": ex.load_real("iris")}
    settings = [s for s in ex.SETTINGS if s[0] in ("HVDM", "IVDM CW 5")]
    params = dict(ex.TABLE2_CLASSIFIER, max_iter=2)
    scores = ex.evaluate(data, settings, params, folds=2, seed=0)
    assert scores.shape == (2, 1, 2)
    assert ((scores >= 0.0) & (scores <= 1.0)).all()
    assert scores.mean() > 0.8                  # iris is easy for any of them
    again = ex.evaluate(data, settings, params, folds=2, seed=0, jobs=2)
    np.testing.assert_array_equal(scores, again)
    # --highest: one score per max_iter value, the last one the run above
    curve = ex.evaluate(data, settings, params, folds=2, seed=0, iterations=[0, 2])
    assert curve.shape == (2, 1, 2, 2)
    np.testing.assert_array_equal(curve[..., 1], scores)


def test_table_prints_paper_beside_ours(ex):
    labels = ["IVDM CW 10", "IVDM CW 5"]
    ours = np.array([[np.nan, 50.0, 96.0, np.nan, 70.0],
                     [np.nan, 52.0, 94.0, np.nan, 72.0]])
    text = ex.table(ex.TABLE2, ex.TABLE2_SETS, labels, ours)
    lines = text.splitlines()
    assert lines[2] == ("| IVDM CW 10 | 26.563 | n/a | 46.984 | 50.00 | 96.000 | 96.00 "
                        "| 90.225 | n/a | 70.818 | 70.00 |")
    assert lines[4].startswith("| IVDM mean | 26.302 | n/a | 47.817 | 51.00 |")
    assert lines[5].startswith("| IVDM std | 0.368 | n/a | 1.179 | 1.41 |")
