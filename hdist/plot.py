"""Plots of what a fitted metric computes (matplotlib, imported on first use).

- :func:`explain`: the per-attribute terms of one distance (:meth:`hdist.Metric.explain`);
- :func:`neighbor_distances`: how far the nearest neighbors are (distribution per rank);
- :func:`value_distances`: a nominal attribute's learned value-by-value distance table
  (:meth:`hdist.Metric.value_distances`), annotated.

Each function draws on ``ax`` (a new figure when omitted) and returns the Axes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["explain", "neighbor_distances", "value_distances"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("hdist.plot needs matplotlib: pip install hdist[plot]") from e
    return plt


def _axes(ax, size):
    if ax is not None:
        return ax
    return _pyplot().subplots(figsize=size)[1]


def explain(metric, x, y, *, ax=None, sort=True, color="C0", skipped_color="0.75"):
    """Horizontal bar chart of the per-attribute terms of ``d(x, y)``.

    Parameters
    ----------
    metric : fitted hdist.Metric
    x, y : single rows (1-D sequences, dicts, pandas Series or 1-row tables)
    ax : matplotlib Axes, optional
    sort : bool, default=True
        Largest term on top; otherwise in column order.
    color, skipped_color : matplotlib colors
        Bars of the terms, and of attributes skipped by the "ignore" policy (drawn at 0).

    Returns
    -------
    matplotlib Axes
        One bar per attribute, width = its term ``w_a d_a^p`` as :meth:`Metric.explain`
        reports it (the terms add up to the reduced distance); the title gives the
        distance.
    """
    e = metric.explain(x, y)
    terms = np.asarray(e.terms, dtype=np.float64)
    order = np.argsort(-terms, kind="stable") if sort else np.arange(len(terms))
    ax = _axes(ax, (6.0, 0.35 * len(terms) + 1.2))
    pos = np.arange(len(order))[::-1]
    colors = [skipped_color if e.skipped[j] else color for j in order]
    ax.barh(pos, terms[order], color=colors)
    ax.set_yticks(pos)
    ax.set_yticklabels([str(e.columns[j]) + (" (skipped)" if e.skipped[j] else "")
                        for j in order])
    ax.set_xlabel("term  w·d^p" if np.isfinite(e.p) else "term  w·d")
    ax.set_title("%s distance %.4g  (sum of terms %.4g)" % (metric.name, e.distance,
                                                           e.reduced))
    ax.figure.tight_layout()
    return ax


def neighbor_distances(distances, *, ranks=None, bins=30, ax=None):
    """Distribution of neighbor distances, one step histogram per neighbor rank.

    Parameters
    ----------
    distances : array [n_queries, k] (the first output of ``kneighbors``) or 1-D
    ranks : list of int, optional
        1-based ranks to draw (default: the first and the last).
    bins : int or sequence, default=30
        Shared by every rank.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        Not a 1-D or 2-D array of finite distances, or a rank outside ``1..k``.
    """
    D = np.asarray(distances, dtype=np.float64)
    if D.ndim == 1:
        D = D[:, None]
    if D.ndim != 2 or D.size == 0:
        raise ValueError("distances must be a non-empty 1-D or 2-D array, got shape %s"
                         % (np.shape(distances),))
    if not np.all(np.isfinite(D)):
        raise ValueError("distances must be finite")
    k = D.shape[1]
    ranks = sorted({1, k}) if ranks is None else list(ranks)
    bad = [r for r in ranks if not (isinstance(r, (int, np.integer)) and 1 <= r <= k)]
    if bad:
        raise ValueError("ranks must be between 1 and %d, got %r" % (k, bad))
    ax = _axes(ax, (6.0, 4.0))
    edges = np.histogram_bin_edges(D[:, [r - 1 for r in ranks]], bins=bins)
    for r in ranks:
        ax.hist(D[:, r - 1], bins=edges, histtype="step", linewidth=1.5,
                label="neighbor %d" % r)
    ax.set_xlabel("distance")
    ax.set_ylabel("queries")
    ax.legend()
    ax.set_title("distance to the k-th nearest neighbor (%d queries)" % D.shape[0])
    ax.figure.tight_layout()
    return ax


def value_distances(metric, attribute, *, ax=None, annotate=True, fmt=".2f",
                    cmap="viridis"):
    """Annotated heatmap of a nominal attribute's learned value distances
    ``d_a(v, w)`` (:meth:`hdist.Metric.value_distances`).

    Parameters
    ----------
    metric : fitted hdist.Metric
    attribute : column name or position (a nominal column)
    ax : matplotlib Axes, optional
    annotate : bool, default=True
        Write each distance in its cell.
    fmt : str, default=".2f"
        Format of the annotations.
    cmap : matplotlib colormap name

    Returns
    -------
    matplotlib Axes (the image is ``ax.images[0]``, its array the table)

    Raises
    ------
    ValueError
        ``attribute`` is unknown or continuous (from ``Metric.value_distances``).
    """
    table = metric.value_distances(attribute)
    if isinstance(table, tuple):
        labels, T = table
        name = str(attribute)
    else:
        labels, T = list(table.index), table.to_numpy()
        name = str(table.index.name)
    T = np.asarray(T, dtype=np.float64)
    V = len(labels)
    ax = _axes(ax, (0.6 * V + 2.5, 0.6 * V + 1.8))
    im = ax.imshow(T, cmap=cmap, vmin=0.0, vmax=max(float(T.max()), 1e-12))
    ax.set_xticks(range(V))
    ax.set_yticks(range(V))
    ax.set_xticklabels([str(v) for v in labels], rotation=45, ha="right")
    ax.set_yticklabels([str(v) for v in labels])
    if annotate:
        mid = (float(T.max()) + float(T.min())) / 2.0
        for i in range(V):
            for j in range(V):
                ax.text(j, i, format(T[i, j], fmt), ha="center", va="center", fontsize=8,
                        color="black" if T[i, j] > mid else "white")
    ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    ax.set_title("%s: value distances of %s" % (metric.name, name))
    ax.figure.tight_layout()
    return ax
