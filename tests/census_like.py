"""The census-like table: rows shaped like census-income KDD, drawn from a seed.

40 feature columns -- 30 nominal (2 to 50 distinct text values each) and 10 continuous --
plus an ID column (``person_id``, text with leading zeros) and a class column
(``income``, two classes, depending on a few attributes), with 5 % of the feature cells
missing.  The tests draw small tables of it; benchmarks/make_census_like.py writes large
ones as CSV files, and the benchmarks import it from there.
"""
import numpy as np
import pandas as pd

N_NOMINAL, N_CONTINUOUS, MISSING = 30, 10, 0.05
#: distinct values of each nominal column: 2 to 50
LEVELS = [2 + (j * 7) % 49 for j in range(N_NOMINAL)]
#: the rows around profiles (``codes(..., profiles=P)``): the profiles' seed, the chance
#: a nominal cell follows its profile, and the continuous scatter around it (a fraction of
#: the column's own spread)
PROFILE_SEED, PROFILE_KEEP, PROFILE_SPREAD = 20_000, 0.8, 0.25


def codes(n, seed, missing=MISSING, profiles=0):
    """The table as numbers: ``(X, y)`` with ``X`` ``[n, 40]`` float64 -- the 30 nominal
    columns first, as value codes ``0 .. levels - 1`` (``LEVELS``), then the 10 continuous
    ones -- ``NaN`` for a missing cell (a fraction ``missing`` of each column), and ``y``
    the class (``True`` for "50000+").  :func:`make` writes the same draws as text.

    ``profiles`` (default 0: every column drawn on its own): rows are drawn around that
    many profiles instead, as census records resemble the others of their kind: a
    profile is one drawn record (fixed by ``PROFILE_SEED``, the same for every ``seed``),
    a row follows its profile's value in each nominal column with probability
    ``PROFILE_KEEP`` (else a value drawn as without profiles) and its continuous values
    scatter around the profile's by ``PROFILE_SPREAD`` of the column's spread; the
    profiles' shares fall off as ``1 / (rank + 1)``."""
    rng = np.random.default_rng(seed)
    if profiles:
        prng = np.random.default_rng(PROFILE_SEED)
        centre, _ = codes(profiles, PROFILE_SEED, 0.0)
        share = 1.0 / np.arange(1, profiles + 1)
        who = prng.permutation(profiles)[rng.choice(profiles, n, p=share / share.sum())]
    X = np.empty((n, N_NOMINAL + N_CONTINUOUS))
    score = np.zeros(n)
    for j in range(N_NOMINAL):
        c = np.minimum(rng.zipf(1.6, n) - 1, LEVELS[j] - 1)
        if profiles:
            c = np.where(rng.random(n) < PROFILE_KEEP, centre[who, j], c)
        X[:, j] = c
        if j < 5:
            score += c % 3 == 0
    for j in range(N_CONTINUOUS):
        x = rng.lognormal(3.0, 1.0, n) if j % 2 else rng.normal(40, 12, n)
        if profiles:
            at = centre[who, N_NOMINAL + j]
            x = (at * np.exp(PROFILE_SPREAD * (np.log(x) - 3.0)) if j % 2
                 else at + PROFILE_SPREAD * (x - 40.0))
        if j < 3:
            score += x > np.median(x)
        X[:, N_NOMINAL + j] = np.round(x, 2)
    for j in range(X.shape[1]):
        X[rng.random(n) < missing, j] = np.nan
    noise = rng.random(n) < 0.1
    return X, (score >= 4) ^ noise


def make(n, seed, start=0, missing=MISSING):
    """The draws of :func:`codes` as a frame: ``person_id`` (from ``start``), the nominal
    columns as text (None when missing), the continuous ones, and ``income``."""
    X, y = codes(n, seed, missing)
    cols = {"person_id": np.char.zfill((start + np.arange(n)).astype(str), 9)}
    for j in range(N_NOMINAL):
        labels = np.array(["v%d_%d" % (j, v) for v in range(LEVELS[j])] + [None],
                          dtype=object)
        cols["nom_%02d" % j] = labels[np.where(np.isnan(X[:, j]), LEVELS[j],
                                               X[:, j]).astype(np.intp)]
    for j in range(N_CONTINUOUS):
        cols["num_%02d" % j] = X[:, N_NOMINAL + j]
    frame = pd.DataFrame(cols)
    frame["income"] = np.where(y, "50000+", "-50000")
    return frame
