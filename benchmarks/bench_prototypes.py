"""Prototype rules on Adult: fit and predict times of hdist.PrototypeClassifier, and its test
balanced accuracy beside a 1-nearest-neighbor HVDM baseline.

Adult as bundled (``hdist.load_dataset("adult")``): 32 561 training rows, 16 281 test rows,
6 continuous and 8 nominal attributes with missing values, two classes.  The classifier is
``PrototypeClassifier("hvdm")`` with its defaults (fuzzy c-means start, batch LVQ1, the
constructive algorithm with at most 10 iterations), ``random_state=0``.  Times are the best of
``--repeat`` runs; fitting includes the metric's fit and every constructive iteration,
predicting includes encoding the test table.  The baseline is
``KNeighborsClassifier(n_neighbors=1, metric="hvdm")`` (exact 1-NN against all training rows).

On Adult no added prototype raises the training balanced accuracy, so the constructive
algorithm stops after trying one addition per class.  ``--worst-case`` also times the most
work ``max_iter=10`` allows: a fit in which every addition is kept (the acceptance test is
replaced by "always better" in this script only), i.e. 10 additions and 11 optimizations.

``--prune`` measures the pruning thresholds instead (``min_support``, ``min_accuracy``):
for each pair of a grid, the 5-fold stratified cross-validated balanced accuracy (mean
over the folds) and the mean number of prototypes kept, of
``PrototypeClassifier("hvdm", random_state=0)`` on credit-a, German, Pima, Glass, wine,
iris and Zoo of the data folder (``HDIST_DATA``; missing values as they are), the same
folds for every pair.  The defaults are the pair that keeps fewest rules while losing no
more than 0.005 of balanced accuracy on average against no pruning (0, 0).

Run: ``python benchmarks/bench_prototypes.py [--repeat 3] [--n-jobs N] [--worst-case]
[--prune]``.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import hdist
from hdist.metrics import balanced_accuracy


def timed(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


PRUNE_GRID = [(0.0, 0.0), (0.005, 0.0), (0.01, 0.0), (0.02, 0.0), (0.05, 0.0), (0.01, 0.2),
              (0.01, 0.3), (0.01, 0.4), (0.01, 0.5), (0.02, 0.5), (0.01, 0.6)]
PRUNE_SETS = ["credit-a", "german", "PimaIndiansDiabetes2", "Glass", "wine", "iris", "Zoo"]


def prune(n_jobs):
    """Cross-validated balanced accuracy and prototypes kept for each pair of thresholds
    (module docstring)."""
    import sys
    from sklearn.model_selection import StratifiedKFold
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                    "examples"))
    from adult_workclass_hds import read_table
    print("pruning thresholds, 5-fold CV balanced accuracy / prototypes kept; nproc %d, "
          "load average %.2f %.2f %.2f" % ((os.cpu_count(),) + os.getloadavg()))
    print("%-22s" % "data" + "".join("%14s" % ("%g/%g" % g) for g in PRUNE_GRID))
    acc_all, n_all = [], []
    for name in PRUNE_SETS:
        T, schema = read_table(name)
        y = T[schema["class"]].astype(str).to_numpy()
        X = T.drop(columns=schema["class"])
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        accs, ns = [], []
        for sup, acc in PRUNE_GRID:
            a, n = [], []
            for tr, te in folds:
                clf = hdist.PrototypeClassifier("hvdm", random_state=0, min_support=sup,
                                                min_accuracy=acc, n_jobs=n_jobs)
                clf.fit(X.iloc[tr], y[tr])
                a.append(balanced_accuracy(y[te], clf.predict(X.iloc[te])))
                n.append(len(clf.prototypes_))
            accs.append(np.mean(a))
            ns.append(np.mean(n))
        acc_all.append(accs)
        n_all.append(ns)
        print("%-22s" % name + "".join("%8.3f/%5.1f" % (a, n) for a, n in zip(accs, ns)))
    acc_all, n_all = np.array(acc_all), np.array(n_all)
    print("%-22s" % "mean" + "".join("%8.3f/%5.1f" % (a, n) for a, n in
                                     zip(acc_all.mean(axis=0), n_all.mean(axis=0))))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--metric", default="hvdm")
    ap.add_argument("--worst-case", action="store_true")
    ap.add_argument("--prune", action="store_true",
                    help="only the measurement of the pruning thresholds")
    args = ap.parse_args()
    if args.prune:
        prune(args.n_jobs)
        return
    X, y = hdist.load_dataset("adult", split="train")
    Xt, yt = hdist.load_dataset("adult", split="test")
    yt = np.asarray(yt)
    print("Adult: %d training rows, %d test rows, %d attributes; nproc %d, load average "
          "%.2f %.2f %.2f" % ((len(X), len(Xt), X.shape[1], os.cpu_count())
                               + os.getloadavg()))

    def fit():
        return hdist.PrototypeClassifier(args.metric, random_state=0,
                                         n_jobs=args.n_jobs).fit(X, y)
    t_fit, clf = timed(fit, args.repeat)
    t_pred, pred = timed(lambda: clf.predict(Xt), args.repeat)
    print("PrototypeClassifier(%r): fit %.2f s, predict %.3f s, %d prototypes %s, "
          "%d constructive iterations" % (args.metric, t_fit, t_pred,
                                           clf.n_prototypes_per_class_.sum(),
                                           clf.n_prototypes_per_class_.tolist(),
                                           len(clf.history_) - 1))
    print("  training balanced accuracy by iteration: %s"
          % " ".join("%.4f" % h for h in clf.history_))
    print("  test balanced accuracy %.4f" % balanced_accuracy(yt, pred))

    if args.worst_case:
        import itertools
        import hdist.prototypes as hp
        real, counter = hp.balanced_accuracy, itertools.count()
        hp.balanced_accuracy = lambda a, b: next(counter) * 1e-3   # every addition kept
        try:
            t_worst, worst = timed(fit, 1)
        finally:
            hp.balanced_accuracy = real
        print("  worst case (every addition kept): fit %.2f s, %d prototypes %s"
              % (t_worst, worst.n_prototypes_per_class_.sum(),
                 worst.n_prototypes_per_class_.tolist()))

    knn = hdist.KNeighborsClassifier(1, metric=args.metric, n_jobs=args.n_jobs)
    t_kfit, _ = timed(lambda: knn.fit(X, y), 1)
    t_kpred, kpred = timed(lambda: knn.predict(Xt), 1)
    print("1-NN %s: fit %.2f s, predict %.2f s, test balanced accuracy %.4f"
          % (args.metric, t_kfit, t_kpred, balanced_accuracy(yt, kpred)))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
