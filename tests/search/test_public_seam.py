"""The search layer's public names that the faces use: check_k, check_number,
Metric.check_fitted, Metric.fit_summary and Metric.without_training_rows."""
import pickle

import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._core.schema import NotFittedError
from hdist._search.checks import check_k, check_number

X = pd.DataFrame({"a": [1.0, 2.0, 4.0, np.nan, 0.5], "b": ["x", "y", "x", "z", "y"]})
y = [0, 1, 0, 1, 1]


def test_check_k_and_check_number_keep_their_messages():
    assert check_k(2, 5) == 2 and check_number("r", 1) == 1.0
    with pytest.raises(TypeError, match="k must be an int"):
        check_k(True, 5)
    with pytest.raises(ValueError, match="k = 6 is larger than the 5 available"):
        check_k(6, 5)
    with pytest.raises(ValueError, match="r must be >= 0"):
        check_number("r", -1.0, lo=0.0, lo_open=False)


def test_check_fitted():
    m = hdist.Metric("hvdm")
    with pytest.raises(NotFittedError, match="not fitted yet"):
        m.check_fitted()
    assert m.fit(X, y).check_fitted() is None


def test_without_training_rows_measures_as_the_metric():
    m = hdist.Metric("hvdm").fit(X, y)
    slim = m.without_training_rows()
    assert slim is not m and slim.plan_ is m.plan_ and slim.train_.n == 0
    assert slim.n_train_ == m.n_train_ and m.train_.n == len(X)
    assert len(slim._y) == 0
    np.testing.assert_array_equal(slim.pairwise(X), m.pairwise(X))
    assert len(pickle.dumps(slim)) < len(pickle.dumps(m))
    with pytest.raises(NotFittedError):
        hdist.Metric("heom").without_training_rows()


def test_fit_summary_is_public():
    W = np.ones((len(X), 2))
    a = hdist.Metric("heom").fit_summary(X, None, W)
    b = hdist.Metric("heom").fit(X)
    np.testing.assert_array_equal(a.pairwise(X), b.pairwise(X))
    with pytest.raises(ValueError, match="column weights"):
        hdist.Metric("heom").fit_summary(X, None, -W)


def test_a_searcher_without_its_searches_cannot_be_made():
    from hdist._search.searchers import Searcher

    class Half(Searcher):
        name = "half"

        def knn(self, queries, k, threads, *, exclude_self=False, ties=False):
            return None

    with pytest.raises(TypeError, match="radius"):
        Half(None, None)
