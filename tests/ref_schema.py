"""Reference encoder for tests: the cell-by-cell Schema hdist used before encoding became
column-wise (hdist/_core/schema.py).  Kept unchanged as the independent reference the vectorized
path is compared against (tests/core/test_encode.py); never imported by the package."""
from __future__ import annotations

import numbers

import numpy as np

CONTINUOUS = "continuous"
NOMINAL = "nominal"

_MISSING_TYPE_NAMES = {"NAType", "NaTType", "NoneType"}


class NotFittedError(ValueError, AttributeError, RuntimeError):
    """A metric, index or discretizer used before ``fit``.

    A ValueError and an AttributeError, like scikit-learn's ``NotFittedError`` (so
    ``check_is_fitted``-style handling works), and a RuntimeError for code that catches
    that."""


def is_missing_scalar(v) -> bool:
    """True for None, NaN, pandas.NA, pandas.NaT, numpy NaT."""
    if v is None:
        return True
    if isinstance(v, float):
        return v != v
    tn = type(v).__name__
    if tn in _MISSING_TYPE_NAMES:
        return True
    if isinstance(v, (np.floating,)):
        return bool(np.isnan(v))
    if isinstance(v, (np.datetime64, np.timedelta64)):
        return bool(np.isnat(v))
    return False


class _Column:
    """One input column: a name, a 1-D numpy array, and dtype hints."""

    __slots__ = ("name", "values", "hint", "ordered_categories")

    def __init__(self, name, values, hint, ordered_categories=None):
        self.name = name
        self.values = values
        self.hint = hint  # "numeric", "bool", "object", "category", "ordered", "bad:<why>"
        self.ordered_categories = ordered_categories


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


def _pandas_column(name, s):
    dt = s.dtype
    tname = type(dt).__name__
    if tname == "CategoricalDtype":
        cats = list(dt.categories)
        codes = np.asarray(s.cat.codes, dtype=np.int64)
        if dt.ordered:
            vals = codes.astype(np.float64)
            vals[codes < 0] = np.nan
            return _Column(name, vals, "ordered", cats)
        obj = np.empty(len(codes), dtype=object)
        cat_arr = np.empty(len(cats), dtype=object)
        cat_arr[:] = cats
        obj[codes >= 0] = cat_arr[codes[codes >= 0]]
        obj[codes < 0] = None
        return _Column(name, obj, "category")
    kind = getattr(dt, "kind", "O")
    if tname in ("BooleanDtype",) or kind == "b":
        arr = s.to_numpy(dtype=object, na_value=None)
        return _Column(name, arr, "bool")
    if tname in ("StringDtype",) or kind in "OUS":
        arr = s.to_numpy(dtype=object, na_value=None)
        return _Column(name, arr, "object")
    if kind in "iuf":
        arr = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return _Column(name, arr, "numeric")
    if kind in "mM":
        return _Column(name, None, "bad:datetime")
    if kind == "c":
        return _Column(name, None, "bad:complex")
    return _Column(name, None, "bad:dtype %s" % dt)


def _arrow_column(name, col):
    import pyarrow as pa
    import pyarrow.types as pt
    t = col.type
    if pt.is_dictionary(t):
        col = col.cast(t.value_type) if hasattr(col, "cast") else col
        t = t.value_type
    if pt.is_integer(t) or pt.is_floating(t):
        arr = np.array([np.nan if v is None else v for v in col.to_pylist()],
                       dtype=np.float64)
        return _Column(name, arr, "numeric")
    if pt.is_boolean(t):
        return _Column(name, np.array(col.to_pylist(), dtype=object), "bool")
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_binary(t):
        return _Column(name, np.array(col.to_pylist(), dtype=object), "object")
    if pt.is_temporal(t):
        return _Column(name, None, "bad:datetime")
    return _Column(name, None, "bad:arrow type %s" % t)


def to_columns(X, what="X"):
    """Split any supported table into ``(names, columns, by_name)``."""
    mod = type(X).__module__.split(".")[0]
    if mod == "pandas" and hasattr(X, "columns"):
        if hasattr(X, "iloc") and not hasattr(X, "to_frame") or type(X).__name__ == "DataFrame":
            names = list(X.columns)
            if len(set(map(str, names))) != len(names):
                raise ValueError("%s has duplicated column names: %r" % (what, names))
            cols = [_pandas_column(str(c), X.iloc[:, i]) for i, c in enumerate(names)]
            return [str(c) for c in names], cols, True
    if mod == "pandas" and type(X).__name__ == "Series":
        raise ValueError("%s must be 2-D (a table), got a pandas Series; use "
                         "series.to_frame()" % what)
    if mod == "polars" and hasattr(X, "get_column"):
        names = list(X.columns)
        return [str(c) for c in names], [_polars_column(n, X.get_column(n)) for n in names], True
    if mod == "pyarrow" and hasattr(X, "column_names"):
        names = list(X.column_names)
        if len(set(names)) != len(names):
            raise ValueError("%s has duplicated column names: %r" % (what, names))
        return names, [_arrow_column(n, X.column(n)) for n in names], True
    if isinstance(X, np.ndarray) and X.dtype.names is not None:
        if X.ndim != 1:
            raise ValueError("%s: a structured array must be 1-D, got %d-D" % (what, X.ndim))
        names = list(X.dtype.names)
        cols = []
        for n in names:
            a = np.asarray(X[n])
            h = _numpy_hint(a)
            cols.append(_Column(n, a.astype(np.float64) if h == "numeric" else
                                (a.astype(object) if not h.startswith("bad") else None), h))
        return names, cols, True
    if isinstance(X, (str, bytes)) or np.isscalar(X) or X is None:
        raise ValueError("%s must be a 2-D table, got %s" % (what, type(X).__name__))
    if mod == "scipy" and hasattr(X, "tocsr"):
        raise TypeError("%s is a scipy sparse matrix; sparse input is not supported, pass a "
                        "dense table (X.toarray())" % what)
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
    cols = []
    for i in range(X.shape[1]):
        col = X[:, i]
        if h == "numeric":
            cols.append(_Column(names[i], np.asarray(col, dtype=np.float64), "numeric"))
        elif h == "bool":
            cols.append(_Column(names[i], col.astype(object), "bool"))
        elif h == "object":
            cols.append(_Column(names[i], np.asarray(col, dtype=object), "object"))
        else:
            cols.append(_Column(names[i], None, h))
    return names, cols, False


def _polars_column(name, s):
    dt = str(s.dtype)
    if dt.startswith(("Int", "UInt", "Float")):
        return _Column(name, s.cast(float).fill_null(float("nan")).to_numpy()
                       .astype(np.float64), "numeric")
    if dt.startswith("Boolean"):
        return _Column(name, np.array(s.to_list(), dtype=object), "bool")
    if dt.startswith(("String", "Utf8", "Categorical", "Enum")):
        return _Column(name, np.array(s.cast(str).to_list() if not dt.startswith("String")
                                      else s.to_list(), dtype=object), "object")
    if dt.startswith(("Date", "Datetime", "Duration", "Time")):
        return _Column(name, None, "bad:datetime")
    return _Column(name, None, "bad:dtype %s" % dt)


def _object_to_float(col, name):
    """Convert an object column declared continuous to float64, or raise naming it."""
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        if is_missing_scalar(v):
            out[i] = np.nan
        elif isinstance(v, (bool, np.bool_)):
            out[i] = float(v)
        elif isinstance(v, numbers.Real):
            out[i] = float(v)
        else:
            raise TypeError("column %r is continuous but holds the non-numeric value %r; "
                            "declare it nominal (nominal=[...])" % (name, v))
    return out


def _check_finite(arr, name):
    if np.isinf(arr).any():
        raise ValueError("column %r holds an infinite value; continuous values must be "
                         "finite (use NaN for missing)" % name)


def _norm_key(v):
    """Hashable key for a nominal value; numpy scalars become Python scalars."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


_NUMERIC_KEYS = {}


def _numeric_keys(index):
    """Sorted numeric keys of a frozen value index and their codes, computed once per
    index (a fitted schema's indexes never change)."""
    hit = _NUMERIC_KEYS.get(id(index))
    if hit is not None and hit[0] is index:
        return hit[1], hit[2]
    keys = np.array([k for k in index if isinstance(k, (int, float))], dtype=np.float64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    codes = np.array([index[_norm_key(k)] for k in sk], dtype=np.int64)
    if len(_NUMERIC_KEYS) > 256:
        _NUMERIC_KEYS.clear()
    _NUMERIC_KEYS[id(index)] = (index, sk, codes)
    return sk, codes


class Schema:
    """Kinds and categories of the columns seen in ``fit``; frozen afterwards.

    Parameters
    ----------
    nominal : None, "all", list of names or positions, or boolean mask
        Which columns are nominal.  ``None`` infers kinds from dtypes: pandas
        ``category``/``object``/``string``/``bool`` and numpy object/bool are nominal,
        numbers continuous, an ordered categorical is continuous on its codes.
        A list gives the exact set of nominal columns.
    """

    def __init__(self, nominal=None):
        self.nominal = nominal

    # -- fit ---------------------------------------------------------------
    def fit(self, X, allow_empty=False):
        """Learn kinds and categories.  A column with no observed value is an error
        unless ``allow_empty`` (then it has no category and no observed value)."""
        names, cols, by_name = to_columns(X)
        n = None
        for c in cols:
            if c.hint.startswith("bad:"):
                raise TypeError("column %r has an unsupported type (%s); hdist takes "
                                "numbers, strings, categories and booleans"
                                % (c.name, c.hint[4:]))
            if n is None:
                n = len(c.values)
        if not cols:
            raise ValueError("X has no columns")
        if n == 0:
            raise ValueError("X has 0 rows; at least 2 are needed to fit")
        nominal_set = self._resolve_nominal(names, cols)
        self.names_ = names
        self.by_name_ = by_name
        self.kinds_ = []
        self.categories_ = []
        self._index = []
        for i, c in enumerate(cols):
            if i in nominal_set:
                self.kinds_.append(NOMINAL)
                cats, index = self._learn_categories(c)
                if not cats and not allow_empty:
                    raise ValueError("column %r has no observed value in the training data"
                                     % c.name)
                self.categories_.append(cats)
                self._index.append(index)
            else:
                self.kinds_.append(CONTINUOUS)
                vals = c.values if c.hint in ("numeric", "ordered") else \
                    _object_to_float(c.values, c.name)
                _check_finite(vals, c.name)
                if np.isnan(vals).all() and not allow_empty:
                    raise ValueError("column %r has no observed value in the training data"
                                     % c.name)
                self.categories_.append(c.ordered_categories)
                self._index.append(None)
        self.n_features_in_ = len(names)
        self.continuous_ = np.array([k == CONTINUOUS for k in self.kinds_], dtype=bool)
        return self

    def _resolve_nominal(self, names, cols):
        m = len(cols)
        nom = self.nominal
        if nom is None:
            return {i for i, c in enumerate(cols) if c.hint in ("object", "bool", "category")}
        if isinstance(nom, str):
            if nom == "all":
                return set(range(m))
            nom = [nom]
        nom = list(nom) if not isinstance(nom, np.ndarray) else list(nom.tolist())
        if nom and all(isinstance(v, (bool, np.bool_)) for v in nom):
            if len(nom) != m:
                raise ValueError("nominal: a boolean mask must have one entry per column "
                                 "(%d), got %d" % (m, len(nom)))
            return {i for i, v in enumerate(nom) if v}
        out = set()
        for v in nom:
            if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                i = int(v)
                if i < -m or i >= m:
                    raise ValueError("nominal: position %d is out of range for %d columns"
                                     % (i, m))
                out.add(i % m)
            elif isinstance(v, str):
                if v not in names:
                    raise ValueError("nominal: no column named %r (columns: %r)" % (v, names))
                out.add(names.index(v))
            else:
                raise TypeError("nominal: entries must be column names or positions, got %r"
                                % (v,))
        return out

    @staticmethod
    def _learn_categories(c):
        vals = c.values
        if c.hint == "ordered":
            raise AssertionError("unreachable")
        index = {}
        cats = []
        if vals.dtype == np.float64:
            present = vals[~np.isnan(vals)]
            if present.size:
                _check_finite(present, c.name)
            for v in np.unique(present):
                key = _norm_key(v)
                index[key] = len(cats)
                cats.append(key)
            return cats, index
        seen = {}
        for v in vals:
            if is_missing_scalar(v):
                continue
            key = _norm_key(v)
            if key not in seen:
                seen[key] = v
        keys = list(seen)
        try:
            keys.sort()
        except TypeError:
            # mixed types: order by type name, then value text, for a stable order
            keys.sort(key=lambda k: (type(k).__name__, repr(k)))
        for k in keys:
            index[k] = len(cats)
            cats.append(k)
        return cats, index

    # -- encode ------------------------------------------------------------
    def check_fitted(self):
        if not hasattr(self, "names_"):
            raise RuntimeError("schema is not fitted")

    def encode(self, X, unseen=None, what="X"):
        """Encode a table with the fitted kinds.

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
            pos = {n: i for i, n in enumerate(names)}
            cols = [cols[pos[n]] for n in self.names_]
        else:
            if len(cols) != m:
                raise ValueError("%s has %d columns; the metric was fitted on %d"
                                 % (what, len(cols), m))
        n = len(cols[0].values) if cols[0].values is not None else 0
        kinds = self.kinds_
        nc = int(self.continuous_.sum())
        cont = np.empty((n, nc), dtype=np.float64)
        nom = np.empty((n, m - nc), dtype=np.int64)
        if unseen is None:
            unseen = [dict() for _ in range(m - nc)]
        ic = inom = 0
        for j, c in enumerate(cols):
            name = self.names_[j]
            if c.hint.startswith("bad:"):
                raise TypeError("column %r has an unsupported type (%s)" % (name, c.hint[4:]))
            if kinds[j] == CONTINUOUS:
                if c.hint == "ordered":
                    vals = self._ordered_codes(c, j)
                elif c.hint == "numeric":
                    vals = c.values
                else:
                    vals = _object_to_float(c.values, name)
                _check_finite(vals, name)
                cont[:, ic] = vals
                ic += 1
            else:
                nom[:, inom] = self._encode_nominal(c, self._index[j], unseen[inom])
                inom += 1
        return cont, nom

    def _ordered_codes(self, c, j):
        cats = self.categories_[j]
        if cats is None or list(c.ordered_categories) == list(cats):
            return c.values
        # map through the fitted category order
        pos = {v: i for i, v in enumerate(cats)}
        out = np.full(len(c.values), np.nan)
        for i, v in enumerate(c.values):
            if v == v:
                key = c.ordered_categories[int(v)]
                if key not in pos:
                    raise ValueError("column %r: ordered category %r was not seen in fit"
                                     % (self.names_[j], key))
                out[i] = pos[key]
        return out

    @staticmethod
    def _encode_nominal(c, index, unseen):
        vals = c.values
        V = len(index)
        out = np.empty(len(vals), dtype=np.int64)
        if vals.dtype == np.float64:
            # numeric codes: vectorised lookup through the sorted learned keys
            sk, codes_sorted = _numeric_keys(index)
            miss = np.isnan(vals)
            if sk.size:
                pos = np.clip(np.searchsorted(sk, vals), 0, len(sk) - 1)
                hit = (sk[pos] == vals) & ~miss
            else:
                hit = np.zeros(len(vals), dtype=bool)
                codes_sorted = np.zeros(1, dtype=np.int64)
                pos = np.zeros(len(vals), dtype=np.intp)
            out[:] = -1
            out[hit] = codes_sorted[pos[hit]]
            rest = np.flatnonzero(~hit & ~miss)
            for i in rest:
                key = _norm_key(vals[i])
                if not np.isfinite(vals[i]):
                    raise ValueError("column %r holds an infinite value" % c.name)
                out[i] = unseen.setdefault(key, V + len(unseen))
            return out
        get = index.get
        # Fast path: a plain dict lookup finds every learned value (keys hash and compare
        # equal to the raw values: numpy scalars, 2.0 vs 2); the loop below handles the
        # rest (missing, unseen, unhashable) one by one.
        try:
            out[:] = [get(v, -2) for v in vals]
            todo = np.flatnonzero(out == -2)
        except TypeError:
            todo = range(len(vals))
        for i in todo:
            v = vals[i]
            if is_missing_scalar(v):
                out[i] = -1
                continue
            key = _norm_key(v)
            try:
                code = get(key)
            except TypeError:
                raise TypeError("column %r holds an unhashable value %r" % (c.name, v))
            if code is None:
                code = unseen.setdefault(key, V + len(unseen))
            out[i] = code
        return out

    # -- helpers -------------------------------------------------------------
    @property
    def continuous_names(self):
        return [n for n, k in zip(self.names_, self.kinds_) if k == CONTINUOUS]

    @property
    def nominal_names(self):
        return [n for n, k in zip(self.names_, self.kinds_) if k == NOMINAL]

    @property
    def nominal_categories(self):
        return [c for c, k in zip(self.categories_, self.kinds_) if k == NOMINAL]


def encode_labels(y, n):
    """Class labels -> (codes int64 [n], classes list).  Missing labels are an error."""
    if y is None:
        raise ValueError("y is required")
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
        for i, v in enumerate(y):
            if is_missing_scalar(v):
                raise ValueError("y has a missing label at row %d; every training row needs "
                                 "a class" % i)
        keys = [_norm_key(v) for v in y]
        try:
            classes = sorted(set(keys))
        except TypeError:
            classes = sorted(set(keys), key=lambda k: (type(k).__name__, repr(k)))
        pos = {c: i for i, c in enumerate(classes)}
        codes = np.array([pos[k] for k in keys], dtype=np.int64)
        return codes, classes
    classes, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64), classes.tolist()
