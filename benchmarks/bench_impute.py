"""k-NN imputation of mixed data: hdist.KNNImputer against scikit-learn's KNNImputer after
one-hot encoding and scaling, and against mean / mode imputation.

For each dataset (Adult train, 6 numeric + 8 nominal attributes; German credit, 7 + 13) a
fraction of the observed cells (10 % and 30 %, ``--seed``) is removed at random from the
attributes (the class column is kept aside), and each method fills them in:

- ``hdist <metric>``: ``hdist.KNNImputer(metric=..., n_neighbors=k)`` on the frame as it is
  (the "ignore" missing-value policy; ``hvdm`` learns its value tables from the class);
- ``sklearn onehot``: continuous columns standardized (mean and standard deviation of their
  observed values), each nominal column one-hot encoded with a missing value as NaN in its
  whole block, ``sklearn.impute.KNNImputer(n_neighbors=k)`` (``nan_euclidean``), then the
  continuous values scaled back and a nominal value recovered as the argmax over its block
  (ties: the first category in sorted order);
- ``mean/mode``: each column's mean (continuous) or most frequent value (nominal).

Scores on the removed cells only: RMSE of the continuous ones in standardized units (each
column's error divided by the standard deviation of its observed values, pooled over the
columns) and the accuracy of the nominal ones; time of ``fit_transform`` (the whole job).
The machine's ``nproc`` and load average are printed before and after.

Run: ``python benchmarks/bench_impute.py [--rows N] [--k 5] [--seed 0]``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

import hdist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "examples"))
from adult_workclass_hds import read_table  # noqa: E402

DATASETS = {"adult": "adult_train", "german": "german"}


def load(name, rows, seed):
    df, schema = read_table(DATASETS[name])
    cls = schema["class"]
    y = df.pop(cls).to_numpy()
    if rows and rows < len(df):
        keep = np.sort(np.random.default_rng(seed).choice(len(df), rows, replace=False))
        df, y = df.iloc[keep].reset_index(drop=True), y[keep]
    nominal = [c for c in df.columns if df[c].dtype.kind not in "fiu"]
    df = df.astype({c: object for c in nominal})
    return df, y, nominal


def remove(df, frac, seed):
    """A copy of ``df`` with ``frac`` of its observed cells set missing, and the mask."""
    rng = np.random.default_rng(seed)
    mask = (rng.random(df.shape) < frac) & df.notna().to_numpy()
    out = df.copy()
    for j, c in enumerate(df.columns):
        out.loc[mask[:, j], c] = np.nan if df[c].dtype.kind == "f" else None
    return out, mask


def score(true, filled, mask, nominal):
    """(standardized RMSE of continuous cells, accuracy of nominal cells)."""
    sq, n_c, hit, n_n = 0.0, 0, 0, 0
    for j, c in enumerate(true.columns):
        m = mask[:, j]
        if not m.any():
            continue
        t = true[c].to_numpy()[m]
        f = filled[c].to_numpy()[m]
        if c in nominal:
            hit += int(sum(a == b for a, b in zip(t, f)))
            n_n += int(m.sum())
        else:
            sd = np.nanstd(true[c].to_numpy(dtype=float)[~m])
            sq += float(np.sum(((f.astype(float) - t.astype(float)) / sd) ** 2))
            n_c += int(m.sum())
    return np.sqrt(sq / n_c), hit / n_n


def mean_mode(df, nominal):
    out = df.copy()
    for c in df.columns:
        if c in nominal:
            vc = df[c].dropna().value_counts()
            out[c] = df[c].fillna(sorted(vc.index[vc == vc.max()])[0])
        else:
            out[c] = df[c].fillna(df[c].mean())
    return out


def sklearn_onehot(df, nominal, k):
    from sklearn.impute import KNNImputer
    blocks, cols, info = [], [], []
    for c in df.columns:
        if c in nominal:
            cats = sorted(df[c].dropna().unique())
            v = df[c].to_numpy()
            miss = pd.isna(df[c]).to_numpy()
            B = (v[:, None] == np.array(cats, dtype=object)[None, :]).astype(float)
            B[miss] = np.nan
            blocks.append(B)
            info.append((c, "nom", cats))
        else:
            x = df[c].to_numpy(dtype=float)
            mu, sd = np.nanmean(x), np.nanstd(x)
            sd = sd if sd > 0 else 1.0
            blocks.append(((x - mu) / sd)[:, None])
            info.append((c, "num", (mu, sd)))
    Z = np.hstack(blocks)
    F = KNNImputer(n_neighbors=k).fit_transform(Z)
    out = df.copy()
    pos = 0
    for (c, kind, meta), B in zip(info, blocks):
        w = B.shape[1]
        if kind == "num":
            mu, sd = meta
            out[c] = F[:, pos] * sd + mu
        else:
            out[c] = np.array(meta, dtype=object)[np.argmax(F[:, pos:pos + w], axis=1)]
        pos += w
    return out


def impute(meth, holed, y, nominal, k):
    if meth == "mean/mode":
        return mean_mode(holed, nominal)
    if meth == "sklearn onehot":
        return sklearn_onehot(holed, nominal, k)
    imp = hdist.KNNImputer(n_neighbors=k, metric=meth.split()[1])
    return imp.fit_transform(holed, y)


def run(name, rows, k, seed, fracs, methods):
    df, y, nominal = load(name, rows, seed)
    print("\n## %s: %d rows, %d continuous + %d nominal attributes, k = %d"
          % (name, len(df), df.shape[1] - len(nominal), len(nominal), k))
    print("| removed | method | RMSE (std units), continuous | accuracy, nominal | time (s) |")
    print("|---|---|---|---|---|")
    for frac in fracs:
        holed, mask = remove(df, frac, seed)
        for meth in methods:       # warm-up: imports and first calls are not timed
            impute(meth, holed.iloc[:50], y[:50], nominal, k)
        for meth in methods:
            t0 = time.perf_counter()
            filled = impute(meth, holed, y, nominal, k)
            dt = time.perf_counter() - t0
            rmse, acc = score(df, filled, mask, nominal)
            print("| %d %% | %s | %.3f | %.3f | %.2f |" % (round(100 * frac), meth, rmse, acc,
                                                           dt), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="adult,german")
    ap.add_argument("--rows", type=int, default=0, help="subsample each dataset (0: all)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fracs", default="0.1,0.3")
    ap.add_argument("--methods", default="hdist heom,hdist hvdm,hdist gower,sklearn onehot,"
                                         "mean/mode")
    a = ap.parse_args(argv)
    print("nproc %d, load average %s" % (len(os.sched_getaffinity(0)), " ".join(
        "%.2f" % v for v in os.getloadavg())))
    for name in a.datasets.split(","):
        run(name, a.rows, a.k, a.seed, [float(f) for f in a.fracs.split(",")],
            a.methods.split(","))
    print("\nload average after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    main()
