"""Test data for hdist: hypothesis strategies for mixed tables and a loader for the real
datasets.

A :class:`Table` is the canonical form the reference (``tests/reference.py``) reads: named
columns of raw values with explicit kinds.  The same table is turned into every container
the package accepts (pandas with each dtype, numpy object / numeric / structured arrays,
pyarrow, polars), so a test can feed the package any of them and compare with one
reference answer.
"""
from __future__ import annotations

import csv
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from reference import CONTINUOUS, NOMINAL, is_missing

try:
    import pandas as pd
except ImportError:  # pragma: no cover - pandas is a test dependency
    pd = None


def _nan_string_dtype():
    """pandas' string dtype whose missing value is NaN (pandas 3's ``str``; pandas 2.3
    has it as ``StringDtype(na_value=nan)``), or None before pandas 2.3, where the ``str``
    alias is numpy's fixed-width text (a missing value becomes the text "None")."""
    try:
        return pd.StringDtype(na_value=np.nan)
    except TypeError:
        return None


STR_DTYPE = None if pd is None else _nan_string_dtype()

# how a column is presented in a pandas DataFrame
CONT_STYLES = ("float", "Float64", "Int64", "ordered", "offset")
NOM_STYLES = ("object", "string", "str", "category", "boolean", "code")
SCALES = (1e-9, 1e-3, 0.25, 1.0, 3.0, 1e3, 2.0 ** 20, 1e9)
OFFSETS = (1.7e9, -3e12, 2.5e5)   # "offset" columns: close values far from 0
INT_SCALES = (1, 3, 1000)
ORDER_LABELS = ("z", "b", "m", "a", "q", "c", "k")  # category order is not lexical


@dataclass
class ColumnSpec:
    """How one column's values are drawn and presented."""
    name: str
    kind: str
    style: str
    pool: list            # values of training rows
    extra: list           # further values for query rows (unseen / out of range)
    p_missing: float
    levels: list = field(default_factory=list)  # labels of an ordered column


@dataclass
class Table:
    """Named columns of raw values (missing: None, NaN or pandas.NA) with their kinds."""
    names: list
    kinds: list
    styles: list
    columns: list
    levels: list

    @property
    def n(self):
        return len(self.columns[0])

    @property
    def m(self):
        return len(self.columns)

    def rows(self):
        return list(zip(*self.columns))

    def take(self, idx):
        return Table(self.names, self.kinds, self.styles,
                     [[col[i] for i in idx] for col in self.columns], self.levels)

    def nominal_positions(self):
        return [a for a, k in enumerate(self.kinds) if k == NOMINAL]

    def nominal_names(self):
        return [self.names[a] for a in self.nominal_positions()]

    def continuous_names(self):
        """The continuous columns' names: ``continuous=`` declares them (a column of a few
        whole numbers is otherwise read as continuous with a ColumnKindWarning)."""
        return [self.names[a] for a, k in enumerate(self.kinds) if k != NOMINAL]

    def override(self):
        """The ``nominal=`` a DataFrame of this table needs: ``None`` when every kind
        follows from the dtypes, else the full list of nominal names (a column of numeric
        codes is continuous by its dtype)."""
        if "code" in self.styles:
            return self.nominal_names()
        return None

    def has_missing(self):
        return any(is_missing(v) for col in self.columns for v in col)

    # ------------------------------------------------------------ containers
    def frame(self):
        """A pandas DataFrame with the dtype each column's style names."""
        data = {}
        for name, style, col, lev in zip(self.names, self.styles, self.columns, self.levels):
            data[name] = _pandas_column(style, col, lev)
        return pd.DataFrame(data)

    def object_array(self):
        """A 2-D numpy object array (kinds must be given: ``nominal=positions``)."""
        out = np.empty((self.n, self.m), dtype=object)
        for a, col in enumerate(self.columns):
            for i, v in enumerate(col):
                out[i, a] = v
        return out

    def numeric_array(self):
        """A float64 array; every column must be continuous or numeric codes."""
        out = np.empty((self.n, self.m))
        for a, col in enumerate(self.columns):
            out[:, a] = [np.nan if is_missing(v) else float(v) for v in col]
        return out

    def structured_array(self):
        """A 1-D structured array: float fields for numbers, object fields otherwise."""
        fields = []
        for nm, k, s in zip(self.names, self.kinds, self.styles):
            numeric = k == CONTINUOUS or s == "code"
            fields.append((nm, np.float64 if numeric else object))
        rec = np.empty(self.n, dtype=fields)
        for (nm, dt), col in zip(fields, self.columns):
            if dt is np.float64:
                rec[nm] = [np.nan if is_missing(v) else float(v) for v in col]
            else:
                for i, v in enumerate(col):
                    rec[nm][i] = None if is_missing(v) else v
        return rec

    def arrow(self):
        import pyarrow as pa
        arrays = []
        for k, s, col, lev in zip(self.kinds, self.styles, self.columns, self.levels):
            vals = [None if is_missing(v) else v for v in col]
            if k == CONTINUOUS:
                arrays.append(pa.array([None if v is None else float(v) for v in vals],
                                       type=pa.float64()))
            elif s == "category":
                arrays.append(pa.array(vals, type=pa.string()).dictionary_encode())
            elif s == "boolean":
                arrays.append(pa.array(vals, type=pa.bool_()))
            elif s == "code":
                arrays.append(pa.array(vals, type=pa.int64()))
            else:
                arrays.append(pa.array(vals, type=pa.string()))
        return pa.table(arrays, names=self.names)

    def polars(self):
        import polars as pl
        series = []
        for nm, k, s, col in zip(self.names, self.kinds, self.styles, self.columns):
            vals = [None if is_missing(v) else v for v in col]
            if k == CONTINUOUS:
                series.append(pl.Series(nm, [None if v is None else float(v) for v in vals],
                                        dtype=pl.Float64))
            elif s == "boolean":
                series.append(pl.Series(nm, vals, dtype=pl.Boolean))
            elif s == "category":
                series.append(pl.Series(nm, vals, dtype=pl.Categorical))
            elif s == "code":
                series.append(pl.Series(nm, vals, dtype=pl.Int64))
            else:
                series.append(pl.Series(nm, vals, dtype=pl.Utf8))
        return pl.DataFrame(series)


def _pandas_column(style, col, levels):
    if style in ("float", "offset"):
        return pd.Series([np.nan if is_missing(v) else float(v) for v in col],
                         dtype="float64")
    if style == "str" and STR_DTYPE is None:
        # before pandas 2.3 text with NaN for missing values is an object column
        return pd.Series([np.nan if is_missing(v) else v for v in col], dtype=object)
    if style in ("Float64", "Int64", "boolean", "string", "str"):
        vals = [None if is_missing(v) else v for v in col]
        if style == "Int64":
            vals = [None if v is None else int(v) for v in vals]
        return pd.Series(pd.array(vals, dtype=STR_DTYPE if style == "str" else style))
    if style == "ordered":
        codes = [-1 if is_missing(v) else int(v) for v in col]
        return pd.Series(pd.Categorical.from_codes(codes, categories=levels, ordered=True))
    if style == "category":
        return pd.Series(pd.Categorical([None if is_missing(v) else v for v in col]))
    if style == "code":
        if any(is_missing(v) for v in col):
            return pd.Series([np.nan if is_missing(v) else float(v) for v in col],
                             dtype="float64")
        return pd.Series([int(v) for v in col], dtype="int64")
    # object: the missing markers exactly as drawn (None, NaN, pandas.NA)
    arr = np.empty(len(col), dtype=object)
    arr[:] = list(col)
    return pd.Series(arr, dtype=object)


# --------------------------------------------------------------------------------------
# hypothesis strategies

MISSING_MARKERS = (None, float("nan"), "NA", "NaT")   # pandas.NA and pandas.NaT


def _marker(tag):
    if tag == "NA":
        return pd.NA
    if tag == "NaT":
        return pd.NaT
    return tag


@st.composite
def column_specs(draw, name, kind, missing=True, styles=None):
    """A random :class:`ColumnSpec` of the given kind."""
    p_missing = draw(st.sampled_from((0.0, 0.1, 0.3))) if missing else 0.0
    if kind == CONTINUOUS:
        style = draw(st.sampled_from(styles or CONT_STYLES))
        if style == "ordered":
            L = draw(st.integers(1, len(ORDER_LABELS)))
            levels = list(ORDER_LABELS[:L])
            pool = draw(st.lists(st.integers(0, L - 1), min_size=1, max_size=L,
                                 unique=True))
            return ColumnSpec(name, kind, style, pool, list(range(L)), p_missing, levels)
        scale = draw(st.sampled_from(INT_SCALES if style == "Int64" else SCALES))
        ks = draw(st.lists(st.integers(-60, 60), min_size=1, max_size=6, unique=True))
        extra = draw(st.lists(st.integers(-150, 150), min_size=1, max_size=3))
        conv = int if style == "Int64" else float
        offset = 0
        if style == "offset":
            offset, scale = draw(st.sampled_from(OFFSETS)), draw(st.sampled_from((0.5, 3.0)))
        return ColumnSpec(name, kind, style, [conv(offset + k * scale) for k in ks],
                          [conv(offset + k * scale) for k in extra], p_missing)
    style = draw(st.sampled_from(styles or NOM_STYLES))
    if style == "boolean":
        pool = draw(st.lists(st.booleans(), min_size=1, max_size=2, unique=True))
        return ColumnSpec(name, kind, style, pool, [True, False], p_missing)
    if style == "code":
        pool = draw(st.lists(st.integers(0, 30), min_size=1, max_size=5, unique=True))
        extra = [v + 100 for v in draw(st.lists(st.integers(0, 5), min_size=1, max_size=3))]
        return ColumnSpec(name, kind, style, pool, extra, p_missing)
    letters = st.text("abcdefg", min_size=1, max_size=2)
    pool = draw(st.lists(letters, min_size=1, max_size=5, unique=True))
    extra = ["new-" + v for v in draw(st.lists(letters, min_size=1, max_size=3))]
    return ColumnSpec(name, kind, style, pool, extra, p_missing)


def draw_column(draw, spec, n, unseen=False):
    """n values of a column; missing cells get a marker suited to the style; at least
    one value is present."""
    choices = spec.pool + (spec.extra if unseen else [])
    markers = MISSING_MARKERS if spec.style == "object" else (None,)
    out = []
    for _ in range(n):
        if spec.p_missing and draw(st.floats(0, 1)) < spec.p_missing:
            out.append(_marker(draw(st.sampled_from(markers))))
        else:
            out.append(draw(st.sampled_from(choices)))
    if all(is_missing(v) for v in out):
        out[draw(st.integers(0, n - 1))] = spec.pool[0]
    return out


def table_from_specs(draw, specs, n, unseen=False):
    return Table([s.name for s in specs], [s.kind for s in specs], [s.style for s in specs],
                 [draw_column(draw, s, n, unseen) for s in specs],
                 [s.levels for s in specs])


@st.composite
def table_specs(draw, min_cols=1, max_cols=6, kinds=None, missing=True, styles=None):
    """A list of column specs; ``kinds`` forces the kinds (a list), else random."""
    if kinds is None:
        m = draw(st.integers(min_cols, max_cols))
        kinds = [draw(st.sampled_from((CONTINUOUS, NOMINAL))) for _ in range(m)]
    return [draw(column_specs("c%d" % a, k, missing,
                              (styles or {}).get(k))) for a, k in enumerate(kinds)]


@st.composite
def tables(draw, min_rows=2, max_rows=16, n_queries=(0, 0), labels=False, **spec_kw):
    """``(train, queries, y)``: a training :class:`Table`, a query table drawn from the
    same columns plus unseen / out-of-range values (``n_queries`` rows, a range), and
    class labels for the training rows (``None`` unless ``labels``)."""
    specs = draw(table_specs(**spec_kw))
    n = draw(st.integers(min_rows, max_rows))
    train = table_from_specs(draw, specs, n)
    nq = draw(st.integers(*n_queries))
    queries = table_from_specs(draw, specs, nq, unseen=True) if nq else None
    y = draw(class_labels(n)) if labels else None
    return train, queries, y


@st.composite
def class_labels(draw, n):
    """n hashable labels (ints or strings) from 1 to 3 classes."""
    pool = draw(st.sampled_from(([0, 1, 2], ["x", "y", "z"], [5, 1])))
    k = draw(st.integers(1, len(pool)))
    return [draw(st.sampled_from(pool[:k])) for _ in range(n)]


# --------------------------------------------------------------------------------------
# the real datasets

from datadir import data_dir  # noqa: E402  (called when a dataset is read)


@dataclass
class Dataset:
    """A real dataset: the canonical table of its features, labels, and a DataFrame."""
    name: str
    table: Table
    y: list | None
    class_name: str

    def frame(self):
        return self.table.frame()


def load_dataset(name, codes_as_numbers=True):
    """Read ``NAME.csv`` with ``NAME.schema.json``: an empty field is missing; column
    kinds come from the schema (numeric / integer -> continuous; nominal / logical ->
    nominal; ordinal -> continuous on the rank of its level).  Nominal columns whose
    levels are all integers become numeric codes (``style="code"``) when
    ``codes_as_numbers``, so a frame of them needs ``nominal=`` to be read right."""
    schema = json.loads((data_dir() / (name + ".schema.json")).read_text())
    with open(data_dir() / (name + ".csv"), newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        raw = list(reader)
    cols = {c["name"]: c for c in schema["columns"]}
    cls = schema.get("class") or ""
    names, kinds, styles, columns, levels = [], [], [], [], []
    y = None
    for a, nm in enumerate(header):
        info = cols[nm]
        cells = [r[a] for r in raw]
        typ = info["type"]
        if nm == cls:
            y = cells
            continue
        lev = []
        if typ in ("numeric", "integer"):
            kind, style = CONTINUOUS, "float"
            vals = [None if c == "" else float(c) for c in cells]
        elif typ == "ordinal":
            kind, style = CONTINUOUS, "ordered"
            lev = list(info["levels"])
            vals = [None if c == "" else lev.index(c) for c in cells]
        elif typ == "logical":
            kind, style = NOMINAL, "boolean"
            vals = [None if c == "" else {"TRUE": True, "FALSE": False}[c] for c in cells]
        else:
            kind = NOMINAL
            levs = info.get("levels") or sorted(set(c for c in cells if c != ""))
            numeric = codes_as_numbers and all(_is_int(v) for v in levs)
            style = "code" if numeric else "object"
            vals = [None if c == "" else (int(c) if numeric else c) for c in cells]
        names.append(nm)
        kinds.append(kind)
        styles.append(style)
        columns.append(vals)
        levels.append(lev)
    return Dataset(name, Table(names, kinds, styles, columns, levels), y, cls)


def _is_int(s):
    try:
        return float(s) == int(s) and not math.isnan(float(s))
    except ValueError:
        return False


def read_matrix(name):
    """A numeric CSV matrix with a header row (e.g. a peer's distance matrix)."""
    with open(data_dir() / name, newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return np.array([[float(v) for v in r] for r in rows])


# --------------------------------------------------------------------------------------
# fixed random tables (numpy generator; for deterministic parameter sweeps)

def random_table(seed, n, styles, p_missing=0.2, n_queries=0, constant=()):
    """A :class:`Table` with one column per entry of ``styles`` (a continuous or nominal
    style name), ``p_missing`` of the cells missing (object columns mix None, NaN and
    pandas.NA), columns named in ``constant`` holding one value, and ``n_queries`` query
    rows that add unseen and out-of-range values.  Returns ``(train, queries)``."""
    rng = np.random.default_rng(seed)
    specs = []
    for a, style in enumerate(styles):
        name = "c%d" % a
        kind = CONTINUOUS if style in CONT_STYLES else NOMINAL
        size = 1 if name in constant else int(rng.integers(2, 6))
        if style == "ordered":
            levels = list(ORDER_LABELS[:5])
            pool = sorted(rng.choice(5, size=min(size, 5), replace=False).tolist())
            specs.append(ColumnSpec(name, kind, style, pool, list(range(5)), p_missing,
                                    levels))
            continue
        if kind == CONTINUOUS:
            scale = float(rng.choice(INT_SCALES if style == "Int64" else SCALES))
            ks = rng.choice(np.arange(-60, 61), size=size, replace=False)
            conv = int if style == "Int64" else float
            offset = 0
            if style == "offset":
                offset, scale = float(rng.choice(OFFSETS)), 0.5
            specs.append(ColumnSpec(name, kind, style, [conv(offset + k * scale) for k in ks],
                                    [conv(offset + k * scale) for k in (-150, 140)],
                                    p_missing))
        elif style == "boolean":
            specs.append(ColumnSpec(name, kind, style, [True, False][:max(1, min(size, 2))],
                                    [True, False], p_missing))
        elif style == "code":
            pool = rng.choice(30, size=size, replace=False).tolist()
            specs.append(ColumnSpec(name, kind, style, pool, [101, 102], p_missing))
        else:
            pool = ["v%d" % v for v in rng.choice(20, size=size, replace=False)]
            specs.append(ColumnSpec(name, kind, style, pool, ["new1", "new2"], p_missing))

    def draw_from(spec, nrows, unseen):
        choices = spec.pool + (spec.extra if unseen else [])
        out = []
        for _ in range(nrows):
            if rng.random() < spec.p_missing:
                tag = MISSING_MARKERS[int(rng.integers(4))] if spec.style == "object" \
                    else None
                out.append(_marker(tag))
            else:
                out.append(choices[int(rng.integers(len(choices)))])
        if all(is_missing(v) for v in out) and nrows:
            out[0] = spec.pool[0]
        return out

    def make(nrows, unseen):
        return Table([s.name for s in specs], [s.kind for s in specs],
                     [s.style for s in specs], [draw_from(s, nrows, unseen) for s in specs],
                     [s.levels for s in specs])

    train = make(n, False)
    queries = make(n_queries, True) if n_queries else None
    return train, queries


def random_labels(seed, n, classes=("good", "bad", "ugly")):
    rng = np.random.default_rng(seed + 7919)
    return [classes[int(i)] for i in rng.integers(len(classes), size=n)]


def census_frame(n, seed=0, n_nominal=30, n_continuous=10, p_missing=0.05):
    """A census-like pandas DataFrame: ``n_nominal`` string columns with 2 to 50 values
    (skewed frequencies), ``n_continuous`` number columns (ages, counts, amounts), about
    ``p_missing`` of every column missing.  Column ``a`` of kind nominal is named
    ``nomA``, continuous ``numA``.  The columns' values and frequencies are the same for
    every ``seed`` (a training and a query frame share them); the rows differ."""
    shape = np.random.default_rng(20260)
    rng = np.random.default_rng(seed)
    data = {}
    for a in range(n_nominal):
        V = int(shape.integers(2, 51)) if a else 50
        p = shape.dirichlet(np.full(V, 0.7))
        labels = np.array(["%s-%d" % ("abcdefghij"[a % 10] * (1 + a % 3), v)
                           for v in range(V)], dtype=object)
        col = labels[rng.choice(V, size=n, p=p)]
        col[rng.random(n) < p_missing] = None
        data["nom%d" % a] = col
    for a in range(n_continuous):
        if a % 3 == 0:
            col = rng.integers(16, 91, size=n).astype(np.float64)
        elif a % 3 == 1:
            col = np.round(rng.lognormal(8, 1.5, size=n), 2)
        else:
            col = rng.poisson(3, size=n).astype(np.float64)
        col[rng.random(n) < p_missing] = np.nan
        data["num%d" % a] = col
    return pd.DataFrame(data)
