"""Imports only run downward: kernels know arrays, Metric and Plan sit above them, the
index above Metric, estimators, clustering, CLI, Dask and plots on top.

The presets are one table (:mod:`hdist._presets`) that Metric reads; the modules that
implement preset kinds (:mod:`hdist._posteriors`, :mod:`hdist._cooccurrence`) register
nothing and are imported by Metric alone.
"""
import ast
import pathlib

import hdist

PKG = pathlib.Path(hdist.__file__).parent

#: lowest first; a module may import modules of lower layers only
LAYERS = [
    {"_version", "_presets", "_schema", "_estimators", "_kernels", "_trees"},
    {"_threads", "discretize", "_plan", "_progress"},
    {"_gemm", "_info", "_posteriors", "_cooccurrence", "_config"},
    {"_search"},
    {"metrics"},
    {"_index"},
    {"_knn"},
    {"neighbors", "datasets", "embedding", "prototypes", "impute"},
    {"cluster", "dask", "cli", "plot"},
    {"__init__", "__main__"},
]
#: implementation of preset kinds: imported by Metric only
METRIC_PRIVATE = {"_posteriors", "_cooccurrence", "_presets"}


def layer_of(name):
    return next(i for i, layer in enumerate(LAYERS) if name in layer)


def imports(path):
    """Modules of hdist that ``path`` imports (anywhere in it, functions included);
    ``from . import name`` of something that is not a module imports the package root."""
    deps = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                deps.add(node.module.split(".")[0])
            else:
                for alias in node.names:
                    mod = alias.name
                    # a module: source, package, or compiled (.so / .pyd, any suffix)
                    is_mod = (PKG / mod).is_dir() or any(PKG.glob(mod + ".*"))
                    deps.add(mod if is_mod else "__init__")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("hdist.") or alias.name == "hdist":
                    deps.add(alias.name.split(".")[1] if "." in alias.name else "__init__")
    return deps


def modules():
    return sorted(p for p in PKG.glob("*.py"))


def test_every_module_has_a_layer():
    for path in modules():
        layer_of(path.stem)


def test_imports_run_downward():
    wrong = []
    for path in modules():
        me = layer_of(path.stem)
        for dep in imports(path):
            if layer_of(dep) >= me and dep != path.stem:
                wrong.append("%s imports %s" % (path.stem, dep))
    assert not wrong


def test_preset_implementations_are_private_to_metric():
    wrong = ["%s imports %s" % (path.stem, dep) for path in modules()
             for dep in imports(path) & METRIC_PRIVATE if path.stem != "metrics"]
    assert not wrong


def test_the_preset_table_is_the_registry():
    from hdist import _presets
    assert hdist.METRICS is _presets.METRICS
    names = [row[0] for row in _presets.TABLE]
    assert sorted(set(i.name for i in hdist.METRICS.values())) == sorted(names)
    for name, cont, nom, needs_y, settable, fixed, aliases, doc in _presets.TABLE:
        info = hdist.METRICS[name]
        # the row shows every effective default: COMMON, then the row's own values
        assert info.defaults == {**_presets.COMMON, **settable, **fixed}
        assert set(info.params) == set(_presets.COMMON) | set(settable)
        assert not set(fixed) & set(info.params)
        # every parameter a preset accepts has a default, and the Metric sees it
        m = hdist.Metric(name)
        for key in info.params:
            assert m._param(key) == info.defaults[key]
