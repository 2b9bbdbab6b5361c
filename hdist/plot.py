"""Plots of what a fitted metric computes (matplotlib, imported on first use).

- :func:`explain`: the per-attribute terms of one distance (:meth:`hdist.Metric.explain`);
- :func:`neighbor_distances`: how far the nearest neighbors are (distribution per rank);
- :func:`value_distances`: a nominal attribute's learned value-by-value distance table
  (:meth:`hdist.Metric.value_distances`), annotated;
- :func:`prototypes`: a prototype classifier's prototypes over two chosen attributes, on
  top of the rows they classify.

Each function draws on ``ax`` (a new figure when omitted) and returns the Axes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["explain", "neighbor_distances", "value_distances", "prototypes"]


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


def _explanation(obj, x, y):
    """``(metric name, Explanation)`` of ``d(x, y)`` under ``obj``: a fitted
    :class:`hdist.Metric`, or a fitted hdist estimator (its ``metric_``); for a
    :class:`hdist.PrototypeClassifier` without ``y``, ``x`` against its winning
    prototype."""
    from ._search.metric import Metric
    if isinstance(obj, Metric):
        if y is None:
            raise TypeError("explain(metric, x, y) needs the second row y")
        return obj.name, obj.explain(x, y)
    metric = getattr(obj, "metric_", None)
    if not isinstance(metric, Metric):
        fitted = hasattr(obj, "get_params") and hasattr(obj, "fit")
        raise TypeError("explain takes a fitted hdist.Metric or a fitted hdist estimator "
                        "(one with metric_), got %s%s"
                        % (type(obj).__name__, " that is not fitted" if fitted else ""))
    if y is None:
        if hasattr(obj, "prototypes_"):
            return metric.name, obj.explain(x).terms
        raise TypeError("explain(%s, x, y) needs the second row y (only a "
                        "PrototypeClassifier compares x with its own prototype)"
                        % type(obj).__name__)
    return metric.name, metric.explain(x, y)


def explain(metric, x, y=None, *, ax=None, sort=True, color="C0", skipped_color="0.75"):
    """Horizontal bar chart of the per-attribute terms of ``d(x, y)``.

    Parameters
    ----------
    metric : fitted hdist.Metric or fitted hdist estimator
        An estimator (``KNeighborsClassifier``, ``KMedoids``, ``PrototypeClassifier``,
        ...) stands for its fitted metric ``metric_``.
    x, y : rows
        Single rows (1-D sequences, dicts, pandas Series or 1-row tables).  ``y`` may be
        left out for a :class:`hdist.PrototypeClassifier`: ``x`` is then compared with
        the prototype that wins it (:meth:`hdist.PrototypeClassifier.explain`).
    ax : matplotlib Axes, optional
        Where to draw (a new figure when omitted).
    sort : bool, default=True
        Largest term on top; otherwise in column order.
    color, skipped_color : matplotlib colors
        Bars of the terms, and of attributes skipped by the "ignore" policy (drawn at 0).

    Returns
    -------
    matplotlib Axes
        One bar per attribute, width = its term as :meth:`hdist.Metric.explain` reports it (the terms add up to the reduced
        distance); the title gives the reduced distance and the distance.

    Raises
    ------
    TypeError
        ``metric`` is neither a fitted Metric nor a fitted hdist estimator, or ``y`` is
        missing where it is needed.
    ValueError
        A row is not a single row or its columns do not match.

    See Also
    --------
    hdist.Metric.explain : the numbers, printable.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> import hdist, hdist.plot
    >>> X = pd.DataFrame({"age": [20.0, 40.0, 60.0], "colour": ["red", "blue", "red"]})
    >>> m = hdist.Metric("heom").fit(X)
    >>> ax = hdist.plot.explain(m, X.iloc[0], X.iloc[1])
    >>> [float(round(b.get_width(), 2)) for b in ax.patches]
    [1.0, 0.25]
    """
    name, e = _explanation(metric, x, y)
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
    if np.isfinite(e.p) and e.p != 1:
        how = "%.4g^(1/%g)" % (e.reduced, e.p)
    else:
        how = ("max of the terms" if not np.isfinite(e.p) else "sum of the terms")
    ax.set_title("%s distance %.4g = %s" % (name, e.distance, how))
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

    See Also
    --------
    hdist.Metric.kneighbors : the distances drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> import hdist, hdist.plot
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> dist, _ = hdist.Metric("hvdm").fit(X, y).kneighbors(X, 3)
    >>> ax = hdist.plot.neighbor_distances(dist)
    >>> ax.get_xlabel()  # doctest: +ELLIPSIS
    '...distance...'
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

    See Also
    --------
    hdist.Metric.value_distances : the table drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> import hdist, hdist.plot
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> ax = hdist.plot.value_distances(hdist.Metric("hvdm").fit(X, y), "job")
    >>> ax.get_title()
    'hvdm: value distances of job'
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


def _attribute_values(schema, attribute, cont, nom):
    """(column name, values as numbers, tick labels or None) of one attribute: a
    continuous column's values, or a nominal column's codes (NaN where missing) and its
    category labels."""
    names = list(schema.names_)
    j = schema.column(attribute)
    kinds = schema.kinds_
    pos = sum(1 for k in kinds[:j] if k == kinds[j])
    if kinds[j] == "continuous":
        return names[j], cont[:, pos], None
    codes = nom[:, pos].astype(np.float64)
    codes[codes < 0] = np.nan
    return names[j], codes, [str(c) for c in schema.categories_[j]]


def prototypes(classifier, X=None, y=None, attributes=(0, 1), *, ax=None, size=160,
               jitter=0.15, alpha=0.35):
    """The prototypes of a fitted :class:`hdist.PrototypeClassifier` over two attributes.

    Parameters
    ----------
    classifier : fitted hdist.PrototypeClassifier
    X, y : table and labels, optional
        Rows drawn beneath the prototypes, coloured by ``y`` (by the predicted class when
        ``y`` is omitted).
    attributes : pair of column names or positions, default=(0, 1)
        The horizontal and vertical attributes.  A nominal attribute is drawn on its
        category positions (labelled), rows spread by up to ``jitter`` around them (a
        fixed pattern, so the figure is reproducible).
    ax : matplotlib Axes, optional
    size : float, default=160
        Marker area of the prototypes (rows get a sixth of it).
    jitter : float, default=0.15
        Largest spread of the rows around a nominal attribute's category positions.
    alpha : float, default=0.35
        Opacity of the rows.

    Returns
    -------
    matplotlib Axes
        One scatter collection per class for the rows (when given), then one collection of
        the prototypes (``ax.collections[-1]``, offsets = their coordinates), each
        annotated with its index in ``prototypes_``.

    Raises
    ------
    ValueError
        Not two attributes, an unknown column, or an unfitted classifier.

    See Also
    --------
    hdist.PrototypeClassifier.rules_text : the same prototypes as rules.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> import hdist, hdist.plot
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> clf = hdist.PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    >>> ax = hdist.plot.prototypes(clf, X, y, ("age", "job"))
    >>> len(ax.collections[-1].get_offsets())
    2
    """
    if not hasattr(classifier, "prototypes_"):
        raise ValueError("the classifier is not fitted; call fit(X, y) first")
    if len(attributes) != 2:
        raise ValueError("attributes must name two columns, got %r" % (attributes,))
    schema = classifier.metric_.schema_
    pc, pn = schema.encode(classifier.prototypes_)
    axes_info = [_attribute_values(schema, a, pc, pn) for a in attributes]
    classes = list(classifier.classes_)
    colors = ["C%d" % (i % 10) for i in range(len(classes))]
    ax = _axes(ax, (6.5, 5.0))
    if X is not None:
        cont, nom = schema.encode(X)
        vals = [_attribute_values(schema, a, cont, nom)[1] for a in attributes]
        lab = np.asarray(classifier.predict(X) if y is None else y)
        rng = np.random.default_rng(0)
        for k, info in enumerate(axes_info):
            if info[2] is not None:
                vals[k] = vals[k] + rng.uniform(-jitter, jitter, len(vals[k]))
        for c, col in zip(classes, colors):
            m = lab == c
            ax.scatter(vals[0][m], vals[1][m], s=size / 6.0, color=col, alpha=alpha,
                       linewidths=0, label=str(c))
    px, py = axes_info[0][1], axes_info[1][1]
    pcol = [colors[classes.index(c)] for c in classifier.prototype_labels_]
    ax.scatter(px, py, s=size, c=pcol, marker="D", edgecolors="black", linewidths=1.2,
               zorder=3)
    for j, (a, b) in enumerate(zip(px, py)):
        ax.annotate(str(j), (a, b), textcoords="offset points", xytext=(6, 6), fontsize=8)
    for k, (name, _, ticks) in enumerate(axes_info):
        set_label = ax.set_xlabel if k == 0 else ax.set_ylabel
        set_label(str(name))
        if ticks is not None:
            (ax.set_xticks if k == 0 else ax.set_yticks)(range(len(ticks)))
            (ax.set_xticklabels if k == 0 else ax.set_yticklabels)(ticks)
    if X is not None:
        ax.legend(title="class", fontsize=8)
    ax.set_title("%d prototypes (%s)" % (len(px), classifier.metric_.name))
    ax.figure.tight_layout()
    return ax
