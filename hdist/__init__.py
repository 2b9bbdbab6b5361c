"""hdist: exact heterogeneous distances and nearest neighbors for mixed tabular data.

Continuous and nominal attributes, missing values, HEOM / HVDM / VDM / Minkowski /
Gower and more, computed by OpenMP kernels over a compact fitted Plan.
"""
from ._core import threads as _threads
# before the kernels load the OpenMP runtime: its wait policy (see hdist._core.threads)
_set = _threads._request_wait_policy()
from . import _kernels  # noqa: E402
_threads._kernels_loaded(_set)
del _set
from ._version import __version__  # noqa: E402
from .metrics import METRICS, Explanation, Metric, get_metric
from ._core.config import show_config
from . import discretize
from ._core.information import entropy, mutual_information
from ._search.index import NeighborsIndex
from ._search.cuda import CudaUnavailableError
for _f in (show_config, entropy, mutual_information, NeighborsIndex, CudaUnavailableError):
    _f.__module__ = __name__            # public here; defined in hdist._core
del _f

__all__ = ["__version__", "METRICS", "Metric", "Explanation", "get_metric", "show_config"]
__all__ += ["discretize", "entropy", "mutual_information", "NeighborsIndex",
            "CudaUnavailableError"]

# Names served on first use, so that `import hdist` loads neither scikit-learn, pandas,
# pyarrow, Dask nor matplotlib.
_LAZY = {
    "KNeighborsClassifier": "neighbors", "KNeighborsRegressor": "neighbors",
    "NearestNeighbors": "neighbors", "KNeighborsTransformer": "neighbors",
    "load_dataset": "datasets", "list_datasets": "datasets",
}
_LAZY_MODULES = ("neighbors", "datasets", "dask", "plot", "cli")
_LAZY.update(KModes="cluster", KPrototypes="cluster", KMedoids="cluster")
_LAZY_MODULES += ("cluster",)
_LAZY.update(Embedding="embedding")
_LAZY_MODULES += ("embedding",)
_LAZY.update(PrototypeClassifier="prototypes")
_LAZY_MODULES += ("prototypes",)
_LAZY.update(KNNImputer="impute")
_LAZY_MODULES += ("impute",)
__all__ += list(_LAZY)


def __getattr__(name):
    import importlib
    if name in _LAZY:
        return getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    if name in _LAZY_MODULES:
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module 'hdist' has no attribute %r" % name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))
