"""The test suite itself: a checkout without the real datasets collects and runs it (the
tests that read them skip, naming HDIST_DATA), and the warnings filters make hdist's own
deprecated calls errors without stopping the suite for a third party's; the CI stages
that run a part of it select that part by marks that every module declares."""
import ast
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]      # tests/
RUN_FROM = HERE.parent                           # where pyproject.toml sits beside tests/


def _pytest(*args, data):
    env = dict(os.environ, HDIST_DATA=data)
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=RUN_FROM, env=env, capture_output=True, text=True, timeout=600)


def test_the_whole_suite_collects_without_a_data_folder():
    # HDIST_DATA="" stands for a clone with nothing beside it (no shared/data either)
    out = _pytest("--collect-only", "-q", "tests", data="")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert " collected" in out.stdout or "tests collected" in out.stdout


def test_data_tests_skip_without_the_folder_and_fail_with_a_wrong_one(tmp_path):
    target = ["-q", "-rs", "-m", "needs_data", "tests/core/test_mi.py"]
    out = _pytest(*target, data="")
    assert out.returncode == 0, out.stdout[-3000:]
    summary = out.stdout.strip().splitlines()[-1]
    assert "4 skipped" in summary and "passed" not in summary and "failed" not in summary
    assert "needs the real datasets: set HDIST_DATA" in out.stdout
    # a run that names a folder means to have the data: no silent skips there
    out = _pytest(*target, data=str(tmp_path / "nowhere"))
    assert out.returncode == 1
    assert "is not a folder" in out.stdout
    summary = out.stdout.strip().splitlines()[-1]
    assert "4 errors" in summary and "skipped" not in summary    # at their setup


def _action(category, module):
    """The action the active filters take for ``category`` issued from ``module``."""
    for action, message, cat, mod, lineno in warnings.filters:
        if (message is None or message.match("a message")) and issubclass(category, cat) \
                and (mod is None or mod.match(module)) and lineno == 0:
            return action
    return warnings.defaultaction


@pytest.mark.parametrize("category", [DeprecationWarning, PendingDeprecationWarning,
                                      FutureWarning])
def test_deprecations_are_errors_where_hdist_or_its_tests_issue_them(category):
    # numpy and pandas attribute a deprecation to the line that called them
    for module in ("hdist", "hdist._core.schema", "hdist.metrics", "test_encode",
                   "strategies", "sklearn_checks"):
        assert _action(category, module) == "error", module
    # a library's deprecated call into another is that library's to fix
    for module in ("pyparsing.core", "matplotlib._fontconfig_pattern", "sklearn.utils",
                   "scipy.sparse", "joblib.numpy_pickle"):
        assert _action(category, module) != "error", module


def test_an_unexpected_column_kind_warning_fails_the_test():
    # a test that neither declares the kinds nor expects the warning fails, wherever the
    # warning's stacklevel points (the user's call: the test module itself)
    from hdist.metrics import ColumnKindWarning
    for module in ("test_encode", "sklearn.base", "hdist._core.schema"):
        assert _action(ColumnKindWarning, module) == "error", module


# -- the CI stages' selections ---------------------------------------------------------
# Each stage that runs a part of the suite selects it by a mark (pyproject.toml's markers:
# kernels on the baseline instruction set, sanitize under the bounds-checked and sanitizer
# builds, smoke on the emulated aarch64 wheel), and each test module declares its stages
# in its module-level ``pytestmark``: a new module of a folder whose stage it misses fails
# here instead of silently running in no stage.

#: the marks every test module of a folder carries
FOLDER_MARKS = {"kernels": {"kernels", "sanitize"}}


def stage_marks(path):
    """The names ``NAME`` of the ``pytest.mark.NAME`` a test module's module-level
    ``pytestmark`` holds (assigned or extended)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            continue
        for sub in ast.walk(node.value):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) \
                    and sub.value.attr == "mark":
                names.add(sub.attr)
    return names


def _test_modules():
    return sorted(HERE.glob("*/test_*.py"))


def _declared(pytestconfig):
    return {line.split(":")[0].strip() for line in pytestconfig.getini("markers")}


def test_stage_marks_are_declared_and_strict(pytestconfig):
    declared = _declared(pytestconfig)
    assert {"needs_data", "kernels", "sanitize", "smoke", "trees"} <= declared
    # a misspelt mark is an error at collection, not a module that leaves its stage
    assert "--strict-markers" in pytestconfig.getini("addopts")


def test_the_checker_reads_module_marks(tmp_path):
    one = tmp_path / "test_one.py"
    one.write_text("import pytest\npytestmark = pytest.mark.filterwarnings('ignore')\n"
                   "pytestmark = [pytestmark, pytest.mark.kernels]\n"
                   "pytestmark += [pytest.mark.sanitize]\n"
                   "@pytest.mark.smoke\ndef test_x():\n    pass\n")
    assert stage_marks(one) == {"filterwarnings", "kernels", "sanitize"}


def _name(path):
    return "%s/%s" % (path.parent.name, path.name)


def test_every_module_carries_the_marks_of_its_stages():
    wrong = []
    for path in _test_modules():
        need = set(FOLDER_MARKS.get(path.parent.name, ()))
        if path.parent.name == "kernels" and path.stem.startswith("test_tree"):
            need.add("trees")
        lacking = need - stage_marks(path)
        if lacking:
            wrong.append("%s lacks %s" % (_name(path), ", ".join(sorted(lacking))))
    assert not wrong, wrong


def test_every_stage_mark_selects_modules():
    held = {}
    for path in _test_modules():
        for mark in stage_marks(path):
            held.setdefault(mark, []).append(path.name)
    for mark in ("kernels", "sanitize", "smoke", "trees"):
        assert held.get(mark), mark
    assert "test_build.py" in held["smoke"]        # the emulated wheel runs the build tests


def _stage_commands(path, start, end=None):
    """The lines of ``path`` from the first one holding ``start`` to the first one after
    it holding ``end`` (the rest of the file without one)."""
    lines = path.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    stop = len(lines)
    if end is not None:
        stop = next(i for i in range(first + 1, len(lines)) if end in lines[i])
    return "\n".join(lines[first:stop])


@pytest.mark.parametrize("where,start,end,expect", [
    ("pyproject.toml", "[tool.cibuildwheel]", None, ['-m "not needs_data" tests',
                                                    "-m smoke tests"]),
    (".ci/run", 'stage "HDIST_ISA=baseline', 'stage "', ["-m kernels tests"]),
    ("ci/sanitize.sh", "-- run --", None, ["SELECT=(-m sanitize)", '"pytest.mark.sanitize" tests']),
], ids=["wheels", "baseline-isa", "sanitizers"])
def test_ci_stages_select_tests_by_marks(where, start, end, expect):
    path = RUN_FROM / where
    if not path.exists():
        pytest.skip("%s is not beside the tests (a wheel's test run)" % where)
    text = _stage_commands(path, start, end)
    for piece in expect:
        assert piece in text, (where, piece)
    # no test file named one by one: a list kept by hand drops a new module silently
    named = re.findall(r"tests/\w+/test_\w+\.py", text)
    assert not named, (where, named)
