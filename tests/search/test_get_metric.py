"""``get_metric`` against ``Metric`` and the plain reference (reference.py), and the
parameters a metric refuses, each named in its error."""
import numpy as np
import pytest

from hdist import Metric, get_metric

from reference import reference_metric
from test_foundation import PRESETS, close, sweep_tables

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")


@pytest.mark.parametrize("preset", PRESETS)
def test_get_metric(preset):
    train, queries, y = sweep_tables(preset)
    a = get_metric(preset, nominal=train.override(), missing="max")
    assert isinstance(a, Metric) and a.name == preset
    a.fit(train.frame(), y)
    b = Metric(preset, nominal=train.override(), missing="max").fit(train.frame(), y)
    assert np.array_equal(a.pairwise(queries.frame(), train.frame()),
                          b.pairwise(queries.frame(), train.frame()))
    r = reference_metric(preset, train.kinds, missing="max").fit(train.columns, y)
    close(a.pairwise(queries.frame(), train.frame()),
          r.pairwise(queries.rows(), train.rows()))


def test_parameters_rejected_by_name():
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("no-such-metric")
    for preset, bad in [("euclidean", "p"), ("heom", "vdm"), ("heom", "unseen"),
                        ("vdm", "normalization"), ("gower", "vdm"), ("chebyshev", "p")]:
        with pytest.raises(TypeError, match=repr(bad)):
            get_metric(preset, **{bad: 1})
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "x"]})
    with pytest.raises(ValueError, match="fractional"):
        Metric("fractional", p=1.5).fit(X)
    with pytest.raises(ValueError, match="p must be > 0"):
        Metric("heom", p=0).fit(X)
    with pytest.raises(ValueError, match="column 'a'"):
        Metric("vdm").fit(X, [0, 1, 0])          # vdm refuses continuous columns
    with pytest.raises(ValueError, match="needs class labels"):
        Metric("hvdm").fit(X)
    with pytest.raises(ValueError, match="missing label"):
        Metric("hvdm").fit(X, [0, None, 1])
    with pytest.raises(ValueError, match="'b'"):   # no observed value, under "max"
        Metric("heom", missing="max").fit(pd.DataFrame({"a": [1.0, 2.0], "b": [None, None]},
                                                       dtype=object).astype({"a": float}))
    with pytest.raises(ValueError, match="missing"):
        Metric("heom", missing="sometimes").fit(X)
    with pytest.raises(ValueError, match="normalization"):
        Metric("heom", normalization="zscore").fit(X)
    with pytest.raises(ValueError, match="weights"):
        Metric("heom", weights=[1.0, -1.0]).fit(X)
    with pytest.raises(ValueError, match="weights"):
        Metric("heom", weights={"zz": 1.0}).fit(X)
    m = Metric("heom").fit(X)
    with pytest.raises(ValueError, match="larger than"):
        m.kneighbors(X, 4)
    with pytest.raises(ValueError, match="exclude_self"):
        m.kneighbors(X.iloc[:2], 1, exclude_self=True)
