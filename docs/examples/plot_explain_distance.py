"""
Explain one distance attribute by attribute
===========================================

A distance between two mixed records is a sum of per-attribute terms. ``Metric.explain``
returns them, and :func:`hdist.plot.explain` draws them, so that a user can see *why* two
applicants of the credit-approval data (``credit-a``: 6 continuous and 9 nominal
attributes, with missing values) are near or far under HVDM.
"""
import matplotlib.pyplot as plt

import hdist
import hdist.plot
from hdist.datasets import load_credit_a

X, y = load_credit_a()
metric = hdist.Metric("hvdm").fit(X, y)

# %%
# The nearest training row of the first applicant (other than itself), and the
# per-attribute terms of their distance.
dist, ind = metric.kneighbors(X.iloc[:1], 2)
a, b = X.iloc[0], X.iloc[int(ind[0, 1])]
explanation = metric.explain(a, b)
print("distance %.4f" % dist[0, 1])
print(explanation)

# %%
# The terms as bars: the longest ones say which attributes set the distance.
fig, ax = plt.subplots(figsize=(7, 4.5))
hdist.plot.explain(metric, a, b, ax=ax)
ax.set_title("HVDM terms between applicant 0 and its nearest neighbour")
fig.tight_layout()

# %%
# A nominal attribute's learned value-by-value distances (VDM: how differently the
# values are distributed over the classes).
fig, ax = plt.subplots(figsize=(5.5, 4.5))
hdist.plot.value_distances(metric, "A4", ax=ax)
fig.tight_layout()
