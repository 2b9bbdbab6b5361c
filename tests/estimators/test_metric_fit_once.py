"""Each estimator resolves its metric once (``resolve_metric``), fits it once, and hands
that fitted metric to its index: one Metric made and one ``Metric.fit`` per ``fit``."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist.cluster import KMedoids, KModes, KPrototypes
from hdist.embedding import Embedding
from hdist.impute import KNNImputer
from hdist.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                             KNeighborsTransformer, NearestNeighbors)
from hdist.prototypes import PrototypeClassifier


def table(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["x", "y", "z"], n),
                      "c": rng.normal(size=n)})
    X.loc[rng.random(n) < 0.1, "a"] = np.nan
    return X, rng.integers(0, 2, n)


@pytest.fixture
def counted(monkeypatch):
    """Counts of Metric objects made and of Metric.fit calls."""
    counts = {"made": 0, "fit": 0}
    init, fit = hdist.Metric.__init__, hdist.Metric.fit

    def counting_init(self, *args, **kw):
        counts["made"] += 1
        init(self, *args, **kw)

    def counting_fit(self, *args, **kw):
        counts["fit"] += 1
        return fit(self, *args, **kw)
    monkeypatch.setattr(hdist.Metric, "__init__", counting_init)
    monkeypatch.setattr(hdist.Metric, "fit", counting_fit)
    return counts


@pytest.mark.parametrize("make, supervised", [
    (lambda: KNeighborsClassifier(3, metric="hvdm"), True),
    (lambda: KNeighborsClassifier(3, metric=hdist.Metric("heom", p=1.0),
                                  metric_params={"missing": "max"}), True),
    (lambda: KNeighborsRegressor(3, metric="heom", algorithm="kd_tree"), True),
    (lambda: KNeighborsRegressor(3, metric="hvdm"), True),
    (lambda: NearestNeighbors(n_neighbors=3, algorithm="ball_tree",
                              metric_params={"missing": "max"}), False),
    (lambda: KNeighborsTransformer(n_neighbors=3), False),
    (lambda: KNNImputer(n_neighbors=3, attribute_weights=None), False),
    (lambda: PrototypeClassifier("hvdm", random_state=0), True),
    (lambda: PrototypeClassifier(("heom", {"p": 1.0}), random_state=0), True),
    (lambda: KPrototypes(2, n_init=1, random_state=0), False),
    (lambda: KMedoids(2, random_state=0), False),
    (lambda: Embedding("hvdm"), True),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_one_metric_one_fit(make, supervised, weighted, counted):
    X, y = table()
    est = make()
    sw = np.where(np.arange(len(X)) % 7 == 0, 0.0, 1.5) if weighted else None
    before = dict(counted)
    if isinstance(est, (KNeighborsTransformer, NearestNeighbors)):
        if weighted:
            return
        est.fit(X)
    else:
        est.fit(X, y if supervised else None, sample_weight=sw)
    assert counted["made"] - before["made"] == 1, type(est).__name__
    assert counted["fit"] - before["fit"] == 1, type(est).__name__
    index = getattr(est, "_index", None)
    if index is not None:
        assert index.metric_ is est.metric_


def test_kmodes_fits_once(counted):
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.choice(list("pqr"), 50), "b": rng.choice(list("st"), 50)})
    KModes(2, n_init=1, random_state=0).fit(X)
    assert counted == {"made": 1, "fit": 1}


def test_a_fitted_metric_is_refitted_on_a_copy(counted):
    X, y = table()
    given = hdist.Metric("heom", p=1.0).fit(X.iloc[:20])
    plan = given.plan_
    clf = KNeighborsClassifier(3, metric=given).fit(X, y)
    assert clf.metric_ is not given and given.plan_ is plan
    assert clf.metric_.n_train_ == len(X) and given.n_train_ == 20
    km = KMedoids(2, metric=given, random_state=0).fit(X)
    assert km.metric_ is given and given.plan_ is plan
