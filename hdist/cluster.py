"""The public module ``hdist.cluster``, implemented in :mod:`hdist._estimators.cluster`
(whose docstring it shows)."""
from ._face import publish
from ._estimators import cluster as _impl
from ._estimators.cluster import (KModes, KPrototypes, KMedoids,
                                  NotFittedError)  # noqa: F401

__all__ = ["KModes", "KPrototypes", "KMedoids", "NotFittedError"]
publish(__name__, _impl, __all__)


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
