"""TieTally.add_lists, the tally of lists a search without the compiled tally returns
(hdist.dask, with_search, the GPU), has the compiled tally's bits: classes counted,
targets summed by TwoSum in list order."""
import numpy as np
import pandas as pd
import pytest

import hdist
from hdist._search.votes import TieTally


def tied(rng, n):
    return pd.DataFrame({"a": rng.integers(0, 3, n) * 0.5 + 0.25,
                         "b": rng.choice(["x", "y", "z"], n)})


@pytest.mark.parametrize("algorithm", ["brute", "kd_tree"])
@pytest.mark.parametrize("outputs", [0, 1, 4])
def test_add_lists_is_the_compiled_tally(algorithm, outputs):
    rng = np.random.default_rng(11)
    X = tied(rng, 300)
    index = hdist.NeighborsIndex("heom", algorithm=algorithm).fit(X)
    Q = tied(rng, 40)
    # targets of many magnitudes: a plain sum rounds differently from TwoSum's
    scale = np.array([1.0, 1e-7, 3e5, 1e16])
    if outputs == 0:
        v = rng.normal(size=300) * 1e3
    else:
        v = rng.normal(size=(300, outputs)) * scale[:outputs]
    for k in (1, 4, 9):
        d, i = index._kneighbors(Q, k, n_jobs=1, ties=True)
        assert d.shape[1] > k                  # rows tied beyond the k-th
        from_lists = TieTally(values=v)
        from_lists.add_lists(d, i, k)
        compiled = TieTally(values=v)
        index._kneighbors(Q, k, n_jobs=1, ties=compiled)
        count, acc = from_lists.result(len(Q))
        count_c, acc_c = compiled.result(len(Q))
        np.testing.assert_array_equal(count, count_c)
        np.testing.assert_array_equal(acc.view(np.int64), acc_c.view(np.int64))
        codes = rng.integers(0, 3, 300)
        from_lists = TieTally(codes=codes, n_classes=3)
        from_lists.add_lists(d, i, k)
        compiled = TieTally(codes=codes, n_classes=3)
        index._kneighbors(Q, k, n_jobs=1, ties=compiled)
        for a, b in zip(from_lists.result(len(Q)), compiled.result(len(Q))):
            np.testing.assert_array_equal(a, b)


def test_add_lists_without_tied_rows():
    tally = TieTally(values=np.arange(5.0))
    tally.add_lists(np.zeros((2, 2)), np.zeros((2, 2), np.intp), 2)
    count, acc = tally.result(2)
    assert count.tolist() == [0, 0] and acc.tolist() == [[0.0], [0.0]]
