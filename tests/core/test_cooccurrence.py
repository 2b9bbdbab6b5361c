"""The co-occurrence metrics hds and add (docs/metrics.md §4; Zhao, Liu & Wang 2016; Ahmad &
Dey 2007) against the plain reference in ref_cooccurrence.py, on random mixed data with
missing values and on real data."""
import math
import pickle

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._core import cooccurrence as co
from ref_cooccurrence import MISSING_SYMBOL, RefMetric, read_dataset, value_table

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

RTOL = 1e-12


def random_mixed(rng, n, m, missing=0.1, n_levels=(2, 6)):
    """DataFrame of n rows: alternating continuous (with ties) and nominal columns."""
    data, kinds = {}, []
    for k in range(m):
        if k % 2 == 0:
            col = rng.integers(0, 12, n).astype(float) * 0.5 if k % 4 == 0 \
                else rng.normal(size=n)
            col = col.astype(object)
            kinds.append("continuous")
        else:
            V = int(rng.integers(n_levels[0], n_levels[1] + 1))
            col = np.array(["v%d" % v for v in rng.integers(0, V, n)], dtype=object)
            kinds.append("nominal")
        miss = rng.random(n) < missing
        miss[:2] = False
        col[miss] = None
        data["c%d" % k] = col
    df = pd.DataFrame(data)
    for k, kind in enumerate(kinds):
        if kind == "continuous":
            df["c%d" % k] = df["c%d" % k].astype(float)
    return df, kinds


def columns_of(df):
    return [[None if (v is None or (isinstance(v, float) and math.isnan(v))) else v
             for v in df[c].tolist()] for c in df.columns]


def rows_of(df):
    cols = columns_of(df)
    return [[c[i] for c in cols] for i in range(len(df))]


def assert_tables(metric, ref, df):
    for a, vals in ref.values.items():
        got = metric.value_distances(df.columns[a])
        labels = ["<missing>" if v == MISSING_SYMBOL else v for v in vals]
        assert list(got.index) == labels
        want = np.array([[ref.tables[a][(v, w)] for w in vals] for v in vals])
        np.testing.assert_allclose(got.to_numpy(), want, rtol=RTOL, atol=1e-14)


@pytest.mark.parametrize("kind", ["hds", "add"])
@pytest.mark.parametrize("policy,average,n_bins,p", [
    ("one", True, 10, 2.0), ("symbol", True, 4, 1.0), ("one", False, 3, 2.0),
    ("symbol", False, 10, math.inf), ("one", True, 2, 0.5)])
def test_random_mixed_against_reference(kind, policy, average, n_bins, p):
    rng = np.random.default_rng(hash((kind, policy, average, n_bins)) % 2**32)
    df, kinds = random_mixed(rng, 90, 7)
    params = dict(missing=policy, average=average, n_bins=n_bins, p=p)
    metric = hdist.Metric(kind, **params).fit(df)
    ref = RefMetric(kind, p=p, average=average, n_bins=n_bins, policy=policy)
    ref.fit(columns_of(df), kinds)
    assert_tables(metric, ref, df)
    # queries with unseen values (two different ones and a repeated one) and missing values
    q, _ = random_mixed(np.random.default_rng(1), 25, 7)
    q.iloc[0, 1] = "new1"
    q.iloc[1, 1] = "new2"
    q.iloc[2, 1] = "new1"
    q.iloc[3, 3] = None
    got = metric.pairwise(q, df)
    want = np.array([[ref.distance(x, y) for y in rows_of(df)] for x in rows_of(q)])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    qq = metric.pairwise(q)
    want_qq = np.array([[ref.distance(x, y) for y in rows_of(q)] for x in rows_of(q)])
    np.testing.assert_allclose(qq, want_qq, rtol=1e-11, atol=1e-12)
    # k-NN: sorted by distance, ties by smaller training index
    d, idx = metric.kneighbors(q, k=6)
    for r in range(len(q)):
        order = sorted(range(len(df)), key=lambda j: (want[r, j], j))
        np.testing.assert_allclose(d[r], want[r, order[:6]], rtol=1e-11, atol=1e-12)
        kept = want[r, idx[r]]
        np.testing.assert_allclose(kept, d[r], rtol=1e-11, atol=1e-12)
    # explain: one term per attribute, d_a^p, adding up to the reduced distance
    x, y = rows_of(q)[0], rows_of(df)[5]
    ex = metric.explain(q.iloc[0], df.iloc[5])
    terms = [ref.term(a, x[a], y[a]) for a in range(len(kinds))]
    want_terms = terms if p == math.inf else [t ** p for t in terms]
    np.testing.assert_allclose(ex.terms, want_terms, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(ex.distance, ref.distance(x, y), rtol=1e-11)


def test_unseen_rows_and_symmetry():
    rng = np.random.default_rng(5)
    df, kinds = random_mixed(rng, 60, 5)
    for average, full in ((True, 1.0), (False, 4.0)):
        metric = hdist.Metric("hds", average=average).fit(df)
        T = metric.value_tables_["c1"]
        V = T.shape[0] - 1
        np.testing.assert_array_equal(T, T.T)
        assert (T[V, :] == full).all() and (T[:, V] == full).all()
        assert (np.diag(T)[:V] == 0).all()
        assert (T[:V, :V] <= full + 1e-12).all()
    # two equal unseen values are at 0; two different ones at the full distance
    q = df.iloc[:3].copy()
    q["c1"] = ["x", "x", "y"]
    ex = hdist.Metric("hds", average=True).fit(df)
    terms01 = ex.explain(q.iloc[0], q.iloc[1]).to_dict()["c1"]
    terms02 = ex.explain(q.iloc[0], q.iloc[2]).to_dict()["c1"]
    assert terms01 == 0.0 and terms02 == 1.0


def test_empty_distribution_term_is_one():
    # value "b" occurs only where the co-attribute is missing: its distribution is empty
    X = pd.DataFrame({"a": ["a", "a", "b", "b", "c"],
                      "z": ["p", "q", None, None, "p"]})
    m = hdist.Metric("hds", average=False).fit(X)
    T = m.value_distances("a")
    assert T.loc["a", "b"] == 1.0 and T.loc["b", "c"] == 1.0
    # a vs c: {p: .5, q: .5} vs {p: 1}: H^2 = ½((√.5 - 1)^2 + .5)
    h = math.sqrt(0.5 * ((math.sqrt(0.5) - 1.0) ** 2 + 0.5))
    assert T.loc["a", "c"] == pytest.approx(h, rel=1e-14)
    assert hdist.Metric("add", average=False).fit(X).value_distances("a").loc["a", "c"] == \
        pytest.approx(0.5, rel=1e-14)


def test_seed_003_table_1():
    """Seed 003, Table 1 (6 rows of Balance, every column nominal, unnormalized):
    S_H(L, R) = 1 + 1 + 1 + 1 = 4."""
    X = pd.DataFrame({
        "left-weight": [1, 2, 3, 4, 5, 3], "left-distance": [2, 1, 2, 3, 4, 5],
        "right-weight": [1, 2, 2, 5, 4, 3], "right-distance": [4, 4, 3, 2, 1, 5],
        "balance-status": ["R", "R", "B", "L", "L", "B"]})
    metric = hdist.Metric("hds", nominal="all", average=False).fit(X)
    T = metric.value_distances("balance-status")
    assert T.loc["L", "R"] == 4.0 and T.loc["R", "L"] == 4.0
    # Table 2 of the seed: the left-weight distributions of L and R are disjoint -> 1 each;
    # the averaged table divides by m - 1 = 4
    avg = hdist.Metric("hds", nominal="all").fit(X).value_distances("balance-status")
    assert avg.loc["L", "R"] == 1.0
    ref_vals, ref_tab = value_table(columns_of(X), ["nominal"] * 5, 4, "hds", False)
    assert ref_tab[("L", "R")] == 4.0
    np.testing.assert_allclose(T.to_numpy(), [[ref_tab[(v, w)] for w in ref_vals]
                                              for v in ref_vals], rtol=RTOL)


@pytest.mark.parametrize("name,kind", [("credit-a", "hds"), ("credit-a", "add"),
                                       ("german", "hds"), ("Zoo", "add")])
@pytest.mark.needs_data
def test_real_data_against_reference(name, kind):
    df, schema = read_dataset(name)
    df = df.drop(columns=schema["class"])
    kinds = ["nominal" if df[c].dtype == object or str(df[c].dtype) in ("str", "string")
             else "continuous" for c in df.columns]
    df = df.astype({c: object for c, k in zip(df.columns, kinds) if k == "nominal"})
    df = df.iloc[:300]
    metric = hdist.Metric(kind).fit(df)
    ref = RefMetric(kind).fit(columns_of(df), kinds)
    assert_tables(metric, ref, df)
    rows = rows_of(df)
    got = metric.pairwise(df.iloc[:20], df)
    want = np.array([[ref.distance(x, y) for y in rows] for x in rows[:20]])
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


@pytest.mark.needs_data
def test_adult_workclass_ordering_and_bounds():
    df, schema = read_dataset("adult_train")
    X = df.drop(columns=schema["class"])
    metric = hdist.Metric("hds").fit(X)
    T = metric.value_distances("workclass")
    assert ((T.to_numpy() >= 0) & (T.to_numpy() <= 1)).all()
    # Zhao, Liu & Wang's (2016) reading of their Table 3: government workers are nearer each
    # other than to the unpaid groups; Never-worked is the farthest value from Private
    assert T.loc["Local-gov", "State-gov"] < T.loc["Local-gov", "Without-pay"]
    assert T.loc["Private"].drop("Private").idxmax() == "Never-worked"


def test_smd_preset():
    X = pd.DataFrame({"a": ["x", "y", "x"], "b": ["p", "p", "q"], "c": ["u", None, "u"]})
    m = hdist.Metric("smd").fit(X)
    np.testing.assert_array_equal(m.pairwise(X), [[0, 2, 1], [2, 1, 3], [1, 3, 0]])
    with pytest.raises(ValueError, match="continuous"):
        hdist.Metric("smd").fit(pd.DataFrame({"a": ["x", "y"], "v": [1.0, 2.0]}))


def test_parameters_validated():
    X = pd.DataFrame({"a": ["x", "y", "x"], "v": [1.0, 2.0, 3.0]})
    with pytest.raises(TypeError, match="average"):
        hdist.Metric("hds", average="yes").fit(X)
    with pytest.raises(TypeError, match="n_bins"):
        hdist.Metric("add", n_bins=2.5).fit(X)
    with pytest.raises(ValueError, match="n_bins"):
        hdist.Metric("hds", n_bins=1).fit(X)
    with pytest.raises(TypeError, match="vdm"):
        hdist.Metric("hds", vdm="N1")
    with pytest.raises(TypeError, match="n_bins"):
        hdist.Metric("heom", n_bins=5)
    with pytest.raises(ValueError, match="no other column"):
        hdist.Metric("hds").fit(pd.DataFrame({"a": ["x", "y", "x"]}))


def test_block_size_does_not_change_tables(monkeypatch):
    rng = np.random.default_rng(11)
    df, _ = random_mixed(rng, 200, 5, n_levels=(12, 20))
    for kind in ("hds", "add"):
        big = hdist.Metric(kind).fit(df).value_tables_["c1"]
        monkeypatch.setattr(co, "BLOCK_BUDGET", 7)
        small = hdist.Metric(kind).fit(df).value_tables_["c1"]
        monkeypatch.undo()
        np.testing.assert_array_equal(big, small)


def test_fitted_metric_pickles_and_threads_agree():
    rng = np.random.default_rng(3)
    df, _ = random_mixed(rng, 150, 6)
    m = hdist.Metric("add", missing="symbol").fit(df)
    m2 = pickle.loads(pickle.dumps(m))
    np.testing.assert_array_equal(m.pairwise(df, n_jobs=1), m2.pairwise(df, n_jobs=2))
    d1, i1 = m.kneighbors(df, k=7, n_jobs=1)
    d2, i2 = m.kneighbors(df, k=7, n_jobs=2)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


def test_binning_matches_reference_on_ties():
    """The co-attribute bins are the reference's equal-frequency bins (up to numbering)."""
    from ref_cooccurrence import equal_frequency_labels
    rng = np.random.default_rng(8)
    x = rng.integers(0, 5, 97).astype(float)
    x[rng.random(97) < 0.1] = np.nan
    schema = hdist.Metric("heom").fit(pd.DataFrame({"x": x, "a": ["u"] * 97})).schema_
    for n_bins in (2, 3, 10):
        (got, L), _ = co.coattributes(schema, x[:, None], np.zeros((97, 1), np.int64), n_bins)
        want = equal_frequency_labels([None if np.isnan(v) else v for v in x], n_bins)
        pairs = {(g, w) for g, w in zip(got.tolist(), want) if w is not None}
        assert len(pairs) == len({g for g, _ in pairs}) == len({w for _, w in pairs})
        assert got.max() < L and (got[np.isnan(x)] == -1).all()
