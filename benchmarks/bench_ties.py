"""Accuracy of the two tie rules of the k-NN classifier: ``ties="index"`` (exactly k
neighbors, the smaller training positions win a tie) against ``ties="include"`` (every row
tied with the k-th votes, as Weka's IBk and R's class::knn do).

Stratified 10-fold cross-validation (seed 0), HEOM and HVDM, k = 1, 3, 5, on the bundled
datasets and the shared ones (Zoo, Glass, Pima, weather).  Prints a Markdown table of mean
accuracy (%) and the mean difference include - index.

``--speed``: the time of ``predict`` under each rule instead, on the census-like table of
``make_census_like.py`` (``--census``, default 30 000 training x 10 000 query rows, HVDM,
k = 5, best of ``--repeat``), with the share of queries tied at the k-th, whether the two
rules predict the same, and the ratio include / index (the rows tied with the k-th come
from the same search).  Census-income repeats many records, so the training rows are drawn
with replacement from ``--distinct`` generated rows (default 27 000: about 40 % of the
queries tie at the 5th neighbour; 0: every row distinct, almost no ties).

    python benchmarks/bench_ties.py [--data DIR]
    python benchmarks/bench_ties.py --speed [--census 30000x10000] [--distinct 27000]
"""
import argparse
import os
import platform
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


def speed(census, distinct, repeat, metric="hvdm", k=5):
    """Seconds of ``predict`` with ties="index" and ties="include" (best of ``repeat``)."""
    sys.path.insert(0, HERE)
    import hdist
    from make_census_like import make
    from hdist.neighbors import KNeighborsClassifier
    n_train, n_query = map(int, census.lower().split("x"))
    train = make(distinct or n_train, 0).drop(columns="person_id")
    if distinct:
        rows = np.random.default_rng(0).integers(0, distinct, n_train)
        train = train.iloc[rows].reset_index(drop=True)
    query = make(n_query, 1, n_train).drop(columns="person_id")
    y = train.pop("income").to_numpy()
    query = query.drop(columns="income")
    print("hdist %s, Python %s, %s, nproc %d, load average %.2f %.2f %.2f at the start"
          % ((hdist.__version__, platform.python_version(), platform.machine(),
              os.cpu_count()) + os.getloadavg()))
    print("census-like (make_census_like.py): %d training rows (drawn from %d distinct) x "
          "%d query rows, %s, k = %d, best of %d"
          % (n_train, distinct or n_train, n_query, metric, k, repeat))
    seconds, preds, fitted = {}, {}, {}
    for ties in ("index", "include"):
        est = fitted[ties] = KNeighborsClassifier(k, metric=metric, ties=ties).fit(train, y)
        est.predict(query.iloc[:50])                # warm: the index and the query encoder
        seconds[ties] = np.inf
    for _ in range(repeat):                         # the rules in turn: the same load
        for ties in ("index", "include"):
            t0 = time.perf_counter()
            preds[ties] = fitted[ties].predict(query)
            seconds[ties] = min(seconds[ties], time.perf_counter() - t0)
    # the rule ties="include" stands for: lists widened by doubling until none is cut
    # inside a tie with the k-th, every row up to the k-th distance voting
    from hdist._search import votes as _knn
    width = k
    while True:
        d, i = est.kneighbors(query, width)
        if width >= n_train or not (d[:, -1] == d[:, k - 1]).any():
            break
        width = min(n_train, 2 * width)
    codes = np.searchsorted(est.classes_, y)
    want = est.classes_[_knn.vote_winner(_knn.class_votes(
        codes[i], _knn.tie_weights(d, k, "uniform", "include"), len(est.classes_)))]
    tied = np.mean(d[:, k] == d[:, k - 1]) if width > k else 0.0
    print("| ties | predict (s) |\n|---|---|")
    for ties in ("index", "include"):
        print("| %s | %.2f |" % (ties, seconds[ties]))
    print("include / index: %.2fx; queries whose k-th is tied: %.1f %% (lists up to %d "
          "wide); include's predictions differ from the lists widened by doubling on %d "
          "of %d rows (index's from include's on %d)"
          % (seconds["include"] / seconds["index"], 100 * tied, width,
             int((preds["include"] != want).sum()), n_query,
             int((preds["index"] != preds["include"]).sum())))
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=None)
    ap.add_argument("--speed", action="store_true", help="time predict under each rule")
    ap.add_argument("--census", default="30000x10000", help="training x query rows")
    ap.add_argument("--distinct", type=int, default=27000,
                    help="training rows drawn from this many distinct rows (0: all distinct)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.speed:
        return speed(args.census, args.distinct, args.repeat)
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
