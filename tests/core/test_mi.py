"""Entropy, mutual information and weights="mi" (docs/metrics.md §2) against the plain
reference."""
import math

import numpy as np
import pytest

import ref_posteriors as ref
from hdist import Metric, entropy, mutual_information
from hdist.discretize import MDLP, EqualFrequency, EqualWidth

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")


def mixed(seed, n=80):
    rng = np.random.default_rng(seed)
    c0 = rng.normal(size=n)
    c1 = rng.integers(0, 4, size=n).astype(float)
    n0 = rng.choice(["a", "b", "c"], size=n).astype(object)
    n1 = rng.choice(["p", "q"], size=n).astype(object)
    y = np.where(c0 + (n0 == "a") + rng.normal(0, 0.5, n) > 0.5, "yes", "no").tolist()
    c0[rng.random(n) < 0.2] = np.nan
    c1[rng.random(n) < 0.1] = np.nan
    n0[rng.random(n) < 0.15] = None
    frame = pd.DataFrame({"c0": c0, "c1": c1, "n0": n0, "n1": n1})
    return frame, y, ["continuous", "continuous", "nominal", "nominal"]


def lists(df):
    return [[None if (isinstance(v, float) and math.isnan(v)) else v for v in df[c]]
            for c in df.columns]


@pytest.mark.parametrize("seed", range(6))
def test_mi_weights_match_reference(seed):
    df, y, kinds = mixed(seed)
    m = Metric("hvdm", weights="mi").fit(df, y)
    w, info = ref.mi_weights(lists(df), kinds, y)
    np.testing.assert_allclose(m.mutual_information_, info, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(m.weights_, w, rtol=1e-12)
    assert math.isclose(m.weights_.sum(), df.shape[1])


@pytest.mark.parametrize("name", ["iris", "Glass", "PimaIndiansDiabetes2"])
@pytest.mark.needs_data
def test_mi_weights_on_real_data(name):
    df, y, kinds = ref.load(name)
    m = Metric("heom", weights="mi").fit(df, y)
    w, info = ref.mi_weights(lists(df), kinds, y)
    np.testing.assert_allclose(m.weights_, w, rtol=1e-12)
    # distances use the weights: HEOM with explicit weights gives the same matrix
    m2 = Metric("heom", weights=w).fit(df, y)
    np.testing.assert_allclose(m.pairwise(df.iloc[:20]), m2.pairwise(df.iloc[:20]), rtol=1e-12)


def test_mi_weights_in_posterior_presets_and_custom_discretizer():
    df, y, kinds = mixed(3)
    m = Metric("ivdm", weights="mi", mi_discretizer=EqualWidth(4)).fit(df, y)
    cols = lists(df)
    info = []
    for col, kind in zip(cols, kinds):
        if kind == "continuous":
            cuts = ref.equal_width_cuts(col, 4)
            col = [ref.bin_of(cuts, v) for v in col]
        info.append(ref.mutual_information(col, y))
    np.testing.assert_allclose(m.mutual_information_, info, rtol=1e-12, atol=1e-15)
    codes, _ = ref.class_codes(y)
    m = Metric("hvdm", weights="mi", mi_discretizer=MDLP()).fit(df, y)
    col = [ref.bin_of(ref.mdlp_cuts(cols[0], codes), v) for v in cols[0]]
    assert math.isclose(m.mutual_information_[0], ref.mutual_information(col, y),
                        rel_tol=1e-12, abs_tol=1e-15)


def test_all_zero_information_gives_ones():
    df = pd.DataFrame({"a": [1.0, 1.0, 1.0, 1.0], "b": ["x", "x", "x", "x"]})
    m = Metric("heom", weights="mi").fit(df, [0, 1, 0, 1])
    np.testing.assert_array_equal(m.weights_, [1.0, 1.0])
    df = pd.DataFrame({"a": [1.0, 2.0, 1.0, 2.0], "b": ["x", "y", "y", "x"]})
    m = Metric("heom", weights="mi").fit(df, [0, 0, 1, 1])        # independent of y
    np.testing.assert_array_equal(m.weights_, [1.0, 1.0])


def test_weights_mi_errors():
    df, y, _ = mixed(0)
    with pytest.raises(ValueError, match="class labels"):
        Metric("heom", weights="mi").fit(df)
    with pytest.raises(TypeError, match="mi_discretizer"):
        Metric("heom", weights="mi", mi_discretizer="mdlp").fit(df, y)


def test_entropy():
    assert entropy(["a", "b", "a", "b"]) == pytest.approx(math.log(2))
    assert entropy(["a", "b", "a", "b"], base=2) == pytest.approx(1.0)
    assert entropy([1, 1, 1]) == 0.0
    rng = np.random.default_rng(0)
    vals = rng.integers(0, 6, size=200).tolist() + [None, float("nan")]
    assert entropy(vals) == pytest.approx(ref.entropy(vals), rel=1e-13)
    scipy_stats = pytest.importorskip("scipy.stats")
    counts = np.bincount(rng.integers(0, 6, size=200))
    labels = np.repeat(np.arange(6), counts)
    assert entropy(labels) == pytest.approx(scipy_stats.entropy(counts), rel=1e-13)
    with pytest.raises(ValueError, match="no observed"):
        entropy([None, None])
    with pytest.raises(ValueError, match="base"):
        entropy([1, 2], base=1)


@pytest.mark.needs_data
def test_mutual_information():
    df, y, kinds = ref.load("iris")
    skm = pytest.importorskip("sklearn.metrics")
    for col in df.columns:
        bins = EqualFrequency(10).fit(df[col]).transform(df[col])
        expect = skm.mutual_info_score(bins, y)
        assert mutual_information(df[col], y) == pytest.approx(expect, rel=1e-12)
        assert mutual_information(df[col].to_numpy(), y, base=2) == pytest.approx(
            expect / math.log(2), rel=1e-12)
    x = ["r", "g", None, "r", "b", "g"]
    yy = [1, 0, 1, 1, 0, 0]
    assert mutual_information(x, yy) == pytest.approx(ref.mutual_information(x, yy))
    codes = [3, 1, 2, 3, 1, 2]
    assert mutual_information(codes, yy, nominal=True) == pytest.approx(
        ref.mutual_information(codes, yy))
    pima, yp, _ = ref.load("PimaIndiansDiabetes2")
    for col in pima.columns:
        xl = [None if v != v else v for v in pima[col]]
        cuts = ref.equal_frequency_cuts(xl, 10)
        expect = ref.mutual_information([ref.bin_of(cuts, v) for v in xl], yp)
        assert mutual_information(pima[col], yp) == pytest.approx(expect, rel=1e-12,
                                                                   abs=1e-15)
    perfect = mutual_information(["a", "b"] * 10, ["x", "y"] * 10)
    assert perfect == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="labels"):
        mutual_information([1.0, 2.0], [0])
