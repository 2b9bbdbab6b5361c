"""The hits of a filtered radius search, grouped per query and sorted by (distance,
index) in one pass, against numpy's lexsort; the sort every radius search shares
(buckets over the distances' bits), on distances spread and tied in every way."""
import numpy as np
import pytest

from hdist._kernels import gemm_radius_lists

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("n,nq", [(0, 3), (1, 1), (37, 5), (5000, 40), (20000, 3)])
def test_hits_grouped_and_sorted_like_lexsort(n, nq, n_threads):
    rng = np.random.default_rng(n + nq)
    qs = rng.integers(0, nq, n).astype(np.intp)
    js = rng.permutation(max(n, 1))[:n].astype(np.intp)
    ds = np.round(rng.random(n), 2)             # many exact ties of the distance
    D, I = gemm_radius_lists(qs, js, ds, nq, n_threads)
    order = np.lexsort((js, ds, qs))
    assert len(D) == len(I) == nq
    for q in range(nq):
        mine = order[qs[order] == q]
        np.testing.assert_array_equal(D[q], ds[mine])
        np.testing.assert_array_equal(I[q], js[mine])


def _distances(kind, n, rng):
    if kind == "binade":            # a radius search's: most in [r / 2, r]
        return 0.5 + 0.5 * rng.random(n)
    if kind == "log-spread":        # from subnormal to huge, and infinite
        d = 10.0 ** rng.uniform(-320, 308, n)
        d[rng.random(n) < 0.05] = np.inf
        return d
    if kind == "zeros":             # +0.0 and -0.0 are the same distance
        d = np.round(rng.random(n), 1)
        z = rng.random(n) < 0.3
        d[z] = np.where(rng.random(int(z.sum())) < 0.5, 0.0, -0.0)
        return d
    if kind == "one value":
        return np.full(n, 2.5)
    if kind == "two values":        # a few huge tie runs, as nominal data gives
        return np.where(rng.random(n) < 0.5, 1.0, np.sqrt(2.0))
    if kind == "clustered":         # one bucket holds nearly all, the rest far apart
        d = 1.0 + rng.random(n) * 1e-12
        d[: max(1, n // 50)] = rng.uniform(0, 1e6, max(1, n // 50))
        return d
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["binade", "log-spread", "zeros", "one value",
                                  "two values", "clustered"])
@pytest.mark.parametrize("n", [2, 16, 17, 33, 300, 5000])
def test_one_query_sorted_like_lexsort(kind, n):
    rng = np.random.default_rng(n)
    ds = _distances(kind, n, rng)
    js = rng.permutation(10 * n)[:n].astype(np.intp)
    D, I = gemm_radius_lists(np.zeros(n, dtype=np.intp), js, ds, 1)
    order = np.lexsort((js, ds))
    np.testing.assert_array_equal(I[0], js[order])
    # the distances as they came, bit for bit: -0.0 stays -0.0
    assert D[0].tobytes() == ds[order].tobytes()


def test_bad_hits_are_refused():
    z = np.zeros(2, dtype=np.intp)
    with pytest.raises(ValueError, match="same length"):
        gemm_radius_lists(z, z[:1], np.zeros(2), 1)
    with pytest.raises(ValueError, match="not in"):
        gemm_radius_lists(np.array([0, 3], dtype=np.intp), z, np.zeros(2), 2)
