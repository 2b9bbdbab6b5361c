"""The public module ``hdist.prototypes``, implemented in :mod:`hdist._estimators.prototypes`
(whose docstring it shows)."""
from ._face import publish
from ._estimators import prototypes as _impl
from ._estimators.prototypes import (PrototypeClassifier,
                                     PrototypeExplanation)  # noqa: F401

__all__ = ["PrototypeClassifier", "PrototypeExplanation"]
publish(__name__, _impl, __all__)


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
