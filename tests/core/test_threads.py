"""Thread counts: tiny inputs run serial, and forcing threads on them changes nothing."""
import numpy as np
import pytest

import hdist
from hdist import _kernels
from hdist._core.threads import effective_n_jobs


def small(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.normal(size=n), rng.integers(0, 3, n).astype(float),
                         rng.integers(0, 2, n).astype(float)])
    X[rng.random(X.shape) < 0.1] = np.nan
    return X, rng.integers(0, 2, n)


@pytest.mark.parametrize("name", ["heom", "hvdm", "gower", "chebyshev", "fractional"])
def test_forced_threads_on_tiny_inputs_change_nothing(name, monkeypatch):
    X, y = small()
    m = hdist.get_metric(name, nominal=[1, 2]).fit(X, y)
    serial = (m.pairwise(X, n_jobs=1), m.kneighbors(X, 5, n_jobs=1),
              m.radius_neighbors(X, 0.7, n_jobs=1))
    monkeypatch.setattr(_kernels.plan, "SERIAL_PAIRS", 0)
    for n_jobs in (2, 3):
        D = m.pairwise(X, n_jobs=n_jobs)
        d, i = m.kneighbors(X, 5, n_jobs=n_jobs)
        rd, ri = m.radius_neighbors(X, 0.7, n_jobs=n_jobs)
        np.testing.assert_array_equal(D, serial[0])
        np.testing.assert_array_equal(d, serial[1][0])
        np.testing.assert_array_equal(i, serial[1][1])
        for a, b in zip(ri, serial[2][1]):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(rd, serial[2][0]):
            np.testing.assert_array_equal(a, b)


def test_threads_for():
    assert _kernels._threads_for(4, 10) == 1
    assert _kernels._threads_for(4, _kernels.SERIAL_PAIRS) == 4
    with pytest.raises(ValueError, match="n_threads"):
        _kernels._threads_for(0, 10 ** 6)


@pytest.mark.parametrize("n_jobs,expect", [(1, 1), (3, 3)])
def test_effective_n_jobs(n_jobs, expect):
    assert effective_n_jobs(n_jobs) == expect


def test_effective_n_jobs_defaults_and_errors():
    assert effective_n_jobs(None) >= 1
    assert effective_n_jobs(-1) >= 1
    with pytest.raises(ValueError, match="n_jobs"):
        effective_n_jobs(0)
    with pytest.raises(TypeError, match="n_jobs"):
        effective_n_jobs(1.5)
