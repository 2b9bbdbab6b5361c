"""hdist: exact heterogeneous distances and nearest neighbors for mixed tabular data.

Continuous and nominal attributes, missing values, HEOM / HVDM / VDM / Minkowski /
Gower and more, computed by OpenMP kernels over a compact fitted Plan.
"""
from ._version import __version__
from .metrics import METRICS, Explanation, Metric, get_metric
from ._config import show_config
from . import _cooccurrence  # noqa: F401  (registers hds, add, smd)

__all__ = ["__version__", "METRICS", "Metric", "Explanation", "get_metric", "show_config"]
