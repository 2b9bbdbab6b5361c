"""Write a census-like batch job: a training and a query CSV shaped like census-income KDD.

40 feature columns -- 30 nominal (2 to 50 distinct text values each) and 10 continuous --
plus an ID column (``person_id``, text with leading zeros) and a class column
(``income``, two classes, depending on a few attributes), with 5 % of the feature cells
missing (empty fields).  Default size: 200 000 training x 100 000 query rows.

    python benchmarks/make_census_like.py OUTDIR [--train 200000] [--query 100000]

then, for example:

    hdist knn --train OUTDIR/train.csv --query OUTDIR/query.csv --target income \\
              --id person_id --predict --k 5 --metric hvdm -o OUTDIR/pred.parquet
"""
import argparse
import os

import numpy as np
import pandas as pd

N_NOMINAL, N_CONTINUOUS, MISSING = 30, 10, 0.05


def make(n, seed, start=0):
    rng = np.random.default_rng(seed)
    cols = {"person_id": np.char.zfill((start + np.arange(n)).astype(str), 9)}
    score = np.zeros(n)
    for j in range(N_NOMINAL):
        levels = 2 + (j * 7) % 49                   # 2..50 values
        codes = np.minimum(rng.zipf(1.6, n) - 1, levels - 1)
        if j < 5:
            score += codes % 3 == 0
        cols["nom_%02d" % j] = np.array(["v%d_%d" % (j, v) for v in range(levels)],
                                        dtype=object)[codes]
    for j in range(N_CONTINUOUS):
        x = rng.lognormal(3.0, 1.0, n) if j % 2 else rng.normal(40, 12, n)
        if j < 3:
            score += x > np.median(x)
        cols["num_%02d" % j] = np.round(x, 2)
    frame = pd.DataFrame(cols)
    for name in list(frame.columns[1:]):
        frame.loc[rng.random(n) < MISSING, name] = None
    noise = rng.random(n) < 0.1
    frame["income"] = np.where((score >= 4) ^ noise, "50000+", "-50000")
    return frame


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--train", type=int, default=200_000)
    p.add_argument("--query", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    os.makedirs(args.outdir, exist_ok=True)
    make(args.train, args.seed).to_csv(os.path.join(args.outdir, "train.csv"), index=False)
    make(args.query, args.seed + 1, args.train).to_csv(
        os.path.join(args.outdir, "query.csv"), index=False)


if __name__ == "__main__":
    main()
