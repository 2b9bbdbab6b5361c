"""Turning ``n_jobs`` into a thread count (every kernel takes an explicit thread count).

Fork safety: GNU OpenMP's thread pool does not survive ``fork`` -- a child process that
enters a parallel region after its parent ran one waits forever for threads that exist
only in the parent.  A process created by ``fork`` (multiprocessing's "fork" start
method, pre-fork servers such as gunicorn or celery, data-loader workers) therefore runs
every hdist kernel on one thread; results never depend on the thread count, so they
are identical to the parent's.  Use the "spawn" or "forkserver" start method for
parallel kernels in worker processes.

Waiting threads: by default a GNU OpenMP thread that waits for work (at the end of a
parallel region, or for its partner's chunk) spins for a while before it sleeps.  On a
machine shared with other processes that spinning takes the core a preempted partner
thread needs, and two threads become slower than one.  hdist therefore asks the runtime
for the "passive" wait policy (threads sleep at once; hdist's parallel regions are long,
so waking them costs nothing measurable) unless the user chose a policy:
``OMP_WAIT_POLICY`` (``active`` / ``passive``) or ``GOMP_SPINCOUNT`` in the environment
before hdist is imported win.  The runtime reads the policy once, when it is loaded, so
the choice applies to the OpenMP runtime hdist's kernels use (shared with other
libraries linked to the same runtime loaded after hdist); the environment variable is
removed again once hdist's kernels are loaded, so child processes and other runtimes do
not inherit it.  :func:`wait_policy` tells which policy was requested.
"""
from __future__ import annotations

import numbers
import os

#: True in a process created by ``fork`` (and in its descendants): kernels run serially
_forked = False

#: the wait policy hdist asks for when the user has not chosen one
DEFAULT_WAIT_POLICY = "passive"

#: ``(policy, source)`` requested before the kernels were loaded (see wait_policy)
_wait = None


def _request_wait_policy():
    """Ask the OpenMP runtime for :data:`DEFAULT_WAIT_POLICY` unless the environment
    chooses (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT``); call before the kernels load.
    Returns the name set in the environment (to remove once they are loaded) or None."""
    global _wait
    if _wait is not None:
        return None
    user = os.environ.get("OMP_WAIT_POLICY")
    spin = os.environ.get("GOMP_SPINCOUNT")
    if user or spin:
        _wait = ((user or "").strip().lower() or "spin count %s" % spin.strip(),
                 "environment")
        return None
    if _openmp_loaded():
        # another module loaded the runtime first: it has read its environment already
        _wait = ("the runtime's default", "OpenMP runtime loaded before hdist")
        return None
    os.environ["OMP_WAIT_POLICY"] = DEFAULT_WAIT_POLICY
    _wait = (DEFAULT_WAIT_POLICY, "hdist default")
    return "OMP_WAIT_POLICY"


def _openmp_loaded():
    """True when an OpenMP runtime is mapped into this process already (Linux: read
    from ``/proc/self/maps``; elsewhere unknown, so False)."""
    try:
        with open("/proc/self/maps") as fh:
            maps = fh.read()
    except OSError:
        return False
    return any(name in maps for name in ("libgomp", "libomp.so", "libiomp5"))


def _kernels_loaded(name):
    """The kernels (and the OpenMP runtime) are loaded: drop the variable hdist set."""
    if name and os.environ.get(name) == DEFAULT_WAIT_POLICY:
        del os.environ[name]


def wait_policy():
    """``(policy, source)``: the OpenMP wait policy requested when hdist was imported --
    ``("passive", "hdist default")``, the user's ``OMP_WAIT_POLICY`` / ``GOMP_SPINCOUNT``
    with source ``"environment"``, or ``("the runtime's default", "OpenMP runtime loaded
    before hdist")`` when another module (scikit-learn, for one) loaded the runtime
    first, so that no request could reach it."""
    return _wait


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
        from .._kernels import omp_max_threads
        return max(1, min(available_cpus(), omp_max_threads()))
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, available_cpus() + 1 + n_jobs)
    return min(n_jobs, MAX_THREADS_PER_CPU * available_cpus())


def built_once(owner, attr, lock, make):
    """``owner.attr``, made by ``make()`` on first use: threads that ask at the same time
    wait under ``lock`` for the one that builds it, and the value is published whole by
    one store (what free-threaded Python needs of a lazily built cache)."""
    value = getattr(owner, attr)
    if value is None:
        with lock:
            value = getattr(owner, attr)
            if value is None:
                value = make()
                setattr(owner, attr, value)
    return value
