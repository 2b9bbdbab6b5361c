"""The module names of hdist 0.1 whose modules moved into the layer folders, so that
pickles written by 0.1 (which name the module of each class they hold) still load:
``import hdist._plan`` gives :mod:`hdist._core.plan`, and so on.  Nothing else should use
these names."""
import importlib
import importlib.abc
import importlib.util
import sys

#: old name -> the module that holds its contents now
MOVED = {
    "hdist._schema": "hdist._core.schema",
    "hdist._presets": "hdist._core.presets",
    "hdist._plan": "hdist._core.plan",
    "hdist._posteriors": "hdist._core.posteriors",
    "hdist._cooccurrence": "hdist._core.cooccurrence",
    "hdist._info": "hdist._core.information",
    "hdist._config": "hdist._core.config",
    "hdist._threads": "hdist._core.threads",
    "hdist._progress": "hdist._core.progress",
    "hdist._index": "hdist._search.index",
    "hdist._gemm": "hdist._search.gemm_filter",
    "hdist._knn": "hdist._search.votes",
    "hdist._trees": "hdist._kernels.trees",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the module that replaced it (the same object).

    The import system writes the old name's spec into the module it is given; the module's
    own spec is put back, so that it still says where it lives: relative imports inside it
    are resolved from its ``__spec__`` (``__package__ != __spec__.parent`` is a
    DeprecationWarning from Python 3.12)."""

    def find_spec(self, name, path=None, target=None):
        if name in MOVED:
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        own = module.__spec__.loader_state
        if own is not None:
            module.__spec__ = own


def install():
    # first in line: an old name is never looked for as a file (a stale one of an older
    # install would shadow the module that replaced it)
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
