"""hdist.discretize against the plain reference (tests/ref_posteriors.py) and Weka."""
import math
import pickle

import numpy as np
import pytest

import ref_posteriors as ref
from hdist import discretize as dz
from hdist.discretize import MDLP, EqualFrequency, EqualWidth


def random_column(seed, n=120, p_missing=0.15, ties=False):
    rng = np.random.default_rng(seed)
    if ties:
        x = rng.integers(0, 7, size=n).astype(float) * 0.5
    else:
        x = rng.normal(size=n) * 10 ** rng.uniform(-3, 3)
    x[rng.random(n) < p_missing] = np.nan
    if np.isnan(x).all():
        x[0] = 1.0
    y = rng.integers(0, 3, size=n)
    # make the class depend on x so that MDLP has splits to find
    y = np.where(x > np.nanmedian(x), (y + 1) % 3, y)
    return x, y


def as_list(x):
    return [None if np.isnan(v) else float(v) for v in x]


def assert_bins_match(d, xl, cuts):
    """``d`` bins every training value, and the floats at and next to every exact cut
    point, as the reference's exact rule does."""
    assert d.n_bins_ == len(cuts) + 1
    probes = [v for v in xl if v is not None]
    for c in cuts:
        f = float(c)
        probes += [np.nextafter(f, -np.inf), f, np.nextafter(f, np.inf)]
    got = d.codes(np.array(probes, dtype=np.float64))
    assert got.tolist() == [ref.bin_of(cuts, v) for v in probes]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("ties", [False, True])
def test_random_columns_match_reference(seed, ties):
    x, y = random_column(seed, ties=ties)
    xl = as_list(x)
    for n_bins in (1, 2, 5, 10):
        for trim in (0.0, 0.1):
            d = EqualWidth(n_bins, trim).fit(x)
            assert_bins_match(d, xl, ref.equal_width_cuts(xl, n_bins, trim))
        d = EqualFrequency(n_bins).fit(x)
        np.testing.assert_allclose(d.bin_edges_, ref.equal_frequency_cuts(xl, n_bins),
                                   rtol=1e-13, atol=0)
    m = MDLP().fit(x, y)
    yl = y.tolist()
    assert m.bin_edges_.tolist() == ref.mdlp_cuts(xl, yl)
    # bins of every value through the fitted cuts, missing stays missing
    q = np.concatenate([x, m.bin_edges_, [np.nanmin(x) - 1, np.nanmax(x) + 1, np.nan]])
    t = m.transform(q)
    for v, b in zip(q, t):
        r = ref.bin_of(m.bin_edges_.tolist(), float(v))
        assert (r is None and math.isnan(b)) or r == b


@pytest.mark.needs_data
def test_iris_mdlp_reproduces_weka():
    df, y, _ = ref.load("iris")
    expected = {"sepal length (cm)": [5.55, 6.15], "sepal width (cm)": [2.95, 3.35],
                "petal length (cm)": [2.45, 4.75], "petal width (cm)": [0.8, 1.75]}
    for col, cuts in expected.items():
        m = MDLP().fit(df[col], y)
        np.testing.assert_allclose(m.bin_edges_, cuts, rtol=0, atol=1e-12)
        assert m.n_bins_ == 3


@pytest.mark.parametrize("name", ["iris", "Glass", "PimaIndiansDiabetes2"])
@pytest.mark.needs_data
def test_real_data_match_reference(name):
    df, y, kinds = ref.load(name)
    codes, _ = ref.class_codes(y)
    for col in df.columns:
        xl = [None if v != v else float(v) for v in df[col]]
        assert MDLP().fit(df[col], y).bin_edges_.tolist() == ref.mdlp_cuts(xl, codes)
        assert_bins_match(EqualWidth(7).fit(df[col]), xl, ref.equal_width_cuts(xl, 7))
        np.testing.assert_allclose(EqualFrequency(10).fit(df[col]).bin_edges_,
                                   ref.equal_frequency_cuts(xl, 10), rtol=1e-13)


def test_bin_convention_and_missing():
    d = EqualWidth(4).fit([0.0, 4.0, np.nan, 1.0])
    assert d.bin_edges_.tolist() == [1.0, 2.0, 3.0]
    t = d.transform([-5.0, 0.0, 0.999, 1.0, 2.5, 3.0, 4.0, 99.0, np.nan, None])
    np.testing.assert_array_equal(t[:8], [0, 0, 0, 1, 2, 3, 3, 3])
    assert np.isnan(t[8]) and np.isnan(t[9])
    assert t.dtype == np.float64
    assert d.codes([np.nan, 2.0]).tolist() == [-1, 2]


def test_constant_and_single_value_columns():
    for d in (EqualWidth(5), EqualFrequency(4)):
        d.fit([3.0, 3.0, np.nan, 3.0])
        assert d.bin_edges_.size == 0 and d.n_bins_ == 1
        assert d.transform([-1.0, 3.0, 10.0]).tolist() == [0, 0, 0]
    m = MDLP().fit([2.0, 2.0, 2.0], ["a", "b", "a"])
    assert m.n_bins_ == 1
    assert MDLP().fit([1.0], ["a"]).n_bins_ == 1


def test_equal_frequency_with_ties_merges_bins():
    x = np.array([1.0] * 50 + [2.0] * 30 + [3.0] * 20)
    d = EqualFrequency(10).fit(x)
    # deciles: 1 (x5, the minimum: dropped), 1.5 (interpolated), 2 (x2), 2.2, 3 (x2)
    np.testing.assert_allclose(d.bin_edges_, [1.5, 2.0, 2.2, 3.0])
    counts = np.bincount(d.codes(x), minlength=d.n_bins_)
    assert counts.tolist() == [50, 0, 30, 0, 20]
    u = np.unique(np.arange(1000.0) % 100)
    assert np.bincount(EqualFrequency(4).fit(u).codes(u)).tolist() == [25, 25, 25, 25]


def test_mdlp_splits_separable_classes_and_stops_on_noise():
    x = np.arange(40, dtype=float)
    y = ["a"] * 20 + ["b"] * 20
    assert MDLP().fit(x, y).bin_edges_.tolist() == [19.5]
    rng = np.random.default_rng(3)
    assert MDLP().fit(rng.normal(size=60), rng.integers(0, 2, 60)).n_bins_ == 1


def test_inputs_pandas_and_labels():
    pd = pytest.importorskip("pandas")
    s = pd.Series([1.0, None, 3.0, 2.0, 10.0], dtype="Float64")
    t = EqualWidth(3).fit_transform(s)
    assert np.isnan(t[1]) and t[4] == 2
    m = MDLP().fit(pd.Series([1, 2, 3, 4, 5, 6, 7, 8]), pd.Series(list("aaaabbbb")))
    assert m.bin_edges_.tolist() == [4.5]
    assert EqualWidth(2).fit(np.array([[1.0], [3.0]])).bin_edges_.tolist() == [2.0]


def test_errors():
    with pytest.raises(ValueError, match="n_bins"):
        EqualWidth(0)
    with pytest.raises(TypeError, match="n_bins"):
        EqualFrequency(2.5)
    with pytest.raises(ValueError, match="trim"):
        EqualWidth(3, trim=0.5)
    with pytest.raises(ValueError, match="no observed value"):
        EqualWidth(3).fit([np.nan, None])
    with pytest.raises(ValueError, match="infinite"):
        EqualWidth(3).fit([1.0, np.inf])
    with pytest.raises(ValueError, match="1-D"):
        EqualWidth(3).fit(np.zeros((3, 2)))
    with pytest.raises(TypeError, match="numbers"):
        EqualWidth(3).fit(["a", "b"])
    with pytest.raises(ValueError, match="supervised"):
        MDLP().fit([1.0, 2.0])
    with pytest.raises(ValueError, match="labels"):
        MDLP().fit([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="missing label"):
        MDLP().fit([1.0, 2.0], ["a", None])
    with pytest.raises(RuntimeError, match="not fitted"):
        EqualWidth(3).transform([1.0])
    with pytest.raises(ValueError, match="no parameter"):
        EqualWidth(3).set_params(bins=4)


def test_params_repr_pickle_and_spec_spellings():
    d = EqualWidth(3, trim=0.1)
    assert d.get_params() == {"n_bins": 3, "trim": 0.1}
    assert repr(d) == "EqualWidth(n_bins=3, trim=0.1)"
    d.fit(np.arange(20.0))
    d.set_params(n_bins=4)
    assert not hasattr(d, "bin_edges_") and d.n_bins == 4
    e = pickle.loads(pickle.dumps(d.fit(np.arange(20.0))))
    np.testing.assert_array_equal(e.bin_edges_, d.bin_edges_)
    assert isinstance(dz.equal_width(4), EqualWidth) and dz.equal_width(4, 0.1).trim == 0.1
    assert dz.equal_frequency(7).n_bins == 7
    assert isinstance(dz.mdlp(), MDLP) and MDLP.supervised and not EqualWidth.supervised


# -- equal-width bins as Wilson & Martinez define them (eq. 18), decided exactly ------

def decimal_grid(seed, n=200):
    """Columns as people write them: prices in cents, ages, counts, one-decimal
    measurements, with the range ends on the grid and many values on cut points."""
    rng = np.random.default_rng(seed)
    step = [0.01, 1.0, 0.1, 0.05, 0.001][seed % 5]
    lo = int(rng.integers(-500, 500))
    width = int(rng.integers(1, 2000))
    ints = np.concatenate([[lo, lo + width], rng.integers(lo, lo + width + 1, n - 2)])
    return [round(float(i) * step, 6) for i in ints]


@pytest.mark.parametrize("seed", range(40))
def test_equal_width_bins_decimal_grids_as_by_hand(seed):
    xl = decimal_grid(seed)
    for n_bins in (2, 3, 5, 7, 10):
        cuts = ref.equal_width_cuts(xl, n_bins)
        d = EqualWidth(n_bins).fit(np.array(xl))
        assert_bins_match(d, xl, cuts)
        # every value on the grid between the ends, cut points included
        lo, hi = min(xl), max(xl)
        step = [0.01, 1.0, 0.1, 0.05, 0.001][seed % 5]
        k = np.arange(round(lo / step), round(hi / step) + 1)
        grid = [round(float(i) * step, 6) for i in k[:: max(1, len(k) // 3000)]]
        got = d.codes(np.array(grid))
        assert got.tolist() == [ref.bin_of(cuts, v) for v in grid]
        assert got[-1] == n_bins - 1 and got[0] == 0    # the maximum is in the last bin


def test_equal_width_value_on_a_cut_goes_up():
    # 5.4 * 3 / 5 rounds above 3.24 in floating point; by hand 3.24 starts bin 3
    d = EqualWidth(5).fit([0.0, 5.4, 1.0])
    assert d.codes([3.24, 1.08, 2.16, 4.32, 5.4]).tolist() == [3, 1, 2, 4, 4]
    assert d.codes([np.nextafter(3.24, 0), 0.0, -1.0, 99.0]).tolist() == [2, 0, 0, 4]
    # the cut points are the smallest floats of each bin
    assert d.bin_edges_.tolist() == [1.08, 2.16, 3.24, 4.32]
    # prices in cents, a trimmed range
    d = EqualWidth(4, trim=0.25).fit([0.1, 0.3, 0.5, 0.7, 0.9])
    lo, hi = np.quantile([0.1, 0.3, 0.5, 0.7, 0.9], [0.25, 0.75])
    assert (lo, hi) == (0.3, 0.7)
    assert d.codes([0.4, 0.5, 0.6, 0.7]).tolist() == [1, 2, 3, 3]


def test_dvdm_and_ivdm_bin_decimal_cut_values_as_by_hand():
    from hdist._core.posteriors import DiscretizedPosterior, InterpolatedPosterior
    x = np.array([0.0, 1.0, 3.24, 3.3, 5.4, 2.0, 4.5, 0.5])
    y = np.array([0, 0, 1, 1, 1, 0, 1, 0])
    dv = DiscretizedPosterior(5).fit(x, y, 2)
    # bins of width 1.08: 3.24 and 3.3 share bin 3, bin 2 = [2.16, 3.24) is empty
    assert dv.bin_counts_[3].tolist() == [0.0, 2.0]
    assert dv.bin_counts_[2].tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(dv.transform([3.24])[0], [0.0, 1.0])
    iv = InterpolatedPosterior(5).fit(x, y, 2)
    np.testing.assert_array_equal(iv.bin_probabilities_[3], [0.0, 1.0])
    import hdist
    X = x.reshape(-1, 1)
    m = hdist.Metric("dvdm", n_bins=5).fit(X, y)
    assert m.pairwise([[3.24]], [[3.3]])[0, 0] == 0.0
