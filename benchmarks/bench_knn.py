"""Brute-force 5-NN throughput of hdist against its peers, in one process.

Job (the foundation's): 20 000 reference rows x 2 000 queries, 8 continuous + 8 nominal
attributes (2-12 values), 3 classes, with 0 % and 10 % missing values.

Peers on the same job:
- scikit-learn brute ``NearestNeighbors`` on the HVDM embedding (continuous / 4σ
  concatenated with each nominal value's class-probability vector): squared Euclidean
  distance in that space equals HVDM's reduced distance, so it is exact without missing
  values (with missing values it has no answer: it is run on the complete data only);
- the ``gower`` package's ``gower_topn`` (Gower preset), on a subset of queries;
- the plain numpy reference of the test suite, on a subset of queries.

Plus 1 vs 2 threads, and Adult train -> test 1-NN (HEOM and HVDM) wall time and accuracy.

Run: ``python benchmarks/bench_knn.py [--quick]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

import hdist  # noqa: E402


def make_job(n_ref, n_query, n_cont=8, n_nom=8, n_classes=3, missing=0.0, seed=0):
    """Mixed data with class structure; returns (X_ref, y_ref, X_query) as object arrays
    plus the nominal positions."""
    rng = np.random.default_rng(seed)
    n = n_ref + n_query
    y = rng.integers(0, n_classes, n)
    cols = []
    for a in range(n_cont):
        shift = rng.normal(size=n_classes)
        cols.append((rng.normal(size=n) + shift[y]) * (a + 1))
    for a in range(n_nom):
        V = int(rng.integers(2, 13))
        pref = rng.integers(0, V, n_classes)
        noise = rng.integers(0, V, n)
        take = rng.random(n) < 0.5
        cols.append(np.where(take, pref[y], noise).astype(np.float64))
    X = np.column_stack(cols)
    if missing > 0:
        X[rng.random(X.shape) < missing] = np.nan
    nominal = list(range(n_cont, n_cont + n_nom))
    return X[:n_ref], y[:n_ref], X[n_ref:], nominal


def hvdm_embedding(metric, X):
    """HVDM embedding: continuous / 4σ, and each nominal value's class-probability row."""
    parts = []
    names = metric.schema_.names_
    for j, name in enumerate(names):
        if metric.schema_.kinds_[j] == "continuous":
            parts.append((X[:, j] / metric.delta_[name])[:, None])
        else:
            P = metric.vdm_probabilities_[name]
            codes = X[:, j].astype(np.int64)   # the job's nominal values are 0..V-1
            cats = np.array(metric.schema_.categories_[j], dtype=np.int64)
            lut = np.full(cats.max() + 2, P.shape[0] - 1)
            lut[cats] = np.arange(len(cats))
            parts.append(P[lut[codes]])
    return np.hstack(parts)


def numpy_hvdm_knn(metric, Xr, Xq, k):
    """Plain numpy HVDM k-NN (no missing values), one query at a time: the obvious
    vectorised implementation a user would write."""
    names = metric.schema_.names_
    out_d = np.empty((len(Xq), k))
    out_i = np.empty((len(Xq), k), dtype=np.intp)
    for qi in range(len(Xq)):
        acc = np.zeros(len(Xr))
        for j, name in enumerate(names):
            if metric.schema_.kinds_[j] == "continuous":
                acc += ((Xr[:, j] - Xq[qi, j]) / metric.delta_[name]) ** 2
            else:
                P = metric.vdm_probabilities_[name]
                cats = list(metric.schema_.categories_[j])
                pos = {c: i for i, c in enumerate(cats)}
                rcodes = np.array([pos.get(int(v), len(cats)) for v in Xr[:, j]])
                diff = P[rcodes] - P[pos.get(int(Xq[qi, j]), len(cats))]
                acc += (diff * diff).sum(axis=1)
        order = np.lexsort((np.arange(len(Xr)), acc))[:k]
        out_d[qi] = np.sqrt(acc[order])
        out_i[qi] = order
    return out_d, out_i


def timeit(fn, repeat=1):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def row(label, seconds, pairs, ref_rate=None):
    rate = pairs / seconds
    ratio = "" if ref_rate is None else "%6.2fx" % (rate / ref_rate)
    print("  %-52s %9.3f s  %10.3e pairs/s  %s" % (label, seconds, rate, ratio))
    return rate


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller job")
    ap.add_argument("--no-adult", action="store_true")
    args = ap.parse_args(argv)
    n_ref, n_q = (5000, 500) if args.quick else (20000, 2000)
    k = 5
    pairs = n_ref * n_q
    print("hdist %s; %s; %d cores" % (hdist.__version__, sys.version.split()[0], os.cpu_count()))
    hdist.show_config()
    try:
        from threadpoolctl import threadpool_info
        for lib in threadpool_info():
            print("BLAS: %s %s, kernel %s, %d threads" % (lib.get("internal_api"),
                  lib.get("version"), lib.get("architecture"), lib.get("num_threads")))
    except ImportError:
        pass
    for missing in (0.0, 0.10):
        Xr, yr, Xq, nominal = make_job(n_ref, n_q, missing=missing)
        print("\n== job: %d reference x %d queries, 8 continuous + 8 nominal, 3 classes, "
              "%d %% missing, k = %d" % (n_ref, n_q, round(missing * 100), k))
        m = hdist.get_metric("hvdm", nominal=nominal).fit(Xr, yr)
        m.kneighbors(Xq[:50], k)  # warm up
        t2, (d2, i2) = timeit(lambda: m.kneighbors(Xq, k, n_jobs=2), repeat=7)
        t1, (d1, i1) = timeit(lambda: m.kneighbors(Xq, k, n_jobs=1), repeat=7)
        assert np.array_equal(i1, i2) and np.array_equal(d1, d2)
        base = row("hdist hvdm brute, 2 threads", t2, pairs)
        row("hdist hvdm brute, 1 thread", t1, pairs, base)
        print("  2 threads / 1 thread: %.2fx" % (t1 / t2))
        if missing == 0.0:
            no_missing_rate = base
            try:
                from sklearn.neighbors import NearestNeighbors
                from threadpoolctl import threadpool_limits
            except ImportError:
                print("  scikit-learn not installed: skipped")
            else:
                Er = hvdm_embedding(m, Xr)
                Eq = hvdm_embedding(m, Xq)
                with threadpool_limits(2):
                    nn = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=2).fit(Er)
                    nn.kneighbors(Eq[:50])
                    ts, (ds, is_) = timeit(lambda: nn.kneighbors(Eq), repeat=7)
                r = row("scikit-learn brute on HVDM embedding, 2 threads", ts, pairs)
                print("  hdist / scikit-learn: %.2fx" % (base / r))
                agree = np.mean(np.abs(np.sort(ds, 1) - d2) < 1e-9)
                print("  distances agree with hdist (|diff| < 1e-9): %.4f" % agree)
            g = hdist.get_metric("gower", nominal=nominal).fit(Xr)
            tg, _ = timeit(lambda: g.kneighbors(Xq, k, n_jobs=2))
            grate = row("hdist gower brute, 2 threads", tg, pairs)
            try:
                import gower
            except ImportError:
                print("  gower package not installed: skipped")
            else:
                nq_small = 20 if args.quick else 50
                cat = np.zeros(Xr.shape[1], dtype=bool)
                cat[nominal] = True

                def frame(A):
                    df = A.astype(object)
                    for c in nominal:
                        df[:, c] = np.array(["v%d" % v for v in A[:, c]], dtype=object)
                    return df
                Dr, Dq = frame(Xr), frame(Xq[:nq_small])
                def run_gower():
                    for i in range(nq_small):
                        gower.gower_topn(Dq[i:i + 1], Dr, cat_features=cat, n=k)
                tg2, _ = timeit(run_gower)
                r = row("gower package gower_topn (%d queries)" % nq_small, tg2,
                        n_ref * nq_small)
                print("  hdist gower / gower package: %.0fx" % (grate / r))
            nq_ref = 20 if args.quick else 100
            tr, (dn, inn) = timeit(lambda: numpy_hvdm_knn(m, Xr, Xq[:nq_ref], k))
            assert np.allclose(dn, d2[:nq_ref], rtol=1e-9, atol=1e-12)
            r = row("numpy reference (%d queries)" % nq_ref, tr, n_ref * nq_ref)
            print("  hdist / numpy reference: %.0fx" % (base / r))
        else:
            print("  with 10 %% missing / without: %.2fx" % (base / no_missing_rate))
    if not args.no_adult:
        adult(quick=args.quick)


def adult(quick=False):
    here = os.path.join(HERE, "..", "..", "shared", "data")
    import json
    import pandas as pd
    def load(name):
        schema = json.load(open(os.path.join(here, name + ".schema.json")))
        df = pd.read_csv(os.path.join(here, name + ".csv"), na_values=[""],
                         keep_default_na=False)
        return df, schema
    tr, schema = load("adult_train")
    te, _ = load("adult_test")
    target = schema.get("class") or schema.get("target") or "class"
    ytr = tr.pop(target).astype(str).str.rstrip(".")
    yte = te.pop(target).astype(str).str.rstrip(".")
    if quick:
        te, yte = te.iloc[:2000], yte.iloc[:2000]
    nominal = [c for c in tr.columns if _kind(schema, c) != "numeric"]
    print("\n== Adult: %d train -> %d test, 1-NN" % (len(tr), len(te)))
    for name in ("heom", "hvdm"):
        m = hdist.get_metric(name, nominal=nominal)
        t = time.perf_counter()
        m.fit(tr, ytr)
        d, i = m.kneighbors(te, 1, n_jobs=2)
        el = time.perf_counter() - t
        acc = np.mean(ytr.to_numpy()[i[:, 0]] == yte.to_numpy())
        print("  %-6s %7.2f s  accuracy %.4f  (%.3e pairs/s)" % (name, el, acc,
                                                                len(tr) * len(te) / el))


def _kind(schema, col):
    for c in schema.get("columns", []):
        if c.get("name") == col:
            return c.get("type")
    return schema.get("types", {}).get(col, "numeric")


if __name__ == "__main__":
    main()
