"""The build: OpenMP really on, reported by show_config, and type stubs that match.

Run inside every wheel job (cibuildwheel's test command), so a wheel built without
OpenMP -- the silent-serial-build trap of macOS -- fails loudly.  A build made on purpose
without OpenMP (``HDIST_ALLOW_NO_OPENMP=1``, see setup.py) skips the OpenMP checks when
the same variable is set for the tests.
"""
import ast
import inspect
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hdist
from hdist import _kernels

pytestmark = [pytest.mark.smoke]

PKG = Path(hdist.__file__).parent
needs_openmp = pytest.mark.skipif(os.environ.get("HDIST_ALLOW_NO_OPENMP") == "1",
                                  reason="built without OpenMP on purpose")


@needs_openmp
def test_openmp_is_enabled():
    assert _kernels.openmp_enabled() is True
    assert _kernels.omp_max_threads() >= 1


@needs_openmp
def test_show_config_reports_openmp():
    buf = io.StringIO()
    assert hdist.show_config(file=buf) is None
    lines = dict(line.split(":", 1) for line in buf.getvalue().splitlines())
    lines = {k.strip(): v.strip() for k, v in lines.items()}
    assert lines["openmp"] == "True"
    assert lines["hdist"] == hdist.__version__
    assert int(lines["omp_max_threads"]) == _kernels.omp_max_threads()
    assert 1 <= int(lines["threads_used"]) <= int(lines["available_cpus"])


@needs_openmp
def test_thread_report_honours_omp_num_threads():
    """``OMP_NUM_THREADS`` limits the default (``n_jobs=None``) thread count, as OpenMP
    reads it when the runtime starts: checked in a fresh interpreter."""
    code = ("import hdist, hdist._kernels as k; from hdist._core.threads import effective_n_jobs;"
            "print(k.omp_max_threads(), effective_n_jobs(None))")
    path = os.pathsep.join([str(PKG.parent)] + sys.path)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["1", "1"]


def test_compiled_modules_are_in_the_package():
    for name in ("plan", "tiles", "gemm", "pam", "trees"):
        mod = __import__("hdist._kernels." + name, fromlist=["_"])
        assert Path(mod.__file__).parent == PKG / "_kernels"
        assert Path(mod.__file__).suffix in (".so", ".pyd")


# -- type stubs ---------------------------------------------------------------------------

STUBS = sorted(PKG.rglob("*.pyi"))


def test_package_is_typed():
    assert (PKG / "py.typed").exists()
    assert {str(p.relative_to(PKG)) for p in STUBS} >= {"_kernels/__init__.pyi",
                                                       "__init__.pyi"}


def _stub_defs(path):
    """Top-level functions, classes (with their public methods) and annotated names of a
    stub file: ``{name: ("def", params) | ("class", {method: params}) | ("var", None)}``."""
    tree = ast.parse(path.read_text())
    out = {}

    def params(fn):
        a = fn.args
        star = [a.vararg] if a.vararg else []
        stars = [a.kwarg] if a.kwarg else []
        return [p.arg for p in a.posonlyargs + a.args + star + a.kwonlyargs + stars]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            out[node.name] = ("def", params(node))
        elif isinstance(node, ast.ClassDef):
            methods = {}
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    methods[item.name] = params(item)
                elif isinstance(item, ast.AnnAssign):
                    methods[item.target.id] = None
            out[node.name] = ("class", methods)
        elif isinstance(node, ast.AnnAssign):
            out[node.target.id] = ("var", None)
        elif isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:     # "import X as X": an explicit re-export
                if alias.asname == alias.name:
                    out[alias.name] = ("import", None)
    return out


def _runtime_params(obj):
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [p for p in sig.parameters]


def _module_of(stub):
    parts = ("hdist",) + stub.relative_to(PKG).with_suffix("").parts
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return __import__(name, fromlist=["_"])


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: str(p.relative_to(PKG)))
def test_stub_matches_runtime(stub):
    """Every name a stub declares exists at runtime with the same parameters, and every
    public method of a stubbed class is in the stub."""
    mod = _module_of(stub)
    for name, (kind, detail) in _stub_defs(stub).items():
        if name == "__getattr__":
            continue
        assert hasattr(mod, name), "%s declares %s, missing at runtime" % (stub.name, name)
        obj = getattr(mod, name)
        if kind == "def":
            got = _runtime_params(obj)
            if got is not None:      # fused Cython functions have no signature
                assert got == detail, "%s.%s: stub %s, runtime %s" % (stub.name, name,
                                                                        detail, got)
        elif kind == "class":
            public = {a for a in vars(obj) if not a.startswith("_")}
            for meth, p in detail.items():
                if meth.startswith("__") and meth != "__init__":
                    continue
                if p is None:        # an attribute annotation: set in fit or __init__
                    continue
                assert hasattr(obj, meth), "%s.%s.%s missing at runtime" % (stub.name, name,
                                                                            meth)
                got = _runtime_params(getattr(obj, meth))
                if got is not None and meth != "__init__":
                    assert got == p, "%s.%s.%s: stub %s, runtime %s" % (
                        stub.name, name, meth, p, got)
            missing = {a for a in public if callable(getattr(obj, a)) or
                       isinstance(vars(obj)[a], property)} - set(detail)
            assert not missing, "%s.%s: public %s not in the stub" % (stub.name, name,
                                                                      sorted(missing))


def test_init_stub_covers_all():
    names = _stub_defs(PKG / "__init__.pyi")
    assert set(hdist.__all__) <= set(names), sorted(set(hdist.__all__) - set(names))


def _indexing_checker():
    path = PKG.parent / "ci" / "check_object_indexing.py"
    if not path.exists():
        pytest.skip("ci/check_object_indexing.py is not beside this hdist (installed wheel)")
    import importlib.util
    spec = importlib.util.spec_from_file_location("check_object_indexing", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_C_SNIPPET = """
static const char* const __pyx_f[] = {
  "hdist/_x.pyx",
  "<stringsource>",
};
#define __Pyx_GetItemInt(o, i, type, is_signed, to_py_func, wraparound, boundscheck, has_gil, unsafe_shared)\\
  (0)
  __pyx_t_1 = __Pyx_GetItemInt(__pyx_v_order, -1L, long, 1, f, 0, 0, 1, s); if (unlikely(!__pyx_t_1)) __PYX_ERR(0, 7, __pyx_L1_error)
  __pyx_t_2 = __Pyx_GetItemInt(__pyx_v_shape, 0, long, 1, f, 0, 1, 1, s); if (unlikely(!__pyx_t_2)) __PYX_ERR(0, 8, __pyx_L1_error)
  __pyx_t_3 = __Pyx_GetItemInt(__pyx_v_a, __pyx_v_i, long, 1, f, 1, 1, 1, s); if (unlikely(!__pyx_t_3)) __PYX_ERR(0, 9, __pyx_L1_error)
  __pyx_t_4 = __Pyx_GetItemInt(__pyx_v_r, 0, long, 1, f, 0, 1, 1, s); if (unlikely(!__pyx_t_4)) __PYX_ERR(1, 545, __pyx_L1_error)
  __pyx_t_5 = __Pyx_GetItemInt(__pyx_v_l, 2, long, 1, f, 0, 0, 1, s); if (unlikely(!__pyx_t_5)) __PYX_ERR(0, 11, __pyx_L1_error)
"""


def test_object_indexing_checker_flags_unsafe_access():
    """The checker run by CI on the generated C: a negative index with wraparound off and
    any access with boundscheck off are flagged; a literal index >= 0 (Cython drops the
    wraparound itself), a checked access and Cython's own utility code are not."""
    found = _indexing_checker().offending_accesses(_C_SNIPPET)
    assert [(f, line) for f, line, *_ in found] == [("hdist/_x.pyx", 7), ("hdist/_x.pyx", 11)]


def test_compiled_code_indexes_python_objects_by_python_rules():
    """No item access on a Python object in hdist's compiled modules has wraparound or
    boundscheck off (the generated C of this source tree's build)."""
    checker = _indexing_checker()
    cfiles = sorted(PKG.rglob("*.c"))
    if not cfiles:
        pytest.skip("no C files generated by Cython beside the sources")
    for path in cfiles:
        found = checker.offending_accesses(path.read_text(errors="replace"))
        assert found == [], "%s: %s" % (path.name, found[:5])


def test_numpy_target_is_the_oldest_numpy_supported():
    """setup.py builds for the C API of the oldest numpy pyproject.toml's dependencies
    allow, so that modules built against numpy 2's headers import there (ci/oldest.sh runs
    the suite so)."""
    root = PKG.parent
    if not (root / "setup.py").exists() or not (root / "pyproject.toml").exists():
        pytest.skip("not a source tree")
    minimum = re.search(r'^dependencies = \[.*"numpy>=(\d+)\.(\d+)"',
                        (root / "pyproject.toml").read_text(), re.M)
    target = re.search(r'"NPY_TARGET_VERSION", "NPY_(\d+)_(\d+)_API_VERSION"',
                       (root / "setup.py").read_text())
    assert minimum and target and minimum.groups() == target.groups()
