"""
Batch scoring with progress
===========================

A training file and a file of rows to score: the ``hdist knn`` command reads the query
file in chunks, keeps its ID column, and writes predictions with a progress line and a
summary. From Python, every search and estimator takes ``progress=``: ``True`` for a bar,
or a callable that receives ``(rows done, total)`` — here used to draw the job's progress
over time.
"""
import contextlib
import os
import sys
import tempfile
import time

import matplotlib.pyplot as plt
import pandas as pd

import hdist
from hdist.cli import main
from hdist.datasets import load_adult

X, y = load_adult("train")
Q, y_q = load_adult("test")
folder = tempfile.mkdtemp()
train = X.assign(income=y)
query = Q.assign(person_id=range(len(Q)), income=y_q)
train.to_csv(os.path.join(folder, "train.csv"), index=False)
query.to_csv(os.path.join(folder, "query.csv"), index=False)

# %%
# The command line, as it would run in a shell (``hdist knn ...``): predictions and their
# probabilities, the ID column kept, a progress line forced into the log (the command
# writes it and its summary to stderr, shown here).
with contextlib.redirect_stderr(sys.stdout):
    status = main(["knn", "--train", os.path.join(folder, "train.csv"),
                   "--query", os.path.join(folder, "query.csv"), "--target", "income",
                   "--id", "person_id", "--predict", "--proba", "--k", "5", "--metric", "hvdm",
                   "--progress", "-o", os.path.join(folder, "predictions.csv")])
print("exit status", status)
print(pd.read_csv(os.path.join(folder, "predictions.csv")).head())

# %%
# The same job from Python, with a callable watching the progress.
clf = hdist.KNeighborsClassifier(5, metric="hvdm").fit(X, y)
t0 = time.perf_counter()
seen = []
labels = clf.predict(Q, progress=lambda done, total: seen.append((time.perf_counter() - t0,
                                                                  done, total)))
print("accuracy %.4f; %d progress calls, the last %s" % ((labels == y_q).mean(), len(seen),
                                                          seen[-1][1:]))

fig, ax = plt.subplots(figsize=(6, 3.6))
ax.step([s[0] for s in seen], [s[1] for s in seen], where="post")
ax.set_xlabel("seconds")
ax.set_ylabel("query rows scored")
ax.set_title("KNeighborsClassifier.predict(progress=...) on Adult's test rows")
fig.tight_layout()
