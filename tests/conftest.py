"""Shared pytest configuration.

Hypothesis profiles, chosen with the environment variable ``HYPOTHESIS_PROFILE``:

- ``ci`` (default): a modest, derandomized number of examples so the suite stays fast and
  reproducible; a failing example is reported as found, without shrinking;
- ``big``: many random examples, for a manual hunt (``HYPOTHESIS_PROFILE=big pytest``).

Tests marked ``needs_data`` read the real datasets (tests/datadir.py): without a data
folder they are skipped with the reason; with ``HDIST_DATA`` naming a folder that is not
there they fail, so that a run meant to have the data cannot pass by skipping them.

The CI stages that run a part of the suite select it by the marks pyproject.toml declares
(``kernels``: again on the baseline instruction set; ``sanitize``: under the bounds-checked
and sanitizer builds; ``smoke``: the emulated aarch64 wheel; ``trees``), which each module
states in its module-level ``pytestmark`` (tests/faces/test_suite_setup.py checks them).
"""
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

# The tests of each layer live in a folder of their own (kernels, core, search, estimators,
# faces); the helpers (reference.py, strategies.py, ...) live here, and some test modules
# import others: every one of these folders is importable.
_HERE = Path(__file__).resolve().parent
for _dir in [_HERE] + sorted(p for p in _HERE.iterdir() if (p / "__init__.py").exists() is False
                             and p.is_dir() and any(p.glob("test_*.py"))):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True,
                          suppress_health_check=_SLOW_OK, print_blob=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("big", max_examples=400, deadline=None,
                          suppress_health_check=_SLOW_OK, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


import datadir  # noqa: E402  (tests/ is on sys.path from here on)


def pytest_runtest_setup(item):
    """Skip a ``needs_data`` test when there is no data folder, before its fixtures run;
    fail it when ``HDIST_DATA`` names a folder that is not there."""
    if item.get_closest_marker("needs_data") is None:
        return
    reason = datadir.missing_reason()
    if reason is None:
        return
    if os.environ.get("HDIST_DATA"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
