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

k-modes initialisations (``--kmodes-init``): ``hdist.cluster.KModes`` (``smd``) with
``init="huang"``, ``"cao"``, ``"k-means++"`` and ``"random"`` against the ``kmodes``
package's ``init="Huang"`` and ``"Cao"``, on nominal data with known classes, k = the
number of classes: Zoo (101 animals, 16 attributes, ``legs`` read as a category, 7
classes), the nominal columns of German credit (1000 rows, 13 attributes, 2 classes) and
soybean-like tables (47 rows, 35 attributes of 2-7 values, 4 classes of 10, 10, 10 and 17
rows, as the small soybean data; in 25 of the attributes each class has its own typical
value, taken with a probability drawn in [0.25, 0.55] per class, else a uniform value;
the other 10 attributes are noise), ``--kmodes-seeds`` tables and runs.  Prints the mean
adjusted Rand index against the classes and the mean cost (mismatches to the row's
mode), with ``n_init`` = 1 for Cao (deterministic) and the default 10 for the others, and
checks that hdist's Cao initial rows are those of ``kmodes.util.init_methods.init_cao``.

Run: ``python benchmarks/bench_cluster.py [--rows 48842] [--k 4] [--max-iter 100]
[--medoids-rows 5000,15000] [--medoids-k 8] [--sampled] [--skip-kprototypes]
[--kmodes-init] [--kmodes-seeds 10]``.
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
from hdist.cluster import KMedoids, KModes, KPrototypes

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


def soybean_like(seed):
    """47 rows x 35 nominal attributes, 4 classes of 10, 10, 10, 17 rows (see the module
    docstring)."""
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(4), [10, 10, 10, 17])
    cols = {}
    for a in range(35):
        v = int(rng.integers(2, 8))
        if a < 25:
            typical = rng.integers(0, v, size=4)
            keep = rng.uniform(0.25, 0.55, size=4)[y]
            other = rng.integers(0, v, size=y.size)
            vals = np.where(rng.random(y.size) < keep, typical[y], other)
        else:
            vals = rng.integers(0, v, size=y.size)
        cols["a%02d" % a] = np.array(["v%d" % x for x in vals], dtype=object)
    return pd.DataFrame(cols), y


def nominal_sets(seeds):
    """(name, [(X, y), ...]) of the nominal data sets of the k-modes comparison."""
    sets = [("soybean-like", [soybean_like(s) for s in range(seeds)])]
    try:
        zoo, schema = read_table("Zoo")
        y = pd.factorize(zoo[schema["class"]])[0]
        X = zoo.drop(columns=schema["class"]).astype(str)
        sets.append(("Zoo", [(X, y)]))
        ger, schema = read_table("german")
        nom = [c["name"] for c in schema["columns"]
               if c["type"] in ("nominal", "logical") and c["name"] != schema["class"]]
        sets.append(("German (nominal)", [(ger[nom].astype(str),
                                            pd.factorize(ger[schema["class"]])[0])]))
    except OSError as err:
        print("data folder not found (%s): soybean-like tables only" % err)
    return sets


def kmodes_inits(seeds):
    """hdist KModes' initialisations against the kmodes package's (module docstring)."""
    try:
        from kmodes.kmodes import KModes as TheirKModes
        from kmodes.util.dissim import matching_dissim
        from kmodes.util.init_methods import init_cao
    except ImportError:
        print("kmodes is not installed")
        return
    from sklearn.metrics import adjusted_rand_score
    from hdist._estimators.cluster import cao_seeds
    print("k-modes initialisations, mean over runs (ARI against the classes; cost = "
          "mismatches to the modes); %s" % machine())
    for name, tables in nominal_sets(seeds):
        k = len(np.unique(tables[0][1]))
        res = {}
        for X, y in tables:
            V = X.to_numpy()
            codes = np.stack([pd.factorize(X[c], sort=True)[0] for c in X.columns], axis=1)
            ours = cao_seeds(codes, k, lambda idx: np.array(
                [(V != V[i]).sum(axis=1) for i in idx], dtype=float))
            theirs = init_cao(codes, k, matching_dissim)
            same = np.array_equal(codes[ours], theirs)
            res.setdefault("Cao rows equal kmodes'", []).append(same)
            runs = seeds if len(tables) == 1 else 1
            for init in ("huang", "cao", "k-means++", "random"):
                for r in range(1 if init == "cao" else runs):
                    km = KModes(k, init=init, random_state=r).fit(X)
                    cost = sum(int((V[i] != km.cluster_centers_.iloc[km.labels_[i]]
                                    .to_numpy()).sum()) for i in range(len(V)))
                    res.setdefault("hdist " + init, []).append(
                        (adjusted_rand_score(y, km.labels_), cost))
            for init in ("Huang", "Cao"):
                for r in range(1 if init == "Cao" else runs):
                    kmo = TheirKModes(k, init=init, n_init=1 if init == "Cao" else 10,
                                      random_state=r).fit(V)
                    res.setdefault("kmodes " + init, []).append(
                        (adjusted_rand_score(y, kmo.labels_), float(kmo.cost_)))
        print("%s (%d rows x %d attributes, k = %d, %d table(s)); hdist's Cao initial rows "
              "equal kmodes': %s" % (name, len(tables[0][0]), tables[0][0].shape[1], k,
                                     len(tables), all(res.pop("Cao rows equal kmodes'"))))
        print("  %-18s %7s %9s %5s" % ("", "ARI", "cost", "runs"))
        for key, vals in res.items():
            a = np.array(vals, dtype=float)
            print("  %-18s %7.3f %9.1f %5d" % (key, a[:, 0].mean(), a[:, 1].mean(), len(a)))
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
    ap.add_argument("--kmodes-init", action="store_true",
                    help="only the k-modes initialisations against the kmodes package")
    ap.add_argument("--kmodes-seeds", type=int, default=10)
    args = ap.parse_args()

    if args.kmodes_init:
        kmodes_inits(args.kmodes_seeds)
        return

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
