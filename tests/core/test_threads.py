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


@pytest.mark.parametrize("n_threads", [1, 2, 4, 16, 64])
@pytest.mark.parametrize("n_other", [1, 1000, 200_000, 10 ** 6, 3 * 10 ** 6, 10 ** 8])
@pytest.mark.parametrize("per", [1, 8])
def test_regions_give_every_thread_many_chunks(n_threads, n_other, per):
    # a region ends at a barrier: with only a chunk or two per thread, a thread on a slower
    # core (or preempted) keeps the others waiting for most of a chunk at every region
    rows = _kernels.plan._region_rows(n_threads, n_other, per)
    assert rows >= 2 * n_threads * per
    if 16 * per * n_other <= _kernels.THREAD_REGION_PAIRS:
        assert rows >= 16 * n_threads * per
    assert rows * n_other >= min(_kernels.REGION_PAIRS, 64 * n_other)
    # signals are checked between regions: beyond two chunks, a thread's share of a
    # region stays within THREAD_REGION_PAIRS (about a second), so Ctrl-C is prompt
    if rows > max(64, _kernels.REGION_PAIRS // n_other):
        assert rows * n_other <= n_threads * max(_kernels.THREAD_REGION_PAIRS,
                                                 2 * per * n_other)


@pytest.mark.parametrize("n_threads", [1, 2, 16, 64])
@pytest.mark.parametrize("nq", [1, 100, 2000, 4000, 10 ** 5])
@pytest.mark.parametrize("nr", [1000, 200_000, 10 ** 6, 3 * 10 ** 6, 10 ** 7])
@pytest.mark.parametrize("streams", [False, True])
def test_knn_chunks_grow_only_where_the_reference_rows_stream(n_threads, nq, nr, streams):
    # a chunk of queries is one pass over the reference rows: past the caches each pass
    # reads them from memory, and more queries per pass read fewer bytes per pair
    ref_bytes = _kernels.STREAM_BYTES + 1 if streams else min(nr * 64, _kernels.STREAM_BYTES)
    per = _kernels.plan._knn_chunk(nq, nr, n_threads, ref_bytes)

    # the regions keep their queries whatever the chunk (a thread's work between two
    # signal checks does not grow with it)
    region = _kernels.plan._region_rows(n_threads, nr, 8)

    def allowed(p):     # every thread keeps 4 chunks of the queries and of each region
        return p == 8 or (streams and nq >= 4 * p * n_threads
                          and region >= 4 * p * n_threads)

    assert per in (8, 16, 32) and allowed(per)
    assert per == max(p for p in (8, 16, 32) if allowed(p))
    if not streams:
        assert per == 8


@pytest.mark.parametrize("n_threads", [1, 2, 16])
@pytest.mark.parametrize("nq", [1, 7, 100, 2000, 10 ** 5])
@pytest.mark.parametrize("nr", [1000, 200_000, 10 ** 7])
@pytest.mark.parametrize("streams", [False, True])
def test_radius_chunks_leave_every_thread_work(n_threads, nq, nr, streams):
    # a radius search shares its queries among the threads: chunks as the k-NN search's,
    # smaller (down to one query) where a thread would get fewer than 8 of them
    ref_bytes = _kernels.STREAM_BYTES + 1 if streams else 1000
    per = _kernels.plan._radius_chunk_rows(nq, nr, n_threads, ref_bytes)
    big = _kernels.plan._knn_chunk(nq, nr, n_threads, ref_bytes)
    assert 1 <= per <= big
    if per < big:
        assert nq < 16 * per * n_threads
    if per > 1:
        assert nq >= 8 * per * n_threads


@pytest.mark.parametrize("n_threads", [1, 2, 3, 4, 16])
@pytest.mark.parametrize("nq,nr", [(10, 100), (2000, 20_000), (10_000, 30_000),
                                   (10 ** 6, 10 ** 6), (10 ** 5, 10 ** 5), (4000, 10)])
@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize("q_chunk", [0, 5, 64])
def test_filter_regions_hold_whole_rounds_of_chunks(n_threads, nq, nr, cached, q_chunk):
    panel_bytes = _kernels.GEMM_CACHED_PANELS + (0 if cached else 1)
    qc, region = _kernels.gemm._query_chunks(nq, nr, n_threads, panel_bytes, q_chunk)
    assert qc % 8 == 0 and qc >= max(q_chunk, 1)
    if q_chunk == 0:
        assert qc <= max(32, _kernels.GEMM_MAX_QUERY_CHUNK)
    # every thread gets as many chunks in each region, and at least two (four when the
    # panels are read from the caches), so that none waits long at the region's end
    per = 4 if cached else 2
    assert region % (qc * n_threads) == 0
    assert region >= qc * n_threads
    if per * qc * nr <= _kernels.THREAD_REGION_PAIRS:
        assert region >= per * qc * n_threads
    # signals are checked between regions: beyond one chunk, a thread's share of a region
    # stays within THREAD_REGION_PAIRS
    floor = -(-_kernels.GEMM_REGION_PAIRS // nr // (qc * n_threads)) * qc * n_threads
    if region > max(qc * n_threads, floor):
        assert region * nr <= n_threads * max(_kernels.THREAD_REGION_PAIRS, qc * nr)
    assert region * nr >= _kernels.GEMM_REGION_PAIRS - qc * n_threads * nr


def test_threads_for():
    assert _kernels.plan._threads_for(4, 10) == 1
    assert _kernels.plan._threads_for(4, _kernels.SERIAL_PAIRS) == 4
    with pytest.raises(ValueError, match="n_threads"):
        _kernels.plan._threads_for(0, 10 ** 6)


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
