"""The hits of a filtered radius search, grouped per query and sorted by (distance,
index) in one pass, against numpy's lexsort."""
import numpy as np
import pytest

from hdist._kernels import gemm_radius_lists


@pytest.mark.parametrize("n,nq", [(0, 3), (1, 1), (37, 5), (5000, 40), (20000, 3)])
def test_hits_grouped_and_sorted_like_lexsort(n, nq):
    rng = np.random.default_rng(n + nq)
    qs = rng.integers(0, nq, n).astype(np.intp)
    js = rng.permutation(max(n, 1))[:n].astype(np.intp)
    ds = np.round(rng.random(n), 2)             # many exact ties of the distance
    D, I = gemm_radius_lists(qs, js, ds, nq)
    order = np.lexsort((js, ds, qs))
    assert len(D) == len(I) == nq
    for q in range(nq):
        mine = order[qs[order] == q]
        np.testing.assert_array_equal(D[q], ds[mine])
        np.testing.assert_array_equal(I[q], js[mine])


def test_bad_hits_are_refused():
    z = np.zeros(2, dtype=np.intp)
    with pytest.raises(ValueError, match="same length"):
        gemm_radius_lists(z, z[:1], np.zeros(2), 1)
    with pytest.raises(ValueError, match="not in"):
        gemm_radius_lists(np.array([0, 3], dtype=np.intp), z, np.zeros(2), 2)
