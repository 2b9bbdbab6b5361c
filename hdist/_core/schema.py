"""Column kinds, validation and encoding of mixed records (docs/metrics.md, section 1).

Every input form (pandas / polars DataFrame, pyarrow Table, numpy 2-D or structured
array, list of rows) goes through :func:`to_columns`, the one parser, which yields named
1-D columns.  :class:`Schema` decides each column's kind once, in ``fit``, and is frozen
afterwards: it encodes later batches by the learned kinds and categories.

Kinds (docs/metrics.md, section 1; :func:`infer_kind`): a column whose observed values are
all numbers -- a numeric dtype, or text and objects that each are or spell a number -- is
continuous; text, categories and booleans are nominal; the text values of ``NA_VALUES``
(or the ``na_values`` given) are missing in every column, at fit and at predict.  The
columns named in ``nominal=`` / ``continuous=`` take the kind named; the others are
inferred.

Encoding:
- continuous -> float64, ``NaN`` = missing;
- nominal    -> int64 codes: ``0 .. V-1`` for the values seen in ``fit``, ``-1`` for missing,
  and ``V, V+1, ...`` for *unseen* values (distinct unseen values get distinct codes,
  consistently across the batches encoded with the same ``unseen`` dictionary).
"""
from __future__ import annotations

import decimal
import math
import numbers
import re

import numpy as np

CONTINUOUS = "continuous"
NOMINAL = "nominal"

_MISSING_TYPE_NAMES = {"NAType", "NaTType", "NoneType"}

#: Text read as a missing value in every column (surrounding spaces ignored), at fit and
#: at predict: pandas' default ``na_values`` of ``read_csv``, and ``?`` (the UCI
#: repository's mark of an unknown value).  ``na_values=`` replaces the list (``[]``: no
#: text is missing).  ``-`` is not in it: it is a label too (credit-a's classes are
#: ``+`` and ``-``); a column of numbers holding it draws a ``ColumnKindWarning``.
NA_VALUES = ("", "?", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
             "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan",
             "null")

#: a whole-number column inferred continuous with at most this many distinct values
#: looks like codes (``ColumnKindWarning``)
FEW_CODES = 10
#: ... and with a different value in every row, among at least this many rows, spread
#: over at most twice as many consecutive integers, like an identifier
ID_MIN_ROWS = 20
#: ... and whatever its values, when the last word of its name is one of these
#: (``Id``, ``customer_id``) or ends in one of ``CODE_SUFFIXES`` (``industry_recode``)
CODE_WORDS = ("id", "ids")
CODE_SUFFIXES = ("code", "codes")


class ColumnKindWarning(UserWarning):
    """``fit`` inferred a column's kind from values that may mean otherwise: a column
    taken as continuous whose values look like codes (whole numbers with few distinct
    values -- flags, industry codes --, numbers written with leading zeros, consecutive
    numbers unique per row -- identifiers), or a column of numbers taken as nominal for a
    few texts it also holds (``-``, ``unknown``: marks of missing values?).  Declare the
    columns ``nominal=[...]`` or ``continuous=[...]`` (which also silences the warning),
    add a mark of missing values to ``na_values``, or drop an identifier.  One warning
    per ``fit`` lists every such column, one a line with its reason (docs/metrics.md,
    section 1); it points at the line of the user's code that called ``fit`` (through
    scikit-learn's ``fit_transform``, pipelines and searches too).

    Parameters
    ----------
    columns : list of (str, str)
        The ``(name, reason)`` of each column; kept as the attribute ``columns``.

    See Also
    --------
    hdist.metrics.NA_VALUES : the texts read as missing values.
    hdist.Metric : whose ``nominal=`` and ``continuous=`` declare a column's kind.

    Examples
    --------
    >>> import warnings
    >>> import pandas as pd
    >>> import hdist
    >>> df = pd.DataFrame({"flag": [0, 1, 0, 1, 1, 0],
    ...                    "x": [0.5, 1.2, 3.3, 2.1, 0.7, 1.9]})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     m = hdist.Metric("heom").fit(df)
    >>> [w.message.columns for w in caught
    ...  if isinstance(w.message, hdist.metrics.ColumnKindWarning)]
    [[('flag', 'continuous: 2 distinct whole numbers')]]
    >>> m = hdist.Metric("heom", nominal=["flag"]).fit(df)  # declared: no warning
    >>> m.kinds_
    ['nominal', 'continuous']
    """

    def __init__(self, columns):
        self.columns = [tuple(nw) for nw in columns]
        advice = ("nominal=[...] or continuous=[...] (which also silences this warning), "
                  "add a mark of missing values to na_values, or drop an identifier")
        if len(self.columns) == 1:
            text = ("column %r (%s): its kind was inferred from values that may mean "
                    "otherwise; declare it %s" % (self.columns[0] + (advice,)))
        else:
            text = ("the kinds of %d columns were inferred from values that may mean "
                    "otherwise; declare each %s:\n%s"
                    % (len(self.columns), advice,
                       "\n".join("  %r (%s)" % nw for nw in self.columns)))
        super().__init__(text)

    def __reduce__(self):
        return type(self), (self.columns,)


class NotFittedError(ValueError, AttributeError, RuntimeError):
    """A metric, index or discretizer used before ``fit``.

    A ValueError and an AttributeError, like scikit-learn's ``NotFittedError`` (so
    ``check_is_fitted``-style handling works), and a RuntimeError for code that catches
    that."""


def is_missing_scalar(v) -> bool:
    """True for None, NaN (a float's or a ``decimal.Decimal``'s), pandas.NA, pandas.NaT,
    numpy NaT."""
    if v is None:
        return True
    if isinstance(v, float):
        return v != v
    if isinstance(v, decimal.Decimal):
        return v.is_nan()
    tn = type(v).__name__
    if tn in _MISSING_TYPE_NAMES:
        return True
    if isinstance(v, (np.floating,)):
        return bool(np.isnan(v))
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(v))
    return False


class _Column:
    """One input column, held column-wise: a name, a kind hint, and either float64
    ``values`` (numbers, ``NaN`` = missing) or a factorized form, int64 ``codes``
    (``-1`` = missing) into ``labels``, an object array of the distinct raw values.

    ``hint`` is "numeric", "bool", "object", "category", "ordered" or "bad:<why>".
    ``first_order`` says the labels are listed in order of first appearance (a
    factorization's output; a pandas ``category``'s labels follow its category order)."""

    __slots__ = ("name", "hint", "values", "codes", "labels", "ordered_categories",
                 "first_order")

    def __init__(self, name, hint, values=None, codes=None, labels=None,
                 ordered_categories=None, first_order=True):
        self.name = name
        self.hint = hint
        self.values = values
        self.codes = codes
        self.labels = labels
        self.ordered_categories = ordered_categories
        self.first_order = first_order

    def __len__(self):
        return len(self.values) if self.values is not None else \
            (len(self.codes) if self.codes is not None else 0)

    def factorized(self):
        """``(codes, labels)``, factorizing the float values on first use."""
        if self.codes is None:
            self.codes, self.labels = _factorize(self.values)
        return self.codes, self.labels

    def used(self):
        """Which labels occur in the column."""
        codes, labels = self.factorized()
        if self.first_order and self.hint != "ordered":
            return np.ones(len(labels), dtype=bool)
        return np.bincount(codes[codes >= 0], minlength=len(labels)) > 0


def _pandas():
    try:
        import pandas as pd
    except ImportError:      # pragma: no cover - pandas is optional
        return None
    return pd


def _objects(a):
    """An object ndarray of the elements of ``a`` (array, Index or extension array)."""
    out = np.empty(len(a), dtype=object)
    out[:] = list(a) if not isinstance(a, np.ndarray) else a
    return out


def _factorize(arr):
    """1-D array or Series -> ``(codes, labels)``: int64 codes (``-1`` for a missing
    value: None, NaN, pandas.NA, NaT) into an object array of the distinct values, listed
    in order of first appearance.  Hash-based and column-wise (``pandas.factorize``)."""
    pd = _pandas()
    if pd is not None:
        if hasattr(arr, "array"):          # a Series: factorize its array, no Index built
            arr = arr.array
            if type(arr).__name__ == "NumpyExtensionArray":
                arr = arr.to_numpy()
        try:
            if isinstance(arr, np.ndarray):
                codes, uniques = pd.factorize(arr, use_na_sentinel=True)
            else:
                codes, uniques = arr.factorize(use_na_sentinel=True)
        except TypeError:
            # a signaling NaN (Decimal('sNaN')) cannot be hashed: it is missing, as NaN
            quiet = _quiet_nans(arr)
            if quiet is None:
                raise
            codes, uniques = pd.factorize(quiet, use_na_sentinel=True)
        codes = np.asarray(codes, dtype=np.int64)
        labels = _objects(np.asarray(uniques, dtype=object))
    else:                    # pragma: no cover - without pandas
        arr = np.asarray(arr)
        if arr.dtype.kind in "iufb":
            vals = arr.astype(np.float64)
            miss = np.isnan(vals)
            u, first, inv = np.unique(vals[~miss], return_index=True, return_inverse=True)
            order = np.argsort(first, kind="stable")
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order))
            codes = np.full(len(vals), -1, dtype=np.int64)
            codes[~miss] = rank[inv]
            labels = _objects(u[order].astype(arr.dtype))
        else:
            seen = {}
            codes = np.empty(len(arr), dtype=np.int64)
            for i, v in enumerate(arr):
                if is_missing_scalar(v):
                    codes[i] = -1
                else:
                    codes[i] = seen.setdefault(v, len(seen))
            labels = _objects(list(seen))
    if labels.size:
        miss = _missing_labels(labels)
        if miss:             # missing by hdist's rule though not by the factorizer's
            lut = np.arange(len(labels) + 1, dtype=np.int64)
            lut[-1] = -1
            lut[miss] = -1
            codes = lut[codes]
    return codes, labels


def _quiet_nans(arr):
    """An object copy of ``arr`` with every signaling ``Decimal`` NaN made None (missing),
    or None when it holds none."""
    vals = np.asarray(arr, dtype=object)
    snan = [i for i, v in enumerate(vals) if isinstance(v, decimal.Decimal) and v.is_snan()]
    if not snan:
        return None
    vals = vals.copy()
    vals[snan] = None
    return vals


def missing_mask(values):
    """Boolean mask of the missing cells (None, NaN, pandas.NA, NaT) of a 1-D array,
    column-wise."""
    return _factorize(values)[0] < 0


def _missing_labels(labels):
    """Positions of missing values among distinct labels, by type first (text and
    integers are never missing; numbers are checked as one array)."""
    types = set(map(type, labels))
    if all(issubclass(t, (str, bytes, numbers.Integral, np.bool_)) for t in types):
        return []
    if all(issubclass(t, (numbers.Real, np.bool_)) for t in types):
        return np.flatnonzero(np.isnan(labels.astype(np.float64))).tolist()
    return [u for u, v in enumerate(labels) if is_missing_scalar(v)]


def _numpy_hint(arr):
    k = arr.dtype.kind
    if k in "iuf":
        return "numeric"
    if k == "b":
        return "bool"
    if k in "OUS":
        return "object"
    if k == "c":
        return "bad:complex"
    if k in "mM":
        return "bad:datetime"
    return "bad:dtype %s" % arr.dtype


def _numpy_column(name, a, h):
    if h == "numeric":
        return _Column(name, h, values=np.asarray(a, dtype=np.float64))
    if h in ("bool", "object"):
        codes, labels = _factorize(a if a.dtype.kind in "bO" else a.astype(object))
        return _Column(name, h, codes=codes, labels=labels)
    return _Column(name, h)


def _pandas_column(name, s):
    dt = s.dtype
    tname = type(dt).__name__
    if tname == "CategoricalDtype":
        codes = np.asarray(s.cat.codes, dtype=np.int64)
        labels = _objects(np.asarray(dt.categories, dtype=object))
        if dt.ordered:
            return _Column(name, "ordered", codes=codes, labels=labels,
                           ordered_categories=list(dt.categories), first_order=False)
        return _Column(name, "category", codes=codes, labels=labels, first_order=False)
    kind = getattr(dt, "kind", "O")
    if tname == "BooleanDtype" or kind == "b":
        codes, labels = _factorize(s)
        return _Column(name, "bool", codes=codes, labels=labels)
    if tname == "StringDtype" or kind in "OUS":
        col = _arrow_text(s.array)
        if col is not None:       # text stored in Arrow: encoded as an Arrow column
            return _arrow_column(name, col)
        codes, labels = _factorize(s)
        return _Column(name, "object", codes=codes, labels=labels)
    if kind in "iuf":
        return _Column(name, "numeric", values=s.to_numpy(dtype=np.float64, na_value=np.nan))
    if kind in "mM":
        return _Column(name, "bad:datetime")
    if kind == "c":
        return _Column(name, "bad:complex")
    return _Column(name, "bad:dtype %s" % dt)


def _arrow_column(name, col):
    """A pyarrow Array or ChunkedArray: numbers to float64, strings and booleans
    dictionary-encoded by Arrow."""
    import pyarrow as pa
    import pyarrow.types as pt
    t = col.type
    if pt.is_dictionary(t):
        col = col.cast(t.value_type)
        t = t.value_type
    if getattr(pt, "is_string_view", None) is not None and pt.is_string_view(t):
        col = col.cast(pa.large_string())
        t = col.type
    if pt.is_integer(t) or pt.is_floating(t):
        # float64 without nulls: an Array's to_numpy is a view (a ChunkedArray's, which
        # concatenates, takes no arguments before pyarrow 13)
        vals = col.cast(pa.float64()).fill_null(float("nan")).to_numpy()
        return _Column(name, "numeric", values=np.asarray(vals, dtype=np.float64))
    if pt.is_decimal(t):
        return _Column(name, "numeric", values=_arrow_decimals(col))
    if pt.is_boolean(t) or pt.is_string(t) or pt.is_large_string(t) or pt.is_binary(t) \
            or pt.is_large_binary(t):
        codes, labels = _arrow_codes(col)
        return _Column(name, "bool" if pt.is_boolean(t) else "object", codes=codes,
                       labels=labels)
    if pt.is_temporal(t):
        return _Column(name, "bad:datetime")
    return _Column(name, "bad:arrow type %s" % t)


def _arrow_decimals(col):
    """An Arrow decimal column (``decimal128`` / ``decimal256``, as databases' NUMERIC
    columns arrive) as float64, each value the float nearest its exact value, as
    ``float(decimal.Decimal)`` gives it (NaN for null).  Up to 15 digits the unscaled
    integer and the power of ten are exact floats, so one IEEE division (or product)
    rounds correctly; longer decimals go through Python's ``Decimal``, once per distinct
    value."""
    import pyarrow as pa
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    t, n, off = col.type, len(col), col.offset
    if n and t.precision <= 15 and abs(t.scale) <= 22:
        # the low 64 bits of each little-endian two's complement value: the whole value,
        # sign included, below 10**15
        words = t.bit_width // 64
        data = np.frombuffer(col.buffers()[1], dtype=np.int64, count=(off + n) * words)
        vals = data[off * words::words].astype(np.float64)
        if t.scale >= 0:
            vals /= 10.0 ** t.scale
        else:
            vals *= 10.0 ** -t.scale
    else:
        codes, labels = _arrow_codes(col)
        lut = np.append(np.array([float(v) for v in labels], dtype=np.float64), np.nan)
        return lut[codes]
    if col.null_count:
        bits = np.unpackbits(np.frombuffer(col.buffers()[0], dtype=np.uint8),
                             count=off + n, bitorder="little")[off:]
        vals[bits == 0] = np.nan
    return vals


def _arrow_codes(col):
    """A pyarrow Array or ChunkedArray dictionary-encoded by Arrow: int64 codes (-1 for
    null) into an object array of the distinct values, in order of first appearance.  The
    codes are read from the indices' buffers and the nulls set from their validity bits
    (filling the nulls in Arrow first costs a pass and a copy of its own)."""
    import pyarrow as pa
    if isinstance(col, pa.ChunkedArray) and (col.num_chunks < 2 or len(col) == 0):
        col = col.chunk(0) if col.num_chunks == 1 else pa.array([], type=col.type)
    # several chunks are encoded as they are and their indices joined: joining the values
    # first would fail past 2 GiB of text with 32-bit offsets
    enc = col.dictionary_encode()
    if isinstance(enc, pa.ChunkedArray):
        enc = enc.combine_chunks()
    idx = enc.indices
    n, off = len(idx), idx.offset
    if n == 0 or idx.type != pa.int32():
        codes = np.asarray(idx.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
    else:
        valid, data = idx.buffers()
        codes = np.frombuffer(data, dtype=np.int32, count=off + n)[off:].astype(np.int64)
        if idx.null_count:
            bits = np.unpackbits(np.frombuffer(valid, dtype=np.uint8), count=off + n,
                                 bitorder="little")[off:]
            codes[bits == 0] = -1
    return codes, _objects(enc.dictionary.to_pylist())


def _arrow_text(arr):
    """The Arrow array behind a pandas array of text stored in Arrow (``str`` in pandas 3,
    ``string[pyarrow]``, ``ArrowDtype(pa.string())``), which :func:`_arrow_column` encodes
    (the same codes and labels as :func:`_factorize`, without pandas' own pass over the
    nulls); None for any other array."""
    if not type(arr).__name__.startswith("Arrow") or not hasattr(arr, "__arrow_array__"):
        return None
    import pyarrow.types as pt
    col = arr.__arrow_array__()
    t = col.type
    is_view = getattr(pt, "is_string_view", None)
    if pt.is_string(t) or pt.is_large_string(t) or (is_view is not None and is_view(t)):
        return col
    return None


def _polars_column(name, s):
    try:
        import pyarrow  # noqa: F401  (polars hands its columns over through Arrow)
    except ImportError:      # pragma: no cover - without pyarrow
        return _polars_column_plain(name, s)
    return _arrow_column(name, s.to_arrow())


def _polars_column_plain(name, s):  # pragma: no cover - without pyarrow
    dt = str(s.dtype)
    if dt.startswith(("Int", "UInt", "Float")):
        return _Column(name, "numeric", values=s.cast(float).fill_null(float("nan"))
                       .to_numpy().astype(np.float64))
    if dt.startswith(("Boolean", "String", "Utf8", "Categorical", "Enum")):
        vals = s.to_list() if dt.startswith(("Boolean", "String")) else s.cast(str).to_list()
        codes, labels = _factorize(np.array(vals, dtype=object))
        return _Column(name, "bool" if dt.startswith("Boolean") else "object", codes=codes,
                       labels=labels)
    if dt.startswith(("Date", "Datetime", "Duration", "Time")):
        return _Column(name, "bad:datetime")
    return _Column(name, "bad:dtype %s" % dt)


def check_unique_names(names, what="X"):
    """A ValueError naming the duplicated column names of a table (compared as text, as
    hdist names columns), if any."""
    text = [str(c) for c in names]
    if len(set(text)) == len(text):
        return
    counts = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    dup = ", ".join("%r (%d times)" % (c, k) for c, k in counts.items() if k > 1)
    raise ValueError("%s has duplicated column names: %s; columns are matched by name, so "
                     "each needs its own: rename them (X.columns = [...]) or drop the copies "
                     "(X.loc[:, ~X.columns.duplicated()])" % (what, dup))


def table_names(X):
    """The column names of a pandas DataFrame or a pyarrow Table, else None."""
    mod = type(X).__module__.split(".")[0]
    if mod == "pandas" and type(X).__name__ == "DataFrame":
        return list(X.columns)
    if mod == "pyarrow" and hasattr(X, "column_names"):
        return list(X.column_names)
    return None


def _is_records(X):
    """Whether ``X`` is a non-empty list (or tuple) of dicts, one per row."""
    import collections.abc
    return isinstance(X, (list, tuple)) and len(X) > 0 and \
        all(isinstance(r, collections.abc.Mapping) for r in X)


def check_table_form(X, what="X"):
    """Refuse, by name, two forms of ``X`` that are no table: a single dict (one record:
    a TypeError saying to wrap it in a list, as a list of dicts is read as records) and an
    empty list or tuple (a ValueError: no rows)."""
    import collections.abc
    if type(X).__module__.split(".")[0] == "scipy":     # (a DOK sparse matrix is a dict)
        return
    if isinstance(X, collections.abc.Mapping):
        raise TypeError("%s is a single dict; a table of records is a list of dicts, one "
                        "per row: wrap one record in a list ([%s])" % (what, what))
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError("%s is an empty %s: 0 rows; give at least one row"
                         % (what, type(X).__name__))


def _record_keys(rows):
    """The keys of a list of dicts, in order of first appearance."""
    return list(dict.fromkeys(k for r in rows for k in r))


def _records(rows, what):
    """A list of dicts as a table, as ``pandas.DataFrame(rows)`` reads it: the keys are
    the column names, in order of first appearance; a key a row lacks is missing there."""
    keys = _record_keys(rows)
    names = [str(k) for k in keys]
    check_unique_names(names, what)
    cols = []
    for k, name in zip(keys, names):
        a = np.empty(len(rows), dtype=object)
        a[:] = [r.get(k) for r in rows]
        cols.append(_numpy_column(name, a, "object"))
    return names, cols, True


def records_frame(X):
    """A list of dicts (one per row) as a pandas DataFrame, for the estimators that work
    on frames; None for anything else."""
    if not _is_records(X):
        return None
    import pandas as pd
    check_unique_names([str(k) for k in _record_keys(X)])
    return pd.DataFrame(list(X))


def to_columns(X, what="X"):
    """Split any supported table into ``(names, columns, by_name)``, column-wise."""
    mod = type(X).__module__.split(".")[0]
    if mod == "pandas" and hasattr(X, "columns"):
        if hasattr(X, "iloc") and not hasattr(X, "to_frame") or type(X).__name__ == "DataFrame":
            names = list(X.columns)
            check_unique_names(names, what)
            # (items(): a column a few times faster than X.iloc[:, i], which the
            # per-call encoding of a short query frame would spend most of its time on)
            cols = [_pandas_column(str(c), s) for c, s in X.items()]
            return [str(c) for c in names], cols, True
    if mod == "pandas" and type(X).__name__ == "Series":
        raise ValueError("%s must be 2-D (a table), got a pandas Series; use "
                         "series.to_frame()" % what)
    if mod == "polars" and hasattr(X, "get_column"):
        names = list(X.columns)
        return [str(c) for c in names], [_polars_column(n, X.get_column(n)) for n in names], True
    if mod == "pyarrow" and hasattr(X, "column_names"):
        names = list(X.column_names)
        check_unique_names(names, what)
        return names, [_arrow_column(n, X.column(n)) for n in names], True
    if isinstance(X, np.ndarray) and X.dtype.names is not None:
        if X.ndim != 1:
            raise ValueError("%s: a structured array must be 1-D, got %d-D" % (what, X.ndim))
        names = list(X.dtype.names)
        cols = []
        for n in names:
            a = np.asarray(X[n])
            cols.append(_numpy_column(n, a, _numpy_hint(a)))
        return names, cols, True
    if isinstance(X, (str, bytes)) or np.isscalar(X) or X is None:
        raise ValueError("%s must be a 2-D table, got %s" % (what, type(X).__name__))
    if mod == "scipy" and hasattr(X, "tocsr"):
        raise TypeError("%s is a scipy sparse matrix; sparse input is not supported, pass a "
                        "dense table (X.toarray())" % what)
    check_table_form(X, what)
    if _is_records(X):
        return _records(X, what)
    if not isinstance(X, np.ndarray):
        rows = X
        try:
            X = np.asarray(rows)
        except Exception:
            X = np.asarray(rows, dtype=object)
        if X.dtype.kind in "US":
            # rows mixing strings and numbers: numpy would turn every number into text
            X = np.asarray(rows, dtype=object)
    if X.ndim != 2:
        raise ValueError("%s must be 2-D, got an array with %d dimension(s) (shape %s); "
                         "reshape a single row with x.reshape(1, -1)" % (what, X.ndim, X.shape))
    h = _numpy_hint(X)
    names = [str(i) for i in range(X.shape[1])]
    return names, [_numpy_column(names[i], X[:, i], h) for i in range(X.shape[1])], False


def _drop_tokens(c, tokens):
    """Make the labels of column ``c`` that are missing-value text (``tokens``, spaces
    around ignored) missing: their codes become -1 and they leave ``labels``.  An ordered
    categorical keeps its declared categories."""
    if not tokens or c.codes is None or c.hint == "ordered":
        return
    hit = [u for u, v in enumerate(c.labels) if isinstance(v, str) and v.strip() in tokens]
    if not hit:
        return
    keep = np.ones(len(c.labels), dtype=bool)
    keep[hit] = False
    lut = np.full(len(c.labels) + 1, -1, dtype=np.int64)
    lut[:-1][keep] = np.arange(int(keep.sum()))
    c.codes = lut[c.codes]
    c.labels = c.labels[keep]


def text_number(v):
    """The finite number a text spells, as tables spell numbers.

    Text that Python's ``float`` reads as a special value (``'nan'``, ``'NAN'``,
    ``'inf'``, ``'-Infinity'``, ``'1e999'``) spells no number: it is missing only when
    ``na_values`` lists it (docs/metrics.md, section 1).  Digits grouped with ``_``
    (``'1_000'``, which ``float`` reads) spell no number either.

    Parameters
    ----------
    v : str
        The text, spaces around it allowed.

    Returns
    -------
    float or None
        The finite float ``v`` spells, or None.

    Examples
    --------
    >>> text_number(" 1.5e3 "), text_number("-2"), text_number("nan"), text_number("1_0")
    (1500.0, -2.0, None, None)
    """
    if "_" in v:            # Python's float() reads '1_000'; a table's number does not
        return None
    try:
        f = float(v)
    except ValueError:
        return None
    return f if math.isfinite(f) else None


def _label_numbers(labels):
    """``(floats, bad)``: each label as a float (NaN where missing; booleans as 0 and 1,
    ``decimal.Decimal`` as the nearest float, text that spells a finite number as that
    number) and the position of the first label that is no number (-1 when none)."""
    out = np.full(len(labels), np.nan)
    types = set(map(type, labels))
    if all(issubclass(t, (numbers.Real, np.bool_)) for t in types):
        out[:] = labels.astype(np.float64)     # numbers only: one array conversion
        return out, -1
    if types <= {str}:
        try:                                   # text only: one conversion, then a check
            out[:] = labels.astype(np.float64)
            if np.isfinite(out).all() and not any("_" in v for v in labels):
                return out, -1
        except ValueError:
            pass
    for u, v in enumerate(labels):
        if is_missing_scalar(v):
            continue
        if isinstance(v, (bool, np.bool_, numbers.Real, decimal.Decimal)):
            out[u] = float(v)
        elif isinstance(v, str) and text_number(v) is not None:
            out[u] = text_number(v)
        else:
            return out, u
    return out, -1


def _labels_to_float(labels, codes, name, declared=False):
    """A factorized column of a continuous attribute -> float64 (text spelling a number
    read as that number), or a TypeError naming the column and the first value that is
    no number.  ``declared``: named in ``continuous=`` at fit (else: continuous in fit,
    queried now)."""
    vals, bad = _label_numbers(labels)
    if bad >= 0:
        v = labels[bad]
        if declared:
            raise TypeError(
                "column %r is declared continuous but holds the value %r, which is not a "
                "number; convert the column first (pandas.to_numeric(column, "
                "errors='coerce') makes such values missing) or leave it out of "
                "continuous=" % (name, v))
        raise TypeError(
            "column %r was continuous in fit but holds the value %r, which is not a "
            "number; convert the column first (pandas.to_numeric(column, errors='coerce') "
            "makes such values missing)" % (name, v))
    lut = np.append(vals, np.nan)
    return lut[codes]


def _check_finite(arr, name):
    if np.isinf(arr).any():
        raise ValueError("column %r holds an infinite value; continuous values must be "
                         "finite (use NaN for missing)" % name)


def norm_key(v):
    """The key a nominal value is matched by.

    numpy scalars become Python scalars and a whole float becomes an int, so that
    ``np.int64(1)``, ``1.0`` and ``1`` are one value; anything else is its own key.

    Parameters
    ----------
    v : hashable
        A nominal value (a label).

    Returns
    -------
    hashable
        Its key.

    Examples
    --------
    >>> import numpy as np
    >>> norm_key(np.int64(1)), norm_key(2.0), norm_key(2.5), norm_key("a")
    (1, 2, 2.5, 'a')
    """
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _sorted_keys(keys):
    try:
        return sorted(keys)
    except TypeError:
        # mixed types: order by type name, then value text, for a stable order
        return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


def _as_number(key):
    """The number a label spells (``'10'`` -> 10, ``'1.0'`` -> 1, ``10.0`` -> 10), or None
    for a label that is not a finite number (booleans are not numbers here)."""
    if isinstance(key, (bool, np.bool_)):
        return None
    if isinstance(key, (numbers.Real, decimal.Decimal)):
        f = float(key)
        return norm_key(key) if math.isfinite(f) else None
    if isinstance(key, str):
        s = key.strip()
        try:
            return int(s)
        except ValueError:
            pass
        try:
            f = float(s)
        except ValueError:
            return None
        return norm_key(f) if f == f and abs(f) != float("inf") else None
    return None


#: packages whose frames a warning about the user's data passes over: hdist, and the
#: libraries that call an estimator's ``fit`` for the user (``fit_transform``,
#: ``Pipeline``, searches, ``cross_validate``)
_CALLING_PACKAGES = ("hdist", "sklearn", "joblib")


def _package_dirs():
    """The folders of the packages of ``_CALLING_PACKAGES`` that are imported."""
    import os
    import sys
    dirs = []
    for name in _CALLING_PACKAGES:
        mod = sys.modules.get(name)
        path = getattr(mod, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)


def _caller_level():
    """``stacklevel`` (for a ``warnings.warn`` in the function that calls this) of the
    first frame outside hdist and the libraries that call ``fit`` for the user, walking
    the frames outward: the warning names the user's line, from ``fit``,
    ``fit_transform``, ``fit_predict``, a pipeline or a search alike."""
    import os
    import sys
    dirs = _package_dirs()
    f, level = sys._getframe(2), 2
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(dirs):
        f, level = f.f_back, level + 1
    return level


def infer_kind(c):
    """The kind the data give column ``c`` (missing-value text already removed): a
    numeric dtype, or text and objects whose every observed value is a number or spells
    one (booleans are not numbers), is continuous; an ordered categorical is continuous
    on its positions; text, categories, booleans and a column with no observed value of
    its own type are nominal.  Returns ``(kind, floats)``: the values as float64 when an
    object column was read as numbers, else None."""
    if c.hint in ("numeric", "ordered"):
        return CONTINUOUS, None
    if c.hint != "object":
        return NOMINAL, None
    codes, labels = c.factorized()
    if not labels.size or any(isinstance(v, (bool, np.bool_)) for v in labels):
        return NOMINAL, None
    vals, bad = _label_numbers(labels)
    if bad >= 0 or np.isnan(vals).all():
        return NOMINAL, None
    return CONTINUOUS, np.append(vals, np.nan)[codes]


def _code_like(c, vals, w=None):
    """Why a whole-number column inferred continuous looks like codes ("" if not):
    ``FEW_CODES`` or fewer distinct values among at least twice as many rows, text with
    leading zeros (``'02139'``), a different number in every row over a span under
    twice the rows (an identifier), or a name whose last word marks codes or identifiers
    (:func:`_code_word`: the values alone cannot tell census-income's 52
    ``detailed_industry_recode`` codes from its 53 ``weeks_worked_in_year``, nor an
    ``Id`` of large sample numbers from a column of amounts).  ``w``: the rows' weights
    (a row of weight m counts as m rows; None: 1 each)."""
    ok = ~np.isnan(vals)
    if w is not None:
        ok &= w > 0
    obs = vals[ok]
    if not obs.size or not np.array_equal(obs, np.floor(obs)):
        return ""
    if c.hint == "object" and any(
            isinstance(v, str) and len(v.strip().lstrip("+-")) > 1
            and v.strip().lstrip("+-")[0] == "0" and v.strip().lstrip("+-")[1].isdigit()
            for v in c.labels):
        return "continuous: numbers written with leading zeros"
    u, inv = np.unique(obs, return_inverse=True)
    counts = np.bincount(inv.ravel(), weights=None if w is None else w[ok])
    distinct, rows = len(u), float(counts.sum())
    if distinct <= FEW_CODES and rows >= 2 * distinct:
        return "continuous: %d distinct whole numbers" % distinct
    if rows >= ID_MIN_ROWS and counts.max() <= 1 and u[-1] - u[0] < 2 * rows:
        return "continuous: a different whole number in every row, like an identifier"
    word = _code_word(c.name)
    if word:
        return "continuous: whole numbers in a column named like codes or identifiers " \
               "(%r)" % word
    return ""


def _code_word(name):
    """The last word of a column name when it marks codes or identifiers, else "": the
    word ``id`` / ``ids``, or one ending in ``code`` / ``codes`` (``Id``, ``customerID``,
    ``patient_id``, ``detailed_industry_recode``, ``zipcode``, ``AreaCode``).  Words are
    split at anything but letters and at case changes (``paid`` and ``valid`` are no
    ``id``)."""
    words = re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", str(name))
    if not words:
        return ""
    last = words[-1].lower()
    return words[-1] if last in CODE_WORDS or last.endswith(CODE_SUFFIXES) else ""


#: a column inferred nominal whose labels are numbers but for at most this many distinct
#: texts draws a ``ColumnKindWarning`` (those texts may mark missing values)
FEW_TEXTS = 2


def _stray_text(c):
    """Why a column inferred nominal looks like numbers ("" if not): at least three
    distinct numbers among its labels and no more than ``FEW_TEXTS`` other texts."""
    if c.hint != "object" or c.codes is None:
        return ""
    labels = c.labels
    texts = [v for v in labels if not (isinstance(v, str) and text_number(v) is not None)
             and not (isinstance(v, (numbers.Real, decimal.Decimal))
                      and not isinstance(v, (bool, np.bool_)))]
    if not texts or len(texts) > FEW_TEXTS or len(labels) - len(texts) < 3:
        return ""
    return "nominal: numbers, and the text %s" % " and ".join(repr(v) for v in texts)


#: text of a number written with thousands separators: ``'9,880.0'``, ``'-1,234,567'``
_THOUSANDS = re.compile(r"\s*[+-]?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]*)?\s*$")


#: the remedy the warning about numbers with thousands separators gives
THOUSANDS_REMEDY = "remove them (column.str.replace(',', '')) to read the column as numbers"


def thousands_text(values):
    """The first of ``values`` written as a number with thousands separators
    (``'9,880.0'``) when every value is a number or the text of one, else None."""
    first = None
    for v in values:
        if isinstance(v, str) and _THOUSANDS.match(v):
            first = v if first is None else first
        elif not (isinstance(v, str) and text_number(v) is not None
                  or isinstance(v, (numbers.Real, decimal.Decimal))
                  and not isinstance(v, (bool, np.bool_))):
            return None
    return first


def _thousands(c):
    """Why a column inferred nominal looks like numbers written with thousands
    separators ("" if not): every label a number or such a text, one at least such."""
    if c.hint != "object" or c.codes is None:
        return ""
    first = thousands_text(c.labels)
    if first is None:
        return ""
    return "nominal: numbers written with thousands separators (%r); %s" \
        % (first, THOUSANDS_REMEDY)


def _column_set(spec, names, param):
    """The positions a ``nominal=`` / ``continuous=`` value names: a set, or the words
    "all" / "rest"; a boolean mask is returned as ``("mask", positions)``."""
    m = len(names)
    if spec is None:
        return set()
    if isinstance(spec, str):
        if spec in ("all", "rest") and spec not in names:
            return spec
        spec = [spec]
    spec = list(spec) if not isinstance(spec, np.ndarray) else list(spec.tolist())
    if spec and all(isinstance(v, (bool, np.bool_)) for v in spec):
        if len(spec) != m:
            raise ValueError("%s: a boolean mask must have one entry per column (%d), got %d"
                             % (param, m, len(spec)))
        return ("mask", {i for i, v in enumerate(spec) if v})
    out = set()
    for v in spec:
        if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
            i = int(v)
            if i < -m or i >= m:
                raise ValueError("%s: position %d is out of range for %d columns"
                                 % (param, i, m))
            out.add(i % m)
        elif isinstance(v, str):
            if v not in names:
                raise ValueError("%s: no column named %r (columns: %r)" % (param, v, names))
            out.add(names.index(v))
        else:
            raise TypeError("%s: entries must be column names or positions, got %r"
                            % (param, v))
    return out


def declared_kinds(nominal, continuous, names):
    """``{position: kind}`` of the columns ``nominal=`` and ``continuous=`` name (the
    others are inferred): lists of names or positions override those columns; ``"all"``
    names every column; ``"rest"`` every column the other parameter does not name (so
    ``nominal=[...], continuous="rest"`` is the exact set of nominal columns); a boolean
    mask ``nominal=[True, False, ...]`` gives every column's kind."""
    m = len(names)
    nom = _column_set(nominal, names, "nominal")
    con = _column_set(continuous, names, "continuous")
    if isinstance(nom, tuple) or isinstance(con, tuple):
        mask, other, which = (nom, con, "nominal") if isinstance(nom, tuple) \
            else (con, nom, "continuous")
        if other != set():
            raise ValueError("%s: a boolean mask gives every column's kind; leave the other "
                             "parameter out" % which)
        kind = NOMINAL if which == "nominal" else CONTINUOUS
        flip = CONTINUOUS if kind == NOMINAL else NOMINAL
        return {i: (kind if i in mask[1] else flip) for i in range(m)}
    if nom == con and nom in ("all", "rest"):
        raise ValueError("nominal=%r and continuous=%r leave no column to either kind"
                         % (nominal, continuous))
    for word, mine, other, name in (("all", nom, con, "nominal"),
                                    ("all", con, nom, "continuous")):
        if mine == word and other not in (set(), None):
            raise ValueError("%s='all' names every column; continuous= and nominal= cannot "
                             "both be given with it" % name)
    out = {}
    if nom == "all":
        return {i: NOMINAL for i in range(m)}
    if con == "all":
        return {i: CONTINUOUS for i in range(m)}
    both = sorted(nom & con) if isinstance(nom, set) and isinstance(con, set) else []
    if both:
        raise ValueError("column(s) %s are named both in nominal= and in continuous="
                         % ", ".join(repr(names[i]) for i in both))
    if nom == "rest":
        out = {i: NOMINAL for i in range(m) if i not in con}
    elif con == "rest":
        out = {i: CONTINUOUS for i in range(m) if i not in nom}
    for i in (nom if isinstance(nom, set) else ()):
        out[i] = NOMINAL
    for i in (con if isinstance(con, set) else ()):
        out[i] = CONTINUOUS
    return out


class Schema:
    """Kinds and categories of the columns seen in ``fit``; frozen afterwards.

    Parameters
    ----------
    nominal, continuous : None, "all", "rest", list of names or positions, or boolean mask
        Columns to take as nominal / continuous whatever their values (docs/metrics.md,
        section 1).  The columns neither names are inferred (:func:`infer_kind`): a
        numeric dtype, or text and objects whose every observed value is a number or
        spells one, is continuous; text, categories and booleans are nominal; an ordered
        categorical is continuous on its positions (nominal on its labels when named in
        ``nominal``).  ``"all"``: every column; ``"rest"``: every column the other
        parameter does not name (``nominal=[...], continuous="rest"``: exactly these
        are nominal).  A boolean mask gives every column's kind (True: that kind).
    na_values : None or list of str
        Text read as a missing value in every column, at fit and at predict (spaces
        around ignored).  None: :data:`NA_VALUES`; ``[]``: none.

    A whole-number column inferred continuous whose values look like codes
    (:func:`_code_like`) draws one :class:`ColumnKindWarning` per ``fit``, naming every
    such column.

    Values are matched to the categories seen in ``fit`` by label, column-wise: a query
    value equal to a fitted label takes its code; a number and a text spelling the same
    number (``10`` and ``'10'``, ``1.0`` and ``'1'``) match when exactly one fitted label
    does (several -> ValueError naming the column); other values are unseen.  Text in a
    continuous column is read as the number it spells; other text is a TypeError naming
    the column.
    """

    #: ``encode`` warns when more than half of a nominal column's observed query values
    #: are unseen, among at least this many observed values
    unseen_warn_min = 10

    def __init__(self, nominal=None, continuous=None, na_values=None):
        self.nominal = nominal
        self.continuous = continuous
        self.na_values = na_values

    # -- fit ---------------------------------------------------------------
    def fit(self, X, allow_empty=False):
        """Learn kinds and categories.  A column with no observed value is an error
        unless ``allow_empty`` (then it has no category and no observed value)."""
        self._fit_columns(X, allow_empty)
        return self

    def fit_encode(self, X, allow_empty=False, sample_weight=None):
        """``fit(X)`` then ``encode(X)``, reading ``X`` once.  ``sample_weight`` (None,
        ``[n]`` or per-column ``[n, m]``) counts the rows for the code-like check."""
        cols = self._fit_columns(X, allow_empty, sample_weight)
        return self._encode_columns(cols, None, "X", warn=False)

    def _tokens(self):
        na = self.na_values
        if na is None:
            return frozenset(NA_VALUES)
        if isinstance(na, str) or not all(isinstance(v, str) for v in na):
            raise TypeError("na_values must be a list of strings (the text read as "
                            "missing), got %r" % (na,))
        return frozenset(v.strip() for v in na)

    def _fit_columns(self, X, allow_empty, sample_weight=None):
        tokens = self._tokens()
        names, cols, by_name = to_columns(X)
        for c in cols:
            if c.hint.startswith("bad:"):
                raise TypeError("column %r has an unsupported type (%s); hdist takes "
                                "numbers, strings, categories and booleans"
                                % (c.name, c.hint[4:]))
        if not cols:
            raise ValueError("X has no columns")
        if len(cols[0]) == 0:
            raise ValueError("X has 0 rows; at least 2 are needed to fit")
        declared = declared_kinds(self.nominal, self.continuous, names)
        self.names_ = names
        self.by_name_ = by_name
        self.na_values_ = tokens
        self.kinds_ = []
        self.categories_ = []
        self._index = []
        self._alt = {}
        doubtful = []
        for i, c in enumerate(cols):
            _drop_tokens(c, tokens)
            kind, vals = declared.get(i), None
            if kind is None:
                kind, vals = infer_kind(c)
            if kind == NOMINAL:
                why = "" if i in declared else (_thousands(c) or _stray_text(c))
                if why:
                    doubtful.append((c.name, why))
                self.kinds_.append(NOMINAL)
                cats, index = self._learn_categories(c)
                if not cats and not allow_empty:
                    raise ValueError("column %r has no observed value in the training data"
                                     % c.name)
                self.categories_.append(cats)
                self._index.append(index)
                continue
            self.kinds_.append(CONTINUOUS)
            if c.hint == "ordered":
                vals = c.codes.astype(np.float64)
                vals[c.codes < 0] = np.nan
            elif c.hint == "numeric":
                vals = c.values
            elif vals is None:
                vals = _labels_to_float(c.labels, c.codes, c.name, declared=True)
            _check_finite(vals, c.name)
            if np.isnan(vals).all() and not allow_empty:
                raise ValueError("column %r has no observed value in the training data"
                                 % c.name)
            if i not in declared and c.hint != "ordered":
                why = _code_like(c, vals, column_weights(sample_weight, i))
                if why:
                    doubtful.append((c.name, why))
            if c.hint not in ("numeric", "ordered"):
                # read as numbers once: encoding this table again needs no parsing
                cols[i] = _Column(c.name, "numeric", values=vals)
            self.categories_.append(c.ordered_categories)
            self._index.append(None)
        self.n_features_in_ = len(names)
        self.continuous_ = np.array([k == CONTINUOUS for k in self.kinds_], dtype=bool)
        if doubtful:
            import warnings
            warnings.warn(ColumnKindWarning(doubtful), stacklevel=_caller_level())
        return cols

    @staticmethod
    def _learn_categories(c):
        """Sorted distinct observed values (one Python step per distinct value)."""
        if c.values is not None:
            _check_finite(c.values, c.name)
        codes, labels = c.factorized()
        keys = set()
        for v in labels[c.used()]:
            if is_missing_scalar(v):
                continue
            try:
                keys.add(norm_key(v))
            except TypeError:
                raise TypeError("column %r holds an unhashable value %r" % (c.name, v))
        cats = _sorted_keys(keys)
        return cats, {k: i for i, k in enumerate(cats)}

    # -- encode ------------------------------------------------------------
    def check_fitted(self):
        if not hasattr(self, "names_"):
            raise RuntimeError("schema is not fitted")

    def encode(self, X, unseen=None, what="X"):
        """Encode a table with the fitted kinds.

        Columns are matched as scikit-learn matches ``feature_names_in_``: a named table
        (DataFrame, Arrow, structured array) queried on a metric fitted on a named table
        must have the fitted names in the fitted order (a missing, extra or reordered
        column is a ValueError naming the columns); otherwise by position.

        Returns ``(cont, nom)``: float64 ``[n, m_continuous]`` and int64
        ``[n, m_nominal]``.  ``unseen`` is a list (one dict per nominal column) shared by
        the batches of one operation so unseen values keep one code.
        """
        names, cols, by_name = to_columns(X, what)
        m = self.n_features_in_
        if by_name and self.by_name_:
            missing = [n for n in self.names_ if n not in names]
            extra = [n for n in names if n not in self.names_]
            if missing:
                raise ValueError("%s is missing the column(s) %r seen in fit" % (what, missing))
            if extra:
                raise ValueError("%s has column(s) %r not seen in fit" % (what, extra))
            if names != self.names_:
                raise ValueError(
                    "%s has the columns seen in fit in another order (%r; fit: %r); tables "
                    "are matched by name and order, as scikit-learn's estimators match "
                    "feature_names_in_: select them in the fitted order, e.g. "
                    "%s[metric.feature_names_in_]" % (what, names, self.names_, what))
        else:
            if len(cols) != m:
                raise ValueError("%s has %d columns; the metric was fitted on %d"
                                 % (what, len(cols), m))
        for c in cols:
            _drop_tokens(c, self.na_values_)
        return self._encode_columns(cols, unseen, what)

    def _encode_columns(self, cols, unseen, what, warn=True):
        m = self.n_features_in_
        n = len(cols[0])
        nc = int(self.continuous_.sum())
        # filled attribute by attribute (contiguous writes), transposed once at the end
        cont = np.empty((nc, n), dtype=np.float64)
        nom = np.empty((m - nc, n), dtype=np.int64)
        if unseen is None:
            unseen = [dict() for _ in range(m - nc)]
        ic = inom = 0
        for j, c in enumerate(cols):
            name = self.names_[j]
            if c.hint.startswith("bad:"):
                raise TypeError("column %r has an unsupported type (%s)" % (name, c.hint[4:]))
            if self.kinds_[j] == CONTINUOUS:
                vals = self._continuous(c, j)
                _check_finite(vals, name)
                cont[ic] = vals
                ic += 1
            else:
                nom[inom] = self._encode_nominal(c, j, unseen[inom], what, warn)
                inom += 1
        return np.ascontiguousarray(cont.T), np.ascontiguousarray(nom.T)

    def _continuous(self, c, j):
        """A column of a continuous attribute as float64; an ordered categorical's labels
        map through the categories seen in ``fit`` whatever form they come in."""
        cats = self.categories_[j]
        name = self.names_[j]
        if cats is None:
            if c.hint == "numeric":
                return c.values
            if c.hint == "ordered":   # numeric in fit: the codes, as before
                vals = c.codes.astype(np.float64)
                vals[c.codes < 0] = np.nan
                return vals
            return _labels_to_float(c.labels, c.codes, name)     # numbers as text too
        if c.hint == "ordered" and list(c.ordered_categories) == list(cats):
            vals = c.codes.astype(np.float64)
            vals[c.codes < 0] = np.nan
            return vals
        cache = self.__dict__.setdefault("_alt", {})
        index = cache.get(("pos", j))
        if index is None:
            index = cache[("pos", j)] = {norm_key(v): i for i, v in enumerate(cats)}
        codes, labels = c.factorized()
        used = c.used()
        lut = np.full(len(labels) + 1, np.nan)
        for u, v in enumerate(labels):
            if not used[u] or is_missing_scalar(v):
                continue
            code = self._lookup(j, index, v, "pos")
            if code is None:
                raise ValueError("column %r: ordered category %r was not seen in fit "
                                 "(its categories: %r)" % (name, v, list(cats)))
            lut[u] = code
        return lut[codes]

    def _lookup(self, j, index, v, tag):
        """The fitted code of the label ``v``, or None when unseen."""
        key = norm_key(v)
        try:
            code = index.get(key)
        except TypeError:
            raise TypeError("column %r holds an unhashable value %r" % (self.names_[j], v))
        if code is not None:
            return code
        num = _as_number(key)
        if num is None:
            return None
        alt = self._alt_index(j, index, tag)
        cands = alt[isinstance(key, str)].get(num)
        if cands is None:
            return None
        if len(cands) > 1:
            raise ValueError("column %r: the value %r matches several labels seen in fit "
                             "(%s); pass the labels as they were in fit"
                             % (self.names_[j], v, ", ".join(repr(k) for k, _ in cands)))
        return cands[0][1]

    def _alt_index(self, j, index, tag):
        """For matching across types: ``{False: number -> [(text label, code)],
        True: number -> [(numeric label, code)]}`` (a number query looks among the text
        labels, a text query among the numeric ones)."""
        alt = self.__dict__.setdefault("_alt", {})
        hit = alt.get((tag, j, "alt"))
        if hit is None:
            hit = {False: {}, True: {}}
            for k, code in index.items():
                num = _as_number(k)
                if num is None:
                    continue
                hit[not isinstance(k, str)].setdefault(num, []).append((k, code))
            alt[(tag, j, "alt")] = hit
        return hit

    def _encode_nominal(self, c, j, unseen, what="X", warn=True):
        index = self._index[j]
        V = len(index)
        name = self.names_[j]
        codes, labels = c.factorized()
        if c.values is not None:
            _check_finite(c.values, name)
        lut = np.empty(len(labels) + 1, dtype=np.int64)
        lut[-1] = -1
        new = []
        for u, v in enumerate(labels):
            if is_missing_scalar(v):
                lut[u] = -1
                continue
            code = self._lookup(j, index, v, "nom")
            if code is None:
                new.append(u)
                lut[u] = -1
            else:
                lut[u] = code
        if new:
            # unseen values get codes V, V+1, ... in order of first appearance
            n = len(codes)
            if c.first_order:
                first = np.arange(len(labels))
            else:
                first = np.full(len(labels), n, dtype=np.intp)
                ok = codes >= 0
                np.minimum.at(first, codes[ok], np.flatnonzero(ok))
            for u in sorted((u for u in new if first[u] < n), key=lambda u: first[u]):
                lut[u] = unseen.setdefault(norm_key(labels[u]), V + len(unseen))
        out = lut[codes]
        if new and warn:
            self._warn_unseen(out, V, name, what)
        return out

    def _warn_unseen(self, out, V, name, what):
        observed = int(np.count_nonzero(out >= 0))
        n_unseen = int(np.count_nonzero(out >= V))
        if observed >= self.unseen_warn_min and 2 * n_unseen > observed:
            import warnings
            warnings.warn("column %r: %d of the %d observed values of %s were not seen in "
                          "fit (each unseen value is at the maximal distance); check that "
                          "the column holds the same kind of labels as in training"
                          % (name, n_unseen, observed, what), UserWarning,
                          stacklevel=_caller_level())

    # -- helpers -------------------------------------------------------------
    @property
    def continuous_names(self):
        return [n for n, k in zip(self.names_, self.kinds_) if k == CONTINUOUS]

    @property
    def nominal_names(self):
        return [n for n, k in zip(self.names_, self.kinds_) if k == NOMINAL]

    def column(self, attribute):
        """Position of a fitted column given by name or position (negative counts from
        the end); a ValueError names what is wrong."""
        names = list(self.names_)
        if isinstance(attribute, (int, np.integer)) and not isinstance(attribute, bool):
            if not -len(names) <= attribute < len(names):
                raise ValueError("attribute position %d is out of range" % attribute)
            return int(attribute) % len(names)
        if attribute in names:
            return names.index(attribute)
        raise ValueError("no column named %r (columns: %r)" % (attribute, names))

    def decode(self, cont, nom):
        """Encoded values back to the original ones: ``cont`` ``[n, m_continuous]`` floats
        and ``nom`` ``[n, m_nominal]`` codes -> an object array ``[n, m]`` of floats and
        category labels (``None`` where NaN or a negative code)."""
        n = cont.shape[0] if cont.ndim == 2 else nom.shape[0]
        out = np.empty((n, self.n_features_in_), dtype=object)
        ic = inom = 0
        for j, kind in enumerate(self.kinds_):
            if kind == CONTINUOUS:
                out[:, j] = [float(v) if v == v else None for v in cont[:, ic]]
                ic += 1
            else:
                cats = self.categories_[j]
                out[:, j] = [cats[c] if c >= 0 else None for c in nom[:, inom]]
                inom += 1
        return out

    @property
    def nominal_categories(self):
        return [c for c, k in zip(self.categories_, self.kinds_) if k == NOMINAL]


def check_target(y, what="y"):
    """Refuse a string given as the targets (a column's name, ``y="class"``) with a
    TypeError saying how to pass the column's values, and a scalar (``y=5``) with a
    TypeError naming ``y``; returns ``y`` unchanged."""
    if isinstance(y, (str, bytes)):
        raise TypeError(
            "%s must be the target values, one per row of X, not a column name: got the "
            "string %r; take the column out of the table first, e.g. y = X.pop(%r) (or "
            "y = X[%r] and X = X.drop(columns=[%r]))" % (what, y, y, y, y))
    if np.isscalar(y) or isinstance(getattr(y, "shape", None), tuple) and y.shape == ():
        raise TypeError("%s must be the target values, one per row of X (a 1-D array or "
                        "list), got the scalar %r (%s)" % (what, y, type(y).__name__))
    return y


def _label_kind(v):
    """The family of a class label: numbers (booleans too) and text can be ordered
    among themselves, not together."""
    if isinstance(v, (numbers.Number, np.number, np.bool_)):
        return "number"
    if isinstance(v, str):
        return "str"
    return type(v).__name__


def check_label_types(y, what="y"):
    """A TypeError naming ``y`` and two of its types when a 1-D array of class labels
    mixes numbers and text (or other kinds of objects that do not order together, as
    scikit-learn's classifiers need)."""
    if getattr(y, "dtype", None) != object or not len(y):
        return
    labels = _factorize(y)[1]
    seen = {}
    for v in labels:
        if not is_missing_scalar(v):
            seen.setdefault(_label_kind(v), v)
    if len(seen) > 1:
        (_, a), (_, b) = list(seen.items())[:2]
        raise TypeError(
            "%s mixes class labels of types %s and %s (e.g. %r and %r), which cannot be "
            "ordered into classes_; make them one type first, e.g. y.astype(str) or "
            "y.astype(int)" % (what, type(a).__name__, type(b).__name__, a, b))


def encode_labels(y, n):
    """Class labels -> (codes int64 [n], classes list).  Missing labels are an error."""
    if y is None:
        raise ValueError("y is required")
    check_target(y)
    if hasattr(y, "to_numpy") and not isinstance(y, np.ndarray):
        y = y.to_numpy(dtype=object) if hasattr(y, "dtype") else np.asarray(y, dtype=object)
    y = np.asarray(y, dtype=object) if not isinstance(y, np.ndarray) or y.dtype.kind not in "iub" \
        else np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError("y must be 1-D, got shape %s" % (y.shape,))
    if len(y) != n:
        raise ValueError("y has %d labels for %d rows of X" % (len(y), n))
    if y.dtype == object:
        # column-wise: factorize, then one Python step per distinct label
        try:
            codes, labels = _factorize(y)
        except TypeError:
            raise TypeError("y holds an unhashable label")
        if (codes < 0).any():
            raise ValueError("y has a missing label at row %d; every training row needs "
                             "a class" % int(np.flatnonzero(codes < 0)[0]))
        keys = [norm_key(v) for v in labels]
        classes = _sorted_keys(set(keys))
        pos = {c: i for i, c in enumerate(classes)}
        lut = np.array([pos[k] for k in keys], dtype=np.int64)
        return lut[codes], classes
    classes, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64), classes.tolist()


class MixedTableTags:
    """scikit-learn input tags of an estimator that takes the tables :func:`to_columns`
    reads: missing values and strings allowed, no sparse matrices (pandas categoricals
    declared too when ``_categorical_input``).  Put it before ``BaseEstimator``."""

    _categorical_input = False

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.sparse = False
        if self._categorical_input:
            tags.input_tags.categorical = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"allow_nan": True, "X_types": ["2darray", "string"]
                + (["categorical"] if self._categorical_input else [])}

    def _check_features(self, X, reset):
        """scikit-learn's ``n_features_in_`` and ``feature_names_in_``: taken from ``X``
        when ``reset`` (``fit``), else ``X`` must match them.  ``X`` is not converted."""
        names = table_names(X)
        if names is not None:
            check_unique_names(names)
        check_table_form(X)
        if _is_records(X):
            self._check_record_features(X, reset)
            return
        try:  # scikit-learn >= 1.6
            from sklearn.utils.validation import validate_data
        except ImportError:  # scikit-learn < 1.6: the estimator's own method
            self._validate_data(X, reset=reset, cast_to_ndarray=False)
        else:
            validate_data(self, X, reset=reset, skip_check_array=True)


    def _check_record_features(self, X, reset):
        """``_check_features`` for a list of dicts, which scikit-learn does not read: the
        keys are the column names (:func:`to_columns`)."""
        names = np.array([str(k) for k in _record_keys(X)], dtype=object)
        check_unique_names(names)
        if reset:
            self.n_features_in_ = len(names)
            self.feature_names_in_ = names
            return
        fitted = getattr(self, "feature_names_in_", None)
        if fitted is not None and list(names) != list(fitted):
            raise ValueError("X has the columns %r; the estimator was fitted on %r"
                             % (list(names), list(fitted)))


def column_weights(sw, j):
    """The weights column ``j``'s statistics see: ``sw`` itself (None, or one weight per
    row), or its column ``j`` for per-column weights ``[n, m]`` (a summary table whose
    rows stand for counted values of one column each)."""
    return sw if sw is None or sw.ndim == 1 else sw[:, j]


def _non_number_kind(values):
    """The kind of value (``"bool"``, ``"str"``, ...) that makes ``values`` not numbers,
    or None: numpy would read booleans and numeric text as floats without a word."""
    dt = getattr(values, "dtype", None)
    kind = getattr(dt, "kind", None)
    if isinstance(kind, str) and kind != "O":
        return None if kind in "iuf" else ("bool" if kind == "b" else str(dt))
    flat = np.asarray(values, dtype=object).ravel()
    for v in flat:
        if isinstance(v, (bool, np.bool_)):
            return "bool"
        if isinstance(v, (str, bytes)):
            return "str"
    return None


def check_sample_weight(sample_weight, n):
    """``sample_weight`` as a float array ``[n]`` (None stays None; a scalar is repeated).

    Shared by every ``fit(..., sample_weight=)``: numbers, one per training row, finite,
    non-negative, not all zero; a ValueError / TypeError naming ``sample_weight`` else."""
    if sample_weight is None:
        return None
    kind = _non_number_kind(sample_weight)
    if kind is not None:
        raise TypeError("sample_weight must hold numbers, got %s values" % kind)
    try:
        sw = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("sample_weight must hold numbers") from None
    if sw.ndim == 0:
        sw = np.full(n, sw)
    if sw.shape != (n,):
        raise ValueError("sample_weight.shape == %s, expected %s: one weight per training row"
                         % (sw.shape, (n,)))
    bad = np.flatnonzero(~np.isfinite(sw) | (sw < 0))
    if bad.size:
        raise ValueError("sample_weight must be finite and non-negative, got %r at row %d"
                         % (sw[bad[0]], bad[0]))
    if not (sw > 0).any():
        raise ValueError("sample_weight is all zero; at least one row needs a positive weight")
    with np.errstate(over="ignore"):
        total = sw.sum()
    if not np.isfinite(total):
        raise ValueError("sample_weight sums to infinity; scale the weights down")
    return sw


def take_rows(X, idx):
    """Rows ``idx`` of a table (pandas, polars, pyarrow, numpy or a list of rows)."""
    if hasattr(X, "iloc"):
        return X.iloc[idx]
    if hasattr(X, "take") and hasattr(X, "schema"):          # pyarrow
        return X.take(idx)
    if isinstance(X, np.ndarray) or hasattr(X, "with_columns"):  # numpy, polars
        return X[idx]
    if isinstance(X, (list, tuple)):
        return [X[i] for i in idx]
    return np.asarray(X)[idx]               # anything else numpy reads


def n_rows(X):
    """Number of rows of a table (any form :func:`to_columns` reads)."""
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    if hasattr(X, "__len__"):
        return len(X)
    return int(np.asarray(X).shape[0])
