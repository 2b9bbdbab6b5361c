"""
Performance curves from the measured tables
===========================================

Two measurements say more as curves than as tables. Both are drawn from the numbers of
:doc:`/performance/scaling` and :doc:`/performance/ann` (measured on other machines,
nothing is re-run here):

- **thread scaling against the matrix product** — on a 16-core VM, the speed-up of
  hdist's brute-force 5-NN kernels beside numpy's float64 matrix product measured in the
  same rounds, the machine's ceiling for compute-bound work;
- **recall against speed** of the inverted-list index on 10⁶ census-like rows: where
  rows resemble each other (drawn around 1 000 profiles) the lists pay; where every column
  is drawn on its own they do not, except under HVDM.
"""
import matplotlib.pyplot as plt

# %%
# Thread scaling (speed-up over one thread; kernel phase; best of 3 rounds).
threads = [1, 2, 4, 8, 16]
scaling = {
    # name: (kernel speed-ups, the matrix product's in the same rounds)
    "census-like HEOM": ([1, 1.90, 3.47, 6.68, 12.66], [1, 1.70, 3.52, 5.52, 9.36]),
    "census-like Gower": ([1, 1.80, 3.63, 7.51, 12.64], [1, 1.93, 2.94, 4.36, 6.87]),
    "mixed 20k Manhattan": ([1, 1.98, 3.31, 5.94, 9.63], [1, 1.77, 2.94, 5.40, 7.89]),
    "mixed 20k HVDM (filter)": ([1, 1.59, 3.01, 5.27, 8.74], [1, 1.56, 2.48, 4.30, 7.95]),
}
fig, axes = plt.subplots(1, 4, figsize=(12, 3.4), sharey=True)
for ax, (name, (kernel, product)) in zip(axes, scaling.items()):
    ax.plot(threads, threads, color="0.8", lw=1, label="ideal")
    ax.plot(threads, kernel, "o-", label="hdist kernel")
    ax.plot(threads, product, "s--", label="matrix product")
    ax.set_title(name, fontsize=10)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.set_yticks(threads, [str(t) for t in threads])
    ax.set_xlabel("threads")
axes[0].set_ylabel("speed-up over 1 thread")
axes[0].legend(fontsize=8)
fig.suptitle("16-core Intel Xeon VM")
fig.tight_layout()

# %%
# ``recall@10`` against queries per second over exact brute force, 10⁶ rows, 10-NN.
structured = {
    "HEOM": [(0.947, 88.0), (0.961, 62.7), (0.994, 36.9)],
    "Gower, 5 % missing": [(0.949, 51.2), (0.961, 46.2), (0.992, 21.2)],
    "HVDM, 5 % missing": [(0.952, 55.8), (0.970, 43.6), (0.991, 25.9)],
}
independent = {
    "HEOM": [(0.325, 46.9), (0.859, 4.9), (0.952, 2.7), (0.989, 1.6)],
    "Gower, 5 % missing": [(0.945, 4.7), (0.986, 2.7)],
    "HVDM, 5 % missing": [(0.915, 71.1), (0.960, 48.6), (0.996, 16.9)],
}
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, data, title in [(ax1, structured, "rows around 1 000 profiles"),
                        (ax2, independent, "columns drawn independently")]:
    for i, (name, points) in enumerate(data.items()):
        ax.plot(*zip(*points), "o-", color="C%d" % i, label=name)
    ax.axhline(1, color="0.5", ls="--", lw=1)
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_title(title)
ax1.set_ylabel("speed over exact brute force (×)")
ax1.legend(fontsize=8)
fig.tight_layout()
