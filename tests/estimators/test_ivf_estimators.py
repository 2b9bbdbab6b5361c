"""The estimators, the imputer and the command line with ``algorithm="ivf"``: probing every
list gives the exact estimators' answers (votes with the rows tied with the k-th
included), fewer lists still answer, and ``algorithm_params`` follows scikit-learn's
parameter conventions."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from hdist import cli
from hdist.impute import KNNImputer
from hdist.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                             KNeighborsTransformer, NearestNeighbors)


def _frame(seed=0, n=600):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.integers(0, 6, n) * 0.5 + 0.25,     # many exact ties
                      "b": rng.normal(size=n).round(1),
                      "c": rng.choice(["x", "y", "z", "w"], n)})
    X.loc[rng.random(n) < 0.1, "b"] = np.nan
    y = np.where(X["a"] + (X["c"] == "x") > 3, "hi", "lo")
    return X, y


FULL = {"n_lists": 8, "n_probe": 8}


@pytest.mark.parametrize("cls", [KNeighborsClassifier, KNeighborsRegressor])
def test_predictions_at_full_probing_equal_the_exact_estimator(cls):
    X, y = _frame()
    if cls is KNeighborsRegressor:
        y = X["a"].to_numpy() * 2.0
    Q = X.iloc[:80].copy()
    Q["a"] += 0.5
    exact = cls(7, metric="heom", algorithm="brute").fit(X, y)
    ivf = cls(7, metric="heom", algorithm="ivf", algorithm_params=FULL).fit(X, y)
    np.testing.assert_array_equal(ivf.predict(Q), exact.predict(Q))
    if cls is KNeighborsClassifier:         # ties="include" (default) and "index"
        np.testing.assert_array_equal(ivf.predict_proba(Q), exact.predict_proba(Q))
        ex = cls(7, algorithm="brute", ties="index").fit(X, y)
        iv = cls(7, algorithm="ivf", ties="index", algorithm_params=FULL).fit(X, y)
        np.testing.assert_array_equal(iv.predict_proba(Q), ex.predict_proba(Q))
    # fewer lists still give a prediction for every row
    few = cls(7, algorithm="ivf", algorithm_params={"n_lists": 8, "n_probe": 1}).fit(X, y)
    assert len(few.predict(Q)) == len(Q)


def test_nearest_neighbors_and_transformer_at_full_probing():
    X, y = _frame(1)
    exact = NearestNeighbors(n_neighbors=4, algorithm="brute").fit(X)
    ivf = NearestNeighbors(n_neighbors=4, algorithm="ivf", algorithm_params=FULL).fit(X)
    for a, b in zip(ivf.kneighbors(X.iloc[:50]), exact.kneighbors(X.iloc[:50])):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(ivf.kneighbors(), exact.kneighbors()):      # each row without itself
        np.testing.assert_array_equal(a, b)
    t0 = KNeighborsTransformer(n_neighbors=3, algorithm="brute").fit_transform(X)
    t1 = KNeighborsTransformer(n_neighbors=3, algorithm="ivf",
                               algorithm_params=FULL).fit_transform(X)
    assert (t0 != t1).nnz == 0


def test_algorithm_params_follow_scikit_learn_conventions():
    est = KNeighborsClassifier(algorithm="ivf", algorithm_params={"n_lists": 10})
    assert est.get_params()["algorithm_params"] == {"n_lists": 10}
    assert clone(est).get_params()["algorithm_params"] == {"n_lists": 10}
    est.set_params(algorithm_params={"n_probe": 2})
    assert est.algorithm_params == {"n_probe": 2}
    X, y = _frame(2, n=100)
    with pytest.raises(ValueError, match="algorithm_params"):
        KNeighborsClassifier(algorithm="brute", algorithm_params={"n_lists": 4}).fit(X, y)
    with pytest.raises(ValueError, match="n_list"):
        KNeighborsClassifier(algorithm="ivf", algorithm_params={"n_list": 4}).fit(X, y)
    with pytest.raises(TypeError, match="algorithm_params"):
        KNeighborsClassifier(algorithm="ivf", algorithm_params=[4]).fit(X, y)
    with pytest.raises(ValueError, match="n_probe"):
        KNeighborsClassifier(algorithm="ivf",
                             algorithm_params={"n_lists": 3, "n_probe": 4}).fit(X, y)


def test_imputer_at_full_probing_equals_the_exact_imputer():
    X, y = _frame(3, n=400)
    X.loc[::7, "c"] = None
    exact = KNNImputer(n_neighbors=5, algorithm="brute").fit(X)
    ivf = KNNImputer(n_neighbors=5, algorithm="ivf",
                     algorithm_params={"n_lists": 6, "n_probe": 6}).fit(X)
    pd.testing.assert_frame_equal(ivf.transform(X), exact.transform(X))
    few = KNNImputer(n_neighbors=5, algorithm="ivf",
                     algorithm_params={"n_lists": 6, "n_probe": 1}).fit(X)
    assert not few.transform(X).isna().any().any()


def test_cli_knn_with_ivf(tmp_path, capsys):
    X, y = _frame(4, n=300)
    train = X.assign(cls=y)
    train.to_csv(tmp_path / "train.csv", index=False)
    X.iloc[:40].to_csv(tmp_path / "query.csv", index=False)
    base = ["knn", "--train", str(tmp_path / "train.csv"), "--target", "cls",
            "--query", str(tmp_path / "query.csv"), "--k", "3", "--predict"]
    assert cli.main(base + ["--algorithm", "brute", "-o", str(tmp_path / "b.csv")]) == 0
    assert cli.main(base + ["--algorithm", "ivf", "--n-lists", "5", "--n-probe", "5",
                            "-o", str(tmp_path / "i.csv")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "i.csv"),
                                  pd.read_csv(tmp_path / "b.csv"))
    capsys.readouterr()
    assert cli.main(base + ["--n-probe", "2", "-o", str(tmp_path / "x.csv")]) == 2
    assert "--algorithm ivf" in capsys.readouterr().err
    assert cli.main(base + ["--algorithm", "ivf", "--n-lists", "4", "--n-probe", "5",
                            "-o", str(tmp_path / "x.csv")]) == 2
    assert "--n-probe" in capsys.readouterr().err
