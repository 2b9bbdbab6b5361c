"""Accuracy of the two tie rules of the k-NN classifier: ``ties="index"`` (exactly k
neighbors, the smaller training positions win a tie) against ``ties="include"`` (every row
tied with the k-th votes, as Weka's IBk and R's class::knn do).

Stratified 10-fold cross-validation (seed 0), HEOM and HVDM, k = 1, 3, 5, on the bundled
datasets and the shared ones (Zoo, Glass, Pima, weather).  Prints a Markdown table of mean
accuracy (%) and the mean difference include - index.

    python benchmarks/bench_ties.py [--data DIR]
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def datasets(data_dir):
    import hdist.datasets as D
    out = []
    for name in ["iris", "wine", "credit_a", "german", "credit_data"]:
        X, y = D.load_dataset(name, as_frame=True)
        out.append((name, X, np.asarray(y.astype(str))))
    if data_dir:
        os.environ.setdefault("HDIST_DATA", data_dir)
    try:
        from strategies import load_dataset
    except Exception:       # no shared data folder
        return out
    for name in ["Zoo", "Glass", "PimaIndiansDiabetes2", "weather.nominal"]:
        ds = load_dataset(name, codes_as_numbers=False)
        out.append((name, ds.frame(), np.array(ds.y, dtype=object).astype(str)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    args = ap.parse_args()
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from hdist.neighbors import KNeighborsClassifier
    rows = []
    t0 = time.perf_counter()
    for name, X, y in datasets(args.data):
        folds = min(10, int(np.unique(y, return_counts=True)[1].min())) or 2
        cv = StratifiedKFold(max(2, folds), shuffle=True, random_state=0)
        for metric in ("heom", "hvdm"):
            for k in (1, 3, 5):
                acc = {}
                for ties in ("index", "include"):
                    est = KNeighborsClassifier(k, metric=metric, ties=ties)
                    acc[ties] = 100 * cross_val_score(est, X, y, cv=cv).mean()
                rows.append((name, metric, k, acc["index"], acc["include"]))
    print("| dataset | metric | k | ties=\"index\" | ties=\"include\" | include − index |")
    print("|---|---|---|---|---|---|")
    for name, metric, k, a, b in rows:
        print("| %s | %s | %d | %.2f | %.2f | %+.2f |" % (name, metric, k, a, b, b - a))
    d = np.array([b - a for *_, a, b in rows])
    print("\nmean difference include − index: %+.2f points over %d cells (%d better, %d worse,"
          " %d equal); %.0f s" % (d.mean(), len(d), (d > 0).sum(), (d < 0).sum(),
                                  (d == 0).sum(), time.perf_counter() - t0))


if __name__ == "__main__":
    main()
