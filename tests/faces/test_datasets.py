"""hdist.datasets: the bundled copies are faithful, typed by their schemas, and light.

The reference reader here is the standard library's ``csv`` module over the original
files in ``HDIST_DATA`` (default: ``shared/data`` beside the repository), typed by the same schema JSON.
"""
import csv
import gzip
import json
import math
import os
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist import datasets as D

from datadir import data_dir  # noqa: E402
FILES = [("adult", "train", "adult_train"), ("adult", "test", "adult_test"),
         ("credit-a", None, "credit-a"), ("german", None, "german"), ("iris", None, "iris"),
         ("wine", None, "wine"), ("credit_data", None, "modeldata_credit_data")]
SHIPPABLE = {"adult_train", "adult_test", "credit-a", "german", "iris", "wine",
             "modeldata_credit_data"}


def reference(stem):
    """Original CSV read cell by cell: (names, kinds, X rows as lists, y, schema)."""
    schema = json.loads((data_dir() / (stem + ".schema.json")).read_text())
    with open(data_dir() / (stem + ".csv"), newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    types = {c["name"]: c["type"] for c in schema["columns"]}
    X, names, kinds = [], [], []
    for j, name in enumerate(header):
        if name == schema["class"]:
            y = [r[j] for r in body]
            continue
        names.append(name)
        numeric = types[name] in ("numeric", "integer")
        kinds.append("continuous" if numeric else "nominal")
        X.append([(float(r[j]) if numeric else r[j]) if r[j] != "" else None for r in body])
    return names, kinds, X, y, schema


def same_cell(a, b):
    if b is None:
        return a is None or (isinstance(a, float) and math.isnan(a))
    return a == b


@pytest.mark.parametrize("name,split,stem", FILES)
@pytest.mark.needs_data
def test_frame_matches_original(name, split, stem):
    names, kinds, cols, y, schema = reference(stem)
    X, yy = D.load_dataset(name, split=split)
    assert list(X.columns) == names
    assert len(X) == schema["rows"] == len(y)
    levels = {c["name"]: c.get("levels") for c in schema["columns"]}
    for name_, kind, col in zip(names, kinds, cols):
        s = X[name_]
        if kind == "continuous":
            assert s.dtype == np.float64
            got = s.to_numpy()
            want = np.array([math.nan if v is None else v for v in col])
            np.testing.assert_array_equal(got, want)
        else:
            assert isinstance(s.dtype, pd.CategoricalDtype) and not s.dtype.ordered
            assert list(s.cat.categories) == levels[name_]
            got = s.astype(object).where(s.notna(), None).tolist()
            assert got == col, name_
    assert isinstance(yy.dtype, pd.CategoricalDtype)
    assert yy.tolist() == y
    assert list(yy.cat.categories) == levels[schema["class"]]
    assert yy.name == schema["class"]


@pytest.mark.parametrize("name,split,stem", FILES)
@pytest.mark.needs_data
def test_numpy_matches_original(name, split, stem):
    names, kinds, cols, y, schema = reference(stem)
    X, yy, nominal = D.load_dataset(name, split=split, as_frame=False)
    assert X.dtype == object and X.shape == (schema["rows"], len(names))
    assert nominal == [j for j, k in enumerate(kinds) if k == "nominal"]
    for j, col in enumerate(cols):
        assert all(same_cell(a, b) for a, b in zip(X[:, j].tolist(), col)), names[j]
        if kinds[j] == "continuous":
            assert all(isinstance(v, float) for v in X[:, j])
    assert yy.tolist() == y


@pytest.mark.parametrize("name,split,stem", FILES)
def test_missing_counts_follow_schema(name, split, stem):
    schema = json.loads((resources.files("hdist.datasets") / "data" /
                         (stem + ".schema.json")).read_text())
    X, y = D.load_dataset(name, split=split)
    want = {c["name"]: c["n_missing"] for c in schema["columns"] if c["name"] != y.name}
    assert X.isna().sum().to_dict() == want
    assert not y.isna().any()


@pytest.mark.needs_data
def test_files_are_the_shippable_ones_gzip9_and_light():
    root = resources.files("hdist.datasets") / "data"
    names = sorted(p.name for p in root.iterdir())
    stems = {n.split(".")[0] for n in names}
    assert stems == SHIPPABLE
    total = 0
    for stem in SHIPPABLE:
        raw = (root / (stem + ".csv.gz")).read_bytes()
        total += len(raw) + len((root / (stem + ".schema.json")).read_bytes())
        assert raw[:2] == b"\x1f\x8b" and raw[8] == 2     # gzip, XFL = best compression
        assert raw[4:8] == b"\0\0\0\0"                      # no timestamp: reproducible
        assert gzip.decompress(raw) == (data_dir() / (stem + ".csv")).read_bytes()
        assert json.loads((root / (stem + ".schema.json")).read_text()) == \
            json.loads((data_dir() / (stem + ".schema.json")).read_text())
    assert total < 800_000


def test_named_loaders_and_aliases():
    pd.testing.assert_frame_equal(D.load_credit_a()[0], D.load_dataset("credit_a")[0])
    pd.testing.assert_frame_equal(D.load_german()[0], D.load_dataset("credit-g")[0])
    pd.testing.assert_frame_equal(D.load_iris()[0], D.load_dataset("iris")[0])
    pd.testing.assert_frame_equal(D.load_wine()[0], D.load_dataset("WINE")[0])
    pd.testing.assert_frame_equal(D.load_credit_data()[0],
                                  D.load_dataset("modeldata_credit_data")[0])
    Xt, yt = D.load_adult(split="test")
    pd.testing.assert_frame_equal(Xt, D.load_dataset("adult_test")[0])
    assert len(Xt) == 16281 and len(D.load_adult()[0]) == 32561
    assert D.list_datasets() == ["adult", "credit-a", "credit_data", "german", "iris", "wine"]
    assert hdist.list_datasets() == D.list_datasets()


@pytest.mark.parametrize("call,match", [
    (lambda: D.load_dataset("glass"), "unknown dataset 'glass'"),
    (lambda: D.load_dataset("iris", split="test"), "no splits"),
    (lambda: D.load_adult(split="validation"), "split must be one of"),
    (lambda: D.load_dataset("adult_test", split="train"), "is the 'test' split"),
    (lambda: D.describe("Zoo"), "unknown dataset"),
])
def test_bad_names_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_name_type():
    with pytest.raises(TypeError, match="dataset name"):
        D.load_dataset(3)


@pytest.mark.parametrize("name", D.list_datasets())
def test_describe_has_shape_source_and_citation(name):
    text = D.describe(name)
    assert "Source: " in text and "Citation: " in text and "https://" in text
    s = D.summary(name)
    assert ("%d rows" % s["rows"]) in text
    assert ("%d nominal + %d numeric" % (s["nominal"], s["continuous"])) in text


@pytest.mark.parametrize("name,split,stem", FILES)
def test_splits_and_summary_name_the_files_and_their_features(name, split, stem):
    assert split in D.splits(name)
    s = D.summary(name, split)
    assert s["name"] == stem
    X, _ = D.load_dataset(name, split=split)
    assert s["features"] == list(X.columns)
    assert len(s["features"]) == s["nominal"] + s["continuous"] + s["ordinal"]


def test_splits_of_every_dataset_and_alias():
    assert {n: D.splits(n) for n in D.list_datasets()} == {
        "adult": ["train", "test"], "credit-a": [None], "credit_data": [None],
        "german": [None], "iris": [None], "wine": [None]}
    assert D.splits("adult_test") == D.splits("ADULT") == ["train", "test"]
    assert D.splits("crx") == [None]
    with pytest.raises(ValueError, match="unknown dataset"):
        D.splits("nope")
    with pytest.raises(TypeError, match="dataset name must be a string"):
        D.splits(None)


def test_without_pandas_the_numpy_form_is_returned(monkeypatch):
    monkeypatch.setattr(D, "_have_pandas", lambda: False)
    X, y, nominal = D.load_german()
    assert isinstance(X, np.ndarray) and X.shape == (1000, 20) and len(nominal) == 13


def test_both_forms_give_the_same_neighbors():
    """The numpy form with its nominal positions and the typed frame are the same data
    to a metric: identical neighbors and distances (credit-a, with missing values)."""
    Xf, yf = D.load_credit_a()
    Xn, yn, nominal = D.load_credit_a(as_frame=False)
    a = hdist.Metric("hvdm").fit(Xf, yf)
    b = hdist.Metric("hvdm", nominal=nominal).fit(Xn, yn)
    da, ia = a.kneighbors(k=3, exclude_self=True)
    db, ib = b.kneighbors(k=3, exclude_self=True)
    np.testing.assert_array_equal(ia, ib)
    np.testing.assert_array_equal(da, db)
    assert a.schema_.kinds_ == b.schema_.kinds_
