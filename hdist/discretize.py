"""The public module ``hdist.discretize``, implemented in :mod:`hdist._core.discretize`
(whose docstring it shows)."""
from ._face import publish
from ._core import discretize as _impl
from ._core.discretize import (Discretizer, EqualWidth, EqualFrequency, MDLP, equal_width,
                               equal_frequency, mdlp)  # noqa: F401

__all__ = ["Discretizer", "EqualWidth", "EqualFrequency", "MDLP", "equal_width",
           "equal_frequency", "mdlp"]
publish(__name__, _impl, __all__)


def __getattr__(name):
    # the implementation's other names, for code and pickles that found them here
    return getattr(_impl, name)
