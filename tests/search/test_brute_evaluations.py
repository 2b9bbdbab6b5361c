"""Brute force counts the distances it computes: every reference row for each query, less
the query's own row where it is skipped and lies among the reference rows."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search.searchers import BruteForce


@pytest.mark.parametrize("method", ["direct", "gemm"])
@pytest.mark.parametrize("offset", [0, 3, 5, 8, 20])
def test_radius_counts_the_rows_it_measures(method, offset):
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": np.arange(8.0) * 0.5 + 0.25, "b": rng.choice(["x", "y"], 8)})
    m = hdist.Metric("heom").fit(X)
    rows = m.train_
    brute = BruteForce(m.plan_, rows, method=method, min_pairs=0)
    f = brute.radius(rows, 10.0, 1, exclude_self=True, self_offset=offset)
    own = np.arange(rows.n) + offset < rows.n
    np.testing.assert_array_equal(f.evaluations, np.where(own, rows.n - 1, rows.n))
    np.testing.assert_array_equal([len(i) for i in f.ind], f.evaluations)
    f = brute.radius(rows, 10.0, 1)
    np.testing.assert_array_equal(f.evaluations, np.full(rows.n, rows.n))
