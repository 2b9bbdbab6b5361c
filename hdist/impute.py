"""The public module ``hdist.impute``, implemented in :mod:`hdist._estimators.impute`
(whose docstring it shows)."""
from ._face import publish
from ._estimators import impute as _impl
from ._estimators.impute import (KNNImputer)  # noqa: F401

__all__ = ["KNNImputer"]
publish(__name__, _impl, __all__)


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
