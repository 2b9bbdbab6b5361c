"""The public module ``hdist.metrics``, implemented in :mod:`hdist._search.metric`
(whose docstring it shows)."""
from ._face import publish
from ._search import metric as _impl
from ._search.metric import (METRICS, MetricInfo, POLICIES, Metric, Explanation, get_metric,
                             balanced_accuracy, NA_VALUES, ColumnKindWarning)  # noqa: F401

__all__ = ["METRICS", "MetricInfo", "POLICIES", "Metric", "Explanation", "get_metric",
           "balanced_accuracy", "NA_VALUES", "ColumnKindWarning"]
publish(__name__, _impl, __all__)
MetricInfo.__module__ = __name__        # defined by hdist._core.presets
ColumnKindWarning.__module__ = __name__  # defined by hdist._core.schema


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
