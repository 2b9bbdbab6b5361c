"""Fitted objects pickled by hdist 0.1 load in this version and give the same answers.

``tests/fixtures/release_0.1.pkl.gz`` holds metrics, indexes (brute force, KD-tree, ball
tree), estimators, an imputer and clustering models fitted and pickled by release 0.1 (``tests/fixtures/make_release_pickles.py``), beside what each answered
there.  Modules that moved since keep loading through the aliases of ``hdist._moved``
when there are any.
"""
import gzip
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest
from datadir import TESTS

FIXTURE = TESTS / "fixtures" / "release_0.1.pkl.gz"

# numpy 1.x cannot read what numpy 2 pickled (its arrays refer to numpy._core)
pytestmark = pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2,
                                reason="the fixture was pickled by numpy 2")


def _load():
    with warnings.catch_warnings():
        # scikit-learn warns when an estimator was pickled by another of its versions
        warnings.filterwarnings("ignore", message=".*unpickle estimator.*")
        with gzip.open(FIXTURE, "rb") as fh:
            return pickle.load(fh)


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert b.dtype == object and a.shape == b.shape
        for x, y in zip(a.ravel(), b.ravel()):
            _same(x, y)
    else:
        np.testing.assert_array_equal(a, b)


STORED = _load() if int(np.__version__.split(".")[0]) >= 2 else {"objects": {}}


@pytest.mark.parametrize("name", sorted(STORED["objects"]))
def test_release_pickle_loads_and_answers_alike(name):
    Q = STORED["Q"]
    obj, answers = STORED["objects"][name]
    calls = {
        "kneighbors": lambda o: o.kneighbors(Q, 4),
        "pairwise": lambda o: o.pairwise(Q[:5], STORED["X"][:7]),
        "radius": lambda o: o.radius_neighbors(Q[:5], 0.6),
        "predict_proba": lambda o: o.predict_proba(Q),
        "predict": lambda o: o.predict(Q),
        "transform": lambda o: o.transform(Q),
    }
    assert answers
    for call, want in answers:
        _same(want, calls[call](obj))
    again = pickle.loads(pickle.dumps(obj))
    for call, want in answers:
        _same(want, calls[call](again))


def test_fixture_holds_every_kind():
    kinds = {name.split("-")[0] for name in STORED["objects"]}
    assert kinds >= {"metric", "index", "knn", "imputer", "kmedoids", "kprototypes"}


def test_old_module_names_leave_the_moved_module_intact():
    """Importing a 0.1 module name gives the moved module itself and leaves its import
    state alone: its ``__spec__`` still names the new module, so a relative import run
    inside it later resolves from its own package (a spec renamed to the old name made
    every such import warn "__package__ != __spec__.parent" -- a DeprecationWarning from
    Python 3.12 -- and would resolve it from ``hdist`` once Python reads the spec)."""
    import importlib

    for old, new in [("hdist._plan", "hdist._core.plan"), ("hdist._index", "hdist._search.index"),
                     ("hdist._trees", "hdist._kernels.trees")]:
        module = importlib.import_module(old)
        assert module is importlib.import_module(new)
        assert module.__spec__.name == new
        assert module.__spec__.parent == module.__package__
    import hdist._core.plan as plan

    X = np.arange(12.0).reshape(6, 2)
    metric = __import__("hdist").Metric("euclidean").fit(X)
    metric.plan_._cplan = None              # the next use imports the kernels again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert metric.plan_.cplan is not None
    assert isinstance(metric.plan_, plan.Plan)
