"""The public module ``hdist.embedding``, implemented in :mod:`hdist._estimators.embedding`
(whose docstring it shows)."""
from ._face import publish
from ._estimators import embedding as _impl
from ._estimators.embedding import (Embedding)  # noqa: F401

__all__ = ["Embedding"]
publish(__name__, _impl, __all__)


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
