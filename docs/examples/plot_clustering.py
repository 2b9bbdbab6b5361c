"""
Clustering mixed data
=====================

k-medoids (FasterPAM swaps) under Gower and HEOM, and k-prototypes, cluster the
credit-approval applicants (``credit-a``: 6 continuous and 9 nominal attributes, missing
values) without one-hot encoding. The class (approved or not) is kept aside and used only
to see how well each clustering recovers it; the picture shows the clusters in the exact
Euclidean embedding of HEOM (:class:`~hdist.embedding.Embedding`), projected on its first
two principal axes.
"""
import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import PCA
from sklearn.metrics import adjusted_rand_score

import hdist
from hdist.cluster import KMedoids, KPrototypes
from hdist.datasets import load_credit_a

X, y = load_credit_a()

# %%
# The loss against the number of clusters, and the agreement with the class (adjusted
# Rand index: 0 for chance, 1 for the classes themselves).
ks = [2, 3, 4, 5, 6]
rows = {}
for name, make in [("k-medoids, Gower", lambda k: KMedoids(k, metric="gower", random_state=0)),
                   ("k-medoids, HEOM", lambda k: KMedoids(k, metric="heom", random_state=0)),
                   ("k-prototypes", lambda k: KPrototypes(k, random_state=0))]:
    rows[name] = []
    for k in ks:
        model = make(k).fit(X)
        rows[name].append((model.inertia_, adjusted_rand_score(y, model.labels_)))
    print("%-17s ARI by k %s" % (name, " ".join("%.3f" % r[1] for r in rows[name])))

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
for name, r in rows.items():
    loss = np.array([v[0] for v in r])
    ax1.plot(ks, loss / loss[0], "o-", label=name)
    ax2.plot(ks, [v[1] for v in r], "o-", label=name)
ax1.set_xlabel("clusters")
ax1.set_ylabel("loss / loss at k = 2")
ax2.set_xlabel("clusters")
ax2.set_ylabel("adjusted Rand index with the class")
ax2.legend(fontsize=8)
fig.tight_layout()

# %%
# Two medoids under HEOM, drawn in HEOM's exact embedding (its squared Euclidean
# distances are HEOM's reduced distances; missing values are left out of the picture).
model = KMedoids(2, metric="heom", random_state=0).fit(X)
Z = hdist.Embedding("heom").fit(X).transform(X)
keep = ~np.isnan(Z).any(axis=1)
P = PCA(2).fit_transform(Z[keep])
fig, ax = plt.subplots(figsize=(6, 4.5))
for c, marker in zip(np.unique(y), "ox"):
    m = (np.asarray(y)[keep] == c)
    ax.scatter(P[m, 0], P[m, 1], c=model.labels_[keep][m], cmap="coolwarm", marker=marker,
               s=18, alpha=0.7, label="class %s" % c)
ax.set_title("2 medoids under HEOM (colour) and the class (marker)")
ax.set_xlabel("first principal axis")
ax.set_ylabel("second principal axis")
legend = ax.legend()
for handle in getattr(legend, "legend_handles", None) or legend.legendHandles:
    handle.set_color("0.3")                    # the marker is the class, not the colour
fig.tight_layout()
