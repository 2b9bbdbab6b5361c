"""Labels map through the categories seen in fit, on every input path.

- An ordered categorical may be declared nominal (by name, position or ``"all"``); on a
  continuous ordered column, plain labels (strings in a dict, a list, an object array, a
  number spelling a numeric label) are read as labels, never as category codes.
- A nominal column trained on text and queried with the same labels read as numbers (a
  fresh CSV read), or the other way round, maps through the fitted labels when exactly
  one matches, is refused naming the column when several do, and a query column whose
  values are mostly unseen draws a warning naming it.
"""
import io
import warnings

import numpy as np
import pytest

from hdist import Metric
from hdist.neighbors import KNeighborsClassifier

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")


def sizes_frame():
    cats = ["S", "M", "L", "XL"]
    return pd.DataFrame({
        "size": pd.Categorical(["S", "L", "M", None, "XL", "M"], categories=cats, ordered=True),
        "w": [1.0, 3.0, 2.0, 2.5, 4.0, 2.0],
        "colour": ["red", "blue", "red", "green", None, "blue"]})


def unordered(X):
    return X.assign(size=X["size"].cat.as_ordered().cat.as_unordered())


# -- ordered categoricals --------------------------------------------------------------------

@pytest.mark.parametrize("nominal", [["size", "colour"], [0, 2], "all"])
def test_ordered_categorical_declared_nominal(nominal):
    X = sizes_frame()
    m = Metric("heom", nominal=nominal).fit(X)
    assert m.kinds_[0] == "nominal"
    assert m.schema_.categories_[0] == ["L", "M", "S", "XL"]
    ref = Metric("heom", nominal=nominal).fit(unordered(X))
    np.testing.assert_array_equal(m.pairwise(X), ref.pairwise(unordered(X)))
    # a nominal size: S and XL differ by 1, as S and M do
    assert m.explain({"size": "S", "w": 1.0, "colour": "red"},
                     {"size": "XL", "w": 1.0, "colour": "red"}).distance == 1.0


def test_ordered_categorical_nominal_for_vdm():
    X = sizes_frame().drop(columns="w")
    y = ["a", "b", "a", "b", "b", "a"]
    m = Metric("vdm", nominal="all").fit(X, y)
    assert m.kinds_ == ["nominal", "nominal"]
    ref = Metric("vdm", nominal="all").fit(unordered(X), y)
    np.testing.assert_allclose(m.pairwise(X), ref.pairwise(unordered(X)))


def test_ordered_column_plain_label_queries():
    X = sizes_frame()
    m = Metric("heom").fit(X)
    assert m.kinds_[0] == "continuous"
    # through a frame: M and XL are 2 steps apart on a range of 3 (S..XL)
    full = m.pairwise(X)
    assert full[2, 4] == pytest.approx(np.sqrt((2 / 3) ** 2 + (2 / 3) ** 2 + 1))
    row2 = {"size": "M", "w": 2.0, "colour": "red"}
    row4 = {"size": "XL", "w": 4.0, "colour": None}
    assert m.explain(row2, row4).distance == pytest.approx(full[2, 4])
    assert m.explain(["M", 2.0, "red"], ["XL", 4.0, None]).distance == \
        pytest.approx(full[2, 4])
    Q = np.array([["M", 2.0, "red"], ["XL", 4.0, None]], dtype=object)
    np.testing.assert_allclose(m.pairwise(Q, X), full[[2, 4]])
    Qf = pd.DataFrame({"size": ["M", "XL"], "w": [2.0, 4.0], "colour": ["red", None]})
    np.testing.assert_allclose(m.pairwise(Qf, X), full[[2, 4]])
    with pytest.raises(ValueError, match="'size'.*'XXL'"):
        m.pairwise(Qf.assign(size=["M", "XXL"]), X)


def test_ordered_numeric_labels_are_labels_not_codes():
    levels = [10, 20, 30, 40]
    X = pd.DataFrame({"level": pd.Categorical([10, 30, 20, 40, 30], categories=levels,
                                              ordered=True),
                      "x": [0.0, 1.0, 2.0, 3.0, 4.0]})
    m = Metric("heom").fit(X)
    assert m.explain({"level": 30, "x": 1.0}, X.iloc[1]).distance == 0.0
    assert m.explain({"level": 30.0, "x": 1.0}, {"level": 10, "x": 1.0}).distance == \
        pytest.approx(2 / 3)
    Q = pd.DataFrame({"level": [30, 10], "x": [1.0, 0.0]})   # plain int64 labels
    d, i = m.kneighbors(Q, 1)
    np.testing.assert_array_equal(d[:, 0], [0.0, 0.0])
    np.testing.assert_array_equal(i[:, 0], [1, 0])
    Qs = pd.DataFrame({"level": ["30", "10"], "x": [1.0, 0.0]})   # read as text
    np.testing.assert_array_equal(m.kneighbors(Qs, 1)[0], d)
    with pytest.raises(ValueError, match="'level'"):
        m.kneighbors(Q.assign(level=[3, 1]), 1)     # codes are not labels


# -- type traps between fit and predict ------------------------------------------------------

def test_zip_codes_read_as_numbers_map_to_text_labels():
    X = pd.DataFrame({"zip": ["02139", "10001", "94105", "10001"],
                      "income": [50.0, 60.0, 70.0, 65.0]})
    m = Metric("heom").fit(X)
    Q = pd.read_csv(io.StringIO(X.to_csv(index=False)))     # zip read as int64: 2139, ...
    assert Q["zip"].dtype.kind == "i"
    d, i = m.kneighbors(Q, 1)
    np.testing.assert_array_equal(d[:, 0], 0.0)
    np.testing.assert_array_equal(i[:, 0], [0, 1, 2, 3])
    assert m.explain({"zip": 2139, "income": 50.0}, X.iloc[0]).distance == 0.0


def _heart_like(n=120, seed=0):
    """Heart-disease-like table: codes stored as text (as R or a typed reader gives them)."""
    rng = np.random.default_rng(seed)
    cols = {"age": rng.integers(29, 78, n).astype(float),
            "sex": rng.choice(["0", "1"], n), "cp": rng.choice(["1", "2", "3", "4"], n),
            "trestbps": rng.integers(94, 200, n).astype(float),
            "chol": rng.integers(126, 564, n).astype(float),
            "fbs": rng.choice(["0", "1"], n), "restecg": rng.choice(["0", "1", "2"], n),
            "thalach": rng.integers(71, 202, n).astype(float),
            "exang": rng.choice(["0", "1"], n), "oldpeak": np.round(rng.random(n) * 6, 1),
            "slope": rng.choice(["1", "2", "3"], n),
            "ca": rng.choice(np.array(["0", "1", "2", "3", None], dtype=object), n),
            "thal": rng.choice(np.array(["3", "6", "7", None], dtype=object), n)}
    X = pd.DataFrame(cols)
    y = rng.choice(["absent", "present"], n)
    return X, y


@pytest.mark.parametrize("as_category", [False, True])
def test_heart_like_query_file_read_as_numbers(as_category):
    X, y = _heart_like()
    if as_category:
        X = X.astype({c: "category" for c in X.columns if X[c].dtype.kind not in "f"})
    m = Metric("hvdm").fit(X, y)
    Q = pd.read_csv(io.StringIO(X.to_csv(index=False)))       # fresh read: numbers
    assert all(Q[c].dtype.kind in "if" for c in Q.columns)
    d_text, i_text = m.kneighbors(X, 3)
    d_num, i_num = m.kneighbors(Q, 3)
    assert d_num[0, 0] == d_text[0, 0] == 0.0
    np.testing.assert_array_equal(d_num, d_text)
    np.testing.assert_array_equal(i_num, i_text)
    clf = KNeighborsClassifier(3, metric="hvdm").fit(X, y)
    np.testing.assert_array_equal(clf.predict(Q), clf.predict(X))


def test_numbers_in_fit_text_in_query_and_floats_for_ints():
    X = pd.DataFrame({"code": pd.Series([1, 2, 3, 2], dtype=object), "x": [0.0, 1, 2, 3]})
    m = Metric("heom", nominal=["code"]).fit(X)
    for q in ("2", 2.0, np.int64(2), "2.0"):
        assert m.explain({"code": q, "x": 1.0}, X.iloc[1]).distance == 0.0
    Xs = pd.DataFrame({"code": ["1", "2", "3", "2"], "x": [0.0, 1, 2, 3]})
    ms = Metric("heom", nominal=["code"]).fit(Xs)
    for q in (2, 2.0, np.float64(2.0)):
        assert ms.explain({"code": q, "x": 1.0}, Xs.iloc[1]).distance == 0.0
    assert ms.explain({"code": 7, "x": 1.0}, Xs.iloc[1]).distance == 1.0   # still unseen


def test_ambiguous_match_is_refused_naming_the_column():
    X = pd.DataFrame({"grade": ["1", "1.0", "2", "01"], "x": [0.0, 1, 2, 3]})
    m = Metric("heom", nominal=["grade"]).fit(X)
    with pytest.raises(ValueError, match="'grade'.*several"):
        m.kneighbors(pd.DataFrame({"grade": [1], "x": [0.0]}), 1)
    # 2 matches only '2'
    assert m.explain({"grade": 2, "x": 2.0}, X.iloc[2]).distance == 0.0


def test_mostly_unseen_query_column_warns():
    X = pd.DataFrame({"city": ["a", "b", "c"] * 10, "x": np.arange(30.0)})
    m = Metric("heom").fit(X)
    Q = pd.DataFrame({"city": ["A", "B", "C", "a"] * 5, "x": np.arange(20.0)})
    with pytest.warns(UserWarning, match="'city'.*15 of the 20") as rec:
        m.kneighbors(Q, 1)
    assert rec[0].filename == __file__          # points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m.kneighbors(X, 1)                         # all seen: silent
        m.kneighbors(Q.iloc[:3], 1)                # too few values to judge: silent


# -- one column-matching rule for Metric and the estimators -----------------------------------

def test_metric_and_estimators_match_columns_alike():
    X, y = _heart_like(40)
    rev = X[X.columns[::-1]]
    m = Metric("heom").fit(X)
    clf = KNeighborsClassifier(3).fit(X, y)
    for call in (lambda: m.kneighbors(rev, 3), lambda: clf.predict(rev)):
        with pytest.raises(ValueError, match="order"):
            call()
    # by position for arrays (scikit-learn warns that the array has no names)
    arr = X.to_numpy(dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        d_arr, i_arr = m.kneighbors(arr, 3)
        np.testing.assert_array_equal(clf.predict(arr), clf.predict(X))
    d, i = m.kneighbors(X, 3)
    np.testing.assert_array_equal(d_arr, d)
    np.testing.assert_array_equal(clf.kneighbors(X, 3)[1], i)


def test_cli_query_file_with_columns_in_another_order(tmp_path):
    from hdist import cli
    X, y = _heart_like(30)
    train = tmp_path / "train.csv"
    X.assign(y=y).to_csv(train, index=False)
    outs = []
    for name, Q in (("same", X), ("reordered", X[X.columns[::-1]])):
        q = tmp_path / (name + ".csv")
        Q.to_csv(q, index=False)
        out = tmp_path / (name + ".out.csv")
        assert cli.main(["knn", "--train", str(train), "--query", str(q), "--target", "y",
                         "--k", "2", "--output", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]


def test_ordered_categorical_in_kmodes_and_estimators():
    from hdist.cluster import KModes
    X = sizes_frame().drop(columns="w").fillna({"colour": "red"})
    X["size"] = X["size"].fillna("M")
    km = KModes(2, random_state=0).fit(X)          # every column nominal by default
    km_ref = KModes(2, random_state=0).fit(unordered(X))
    np.testing.assert_array_equal(km.labels_, km_ref.labels_)
    np.testing.assert_array_equal(km.predict(X), km_ref.predict(unordered(X)))
    # a classifier on an ordered column answers plain-label queries like frame ones
    Xw = sizes_frame().fillna({"colour": "red"})
    y = ["a", "b", "a", "b", "b", "a"]
    clf = KNeighborsClassifier(1).fit(Xw, y)
    plain = pd.DataFrame({"size": ["M", "XL"], "w": [2.0, 4.0], "colour": ["red", "red"]})
    np.testing.assert_array_equal(clf.predict(plain), clf.predict(Xw.iloc[[2, 4]]))
