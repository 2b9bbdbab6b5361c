"""The exact Euclidean embedding of a p = 2 heterogeneous metric, as a transformer.

For ``p = 2`` every term of HEOM, HVDM, the Minkowski presets at ``p = 2``, the VDM N2/N3
presets and the class-posterior metrics (IVDM, DVDM, GVDM, LVDM, PVDM with ``q = 2``) is a
squared Euclidean distance between per-attribute vectors (Wilson & Martinez 1997 define
HVDM's nominal term as the Euclidean distance of class-probability rows):

- a continuous attribute: one coordinate ``√w · (x − min) / δ``;
- an overlap attribute (HEOM): a one-hot code scaled by ``√(w/2)``, plus one column for
  every value not seen in ``fit``, so that two different values are ``w`` apart;
- a VDM attribute: its row of class probabilities ``P(c | v)`` scaled by ``√w`` (``√(C w)``
  for N3);
- a class-posterior attribute: the vector ``p_a(x)`` scaled by ``√w``.

So ``‖e(x) − e(y)‖² = Σ_a w_a d_a(x, y)²``, the metric's reduced distance, for every pair of
rows without missing values.  This lets PCA, UMAP, linear models or a GPU library work in
the metric's own geometry.

Missing values and unseen values (docs/metrics.md, section 6):

- an attribute with a missing value gets NaN coordinates (no fixed vector reproduces the
  "one", "max" or "ignore" rules, which depend on the other row);
- two *different* unseen values of an overlap attribute share the unseen column, so their
  distance is 0 instead of ``w`` (an unseen value against a learned one is exact).

Metrics whose terms are not Euclidean (``p ≠ 2``, VDM N1, the co-occurrence tables of
``hds``/``add``, ``q = 1`` posteriors) are refused with a ``ValueError`` naming the reason.
"""
from __future__ import annotations

import numpy as np

from .._search.resolve import resolve_metric
from .._core.schema import NotFittedError

__all__ = ["Embedding"]


class Embedding:
    """Rows of a mixed table into the exact Euclidean embedding of a p = 2 metric.

    Parameters
    ----------
    metric : str or hdist.Metric, default="hvdm"
        A preset name or a :class:`hdist.Metric` (fitted or not: an unfitted one, or a name,
        is fitted on the ``X`` given to :meth:`fit`; a fitted one is used as it is).
    metric_params : dict, default=None
        Parameters for the metric, applied over those of a given :class:`hdist.Metric`
        (a fitted one is then copied and fitted again on ``X``).

    Attributes
    ----------
    metric_ : hdist.Metric
        The fitted metric.
    n_features_in_, feature_names_in_ : int, ndarray of str
        The columns of the table.
    n_components_ : int
        The number of output columns.

    See Also
    --------
    hdist.Metric.pairwise : the distances the embedding reproduces.
    hdist.KNeighborsTransformer : a sparse neighbor graph instead of coordinates.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> emb = hdist.Embedding("hvdm").fit(X, y)
    >>> emb.transform(X).shape
    (6, 3)
    >>> emb.get_feature_names_out().tolist()
    ['age', 'job:no', 'job:yes']
    """

    def __init__(self, metric="hvdm", metric_params=None):
        self.metric = metric
        self.metric_params = metric_params

    # -- scikit-learn protocol: tags and parameters ------------------------------------
    def __sklearn_tags__(self):
        """scikit-learn's tags (scikit-learn 1.7 asks for them in a ``Pipeline``, for one):
        a transformer of mixed tables with missing values."""
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags
        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(),
                    input_tags=InputTags(allow_nan=True, string=True))

    def get_params(self, deep=True):
        return {"metric": self.metric, "metric_params": self.metric_params}

    def set_params(self, **params):
        for key, value in params.items():
            if key not in ("metric", "metric_params"):
                raise ValueError("Embedding has no parameter %r" % (key,))
            setattr(self, key, value)
        return self

    def __repr__(self):
        return "Embedding(metric=%r, metric_params=%r)" % (self.metric, self.metric_params)

    # -- fitting -------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None):
        """Fit the metric on ``X`` (and ``y`` when it learns from classes; its statistics
        weighted by ``sample_weight``, :meth:`hdist.Metric.fit`), unless a fitted
        :class:`hdist.Metric` was given, and check that its terms are Euclidean."""
        # with metric_params, a fitted Metric is fitted again with them
        refit = isinstance(self.metric_params, dict) and bool(self.metric_params)
        metric = resolve_metric(self.metric, self.metric_params, refit=refit)
        if hasattr(metric, "plan_"):
            if sample_weight is not None:
                raise ValueError("sample_weight is for the metric's fit, and the metric "
                                 "given is fitted already: fit it with the weights")
        else:
            metric.fit(X, y, sample_weight)
        self._blocks = _blocks(metric)
        self.metric_ = metric
        self.n_features_in_ = metric.n_features_in_
        self.feature_names_in_ = metric.feature_names_in_
        self.n_components_ = sum(b[3] for b in self._blocks)
        return self

    def fit_transform(self, X, y=None, sample_weight=None):
        return self.fit(X, y, sample_weight).transform(X)

    def transform(self, X):
        """The embedded rows ``[n, n_components_]`` (NaN coordinates for an attribute whose
        value is missing)."""
        if not hasattr(self, "metric_"):
            raise NotFittedError("this Embedding is not fitted yet; call fit first")
        plan = self.metric_.plan_
        rows = self.metric_.encode(X)
        out = np.empty((rows.n, self.n_components_))
        col = 0
        for kind, k, scale, width, extra in self._blocks:
            block = out[:, col:col + width]
            if kind == "c":
                v = rows.c[:, k] - plan.c_elo[k]      # 2^e · (x - min), rounded once
                block[:, 0] = v * plan.c_inv[k] * scale
            elif kind == "o":
                codes = rows.o[:, k]
                block[:] = 0.0
                present = codes >= 0
                pos = np.minimum(codes[present], width - 1)   # every unseen value: last
                block[np.flatnonzero(present), pos] = scale
                block[~present] = np.nan
            elif kind == "t":
                codes = rows.t[:, k]
                present = codes >= 0
                emb = extra
                block[:] = emb[np.clip(codes, 0, emb.shape[0] - 1)] * scale
                block[~present] = np.nan
            else:
                lo, hi = plan.e_off[k], plan.e_off[k + 1]
                block[:] = rows.e[:, lo:hi] * scale
                block[np.isnan(rows.e[:, lo])] = np.nan
            col += width
        return out

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: a continuous column's own name; ``name=value`` for
        the one-hot columns of an overlap attribute (``name=<unseen>`` for values not seen
        in fit); ``name:class`` for the class-probability coordinates of VDM and
        class-posterior attributes."""
        if not hasattr(self, "metric_"):
            raise NotFittedError("this Embedding is not fitted yet; call fit first")
        return np.array(_names(self.metric_, self._blocks), dtype=object)


def _blocks(metric):
    """Per attribute, in the table's column order: (block, index in block, scale, width,
    extra); raises ValueError when a term is not a squared Euclidean distance."""
    plan = metric.plan_
    if plan.pmode != 2:
        raise ValueError("the embedding is Euclidean only for p = 2; this metric has p = %r"
                         % (plan.p,))
    names = metric.schema_.names_
    out = []
    where = {}
    for blk, attrs in (("c", plan.c_attr), ("o", plan.o_attr), ("t", plan.t_attr),
                       ("e", plan.e_attr)):
        for k, a in enumerate(attrs):
            where[int(a)] = (blk, k)
    for a, comp in enumerate(plan.components):
        blk, k = where[a]
        w = float(plan.weights[a])
        if blk == "c":
            out.append(("c", k, np.sqrt(w), 1, None))
        elif blk == "o":
            out.append(("o", k, np.sqrt(w / 2.0), comp.n_values + 1, None))
        elif blk == "t":
            emb = getattr(comp, "embedding", None)
            if emb is None:
                raise ValueError("attribute %r: its value table (%s) is not a Euclidean "
                                 "distance, so the metric has no exact embedding"
                                 % (names[a], "VDM N1" if metric._param("vdm") == "N1"
                                    else "co-occurrence"))
            out.append(("t", k, np.sqrt(w), np.shape(emb)[1], np.asarray(emb, float)))
        else:
            if plan.e_q[k] != 2:
                raise ValueError("attribute %r compares class posteriors with q = %d; only "
                                 "q = 2 is Euclidean" % (names[a], plan.e_q[k]))
            out.append(("e", k, np.sqrt(w), int(plan.e_off[k + 1] - plan.e_off[k]), None))
    return out


def _names(metric, blocks):
    names = metric.schema_.names_
    cats = metric.schema_.categories_
    classes = getattr(metric, "classes_", None)
    out = []
    for a, (kind, k, _, width, _) in enumerate(blocks):
        name = str(names[a])
        if kind == "c":
            out.append(name)
        elif kind == "o":
            labels = [str(v) for v in list(cats[a])[:width - 1]]
            labels += ["#%d" % i for i in range(len(labels), width - 1)]
            out.extend("%s=%s" % (name, v) for v in labels + ["<unseen>"])
        else:
            if classes is not None and len(classes) == width:
                out.extend("%s:%s" % (name, c) for c in classes)
            else:
                out.extend("%s:%d" % (name, i) for i in range(width))
    return out
