"""The public module ``hdist.neighbors``, implemented in :mod:`hdist._estimators.neighbors`
(whose docstring it shows)."""
from ._face import publish
from ._estimators import neighbors as _impl
from ._estimators.neighbors import (KNeighborsClassifier, KNeighborsRegressor,
                                    NearestNeighbors, KNeighborsTransformer)  # noqa: F401
from ._search.cuda import CudaUnavailableError

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor", "NearestNeighbors",
           "KNeighborsTransformer", "CudaUnavailableError"]
publish(__name__, _impl, __all__[:4])      # CudaUnavailableError belongs to hdist


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
