"""Memory: no growth over repeated calls, and 64-bit index arithmetic in the kernels.

- 1 000 rounds of fit / pairwise / kneighbors / radius_neighbors / tree queries / refused
  calls leave the resident set size and the Python heap (tracemalloc) where the first
  rounds left them: the kernels free what they allocate (radius's per-query buffers, the
  trees' heaps), also on error paths.
- Index arithmetic uses ``Py_ssize_t``: the sources declare no loop index as a C ``int``,
  and a search over a training block of more than 2^31 elements returns the right row.
  That block costs no memory: it is an anonymous private mapping that is only read, so
  every page is the kernel's shared zero page (plus the two rows written).
"""
import gc
import mmap
import os
import re
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import hdist
from hdist import Metric, NeighborsIndex
from test_review_edges import knn_rows

pytestmark = [pytest.mark.kernels, pytest.mark.sanitize]

#: the compiled modules' sources (and what they include)
SRC = Path(hdist.__file__).parent / "_kernels"
CYTHON_SOURCES = sorted(p for ext in ("pyx", "pxd", "pxi") for p in SRC.glob("*." + ext))


try:
    import psutil
except ImportError:     # Linux without psutil: /proc
    psutil = None


def _trim():
    """Give the allocator's free memory back to the system (glibc's ``malloc_trim``), so that
    RSS measures what is held, not how the threads' arenas happen to be fragmented after
    the tests that ran before (OpenMP workers, thread pools, other processes' load)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def rss():
    """Resident set size of this process, in bytes (after :func:`_trim`)."""
    _trim()
    if psutil is None:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return psutil.Process().memory_info().rss


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 6), dtype=object)
    X[:, :3] = rng.normal(size=(n, 3)).round(2)
    X[:, 3:] = rng.choice(list("abcd"), size=(n, 3))
    X[rng.random(X.shape) < 0.1] = None
    return X, rng.integers(0, 3, n)


def _workload():
    """``round_(i)``: one round of every kind of call (a fit every tenth round), results
    dropped."""
    X, y = _data(120, 1)
    Q, _ = _data(24, 2)
    hvdm = Metric("hvdm").fit(X, y)
    gower = Metric("gower").fit(X)
    kd = NeighborsIndex(Metric("heom"), algorithm="kd_tree", leaf_size=8).fit(X)
    ball = NeighborsIndex(Metric("heom"), algorithm="ball_tree", leaf_size=8).fit(
        X[~np.equal(X, None).any(axis=1)])
    out = np.empty((len(Q), len(X)))

    def round_(i):
        if i % 10 == 0:
            Metric(("heom", "ivdm", "hds", "gvdm", "lvdm")[i // 10 % 5]).fit(X, y)
        hvdm.pairwise(Q, X, out=out, n_jobs=2)
        hvdm.kneighbors(Q, 5, n_jobs=2)
        knn_rows(hvdm, hvdm.encode(Q), 5, False, 1 + i % 2, method="gemm")
        gower.radius_neighbors(Q, 0.4, n_jobs=2)     # many hits: buffers grow
        kd.kneighbors(Q, 4, n_jobs=2)
        kd.radius_neighbors(Q, 0.8, n_jobs=2)
        ball.kneighbors(Q, 4, n_jobs=1)
        for bad in (lambda: hvdm.kneighbors(Q, 0), lambda: hvdm.pairwise(Q[:, :2]),
                    lambda: kd.radius_neighbors(Q, -1.0)):
            try:
                bad()
            except ValueError:
                pass
    return round_


def test_no_growth_over_repeated_calls():
    round_ = _workload()
    for i in range(50):       # warm-up: caches, allocator pools, lazy imports
        round_(i)
    rss()
    tracemalloc.start()
    try:
        round_(0)
        gc.collect()
        heap0 = tracemalloc.take_snapshot()
        rss0 = rss()
        for i in range(1000):
            round_(i)
        gc.collect()
        rss1 = rss()
        heap1 = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    growth = sum(s.size_diff for s in heap1.compare_to(heap0, "filename"))
    assert growth < 64 * 1024, "\n".join(map(str, heap1.compare_to(heap0, "lineno")[:8]))
    # a leak of one radius buffer per query would add ~20 MB here; AddressSanitizer keeps
    # freed blocks in quarantine (to catch use after free), so RSS means nothing there
    if "libasan" not in os.environ.get("LD_PRELOAD", ""):
        assert rss1 - rss0 < 8 * 2 ** 20, "RSS grew by %.1f MB" % ((rss1 - rss0) / 2 ** 20)


# -- 64-bit index arithmetic ------------------------------------------------------------

_INT_DECL = re.compile(r"cdef\s+(?:const\s+)?(?:unsigned\s+)?(?:int|long|short)\s+"
                       r"(?!\*)([^=:\n(]+)")
_LOOP = re.compile(r"for\s+(\w+)\s+in\s+(?:p?range)\(")


def _functions(text):
    """Source chunks of the top-level functions and classes of a Cython file."""
    return re.split(r"\n(?=(?:cdef |cpdef |def |class |ctypedef ))", text)


def test_every_cython_source_is_checked():
    assert {p.suffix for p in CYTHON_SOURCES} == {".pyx", ".pxd", ".pxi"}


@pytest.mark.parametrize("path", CYTHON_SOURCES, ids=lambda p: p.name)
def test_loop_indices_are_py_ssize_t(path):
    """No ``for i in range(...)`` / ``prange`` runs over a variable declared ``int``:
    loop indices and sizes are ``Py_ssize_t`` (``intp``), so products such as
    ``i * m`` cannot overflow at 2^31."""
    for chunk in _functions(path.read_text()):
        ints = set()
        for decl in _INT_DECL.findall(chunk):
            ints.update(v.strip().split()[-1] for v in decl.split(",") if v.strip())
        loops = set(_LOOP.findall(chunk))
        assert not ints & loops, "%s: loop index declared int: %s\n%s" % (
            path.name, sorted(ints & loops), chunk[:300])


def test_the_index_scan_would_see_int_loops(tmp_path):
    """The scan above finds what it looks for."""
    bad = "cdef void f(double* x, intp n) noexcept nogil:\n    cdef int i\n" \
          "    for i in range(n):\n        x[i] = 0\n"
    chunk = _functions(bad)[0]
    ints = {v.strip().split()[-1] for d in _INT_DECL.findall(chunk) for v in d.split(",")}
    assert ints & set(_LOOP.findall(chunk)) == {"i"}


def _zero_block(n, m):
    """An ``[n, m]`` int32 array backed by untouched anonymous memory (no huge pages):
    reading it maps the shared zero page, so it costs address space, not memory."""
    buf = mmap.mmap(-1, n * m * 4, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_NOHUGEPAGE)
    return np.frombuffer(buf, dtype=np.intc).reshape(n, m)


@pytest.mark.skipif(sys.platform != "linux" or sys.maxsize < 2 ** 40
                    or os.environ.get("HDIST_SKIP_HUGE_INDEX") == "1",
                    reason="needs Linux's zero page for a 8.6 GB read-only block (64-bit); "
                    "HDIST_SKIP_HUGE_INDEX=1 under sanitizers, whose shadow memory "
                    "would double it")
def test_more_than_2_31_elements():
    from hdist._kernels import CRows, knn, radius
    from hdist._core.plan import Rows
    m = 16
    n = (1 << 27) + 3                       # n * m = 2^31 + 48 codes
    train = _zero_block(n, m)
    train[-1, -1] = 1                       # the last row: element 2^31 + 47
    train[n // 2, :] = 1                    # a row in the middle, far from the query
    metric = Metric("heom", nominal="all").fit(np.array([[0] * m, [1] * m]))
    plan = metric.plan_
    assert (plan.mo, plan.mc, plan.mt, plan.me) == (m, 0, 0, 0)

    def rows(o):
        k = o.shape[0]
        return CRows(Rows(k, np.zeros((k, 0)), np.zeros((k, 0)), o,
                          np.zeros((k, 0), np.intc), np.zeros((k, 0))))

    query = np.zeros((2, m), np.intc)
    query[0, -1] = 1                        # equal to the last row only
    query[1, :] = 1                         # equal to the middle row only
    before = rss()
    R = rows(train)
    # one thread: the point is the index arithmetic, and a parallel scan of so many rows
    # opens thousands of short parallel regions, slow on a loaded machine
    d, i = knn(plan.cplan, rows(query), R, 3, 1)
    np.testing.assert_array_equal(i, [[n - 1, 0, 1], [n // 2, n - 1, 0]])
    np.testing.assert_array_equal(d, [[0.0, 1.0, 1.0], [0.0, np.sqrt(15.0), 4.0]])
    dl, il = radius(plan.cplan, rows(query[:1]), R, 0.5, 1)
    np.testing.assert_array_equal(il[0], [n - 1])
    np.testing.assert_array_equal(dl[0], [0.0])
    assert rss() - before < 256 * 2 ** 20   # page tables only, not the 8.6 GB block
