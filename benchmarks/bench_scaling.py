"""Thread scaling of hdist's brute-force k-NN, beside the same machine's matrix product.

For 1, 2, 4, ... up to the machine's core count, in one process:

- **census-like** (numeric form): 10 continuous + 30 nominal attributes (2-50 values),
  5 % missing, reference rows x queries of ``--census`` (default 200 000 x 4 000), 5-NN,
  HEOM and Gower on encoded rows (``NeighborsIndex(algorithm="brute")``: the kernels);
- **mixed 20k** (DataFrames, the whole ``kneighbors`` call: the queries' encoding and the
  search): 20 000 reference rows x 2 000 queries, 8 continuous + 8 nominal (text)
  attributes, 5-NN; Manhattan, Gower, HVDM, and HVDM with 10 % missing values;
- **ceiling**: numpy's float64 matrix product (``A @ B``, 2 048 x 2 048 by 2 048 x 2 048)
  under threadpoolctl at the same thread counts -- what the machine's cores and memory give
  a compute-bound job.

Each job runs at every thread count once per round (``--repeat`` rounds for the census-like
jobs, ``--short-repeat`` for the mixed-20k calls, which last milliseconds), after one matrix
product at each count in the same round, so that a slow spell of the host meets every count
and the ceiling alike.  A row prints the best of the rounds: seconds, pairs/s, the speed-up
over one thread, the speed-up of the kernel phase alone (``search_["phases"]``) and the
matrix product's speed-up in the same rounds; it is followed by the phases of its best
call (ms), which show what does not shrink with more threads.  The header prints the core
count, the CPU, the BLAS and the load average before and after: run it on an otherwise
idle machine.

``--targets`` instead prints the costs around the kernels against their targets (the
compared variants alternate within each of ``--repeat`` rounds; best of the rounds):

- the first ``Metric.kneighbors`` after ``fit`` against the second, on the census-like
  frame of ``make_census_like.py`` (30 000 training x 10 000 query rows, HEOM, Gower and
  HVDM -- whose first call also makes the matrix-product filter's reference features --,
  5-NN, all threads): at most 1.5x; and the share of the first call the "auto" rule spent
  deciding (``search_["phases"]["decide"]``): at most half;
- HVDM with 10 % missing values against none, the mixed 20k job on 2 threads (whole call
  on DataFrames): at least 0.85x the rate;
- 2 threads against 1 on the mixed 20k job (Manhattan, Gower, HVDM; whole call): at least
  1.8x;

with the one-thread phases of each call (``search_["phases"]``, milliseconds), which do
not depend on the machine's load as the ratios do.

    python benchmarks/bench_scaling.py [--quick] [--threads 1,2,4] [--census 200000x4000]
    python benchmarks/bench_scaling.py --targets [--repeat 15]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

import hdist


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def thread_counts(spec):
    if spec:
        return sorted({int(t) for t in spec.split(",")})
    n = os.cpu_count() or 1
    out, t = [], 1
    while t < n:
        out.append(t)
        t *= 2
    return out + [n]


def census_numeric(n_ref, n_query, seed=5):
    """10 continuous + 30 nominal (codes, 2-50 values), 5 % missing; returns (X, nominal)."""
    rng = np.random.default_rng(seed)
    n = n_ref + n_query
    cols = [rng.normal(size=n) * (a + 1) for a in range(10)]
    for _ in range(30):
        cols.append(rng.integers(0, int(rng.integers(2, 51)), n).astype(np.float64))
    X = np.column_stack(cols)
    X[rng.random(X.shape) < 0.05] = np.nan
    return X, list(range(10, 40))


def mixed_frames(n_ref, n_query, missing, seed=0):
    """8 continuous + 8 nominal (text, 2-12 values) DataFrames with 3 classes."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    n = n_ref + n_query
    y = rng.integers(0, 3, n)
    cols = {}
    for a in range(8):
        cols["c%d" % a] = (rng.normal(size=n) + rng.normal(size=3)[y]) * (a + 1)
    for a in range(8):
        V = int(rng.integers(2, 13))
        codes = np.where(rng.random(n) < 0.5, rng.integers(0, V, 3)[y], rng.integers(0, V, n))
        cols["n%d" % a] = np.array(["v%d" % v for v in range(V)], dtype=object)[codes]
    frame = pd.DataFrame(cols)
    if missing:
        for name in frame.columns:
            frame.loc[rng.random(n) < missing, name] = None
    return frame.iloc[:n_ref], y[:n_ref], frame.iloc[n_ref:]


class Matmul:
    """numpy's float64 product of two ``size`` x ``size`` matrices under threadpoolctl: the
    ceiling, timed in the same rounds as each job so that both meet the same load."""

    def __init__(self, size=2048):
        from threadpoolctl import threadpool_info
        rng = np.random.default_rng(0)
        self.A = rng.normal(size=(size, size))
        self.B = rng.normal(size=(size, size))
        self.flop = 2.0 * size ** 3
        self.best = {}
        info = [i for i in threadpool_info() if i.get("user_api") == "blas"]
        if info:
            print("BLAS: %s %s (%s)" % (info[0].get("internal_api"), info[0].get("version"),
                                        info[0].get("architecture")))

    def __call__(self, t):
        """Seconds of one product on ``t`` threads."""
        from threadpoolctl import threadpool_limits
        with threadpool_limits(t, user_api="blas"):
            t0 = time.perf_counter()
            self.A @ self.B
            dt = time.perf_counter() - t0
        self.best[t] = min(self.best.get(t, np.inf), dt)
        return dt

    def summary(self):
        print("  %-34s %s" % ("float64 matmul GFLOP/s (best)", "  ".join(
            "%d: %.1f" % (t, self.flop / s / 1e9) for t, s in sorted(self.best.items()))))


class Table:
    """Each round runs one matrix product at every thread count, then the job at every
    count; a count's row is the best of the rounds, and its "matmul" column the speed-up
    of the products of the same rounds."""

    def __init__(self, counts, matmul):
        self.counts, self.matmul = counts, matmul
        for t in counts:                    # threads started, BLAS warmed
            matmul(t)
        time.sleep(0.3)
        print("  %-34s %7s %9s %11s %8s %8s %8s" % ("job", "threads", "seconds", "pairs/s",
                                                     "speed-up", "kernel", "matmul"))

    def job(self, label, pairs, run, rounds, index=None):
        """``run(t)`` at each thread count; with ``index``, the "kernel" column is the
        speed-up of the kernel phase alone (``index.search_["phases"]``) and each row is
        followed by the phases (ms) of its best call."""
        best = {t: np.inf for t in self.counts}
        mm = {t: np.inf for t in self.counts}
        phases = {}
        for _ in range(rounds):
            for t in self.counts:
                mm[t] = min(mm[t], self.matmul(t))
            # OpenBLAS's threads spin for a while after a product: let them sleep before
            # the job's threads need the cores
            time.sleep(0.3)
            for t in self.counts:
                t0 = time.perf_counter()
                run(t)
                dt = time.perf_counter() - t0
                if dt < best[t]:
                    best[t] = dt
                    if index is not None:
                        phases[t] = dict(index.search_["phases"])
        t1 = self.counts[0]
        whole, kern, ceil = {}, {}, {}
        for t in self.counts:
            whole[t] = best[t1] / best[t]
            ceil[t] = mm[t1] / mm[t]
            kern[t] = phases[t1]["kernel"] / phases[t]["kernel"] if phases else None
            print("  %-34s %7d %9.3f %11.3e %7.2fx %8s %7.2fx"
                  % (label, t, best[t], pairs / best[t], whole[t],
                     "%.2fx" % kern[t] if phases else "", ceil[t]))
            if phases:
                print("  %-34s [%s]" % ("", phases_ms(phases[t])))
        for what, sp in (("whole call", whole), ("kernel", kern)):
            if what == "kernel" and not phases:
                continue
            short = [t for t in self.counts if sp[t] < ceil[t]]
            print("  %-34s %s below the matrix product's speed-up at: %s"
                  % ("", what, ", ".join(map(str, short)) or "none"))
        return whole


def verdict(label, ratio, target, at_least=True):
    ok = ratio >= target if at_least else ratio <= target
    print("  %-58s %6.2f   target %s %.2f   %s" % (label, ratio, ">=" if at_least else "<=",
                                                    target, "met" if ok else "NOT met"))
    return ok


def phases_ms(ph):
    return " ".join("%s %.2f" % (k, 1e3 * v) for k, v in ph.items())


def targets(repeat):
    """The targets of the module docstring, each ratio beside its target."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_census_like import make
    print("hdist %s, Python %s; nproc %d (%s); load average %.2f %.2f %.2f at the start; "
          "best of %d" % ((hdist.__version__, platform.python_version(), os.cpu_count(),
                           cpu_name()) + os.getloadavg() + (repeat,)))
    train = make(30000, 0).drop(columns="person_id")
    query = make(10000, 1, 30000).drop(columns=["person_id", "income"])
    y = train.pop("income").to_numpy()
    ok = []
    print("first kneighbors after fit / second, census-like 30 000 x 10 000, 5-NN:")
    for name in ("heom", "gower", "hvdm"):
        first, second, share = np.inf, np.inf, 0.0
        for _ in range(repeat):
            metric = hdist.Metric(name).fit(train, y)
            t0 = time.perf_counter()
            metric.kneighbors(query, 5)
            t1 = time.perf_counter()
            ph = metric.search_["phases"]
            metric.kneighbors(query, 5)
            t2 = time.perf_counter()
            first, second = min(first, t1 - t0), min(second, t2 - t1)
            share = max(share, ph["decide"] / ph["total"])
        print("    %s: first %.3f s, second %.3f s (%s)" % (name, first, second,
                                                          metric.search_["algorithm"]))
        ok.append(verdict("%s first / second" % name, first / second, 1.5, False))
        ok.append(verdict("%s share of the first call spent deciding (worst)" % name,
                          share, 0.5, False))
    m_ref, m_q = 20000, 2000
    frames = {}
    for name, missing in (("manhattan", 0.0), ("gower", 0.0), ("hvdm", 0.0), ("hvdm", 0.1)):
        R, yy, Qf = mixed_frames(m_ref, m_q, missing)
        index = hdist.NeighborsIndex(name, algorithm="brute").fit(R, yy)
        index.kneighbors(Qf[:10], 5)
        frames[name, missing] = (index, Qf)
    best = {}
    phases = {}
    for _ in range(repeat):                 # every variant once per round: the same load
        for key, (index, Qf) in frames.items():
            for t in (1, 2):
                t0 = time.perf_counter()
                index.kneighbors(Qf, 5, n_jobs=t)
                dt = time.perf_counter() - t0
                if dt < best.get(key + (t,), np.inf):
                    best[key + (t,)] = dt
                    phases[key + (t,)] = dict(index.search_["phases"])
    print("mixed 20k (20 000 x 2 000, 8 + 8, DataFrames, whole call), ms:")
    for key in frames:
        for t in (1, 2):
            print("    %-9s %3d %% missing, %d thread(s): %7.2f  [%s]"
                  % (key[0], round(100 * key[1]), t, 1e3 * best[key + (t,)],
                     phases_ms(phases[key + (t,)])))
    ok.append(verdict("hvdm 10 % missing / none, rate on 2 threads",
                      best["hvdm", 0.0, 2] / best["hvdm", 0.1, 2], 0.85))
    for name in ("manhattan", "gower", "hvdm"):
        ok.append(verdict("%s 2 threads / 1 thread" % name,
                          best[name, 0.0, 1] / best[name, 0.0, 2], 1.8))
    print("load average at the end: %.2f %.2f %.2f; %d of %d targets met"
          % (os.getloadavg() + (sum(ok), len(ok))))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small shapes, one repeat")
    p.add_argument("--threads", help="comma-separated thread counts (default 1, 2, 4, ... nproc)")
    p.add_argument("--census", default="200000x4000", help="reference x query rows")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--short-repeat", type=int, default=10,
                   help="runs of each mixed-20k call (they last milliseconds)")
    p.add_argument("--targets", action="store_true",
                   help="the costs around the kernels against their targets")
    args = p.parse_args(argv)
    if args.targets:
        return targets(args.repeat)
    counts = thread_counts(args.threads)
    repeat = 1 if args.quick else args.repeat
    n_ref, n_q = (20000, 500) if args.quick else map(int, args.census.lower().split("x"))
    k = 5
    print("hdist %s, numpy %s, Python %s; nproc %d (%s); load average %.2f %.2f %.2f"
          % ((hdist.__version__, np.__version__, platform.python_version(), os.cpu_count(),
              cpu_name()) + os.getloadavg()))
    hdist.show_config()
    matmul = Matmul(1024 if args.quick else 2048)
    table = Table(counts, matmul)

    X, nominal = census_numeric(n_ref, n_q)
    for name in ("heom", "gower"):
        index = hdist.NeighborsIndex(name, algorithm="brute",
                                     metric_params={"nominal": nominal}).fit(X[:n_ref])
        Q = X[n_ref:]
        index.kneighbors(Q[:10], k)
        table.job("census-like %s" % name, n_ref * n_q,
                  lambda t: index.kneighbors(Q, k, n_jobs=t), repeat, index)

    m_ref, m_q = (5000, 500) if args.quick else (20000, 2000)
    for name, missing in (("manhattan", 0.0), ("gower", 0.0), ("hvdm", 0.0), ("hvdm", 0.1)):
        R, y, Qf = mixed_frames(m_ref, m_q, missing)
        index = hdist.NeighborsIndex(name, algorithm="brute").fit(R, y)
        index.kneighbors(Qf[:10], k)
        # the whole call on a DataFrame: the queries' encoding and the search
        table.job("mixed 20k %s%s" % (name, ", 10 % missing" if missing else ""),
                  m_ref * m_q, lambda t: index.kneighbors(Qf, k, n_jobs=t),
                  1 if args.quick else args.short_repeat, index)
    matmul.summary()
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
