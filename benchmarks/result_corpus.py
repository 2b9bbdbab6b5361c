"""A corpus of search results, to show that a change of the search code changes no answer.

Runs every algorithm (brute force with both of its paths, KD-tree, ball tree where the
metric allows it, inverted lists at a fixed probe count, ``auto``) under several metrics
on three bundled datasets with missing values: k-NN and radius search from
:class:`hdist.NeighborsIndex` and from :class:`hdist.Metric`, with and without
``exclude_self``, on 1 and 2 threads, the pairwise matrix, and the votes of the
classifier and regressor with ``ties="index"`` and ``ties="include"``.  Only public
functions are called, so the same script runs before and after a change.

Usage::

    python benchmarks/result_corpus.py --save before.npz
    python benchmarks/result_corpus.py --compare before.npz    # exit status 1 on a change

The comparison is bit for bit (float64 bit patterns, NaN included).  The refusals (a ball
tree the metric does not allow, with its message) are part of the corpus.  Which path
``"auto"`` takes (and so its distance evaluations) depends on a timing race between its
pilot tree and brute force, so for ``"auto"`` only the answers are compared.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

import hdist
from hdist.datasets import load_adult, load_credit_a, load_credit_data

METRICS = {
    "heom": {},
    "hvdm": {},
    "gower": {},
    "manhattan": {},
    "fractional": {},
    "ivdm": {},
    "chebyshev": {},
}
ALGORITHMS = ("brute", "kd_tree", "ball_tree", "ivf", "auto")
K = 7


def datasets():
    """``name -> (X, y, nominal, n_train)``: the first ``n_train`` rows are indexed and the
    rest are queries."""
    out = {}
    X, y, nom = load_credit_a(as_frame=False)
    out["credit_a"] = (X, y, nom, 500)
    X, y, nom = load_credit_data(as_frame=False)
    out["credit_data"] = (X[:2600], y[:2600], nom, 2200)
    X, y, nom = load_adult(as_frame=False)
    out["adult"] = (X[:3000], y[:3000], nom, 2500)
    return out


def _put(store, key, value):
    if isinstance(value, np.ndarray) and value.dtype == object:
        lens = np.array([len(v) for v in value], dtype=np.int64)
        flat = np.concatenate([np.asarray(v) for v in value]) if len(value) else \
            np.zeros(0)
        store[key + "/len"] = lens
        store[key + "/flat"] = flat
    else:
        store[key] = np.asarray(value)


def _params(name, nom):
    p = dict(METRICS[name])
    p["nominal"] = list(nom)
    return p


def record(verbose=True):
    store = {}
    for dname, (X, y, nom, n_train) in datasets().items():
        Xt, yt, Xq = X[:n_train], y[:n_train], X[n_train:]
        for mname in METRICS:
            metric = hdist.Metric(mname, **_params(mname, nom))
            metric.fit(Xt, yt)
            base = "%s/%s" % (dname, mname)
            _put(store, base + "/pairwise", metric.pairwise(Xq[:60], Xt[:300]))
            d5, _ = metric.kneighbors(Xq, 5)
            r = float(np.median(d5[:, -1]))
            store[base + "/r"] = np.array(r)
            for threads in (1, 2):
                d, i = metric.kneighbors(Xq, K, n_jobs=threads)
                _put(store, base + "/metric/knn/%d/d" % threads, d)
                _put(store, base + "/metric/knn/%d/i" % threads, i)
                d, i = metric.kneighbors(None, K, exclude_self=True, n_jobs=threads)
                _put(store, base + "/metric/knn_self/%d/d" % threads, d)
                _put(store, base + "/metric/knn_self/%d/i" % threads, i)
                d, i = metric.radius_neighbors(Xq, r, n_jobs=threads)
                _put(store, base + "/metric/radius/%d/d" % threads, d)
                _put(store, base + "/metric/radius/%d/i" % threads, i)
            for algo in ALGORITHMS:
                key = "%s/%s" % (base, algo)
                extra = {"n_lists": 16, "n_probe": 3} if algo == "ivf" else {}
                index = hdist.NeighborsIndex(metric, algorithm=algo, **extra)
                try:
                    index.fit()
                except ValueError as e:
                    store[key + "/refused"] = np.array(str(e))
                    continue
                store[key + "/algorithm_"] = np.array(index.algorithm_)
                for threads in (1, 2):
                    t = "/%d" % threads
                    d, i = index.kneighbors(Xq, K, n_jobs=threads)
                    _put(store, key + "/knn" + t + "/d", d)
                    _put(store, key + "/knn" + t + "/i", i)
                    _put(store, key + "/knn" + t + "/evals", index.n_distance_evaluations_)
                    store[key + "/knn" + t + "/path"] = np.array(index.search_["path"])
                    d, i = index.kneighbors(None, K, exclude_self=True, n_jobs=threads)
                    _put(store, key + "/knn_self" + t + "/d", d)
                    _put(store, key + "/knn_self" + t + "/i", i)
                    d, i = index.radius_neighbors(Xq, r, n_jobs=threads)
                    _put(store, key + "/radius" + t + "/d", d)
                    _put(store, key + "/radius" + t + "/i", i)
                    _put(store, key + "/radius" + t + "/evals",
                         index.n_distance_evaluations_)
                    d, i = index.radius_neighbors(None, r, exclude_self=True,
                                                  n_jobs=threads)
                    _put(store, key + "/radius_self" + t + "/d", d)
                    _put(store, key + "/radius_self" + t + "/i", i)
                if mname in ("heom", "hvdm", "gower"):
                    for ties in ("index", "include"):
                        for weights in ("uniform", "distance"):
                            kw = dict(metric=metric, algorithm=algo, ties=ties,
                                      weights=weights, n_neighbors=K,
                                      algorithm_params=extra or None)
                            clf = hdist.KNeighborsClassifier(**kw).fit(Xt, yt)
                            kk = "%s/clf/%s/%s" % (key, ties, weights)
                            _put(store, kk + "/proba", clf.predict_proba(Xq))
                            _put(store, kk + "/pred", np.asarray(clf.predict(Xq)).astype(str))
            if verbose:
                print("%-12s %-10s done" % (dname, mname), file=sys.stderr, flush=True)
    return store


def _bits(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        return a.astype(np.float64).view(np.uint64)
    return a


def _timed(key):
    """A key whose value depends on how long things took: ``"auto"``'s choice."""
    parts = key.split("/")
    return len(parts) > 2 and parts[2] == "auto" and (
        parts[-1] in ("path", "evals", "algorithm_"))


def compare(before, after):
    """Keys that differ (missing on one side, other shape or dtype, other bits); keys
    that depend on timing (:func:`_timed`) are left out."""
    bad = []
    for key in sorted(k for k in set(before) | set(after) if not _timed(k)):
        if key not in before or key not in after:
            bad.append((key, "only in %s" % ("before" if key in before else "after")))
            continue
        a, b = np.asarray(before[key]), np.asarray(after[key])
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            bad.append((key, "shape/dtype %s %s -> %s %s" % (a.shape, a.dtype, b.shape,
                                                             b.dtype)))
        elif not np.array_equal(_bits(a), _bits(b)):
            bad.append((key, "values differ"))
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", metavar="NPZ")
    g.add_argument("--compare", metavar="NPZ")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = record()
    print("%d arrays in %.1f s" % (len(store), time.perf_counter() - t0), file=sys.stderr)
    if args.save:
        np.savez_compressed(args.save, **store)
        return 0
    with np.load(args.compare, allow_pickle=False) as f:
        before = {k: f[k] for k in f.files}
    bad = compare(before, store)
    for key, why in bad:
        print("DIFF %s: %s" % (key, why))
    n = sum(1 for k in before if not _timed(k))
    print("%d of %d arrays identical (%d of \"auto\"'s timed choices not compared)"
          % (n - len(bad), n, len(before) - n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
