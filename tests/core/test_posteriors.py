"""Class-posterior estimators (hdist._core.posteriors) and the dvdm / ivdm / gvdm / lvdm / pvdm
presets, against the plain reference in tests/ref_posteriors.py."""
import math
import pickle

import numpy as np
import pytest

import ref_posteriors as ref
from hdist import Metric
from hdist._kernels import CRows
from hdist._search.searchers import brute_knn
from hdist._core import posteriors as post
from hdist._core.statistics import mean_abs_difference, normalization_delta
from hdist.discretize import MDLP, EqualFrequency

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")

PRESETS = ("dvdm", "ivdm", "gvdm", "lvdm", "pvdm")
GVDM_ATOL = 1e-5   # the interpolation bound (1e-6 per component) carried to distances


# --------------------------------------------------------------------------------------
# data

def mixed(seed, n=48, nq=18, p_missing=0.15):
    """Training and query frames with 3 continuous and 2 nominal columns (missing values,
    ties, an outlier; queries with out-of-range and unseen values), labels and kinds."""
    rng = np.random.default_rng(seed)

    def make(m, query):
        c0 = rng.normal(size=m) * 3 + 1
        c1 = rng.integers(0, 6, size=m).astype(float)
        c2 = rng.normal(size=m)
        if not query:
            c2[0] = 25.0                                   # an outlier
        else:
            c0[:3] = [-40.0, 60.0, 1.0]                    # far outside / inside
            c1[3:5] = [-3.0, 9.0]
        n0 = rng.choice(["u", "v", "w"] + (["new"] if query else []), size=m).astype(object)
        n1 = rng.choice(["a", "b", "c", "d", "e"] + (["zz"] if query else []),
                        size=m).astype(object)
        cols = {"c0": c0, "c1": c1, "c2": c2, "n0": n0, "n1": n1}
        for k, v in cols.items():
            miss = rng.random(m) < p_missing
            if k.startswith("c"):
                v[miss] = np.nan
            else:
                v[miss] = None
        return pd.DataFrame(cols)

    train = make(n, False)
    queries = make(nq, True)
    score = np.nan_to_num(train["c0"].to_numpy()) + rng.normal(size=n)
    y = np.where(score > 2, "hi", np.where(score > 0, "mid", "lo")).tolist()
    kinds = ["continuous"] * 3 + ["nominal"] * 2
    return train, queries, y, kinds


def rows(df):
    out = []
    for r in df.itertuples(index=False):
        out.append([None if (isinstance(v, float) and math.isnan(v)) else v for v in r])
    return out


def columns(df):
    return [list(col) for col in zip(*rows(df))]


def reference(train, y, kinds, factory, **kw):
    codes, C = ref.class_codes(y)
    return ref.PosteriorMetric(kinds, factory, **kw).fit(columns(train), codes, C)


def check_against(metric, R, train, queries, atol=1e-12):
    """pairwise, kneighbors, radius_neighbors and explain of a fitted metric vs R."""
    Q, T = rows(queries), rows(train)
    D = metric.pairwise(queries, train)
    Dr = R.pairwise(Q, T)
    np.testing.assert_allclose(D, Dr, rtol=1e-10, atol=atol)
    k = 5
    d, i = metric.kneighbors(queries, k)
    np.testing.assert_allclose(d, np.sort(Dr, axis=1)[:, :k], rtol=1e-10, atol=atol)
    np.testing.assert_allclose(np.take_along_axis(Dr, i, axis=1), d, rtol=1e-10, atol=atol)
    for row in range(D.shape[0]):          # order (distance, index) of the package's own values
        expect = sorted(range(D.shape[1]), key=lambda j: (D[row, j], j))[:k]
        assert i[row].tolist() == expect
    r = float(np.median(Dr))
    dd, ii = metric.radius_neighbors(queries, r)
    for row in range(D.shape[0]):
        assert ii[row].tolist() == sorted(np.flatnonzero(D[row] <= r).tolist(),
                                          key=lambda j: (D[row, j], j))
        np.testing.assert_allclose(dd[row], Dr[row, ii[row]], rtol=1e-10, atol=atol)
        ref_hits = set(np.flatnonzero(Dr[row] <= r - 1e-9).tolist())
        assert ref_hits <= set(ii[row].tolist())
    for a, b in [(0, 0), (1, 2), (3, 5), (len(Q) - 1, len(T) - 1)]:
        e = metric.explain(queries.iloc[a], train.iloc[b])
        np.testing.assert_allclose(e.terms, R.terms(Q[a], T[b]), rtol=1e-10, atol=atol)
        np.testing.assert_allclose(e.distance, Dr[a, b], rtol=1e-10, atol=atol)
    return D


# the reference estimator each preset (with its parameters) defines
CASES = [
    ("dvdm", {}, lambda: ref.DVDM()),
    ("dvdm", {"n_bins": 3}, lambda: ref.DVDM(n_bins=3)),
    ("dvdm", {"discretizer": MDLP()}, lambda: ref.DVDM(cut_fn=ref.mdlp_cuts)),
    ("dvdm", {"discretizer": EqualFrequency(4)},
     lambda: ref.DVDM(cut_fn=lambda x, y: ref.equal_frequency_cuts(x, 4))),
    ("ivdm", {}, lambda: ref.IVDM()),
    ("ivdm", {"n_bins": 7}, lambda: ref.IVDM(n_bins=7)),
    ("gvdm", {}, lambda: ref.GVDM()),
    ("gvdm", {"sigma": 0.1}, lambda: ref.GVDM(sigma=0.1)),
    ("lvdm", {}, lambda: ref.LVDM()),
    ("lvdm", {"width": 0.5}, lambda: ref.LVDM(width=0.5)),
    ("pvdm", {}, lambda: ref.PVDM()),
    ("pvdm", {"width": 0.2, "step": 0.1}, lambda: ref.PVDM(width=0.2, step=0.1)),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name,params,factory", CASES)
def test_presets_match_reference_on_random_mixed_data(seed, name, params, factory):
    train, queries, y, kinds = mixed(seed)
    metric = Metric(name, **params).fit(train, y)
    R = reference(train, y, kinds, factory)
    check_against(metric, R, train, queries, GVDM_ATOL if name == "gvdm" else 1e-12)


class _Given:
    """Reference 'estimator' reading the package's fitted estimator, one value at a time."""

    def __init__(self, est):
        self.est = est

    def fit(self, *a):
        return self

    def p(self, v):
        return None if ref.is_missing(v) else self.est.transform([float(v)])[0].tolist()


def test_gvdm_distances_are_exact_given_its_posteriors():
    train, queries, y, kinds = mixed(4)
    metric = Metric("gvdm", sigma=0.3).fit(train, y)
    ests = iter([metric.estimators_[c] for c in ("c0", "c1", "c2")])
    R = reference(train, y, kinds, lambda: _Given(next(ests)))
    check_against(metric, R, train, queries)


@pytest.mark.parametrize("options,ref_kw", [
    ({"q": 1}, {"q": 1}),
    ({"p": 1.0}, {"p": 1.0}),
    ({"p": 3.0, "q": 1}, {"p": 3.0, "q": 1}),
    ({"missing": "ignore"}, {"missing": "ignore"}),
    ({"missing": "max"}, {}),                               # "max" acts as "one"
    ({"unseen": "prior", "vdm": "N1"}, {"unseen": "prior", "vdm": "N1"}),
    ({"weights": [0.5, 2.0, 1.0, 0.0, 3.0]}, {"weights": [0.5, 2.0, 1.0, 0.0, 3.0]}),
])
def test_settable_parameters(options, ref_kw):
    train, queries, y, kinds = mixed(7)
    for name, factory in (("ivdm", ref.IVDM), ("lvdm", ref.LVDM)):
        metric = Metric(name, **options).fit(train, y)
        check_against(metric, reference(train, y, kinds, factory, **ref_kw), train, queries)


@pytest.mark.parametrize("dataset", ["iris", "Glass", "PimaIndiansDiabetes2"])
@pytest.mark.parametrize("name", PRESETS)
@pytest.mark.needs_data
def test_presets_match_reference_on_real_data(dataset, name):
    df, y, kinds = ref.load(dataset)
    rng = np.random.default_rng(11)
    idx = rng.permutation(len(df))
    tr, te = idx[:90], idx[90:115]
    train, queries = df.iloc[tr].reset_index(drop=True), df.iloc[te].reset_index(drop=True)
    ytr = [y[i] for i in tr]
    metric = Metric(name).fit(train, ytr)
    R = reference(train, ytr, kinds, ref.ESTIMATORS[name])
    check_against(metric, R, train, queries, GVDM_ATOL if name == "gvdm" else 1e-12)


# --------------------------------------------------------------------------------------
# estimators one by one

def column(seed, n=300):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(0, 1, n // 2), rng.normal(2.5, 0.7, n - n // 2)])
    x = np.round(x, 2)                                       # ties
    y = np.where(x + rng.normal(0, 0.8, n) > 1.2, 1, 0) + (x > 2.8)
    x[rng.random(n) < 0.1] = np.nan
    return x, y.astype(np.int64), 3


def probes(x, extra=()):
    obs = x[~np.isnan(x)]
    lo, hi = obs.min(), obs.max()
    R = hi - lo
    grid = np.linspace(lo - 0.7 * R, hi + 0.7 * R, 301)
    return np.concatenate([grid, obs[:40], [lo, hi, np.nan], list(extra)])


ESTIMATOR_CASES = [
    (lambda: post.DiscretizedPosterior(), lambda: ref.DVDM()),
    (lambda: post.DiscretizedPosterior(discretizer=MDLP()),
     lambda: ref.DVDM(cut_fn=ref.mdlp_cuts)),
    (lambda: post.InterpolatedPosterior(n_bins=6), lambda: ref.IVDM(n_bins=6)),
    (lambda: post.LocalPosterior(0.1), lambda: ref.LVDM(0.1)),
    (lambda: post.ParzenPosterior(0.3, 0.01), lambda: ref.PVDM(0.3, 0.01)),
    (lambda: post.ParzenPosterior(0.1, 0.2), lambda: ref.PVDM(0.1, 0.2)),
]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("make,make_ref", ESTIMATOR_CASES)
def test_estimators_match_reference(seed, make, make_ref):
    x, y, C = column(seed)
    est = make().fit(x, y, C)
    R = make_ref().fit(x.tolist(), y.tolist(), C)
    extra = []
    if hasattr(est, "window_starts_"):
        extra = np.concatenate([est.window_starts_, est.window_ends_])
    if hasattr(est, "discretizer_"):
        extra = est.discretizer_.bin_edges_
    q = probes(x, extra)
    P = est.transform(q)
    for v, p in zip(q, P):
        r = R.p(float(v))
        if r is None:
            assert np.isnan(p).all()
        else:
            np.testing.assert_allclose(p, r, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("method", [None, "direct", "cells"])
def test_gvdm_grid_is_within_1e6_of_the_exact_sum(sigma, method):
    x, y, C = column(5, n=400)
    g = post.GaussianPosterior(sigma)
    g._method = method
    g.fit(x, y, C)
    R = ref.GVDM(sigma).fit(x.tolist(), y.tolist(), C)
    rng = np.random.default_rng(1)
    obs = x[~np.isnan(x)]
    h = g.bandwidth_
    q = np.concatenate([rng.uniform(obs.min() - 30 * h, obs.max() + 30 * h, 1500),
                        rng.uniform(obs.min(), obs.max(), 1500), obs,
                        obs.min() - h * np.array([27.29, 27.295, 27.3, 27.31]),
                        obs.max() + h * np.linspace(27.28, 27.32, 9)])
    P = g.transform(q)
    err = max(np.abs(P[i] - R.p(float(v))).max() for i, v in enumerate(q))
    assert err <= 1e-6
    assert np.allclose(P.sum(axis=1), 1.0)


def test_gvdm_underflow_gives_priors():
    x = np.concatenate([np.linspace(0, 1, 30), np.linspace(99, 100, 30), [np.nan] * 20])
    y = np.array([0] * 30 + [1] * 30 + [2] * 20)
    g = post.GaussianPosterior(sigma=0.001).fit(x, y, 3)          # h = 0.1
    np.testing.assert_allclose(g.priors_, [0.375, 0.375, 0.25])
    P = g.transform([50.0, -10.0, 200.0, 1.5, 98.0, 0.5])
    np.testing.assert_array_equal(P[:3], np.tile(g.priors_, (3, 1)))
    R = ref.GVDM(0.001).fit(x.tolist(), y.tolist(), 3)
    for v, p in zip([1.5, 98.0, 0.5, 3.72, 3.74], g.transform([1.5, 98.0, 0.5, 3.72, 3.74])):
        np.testing.assert_allclose(p, R.p(v), atol=1e-6)
    assert g.transform([1.5])[0, 0] > 0.999999


def test_gvdm_cells_and_direct_agree_on_large_data():
    rng = np.random.default_rng(2)
    x = rng.normal(size=20000)
    y = (x + rng.normal(size=20000) > 0).astype(np.int64)
    a = post.GaussianPosterior(0.2)
    a._method = "direct"
    b = post.GaussianPosterior(0.2)
    b._method = "cells"
    a.fit(x, y, 2)
    b.fit(x, y, 2)
    s = np.linspace(-30, 1 / 0.2 * 1.0 + 30, 997)
    va, da = a._exact(s)
    vb, db = b._exact(s)
    assert np.abs(va - vb).max() < 1e-12 and np.abs(da - db).max() < 1e-10


def test_ivdm_midpoints_linear_and_constant_outside():
    x, y, C = column(3)
    est = post.InterpolatedPosterior(n_bins=5).fit(x, y, C)
    mid, P = est.midpoints_, est.bin_probabilities_
    obs = x[~np.isnan(x)]
    w = (obs.max() - obs.min()) / 5
    np.testing.assert_allclose(mid, obs.min() + w * (np.arange(5) + 0.5))
    np.testing.assert_allclose(est.transform(mid), P, atol=1e-15)
    for u in range(4):
        for f in (0.25, 0.5, 0.9):
            v = mid[u] + f * (mid[u + 1] - mid[u])
            np.testing.assert_allclose(est.transform([v])[0], P[u] + f * (P[u + 1] - P[u]),
                                       atol=1e-14)
    below = est.transform([mid[0] - 1e-9, obs.min(), obs.min() - 100])
    above = est.transform([mid[-1] + 1e-9, obs.max(), obs.max() + 100])
    np.testing.assert_array_equal(below, np.tile(P[0], (3, 1)))
    np.testing.assert_array_equal(above, np.tile(P[-1], (3, 1)))
    counts = np.zeros((5, C))
    np.add.at(counts, (est.discretizer_.codes(obs), y[~np.isnan(x)]), 1)
    np.testing.assert_allclose(P, counts / counts.sum(1, keepdims=True))


def test_dvdm_end_bins_and_empty_bins():
    x = np.array([0.0, 0.1, 0.2, 0.9, 1.0, 10.0])
    y = np.array([0, 0, 1, 1, 1, 0])
    est = post.DiscretizedPosterior(n_bins=5).fit(x, y, 2)
    P = est.transform([-50.0, 0.0, 1.0, 10.0, 1e6, 5.0])
    np.testing.assert_allclose(P[0], P[1])                      # below the range: bin 0
    np.testing.assert_allclose(P[1], [0.4, 0.6])                # 0, .1, .2, .9, 1 in [0, 2)
    np.testing.assert_allclose(P[3], [1.0, 0.0])                # the last bin holds 10
    np.testing.assert_allclose(P[4], P[3])                      # above the range
    np.testing.assert_array_equal(P[5], [0.0, 0.0])             # an empty bin


def test_empty_windows_give_priors():
    x = np.array([0.0, 0.1, 0.2, 9.8, 9.9, 10.0, np.nan])
    y = np.array([0, 0, 1, 1, 1, 1, 0])
    priors = np.bincount(y) / 7
    lv = post.LocalPosterior(width=0.1).fit(x, y, 2)             # window of width 1
    np.testing.assert_allclose(lv.transform([5.0, -3.0, 14.0]), np.tile(priors, (3, 1)))
    np.testing.assert_allclose(lv.transform([0.1])[0], [2 / 3, 1 / 3])
    pv = post.ParzenPosterior(width=0.1, step=0.05).fit(x, y, 2)
    np.testing.assert_allclose(pv.transform([5.0, -3.0, 14.0]), np.tile(priors, (3, 1)))
    np.testing.assert_allclose(pv.transform([9.95])[0], [0.0, 1.0])


def test_missing_rows_and_constant_columns():
    x = np.array([2.0, 2.0, np.nan, 2.0])
    y = np.array([0, 1, 1, 1])
    for est in (post.DiscretizedPosterior(), post.InterpolatedPosterior(),
                post.GaussianPosterior(), post.LocalPosterior(), post.ParzenPosterior()):
        P = est.fit(x, y, 2).transform([2.0, np.nan, -7.0])
        np.testing.assert_allclose(P[[0, 2]], [[1 / 3, 2 / 3]] * 2)
        assert np.isnan(P[1]).all()
    train = pd.DataFrame({"a": [1.0, 1.0, 1.0, 1.0], "b": [0.0, 1.0, 2.0, 3.0]})
    m = Metric("gvdm").fit(train, [0, 0, 1, 1])
    assert m.pairwise(pd.DataFrame({"a": [5.0], "b": [0.0]}), train)[0, 0] == 0.0


# --------------------------------------------------------------------------------------
# metric plumbing

def test_estimators_stored_reset_and_pickled():
    train, queries, y, _ = mixed(2)
    m = Metric("pvdm", step=0.1).fit(train, y)
    assert sorted(m.estimators_) == ["c0", "c1", "c2"]
    assert isinstance(m.estimators_["c0"], post.ParzenPosterior)
    first = m.estimators_
    m.fit(train[["c0", "n0"]], y)
    assert sorted(m.estimators_) == ["c0"] and m.estimators_ is not first
    m.fit(train, y)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m2.pairwise(queries, train), m.pairwise(queries, train))


def test_needs_labels_and_validates_parameters():
    train, _, y, _ = mixed(0)
    with pytest.raises(ValueError, match="class labels"):
        Metric("ivdm").fit(train)
    bad = [("gvdm", {"sigma": 0}, ValueError, "sigma"),
           ("gvdm", {"sigma": "wide"}, TypeError, "sigma"),
           ("lvdm", {"width": -1.0}, ValueError, "width"),
           ("pvdm", {"step": 0.0}, ValueError, "step"),
           ("pvdm", {"step": 1e-9}, ValueError, "windows"),
           ("ivdm", {"n_bins": 0}, ValueError, "n_bins"),
           ("dvdm", {"n_bins": 2.5}, TypeError, "n_bins"),
           ("dvdm", {"discretizer": "mdlp"}, TypeError, "discretizer"),
           ("dvdm", {"n_bins": 4, "discretizer": MDLP()}, ValueError, "not both"),
           ("ivdm", {"q": 3}, ValueError, "q must be 1 or 2"),
           ("ivdm", {"vdm": "N7"}, ValueError, "vdm")]
    for name, params, exc, msg in bad:
        with pytest.raises(exc, match=msg):
            Metric(name, **params).fit(train, y)
    for name, params in [("gvdm", {"width": 0.2}), ("lvdm", {"sigma": 1.0}),
                         ("ivdm", {"discretizer": MDLP()}), ("dvdm", {"normalization": "range"})]:
        with pytest.raises(TypeError, match="does not take"):
            Metric(name, **params)


def test_preset_defaults_in_registry():
    from hdist import METRICS
    for name in PRESETS:
        info = METRICS[name]
        assert info.needs_y and info.nominal == "vdm" and info.continuous == name
        assert info.defaults["p"] == 2.0 and info.defaults["q"] == 2
        assert info.defaults["missing"] == "one" and info.defaults["vdm"] == "N2"
    assert METRICS["gvdm"].defaults["sigma"] == 0.5
    assert METRICS["lvdm"].defaults["width"] == 0.2
    assert METRICS["pvdm"].defaults["width"] == 0.4 and METRICS["pvdm"].defaults["step"] == 0.05


# --------------------------------------------------------------------------------------
# mean_diff normalization (docs/metrics.md §3): exact O(n log n) against the O(n²) pair
# average

@pytest.mark.parametrize("seed", range(5))
def test_mean_abs_difference_is_the_pair_average(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=int(rng.integers(2, 90))) * 10 ** rng.uniform(-2, 4), 1)
    pairs = [abs(x[i] - x[j]) for i in range(len(x)) for j in range(i + 1, len(x))]
    assert math.isclose(mean_abs_difference(x), sum(pairs) / len(pairs), rel_tol=1e-12,
                        abs_tol=1e-300)
    xm = np.concatenate([x, [np.nan, np.nan]])
    expected = sum(pairs) / len(pairs)
    assert math.isclose(normalization_delta(xm, "mean_diff"),
                        expected if expected > 0 else 1.0, rel_tol=1e-12)


@pytest.mark.parametrize("name", ["ivdm", "gvdm", "pvdm"])
def test_matrix_product_path_and_threads_agree_with_the_direct_kernel(name):
    # enough pairs for the GEMM candidate filter: it must return the direct kernel's answer
    train, queries, y, _ = mixed(9, n=620, nq=440)
    m = Metric(name).fit(train, y)
    d, i = m.kneighbors(queries, 5, n_jobs=2)
    rows = m.encode(queries, what="Q")
    found = brute_knn(m.plan_, rows, m.train_, CRows(m.train_), 5, 1, method="direct")
    d1, i1 = found.dist, found.ind
    np.testing.assert_array_equal(i, i1)
    np.testing.assert_array_equal(d, d1)
    d2, i2 = m.kneighbors(queries, 5, n_jobs=1)
    np.testing.assert_array_equal(i, i2)
    np.testing.assert_array_equal(d, d2)
    D = m.pairwise(queries, train)
    np.testing.assert_array_equal(np.take_along_axis(D, i, axis=1), d)
