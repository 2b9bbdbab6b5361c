"""sample_weight everywhere: a row of integer weight m counts exactly as m copies of it
in the k-NN estimators' votes, in every statistic Metric.fit learns, in the discretizers
and in k-modes / k-prototypes, checked against the same objects fitted on repeated rows;
non-integer weights against plain-numpy weighted references."""
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist import Metric
from hdist._search import votes as _knn
from hdist._core import posteriors as post
from hdist._core.statistics import mean_abs_difference, weighted_quantile, weighted_std
from hdist.cluster import KModes, KPrototypes
from hdist.discretize import MDLP, EqualFrequency, EqualWidth
from hdist.neighbors import KNeighborsClassifier, KNeighborsRegressor


def tied_data(seed, n=60, n_query=40):
    """Mixed rows on a coarse grid (many exact distance ties) with missing values."""
    rng = np.random.default_rng(seed)
    N = n + n_query
    a = rng.integers(0, 5, size=N).astype(float)
    b = rng.integers(0, 3, size=N).astype(float)
    c = rng.choice(["u", "v", "w"], size=N).astype(object)
    a[rng.random(N) < 0.1] = np.nan
    c[rng.random(N) < 0.1] = None
    X = pd.DataFrame({"a": a, "b": b, "c": c})
    y = rng.choice(["p", "q", "r"], size=N)
    target = rng.normal(size=N)
    return X.iloc[:n].reset_index(drop=True), y[:n], target[:n], X.iloc[n:], rng


#: tied_data's columns a and b hold a few integers each: continuous, declared
NUMBERS = {"continuous": [0, 1]}


def integer_weights(X, rng):
    """Weights in 0..3, a few rows of weight 0 (left out of the metric's fit)."""
    sw = rng.integers(1, 4, size=len(X))
    sw[rng.choice(len(X), size=6, replace=False)] = 0
    return sw


def repeated(X, y, sw):
    rows = np.repeat(np.arange(len(X)), sw)
    return X.iloc[rows].reset_index(drop=True), np.asarray(y)[rows]


def outputs(est, Q):
    """Probabilities of a classifier, predictions of a regressor."""
    return est.predict_proba(Q) if hasattr(est, "classes_") else est.predict(Q)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
@pytest.mark.parametrize("k", [1, 3, 6])
@pytest.mark.parametrize("cls", [KNeighborsClassifier, KNeighborsRegressor])
def test_integer_weights_equal_repeated_rows(cls, seed, ties, weights, k):
    X, y, t, Q, rng = tied_data(seed)
    target = y if cls is KNeighborsClassifier else t
    sw = integer_weights(X, rng)
    est = dict(n_neighbors=k, weights=weights, ties=ties, metric="heom", metric_params=NUMBERS)
    weighted = cls(**est).fit(X, target, sample_weight=sw)
    Xr, tr = repeated(X, target, sw)
    plain = cls(**est).fit(Xr, tr)
    np.testing.assert_allclose(outputs(weighted, Q), outputs(plain, Q), rtol=1e-12, atol=1e-12)
    if cls is KNeighborsClassifier:
        np.testing.assert_array_equal(weighted.predict(Q), plain.predict(Q))


@pytest.mark.parametrize("ties", ["index", "include"])
@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
def test_unit_weights_change_nothing(ties, weights):
    X, y, t, Q, rng = tied_data(3)
    for cls, target in ((KNeighborsClassifier, y), (KNeighborsRegressor, t)):
        est = dict(n_neighbors=4, weights=weights, ties=ties, select_k="loo",
                   metric_params=NUMBERS)
        a = cls(**est).fit(X, target)
        b = cls(**est).fit(X, target, sample_weight=np.ones(len(X)))
        np.testing.assert_allclose(b.loo_scores_, a.loo_scores_, rtol=1e-12)
        np.testing.assert_allclose(outputs(b, Q), outputs(a, Q), rtol=1e-12)


def test_fractional_weights_reach_past_k_rows():
    """Weights below 1 widen the neighborhood until its weight reaches k: with every
    weight 1/2, k = 2 uses the 4 nearest rows, as k = 4 does unweighted."""
    X, y, _, Q, _ = tied_data(4)
    half = KNeighborsClassifier(n_neighbors=2, ties="index", metric_params=NUMBERS).fit(
        X, y, sample_weight=np.full(len(X), 0.5))
    four = KNeighborsClassifier(n_neighbors=4, ties="index", metric_params=NUMBERS).fit(X, y)
    np.testing.assert_allclose(half.predict_proba(Q), four.predict_proba(Q), rtol=1e-12)


def test_mass_weights_by_hand():
    """One query, neighbors at 0.1, 0.2, 0.2, 0.5 with weights 1, 0, 2, 3 and k = 3."""
    dist = np.array([[0.1, 0.2, 0.2, 0.5]])
    mass = np.array([[1.0, 0.0, 2.0, 3.0]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 3, "uniform", "index"),
                                  [[1, 0, 2, 0]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 2, "uniform", "index"),
                                  [[1, 0, 1, 0]])
    # k = 4: the row at 0.5 carries the 4th unit, counted with 1 of its 3 (index) or all
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 4, "uniform", "index"),
                                  [[1, 0, 2, 1]])
    np.testing.assert_array_equal(_knn.mass_weights(dist, mass, 4, "uniform", "include"),
                                  [[1, 0, 2, 3]])
    # Dudani with d_1 = 0.1 and d_k = 0.5: (0.5 - d) / 0.4 times the counted weight
    np.testing.assert_allclose(_knn.mass_weights(dist, mass, 4, "dudani", "index"),
                               [[1.0, 0.0, 2 * 0.75, 0.0]])
    # a weightless nearest row is not Dudani's d_1
    mass0 = np.array([[0.0, 1.0, 1.0, 1.0]])
    np.testing.assert_allclose(_knn.mass_weights(dist, mass0, 3, "dudani", "index"),
                               [[0.0, 1.0, 1.0, 0.0]])
    assert _knn.mass_complete(dist, mass, 6, "index").tolist() == [True]
    assert _knn.mass_complete(dist, mass, 7, "index").tolist() == [False]
    assert _knn.mass_complete(dist, mass, 2, "include").tolist() == [True]
    assert _knn.mass_complete(dist, mass, 4, "include").tolist() == [False]


@pytest.mark.parametrize("sw, message", [
    (-np.ones(60), "non-negative"),
    (np.r_[np.ones(59), np.nan], "finite"),
    (np.ones(59), "one weight per training row"),
    (np.zeros(60), "all zero"),
    (np.array(["a"] * 60, dtype=object), "numbers"),
    (np.ones(60, dtype=bool), "numbers, got bool"),
    (np.array([True] * 60, dtype=object), "numbers, got bool"),
    (np.array(["1"] * 60), "numbers"),
    (np.full(60, 1e308), "infinity"),
])
def test_bad_sample_weight(sw, message):
    """Every fit that takes sample_weight refuses bad weights naming the argument."""
    X, y, t, _, _ = tied_data(5)
    fits = [lambda: KNeighborsClassifier().fit(X, y, sample_weight=sw),
            lambda: KNeighborsRegressor().fit(X, t, sample_weight=sw),
            lambda: Metric("hvdm").fit(X, y, sample_weight=sw),
            lambda: KPrototypes(2).fit(X, sample_weight=sw),
            lambda: KModes(2).fit(X[["c"]], sample_weight=sw),
            lambda: EqualFrequency(3).fit(X["a"], sample_weight=sw),
            lambda: MDLP().fit(X["a"], y, sample_weight=sw)]
    for fit in fits:
        with pytest.raises((ValueError, TypeError), match=message) as err:
            fit()
        assert "sample_weight" in str(err.value)


def as_table(X, kind):
    if kind == "pandas":
        return X
    if kind == "numpy":
        return X.to_numpy(dtype=object)
    if kind == "polars":
        pl = pytest.importorskip("polars")
        return pl.from_pandas(X)
    pa = pytest.importorskip("pyarrow")
    return pa.Table.from_pandas(X, preserve_index=False)


@pytest.mark.parametrize("kind", ["pandas", "numpy", "polars", "pyarrow"])
@pytest.mark.parametrize("metric", ["heom", "hvdm", "gower"])
def test_zero_weight_rows_are_absent(kind, metric):
    """0/1 weights equal fitting on the rows of weight 1 only, for metrics that learn
    ranges, standard deviations and class tables in fit."""
    X, y, t, Q, rng = tied_data(6)
    sw = (rng.random(len(X)) < 0.7).astype(int)
    keep = np.flatnonzero(sw)
    Xk, yk = repeated(X, y, sw)
    Qt = as_table(Q.reset_index(drop=True), kind)
    for cls, target in ((KNeighborsClassifier, y), (KNeighborsRegressor, t)):
        est = dict(n_neighbors=3, metric=metric, weights="distance", metric_params=NUMBERS)
        a = cls(**est).fit(as_table(X, kind), target, sample_weight=sw)
        b = cls(**est).fit(as_table(Xk, kind), np.asarray(target)[keep])
        np.testing.assert_allclose(outputs(a, Qt), outputs(b, Qt), rtol=1e-12, atol=1e-12)


# -- sample_weight in Metric.fit: every statistic of every preset --------------------------


def mixed_data(seed, n=40, n_query=12, nominal_only=False):
    """Mixed rows with missing values, a few repeated continuous values, a nominal value
    and a class that only rows of weight 0 hold, and queries with unseen values."""
    rng = np.random.default_rng(seed)
    N = n + n_query
    a = np.round(rng.normal(size=N), 1)
    b = rng.gamma(2.0, size=N)
    c = rng.choice(["u", "v", "w", "x"], size=N).astype(object)
    e = rng.choice(["p", "q"], size=N).astype(object)
    a[rng.random(N) < 0.1] = np.nan
    b[rng.random(N) < 0.1] = np.nan
    c[rng.random(N) < 0.1] = None
    y = rng.choice(["k", "l", "m"], size=N).astype(object)
    sw = rng.integers(1, 4, size=n)
    zero = rng.choice(n, size=5, replace=False)
    sw[zero] = 0
    c[zero[0]] = "only-in-weight-0"
    y[zero[1]] = "class-of-weight-0"
    c[n] = "unseen"
    cols = {"c": c, "e": e} if nominal_only else {"a": a, "b": b, "c": c, "e": e}
    X = pd.DataFrame(cols)
    return X.iloc[:n].reset_index(drop=True), y[:n], sw, X.iloc[n:].reset_index(drop=True)


#: (preset, parameters, nominal columns only): every preset, every normalization, the
#: class-posterior estimators with their discretizers, co-occurrence tables, MI weights
CONFIGS = [
    ("heom", {}, False),
    ("heom", {"normalization": "trimmed_range", "trim": 0.1}, False),
    ("heom", {"normalization": "4std", "missing": "max"}, False),
    ("heom", {"normalization": "mean_diff", "weights": "mi"}, False),
    ("heom", {"weights": "mi", "mi_discretizer": MDLP()}, False),
    ("hvdm", {}, False),
    ("hvdm", {"unseen": "prior", "missing": "symbol", "vdm": "N3"}, False),
    ("vdm", {}, True),
    ("vdm", {"unseen": "prior"}, True),
    ("dvdm", {}, False),
    ("dvdm", {"discretizer": MDLP()}, False),
    ("dvdm", {"discretizer": EqualFrequency(4)}, False),
    ("dvdm", {"discretizer": EqualWidth(4, trim=0.1)}, False),
    ("ivdm", {}, False),
    ("gvdm", {}, False),
    ("gvdm", {"sigma": 0.05}, False),
    ("lvdm", {}, False),
    ("pvdm", {}, False),
    ("hds", {}, False),
    ("hds", {"missing": "symbol"}, False),
    ("add", {"n_bins": 4, "normalization": "4std"}, False),
    ("smd", {}, True),
    ("minkowski", {"p": 3}, False),
    ("euclidean", {"normalization": "mean_diff"}, False),
    ("manhattan", {"normalization": "trimmed_range"}, False),
    ("chebyshev", {}, False),
    ("fractional", {"p": 0.5}, False),
    ("gower", {}, False),
]


def test_configs_cover_every_preset():
    assert {name for name, _, _ in CONFIGS} == {i.name for i in hdist.METRICS.values()}


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def assert_same_statistics(mw, mr):
    """Every statistic a fit learns, and the Plan's per-attribute numbers."""
    assert list(mw.classes_) == list(mr.classes_) if hasattr(mr, "classes_") else True
    assert mw.schema_.categories_ == mr.schema_.categories_
    assert mw.delta_.keys() == mr.delta_.keys()
    for k in mr.delta_:
        close(mw.delta_[k], mr.delta_[k])
    for attr in ("vdm_probabilities_", "value_tables_"):
        a, b = getattr(mw, attr), getattr(mr, attr)
        assert a.keys() == b.keys()
        for k in b:
            close(a[k], b[k])
    close(mw.weights_, mr.weights_)
    if hasattr(mr, "mutual_information_"):
        close(mw.mutual_information_, mr.mutual_information_)
    for k, est in getattr(mr, "estimators_", {}).items():
        grid = np.linspace(est.min_ - 1, est.max_ + 1, 301)
        np.testing.assert_allclose(mw.estimators_[k].transform(grid), est.transform(grid),
                                   rtol=1e-9, atol=1e-9)
        close(mw.estimators_[k].priors_, est.priors_)
    for cw, cr in zip(mw.plan_.components, mr.plan_.components):
        for attr in ("delta", "lo", "hi"):
            if hasattr(cr, attr):
                close(getattr(cw, attr), getattr(cr, attr))


@pytest.mark.parametrize("name, params, nominal_only", CONFIGS)
def test_metric_integer_weights_equal_repeated_rows(name, params, nominal_only):
    X, y, sw, Q = mixed_data(7, nominal_only=nominal_only)
    mw = Metric(name, **params).fit(X, y, sample_weight=sw)
    Xr, yr = repeated(X, y, sw)
    mr = Metric(name, **params).fit(Xr, yr)
    assert_same_statistics(mw, mr)
    close(mw.pairwise(Q), mr.pairwise(Q))
    close(mw.pairwise(Q, X), mr.pairwise(Q, X))
    # the training rows are every row of X, weight 0 included, as the statistics see them
    assert mw.n_train_ == len(X)
    d, i = mw.kneighbors(Q, 6)
    D = mr.pairwise(Q, X)
    close(d, np.sort(D, axis=1)[:, :6])
    close(np.take_along_axis(D, i, axis=1), d)


def test_metric_unit_weights_change_nothing():
    X, y, sw, Q = mixed_data(8)
    for name in ("hvdm", "ivdm", "hds", "gower"):
        a = Metric(name, weights="mi").fit(X, y)
        b = Metric(name, weights="mi").fit(X, y, sample_weight=np.ones(len(X)))
        np.testing.assert_array_equal(a.pairwise(Q, X), b.pairwise(Q, X))


def test_metric_unseen_values_of_weight_zero_rows_match_queries():
    """A nominal value held only by rows of weight 0 is unseen by the statistics, yet
    equal to itself: a query holding it is at 0 on that column from those rows."""
    X = pd.DataFrame({"c": ["a", "b", "a", "z"], "t": [0.0, 1.0, 2.0, 3.0]})
    m = Metric("heom").fit(X, sample_weight=[1, 1, 1, 0])
    assert m.schema_.categories_[0] == ["a", "b"]
    d, i = m.kneighbors(pd.DataFrame({"c": ["z"], "t": [3.0]}), 1)
    assert i[0, 0] == 3 and d[0, 0] == 0.0


def test_metric_needs_two_rows_of_weight():
    X = pd.DataFrame({"t": [0.0, 1.0, 2.0]})
    with pytest.raises(ValueError, match="positive sample_weight"):
        Metric("heom").fit(X, sample_weight=[0, 1, 0])
    Metric("heom", continuous=["t"]).fit(X, sample_weight=[0, 2, 0])   # two rows' worth


# -- non-integer weights against plain-numpy references ----------------------------------
def ref_weighted_quantile(x, q, w):
    """The documented rule, step by step in exact rationals: position h = (W - 1) q on
    the cumulative weight; the value at position t is the first sorted row whose
    cumulative weight exceeds t."""
    pairs = sorted(zip(x, w))
    xs = [Fraction(v) for v, _ in pairs]
    cum, S = [], Fraction(0)
    for _, wt in pairs:
        S += Fraction(wt)
        cum.append(S)
    h = (S - 1) * Fraction(q)
    if h >= S - 1:
        return float(xs[-1])
    if h < 0:
        return float(xs[0])

    def at(t):
        return next((v for v, c in zip(xs, cum) if c > t), xs[-1])
    lo = math.floor(h)
    return float(at(lo) + (h - lo) * (at(lo + 1) - at(lo)))


def ref_weighted_std(x, w):
    mu = np.average(x, weights=w)
    return math.sqrt(np.sum(w * (x - mu) ** 2) / (np.sum(w) - 1))


def ref_weighted_mean_diff(x, w):
    """Σ_{i<j} w_i w_j |x_i - x_j| / (W (W - 1) / 2), pair by pair."""
    W = float(np.sum(w))
    tot = sum(w[i] * w[j] * abs(x[i] - x[j]) for i in range(len(x))
              for j in range(i + 1, len(x)))
    return tot / (W * (W - 1) / 2)



@pytest.mark.parametrize("seed", range(4))
def test_weighted_statistics_against_references(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=25), 1)
    w = rng.integers(1, 13, size=25) / 4.0          # quarters: exact in binary
    for q in (0.0, 0.05, 0.1, 0.37, 0.5, 0.9, 1.0):
        assert weighted_quantile(x, q, w) == pytest.approx(ref_weighted_quantile(x, q, w),
                                                           rel=1e-13, abs=1e-13)
    assert weighted_std(x, w) == pytest.approx(ref_weighted_std(x, w), rel=1e-12)
    assert mean_abs_difference(x, w) == pytest.approx(ref_weighted_mean_diff(x, w), rel=1e-12)


def test_integer_weighted_quantiles_are_numpys_on_repeated_values():
    rng = np.random.default_rng(11)
    for _ in range(300):
        n = int(rng.integers(1, 15))
        x = rng.integers(0, 6, size=n) * 0.3 + rng.random()
        w = rng.integers(1, 5, size=n)
        q = rng.random(5)
        np.testing.assert_array_equal(weighted_quantile(x, q, w),
                                      np.quantile(np.repeat(x, w), q))


def test_metric_fractional_weights_against_references():
    """hvdm and heom's normalizations with weights in quarters, against the references:
    δ, the VDM class probabilities, and the distances built from them."""
    X, y, _, Q = mixed_data(10)
    rng = np.random.default_rng(10)
    sw = rng.integers(1, 13, size=len(X)) / 4.0
    m = Metric("hvdm").fit(X, y, sample_weight=sw)
    for col in ("a", "b"):
        ok = X[col].notna().to_numpy()
        close(m.delta_[col], 4 * ref_weighted_std(X[col].to_numpy()[ok], sw[ok]))
    for norm, ref in (("mean_diff", ref_weighted_mean_diff),
                      ("trimmed_range", lambda x, w: ref_weighted_quantile(x, 0.95, w)
                       - ref_weighted_quantile(x, 0.05, w))):
        mh = Metric("heom", normalization=norm).fit(X, sample_weight=sw)
        ok = X["b"].notna().to_numpy()
        close(mh.delta_["b"], ref(X["b"].to_numpy()[ok], sw[ok]))
    classes = sorted(set(y))
    for col in ("c", "e"):
        cats = m.schema_.categories_[list(X.columns).index(col)]
        P = np.zeros((len(cats), len(classes)))
        for v, c, wt in zip(X[col], y, sw):
            if v is not None and v == v:
                P[cats.index(v), classes.index(c)] += wt
        P /= P.sum(axis=1, keepdims=True)
        close(m.vdm_probabilities_[col][:len(cats)], P)
    # the distance from those statistics, term by term (hvdm: N2 VDM, |Δ| / 4σ, "one")
    q, r = Q.iloc[3], X.iloc[5]
    terms = []
    for col in ("a", "b"):
        terms.append(1.0 if pd.isna(q[col]) or pd.isna(r[col]) else
                     abs(q[col] - r[col]) / m.delta_[col])
    for col in ("c", "e"):
        cats = m.schema_.categories_[list(X.columns).index(col)]
        if pd.isna(q[col]) or pd.isna(r[col]):
            terms.append(1.0)
            continue
        P = m.vdm_probabilities_[col]
        pq = P[cats.index(q[col])] if q[col] in cats else np.zeros(P.shape[1])
        terms.append(np.sqrt(np.sum((pq - P[cats.index(r[col])]) ** 2)))
    close(m.pairwise(Q.iloc[[3]], X.iloc[[5]])[0, 0], math.sqrt(sum(t * t for t in terms)))


def test_weighted_cooccurrence_and_mi_against_references():
    """hds tables and MI weights with fractional weights, from weighted counts done by
    hand (all-nominal data, so no binning is involved)."""
    X, y, _, _ = mixed_data(12, nominal_only=True)
    rng = np.random.default_rng(12)
    sw = rng.integers(1, 9, size=len(X)) / 8.0
    m = Metric("hds").fit(X, sample_weight=sw)
    cats = m.schema_.categories_
    # the table of c: Hellinger distance between the weighted distributions of e
    Q = {}
    for v, e, wt in zip(X["c"], X["e"], sw):
        if v is not None and v == v:
            d = Q.setdefault(v, dict.fromkeys(cats[1], 0.0))
            d[e] += wt
    T = m.value_tables_["c"]
    for i, v in enumerate(cats[0]):
        for j, u in enumerate(cats[0]):
            pv = np.array(list(Q[v].values())) / sum(Q[v].values())
            pu = np.array(list(Q[u].values())) / sum(Q[u].values())
            want = 0.0 if i == j else np.sqrt(0.5 * np.sum((np.sqrt(pv) - np.sqrt(pu)) ** 2))
            close(T[i, j], want)
    mi = Metric("smd", weights="mi").fit(X, y, sample_weight=sw)
    info = []
    for col in ("c", "e"):
        ok = X[col].notna().to_numpy()
        xs, ys, ws = X[col].to_numpy()[ok], y[ok], sw[ok]
        W = ws.sum()
        total = 0.0
        for a in set(xs):
            for b in set(ys):
                pab = ws[(xs == a) & (ys == b)].sum() / W
                if pab > 0:
                    total += pab * math.log(pab / (ws[xs == a].sum() / W * ws[ys == b].sum() / W))
        info.append(total)
    close(mi.mutual_information_, info)
    close(mi.weights_, 2 * np.array(info) / sum(info))


@pytest.mark.parametrize("disc", [EqualFrequency(4), EqualWidth(3, trim=0.1), MDLP()])
def test_discretizers_integer_weights_equal_repeated_values(disc):
    rng = np.random.default_rng(13)
    x = np.round(rng.normal(size=60), 1)
    x[rng.random(60) < 0.1] = np.nan
    y = rng.choice(3, size=60) + (x > 0)
    sw = rng.integers(0, 4, size=60)
    a = type(disc)(**disc.get_params()).fit(x, y, sample_weight=sw)
    b = type(disc)(**disc.get_params()).fit(np.repeat(x, sw), np.repeat(y, sw))
    np.testing.assert_array_equal(a.bin_edges_, b.bin_edges_)


# -- estimators: the metric's statistics are weighted too ----------------------------------
@pytest.mark.parametrize("cls, metric, params", [
    (KNeighborsClassifier, "hvdm", None),
    (KNeighborsClassifier, "ivdm", None),
    (KNeighborsClassifier, "gvdm", None),
    (KNeighborsClassifier, "hds", None),
    (KNeighborsClassifier, "heom", {"weights": "mi", "normalization": "mean_diff"}),
    (KNeighborsRegressor, "heom", {"normalization": "4std"}),
    (KNeighborsRegressor, "hds", {"normalization": "trimmed_range"}),
    (KNeighborsRegressor, "gower", {"normalization": "mean_diff"}),
])
def test_estimators_weighted_statistics_equal_repeated_rows(cls, metric, params):
    """Every k-NN estimator with a metric whose statistics depend on the weights:
    predictions, probabilities and neighbor distances as with repeated rows."""
    X, y, sw, Q = mixed_data(14)
    y = np.where(y == "class-of-weight-0", "k", y)     # the classifier's classes are y's
    t = np.random.default_rng(14).normal(size=len(X))
    target = y if cls is KNeighborsClassifier else t
    est = dict(n_neighbors=5, metric=metric, metric_params=params, weights="distance")
    a = cls(**est).fit(X, target, sample_weight=sw)
    Xr, tr = repeated(X, target, sw)
    b = cls(**est).fit(Xr, tr)
    close(outputs(a, Q), outputs(b, Q))
    if cls is KNeighborsClassifier:
        np.testing.assert_array_equal(a.predict(Q), b.predict(Q))
    da, ia = a.kneighbors(Q, 4)
    D = b.metric_.pairwise(Q, X)
    close(da, np.sort(D, axis=1)[:, :4])
    close(np.take_along_axis(D, ia, axis=1), da)


# -- k-modes and k-prototypes --------------------------------------------------------------
def cluster_data(seed, n=50):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 3, size=n)
    X = pd.DataFrame({
        "a": g * 3.0 + rng.normal(size=n),
        "b": np.where(rng.random(n) < 0.1, np.nan, g - rng.gamma(1.0, size=n)),
        "c": np.array(["u", "v", "w"], dtype=object)[(g + (rng.random(n) < 0.2)) % 3],
        "e": rng.choice(["p", "q", "r"], size=n).astype(object),
    })
    X.loc[rng.random(n) < 0.1, "c"] = None
    sw = rng.integers(1, 4, size=n)
    sw[rng.choice(n, size=4, replace=False)] = 0
    return X, sw


@pytest.mark.parametrize("cls, metric, params", [
    (KPrototypes, "heom", {}),
    (KPrototypes, "hds", {}),
    (KPrototypes, "heom", {"metric_params": {"normalization": "4std"}}),
    (KModes, "smd", {}),
    (KModes, "hds", {}),
    (KModes, "add", {"nominal_center": "mode"}),
])
def test_clustering_integer_weights_equal_repeated_rows(cls, metric, params):
    """From the same initial centers, weighted rows and repeated rows reach the same
    centers, labels and cost (weighted means, weighted nominal centers, weighted
    statistics of the metric)."""
    X, sw = cluster_data(15)
    if cls is KModes:
        X = X[["c", "e"]]
    Xr, _ = repeated(X, np.zeros(len(X)), sw)
    init = X.iloc[[1, 20, 40]]
    a = cls(3, metric=metric, init=init, **params).fit(X, sample_weight=sw)
    b = cls(3, metric=metric, init=init, **params).fit(Xr)
    rows = np.repeat(np.arange(len(X)), sw)
    np.testing.assert_array_equal(a.labels_[rows], b.labels_)
    assert a.inertia_ == pytest.approx(b.inertia_, rel=1e-10)
    assert a.n_iter_ == b.n_iter_
    pd.testing.assert_frame_equal(a.cluster_centers_, b.cluster_centers_, rtol=1e-10)
    close(a.transform(X), b.transform(X))


def test_clustering_weighted_means_and_modes_by_hand():
    """One cluster: the center is the weighted mean and the weighted mode, the cost the
    weighted sum of squared range-normalized differences."""
    X = pd.DataFrame({"t": [0.0, 1.0, 4.0], "c": ["a", "b", "b"]})
    sw = np.array([3.0, 0.5, 0.5])
    km = KPrototypes(1, metric="heom", metric_params={"normalization": "none"},
                     init=X.iloc[[0]]).fit(X, sample_weight=sw)
    mean = (3 * 0.0 + 0.5 * 1.0 + 0.5 * 4.0) / 4.0
    assert km.cluster_centers_.loc[0, "t"] == pytest.approx(mean)
    assert km.cluster_centers_.loc[0, "c"] == "a"       # weight 3 against 1
    cost = np.sum(sw * ((X["t"] - mean) ** 2 + (X["c"] != "a")))
    assert km.inertia_ == pytest.approx(cost)


def test_clustering_seeds_never_draw_weight_zero_rows():
    X, sw = cluster_data(16)
    sw[:] = 0
    full = np.flatnonzero(X.notna().all(axis=1).to_numpy())
    sw[full[[0, 5, 10, 15]]] = 1       # rows without a missing value: d(x, x) = 0
    for init in ("random", "k-means++"):
        km = KPrototypes(4, init=init, n_init=3, random_state=0).fit(X, sample_weight=sw)
        assert km.inertia_ == pytest.approx(0.0, abs=1e-12)    # each center a weighted row
    with pytest.raises(ValueError, match="positive sample_weight"):
        KPrototypes(5).fit(X, sample_weight=sw)


# -- class-posterior estimators with weights ----------------------------------------------

def posterior_column(seed, n=300):
    rng = np.random.default_rng(seed)
    x = np.round(rng.normal(size=n), 2)
    y = ((x + rng.normal(size=n)) > 0).astype(np.int64) + (rng.random(n) < 0.2)
    x[rng.random(n) < 0.05] = np.nan
    return x, y, 3


@pytest.mark.parametrize("make, method", [
    (post.DiscretizedPosterior, None), (post.InterpolatedPosterior, None),
    (post.LocalPosterior, None), (post.ParzenPosterior, None),
    *[(lambda: post.GaussianPosterior(0.1), m) for m in (None, "direct", "cells")]])
def test_posteriors_integer_weights_equal_repeated_values(make, method):
    """GVDM's kernel sums are exact either point by point ("direct") or from the cell
    moments ("cells"): both carry the weights."""
    x, y, C = posterior_column(20)
    sw = np.random.default_rng(20).integers(0, 4, size=x.shape[0])
    a, b = make(), make()
    if method is not None:
        a._method = b._method = method
    a.fit(x, y, C, sample_weight=sw)
    b.fit(np.repeat(x, sw), np.repeat(y, sw), C)
    q = np.linspace(np.nanmin(x) - 0.5, np.nanmax(x) + 0.5, 401)
    np.testing.assert_allclose(a.transform(q), b.transform(q), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.priors_, b.priors_, rtol=1e-12)


@pytest.mark.parametrize("method", ["direct", "cells"])
def test_posteriors_fractional_weights_against_references(method):
    """DVDM, LVDM and GVDM with weights in eighths against their definitions written out
    with numpy: weighted class frequencies of the bin, of the window, and the weighted
    Gaussian-kernel sum."""
    x, y, C = posterior_column(21)
    sw = np.random.default_rng(21).integers(1, 17, size=x.shape[0]) / 8.0
    ok = ~np.isnan(x)
    xo, yo, wo = x[ok], y[ok], sw[ok]
    priors = np.bincount(y, weights=sw, minlength=C) / sw.sum()
    q = np.linspace(xo.min(), xo.max(), 97)

    def freq(mask):
        f = np.bincount(yo[mask], weights=wo[mask], minlength=C)
        return f / f.sum() if f.sum() > 0 else None

    d = post.DiscretizedPosterior().fit(x, y, C, sample_weight=sw)
    bins = d.discretizer_.codes(xo)
    for v, p in zip(q, d.transform(q)):
        want = freq(bins == d.discretizer_.codes([v])[0])
        np.testing.assert_allclose(p, np.zeros(C) if want is None else want, atol=1e-12)
    lv = post.LocalPosterior(0.2).fit(x, y, C, sample_weight=sw)
    half = 0.2 * (xo.max() - xo.min()) / 2
    for v, p in zip(q, lv.transform(q)):
        want = freq((xo >= v - half) & (xo <= v + half))
        np.testing.assert_allclose(p, priors if want is None else want, atol=1e-12)
    g = post.GaussianPosterior(0.1)
    g._method = method
    g.fit(x, y, C, sample_weight=sw)
    h = 0.1 * (xo.max() - xo.min())
    K = wo[None, :] * np.exp(-((q[:, None] - xo[None, :]) / h) ** 2)
    want = np.stack([K[:, yo == c].sum(axis=1) for c in range(C)], axis=1)
    want /= want.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g.transform(q), want, atol=1e-6)
    np.testing.assert_allclose(g._exact((q - g.min_) / h)[0], want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("discretizer", [None, MDLP(), EqualWidth(4)])
def test_entropy_and_mutual_information_integer_weights_equal_repeated_rows(discretizer):
    rng = np.random.default_rng(22)
    x = np.round(rng.normal(size=80), 1)
    x[rng.random(80) < 0.1] = np.nan
    xo = np.where(rng.random(80) < 0.1, None, rng.choice(["p", "q", "r"], 80)).astype(object)
    y = np.where(x > 0.3, "hi", rng.choice(["a", "b"], 80)).astype(object)
    sw = rng.integers(0, 4, size=80)
    for col in (x, xo):
        a = hdist.mutual_information(col, y, discretizer=discretizer, sample_weight=sw)
        b = hdist.mutual_information(np.repeat(col, sw), np.repeat(y, sw),
                                     discretizer=discretizer)
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15) and b > 0
    assert hdist.entropy(xo, sample_weight=sw, base=2) == pytest.approx(
        hdist.entropy(np.repeat(xo, sw), base=2), rel=1e-12)
    # fractional weights: p_v is the share of the weight
    w = sw + 0.5
    ok = np.array([v is not None for v in xo])
    p = np.array([w[ok][xo[ok] == v].sum() for v in ("p", "q", "r")]) / w[ok].sum()
    assert hdist.entropy(xo, sample_weight=w) == pytest.approx(-np.sum(p * np.log(p)))
    with pytest.raises(ValueError, match="sample_weight"):
        hdist.entropy(xo, sample_weight=-w)


@pytest.mark.parametrize("algorithm", ["brute", "kd_tree"])
def test_neighbors_index_fits_its_metric_with_weights(algorithm):
    """NeighborsIndex.fit(X, y, sample_weight): the metric's statistics are those of the
    repeated rows, every row is indexed, and a query holding a value that only rows of
    weight 0 hold finds it equal (the same unseen code), as the metric's own
    kneighbors does."""
    X, y, sw, Q = mixed_data(23)
    Q = pd.concat([Q, X.iloc[np.flatnonzero(X["c"] == "only-in-weight-0")]],
                  ignore_index=True)
    Xr, yr = repeated(X, y, sw)
    D = Metric("hvdm").fit(Xr, yr).pairwise(Q, X)
    idx = hdist.NeighborsIndex("hvdm", algorithm=algorithm).fit(X, y, sample_weight=sw)
    d, i = idx.kneighbors(Q, 5)
    close(d, np.sort(D, axis=1)[:, :5])
    close(np.take_along_axis(D, i, axis=1), d)
    m = Metric("hvdm").fit(X, y, sample_weight=sw)
    d2, _ = hdist.NeighborsIndex(m, algorithm=algorithm).fit().kneighbors(Q, 5)
    close(d2, d)
    close(m.kneighbors(Q, 5)[0], d)
    with pytest.raises(ValueError, match="sample_weight"):
        hdist.NeighborsIndex(m).fit(X, sample_weight=sw)
    # overlap tells two unseen values apart (VDM gives both empty statistics)
    h = Metric("heom").fit(X, sample_weight=sw)
    want = h.kneighbors(Q, 5)
    for index in (hdist.NeighborsIndex("heom", algorithm=algorithm).fit(X, sample_weight=sw),
                  hdist.NeighborsIndex(h, algorithm=algorithm).fit()):
        got = index.kneighbors(Q, 5)
        close(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    k = np.flatnonzero(X["c"] == "only-in-weight-0")[0]
    assert want[1][-1, 0] == k and want[0][-1, 0] == 0.0
