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
import sys

# the generator lives beside the tests, which draw small tables of it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from census_like import (LEVELS, MISSING, N_CONTINUOUS, N_NOMINAL, codes,  # noqa: E402,F401
                         make)


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
