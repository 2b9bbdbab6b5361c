"""A searcher's ``exact`` says whether the set of rows it finds is exact: a bool on every
registered class (no method may shadow it), False for the inverted lists, and the
"auto" rule chooses only searchers that are exact."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search import choice
from hdist._search.searchers import SEARCHERS


def test_every_searcher_says_whether_it_is_exact():
    for name, cls in SEARCHERS.items():
        assert isinstance(cls.exact, bool), name
    assert SEARCHERS["ivf"].exact is False
    assert SEARCHERS["brute"].exact is True
    assert SEARCHERS["kd_tree"].exact is True
    assert SEARCHERS["ball_tree"].exact is True


def test_the_inverted_lists_still_answer_exactly_on_request():
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.normal(size=400), "b": rng.choice(["x", "y", "z"], 400)})
    index = hdist.NeighborsIndex("heom", algorithm="ivf", n_probe=1).fit(X)
    d, i = index._searcher.exact_knn(index._rows, 3, 1)
    dm, im = hdist.NeighborsIndex("heom", algorithm="brute").fit(X).kneighbors(X, 3)
    np.testing.assert_array_equal(d, dm)
    np.testing.assert_array_equal(i, im)
    assert index.recall(k=3).k == 3


@pytest.mark.parametrize("name", ["heom", "hvdm", "gower", "chebyshev"])
@pytest.mark.parametrize("n_rows", [10, 5000, 10 ** 6])
@pytest.mark.parametrize("frac", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("k", [None, 1, 10 ** 5])
def test_auto_chooses_only_exact_searchers(name, n_rows, frac, k):
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=60), "b": rng.choice(["x", "y"], 60),
                      "c": rng.normal(size=60)})
    plan = hdist.Metric(name).fit(X, rng.integers(0, 2, 60)).plan_
    for race in (None, lambda: (1.0, 2.0), lambda: (2.0, 1.0)):
        algo, why = choice.auto_choice(plan, n_rows, lambda: frac * n_rows, race, k=k)
        assert SEARCHERS[algo].exact is True, (algo, why)
