"""Every input form goes through the one schema path and gives the same answer: pandas
(numpy, pandas 3 ``str``, ``string``, ``category``, nullable dtypes), polars, pyarrow,
numpy object arrays and lists of rows, through the estimators and the command line.

The ground truth is tests/reference.py on the plain Python values."""
import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.model_selection import KFold, cross_val_predict

from hdist import cli
from hdist.neighbors import KNeighborsClassifier, NearestNeighbors
from reference import CONTINUOUS, NOMINAL, reference_metric, rows_of
from strategies import STR_DTYPE

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pl = pytest.importorskip("polars")

N = 60
KINDS = [CONTINUOUS, CONTINUOUS, NOMINAL, NOMINAL, NOMINAL]


def plain_columns(seed=0):
    """Columns as Python lists (None = missing): a float, an int, a string, a string
    category and a boolean, and class labels."""
    rng = np.random.default_rng(seed)
    x = [None if rng.random() < 0.1 else float(v) for v in rng.normal(size=N)]
    i = [None if rng.random() < 0.1 else int(v) for v in rng.integers(0, 40, size=N)]
    s = [None if rng.random() < 0.1 else str(v) for v in rng.choice(["ab", "cd", "ef"], N)]
    c = [None if rng.random() < 0.1 else str(v) for v in rng.choice(["lo", "mid", "hi"], N)]
    b = [None if rng.random() < 0.1 else bool(v) for v in rng.random(N) < 0.5]
    y = [str(v) for v in rng.choice(["u", "v"], N)]
    return {"x": x, "i": i, "s": s, "c": c, "b": b}, y


COLS, Y = plain_columns()


def frame_numpy():
    return pd.DataFrame({"x": pd.array(COLS["x"], dtype=float).astype(float),
                         "i": np.array([np.nan if v is None else v for v in COLS["i"]]),
                         "s": np.array(COLS["s"], dtype=object),
                         "c": np.array(COLS["c"], dtype=object),
                         "b": np.array(COLS["b"], dtype=object)})


def frame_pandas3_str():
    if STR_DTYPE is None:
        pytest.skip("pandas %s has no string dtype with NaN for missing values (2.3 and "
                    "later)" % pd.__version__)
    f = frame_numpy()
    return f.astype({"s": STR_DTYPE, "c": "category"})


def frame_nullable():
    return pd.DataFrame({"x": pd.array(COLS["x"], dtype="Float64"),
                         "i": pd.array(COLS["i"], dtype="Int64"),
                         "s": pd.array(COLS["s"], dtype="string"),
                         "c": pd.Categorical(COLS["c"], categories=["hi", "lo", "mid"]),
                         "b": pd.array(COLS["b"], dtype="boolean")})


def frame_pyarrow_backed():
    return pd.DataFrame({"x": pd.array(COLS["x"], dtype="float64[pyarrow]"),
                         "i": pd.array(COLS["i"], dtype="int64[pyarrow]"),
                         "s": pd.array(COLS["s"], dtype="string[pyarrow]"),
                         "c": pd.array(COLS["c"], dtype="string[pyarrow]"),
                         "b": pd.array(COLS["b"], dtype="bool[pyarrow]")})


def table_pyarrow():
    return pa.table({"x": pa.array(COLS["x"], pa.float64()),
                     "i": pa.array(COLS["i"], pa.int32()),
                     "s": pa.array(COLS["s"], pa.string()),
                     "c": pa.array(COLS["c"], pa.string()).dictionary_encode(),
                     "b": pa.array(COLS["b"], pa.bool_())})


def frame_polars():
    return pl.DataFrame({"x": pl.Series(COLS["x"], dtype=pl.Float64),
                         "i": pl.Series(COLS["i"], dtype=pl.Int64),
                         "s": pl.Series(COLS["s"], dtype=pl.Utf8),
                         "c": pl.Series(COLS["c"], dtype=pl.Categorical),
                         "b": pl.Series(COLS["b"], dtype=pl.Boolean)})


def object_array():
    out = np.empty((N, 5), dtype=object)
    for j, k in enumerate(COLS):
        out[:, j] = COLS[k]
    return out


def list_of_rows():
    return [list(r) for r in zip(*COLS.values())]


FORMS = {"pandas-numpy": (frame_numpy, None), "pandas3-str+category": (frame_pandas3_str, None),
         "pandas-nullable": (frame_nullable, None),
         "pandas-pyarrow-backed": (frame_pyarrow_backed, None),
         "pyarrow": (table_pyarrow, None), "polars": (frame_polars, None),
         "numpy-object": (object_array, [2, 3, 4]), "list-of-rows": (list_of_rows, [2, 3, 4])}


@pytest.fixture(scope="module")
def reference_neighbors():
    ref = reference_metric("hvdm", KINDS).fit(list(COLS.values()), Y)
    rows = rows_of(list(COLS.values()))
    return ref.kneighbors(rows, rows, 4, exclude_self=True)


@pytest.mark.parametrize("form", FORMS)
def test_every_form_gives_the_reference_neighbors(form, reference_neighbors):
    make, nominal = FORMS[form]
    X = make()
    params = None if nominal is None else {"nominal": nominal}
    nn = NearestNeighbors(n_neighbors=4, metric="hvdm", metric_params=params).fit(X, Y)
    assert nn.metric_.kinds_ == KINDS, nn.metric_.kinds_
    rd, ri = reference_neighbors
    d, i = nn.kneighbors()
    np.testing.assert_array_equal(i, ri)
    np.testing.assert_allclose(d, rd, rtol=1e-12)
    # queries in the same form, encoded against the learned categories
    d2, i2 = nn.kneighbors(X, 4)
    assert (d2[:, 0] == 0).sum() >= N - sum(any(v is None for v in r)
                                            for r in zip(*COLS.values()))


#: the scikit-learn release whose cross-validation first takes rows of these tables
SPLITTABLE_FROM = {"polars": (1, 4), "pyarrow": (1, 7)}


@pytest.mark.parametrize("form", ["pandas-numpy", "pandas-nullable", "pyarrow", "polars",
                                  "numpy-object"])
def test_every_form_works_in_cross_validation(form):
    need = SPLITTABLE_FROM.get(form)
    if need and tuple(int(v) for v in sklearn.__version__.split(".")[:2]) < need:
        pytest.skip("scikit-learn %s cannot take rows of a %s table (from %d.%d)"
                    % ((sklearn.__version__, form) + need))
    make, nominal = FORMS[form]
    X = make()
    params = None if nominal is None else {"nominal": nominal}
    clf = KNeighborsClassifier(3, metric="heom", metric_params=params)
    pred = cross_val_predict(clf, X, np.array(Y), cv=KFold(4))
    want = cross_val_predict(KNeighborsClassifier(3, metric="heom"), frame_numpy(),
                             np.array(Y), cv=KFold(4))
    np.testing.assert_array_equal(pred, want)


@pytest.mark.parametrize("labels", [
    ["u", "v"] * (N // 2), [3, 1] * (N // 2), [True, False] * (N // 2), [2.0, 5.0] * (N // 2),
    pd.Series(["u", "v"] * (N // 2), dtype="category"),
    pd.Series(["u", "v"] * (N // 2), dtype="string"),
    pd.Series([1, 2] * (N // 2), dtype="Int64"),
])
def test_label_types(labels):
    X = frame_numpy()
    clf = KNeighborsClassifier(3).fit(X, labels)
    want = sorted(set(pd.Series(labels).tolist()))
    assert list(clf.classes_) == want
    assert set(clf.predict(X).tolist()) <= set(want)


def test_unseen_and_odd_query_values():
    X = frame_numpy()
    nn = NearestNeighbors(n_neighbors=2).fit(X)
    r = int(np.flatnonzero(X.notna().all(axis=1).to_numpy())[0])
    Q = X.iloc[[r, r, r]].copy()
    Q["s"] = ["zz", pd.NA, None]          # an unseen value and two spellings of missing
    Q["b"] = [np.bool_(X["b"][r]), X["b"][r], X["b"][r]]
    # each differs from row r in "s" only, by 1 (unseen: a different value; missing: 1)
    np.testing.assert_array_equal(nn.metric_.pairwise(Q, X.iloc[[r]]), [[1.0], [1.0], [1.0]])
    assert nn.metric_.pairwise(X.iloc[[r]], X.iloc[[r]])[0, 0] == 0.0


def test_cli_reads_parquet_types(tmp_path, capsys):
    """Parquet with dictionary-encoded strings, nullable ints and booleans, scored by the
    command line, matches the same tables scored in process."""
    table = table_pyarrow().append_column("y", pa.array(Y))
    pq.write_table(table.slice(0, 40), tmp_path / "train.parquet")
    pq.write_table(table.slice(40).drop_columns(["y"]), tmp_path / "query.parquet")
    status = cli.main(["knn", "--train", str(tmp_path / "train.parquet"), "--query",
                       str(tmp_path / "query.parquet"), "--target", "y", "--k", "3",
                       "--metric", "hvdm", "--chunk-size", "7", "-o", str(tmp_path / "o.csv")])
    assert status == 0, capsys.readouterr().err
    # floats read back exactly: pandas >= 3 does by default (and deprecates the option)
    exact = {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}
    out = pd.read_csv(tmp_path / "o.csv", **exact)
    nn = NearestNeighbors(n_neighbors=3, metric="hvdm").fit(
        table.slice(0, 40).drop_columns(["y"]), Y[:40])
    d, i = nn.kneighbors(table.slice(40).drop_columns(["y"]))
    np.testing.assert_array_equal(out[["neighbor_1", "neighbor_2", "neighbor_3"]], i)
    np.testing.assert_array_equal(out[["distance_1", "distance_2", "distance_3"]], d)


def test_cli_csv_booleans_and_codes_match_between_files(tmp_path, capsys):
    """A boolean-looking column and numeric codes declared nominal are read the same way
    in the training file and in every query chunk."""
    f = frame_numpy().assign(code=[v % 3 for v in range(N)], y=Y)
    f.iloc[:40].to_csv(tmp_path / "tr.csv", index=False)
    f.iloc[40:].to_csv(tmp_path / "q.csv", index=False)
    status = cli.main(["knn", "--train", str(tmp_path / "tr.csv"), "--query",
                       str(tmp_path / "q.csv"), "--target", "y", "--k", "2", "--nominal",
                       "code", "--chunk-size", "3", "-o", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert status == 0, err
    tr = f.iloc[:40].drop(columns="y").astype({"code": str, "b": object})
    q = f.iloc[40:].drop(columns="y").astype({"code": str, "b": object})
    nn = NearestNeighbors(n_neighbors=2, metric_params={"nominal": ["code"]}).fit(tr)
    assert nn.metric_.kinds_ == KINDS + [NOMINAL]
    d, i = nn.kneighbors(q)
    out = pd.read_csv(tmp_path / "o.csv")
    np.testing.assert_array_equal(out[["neighbor_1", "neighbor_2"]], i)
    np.testing.assert_allclose(out[["distance_1", "distance_2"]], d, rtol=1e-15)
    assert "accuracy" in err
