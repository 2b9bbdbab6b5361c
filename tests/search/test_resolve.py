"""resolve_metric: one precedence for naming a metric (defaults < a Metric's parameters <
metric_params), the caller's Metric never modified, a fitted Metric returned as it is."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search.resolve import resolve_metric

X = pd.DataFrame({"a": [1.0, 2.0, 4.0, np.nan], "b": ["x", "y", "x", "z"]})


def test_a_name_with_parameters():
    m = resolve_metric("HVDM", {"p": 1.0})
    assert isinstance(m, hdist.Metric) and m.name == "hvdm" and m.params == {"p": 1.0}
    assert resolve_metric("heom").params == {}


def test_an_unfitted_metric_is_copied_and_its_parameters_overridden():
    given = hdist.Metric("hvdm", vdm="N1", p=3.0)
    m = resolve_metric(given, {"vdm": "N3"})
    assert m is not given and m.params == {"vdm": "N3", "p": 3.0}
    assert given.params == {"vdm": "N1", "p": 3.0}
    plain = resolve_metric(given)
    assert plain is not given and plain.params == given.params
    plain.fit(X, [0, 1, 0, 1])
    assert not hasattr(given, "plan_")


def test_a_fitted_metric_is_returned_as_it_is():
    given = hdist.Metric("heom").fit(X)
    assert resolve_metric(given) is given
    assert resolve_metric(given, {}) is given
    with pytest.raises(ValueError, match="metric_params cannot change the fitted Metric"):
        resolve_metric(given, {"p": 1.0})


def test_refit_copies_a_fitted_metric():
    given = hdist.Metric("heom", p=1.0).fit(X)
    m = resolve_metric(given, {"missing": "max"}, refit=True)
    assert m is not given and not hasattr(m, "plan_")
    assert m.params == {"p": 1.0, "missing": "max"}
    assert given.params == {"p": 1.0} and hasattr(given, "plan_")


def test_defaults_rank_lowest_and_skip_what_the_preset_does_not_take():
    d = {"missing": "ignore", "vdm": "N3"}
    assert resolve_metric("heom", None, defaults=d).params == {"missing": "ignore"}
    assert resolve_metric("heom", {"missing": "max"}, defaults=d).params == {"missing": "max"}
    m = resolve_metric(hdist.Metric("hvdm", missing="one"), defaults=d)
    assert m.params == {"missing": "one", "vdm": "N3"}
    fitted = hdist.Metric("heom").fit(X)
    assert resolve_metric(fitted, defaults=d) is fitted


@pytest.mark.parametrize("metric, params, error, match", [
    (3, None, TypeError, "metric must be a metric name or an hdist.Metric, got 3"),
    (("heom", {}), None, TypeError, "metric must be a metric name"),
    ("nope", None, ValueError, "metric: unknown metric 'nope'"),
    ("heom", [1], TypeError, "metric_params must be a dict or None"),
    ("heom", {"q": 1}, TypeError, "'q'"),
    ("heom", {"p": -1.0}, ValueError, "p"),
])
def test_bad_input(metric, params, error, match):
    with pytest.raises(error, match=match):
        resolve_metric(metric, params).fit(X)


def test_what_names_the_argument():
    with pytest.raises(TypeError, match="--metric must be"):
        resolve_metric(1.5, what="--metric")
    with pytest.raises(ValueError, match="--metric: unknown metric"):
        resolve_metric("nope", what="--metric")
    with pytest.raises(TypeError, match="defaults must be a dict"):
        resolve_metric("heom", defaults=[("p", 1)])


def test_no_what_leaves_the_metric_message_unprefixed():
    with pytest.raises(ValueError) as got:
        resolve_metric("nope", what=None)
    with pytest.raises(ValueError) as own:
        hdist.Metric("nope")
    assert str(got.value) == str(own.value)
    with pytest.raises(TypeError, match="^metric must be a metric name"):
        resolve_metric(1.5, what=None)
    with pytest.raises(TypeError, match="what must be a str or None"):
        resolve_metric("heom", what=3)


def test_the_index_resolves_its_metric_by_the_same_precedence():
    y = [0, 1, 0, 1]
    by_name = hdist.NeighborsIndex("hvdm", metric_params={"p": 1.0}).fit(X, y)
    assert by_name.metric_.name == "hvdm" and by_name.metric_.params == {"p": 1.0}
    given = hdist.Metric("hvdm", vdm="N1", p=3.0)
    merged = hdist.NeighborsIndex(given, metric_params={"vdm": "N3"}).fit(X, y)
    assert merged.metric_ is not given and not hasattr(given, "plan_")
    assert merged.metric_.params == {"vdm": "N3", "p": 3.0}
    want = hdist.Metric("hvdm", vdm="N3", p=3.0).fit(X, y).pairwise(X)
    np.testing.assert_array_equal(merged.metric_.pairwise(X), want)
    fitted = hdist.Metric("heom").fit(X)
    assert hdist.NeighborsIndex(fitted).fit().metric_ is fitted
    assert hdist.NeighborsIndex(fitted, metric_params={}).fit().metric_ is fitted
    with pytest.raises(ValueError, match="metric_params cannot change the fitted Metric"):
        hdist.NeighborsIndex(fitted, metric_params={"p": 1.0})
    with pytest.raises(TypeError, match="metric_params must be a dict or None"):
        hdist.NeighborsIndex("heom", metric_params=[("p", 1.0)])
    with pytest.raises(ValueError) as got:
        hdist.NeighborsIndex("nope").fit(X)
    assert str(got.value).startswith("unknown metric 'nope'")


@pytest.mark.parametrize("refit", ["yes", 1, None, 0.0])
def test_refit_must_be_a_bool(refit):
    with pytest.raises(TypeError, match="^refit must be a bool, got"):
        resolve_metric("heom", refit=refit)
    assert resolve_metric("heom", refit=np.bool_(True)).name == "heom"
