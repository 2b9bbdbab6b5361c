"""
Imputation against scikit-learn's
=================================

Cells are removed at random from German credit (7 continuous and 13 nominal attributes),
then filled back by

- hdist's :class:`~hdist.impute.KNNImputer` with its defaults (HEOM under the "ignore"
  rule, donors chosen on attributes weighted by their mutual information with the missing
  one, shrinkage towards the column's mean or value frequencies),
- scikit-learn's ``KNNImputer`` on standardized numbers and one-hot encoded categories
  (a missing category is NaN over its whole block; the value recovered by argmax),
- each column's mean or mode.

Scores: RMSE of the filled continuous cells in units of each column's standard deviation
(lower is better) and accuracy of the filled nominal cells (higher is better). The full
comparison (seven tables, two rates, five seeds, scikit-learn's ``IterativeImputer``) is
in :doc:`/guide/imputation`.
"""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.impute import KNNImputer as SkKNNImputer

import hdist
from hdist.datasets import load_german

X, _ = load_german()
cont = [c for c in X.columns if X[c].dtype.kind == "f" or X[c].dtype.kind == "i"]
nom = [c for c in X.columns if c not in cont]
rng = np.random.default_rng(0)
mask = rng.random(X.shape) < 0.10                       # 10 % of the cells removed
X_missing = X.mask(mask)
print(X.shape, "continuous:", len(cont), "nominal:", len(nom), "cells removed:", mask.sum())


def score(filled):
    rmse, acc = [], []
    for j, c in enumerate(X.columns):
        m = mask[:, j]
        if c in cont:
            err = (filled[c][m].astype(float) - X[c][m].astype(float)) / X[c].std()
            rmse.append(np.sqrt(np.mean(err ** 2)))
        else:
            acc.append(np.mean(filled[c][m].astype(str).values == X[c][m].astype(str).values))
    return np.mean(rmse), np.mean(acc)


# %%
# hdist, as it is: the DataFrame goes in with its categories and comes back filled. The
# columns of a few whole numbers (number of dependents, ...) are declared continuous,
# which also silences the warning hdist gives for such code-like columns.
hd = hdist.KNNImputer(n_neighbors=5, metric_params={"continuous": cont}).fit_transform(X_missing)

# %%
# scikit-learn: numbers standardized, categories one-hot encoded by hand.
mean, std = X_missing[cont].mean(), X_missing[cont].std()
blocks = [(X_missing[cont] - mean) / std]
for c in nom:
    onehot = pd.get_dummies(X_missing[c], prefix=c, dtype=float)
    onehot[X_missing[c].isna()] = np.nan
    blocks.append(onehot)
Z = pd.concat(blocks, axis=1)
Zf = pd.DataFrame(SkKNNImputer(n_neighbors=5).fit_transform(Z), columns=Z.columns)
sk = pd.DataFrame(index=X.index)
for c in cont:
    sk[c] = Zf[c].values * std[c] + mean[c]
for c in nom:
    cols = [z for z in Z.columns if z.startswith(c + "_")]
    sk[c] = [cols[i][len(c) + 1:] for i in Zf[cols].values.argmax(axis=1)]

# %%
# Each column's mean and mode.
base = X_missing.copy()
for c in cont:
    base[c] = base[c].fillna(base[c].mean())
for c in nom:
    base[c] = base[c].fillna(base[c].mode()[0])

results = {"hdist KNNImputer": score(hd), "scikit-learn KNNImputer": score(sk),
           "mean / mode": score(base)}
for name, (rmse, acc) in results.items():
    print("%-24s continuous RMSE %.3f   nominal accuracy %.3f" % (name, rmse, acc))

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(8, 3.6))
names = list(results)
colors = ["C0", "C1", "0.6"]
bars = ax1.barh(names, [results[n][0] for n in names], color=colors)
ax1.bar_label(bars, fmt="%.3f", padding=2)
ax1.set_xlim(0, 1.25)
ax1.set_xlabel("continuous RMSE (sd units, lower is better)")
ax1.invert_yaxis()
bars = ax2.barh(names, [results[n][1] for n in names], color=colors)
ax2.bar_label(bars, fmt="%.3f", padding=2)
ax2.set_xlim(0, 0.85)
ax2.set_xlabel("nominal accuracy (higher is better)")
ax2.invert_yaxis()
ax2.set_yticklabels([])
fig.suptitle("German credit, 10 % of the cells removed")
fig.tight_layout()
