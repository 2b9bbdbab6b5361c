"""Column-wise encoding (hdist/_core/schema.py) equals the cell-by-cell reference encoder
(tests/ref_schema.py, the encoder hdist used before) on every container type and on the
hypothesis tables: the same kinds, the same categories (type for type), the same
continuous values (NaN where missing) and the same nominal codes, unseen values
included, over several batches sharing one ``unseen`` dictionary."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ref_schema
from hdist._core.schema import ColumnKindWarning, Schema
from strategies import census_frame, random_table, tables

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pl = pytest.importorskip("polars")


def typed(cats):
    return None if cats is None else [(type(k).__name__, k) for k in cats]


def assert_same_encoding(X, queries=(), nominal=None):
    """Fit both encoders on ``X``, encode ``X`` and every query batch; compare all.  The
    kinds are inferred here (the comparison is of that inference), so the warning for
    code-like numbers is not asserted: tests/core/test_kinds.py checks it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        new = Schema(nominal).fit(X)
        ref = ref_schema.Schema(nominal).fit(X)
    assert new.names_ == ref.names_ and new.kinds_ == ref.kinds_
    assert [typed(c) for c in new.categories_] == [typed(c) for c in ref.categories_]
    np.testing.assert_array_equal(new.continuous_, ref.continuous_)
    un_new = [dict() for _ in new.nominal_names]
    un_ref = [dict() for _ in ref.nominal_names]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for i, Q in enumerate((X,) + tuple(queries)):
            cn, nn = new.encode(Q, un_new, "Q")
            cr, nr = ref.encode(Q, un_ref, "Q")
            np.testing.assert_array_equal(cn, cr, err_msg="batch %d continuous" % i)
            np.testing.assert_array_equal(nn, nr, err_msg="batch %d nominal" % i)
    assert un_new == un_ref
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        cf, nf = Schema(nominal).fit_encode(X)
    cr, nr = ref.encode(X)
    np.testing.assert_array_equal(cf, cr)
    np.testing.assert_array_equal(nf, nr)
    return new


def containers(t):
    """Every container a hypothesis table can take, with the ``nominal=`` it needs."""
    pos = t.nominal_positions()
    yield "frame", t.frame, t.override()
    yield "object", t.object_array, pos
    yield "rows", (lambda: [list(r) for r in t.rows()]), pos
    yield "structured", t.structured_array, t.nominal_names()
    yield "arrow", t.arrow, t.override()
    yield "polars", t.polars, t.override()
    if all(k == "continuous" or s == "code" for k, s in zip(t.kinds, t.styles)):
        yield "numeric", t.numeric_array, pos


def _split(t, parts=2):
    n = t.n
    cuts = np.linspace(0, n, parts + 1).astype(int)
    return [t.take(range(a, b)) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


@settings(max_examples=40)
@given(data=tables(min_rows=2, max_rows=14, n_queries=(1, 10)))
def test_hypothesis_tables_every_container(data):
    train, queries, _ = data
    parts = _split(queries)
    for kind, make, nominal in containers(train):
        if kind in ("arrow", "polars") and "ordered" in train.styles:
            continue          # Arrow and polars carry no ordered categories
        qmake = dict((k, m) for k, m, _ in containers(queries))
        X = make()
        Qs = [dict((k, m) for k, m, _ in containers(p))[kind]() for p in parts] \
            if kind in dict((k, m) for k, m, _ in containers(parts[0])) else [qmake[kind]()]
        assert_same_encoding(X, Qs, nominal)


@pytest.mark.parametrize("seed", range(6))
def test_random_tables_every_style(seed):
    styles = ("float", "Float64", "Int64", "ordered", "offset", "object", "string", "str",
              "category", "boolean", "code")
    train, queries = random_table(seed, 80, styles, p_missing=0.2, n_queries=50)
    assert_same_encoding(train.frame(), [queries.frame()], train.override())
    assert_same_encoding(train.object_array(), [queries.object_array()],
                         train.nominal_positions())
    assert_same_encoding(train.structured_array(), [queries.structured_array()],
                         train.nominal_names())


# -- pandas dtypes, pandas 3 included ------------------------------------------------------

def _frame(dtype, vals):
    return pd.DataFrame({"a": pd.Series(vals, dtype=dtype)})


STRINGS = ["x", None, "y", "x", "z", None, "y"]
STRING_QUERIES = ["y", "new", None, "x", "new", "other"]


@pytest.mark.parametrize("dtype", ["object", "str", "string", "string[python]",
                                   "string[pyarrow]", "category"])
def test_pandas_string_dtypes(dtype):
    assert_same_encoding(_frame(dtype, STRINGS), [_frame(dtype, STRING_QUERIES),
                                                  _frame("object", STRING_QUERIES)])


def test_pandas_category_queries_in_any_category_order():
    X = pd.DataFrame({"a": pd.Categorical(["b", "a", None, "c"], categories=["c", "b", "a"])})
    Q = pd.DataFrame({"a": pd.Categorical(["q", "a", "p", "q", None],
                                          categories=["p", "z", "a", "q"])})
    assert_same_encoding(X, [Q, Q.astype(object)])


@pytest.mark.parametrize("dtype", ["Int64", "Float64", "boolean", "float64", "int64", "bool"])
def test_pandas_numbers_and_booleans(dtype):
    vals = {"Int64": [1, None, 3, 1], "Float64": [1.5, None, 2.0, 1.5],
            "boolean": [True, None, False, True], "float64": [0.5, np.nan, 2.0, 0.5],
            "int64": [3, 1, 2, 3], "bool": [True, False, True, True]}[dtype]
    X = _frame(dtype, vals)
    assert_same_encoding(X, [X.iloc[::-1]])
    assert_same_encoding(X, [X.iloc[::-1]], nominal="all")


def test_pandas_ordered_categorical_continuous():
    cats = ["lo", "mid", "hi"]
    X = pd.DataFrame({"s": pd.Categorical(["hi", "lo", None, "mid"], categories=cats,
                                          ordered=True), "v": [1.0, 2.0, 3.0, np.nan]})
    Q = pd.DataFrame({"s": pd.Categorical(["mid", "hi"], categories=cats[::-1],
                                          ordered=True), "v": [0.5, 1.0]})
    assert_same_encoding(X, [Q])


def test_object_column_mixed_types_and_markers():
    vals = [1, "1", 2.0, None, np.nan, pd.NA, pd.NaT, "b", True, np.int64(2), 1.0]
    X = pd.DataFrame({"a": pd.Series(vals, dtype=object)})
    Q = pd.DataFrame({"a": pd.Series([3, "1", "new", 2, None, False, 3.0], dtype=object)})
    assert_same_encoding(X, [Q])


def test_object_column_declared_continuous():
    X = pd.DataFrame({"a": pd.Series([1, 2.5, None, True, np.nan], dtype=object),
                      "b": ["u", "v", "u", "w", "v"]})
    assert_same_encoding(X, [X.iloc[:3]], nominal=["b"])
    with pytest.raises(TypeError, match="'b' is declared continuous.*'u'"):
        Schema(nominal=[], continuous="rest").fit(X)


def test_numeric_nominal_columns_with_unseen_values():
    X = np.array([[1.0, 2.0], [2.0, np.nan], [1.0, 5.0], [3.5, 2.0]])
    Q = np.array([[7.0, 2.0], [1.0, 9.0], [7.0, 9.0], [8.5, np.nan]])
    assert_same_encoding(X, [Q, Q[::-1]], nominal="all")
    assert_same_encoding(X, [Q], nominal=[1])


# -- numpy -----------------------------------------------------------------------------------

def test_numpy_forms():
    obj = np.array([["a", 1.0, True], [None, 2.0, False], ["b", np.nan, None],
                    ["a", 4.0, True]], dtype=object)
    assert_same_encoding(obj, [obj[::-1]], nominal=[0, 2])
    uni = np.array([["a", "x"], ["b", "y"], ["a", "z"]])
    assert_same_encoding(uni, [np.array([["c", "x"]])])
    bools = np.array([[True, False], [False, False], [True, True]])
    assert_same_encoding(bools, [bools[:1]])
    rec = np.array([("a", 1.0), ("b", np.nan), (None, 3.0)], dtype=[("s", object), ("v", float)])
    assert_same_encoding(rec, [rec[::-1]], nominal=["s"])


# -- Arrow and polars --------------------------------------------------------------------------

def test_arrow_chunked_and_dictionary_columns():
    s = pa.chunked_array([pa.array(["a", None, "b"]), pa.array(["c", "a", None])])
    d = pa.chunked_array([pa.array(["x", "y", None]).dictionary_encode(),
                          pa.array(["z", "x", "x"]).dictionary_encode()])
    num = pa.chunked_array([pa.array([1, None, 3]), pa.array([4, 5, None])])
    b = pa.chunked_array([pa.array([True, None, False]), pa.array([True, True, None])])
    big = pa.chunked_array([pa.array(["p", "q", None, "r", "p", "q"], type=pa.large_string())])
    X = pa.table({"s": s, "d": d, "num": num, "b": b, "big": big})
    Q = pa.table({"s": pa.array(["new", "a"]), "d": pa.array(["x", "w"]).dictionary_encode(),
                  "num": pa.array([None, 2]), "b": pa.array([None, False]),
                  "big": pa.array(["p", "zz"], type=pa.large_string())})
    assert_same_encoding(X, [Q])


def test_polars_dtypes():
    X = pl.DataFrame({"s": pl.Series(["a", None, "b", "a"], dtype=pl.Utf8),
                      "c": pl.Series(["u", "v", None, "u"], dtype=pl.Categorical),
                      "e": pl.Series(["lo", "hi", "lo", None], dtype=pl.Enum(["lo", "hi"])),
                      "i": pl.Series([1, None, 3, 4], dtype=pl.Int32),
                      "b": pl.Series([True, None, False, True], dtype=pl.Boolean)})
    Q = pl.DataFrame({"s": pl.Series(["z", "a"]), "c": pl.Series(["w", "u"], dtype=pl.Categorical),
                      "e": pl.Series(["hi", None], dtype=pl.Enum(["lo", "hi"])),
                      "i": pl.Series([2, None], dtype=pl.Int32),
                      "b": pl.Series([None, True], dtype=pl.Boolean)})
    assert_same_encoding(X, [Q])


def test_census_like_frame_through_csv(tmp_path):
    """A mid-size frame read back from CSV with pandas' default dtypes."""
    X = census_frame(3000, seed=1)
    path = tmp_path / "t.csv"
    X.to_csv(path, index=False)
    F = pd.read_csv(path)
    Q = census_frame(500, seed=2)
    Q.to_csv(path, index=False)
    assert_same_encoding(F, [pd.read_csv(path)])


@pytest.mark.parametrize("y", [["b", "a", "b", "c"], [1, "1", 2.0, 1.0], [True, False, True, 1],
                               np.array(["x", "y", "x"], dtype=object),
                               pd.Series(["u", "v", "u"], dtype="str"),
                               pd.Series(["u", "v", "u"], dtype="category"),
                               [np.int64(3), 3.0, 5, "5"]])
def test_class_labels_like_the_reference(y):
    from hdist._core.schema import encode_labels
    n = len(y)
    codes, classes = encode_labels(y, n)
    rcodes, rclasses = ref_schema.encode_labels(y, n)
    np.testing.assert_array_equal(codes, rcodes)
    assert typed(classes) == typed(rclasses)


@pytest.mark.parametrize("y", [["a", None, "b"], ["a", "b", np.nan], [1, pd.NA, 2]])
def test_missing_class_label_names_the_row(y):
    from hdist._core.schema import encode_labels
    with pytest.raises(ValueError) as new:
        encode_labels(np.array(y, dtype=object), 3)
    with pytest.raises(ValueError) as ref:
        ref_schema.encode_labels(np.array(y, dtype=object), 3)
    assert str(new.value) == str(ref.value)


@pytest.mark.parametrize("container", ["frame", "category", "arrow", "polars", "object"])
def test_python_work_scales_with_distinct_values_not_cells(container, monkeypatch):
    """Fit and encode of 20 000 rows take one Python step per distinct value: counted
    through the per-value helpers, which the cell-by-cell encoder called once per cell."""
    import hdist._core.schema as sch
    X = census_frame(20000, seed=3, n_nominal=6, n_continuous=3)
    if container == "category":
        X = X.astype({c: "category" for c in X.columns if c.startswith("nom")})
    elif container == "arrow":
        X = pa.Table.from_pandas(X, preserve_index=False)
    elif container == "polars":
        X = pl.from_pandas(X)
    elif container == "object":
        X = X.to_numpy(dtype=object)
    calls = {"n": 0}
    real = sch.is_missing_scalar

    def counting(v):
        calls["n"] += 1
        return real(v)

    monkeypatch.setattr(sch, "is_missing_scalar", counting)
    nominal = list(range(6)) if container == "object" else None
    s = Schema(nominal).fit(X)
    s.encode(X)
    distinct = sum(len(c) for c in s.nominal_categories)
    assert 0 < calls["n"] <= 4 * (distinct + 9), calls["n"]


def test_rows_block_is_a_view_of_take():
    """Rows.block(a, b) holds the rows take(range(a, b)) holds, as views of the arrays
    (C-contiguous, as the kernels read them), without copying them."""
    import pandas as pd

    import hdist
    rng = np.random.default_rng(4)
    x = rng.normal(size=40)
    x[rng.random(40) < 0.2] = np.nan
    c = rng.choice(["a", "b", "c", None], size=40).astype(object)
    X = pd.DataFrame({"x": x, "c": c})
    rows = hdist.Metric("hvdm", nominal=["c"]).fit(X, np.arange(40) % 3).train_
    part, same = rows.block(7, 23), rows.take(np.arange(7, 23))
    assert part.n == same.n == 16 and part.D == same.D
    for name in ("c", "cpen", "o", "t", "e"):
        a, b = getattr(part, name), getattr(same, name)
        assert np.array_equal(a, b, equal_nan=True) and a.dtype == b.dtype
        assert a.flags.c_contiguous and np.shares_memory(a, getattr(rows, name)) == (a.size > 0)


@pytest.mark.parametrize("make", ["str", "string[pyarrow]", "arrowdtype", "large", "view"])
def test_arrow_text_codes_equal_factorize(make):
    # a pandas column of text stored in Arrow, encoded as an Arrow column (codes read from
    # Arrow's indices and validity bits), against pandas' factorize (the column path that
    # fills the nulls first): sliced arrays (an offset into the bits, across bytes),
    # several chunks, all missing, empty, no missing
    from hdist._core.schema import _arrow_codes, _arrow_text, _factorize, _pandas_column

    def encoded(s):
        assert _arrow_text(s.array) is not None          # the Arrow path, not factorize
        c = _pandas_column("x", s)
        assert c.hint == "object"
        return c.codes, c.labels
    rng = np.random.default_rng(7)
    vals = np.array(["a", "b", "c", "dd", "e"], dtype=object)[rng.integers(0, 5, 203)]
    vals[rng.random(203) < 0.3] = None
    cases = [vals, vals[:0], np.full(9, None, dtype=object), vals[vals != None]]  # noqa: E711
    for v in cases:
        for lo, hi in [(0, len(v)), (3, len(v)), (5, max(5, len(v) - 7)), (13, 14)]:
            part = list(v[lo:hi])
            if make == "arrowdtype":
                s = pd.Series(part, dtype=pd.ArrowDtype(pa.string()))
            elif make in ("large", "view"):
                if make == "view" and not hasattr(pa, "string_view"):
                    continue
                t = pa.large_string() if make == "large" else pa.string_view()
                whole = pa.chunked_array([pa.array(list(v), type=t)])
                s = pd.Series(pd.arrays.ArrowExtensionArray(whole)).iloc[lo:hi]
                if make == "view":
                    # to a type pandas factorizes the same way, for the reference
                    ref = _factorize(pd.Series(part, dtype="str"))
                    got = encoded(s)
                    np.testing.assert_array_equal(got[0], ref[0])
                    assert list(got[1]) == list(ref[1])
                    continue
            else:
                s = pd.Series(list(v), dtype=make).iloc[lo:hi]
            want = _factorize(s)
            if not type(s.array).__name__.startswith("Arrow"):
                # "str" before pandas 3: object, the general path
                assert _arrow_text(s.array) is None
                continue
            got = encoded(s)
            assert got[0].dtype == np.int64 and got[1].dtype == object
            np.testing.assert_array_equal(got[0], want[0])
            assert list(got[1]) == list(want[1])
            assert all(type(a) is type(b) for a, b in zip(got[1], want[1]))
    # several chunks, one sliced
    arr = pa.chunked_array([pa.array(["x", None, "y"]).slice(1), pa.array([None, "x", "z"])])
    codes, labels = _arrow_codes(arr)
    np.testing.assert_array_equal(codes, [-1, 0, -1, 1, 2])
    assert list(labels) == ["y", "x", "z"]
    # other arrays are left to the general path
    assert _arrow_text(pd.array(["a", None], dtype="string[python]")) is None
    assert _arrow_text(pd.array([1, None], dtype="Int64")) is None
    assert _arrow_text(pd.Series([1, 2], dtype=pd.ArrowDtype(pa.int64())).array) is None


def test_arrow_codes_of_chunks_slices_and_other_types():
    # Arrow columns of several chunks (nulls at their edges, one of them sliced, joined by
    # pandas.concat too), booleans and binaries (tables and polars take this path), and a
    # sliced dictionary array (indices at an offset that is no multiple of 8): the codes
    # Arrow's indices give with their nulls filled, and its dictionary as labels
    from hdist._core.schema import _arrow_codes, _arrow_text, _factorize, _pandas_column

    def reference(col):
        enc = (col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
        enc = enc if pa.types.is_dictionary(enc.type) else enc.dictionary_encode()
        return (enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64),
                enc.dictionary.to_pylist())

    cols = [
        pa.chunked_array([pa.array([None, "a", "b", None]), pa.array([None, "b"]),
                          pa.array(["c", "a", None, None, "d"]).slice(1)]),
        pa.chunked_array([], type=pa.string()),
        pa.chunked_array([pa.array([None, None])]),
        pa.chunked_array([pa.array([True, None, False]), pa.array([None, True])]),
        pa.chunked_array([pa.array([b"x", None, b"y"], type=pa.binary()),
                          pa.array([b"y", None], type=pa.large_binary()).cast(pa.binary())]),
        pa.array([b"p", None, b"q", b"p"], type=pa.large_binary()),
        pa.array(["u", "v", None, "u", "w", None, "v", "u", "w", "w", None, "u"] * 2)
        .dictionary_encode().slice(11),
    ]
    for col in cols:
        codes, labels = _arrow_codes(col)
        want_codes, want_labels = reference(col)
        assert codes.dtype == np.int64 and labels.dtype == object
        np.testing.assert_array_equal(codes, want_codes)
        assert list(labels) == want_labels
    s = pd.concat([pd.Series(["a", None, "b"], dtype="string[pyarrow]"),
                   pd.Series([None, "c", "a"], dtype="string[pyarrow]")], ignore_index=True)
    c, want = _pandas_column("x", s), _factorize(s)
    assert _arrow_text(s.array) is not None
    got = (c.codes, c.labels)
    np.testing.assert_array_equal(got[0], want[0])
    assert list(got[1]) == list(want[1])
