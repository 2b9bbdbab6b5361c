"""The one rule for the kinds of columns (docs/metrics.md, section 1): numbers -- numeric
dtypes, and text or objects whose every observed value is or spells a number -- are
continuous, text, categories and booleans nominal; the documented missing-value text is
missing in every column at fit and at predict; ``nominal=`` / ``continuous=`` override the
columns they name; doubtful inferences draw one ``ColumnKindWarning`` per fit.

Checked against tests/ref_kinds.py (the rule cell by cell) on random columns in every
input form, and on the bundled real datasets."""
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._core.schema import NA_VALUES, ColumnKindWarning, Schema
from hdist.datasets import load_credit_a, load_german
from hdist.impute import KNNImputer
from hdist.neighbors import KNeighborsClassifier
from ref_kinds import (NA_TEXT, kind_warnings, reference_categories, reference_doubt,
                       reference_kind)
from strategies import STR_DTYPE

pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")

WORDS = ["red", "green", "blue", "x1", "1a", "inf?", "1_000", "0x10", "two", "inf"]
STRAY = ["-", "unknown", "NAN", "n.a.", "--"]


def random_column(rng, style, n):
    """A column of Python values (row order) drawn in one of several styles."""
    miss = list(NA_TEXT[:6]) + [None, np.nan, pd.NA, " ? ", " NA"]

    def pick(pool, p_missing=0.2):
        return [miss[rng.integers(len(miss))] if rng.random() < p_missing
                else pool[rng.integers(len(pool))] for _ in range(n)]
    floats = np.round(rng.normal(scale=10.0 ** rng.integers(-3, 5), size=n), 4)
    ints = rng.integers(-5, 5 + rng.integers(0, 300), size=n)
    if style == "float text":
        fmt = ["%.3f", "%g", "%.6e", " %s ", "%s"][rng.integers(5)]
        return pick([fmt % v for v in floats])
    if style == "int text":
        return pick(["%d" % v for v in ints] + ["+%d" % abs(ints[0])])
    if style == "leading zeros":
        return pick(["%05d" % abs(v) for v in ints])
    if style == "numbers":
        return pick([float(v) for v in floats] + [int(v) for v in ints] + [np.int64(3)])
    if style == "numbers and text":
        return pick([float(v) for v in floats[:5]] + ["%d" % v for v in ints[:5]])
    if style == "stray text":
        k = int(rng.integers(1, 4))
        return pick(["%d" % v for v in ints[:8]] + STRAY[:k])
    if style == "text":
        return pick(WORDS[:int(rng.integers(2, len(WORDS)))] + ["%d" % ints[0]])
    if style == "bools":
        return pick([True, False])
    if style == "missing only":
        return pick(["?"], p_missing=0.5)
    if style == "few codes":
        return pick(["%d" % v for v in rng.integers(0, 4, size=3)], p_missing=0.1)
    if style == "identifier":
        start = int(rng.integers(0, 1000))
        return ["%d" % (start + i) for i in rng.permutation(n)]
    raise ValueError(style)


STYLES = ["float text", "int text", "leading zeros", "numbers", "numbers and text",
          "stray text", "text", "bools", "missing only", "few codes", "identifier"]


def is_text(col):
    return all(v is None or isinstance(v, str) for v in col)


def forms(cols):
    """The containers a list of object columns can take: ``(form, table)``."""
    names = ["c%d" % j for j in range(len(cols))]
    n = len(cols[0])
    obj = np.empty((n, len(cols)), dtype=object)
    for j, c in enumerate(cols):
        obj[:, j] = c
    yield "pandas object", pd.DataFrame({nm: pd.Series(c, dtype=object)
                                         for nm, c in zip(names, cols)})
    yield "numpy object", obj
    yield "list of rows", [list(r) for r in zip(*cols)]
    text = [j for j, c in enumerate(cols) if is_text(c)]
    if text:
        tcols = [cols[j] for j in text]
        tnames = [names[j] for j in text]
        yield "pandas string", pd.DataFrame({nm: pd.array(c, dtype="string")
                                             for nm, c in zip(tnames, tcols)})
        if STR_DTYPE is not None:
            yield "pandas str", pd.DataFrame({nm: pd.Series(c, dtype=STR_DTYPE)
                                              for nm, c in zip(tnames, tcols)})
        yield "pyarrow", pa.table({nm: pa.array(c, pa.string())
                                   for nm, c in zip(tnames, tcols)})
        yield "polars", pl.DataFrame({nm: pl.Series(c, dtype=pl.Utf8)
                                      for nm, c in zip(tnames, tcols)})


def plain(col):
    """A column with pandas.NA and numpy NaN as None, for the text containers."""
    return [None if v is None or v is pd.NA or (isinstance(v, float) and v != v) else v
            for v in col]


@pytest.mark.parametrize("seed", range(12))
def test_random_columns_follow_the_reference_in_every_form(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 40))
    styles = list(rng.choice(STYLES, size=6))
    cols = [random_column(rng, s, n) for s in styles]
    cols = [plain(c) if is_text(plain(c)) else c for c in cols]
    ref = [reference_kind(c) for c in cols]
    for form, X in forms(cols):
        idx = list(range(len(cols))) if form in ("pandas object", "numpy object",
                                                  "list of rows") \
            else [j for j, c in enumerate(cols) if is_text(c)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            s = Schema().fit(X, allow_empty=True)
        assert s.kinds_ == [ref[j][0] for j in idx], (form, styles)
        cont, _ = s.encode(X)
        ic = 0
        for pos, j in enumerate(idx):
            if ref[j][0] == "continuous":
                np.testing.assert_array_equal(cont[:, ic], ref[j][1], err_msg=form)
                ic += 1
            else:
                assert set(s.categories_[pos]) == reference_categories(cols[j]), form
        doubt = [s.names_[pos] for pos, j in enumerate(idx)
                 if reference_doubt(cols[j], ref[j][0])]
        kind_warnings = [w for w in caught if issubclass(w.category, ColumnKindWarning)]
        assert len(kind_warnings) == (1 if doubt else 0), (form, styles)
        if doubt:
            assert [c for c, _ in kind_warnings[0].message.columns] == doubt


def test_the_documented_missing_text():
    assert tuple(NA_VALUES) == NA_TEXT
    assert "-" not in NA_VALUES          # a label too: credit-a's classes are + and -


# -- item: numbers held as objects are continuous ------------------------------------------

def mixed_frame(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"age": rng.integers(20, 80, n).astype(float),
                      "price": np.round(rng.gamma(3, 1000, n), 2),
                      "make": rng.choice(["audi", "bmw", "fiat", "saab"], n),
                      "fuel": rng.choice(["gas", "diesel"], n),
                      "weight": rng.normal(1500, 300, n).round(1)})
    X.loc[rng.random(n) < 0.1, "price"] = np.nan
    y = np.where(X["price"].fillna(3000) + 3 * X["weight"] > 7500, "hi", "lo")
    return X, y


def test_an_object_array_of_a_frame_keeps_the_frame_kinds_and_answers():
    """``fit(df.to_numpy(), y)``: numbers in an object array are continuous, so the
    estimator predicts what it predicts on the frame itself (all nominal before)."""
    X, y = mixed_frame()
    obj = X.to_numpy()
    assert obj.dtype == object
    on_frame = KNeighborsClassifier(3).fit(X, y)
    on_array = KNeighborsClassifier(3).fit(obj, y)
    assert on_array.metric_.kinds_ == on_frame.metric_.kinds_ == \
        ["continuous", "continuous", "nominal", "nominal", "continuous"]
    np.testing.assert_array_equal(on_array.predict(obj), on_frame.predict(X))
    np.testing.assert_array_equal(on_array.kneighbors(obj)[0], on_frame.kneighbors(X)[0])


def test_a_simple_imputer_output_frame_keeps_the_kinds():
    from sklearn.impute import SimpleImputer
    X, y = mixed_frame()
    out = SimpleImputer(strategy="most_frequent").set_output(transform="pandas") \
        .fit_transform(X)
    assert (out.dtypes == object).any()
    m = hdist.Metric("heom").fit(out)
    assert m.kinds_ == ["continuous", "continuous", "nominal", "nominal", "continuous"]


@pytest.mark.parametrize("load", [load_credit_a, load_german])
def test_real_data_through_an_object_array(load):
    """A bundled dataset's frame (category and float columns) and its object array give
    the same kinds once the frame's nominal columns are text: the numbers are continuous
    either way, and the neighbours are the same."""
    X, y = load()
    X = X.astype({c: object for c in X.columns if X[c].dtype.name == "category"})
    obj = X.to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        m_frame = hdist.Metric("hvdm").fit(X, y)
        m_obj = hdist.Metric("hvdm").fit(obj, y)
    assert m_obj.kinds_ == m_frame.kinds_
    assert "continuous" in m_obj.kinds_
    d1, i1 = m_frame.kneighbors(X.iloc[:50], 3)
    d2, i2 = m_obj.kneighbors(obj[:50], 3)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)


# -- item: missing-value text at fit and at predict -------------------------------------------

def test_missing_text_in_a_numeric_column_at_fit_and_at_predict():
    X = pd.DataFrame({"bore": ["3.47", "?", "2.68", "3.19", "NA", "3.4", " n/a", ""],
                      "make": ["a", "b", "a", "?", "b", "a", "b", "a"]})
    m = hdist.Metric("heom").fit(X)
    assert m.kinds_ == ["continuous", "nominal"]
    assert m.schema_.categories_[1] == ["a", "b"]           # '?' is missing there too
    assert m.delta_["bore"] == pytest.approx(3.47 - 2.68)
    Q = pd.DataFrame({"bore": ["?", "3.47"], "make": ["a", "?"]})
    # a missing value counts 1 (HEOM), so each query row is sqrt(1 + 0) from row 0
    np.testing.assert_allclose(m.pairwise(Q, X.iloc[[0]]), [[1.0], [1.0]])
    assert m.pairwise(Q.iloc[[1]], X.iloc[[0]])[0, 0] == m.pairwise(
        pd.DataFrame({"bore": [3.47], "make": [None]}), X.iloc[[0]])[0, 0]


def test_na_values_replaces_the_list():
    X = pd.DataFrame({"x": ["1", "2", "-", "4", "5", "-"], "y": ["u", "v", "w", "u", "v", "w"]})
    with pytest.warns(ColumnKindWarning, match=r"'x' \(nominal: numbers, and the text '-'\)"):
        m = hdist.Metric("heom").fit(X)
    assert m.kinds_ == ["nominal", "nominal"]
    m = hdist.Metric("heom", na_values=["-"]).fit(X)
    assert m.kinds_ == ["continuous", "nominal"]
    assert m.pairwise(X.iloc[[2]], X.iloc[[5]])[0, 0] == 1.0    # missing: counts 1
    with pytest.raises(TypeError, match="na_values"):
        hdist.Metric("heom", na_values="-").fit(X)
    m = hdist.Metric("heom", na_values=[]).fit(pd.DataFrame({"x": ["1", "?", "3"]}))
    assert m.kinds_ == ["nominal"]


# -- item: integer codes taken as continuous warn, once per fit ------------------------------

def test_code_like_columns_warn_once_naming_them():
    rng = np.random.default_rng(1)
    n = 60
    X = pd.DataFrame({"flag": rng.integers(0, 2, n), "age": rng.integers(18, 90, n),
                      "industry": rng.choice([11, 23, 31, 42, 51], n),
                      "id": rng.permutation(n) + 1000, "zip": ["%05d" % v for v in
                                                             rng.integers(0, 99999, n)],
                      "x": rng.normal(size=n)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = hdist.Metric("heom").fit(X)
    found = [w for w in caught if issubclass(w.category, ColumnKindWarning)]
    assert len(found) == 1
    assert [c for c, _ in found[0].message.columns] == ["flag", "industry", "id", "zip"]
    text = str(found[0].message)
    assert "'flag' (continuous: 2 distinct whole numbers)" in text
    assert "like an identifier" in text and "leading zeros" in text
    assert found[0].filename == __file__
    again = pickle.loads(pickle.dumps(found[0].message))     # as a process pool sends it
    assert again.columns == found[0].message.columns and str(again) == text
    # declared either way: silent, and the declared kinds hold
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = hdist.Metric("heom", nominal=["flag", "industry", "zip"],
                         continuous=["id"]).fit(X)
    assert m.kinds_ == ["nominal", "continuous", "nominal", "continuous", "nominal",
                        "continuous"]


def test_imputer_keeps_an_integer_object_column_integer():
    """A column of Python ints with missing cells (object dtype) is continuous: its
    imputed value is the donors' mean rounded (not their mode, as when it was nominal),
    and stays an int; a text column of numbers gets text.  The donors alone
    (``attribute_weights=None, shrinkage=0``), so that the values can be worked by hand."""
    plain = dict(n_neighbors=3, attribute_weights=None, shrinkage=0)
    X = pd.DataFrame({"n": pd.Series([1, 1, 7, None, 9, 8, 9, 8], dtype=object),
                      "t": pd.Series(["1", "4", "4", "4", "?", "2", "9", "9"], dtype=object),
                      "x": [0.0, 0.1, 0.2, 0.15, 5.0, 5.1, 5.2, 5.3]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        imp = KNNImputer(**plain).fit(X)
        out = imp.transform(X)
        arr = KNNImputer(**plain).fit_transform(X.to_numpy())
    assert imp.metric_.kinds_ == ["continuous"] * 3
    # row 3's donors: rows 1, 2, 0 -> (1 + 7 + 1) / 3 = 3 (their mode is 1); row 4's:
    # rows 6, 5, 7 -> (9 + 2 + 9) / 3 = 6.67 -> "7" (their mode is "9")
    assert out.loc[3, "n"] == 3 and type(out.loc[3, "n"]) is int
    assert out.loc[4, "t"] == "7"
    assert arr[3, 0] == 3 and type(arr[3, 0]) is int and arr[4, 1] == "7"
    # a float column keeps floats (documented): the mean as it is
    f = X.assign(n=X["n"].astype(float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        assert KNNImputer(**plain).fit_transform(f).loc[3, "n"] == 3.0
        # the defaults (per-column weights, shrinkage) keep the column's form too
        out = KNNImputer(n_neighbors=3).fit_transform(X)
    assert type(out.loc[3, "n"]) is int and isinstance(out.loc[4, "t"], str)


# -- item: nominal= and continuous= override the columns they name -----------------------------

def test_nominal_overrides_only_the_columns_it_names():
    X, y = mixed_frame(40)
    X["code"] = np.arange(40) % 3
    m = hdist.Metric("heom", nominal=["code"]).fit(X)
    assert m.kinds_ == ["continuous", "continuous", "nominal", "nominal", "continuous",
                        "nominal"]
    # the exact set, as nominal= meant before: every other column continuous
    with pytest.raises(TypeError, match="'make' is declared continuous"):
        hdist.Metric("heom", nominal=["code"], continuous="rest").fit(X)
    m = hdist.Metric("heom", nominal=["make", "fuel", "code"], continuous="rest").fit(X)
    assert m.kinds_ == ["continuous", "continuous", "nominal", "nominal", "continuous",
                        "nominal"]
    m = hdist.Metric("heom", continuous=["code"], nominal="rest").fit(X)
    assert m.kinds_ == ["nominal"] * 5 + ["continuous"]
    assert hdist.Metric("heom", nominal="all").fit(X).kinds_ == ["nominal"] * 6
    m = hdist.Metric("heom", nominal=[False, False, True, True, False, True]).fit(X)
    assert m.kinds_[5] == "nominal" and m.kinds_[0] == "continuous"


@pytest.mark.parametrize("params,match", [
    ({"nominal": ["code"], "continuous": ["code"]}, "named both"),
    ({"nominal": "all", "continuous": ["age"]}, "names every column"),
    ({"nominal": "rest", "continuous": "rest"}, "leave no column"),
    ({"continuous": ["nope"]}, "continuous: no column named 'nope'"),
    ({"nominal": [True, False], "continuous": ["age"]}, "boolean mask"),
])
def test_kind_parameters_refuse_contradictions(params, match):
    X, _ = mixed_frame(20)
    X["code"] = np.arange(20) % 3
    if params.get("nominal") == [True, False]:
        params = dict(params, nominal=[True] + [False] * 5)
    with pytest.raises(ValueError, match=match):
        hdist.Metric("heom", **params).fit(X)


# -- item: numeric text at predict --------------------------------------------------------------

def test_numeric_text_in_a_continuous_query_column_is_read_as_numbers():
    X = pd.DataFrame({"age": [63.0, 41, 57, 39], "sex": ["m", "f", "f", "m"]})
    m = hdist.Metric("heom").fit(X)
    Q = pd.DataFrame({"age": ["63", " 41 ", "?"], "sex": ["m", "f", "f"]})
    np.testing.assert_array_equal(m.pairwise(Q, X.iloc[:2]),
                                  m.pairwise(pd.DataFrame({"age": [63.0, 41, None],
                                                           "sex": ["m", "f", "f"]}),
                                             X.iloc[:2]))
    assert m.explain({"age": "63", "sex": "m"}, X.iloc[0]).distance == 0.0
    with pytest.raises(TypeError, match=r"'age' was continuous in fit.*'sixty'.*to_numeric"):
        m.pairwise(pd.DataFrame({"age": ["sixty"], "sex": ["m"]}))


def test_the_warning_counts_weighted_and_summarised_rows_as_copies():
    """Sample weights count as repeated rows in the code-like check, and a Dask pass over
    partitions (per-column value counts) warns as the in-memory fit does."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"row": rng.permutation(30), "x": rng.normal(size=30)})
    ident = [[("row", "continuous: a different whole number in every row, like an "
                      "identifier")]]
    assert kind_warnings(lambda: hdist.Metric("heom").fit(X)) == ident
    assert kind_warnings(lambda: hdist.Metric("heom").fit(X, sample_weight=np.full(30, 2))) \
        == kind_warnings(lambda: hdist.Metric("heom").fit(pd.concat([X, X]))) == []
    dd = pytest.importorskip("dask.dataframe")
    from hdist.dask import fit_metric
    ddf = dd.from_pandas(X.assign(flag=np.arange(30) % 2), npartitions=3)
    want = kind_warnings(lambda: hdist.Metric("heom").fit(ddf.compute()))
    assert len(want[0]) == 2
    assert kind_warnings(lambda: fit_metric(hdist.Metric("heom"), ddf)) == want
