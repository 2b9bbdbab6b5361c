"""The documentation's API reference (docs/api/index.rst, built by Sphinx's autosummary)
lists every public object: each name of a public module's ``__all__`` that hdist defines
has its page there, under the module that defines it."""
from __future__ import annotations

import importlib
import inspect
import pathlib
import re

import pytest

INDEX = pathlib.Path(__file__).resolve().parents[2] / "docs" / "api" / "index.rst"
MODULES = ("hdist", "hdist.metrics", "hdist.neighbors", "hdist.cluster", "hdist.impute",
           "hdist.prototypes", "hdist.embedding", "hdist.discretize", "hdist.datasets",
           "hdist.dask", "hdist.plot")

pytestmark = pytest.mark.skipif(not INDEX.exists(), reason="no docs/ beside the tests")


def _listed():
    """``{module.name}`` of the autosummary entries, each under the ``currentmodule``
    before it."""
    out, module, in_table = set(), None, False
    for line in INDEX.read_text().splitlines():
        m = re.match(r"\.\. currentmodule:: (\S+)", line)
        if m:
            module = m.group(1)
            continue
        if line.startswith(".. autosummary::"):
            in_table = True
            continue
        if in_table:
            if line.strip() and not line.startswith("   "):
                in_table = False
            elif line.strip() and not line.strip().startswith(":"):
                out.add("%s.%s" % (module, line.strip()))
    return out


def _home(mod_name, name):
    """Where an object of ``mod_name.__all__`` is documented: the public module that
    defines it (``hdist.Metric`` -> ``hdist.metrics.Metric``); None for what hdist does
    not define (re-exported third-party classes, the version string, submodules)."""
    mod = importlib.import_module(mod_name)
    obj = getattr(mod, name)
    if inspect.ismodule(obj) or name == "__version__":
        return None
    if inspect.isclass(obj) or inspect.isfunction(obj):
        module = getattr(obj, "__module__", "")
        return "%s.%s" % (module, obj.__qualname__) if module.startswith("hdist") else None
    # data (METRICS, NA_VALUES, ...): the first public module that lists it
    for other in MODULES[1:]:
        if name in getattr(importlib.import_module(other), "__all__", ()):
            return "%s.%s" % (other, name)
    return "%s.%s" % (mod_name, name)


def test_every_public_object_has_a_page():
    pytest.importorskip("dask.dataframe")
    pytest.importorskip("matplotlib")
    listed = _listed()
    missing = set()
    for mod_name in MODULES:
        for name in importlib.import_module(mod_name).__all__:
            home = _home(mod_name, name)
            if home is not None and home not in listed:
                missing.add(home)
    assert not missing, "not in docs/api/index.rst: %s" % ", ".join(sorted(missing))


def test_the_listed_objects_exist():
    for qual in _listed():
        module, name = qual.rsplit(".", 1)
        assert hasattr(importlib.import_module(module), name), qual
