"""k-NN imputation of mixed data: hdist.KNNImputer against scikit-learn's KNNImputer and
IterativeImputer after one-hot encoding and scaling, and against mean / mode imputation.

For each dataset (real tables of the data folder, their class column kept aside, and a
generated one) a fraction of the observed cells (10 % and 30 %) is removed at random from
the attributes, for each of ``--seeds`` seeds, and each method fills them in:

- ``hdist``: ``hdist.KNNImputer(n_neighbors=k)`` with its defaults (HEOM with the
  "ignore" missing-value policy, uniform donor weights, per-column mutual-information
  attribute weights, shrinkage 4 towards the column's prior) on the frame as it is;
- ``hdist 0.1``: the rule of hdist 0.1 (``weights="uniform", attribute_weights=None,
  shrinkage=0``); ``hdist +distance``, ``hdist +mi``, ``hdist +shrink`` add one change to
  it (``1/d`` donor weights, the attribute weights, the shrinkage), ``hdist 4std`` is the
  defaults with the ``4std`` normalization instead of the range (``--ablation`` runs these;
  ``--methods "hdist shrinkage=2 weights=distance"`` any other setting);
- ``sklearn knn``: continuous columns standardized (mean and standard deviation of their
  observed values), each nominal column one-hot encoded with a missing value as NaN in its
  whole block, ``sklearn.impute.KNNImputer(n_neighbors=k)`` (``nan_euclidean``), then the
  continuous values scaled back and a nominal value recovered as the argmax over its block
  (ties: the first category in sorted order);
- ``sklearn iterative``: the same matrix through ``sklearn.impute.IterativeImputer``
  (BayesianRidge, ``max_iter=10``), decoded the same way;
- ``mean/mode``: each column's mean (continuous) or most frequent value (nominal).

Scores on the removed cells only: RMSE of the continuous ones in standardized units (each
column's error divided by the standard deviation of its observed values, pooled over the
columns) and the accuracy of the nominal ones, each the mean over the seeds; time of
``fit_transform`` (the whole job, mean over the seeds).  The machine's ``nproc`` and load
average are printed before and after.

Run: ``python benchmarks/bench_impute.py [--datasets ...] [--rows N] [--k 5] [--seeds 5]
[--ablation]``.
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

DATASETS = {"adult": "adult_train", "german": "german", "credit-a": "credit-a",
            "credit": "modeldata_credit_data", "pima": "PimaIndiansDiabetes2", "zoo": "Zoo",
            "glass": "Glass", "generated": None}


def generated(n=1000, seed=12345):
    """A mixed table with structure: three latent factors drive 6 continuous and 4 nominal
    columns (with noise); 2 continuous and 2 nominal columns are pure noise.  The class
    is the sign of the first factor."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    cols = {}
    for i in range(6):
        a = rng.normal(size=3)
        cols["x%d" % i] = z @ a + 0.5 * rng.normal(size=n)
    for i in range(2):
        cols["noise%d" % i] = rng.standard_t(3, size=n)
    for i in range(4):
        a = rng.normal(size=3)
        s = z @ a + 0.7 * rng.normal(size=n)
        cuts = np.quantile(s, [0.2, 0.5, 0.8])
        cols["c%d" % i] = np.array(list("abcd"), dtype=object)[np.searchsorted(cuts, s)]
    for i in range(2):
        cols["rand%d" % i] = rng.choice(np.array(list("pqr"), dtype=object), n,
                                        p=[0.5, 0.3, 0.2])
    df = pd.DataFrame(cols)
    df["class"] = np.where(z[:, 0] > 0, "pos", "neg")
    return df, {"class": "class"}


def load(name, rows, seed):
    df, schema = generated() if DATASETS[name] is None else read_table(DATASETS[name])
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
    return (np.sqrt(sq / n_c) if n_c else np.nan), (hit / n_n if n_n else np.nan)


def mean_mode(df, nominal):
    out = df.copy()
    for c in df.columns:
        if c in nominal:
            vc = df[c].dropna().value_counts()
            out[c] = df[c].fillna(sorted(vc.index[vc == vc.max()])[0])
        else:
            out[c] = df[c].fillna(df[c].mean())
    return out


def sklearn_onehot(df, nominal, k, imputer="knn", seed=0):
    from sklearn.experimental import enable_iterative_imputer  # noqa: F401
    from sklearn.impute import IterativeImputer, KNNImputer
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
    if imputer == "knn":
        F = KNNImputer(n_neighbors=k).fit_transform(Z)
    else:
        F = IterativeImputer(max_iter=10, random_state=seed).fit_transform(Z)
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


HDIST = {
    "hdist": {},
    "hdist 0.1": dict(weights="uniform", attribute_weights=None, shrinkage=0.0),
    "hdist +distance": dict(weights="distance", attribute_weights=None, shrinkage=0.0),
    "hdist +mi": dict(weights="uniform", attribute_weights="mi", shrinkage=0.0),
    "hdist +shrink": dict(weights="uniform", attribute_weights=None, shrinkage=4.0),
    "hdist 4std": dict(metric_params={"normalization": "4std"}),
}
METHODS = "hdist,hdist 0.1,sklearn knn,sklearn iterative,mean/mode"
ABLATION = "hdist 0.1,hdist +distance,hdist +mi,hdist +shrink,hdist,hdist 4std"


def parse_params(meth):
    """``"hdist shrinkage=2 weights=uniform"``: the named parameters (numbers, None or
    words), the others left at their defaults."""
    out = {}
    for item in meth.split()[1:]:
        key, val = item.split("=")
        for conv in (int, float):
            try:
                val = conv(val)
                break
            except ValueError:
                pass
        out[key] = None if val == "None" else val
    return out


def impute(meth, holed, y, nominal, k, seed):
    if meth == "mean/mode":
        return mean_mode(holed, nominal)
    if meth == "sklearn knn":
        return sklearn_onehot(holed, nominal, k)
    if meth == "sklearn iterative":
        return sklearn_onehot(holed, nominal, k, "iterative", seed)
    params = dict(n_neighbors=k)
    params.update(HDIST[meth] if meth in HDIST else parse_params(meth))
    imp = hdist.KNNImputer(**params)
    return imp.fit_transform(holed, y)


def run(name, rows, k, seeds, fracs, methods):
    df, y, nominal = load(name, rows, 0)
    print("\n## %s: %d rows, %d continuous + %d nominal attributes, k = %d, %d seeds"
          % (name, len(df), df.shape[1] - len(nominal), len(nominal), k, seeds))
    print("| removed | method | RMSE (std units), continuous | accuracy, nominal | time (s) |")
    print("|---|---|---|---|---|")
    for meth in methods:       # warm-up: imports and first calls are not timed
        impute(meth, remove(df.iloc[:60], 0.1, 0)[0], y[:60], nominal, k, 0)
    for frac in fracs:
        res = {meth: [] for meth in methods}
        for seed in range(seeds):
            holed, mask = remove(df, frac, seed)
            for meth in methods:
                t0 = time.perf_counter()
                filled = impute(meth, holed, y, nominal, k, seed)
                dt = time.perf_counter() - t0
                res[meth].append(score(df, filled, mask, nominal) + (dt,))
        for meth in methods:
            rmse, acc, dt = np.mean(np.array(res[meth], dtype=float), axis=0)
            print("| %d %% | %s | %s | %s | %.2f |" % (
                round(100 * frac), meth, "—" if np.isnan(rmse) else "%.3f" % rmse,
                "—" if np.isnan(acc) else "%.3f" % acc, dt), flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="adult,german,credit-a,credit,pima,zoo,generated")
    ap.add_argument("--rows", type=int, default=2000, help="subsample each dataset (0: all)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--fracs", default="0.1,0.3")
    ap.add_argument("--methods", default=None)
    ap.add_argument("--ablation", action="store_true",
                    help="the hdist variants that take the changes one at a time")
    a = ap.parse_args(argv)
    print("nproc %d, load average %s" % (len(os.sched_getaffinity(0)), " ".join(
        "%.2f" % v for v in os.getloadavg())))
    methods = a.methods or (ABLATION if a.ablation else METHODS)
    for name in a.datasets.split(","):
        run(name, a.rows, a.k, a.seeds, [float(f) for f in a.fracs.split(",")],
            methods.split(","))
    print("\nload average after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    main()
