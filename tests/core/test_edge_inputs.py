"""Input at the data's edge: decimal columns, text that Python reads as special floats,
numbers with thousands separators, columns named like codes, the form of
``ColumnKindWarning`` and the line it points at, and the messages for inputs that are not
what an estimator takes (a column name as ``y``, mixed label types, duplicated column
names, a list of dicts)."""
import decimal
import warnings

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._core.schema import NA_VALUES, ColumnKindWarning, Schema, to_columns
from hdist.datasets import load_adult, load_credit_a, load_german, load_credit_data
from hdist.impute import KNNImputer
from hdist.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                             KNeighborsTransformer, NearestNeighbors)
from hdist.prototypes import PrototypeClassifier
from ref_kinds import kind_warnings

pa = pytest.importorskip("pyarrow")

D = decimal.Decimal
PRICES = ["2.50", "2.60", "1.50", "9.99", None, "-0.10", "1234567.89", "0.30"]
SIZES = ["s", "s", "m", "l", "m", "s", "l", "m"]


# -- decimal columns ------------------------------------------------------------------------

def decimal_frames():
    """The price column as Decimal objects (and its floats) in every container."""
    dec = [None if v is None else D(v) for v in PRICES]
    floats = pd.DataFrame({"price": [np.nan if v is None else float(v) for v in PRICES],
                           "size": SIZES})
    obj = pd.DataFrame({"price": pd.Series(dec, dtype=object), "size": SIZES})
    yield "pandas object", obj, floats
    yield "numpy object", obj.to_numpy(), floats.to_numpy(dtype=object)
    yield "list of rows", obj.to_numpy().tolist(), floats.to_numpy(dtype=object).tolist()
    for t in (pa.decimal128(9, 2), pa.decimal256(9, 2), pa.decimal128(38, 10),
              pa.decimal256(50, 2)):
        tab = pa.table({"price": pa.array(dec, type=t), "size": SIZES})
        yield "arrow %s" % t, tab, floats
    chunked = pa.chunked_array([pa.array(dec[:3], pa.decimal128(9, 2)),
                                pa.array(dec[3:], pa.decimal128(9, 2))])
    yield "arrow chunked", pa.table({"price": chunked, "size": SIZES}), floats
    yield "pandas arrow dtype", pd.DataFrame(
        {"price": pd.array(dec, dtype=pd.ArrowDtype(pa.decimal128(9, 2))),
         "size": SIZES}), floats
    pl = pytest.importorskip("polars")
    yield "polars", pl.DataFrame({"price": pl.Series(dec, dtype=pl.Decimal(12, 2)),
                                  "size": SIZES}), floats


@pytest.mark.parametrize("form", [f for f, _, _ in decimal_frames()])
def test_decimal_columns_are_continuous_like_their_floats(form):
    """A NUMERIC column as a database driver returns it (Decimal objects, Arrow
    decimal128/256, polars Decimal) is continuous and measures as its floats: the
    distance between 2.50 and 2.60 is 0.1 over the range, not the 1 of two labels."""
    X, F = next((x, f) for name, x, f in decimal_frames() if name == form)
    m = hdist.Metric("heom").fit(X)
    ref = hdist.Metric("heom").fit(F)
    assert m.kinds_ == ["continuous", "nominal"]
    np.testing.assert_array_equal(m.pairwise(X), ref.pairwise(F))
    assert m.pairwise(X)[0, 1] == pytest.approx(0.1 / (1234567.89 + 0.10))
    # declared continuous: taken as it is, no "not a number"
    named = form not in ("numpy object", "list of rows")
    declared = hdist.Metric("heom", continuous=["price"] if named else [0]).fit(X)
    np.testing.assert_array_equal(declared.pairwise(X), ref.pairwise(F))


def test_decimal_values_become_the_nearest_float():
    """Each decimal is the float nearest its exact value (``float(Decimal)``), whatever
    its precision and scale, through Arrow's columns and Python's objects alike."""
    rng = np.random.default_rng(5)
    for precision, scale in ((9, 2), (15, 7), (15, 0), (18, 9), (38, 20), (30, -3)):
        digits = rng.integers(0, 10, size=(300, precision))
        texts = ["%s%s" % ("-" if rng.random() < 0.3 else "",
                           "".join(map(str, row)).lstrip("0") or "0") for row in digits]
        vals = [D(t).scaleb(-scale) for t in texts]
        want = np.array([float(v) for v in vals])
        t = pa.decimal128(precision, scale)
        col = to_columns(pa.table({"x": pa.array(vals, type=t)}))[1][0]
        np.testing.assert_array_equal(col.values, want, err_msg=str(t))
        sliced = to_columns(pa.table({"x": pa.array(vals, type=t).slice(7, 100)}))[1][0]
        np.testing.assert_array_equal(sliced.values, want[7:107], err_msg=str(t))
        s = Schema().fit(pd.DataFrame({"x": pd.Series(vals, dtype=object)}))
        np.testing.assert_array_equal(s.encode(pd.DataFrame({"x": vals}))[0][:, 0], want)


def test_decimal_nan_is_missing_and_infinity_an_error():
    X = pd.DataFrame({"x": pd.Series([D("1.5"), D("NaN"), D("2.5"), D("4")], dtype=object)})
    m = hdist.Metric("heom").fit(X)
    assert m.kinds_ == ["continuous"]
    assert np.isnan(m.schema_.encode(X)[0][1, 0])
    with pytest.raises(ValueError, match="column 'x' holds an infinite value"):
        hdist.Metric("heom").fit(X.assign(x=[D("1"), D("Infinity"), D("2"), D("3")]))


# -- text that Python reads as special floats follows na_values -----------------------------

TEXT_FORMS = ["object", "string", "arrow", "polars", "numpy"]


def text_table(values, form):
    if form == "object":
        return pd.DataFrame({"x": pd.Series(values, dtype=object)})
    if form == "string":
        return pd.DataFrame({"x": pd.array(values, dtype="string")})
    if form == "arrow":
        return pa.table({"x": pa.array(values, pa.string())})
    if form == "numpy":
        return np.array(values, dtype=object).reshape(-1, 1)
    pl = pytest.importorskip("polars")
    return pl.DataFrame({"x": pl.Series(values, dtype=pl.Utf8)})


@pytest.mark.parametrize("form", TEXT_FORMS)
@pytest.mark.parametrize("special", ["NAN", "nan", "inf", "-Infinity", "1e999"])
def test_special_float_text_is_text_unless_na_values_lists_it(form, special):
    """``float()`` reads ``"nan"``, ``"NAN"``, ``"inf"`` as special floats; a table's
    column does not: such a text is a label (the column is nominal, with the warning
    naming it), missing only when ``na_values`` lists it."""
    values = ["1.5", special, "2.5", "3", "4.25"]
    X = text_table(values, form)
    name = "x" if form != "numpy" else "0"
    na = [v for v in NA_VALUES if v != special]
    with pytest.warns(ColumnKindWarning, match=r"'%s' \(nominal: numbers, and the text %r\)"
                      % (name, special)):
        m = hdist.Metric("heom", na_values=na).fit(X)
    assert m.kinds_ == ["nominal"] and special in m.schema_.categories_[0]
    with pytest.raises(TypeError, match=r"column '%s' is declared continuous but holds the "
                       r"value %r, which is not a number" % (name, special)):
        hdist.Metric("heom", na_values=na, continuous=[name]).fit(X)
    m = hdist.Metric("heom", na_values=na + [special]).fit(X)
    assert m.kinds_ == ["continuous"]
    cont = m.schema_.encode(X)[0][:, 0]
    np.testing.assert_array_equal(cont, [1.5, np.nan, 2.5, 3, 4.25])


@pytest.mark.parametrize("form", TEXT_FORMS)
def test_nan_text_with_empty_na_values_is_a_label(form):
    """``na_values=[]`` reads no text as missing, "nan" included."""
    X = text_table(["1", "nan", "3", "nan", "5"], form)
    with pytest.warns(ColumnKindWarning, match="the text 'nan'"):
        m = hdist.Metric("heom", na_values=[]).fit(X)
    assert m.kinds_ == ["nominal"]
    codes = m.schema_.encode(X)[1][:, 0]
    assert (codes >= 0).all() and codes[1] == codes[3]


@pytest.mark.parametrize("dtype", [object, "category", "string"])
def test_nominal_columns_read_the_text_through_na_values_too(dtype):
    """In a nominal column (text, category, declared) "nan" is missing by the default list
    and a label under ``na_values=[]``; "NAN", not listed, is a label either way."""
    X = pd.DataFrame({"c": pd.Series(["a", "nan", "NAN", "b", "nan"], dtype=dtype),
                      "n": pd.Series(["1", "nan", "NAN", "2", "3"], dtype=dtype)})
    for na, cats in ((None, ["NAN", "a", "b"]), ([], ["NAN", "a", "b", "nan"])):
        m = hdist.Metric("heom", na_values=na, nominal=["c", "n"]).fit(X)
        assert m.schema_.categories_[0] == cats
        codes = m.schema_.encode(X)[1]
        assert ((codes[[1, 4], 0] < 0).all()) == (na is None)
        assert (codes[2] >= 0).all()


def test_special_float_text_in_a_continuous_query_column_is_refused():
    m = hdist.Metric("heom").fit(pd.DataFrame({"x": [1.5, 2.5, 4.0]}))
    for text in ("NAN", "inf"):
        with pytest.raises(TypeError, match=r"'x' was continuous in fit but holds the value "
                           r"%r, which is not a number" % text):
            m.pairwise(pd.DataFrame({"x": ["2", text]}))
    # the listed text is missing there; a real NaN in a numeric column is missing
    assert np.isnan(m.schema_.encode(pd.DataFrame({"x": ["nan"]}))[0][0, 0])
    for q in (pd.DataFrame({"x": [np.nan]}), pa.table({"x": pa.array([None], pa.float64())}),
              np.array([[np.nan]])):
        assert np.isnan(m.schema_.encode(q)[0][0, 0])


def test_a_real_nan_stays_missing_whatever_na_values_says():
    for X in (pd.DataFrame({"x": [1.5, np.nan, 2.5]}), np.array([[1.5], [np.nan], [2.5]]),
              pa.table({"x": pa.array([1.5, None, 2.5])}),
              pd.DataFrame({"x": pd.Series([1.5, float("nan"), 2.5], dtype=object)})):
        m = hdist.Metric("heom", na_values=[]).fit(X)
        assert m.kinds_ == ["continuous"]
        assert np.isnan(m.schema_.encode(X)[0][1, 0])


# -- numbers with thousands separators ------------------------------------------------------

@pytest.mark.parametrize("form", ["object", "arrow", "numpy"])
def test_numbers_with_thousands_separators_warn_by_name(form):
    values = ["9,880.0", "1,234", "15.5", "2,000,000", "-3,100.25", "7"]
    X = text_table(values, form)
    name = "x" if form != "numpy" else "0"
    with pytest.warns(ColumnKindWarning, match=r"'%s' \(nominal: numbers written with "
                      r"thousands separators \('9,880.0'\)" % name):
        m = hdist.Metric("heom").fit(X)
    assert m.kinds_ == ["nominal"]
    # declared nominal: silent; text with commas that is no number: silent
    assert kind_warnings(lambda: hdist.Metric("heom", nominal=[name]).fit(X)) == []
    other = text_table(["a,b", "1,234", "c", "d,e"], form)
    assert kind_warnings(lambda: hdist.Metric("heom").fit(other)) == []
    odd = text_table(["1,23", "4,567", "8"], form)          # not groups of three
    assert kind_warnings(lambda: hdist.Metric("heom").fit(odd)) == []


# -- one rule for code-like numbers -----------------------------------------------------------

def census_like(n=2000, seed=0):
    """Integer columns shaped like census-income's: codes named ``*_recode`` (52 and 47
    values) beside quantities with as many values (ages, weeks worked, wages)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(0, 91, n),
        "detailed_industry_recode": rng.integers(0, 52, n),
        "detailed_occupation_recode": rng.integers(0, 47, n),
        "wage_per_hour": np.where(rng.random(n) < 0.9, 0, rng.integers(1, 9999, n)),
        "weeks_worked_in_year": rng.integers(0, 53, n),
        "capital_gains": np.where(rng.random(n) < 0.95, 0, rng.integers(1, 99999, n)),
        "instance_weight": rng.gamma(2.0, 800.0, n).round(2)})


def test_columns_named_like_codes_warn_and_quantities_do_not():
    """The values alone cannot tell 52 industry codes (0-51) from 53 weeks worked (0-52):
    the rule reads the name's last word."""
    found = kind_warnings(lambda: hdist.Metric("heom").fit(census_like()))
    assert len(found) == 1
    assert [c for c, _ in found[0]] == ["detailed_industry_recode",
                                        "detailed_occupation_recode"]
    assert all("named like codes or identifiers ('recode')" in why for _, why in found[0])
    # BreastCancer's Id: 645 distinct sample numbers among 699 rows, large values
    rng = np.random.default_rng(1)
    ids = rng.choice(np.arange(61634, 13454352), 645, replace=False)
    X = pd.DataFrame({"Id": np.concatenate([ids, rng.choice(ids, 54)]),
                      "mitoses": rng.normal(size=699)})
    assert kind_warnings(lambda: hdist.Metric("heom").fit(X)) == [
        [("Id", "continuous: whole numbers in a column named like codes or identifiers "
                "('Id')")]]
    # the same numbers under another name, or with a fraction, or declared: no warning
    assert kind_warnings(lambda: hdist.Metric("heom").fit(X.rename(columns={"Id": "n"}))) \
        == []
    assert kind_warnings(lambda: hdist.Metric("heom").fit(X.assign(Id=X["Id"] + 0.5))) == []
    assert kind_warnings(lambda: hdist.Metric("heom", nominal=["Id"]).fit(X)) == []


@pytest.mark.parametrize("name,warns", [
    ("id", True), ("ID", True), ("customerID", True), ("PatientId", True),
    ("patient_id", True), ("zipcode", True), ("AreaCode", True), ("country codes", True),
    ("row_ids", True), ("paid", False), ("valid", False), ("idle", False), ("rid", False),
    ("codename", False), ("n_codes_used", False), ("code_length", False), ("7", False)])
def test_the_name_rule_reads_the_last_word(name, warns):
    X = pd.DataFrame({name: np.arange(40) * 37 % 101, "x": np.linspace(0, 1, 40)})
    found = kind_warnings(lambda: hdist.Metric("heom").fit(X))
    assert bool(found) == warns, found


@pytest.mark.parametrize("load", [load_adult, load_credit_a, load_german,
                                  load_credit_data])
def test_the_name_rule_adds_no_warning_on_real_data(load):
    """On the bundled real tables (ages, amounts, durations, counts), no column warns for
    its name: the warnings are the value rules' as before."""
    X, _ = load()
    for found in kind_warnings(lambda: hdist.Metric("heom").fit(X)):
        assert not [c for c, why in found if "named like" in why], found


# -- the warning's form and the line it points at --------------------------------------------

def test_the_warning_lists_one_column_a_line():
    found = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hdist.Metric("heom").fit(census_like().assign(flag=np.arange(2000) % 2))
        hdist.Metric("heom").fit(pd.DataFrame({"flag": [0, 1] * 10}))
    found = [str(w.message) for w in caught if issubclass(w.category, ColumnKindWarning)]
    lines = found[0].splitlines()
    assert len(lines) == 4 and "3 columns" in lines[0] and "nominal=[...]" in lines[0]
    assert lines[1:] == [
        "  'detailed_industry_recode' (continuous: whole numbers in a column named like "
        "codes or identifiers ('recode'))",
        "  'detailed_occupation_recode' (continuous: whole numbers in a column named like "
        "codes or identifiers ('recode'))",
        "  'flag' (continuous: 2 distinct whole numbers)"]
    assert found[1].startswith("column 'flag' (continuous: 2 distinct whole numbers): ")
    assert "\n" not in found[1]


def _code_frame():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"flag": rng.integers(0, 2, 40), "x": rng.normal(size=40),
                      "c": rng.choice(["a", "b"], 40)})
    return X, (X["x"] > 0).map({True: "hi", False: "lo"}).to_numpy()


def _entry_points():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    X, y = _code_frame()
    return {
        "Metric.fit": lambda: hdist.Metric("heom").fit(X),
        "classifier fit": lambda: KNeighborsClassifier(3).fit(X, y),
        "imputer fit_transform": lambda: KNNImputer(n_neighbors=2).fit_transform(X),
        "transformer fit_transform": lambda: KNeighborsTransformer(n_neighbors=2)
        .fit_transform(X),
        "KMedoids fit_predict": lambda: hdist.KMedoids(2, random_state=0).fit_predict(X),
        "pipeline fit": lambda: make_pipeline(FunctionTransformer(), KNeighborsClassifier(3))
        .fit(X, y),
        "pipeline fit_transform": lambda: make_pipeline(
            KNNImputer(n_neighbors=2).set_output(transform="pandas"),
            KNeighborsTransformer(n_neighbors=2)).fit_transform(X),
        "grid search": lambda: GridSearchCV(KNeighborsClassifier(), {"n_neighbors": [3]},
                                            cv=2).fit(X, y),
    }


@pytest.mark.parametrize("entry", list(_entry_points()))
def test_the_warning_points_at_the_users_call(entry):
    """Whatever calls ``fit`` -- the user, ``fit_transform``, a pipeline, a search --
    the warning names the user's file, not hdist's or scikit-learn's."""
    call = _entry_points()[entry]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [w for w in caught if issubclass(w.category, ColumnKindWarning)]
    assert found, entry
    assert {w.filename for w in found} == {__file__}, [w.filename for w in found]


def test_the_empty_column_warning_points_at_the_users_call_too():
    """A column with no observed training value (fitted under missing="one") warns from
    the user's line whichever entry point fitted the metric."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    X = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6], "e": [np.nan] * 6, "c": list("xyxyxy")})
    y = ["p", "q", "p", "q", "p", "q"]
    for call in (lambda: hdist.Metric("heom").fit(X),
                 lambda: KNeighborsClassifier(1).fit(X, y),
                 lambda: make_pipeline(FunctionTransformer(), KNeighborsClassifier(1))
                 .fit(X, y)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        found = [w for w in caught if "no observed value" in str(w.message)]
        assert found and {w.filename for w in found} == {__file__}, \
            [w.filename for w in found]


# -- messages for inputs an estimator does not take -------------------------------------------

def _xy():
    X = pd.DataFrame({"a": [1.0, 2, 3, 4, 5, 6], "b": list("xyxyxy"),
                      "class": ["p", "q", "p", "q", "p", "q"]})
    return X


@pytest.mark.parametrize("fit", [
    lambda X: KNeighborsClassifier(1).fit(X, "class"),
    lambda X: PrototypeClassifier().fit(X, "class"),
    lambda X: KNeighborsRegressor(1).fit(X, "class"),
    lambda X: NearestNeighbors(n_neighbors=1, metric="hvdm").fit(X, "class"),
    lambda X: hdist.Metric("hvdm").fit(X, "class"),
])
def test_a_column_name_as_y_is_refused_with_the_way_to_pass_it(fit):
    with pytest.raises(TypeError, match=r"y must be the target values, one per row of X, "
                       r"not a column name: got the string 'class'.*y = X.pop\('class'\)"):
        fit(_xy())


@pytest.mark.parametrize("est", [KNeighborsClassifier(1), PrototypeClassifier()])
@pytest.mark.parametrize("y", [[1, "a", 1, "a", 2, "b"], ["a", 1, "a", 1, 2, "b"]])
def test_mixed_label_types_are_refused_naming_y_and_the_types(est, y):
    X = _xy().drop(columns="class")
    for form in (np.array(y, dtype=object), pd.Series(y)):
        with pytest.raises(TypeError, match=r"y mixes class labels of types (int and str|"
                           r"str and int) \(e.g. "):
            est.fit(X, form)
    # one type: fine
    est.fit(X, pd.Series(y).astype(str))


@pytest.mark.parametrize("fit", [
    lambda X: KNeighborsClassifier(1).fit(X, [0, 1]),
    lambda X: PrototypeClassifier().fit(X, [0, 1]),
    lambda X: KNNImputer(n_neighbors=1).fit(X),
    lambda X: hdist.KMedoids(1).fit(X),
    lambda X: hdist.Metric("heom").fit(X),
    lambda X: hdist.Metric("heom").fit(pa.Table.from_arrays(
        [pa.array(X.iloc[:, j].tolist()) for j in range(4)], names=list(X.columns))),
])
def test_duplicated_column_names_are_refused_naming_them(fit):
    X = pd.DataFrame([[1.0, "x", 2.0, 5.0], [2.0, "y", 3.0, 6.0]],
                     columns=["a", "b", "a", "c"])
    with pytest.raises(ValueError, match=r"X has duplicated column names: 'a' \(2 times\); "):
        fit(X)


def test_a_list_of_dicts_is_read_as_records():
    """Like ``pandas.DataFrame(rows)``: the keys name the columns, in order of first
    appearance; a key a row lacks is missing there."""
    rows = [{"a": 1.0, "b": "x"}, {"a": 2.0, "b": "y"}, {"b": "x", "a": 3.5},
            {"a": 4.0, "b": "y"}, {"a": 5.5}, {"a": None, "b": "y", "c": 2}]
    y = [0, 1, 0, 1, 0, 1]
    frame = pd.DataFrame(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        m = hdist.Metric("heom").fit(rows)
        assert m.schema_.names_ == ["a", "b", "c"]
        assert m.kinds_ == ["continuous", "nominal", "continuous"]
        np.testing.assert_array_equal(m.pairwise(rows),
                                      hdist.Metric("heom").fit(frame).pairwise(frame))
        clf = KNeighborsClassifier(1).fit(rows, y)
        assert list(clf.feature_names_in_) == ["a", "b", "c"]
        np.testing.assert_array_equal(clf.predict(rows), y)
        km = hdist.KMedoids(2, random_state=0).fit(rows)
        np.testing.assert_array_equal(km.predict(rows), km.labels_)
        imputed = KNNImputer(n_neighbors=1).fit_transform(rows)
        np.testing.assert_array_equal(
            np.asarray(imputed, dtype=object),
            np.asarray(KNNImputer(n_neighbors=1).fit_transform(frame), dtype=object))
        with pytest.raises(ValueError, match="columns"):
            clf.predict([{"b": "x", "a": 1.0, "c": 1}])


# -- the command line reads such text as the API does ------------------------------------------

@pytest.mark.parametrize("reader", ["pyarrow", "pandas"])
@pytest.mark.parametrize("special", ["NAN", "nan", "inf"])
def test_the_command_line_reads_special_float_text_as_the_api(special, reader, tmp_path,
                                                              capsys, monkeypatch):
    """pyarrow's CSV reader takes "nan", "NAN" and "inf" for floats: a training column
    holding one was continuous with a missing value, and a query value one was missing,
    whatever --na-values said."""
    from hdist import cli
    monkeypatch.setattr(cli, "reader_name", lambda: reader)
    train, query = tmp_path / "train.csv", tmp_path / "query.csv"
    rows = ["1.5,a,p", "2.5,b,q", "3,a,p", "4.25,b,q", "5,a,p"]
    train.write_text("x,c,y\n" + "\n".join(rows) + "\n")
    query.write_text("x,c\n%s,a\n2,b\n" % special)
    argv = ["knn", "--train", str(train), "--query", str(query), "--target", "y", "--k", "1",
            "-o", str(tmp_path / "o.csv")]
    assert cli.main(argv + ["--na-values", "?"]) == 1
    err = capsys.readouterr().err
    assert "'x'" in err and "query file" in err
    if special != "inf" or reader == "pyarrow":
        assert "holds %r in row 0, which is not a number" % special in err
    assert cli.main(argv + ["--na-values", "?,%s" % special]) == 0
    capsys.readouterr()
    # in the training file the text makes the column nominal, with the warning naming it
    rows[1] = "%s,b,q" % special
    train.write_text("x,c,y\n" + "\n".join(rows) + "\n")
    assert cli.main(argv + ["--na-values", "?"]) == 0
    assert "'x' (nominal: numbers, and the text %r)" % special in capsys.readouterr().err
    assert cli.main(argv + ["--na-values", "?,%s" % special]) == 0
    assert "warning" not in capsys.readouterr().err


# -- a single record, no rows, a scalar target, a signaling NaN ------------------------------

RECORDS = [{"a": 1.0, "b": "x"}, {"a": 2.0, "b": "y"}, {"a": 3.0}, {"b": "z", "a": 4.0}]


@pytest.mark.parametrize("estimator", [lambda: KNeighborsClassifier(1),
                                       lambda: KNeighborsRegressor(1),
                                       lambda: NearestNeighbors(n_neighbors=1)])
def test_a_single_dict_or_no_rows_is_refused_by_name(estimator):
    est = estimator().fit(RECORDS, [0, 1, 0, 1])
    call = est.kneighbors if isinstance(est, NearestNeighbors) else est.predict
    with pytest.raises(TypeError, match=r"X is a single dict; .*wrap one record in a list"):
        call({"a": 1.1, "b": "x"})
    for empty in ([], ()):
        with pytest.raises(ValueError, match="X is an empty %s: 0 rows"
                           % type(empty).__name__):
            call(empty)
    # one record in a list is a table of one row
    one = call([{"a": 1.1, "b": "x"}])
    assert len(one[1] if isinstance(one, tuple) else one) == 1


def test_a_single_dict_is_refused_by_the_metric():
    m = hdist.Metric("heom").fit(RECORDS)
    with pytest.raises(TypeError, match="X is a single dict"):
        m.pairwise({"a": 1.1, "b": "x"})
    with pytest.raises(ValueError, match="0 rows"):
        m.pairwise([])


@pytest.mark.parametrize("est", [KNeighborsClassifier, KNeighborsRegressor])
@pytest.mark.parametrize("y", [5, 2.5, np.float64(1.0)])
def test_a_scalar_target_is_refused_naming_y(est, y):
    X = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": ["p", "q", "p", "q"]})
    with pytest.raises(TypeError, match=r"y must be the target values, one per row of X .*"
                       "got the scalar"):
        est(1).fit(X, y)


@pytest.mark.parametrize("form", ["pandas", "numpy", "records"])
def test_a_signaling_decimal_nan_is_missing_like_nan(form):
    snan = [D("1.5"), D("sNaN"), D("2.5"), D("-sNaN"), D("4")]
    qnan = [D("1.5"), D("NaN"), D("2.5"), np.nan, D("4")]
    kinds = ["s", "m", "s", "l", "m"]

    def table(col):
        frame = pd.DataFrame({"p": pd.Series(col, dtype=object), "k": kinds})
        return {"pandas": frame, "numpy": frame.to_numpy(),
                "records": frame.to_dict("records")}[form]
    got = hdist.Metric("heom", continuous=["p"] if form != "numpy" else [0]).fit(table(snan))
    want = hdist.Metric("heom", continuous=["p"] if form != "numpy" else [0]).fit(table(qnan))
    assert got.kinds_ == want.kinds_ == ["continuous", "nominal"]
    np.testing.assert_array_equal(got.pairwise(table(snan)), want.pairwise(table(qnan)))
    # and inferred: still continuous, the signaling NaN missing
    assert hdist.Metric("heom").fit(pd.DataFrame({"p": pd.Series(snan, dtype=object)})
                                    ).kinds_ == ["continuous"]
