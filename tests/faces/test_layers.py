"""Imports only run downward, and the folders show the layers:

    faces (hdist/*.py)  ->  _estimators/  ->  _search/  ->  _core/  ->  _kernels/

A module may import modules of its own layer and of the layers below it, never above;
inside a layer, the order of ``ORDER`` (lowest first) holds too, so that no two modules
import each other.  ``hdist._version`` (one constant) may be imported from anywhere.

The presets are one table (:mod:`hdist._core.presets`) that the Metric reads; the modules
that implement preset kinds (:mod:`hdist._core.posteriors`, :mod:`hdist._core.cooccurrence`)
register nothing and are imported by the Metric alone.

The faces of their own (``cli``, ``dask``, ``plot``, ``_face``) import no private name
(``_name``) of another hdist module, and the estimators never build the kernels' rows
(``CRows``): they call the metric's operations.
"""
import ast
import pathlib

import hdist

PKG = pathlib.Path(hdist.__file__).parent

#: the layers by folder, lowest first ("" is the package folder itself: the faces)
LAYERS = ["_kernels", "_core", "_search", "_estimators", ""]
#: inside each layer, its modules lowest first (a module imports only those before it)
ORDER = {
    "_kernels": ["ctile", "plan", "tiles", "gemm", "pam", "trees", "__init__"],
    "_core": ["presets", "schema", "statistics", "threads", "discretize", "plan", "progress",
              "information", "posteriors", "cooccurrence", "config", "__init__"],
    "_search": ["checks", "memory", "explain", "scoring", "operations", "gemm_filter",
                "triangle", "ivf", "searchers", "cuda", "choice", "rowindex", "fitted",
                "params", "components", "metric", "resolve", "index", "votes", "__init__"],
    "_estimators": ["neighbors", "embedding", "prototypes", "impute", "cluster", "__init__"],
    "": ["_version", "_face", "metrics", "discretize", "neighbors", "embedding",
         "prototypes", "impute", "cluster", "datasets", "dask", "plot", "cli", "__init__",
         "__main__"],
}
#: implementation of preset kinds: imported by the Metric only
METRIC_PRIVATE = {"_core.presets", "_core.posteriors", "_core.cooccurrence"}


def modules():
    """``(folder, name, path)`` of every Python module and compiled source of hdist."""
    out = []
    for folder in LAYERS:
        base = PKG / folder if folder else PKG
        for path in sorted(base.glob("*.py")) + sorted(base.glob("*.pyx")):
            out.append((folder, path.stem, path))
    out.append(("", "datasets", PKG / "datasets" / "__init__.py"))
    return out


def _target(folder, node_module, level, name=None):
    """``(folder, module)`` an import in ``folder`` refers to (None outside hdist)."""
    if level == 0:
        parts = (node_module or "").split(".")
        if parts[0] != "hdist":
            return None
        parts = parts[1:]
    else:
        here = folder.split(".") if folder else []
        up = level - 1
        if up > len(here):
            return None
        parts = here[:len(here) - up] + ((node_module or "").split(".") if node_module else [])
    if name is not None:
        parts = parts + [name]
    parts = [p for p in parts if p]
    if not parts:
        return ("", "__init__")
    if parts[0] in LAYERS[:-1]:
        if len(parts) == 1:
            return (parts[0], "__init__")
        return (parts[0], parts[1])
    return ("", parts[0])


def imports(folder, path):
    """``(folder, module)`` of every hdist module ``path`` imports (anywhere in it, functions
    included); ``from X import name`` counts the module ``X.name`` when it is one, else X."""
    deps = set()
    if path.suffix == ".pyx":       # Cython: its cimports and imports of hdist
        for line in path.read_text().splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] in ("from", "cimport", "import") and \
                    words[1].startswith("hdist."):
                deps.add(_target(folder, words[1].rstrip(","), 0))
        return {d for d in deps if d is not None}
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _target(folder, node.module, node.level)
            if base is None:
                continue
            for alias in node.names:
                sub = _target(folder, node.module, node.level, alias.name)
                is_mod = sub is not None and sub[1] in ORDER.get(sub[0], ()) and \
                    (sub != base or base[1] == "__init__")
                deps.add(sub if is_mod and sub[1] != "__init__" else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                t = _target(folder, alias.name, 0)
                if t is not None:
                    deps.add(t)
    return {d for d in deps if d is not None}


def rank(folder, name):
    return LAYERS.index(folder), ORDER[folder].index(name)


def test_every_module_has_a_place():
    missing = ["%s/%s" % (f, n) for f, n, _ in modules() if n not in ORDER[f]]
    assert not missing, "add them to ORDER: %s" % missing


def test_every_layer_folder_is_listed():
    folders = {p.name for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS[:-1]) | {"datasets"}


def test_imports_run_downward():
    wrong = []
    for folder, name, path in modules():
        me = rank(folder, name)
        for dep in imports(folder, path):
            dfolder, dname = dep
            if (dfolder, dname) == (folder, name) or dname == "_version":
                continue
            if dname not in ORDER.get(dfolder, ()):
                wrong.append("%s/%s imports unknown %s/%s" % (folder, name, dfolder, dname))
            elif rank(dfolder, dname) >= me:
                wrong.append("%s/%s imports %s/%s" % (folder or "hdist", name,
                                                     dfolder or "hdist", dname))
    assert not wrong


def test_a_lower_layer_never_imports_a_higher_one():
    """The rule of the folders alone, stated separately so that its failure names it."""
    wrong = []
    for folder, name, path in modules():
        for dfolder, dname in imports(folder, path):
            if dname != "_version" and LAYERS.index(dfolder) > LAYERS.index(folder):
                wrong.append("%s/%s -> %s/%s" % (folder, name, dfolder, dname))
    assert not wrong


def test_the_checker_sees_an_upward_import(tmp_path):
    """The rule can fail: a core module importing the search layer is caught."""
    bad = tmp_path / "bad.py"
    bad.write_text("from .._search.metric import Metric\nfrom . import plan\n")
    deps = imports("_core", bad)
    assert ("_search", "metric") in deps and ("_core", "plan") in deps
    assert any(LAYERS.index(f) > LAYERS.index("_core") for f, _ in deps)


def test_preset_implementations_are_private_to_metric():
    wrong = []
    for folder, name, path in modules():
        for dfolder, dname in imports(folder, path):
            if "%s.%s" % (dfolder, dname) in METRIC_PRIVATE and \
                    (folder, name) not in (("_search", "metric"), ("_core", dname)):
                wrong.append("%s/%s imports %s/%s" % (folder, name, dfolder, dname))
    assert not wrong


def test_the_preset_table_is_the_registry():
    from hdist._core import presets as _presets
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


def test_public_modules_are_faces():
    """Each public module shows names of a lower layer; what its implementation defines
    says it belongs to the public module (help, repr, pickles)."""
    import importlib
    for face in ("metrics", "neighbors", "impute", "prototypes", "cluster", "embedding",
                 "discretize"):
        mod = importlib.import_module("hdist." + face)
        assert mod.__all__ and mod.__doc__ == mod._impl.__doc__
        for name in mod.__all__:
            obj = getattr(mod, name)
            assert getattr(obj, "__module__", None) != mod._impl.__name__, (face, name)
        assert sum(getattr(getattr(mod, n), "__module__", None) == mod.__name__
                   for n in mod.__all__) >= 1


#: the faces of their own (beside the public modules that only re-export): they use the
#: public names of the modules below them
OWN_FACES = ["_face", "cli", "dask", "plot"]


def private_imports(folder, path):
    """``(line, module, name)`` of every name with a leading underscore (dunders aside)
    that ``path`` imports from a module of hdist."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and _target(folder, node.module, node.level):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    out.append((node.lineno, "." * node.level + (node.module or ""),
                                alias.name))
    return out


def kernel_rows_uses(path):
    """Lines of ``path`` that name the kernels' row container ``CRows`` (imported, or
    reached as an attribute)."""
    lines = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and any(a.name == "CRows" for a in node.names):
            lines.add(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "CRows":
            lines.add(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "CRows":
            lines.add(node.lineno)
    return sorted(lines)


def test_the_checkers_see_private_imports_and_kernel_rows(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from ._core.schema import _norm_key, Schema\n"
                   "from ._version import __version__\nimport numpy as _np\n"
                   "from numpy import _core\n"
                   "from .._kernels import CRows\nfrom .. import _kernels\n"
                   "rows = _kernels.CRows\n")
    assert private_imports("", bad) == [(1, "._core.schema", "_norm_key")]
    assert private_imports("_estimators", bad)[-1] == (6, "..", "_kernels")
    assert kernel_rows_uses(bad) == [5, 7]


def test_faces_import_no_private_name():
    wrong = []
    for folder, name, path in modules():
        if folder == "" and name in OWN_FACES:
            wrong += ["%s.py:%d %s.%s" % (name, line, mod, what)
                      for line, mod, what in private_imports(folder, path)]
    assert not wrong, wrong


def test_estimators_never_build_kernel_rows():
    wrong = ["%s.py:%s" % (name, lines) for folder, name, path in modules()
             if folder == "_estimators" and (lines := kernel_rows_uses(path))]
    assert not wrong, wrong
