"""k-prototypes on Adult: hdist.cluster.KPrototypes against the ``kmodes`` package, and the
fit time of the ``hds`` metric on Adult.

Same job for both: Adult (train + test, 48 842 rows; ``--rows`` subsamples), the 6 numeric
and 8 nominal attributes, a missing nominal value replaced by the value "?" (``kmodes``
has no missing values), ``k`` clusters, the same ``k`` initial centers (data rows drawn
with ``--seed``), the same cost: Huang's ``Σ (x - μ)² + γ Σ [x_a ≠ m_a]`` with
``γ = 0.5 × mean standard deviation of the numeric columns`` (``kmodes``' default), which is
hdist's ``heom`` with ``normalization="none"``, ``p = 2`` and weight ``γ`` on the nominal
columns.  Both are given ``--max-iter`` iterations at most (they stop earlier once no row
moves).  ``kmodes`` moves rows one at a time and updates centers as it goes (Huang's
original scheme); hdist assigns all rows, then updates the centers (batch), so ``kmodes``
tends to need fewer iterations and the two may stop at different local optima: the
iterations, total times, final costs and agreement are printed.

Seconds per iteration = (time with ``max_iter = N`` - time with ``max_iter = 1``) /
(iterations - 1): the set-up (encoding, the first assignment) cancels out.

k-medoids (``--medoids-rows 5000,15000``): ``hdist.cluster.KMedoids`` (FasterPAM, Gower)
against ``kmedoids.fasterpam`` fed hdist's own Gower matrix (``Metric("gower").pairwise``),
on Adult rows without the class, ``--medoids-k`` clusters, the same initial medoids (rows
drawn with ``--seed``).  Each time includes everything from the data frame on: hdist's
``fit`` (metric, encoding, the distance matrix, the swaps, the final assignment); for
``kmedoids`` the metric's fit and its matrix, then ``fasterpam`` with its default threads
(``n_cpu=-1``: its parallel version) and with ``n_cpu=1``.  The two visit the candidate
rows in different random orders, so they may stop at different local optima: both losses
(``Σ_i d(i, medoid(i))``) are printed.  Run it from the repository root with
``PYTHONPATH=.`` (or hdist installed).  ``--sampled`` also clusters all 48 842 rows exactly
and in sampled mode (``max_exact``, ``sample_size``) and prints the loss ratio.

Run: ``python benchmarks/bench_cluster.py [--rows 48842] [--k 4] [--max-iter 100]
[--medoids-rows 5000,15000] [--medoids-k 8] [--sampled] [--skip-kprototypes]``.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time

import numpy as np
import pandas as pd

import hdist
from hdist.cluster import KMedoids, KPrototypes

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "examples"))
from adult_workclass_hds import read_table  # noqa: E402


def adult(rows, seed):
    a, schema = read_table("adult_train")
    b, _ = read_table("adult_test")
    X = pd.concat([a, b], ignore_index=True).drop(columns=schema["class"])
    if rows < len(X):
        keep = np.sort(np.random.default_rng(seed).choice(len(X), rows, replace=False))
        X = X.iloc[keep].reset_index(drop=True)
    return X


def timed(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def per_iteration(run, max_iter):
    """(seconds per iteration, iterations, result of the max_iter run)."""
    t1, _ = timed(lambda: run(1))
    tn, res = timed(lambda: run(max_iter))
    n_iter = res[1]
    return ((tn - t1) / (n_iter - 1) if n_iter > 1 else float("nan")), n_iter, res, tn


def machine():
    load = os.getloadavg()
    return "nproc %d, load average %.2f %.2f %.2f" % (os.cpu_count(), *load)


def medoids(rows, k, seed):
    """hdist KMedoids against kmedoids.fasterpam on hdist's Gower matrix, matrix included."""
    try:
        import kmedoids
    except ImportError:
        print("kmedoids is not installed")
        return
    print("\nk-medoids, Gower, k = %d, the same initial medoids; %s" % (k, machine()))
    for n in rows:
        X = adult(n, seed)
        init = np.random.default_rng(seed).choice(n, k, replace=False)
        # the first touch of a fresh n x n array can cost the kernel's page compaction
        # (seconds at 15 000 rows): paid here, outside both timings
        warm = np.empty((n, n))
        warm.fill(0.0)
        del warm
        gc.collect()
        t0 = time.perf_counter()
        ours = KMedoids(k, metric="gower", init=init, random_state=seed).fit(X)
        t_ours = time.perf_counter() - t0
        gc.collect()
        res = {}
        for label, kw in (("n_cpu=-1", {}), ("n_cpu=1", {"n_cpu": 1})):
            t0 = time.perf_counter()
            D = hdist.Metric("gower").fit(X).pairwise(X)
            t_mat = time.perf_counter() - t0
            r = kmedoids.fasterpam(D, init.copy(), random_state=seed, **kw)
            res[label] = (time.perf_counter() - t0, t_mat, r.loss)
            del D
            gc.collect()
        print("%6d rows: hdist KMedoids %.2f s (loss %.6f, %d passes)  |  kmedoids.fasterpam "
              "%s %.2f s (loss %.6f), %s %.2f s (loss %.6f; the matrix %.2f s)  |  "
              "kmedoids / hdist %.2fx, %.2fx; loss hdist / kmedoids %.6f"
              % (n, t_ours, ours.inertia_, ours.n_iter_,
                 "n_cpu=-1", res["n_cpu=-1"][0], res["n_cpu=-1"][2], "n_cpu=1",
                 res["n_cpu=1"][0], res["n_cpu=1"][2], res["n_cpu=1"][1],
                 res["n_cpu=-1"][0] / t_ours, res["n_cpu=1"][0] / t_ours,
                 ours.inertia_ / res["n_cpu=1"][2]))
    print("after: %s" % machine())


def sampled(k, seed, sample_size, n_init):
    """Loss of the sampled mode relative to the exact solve on all of Adult."""
    X = adult(48842, seed)
    print("\nk-medoids on all %d Adult rows, Gower, k = %d; %s" % (len(X), k, machine()))
    t0 = time.perf_counter()
    exact = KMedoids(k, metric="gower", max_exact=None, random_state=seed).fit(X)
    t_exact = time.perf_counter() - t0
    print("exact: loss %.6f, %.1f s, %d passes" % (exact.inertia_, t_exact, exact.n_iter_))
    for ni in n_init:
        t0 = time.perf_counter()
        m = KMedoids(k, metric="gower", max_exact=20000, sample_size=sample_size, n_init=ni,
                     random_state=seed).fit(X)
        print("sampled (sample_size %d, n_init %d): loss %.6f = %.4f x exact, %.1f s"
              % (sample_size, ni, m.inertia_, m.inertia_ / exact.inertia_,
                 time.perf_counter() - t0))
    print("after: %s" % machine())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=48842)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-kmodes", action="store_true")
    ap.add_argument("--skip-kprototypes", action="store_true")
    ap.add_argument("--medoids-rows", default="5000,15000",
                    help="comma-separated row counts for the k-medoids comparison ('' skips)")
    ap.add_argument("--medoids-k", type=int, default=8)
    ap.add_argument("--sampled", action="store_true",
                    help="also the sampled mode's loss against the exact solve on all rows")
    ap.add_argument("--sample-size", type=int, default=5000)
    args = ap.parse_args()

    if args.medoids_rows:
        medoids([int(r) for r in args.medoids_rows.split(",")], args.medoids_k, args.seed)
    if args.sampled:
        sampled(args.medoids_k, args.seed, args.sample_size, (1, 5))
    if args.skip_kprototypes:
        return
    X = adult(args.rows, args.seed)
    print("Adult: %d rows x %d columns" % X.shape)
    t_hds = [timed(lambda: hdist.Metric("hds").fit(X), repeat=3)[0]]
    t_heom = timed(lambda: hdist.Metric("heom").fit(X), repeat=3)[0]
    print("hds fit: %.3f s (heom fit, i.e. schema + encoding alone: %.3f s; the co-occurrence"
          " tables: %.3f s)" % (t_hds[0], t_heom, t_hds[0] - t_heom))

    num = [c for c in X.columns if X[c].dtype.kind == "f"]
    cat = [c for c in X.columns if c not in num]
    Xp = X[num + cat].copy()
    for c in cat:
        Xp[c] = Xp[c].astype(object).where(Xp[c].notna(), "?")
    gamma = 0.5 * float(np.mean(Xp[num].to_numpy().std(axis=0)))
    start = np.random.default_rng(args.seed).choice(len(Xp), args.k, replace=False)
    weights = [1.0] * len(num) + [gamma] * len(cat)
    metric = hdist.Metric("heom", normalization="none", weights=weights, p=2,
                          nominal=cat).fit(Xp)

    def ours(max_iter, n_jobs=None):
        m = KPrototypes(args.k, metric=metric, init=Xp.iloc[start], max_iter=max_iter,
                        n_jobs=n_jobs).fit(Xp)
        return m, m.n_iter_

    print("\nk-prototypes, k = %d, gamma = %.4g, at most %d iterations, same initial centers"
          % (args.k, gamma, args.max_iter))
    res = {}
    for nj in (1, 2):
        spi, n_iter, (model, _), total = per_iteration(lambda mi: ours(mi, nj), args.max_iter)
        res[nj] = (spi, model)
        print("hdist KPrototypes, %d thread(s): %.4f s/iteration, %d iterations, %.2f s in "
              "all (metric fitted once beforehand), cost %.6g"
              % (nj, spi, n_iter, total, model.inertia_))
    if args.skip_kmodes:
        return
    try:
        from kmodes.kprototypes import KPrototypes as KP
    except ImportError:
        print("kmodes is not installed")
        return
    arr = Xp.to_numpy(dtype=object)
    ncat = len(cat)
    cat_idx = list(range(len(num), len(num) + ncat))
    enc = [np.unique(arr[:, j].astype(str), return_inverse=True)[1] for j in cat_idx]
    init = [arr[start][:, :len(num)].astype(float),
            np.column_stack([e[start] for e in enc]).astype(np.uint16)]

    def theirs(max_iter):
        kp = KP(args.k, init=[init[0].copy(), init[1].copy()], n_init=1, max_iter=max_iter,
                gamma=gamma, random_state=0)
        kp.fit(arr, categorical=cat_idx)
        return kp, kp.n_iter_

    spi_k, n_iter_k, (kp, _), total_k = per_iteration(theirs, args.max_iter)
    print("kmodes KPrototypes:            %.4f s/iteration, %d iterations, %.2f s in all, "
          "cost %.6g" % (spi_k, n_iter_k, total_k, kp.cost_))
    for nj, (spi, model) in res.items():
        print("ratio kmodes / hdist (%d thread(s)): %.0fx per iteration"
              % (nj, spi_k / spi))
    agree = np.mean(np.asarray(kp.labels_) == model.labels_)
    print("final cost hdist / kmodes: %.6f; rows in the same cluster number in both: %.4f"
          % (model.inertia_ / kp.cost_, agree))


if __name__ == "__main__":
    main()
