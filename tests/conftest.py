"""Shared pytest configuration.

Hypothesis profiles, chosen with the environment variable ``HYPOTHESIS_PROFILE``:

- ``ci`` (default): a modest, derandomized number of examples so the suite stays fast and
  reproducible; a failing example is reported as found, without shrinking;
- ``big``: many random examples, for a manual hunt (``HYPOTHESIS_PROFILE=big pytest``).
"""
import os

from hypothesis import HealthCheck, Phase, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True,
                          suppress_health_check=_SLOW_OK, print_blob=True,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("big", max_examples=400, deadline=None,
                          suppress_health_check=_SLOW_OK, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
