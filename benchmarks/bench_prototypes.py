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

Run: ``python benchmarks/bench_prototypes.py [--repeat 3] [--n-jobs N] [--worst-case]``.
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=None)
    ap.add_argument("--metric", default="hvdm")
    ap.add_argument("--worst-case", action="store_true")
    args = ap.parse_args()
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
