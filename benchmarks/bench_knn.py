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

Plus 1 vs 2 threads; one table per p (1, 2, inf, 0.5, 3) on 16 continuous attributes
against scipy ``cdist`` + ``argpartition``, scikit-learn brute and faiss; a census-like shape
(40 columns, 30 nominal with up to 50 values, 5 % missing) against scikit-learn brute on
the one-hot matrix; Adult train -> test 1-NN (HEOM and HVDM) wall time and accuracy.

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
from hdist._search.searchers import brute_radius  # noqa: E402


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


def timeit_alt(fa, fb, repeat=1):
    """Best times of two jobs run alternately (a, b, a, b, ...): their ratio does not
    depend on the machine's speed drifting between the two."""
    best, out = [np.inf, np.inf], [None, None]
    for _ in range(repeat):
        for i, fn in enumerate((fa, fb)):
            t = time.perf_counter()
            out[i] = fn()
            best[i] = min(best[i], time.perf_counter() - t)
    return (best[0], out[0]), (best[1], out[1])


def row(label, seconds, pairs, ref_rate=None):
    rate = pairs / seconds
    ratio = "" if ref_rate is None else "%6.2fx" % (rate / ref_rate)
    print("  %-52s %9.3f s  %10.3e pairs/s  %s" % (label, seconds, rate, ratio))
    return rate


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller job")
    ap.add_argument("--no-adult", action="store_true")
    ap.add_argument("--hvdm-only", action="store_true",
                    help="only the HVDM rows (hdist and scikit-learn, radius search)")
    args = ap.parse_args(argv)
    n_ref, n_q = (5000, 500) if args.quick else (20000, 2000)
    k = 5
    pairs = n_ref * n_q
    print("hdist %s; %s; %d cores" % (hdist.__version__, sys.version.split()[0], os.cpu_count()))
    print("nproc %d; load average %.2f %.2f %.2f" % ((os.cpu_count(),) + os.getloadavg()))
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
        (t2, (d2, i2)), (t1, (d1, i1)) = timeit_alt(
            lambda: m.kneighbors(Xq, k, n_jobs=2), lambda: m.kneighbors(Xq, k, n_jobs=1),
            repeat=9)
        assert np.array_equal(i1, i2) and np.array_equal(d1, d2)
        base = row("hdist hvdm brute, 2 threads", t2, pairs)
        row("hdist hvdm brute, 1 thread", t1, pairs, base)
        print("  2 threads / 1 thread: %.2fx" % (t1 / t2))
        # radius search at the median 5th-neighbor distance: the matrix-product filter
        # (chosen automatically) against the direct kernel, same answer
        rad = float(np.median(d2[:, -1]))
        tf, (rd, ri) = timeit(lambda: m.radius_neighbors(Xq, rad, n_jobs=2), repeat=3)
        rows_q = m.encode(Xq)
        td, direct = timeit(lambda: brute_radius(m.plan_, rows_q, m.train_, m._ctrain(),
                                                 rad, 2, method="direct"))
        dd, di = direct.dist, direct.ind
        assert all(np.array_equal(a, b) for a, b in zip(ri, di))
        assert all(np.array_equal(a, b) for a, b in zip(rd, dd))
        rrate = row("hdist hvdm radius (filter), 2 threads", tf, pairs)
        row("hdist hvdm radius, direct kernel, 2 threads", td, pairs, rrate)
        if missing == 0.0:
            no_missing_rate = base
            no_missing_job = (m, Xq)
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
            if args.hvdm_only:
                continue
            nq_ref = 20 if args.quick else 100
            tr, (dn, inn) = timeit(lambda: numpy_hvdm_knn(m, Xr, Xq[:nq_ref], k))
            assert np.allclose(dn, d2[:nq_ref], rtol=1e-9, atol=1e-12)
            r = row("numpy reference (%d queries)" % nq_ref, tr, n_ref * nq_ref)
            print("  hdist / numpy reference: %.0fx" % (base / r))
        else:
            print("  with 10 %% missing / without: %.2fx" % (base / no_missing_rate))
            # the same two jobs again, timed alternately
            m0, Xq0 = no_missing_job
            (tn, _), (tm, _) = timeit_alt(lambda: m0.kneighbors(Xq0, k, n_jobs=2),
                                          lambda: m.kneighbors(Xq, k, n_jobs=2), repeat=9)
            print("  with 10 %% missing / without, timed alternately: %.2fx (%.4f s against "
                  "%.4f s)" % (tn / tm, tm, tn))
            if args.hvdm_only:
                continue
        g = hdist.get_metric("gower", nominal=nominal).fit(Xr)
        (tg, _), (tg1, _) = timeit_alt(lambda: g.kneighbors(Xq, k, n_jobs=2),
                                       lambda: g.kneighbors(Xq, k, n_jobs=1), repeat=3)
        grate = row("hdist gower brute, 2 threads", tg, pairs)
        row("hdist gower brute, 1 thread", tg1, pairs, grate)
        print("  2 threads / 1 thread: %.2fx" % (tg1 / tg))
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
                    df[:, c] = np.array([None if v != v else "v%d" % v for v in A[:, c]],
                                        dtype=object)
                return df
            Dr, Dq = frame(Xr), frame(Xq[:nq_small])
            def run_gower():
                for i in range(nq_small):
                    gower.gower_topn(Dq[i:i + 1], Dr, cat_features=cat, n=k)
            tg2, _ = timeit(run_gower)
            # with missing values the package returns NaN distances (it has no "ignore"
            # rule): timed for its speed only
            r = row("gower package gower_topn (%d queries)" % nq_small, tg2,
                    n_ref * nq_small)
            print("  hdist gower / gower package: %.0fx" % (grate / r))
    if args.hvdm_only:
        return
    per_p(quick=args.quick)
    census_like(quick=args.quick)
    if not args.no_adult:
        adult(quick=args.quick)


def _peer_rows(label, seconds, pairs, hd_rate):
    rate = pairs / seconds
    print("  %-52s %9.3f s  %10.3e pairs/s  hdist %.2fx" % (label, seconds, rate,
                                                            hd_rate / rate))


def _argpartition_knn(D, k):
    part = np.argpartition(D, k - 1, axis=1)[:, :k]
    return np.take_along_axis(D, part, 1), part


def per_p(quick=False):
    """One table per p (1, 2, inf, 0.5, 3): hdist's Minkowski k-NN, 16 continuous
    attributes, against scipy ``cdist`` + ``argpartition``, scikit-learn brute
    ``NearestNeighbors`` and faiss ``IndexFlat`` on the same range-scaled data."""
    from scipy.spatial.distance import cdist
    n_ref, n_q, k, m = (5000, 500, 5, 16) if quick else (20000, 2000, 5, 16)
    pairs = n_ref * n_q
    rng = np.random.default_rng(3)
    X = rng.normal(size=(n_ref + n_q, m)) * np.arange(1, m + 1)
    Xr, Xq = X[:n_ref], X[n_ref:]
    scale = Xr.max(0) - Xr.min(0)
    Sr, Sq = Xr / scale, Xq / scale
    try:
        import faiss
    except ImportError:
        faiss = None
    try:
        from sklearn.neighbors import NearestNeighbors
        from threadpoolctl import threadpool_limits
    except ImportError:
        NearestNeighbors = None
    for p, scipy_name, sk in ((1.0, "cityblock", "manhattan"), (2.0, "euclidean", "euclidean"),
                              (np.inf, "chebyshev", "chebyshev"), (0.5, "minkowski", None),
                              (3.0, "minkowski", None)):
        print("\n== p = %s: %d reference x %d queries, %d continuous, k = %d"
              % (p, n_ref, n_q, m, k))
        met = hdist.Metric("minkowski", p=p).fit(Xr)
        met.kneighbors(Xq[:20], k)
        reps = 7 if p in (1.0, 2.0, np.inf) else 2
        (t1, (d1, i1)), (t2, (d2, i2)) = timeit_alt(
            lambda: met.kneighbors(Xq, k, n_jobs=1), lambda: met.kneighbors(Xq, k, n_jobs=2),
            repeat=reps)
        assert np.array_equal(i1, i2) and np.array_equal(d1, d2)
        h1 = row("hdist minkowski p=%s, 1 thread" % p, t1, pairs)
        h2 = row("hdist minkowski p=%s, 2 threads" % p, t2, pairs)
        print("  2 threads / 1 thread: %.2fx" % (t1 / t2))
        kw = {"p": p} if scipy_name == "minkowski" else {}
        ts, (ds, _) = timeit(lambda: _argpartition_knn(cdist(Sq, Sr, scipy_name, **kw), k))
        _peer_rows("scipy cdist + argpartition (1 thread)", ts, pairs, h1)
        assert np.allclose(np.sort(ds, 1), d1, rtol=1e-9)
        if NearestNeighbors is not None:
            metric = sk or "minkowski"
            extra = {} if sk else {"p": p}
            with threadpool_limits(2):
                nn = NearestNeighbors(n_neighbors=k, algorithm="brute", metric=metric,
                                      metric_params=None, n_jobs=2, **extra).fit(Sr)
                tk, (dk, _) = timeit(lambda: nn.kneighbors(Sq), repeat=min(reps, 2))
            _peer_rows("scikit-learn brute NearestNeighbors (2 threads)", tk, pairs, h2)
        if faiss is not None:
            fm = {1.0: faiss.METRIC_L1, 2.0: faiss.METRIC_L2, np.inf: faiss.METRIC_Linf}
            index = faiss.IndexFlat(m, fm.get(p, faiss.METRIC_Lp))
            if p not in fm:
                index.metric_arg = p
            index.add(Sr.astype(np.float32))
            faiss.omp_set_num_threads(2)
            tf, _ = timeit(lambda: index.search(Sq.astype(np.float32), k), repeat=min(reps, 2))
            _peer_rows("faiss IndexFlat float32 (2 threads)", tf, pairs, h2)


def census_like(quick=False):
    """A census-like shape: 40 columns, 30 nominal with up to 50 values, 5 % missing;
    HEOM and Gower 5-NN against scikit-learn brute on the exact one-hot embedding (HEOM
    without missing values: squared Euclidean on one-hot/sqrt(2) and range-scaled columns)."""
    n_ref, n_q, k = (20000, 200, 5) if quick else (200000, 1000, 5)
    rng = np.random.default_rng(5)
    n = n_ref + n_q
    cols = [rng.normal(size=n) * (a + 1) for a in range(10)]
    for a in range(30):
        V = int(rng.integers(2, 51))
        cols.append(rng.integers(0, V, n).astype(np.float64))
    X = np.column_stack(cols)
    nominal = list(range(10, 40))
    Xm = X.copy()
    Xm[rng.random(X.shape) < 0.05] = np.nan
    pairs = n_ref * n_q
    print("\n== census-like: %d reference x %d queries, 10 continuous + 30 nominal "
          "(2-50 values), k = %d" % (n_ref, n_q, k))
    rates = {}
    for name, data, tag in (("heom", X, "no missing"), ("heom", Xm, "5 % missing"),
                            ("gower", Xm, "5 % missing")):
        met = hdist.Metric(name, nominal=nominal).fit(data[:n_ref])
        Q = data[n_ref:]
        met.kneighbors(Q[:10], k)
        t, _ = timeit(lambda: met.kneighbors(Q, k, n_jobs=2))
        rates[(name, tag)] = row("hdist %s, %s, 2 threads" % (name, tag), t, pairs)
    try:
        from sklearn.neighbors import NearestNeighbors
        from sklearn.preprocessing import OneHotEncoder
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    cont = X[:, :10]
    scale = cont[:n_ref].max(0) - cont[:n_ref].min(0)
    oh = OneHotEncoder(handle_unknown="ignore", dtype=np.float32).fit(X[:n_ref, 10:])
    E = np.hstack([(cont / scale).astype(np.float32),
                   oh.transform(X[:, 10:]).toarray() / np.float32(np.sqrt(2.0))])
    with threadpool_limits(2):
        nn = NearestNeighbors(n_neighbors=k, algorithm="brute", n_jobs=2).fit(E[:n_ref])
        nn.kneighbors(E[n_ref:n_ref + 10])
        t, _ = timeit(lambda: nn.kneighbors(E[n_ref:]))
    _peer_rows("scikit-learn brute, one-hot float32 (%d wide), 2 threads" % E.shape[1], t,
               pairs, rates[("heom", "no missing")])
    for (name, tag), rate in rates.items():
        print("  hdist %s, %s / scikit-learn: %.2fx" % (name, tag, rate * t / pairs))


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
