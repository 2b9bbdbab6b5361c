"""
Choosing a metric by cross-validation
=====================================

Which distance suits a table is an empirical question (:doc:`/guide/choosing`). hdist's
estimators take the metric as a parameter, so scikit-learn's ``GridSearchCV`` chooses it —
together with ``k`` — inside a ``Pipeline``, on the raw DataFrame with its categories and
missing values: no encoder, no imputer in front.
"""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline

import hdist
from hdist.datasets import load_credit_a

X, y = load_credit_a()
pipe = Pipeline([("knn", hdist.KNeighborsClassifier())])
grid = GridSearchCV(pipe, {"knn__metric": ["heom", "hvdm", "gower", "ivdm", "hds"],
                           "knn__n_neighbors": [1, 5, 15]},
                    cv=StratifiedKFold(5, shuffle=True, random_state=0),
                    scoring="balanced_accuracy", n_jobs=1)
grid.fit(X, y)
print("best:", grid.best_params_, "balanced accuracy %.3f" % grid.best_score_)

# %%
# Every cell of the grid: mean balanced accuracy over the 5 folds.
res = pd.DataFrame(grid.cv_results_)
table = res.pivot(index="param_knn__metric", columns="param_knn__n_neighbors",
                  values="mean_test_score")
print(table.round(3))

fig, ax = plt.subplots(figsize=(6.5, 3.8))
width = 0.25
metrics = list(table.index)
for j, k in enumerate(table.columns):
    ax.bar(np.arange(len(metrics)) + (j - 1) * width, table[k], width, label="k = %d" % k)
ax.set_xticks(np.arange(len(metrics)), metrics)
ax.set_ylim(0.7, 0.9)
ax.set_ylabel("balanced accuracy (5-fold CV)")
ax.set_title("credit-a: k-NN by metric and k")
ax.legend(ncol=3, fontsize=8)
fig.tight_layout()
