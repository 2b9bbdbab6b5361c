"""
Recall against speed of the inverted-list index
===============================================

``NeighborsIndex(algorithm="ivf")`` scans only the lists of each query's ``n_probe``
nearest centres: every distance it returns is exact, but a true neighbour in a list it
did not probe is missed. Here, on Adult (census records: 32 561 training rows, 6
continuous and 8 nominal attributes, missing values), each ``n_probe`` is timed and its
``recall@10`` measured against exact brute force on the same queries.

The larger measurements (10⁶ and 10⁷ census-like rows) are in
:doc:`/performance/ann`; this small run takes a few seconds.
"""
import time

import matplotlib.pyplot as plt
import numpy as np

import hdist
from hdist.datasets import load_adult

X, y = load_adult("train")
Q = load_adult("test")[0].iloc[:1000]
k = 10

exact = hdist.NeighborsIndex("heom", algorithm="brute").fit(X)
seconds = []
for _ in range(3):
    t0 = time.perf_counter()
    kth = exact.kneighbors(Q, k)[0][:, -1]      # the exact 10th distance of each query
    seconds.append(time.perf_counter() - t0)
brute_qps = len(Q) / min(seconds)

ivf = hdist.NeighborsIndex("heom", algorithm="ivf", random_state=0).fit(X)
print("lists:", ivf.n_lists_, " calibrated n_probe:", ivf.n_probe_)

# %%
# Each ``n_probe``: queries per second and the fraction of the true 10 nearest rows
# found, as ``index.recall`` measures it.
rows = []
for n_probe in [1, 2, 4, 8, 16, 32, 64, 128]:
    seconds = []
    for _ in range(3):                          # best of 3: the machine may be busy
        t0 = time.perf_counter()
        dist, ind = ivf.kneighbors(Q, k, n_probe=n_probe)
        seconds.append(time.perf_counter() - t0)
    qps = len(Q) / min(seconds)
    # a returned row counts as found when it is at most as far as the exact 10th
    found = np.mean(dist <= kth[:, None])
    rows.append((n_probe, found, qps))
    print("n_probe %4d  recall %.3f  %8.0f queries/s  (%.1fx brute force)"
          % (n_probe, found, qps, qps / brute_qps))

# %%
# ``index.recall`` gives the same measure for the calibrated ``n_probe`` in one call.
print("index.recall: %.3f" % ivf.recall(Q.iloc[:500], k))

# %%
# The curve: the further right, the more neighbours found; the higher, the faster.
n_probe, recall, qps = map(np.array, zip(*rows))
fig, ax = plt.subplots(figsize=(6.5, 4.2))
ax.plot(recall, qps, "o-")
for p, r, s in rows:
    ax.annotate(str(p), (r, s), textcoords="offset points", xytext=(4, 4), fontsize=8)
ax.axhline(brute_qps, color="0.5", ls="--", label="exact brute force")
ax.set_yscale("log")
ax.set_xlabel("recall@10")
ax.set_ylabel("queries per second")
ax.set_title("Adult, HEOM: inverted lists (labels: n_probe)")
ax.legend()
fig.tight_layout()
