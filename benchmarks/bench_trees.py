"""KD-tree and ball tree against brute force and scikit-learn, in one process.

Cases (k = 5, 2 threads unless said otherwise):

A. Low-dimensional mixed data: 3 continuous + 2 nominal attributes (2-12 values) with
   class structure (3 classes), 10^6 reference rows, 10^4 queries, HVDM, no missing
   values.  hdist brute force (matrix-product filter + exact pass), KD-tree and ball
   tree: build time, query time, distance evaluations per query, tree memory against
   the encoded data; every tree answer is compared with brute force (array_equal).
   Peers: scikit-learn ``KDTree`` / ``BallTree`` on the HVDM embedding (continuous / 4σ
   concatenated with each nominal value's class-probability row), where Euclidean
   distance equals HVDM; their distances are compared with hdist's.
B. 16 attributes (8 continuous + 8 nominal): class-structured data and uniform,
   independent values (no structure: the trees' bad case), 2·10^5 rows, 2000 queries,
   HVDM and Manhattan; brute force vs KD-tree vs ball tree, and what ``auto`` picks;
   then brute force and the KD-tree on one thread, in CPU time per query (the figure
   least moved by other jobs on the machine; the README's one-thread tree figures).
C. The ``auto`` rule against measurements: 2·10^4 and 2·10^5 rows, 4-16 attributes
   (half nominal), uniform or class-structured, Euclidean (brute force with the
   matrix-product filter) and Manhattan (direct brute force): the faster algorithm and
   the one ``auto`` picks.
D. ``auto`` on real shapes: the census-like job (``make_census_like.py``: 40 columns, 30
   nominal with up to 50 values, 5 % missing) and synthetic ones, HEOM, HVDM, Gower and
   Manhattan: every algorithm's time, the fraction of the rows a KD-tree evaluates as
   the pilot extrapolates it (from KD-trees over samples of the rows), auto's pick and
   its time over the best algorithm's.

Run: ``python benchmarks/bench_trees.py [--quick]`` (full run: a few minutes).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import hdist  # noqa: E402
from hdist import Metric, NeighborsIndex  # noqa: E402
from bench_knn import hvdm_embedding, make_job, timeit  # noqa: E402


def uniform_job(n_ref, n_query, n_cont, n_nom, seed=1):
    """Independent uniform continuous values and uniform nominal codes (6 values)."""
    rng = np.random.default_rng(seed)
    n = n_ref + n_query
    cols = [rng.random(n) for _ in range(n_cont)]
    cols += [rng.integers(0, 6, n).astype(np.float64) for _ in range(n_nom)]
    X = np.column_stack(cols)
    y = rng.integers(0, 3, n_ref)
    return X[:n_ref], y, X[n_ref:], list(range(n_cont, n_cont + n_nom))


def header(title):
    print("\n" + title)
    print("-" * len(title))


def report(label, build, query, n_q, evals=None, mem=None, exact=None):
    parts = ["  %-34s build %7.2f s   query %8.3f s (%8.1f us/q)"
             % (label, build, query, 1e6 * query / n_q)]
    if evals is not None:
        parts.append("  evals/q %9.0f" % evals)
    if mem is not None:
        parts.append("  mem %4.2fx data" % mem)
    if exact is not None:
        parts.append("  exact: %s" % ("yes" if exact else "NO"))
    print("".join(parts), flush=True)


def hdist_runs(metric, Q, k, algos, n_jobs=2, brute_queries=None, leaf_size=32):
    """Build and query each algorithm; brute force gives the reference answer (on the
    first ``brute_queries`` queries when given, its time scaled to all queries)."""
    out = {}
    ref = None
    for algo in algos:
        t0 = time.perf_counter()
        idx = NeighborsIndex(metric, algorithm=algo, leaf_size=leaf_size).fit()
        build = time.perf_counter() - t0
        qq = Q if (algo != "brute" or brute_queries is None) else Q[:brute_queries]
        idx.kneighbors(qq[:4], k, n_jobs=n_jobs)       # warm caches (tree-order rows)
        tq, (d, i) = timeit(lambda: idx.kneighbors(qq, k, n_jobs=n_jobs))
        tq *= len(Q) / len(qq)
        if algo == "brute":
            ref = (d, i)
            exact = None
            mem = None
        else:
            m = len(ref[0]) if ref is not None else 0
            exact = ref is not None and np.array_equal(d[:m], ref[0]) and \
                np.array_equal(i[:m], ref[1])
            mem = idx.tree_nbytes_ / idx.data_nbytes_
        label = algo + ("" if algo != "brute" or brute_queries is None
                        else " (%d queries, scaled)" % len(qq))
        report(label, build, tq, len(Q), idx.n_distance_evaluations_.mean(), mem, exact)
        out[algo] = (build, tq, d, i, idx)
    return out


def cpu_per_query(idx, Q, k, repeat=2):
    """Seconds of CPU time per query of ``idx.kneighbors(Q, k)`` on one thread (best of
    ``repeat``)."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        idx.kneighbors(Q, k, n_jobs=1)
        best = min(best, time.process_time() - t0)
    return best / len(Q)


def case_a(quick, n_jobs):
    n_ref, n_q = (100_000, 2_000) if quick else (1_000_000, 10_000)
    k = 5
    header("A. 3 continuous + 2 nominal, %d reference rows, %d queries, k = %d, HVDM "
           "(%d threads)" % (n_ref, n_q, k, n_jobs))
    Xr, yr, Xq, nom = make_job(n_ref, n_q, n_cont=3, n_nom=2)
    t0 = time.perf_counter()
    metric = Metric("hvdm", nominal=nom).fit(Xr, yr)
    print("  metric fit: %.2f s" % (time.perf_counter() - t0))
    res = hdist_runs(metric, Xq, k, ["brute", "kd_tree", "ball_tree"], n_jobs=n_jobs)
    b = res["brute"][1]
    for algo in ("kd_tree", "ball_tree"):
        print("  %s vs brute force: %.1fx faster" % (algo, b / res[algo][1]))
    kd1 = timeit(lambda: res["kd_tree"][4].kneighbors(Xq, k, n_jobs=1))[0]
    report("kd_tree, 1 thread", 0.0, kd1, n_q)
    try:
        from sklearn.neighbors import BallTree, KDTree
    except ImportError:
        print("  scikit-learn not installed: peers skipped")
        return
    Er = hvdm_embedding(metric, Xr)
    Eq = hvdm_embedding(metric, Xq)
    print("  HVDM embedding: %d dimensions" % Er.shape[1])
    d_ref = res["brute"][2]
    for cls in (KDTree, BallTree):
        t0 = time.perf_counter()
        tree = cls(Er, leaf_size=32)
        build = time.perf_counter() - t0
        tq, (d, i) = timeit(lambda: tree.query(Eq, k=k))
        agree = np.allclose(d, d_ref, rtol=1e-9, atol=1e-12)
        same = np.mean(i == res["brute"][3])
        report("scikit-learn %s (1 thread)" % cls.__name__, build, tq, n_q)
        print("    distances equal hdist's: %s; same indices: %.4f of entries (the rest are "
              "ties ordered differently)" % (agree, same))


def case_b(quick, n_jobs):
    n_ref, n_q = (50_000, 500) if quick else (200_000, 2_000)
    k = 5
    for kind, maker in (("class-structured", make_job), ("uniform", uniform_job)):
        Xr, yr, Xq, nom = maker(n_ref, n_q, n_cont=8, n_nom=8)
        for name in ("hvdm", "manhattan"):
            header("B. 8 continuous + 8 nominal (%s), %d rows, %d queries, %s"
                   % (kind, n_ref, n_q, name))
            metric = Metric(name, nominal=nom).fit(Xr, yr)
            res = hdist_runs(metric, Xq, k, ["brute", "kd_tree", "ball_tree"],
                             n_jobs=n_jobs, brute_queries=None)
            best = min(res, key=lambda a: res[a][1])
            t0 = time.perf_counter()
            auto = NeighborsIndex(metric).fit()
            ta = time.perf_counter() - t0
            print("  fastest: %s; auto picks %s (decided in %.2f s)"
                  % (best, auto.algorithm_, ta))
            one = {a: cpu_per_query(res[a][4], Xq, k) for a in ("brute", "kd_tree")}
            print("  one thread, CPU time per query: brute %.0f us, kd_tree %.0f us "
                  "(%.1f %% of the rows evaluated); load average %.1f"
                  % (1e6 * one["brute"], 1e6 * one["kd_tree"],
                     100 * res["kd_tree"][4].n_distance_evaluations_.mean() / n_ref,
                     os.getloadavg()[0]), flush=True)


def case_c(quick, n_jobs):
    header("C. the auto rule: microseconds per query (%d threads), faster algorithm, "
           "auto's pick" % n_jobs)
    sizes = (20_000,) if quick else (20_000, 200_000)
    n_q = 300
    print("  %-8s %-10s %4s %-10s %10s %10s %8s  %-8s %-8s"
          % ("rows", "data", "m", "metric", "brute", "kd_tree", "ratio", "faster", "auto"))
    good = total = 0
    for n in sizes:
        for kind, maker in (("structured", make_job), ("uniform", uniform_job)):
            for m in (4, 8, 12, 16):
                Xr, yr, Xq, nom = maker(n, n_q, n_cont=m - m // 2, n_nom=m // 2)
                for name in ("euclidean", "manhattan"):
                    metric = Metric(name, nominal=nom).fit(Xr)
                    times = {}
                    for algo in ("brute", "kd_tree"):
                        idx = NeighborsIndex(metric, algorithm=algo).fit()
                        idx.kneighbors(Xq[:4], 5, n_jobs=n_jobs)
                        # best of 2: the first full call also builds brute force's caches
                        times[algo] = timeit(lambda: idx.kneighbors(Xq, 5, n_jobs=n_jobs),
                                             repeat=2)[0]
                    auto = NeighborsIndex(metric).fit().algorithm_
                    faster = min(times, key=times.get)
                    ratio = times["brute"] / times["kd_tree"]
                    ok = auto == faster or max(ratio, 1 / ratio) < 1.5
                    good += ok
                    total += 1
                    print("  %-8d %-10s %4d %-10s %10.1f %10.1f %8.2f  %-8s %-8s%s"
                          % (n, kind, m, name, 1e6 * times["brute"] / n_q,
                             1e6 * times["kd_tree"] / n_q, ratio, faster, auto,
                             "" if ok else "  <- slower pick"), flush=True)
    print("  auto picked the faster algorithm (or one within 1.5x) in %d of %d cases"
          % (good, total))


def census_job(n_ref, n_query, seed=7):
    """The census-like frame of ``make_census_like.py`` (40 columns, 30 nominal with 2-50
    text values, 5 % missing) and its two-class target."""
    from make_census_like import make
    frame = make(n_ref + n_query, seed)
    y = frame.pop("income").to_numpy()
    X = frame.drop(columns="person_id")
    return X.iloc[:n_ref], y[:n_ref], X.iloc[n_ref:]


def case_d(quick, n_jobs):
    """auto against every algorithm on real and synthetic shapes: one row per (shape,
    metric) with each algorithm's time, the fraction of rows the pilot extrapolates,
    auto's pick and its time over the best one's."""
    n_ref, n_q = (50_000, 300) if quick else (200_000, 1000)
    k = 5
    header("D. auto on real shapes: %d reference rows, %d queries, k = %d, %d threads "
           "(ms per 1000 queries)" % (n_ref, n_q, k, n_jobs))
    print("  %-34s %-9s %9s %9s %9s %7s  %-8s %6s"
          % ("shape", "metric", "brute", "kd_tree", "ball", "pilot", "auto", "/best"))
    shapes = [("census-like 10+30, 5% missing", census_job(n_ref, n_q), None)]
    for kind, maker, nc, nn in (("structured", make_job, 8, 8), ("uniform", uniform_job, 8, 8),
                                ("structured", make_job, 2, 2), ("uniform", uniform_job, 3, 3),
                                ("structured", make_job, 4, 4)):
        Xr, yr, Xq, nom = maker(n_ref, n_q, n_cont=nc, n_nom=nn)
        shapes.append(("%s %d+%d" % (kind, nc, nn), (Xr, yr, Xq), nom))
    worst = 1.0
    for label, (Xr, yr, Xq), nom in shapes:
        for name in ("heom", "hvdm", "gower", "manhattan"):
            kw = {} if nom is None else {"nominal": nom}
            metric = Metric(name, **kw).fit(Xr, yr)
            times = {}
            for algo in ("brute", "kd_tree", "ball_tree"):
                try:
                    idx = NeighborsIndex(metric, algorithm=algo).fit()
                except ValueError:
                    continue            # the ball tree is not exact for this metric
                idx.kneighbors(Xq[:4], k, n_jobs=n_jobs)
                # best of 2: the first full call also builds brute force's caches
                times[algo] = timeit(lambda: idx.kneighbors(Xq, k, n_jobs=n_jobs),
                                     repeat=2)[0]
                if algo == "kd_tree":
                    pilot = idx._pilot() / n_ref
            auto = NeighborsIndex(metric).fit().algorithm_
            best = min(times.values())
            worst = max(worst, times[auto] / best)
            ms = {a: "%9.0f" % (1e6 * times[a] / n_q) if a in times else "%9s" % "-"
                  for a in ("brute", "kd_tree", "ball_tree")}
            print("  %-34s %-9s %s %s %s %6.1f%%  %-8s %5.2fx"
                  % (label, name, ms["brute"], ms["kd_tree"], ms["ball_tree"], 100 * pilot,
                     auto, times[auto] / best), flush=True)
    print("  auto's worst time over the best algorithm's: %.2fx" % worst)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller jobs")
    ap.add_argument("--cases", default="abcd")
    ap.add_argument("--n-jobs", type=int, default=2)
    args = ap.parse_args(argv)
    print("hdist %s; load average %s" % (hdist.__version__,
                                         " ".join("%.1f" % v for v in os.getloadavg())))
    t0 = time.perf_counter()
    if "a" in args.cases:
        case_a(args.quick, args.n_jobs)
    if "b" in args.cases:
        case_b(args.quick, args.n_jobs)
    if "c" in args.cases:
        case_c(args.quick, args.n_jobs)
    if "d" in args.cases:
        case_d(args.quick, args.n_jobs)
    print("\ntotal %.0f s; load average %s" % (time.perf_counter() - t0, " ".join(
        "%.1f" % v for v in os.getloadavg())))


if __name__ == "__main__":
    main()
