"""Turning ``n_jobs`` into a thread count (every kernel takes an explicit thread count).

Fork safety: GNU OpenMP's thread pool does not survive ``fork`` -- a child process that
enters a parallel region after its parent ran one waits forever for threads that exist
only in the parent.  A process created by ``fork`` (multiprocessing's "fork" start
method, pre-fork servers such as gunicorn or celery, data-loader workers) therefore runs
every hdist kernel on one thread; results never depend on the thread count, so they
are identical to the parent's.  Use the "spawn" or "forkserver" start method for
parallel kernels in worker processes.
"""
from __future__ import annotations

import numbers
import os

#: True in a process created by ``fork`` (and in its descendants): kernels run serially
_forked = False


def _after_fork_in_child():
    global _forked
    _forked = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def forked():
    """True when this process was created by ``fork``; hdist's kernels then run on one
    thread (GNU OpenMP's thread pool does not survive fork)."""
    return _forked


def available_cpus():
    """CPUs this process may run on (affinity / cgroup aware where the OS tells)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        n = max(1, min(n, quota))
    return max(1, n)


def _cgroup_cpu_quota():
    try:
        with open("/sys/fs/cgroup/cpu.max") as fh:
            q, period = fh.read().split()[:2]
        if q != "max":
            return max(1, int(int(q) // int(period)))
    except (OSError, ValueError):
        pass
    return None


#: threads per available CPU beyond which a request is capped: more threads only add
#: overhead (results never depend on the count), and a count such as 10**6 would make the
#: OpenMP runtime fail to create its threads
MAX_THREADS_PER_CPU = 4


def effective_n_jobs(n_jobs):
    """``None`` -> every core the process may use, limited by ``OMP_NUM_THREADS``;
    ``-1`` -> all available cores; ``-k`` -> all but ``k - 1``; ``k >= 1`` -> ``k``,
    capped at :data:`MAX_THREADS_PER_CPU` threads per available CPU; always 1 in a process
    created by ``fork`` (:func:`forked`)."""
    if n_jobs is not None and (isinstance(n_jobs, bool) or
                               not isinstance(n_jobs, numbers.Integral)):
        raise TypeError("n_jobs must be an int or None, got %r" % (n_jobs,))
    if n_jobs is not None and int(n_jobs) == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, -1 or a positive count")
    if _forked:
        return 1
    if n_jobs is None:
        from ._kernels import omp_max_threads
        return max(1, min(available_cpus(), omp_max_threads()))
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, available_cpus() + 1 + n_jobs)
    return min(n_jobs, MAX_THREADS_PER_CPU * available_cpus())
