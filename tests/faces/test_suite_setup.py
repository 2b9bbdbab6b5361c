"""The test suite itself: a checkout without the real datasets collects and runs it (the
tests that read them skip, naming HDIST_DATA), and the warnings filters make hdist's own
deprecated calls errors without stopping the suite for a third party's."""
import os
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
