"""Heterogeneous metrics: one class and one fit path over the table of presets
(:mod:`hdist._core.presets`).

Every metric of docs/metrics.md is "learn per-attribute statistics once, then sum simple
per-attribute terms" (Wilson & Martinez 1997, eq. 1):

    d(x, y) = ( Σ_a w_a · d_a(x_a, y_a)^p )^(1/p),   p = inf -> max_a w_a · d_a

A preset (``heom``, ``hvdm``, ``gower``, ...) fixes how continuous and nominal
attributes are compared and the default parameters; every parameter of docs/metrics.md that
applies to the preset stays settable and the others are rejected by name.

References: D. R. Wilson and T. R. Martinez, "Improved Heterogeneous Distance Functions",
JAIR 6 (1997) (HEOM, HVDM, VDM N1/N2/N3, DVDM, IVDM); J. C. Gower, "A general
coefficient of similarity and some of its properties", Biometrics 27 (1971) (Gower);
docs/metrics.md lists every formula and its source.
"""
from __future__ import annotations

import math
import numbers
import threading
import warnings
from dataclasses import dataclass

import numpy as np

from .._core import cooccurrence as _cooccurrence, posteriors as _posteriors, progress as _progress
from .._core import statistics as est
from .._core.plan import (DiffComponent, EmbedComponent, OverlapComponent, Plan, TableComponent,
                    IGNORE, MAX, ONE, SYMBOL)
from .._core.presets import METRICS, MetricInfo  # noqa: F401  (re-exported)
from .._core.schema import (CONTINUOUS, NA_VALUES, ColumnKindWarning,  # noqa: F401
                            NotFittedError, Schema, _caller_level, check_sample_weight,
                            column_weights,
                      encode_labels,
                      n_rows, take_rows, to_columns)
from .._core.threads import built_once, effective_n_jobs

POLICIES = (ONE, MAX, IGNORE, SYMBOL)


#: implementations of the kinds beyond "diff", "overlap" and "vdm" (hdist._core.presets.TABLE):
#: continuous kind -> (factory(metric, j, name, x, policy, y, C), needs class labels)
_CONT_EXTRA = {kind: (f, True) for kind, f in _posteriors.FACTORIES.items()}
#: nominal kind -> factory(metric, j, name, codes, V, policy, nom, schema, cont)
_NOM_EXTRA = dict(_cooccurrence.FACTORIES)
#: preset name -> callable(metric) validating its own parameters; run at the start of
#: ``fit`` so that a bad value is refused even when no column would use it
PARAM_CHECKS = {**_posteriors.CHECKS, **_cooccurrence.CHECKS}


def _check_number(name, v, lo=None, lo_open=True, allow_inf=False):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError("%s must be a number, got %r" % (name, v))
    v = float(v)
    if math.isnan(v):
        raise ValueError("%s must not be NaN" % name)
    if math.isinf(v) and not (allow_inf and v > 0):
        raise ValueError("%s must be finite, got %r" % (name, v))
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise ValueError("%s must be %s %s, got %r" % (name, ">" if lo_open else ">=", lo, v))
    return v


def _is_mi(weights):
    """True when ``weights`` asks for mutual-information weights (may be an array)."""
    return isinstance(weights, str) and weights == "mi"


def balanced_accuracy(y_true, y_pred):
    """Balanced accuracy: the mean, over the classes present in ``y_true``, of the share of
    that class's rows predicted as it (the mean recall; Brodersen et al., "The balanced
    accuracy and its posterior distribution", ICPR 2010).  Equal to scikit-learn's
    ``balanced_accuracy_score`` without sample weights; a class predicted but absent from
    ``y_true`` only lowers the recall of the classes it was confused with.

    Parameters
    ----------
    y_true, y_pred : 1-D array-like
        True and predicted labels.

    Returns
    -------
    float
        The mean over the classes present in ``y_true`` of the share of their rows
        predicted right.

    See Also
    --------
    sklearn.metrics.balanced_accuracy_score : the same on scikit-learn's side.

    Examples
    --------
    >>> from hdist.metrics import balanced_accuracy
    >>> balanced_accuracy(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    0.75
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.ndim != 1 or y_pred.shape != y_true.shape:
        raise ValueError("y_true and y_pred must be 1-D of the same length, got shapes %s "
                         "and %s" % (y_true.shape, y_pred.shape))
    if y_true.size == 0:
        raise ValueError("y_true is empty")
    classes, codes = np.unique(y_true, return_inverse=True)
    hits = np.bincount(codes, weights=(y_true == y_pred).astype(np.float64),
                       minlength=len(classes))
    return float(np.mean(hits / np.bincount(codes, minlength=len(classes))))


def get_metric(name, **params):
    """The metric preset ``name`` with parameters ``params`` (unfitted).

    Parameters
    ----------
    name : str
        A preset of ``hdist.METRICS`` (or an alias).
    **params : dict
        The preset's parameters (``p``, ``nominal``, ``missing``, ...).

    Returns
    -------
    Metric
        Unfitted.

    Raises
    ------
    ValueError
        Unknown name, or a parameter the preset does not take.

    See Also
    --------
    Metric : the class; ``Metric(name, **params)`` is the same.

    Examples
    --------
    >>> import hdist
    >>> hdist.get_metric("heom", p=1).params
    {'p': 1}
    
    """
    return Metric(name, **params)


class Metric:
    """A heterogeneous distance on mixed records, fitted to training data.

    Parameters
    ----------
    name : str
        Preset: one of ``hdist.METRICS`` (``heom``, ``hvdm``, ``vdm``, ``minkowski``,
        ``euclidean``, ``manhattan``, ``chebyshev``, ``fractional``, ``gower``, ...).
    nominal, continuous : None, "all", "rest", list of names/positions, or boolean mask
        Columns taken as nominal / continuous whatever their values; every other column's
        kind is inferred (docs/metrics.md, section 1): numbers (numeric dtypes, and text or
        objects whose every observed value is or spells a number) are continuous; text,
        categories and booleans nominal.  ``"all"``: every column; ``"rest"``: the
        columns the other parameter does not name (``nominal=[...],
        continuous="rest"``: exactly these columns are nominal).  A whole-number column
        inferred continuous that looks like codes draws a ``ColumnKindWarning``.
    na_values : None or list of str
        Text read as a missing value in every column, at fit and at predict (default
        ``NA_VALUES``: ``""``, ``"?"``, ``"NA"``, ``"N/A"``, ``"n/a"``, ``"NaN"``,
        ``"None"``, ``"null"``, ... -- pandas' ``read_csv`` list and ``?``; not ``-``, a
        label too); ``[]`` reads no text as missing.
    p : float > 0 or inf
        Minkowski exponent (docs/metrics.md, section 2); fractional ``0 < p < 1`` allowed.
        Every distance is within 1e-12 relative of the exact value whenever that value is a
        normal float64: for a general p the reduced distance ``Σ w d^p`` is used where it
        lies in [1e-280, 1e280], and outside that range (p = 1000, differences of 1e-6 at
        p = 60) the pair is recomputed with every term scaled by the largest.  Weights
        multiply the raised term (``w · d^p``).
    weights : None, array of m non-negative numbers, dict name -> weight, or "mi"
        Attribute weights ``w_a`` (default 1).  ``"mi"``: mutual information with the
        class (docs/metrics.md, section 2).
    normalization : {"range", "trimmed_range", "4std", "mean_diff", "none"}
        The factor ``δ_a`` of continuous attributes (docs/metrics.md, section 3); ``trim``
        for the trimmed range (default 0.05).  A column constant in training (one observed
        value) has ``δ = inf``: observed values compare as equal, as Weka's normalization
        makes them, so such a column never takes Gower's coefficient above 1; a missing
        value still counts 1 (``"max"`` acts as ``"one"`` there).  With ``"none"``,
        ``δ = 1``.
    vdm : {"N1", "N2", "N3"}
        VDM normalization of nominal attributes (VDM presets).
    missing : {"one", "max", "ignore", "symbol"} or dict kind -> policy
        Missing-value policy (docs/metrics.md, section 6), e.g. ``{"continuous": "max",
        "nominal": "symbol"}``.  A column with no observed training value is fitted with a
        warning under "one" and "ignore" (every training row is missing there) and refused
        under "max" and "symbol".
    unseen : {"zero", "prior"}
        Class probabilities of nominal values not seen in ``fit`` (VDM presets).
    aggregate : {"sum", "mean"}
        ``"mean"`` divides ``Σ w_a d_a^p`` by ``Σ w_a`` before the root (Gower's average).

    Attributes
    ----------
    kinds_ : list of str
        ``"continuous"`` or ``"nominal"`` per column, after ``fit``.
    delta_ : dict
        ``δ_a`` per continuous column (the normalization factor).
    weights_ : ndarray of float
        The attribute weights ``w_a``.
    classes_ : ndarray
        The class labels, when ``fit`` was given ``y``.
    vdm_probabilities_, value_tables_ : dict
        The learned class probabilities and value distances of the nominal columns (VDM
        presets).
    n_train_ : int
        Rows fitted on.
    n_features_in_ : int
        Number of columns.
    feature_names_in_ : ndarray of str
        Column names (named columns only).
    schema_, plan_ : objects
        The column schema and the compiled plan of the kernels (advanced use).

    See Also
    --------
    get_metric : a preset by name.
    NeighborsIndex : search structures over a metric.
    Metric.explain : one distance, attribute by attribute.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> m = hdist.Metric("hvdm").fit(X, y)
    >>> m.kinds_
    ['continuous', 'nominal']
    >>> m.pairwise(X.iloc[:2], X.iloc[:3]).round(3).tolist()
    [[0.0, 0.111, 1.457], [0.111, 0.0, 1.434]]
    >>> dist, ind = m.kneighbors(X.iloc[[5]], 2)     # row 5 is its own nearest
    >>> ind.tolist()
    [[5, 0]]
    """

    def __init__(self, name="heom", **params):
        if not isinstance(name, str):
            raise TypeError("metric name must be a string, got %r" % (name,))
        key = name.lower()
        if key not in METRICS:
            raise ValueError("unknown metric %r; choose one of %s"
                             % (name, sorted(set(i.name for i in METRICS.values()))))
        info = METRICS[key]
        bad = sorted(set(params) - set(info.params))
        if bad:
            raise TypeError("metric %r does not take the parameter(s) %s; it accepts %s"
                            % (info.name, ", ".join(map(repr, bad)), sorted(info.params)))
        self.name = info.name
        self.params = dict(params)

    # -- sklearn-style parameter handling ------------------------------------
    @property
    def info(self) -> MetricInfo:
        return METRICS[self.name]

    def get_params(self, deep=True):
        return {"name": self.name, **self.params}

    def set_params(self, **params):
        name = params.pop("name", self.name)
        new = dict(self.params)
        new.update(params)
        Metric.__init__(self, name, **new)
        self._forget_fit()
        return self

    def __setstate__(self, st):
        st = dict(st)
        if "_fit" not in st and "plan_" in st:     # pickled by hdist 0.1: one object now
            st["_fit"] = FitState(st.pop("plan_"), st.pop("train_"), st.pop("_y", None))
            for key in ("_ctrain_cache", "_gemm_cache", "_estimators_fit"):
                st.pop(key, None)
        self.__dict__.update(st)

    def _forget_fit(self):
        """Drop everything a previous ``fit`` learned: the fitted state and every public
        attribute ending in ``_`` (statistics, classes, estimators)."""
        for attr in [a for a in vars(self) if a.endswith("_") and not a.startswith("_")]:
            delattr(self, attr)
        self.__dict__.pop("_fit", None)

    def effective_params(self):
        """Every parameter the preset accepts, with the value it uses: the ones given to
        the constructor and the preset's defaults for the others (docs/metrics.md,
        section 7).  ``get_params`` returns only the given ones, as scikit-learn's
        ``clone`` expects."""
        out = {k: self.info.defaults.get(k) for k in sorted(self.info.params)}
        out.update(self.params)
        return out

    def __repr__(self):
        """The preset and every parameter's effective value (defaults included)."""
        args = ", ".join("%s=%r" % kv for kv in self.effective_params().items())
        return "Metric(%r%s)" % (self.name, ", " + args if args else "")

    def _param(self, key):
        if key in self.params:
            return self.params[key]
        return self.info.defaults.get(key)

    # -- validation -------------------------------------------------------------
    def _policies(self):
        miss = self._param("missing")
        if isinstance(miss, str):
            pc = pn = miss
        elif isinstance(miss, dict):
            bad = set(miss) - {"continuous", "nominal"}
            if bad:
                raise ValueError("missing: keys must be 'continuous' and/or 'nominal', got %r"
                                 % sorted(bad))
            pc = miss.get("continuous", ONE)
            pn = miss.get("nominal", ONE)
        else:
            raise TypeError("missing must be a policy name or a dict, got %r" % (miss,))
        for v in (pc, pn):
            if v not in POLICIES:
                raise ValueError("missing policy must be one of %s, got %r" % (POLICIES, v))
        return pc, pn

    def _p(self):
        p = self._param("p")
        p = _check_number("p", p, lo=0.0, allow_inf=True)
        if self.name == "fractional" and not p < 1.0:
            raise ValueError("fractional metric needs 0 < p < 1, got %r" % p)
        return p

    # -- fit ------------------------------------------------------------------
    def check_params(self):
        """Validate the parameter values without data (``fit`` calls it first); raises
        a TypeError / ValueError naming the parameter.  Values that can only be
        checked against the columns (per-column ``weights``) are checked by ``fit``."""
        info = self.info
        p = self._p()
        pol_c, pol_n = self._policies()
        agg = self._param("aggregate")
        if agg not in ("sum", "mean"):
            raise ValueError("aggregate must be 'sum' or 'mean', got %r" % (agg,))
        if self.params.get("unseen", "zero") not in ("zero", "prior"):
            raise ValueError("unseen must be 'zero' or 'prior', got %r" % self.params["unseen"])
        norm = self._param("normalization")
        if "normalization" in info.params and norm not in est.NORMALIZATIONS:
            raise ValueError("normalization must be one of %s, got %r"
                             % (est.NORMALIZATIONS, norm))
        trim = self._param("trim")
        if "trim" in info.params:
            trim = _check_number("trim", trim, lo=0.0, lo_open=False)
            if not trim < 0.5:
                raise ValueError("trim must be in [0, 0.5), got %r" % trim)
        if "vdm" in info.params and self._param("vdm") not in est.VDM_NORMS:
            raise ValueError("vdm must be one of %s, got %r" % (est.VDM_NORMS, self._param("vdm")))

        check = PARAM_CHECKS.get(self.name)
        if check is not None:
            try:
                check(self)
            except (TypeError, ValueError) as exc:
                raise type(exc)("metric %r: %s" % (self.name, exc)) from None
        na = self._param("na_values")
        if na is not None and (isinstance(na, str) or not all(isinstance(v, str) for v in na)):
            raise TypeError("na_values must be None or a list of strings (the text read as "
                            "missing), got %r" % (na,))
        w = self._param("weights")
        if isinstance(w, str) and w != "mi":
            raise ValueError("weights must be None, 'mi', an array or a dict, got %r" % w)
        return p, pol_c, pol_n, agg, norm, trim

    def fit(self, X, y=None, sample_weight=None, *, progress=None):
        """Learn the schema and every per-attribute statistic from training rows.

        ``sample_weight`` ``[n]`` (non-negative; docs/metrics.md, "Sample weights"):
        frequency weights, so that a row of integer weight ``m`` counts as ``m`` copies
        of it in every statistic (standard deviations, quantiles, mean differences, class
        and co-occurrence counts, mutual information).  Rows of weight 0 are left out of
        the statistics and the schema (their values are unseen there) but stay training
        rows (``train_``, ``kneighbors``).

        ``progress``: ``True`` (a tqdm bar) or a callable receiving ``(done, total)``
        steps: reading and encoding the table counts ``m`` steps (``m`` attributes), then
        each attribute's statistics one, so ``total = 2 m`` and the last call is
        ``(total, total)``."""
        self.check_params()
        # what the previous fit learned goes first: a fit that fails leaves the metric
        # unfitted, never a mixture of two fits
        self._forget_fit()
        sw = keep = None
        if sample_weight is not None:
            sw = check_sample_weight(sample_weight, n_rows(X))
            if not sw.all():
                keep = np.flatnonzero(sw > 0)
                sw = sw[keep]
        return self._fit_weighted(X, y, sw, keep, progress)

    def _fit_summary(self, X, y, W):
        """Fit from a summary table (``hdist.dask.fit_metric``): column ``j``'s statistics
        see row ``i`` with weight ``W[i, j]`` (rows that hold other columns' values have
        weight 0 there), so per-column value counts stand for the rows they count.  The
        rows are not kept as training rows."""
        if self.info.nominal in ("hds", "add"):
            raise ValueError("metric %r compares pairs of columns jointly (co-occurrence "
                             "statistics), which per-column counts cannot fit" % self.name)
        W = np.asarray(W, dtype=np.float64)
        if W.ndim != 2 or W.shape[0] != n_rows(X) or not np.all(np.isfinite(W)) \
                or (W < 0).any():
            raise ValueError("column weights must be finite, non-negative, [rows, columns]")
        self.check_params()
        self._forget_fit()
        return self._fit_weighted(X, y, W, None, None)

    def _fit_weighted(self, X, y, sw, keep, progress):
        """``fit`` after its checks: ``sw`` is None, the weights ``[n]`` of the rows
        ``keep`` (None: all rows), or per-column weights ``[n, m]`` (``_fit_summary``)."""
        info = self.info
        p, pol_c, pol_n, agg, norm, trim = self.check_params()
        schema = Schema(self._param("nominal"), self._param("continuous"),
                        self._param("na_values"))
        cont, nom = schema.fit_encode(X if keep is None else take_rows(X, keep),
                                      allow_empty=True, sample_weight=sw)
        m_attr = len(schema.names_)
        report = _progress.reporter(progress, 2 * m_attr, "fit", unit="steps")
        if report is not None:
            report(m_attr, 2 * m_attr)
        n = cont.shape[0]
        if n < 2 and (sw is None or not sw.sum() >= 2):
            raise ValueError("X has %d row(s)%s; at least 2 training rows are needed"
                             % (n, "" if sw is None else " of positive sample_weight"))
        _check_empty_columns(schema, cont, nom, pol_c, pol_n)
        needs_y = info.needs_y or _is_mi(self._param("weights")) or \
            _CONT_EXTRA.get(info.continuous, (None, False))[1]
        ycodes = classes = y_all = None
        if y is not None:
            if keep is None:
                ycodes, classes = encode_labels(y, n)
                y_all = ycodes
            else:
                ycodes, classes, y_all = _kept_labels(y, n_rows(X), keep)
        elif needs_y:
            raise ValueError("metric %r needs class labels: call fit(X, y)" % self.name)
        C = len(classes) if classes is not None else 0

        components = []
        cont_pos, nom_pos = [], []
        ic = inom = 0
        self.delta_ = {}
        self.vdm_probabilities_ = {}
        self.value_tables_ = {}
        for j, (name, kind) in enumerate(zip(schema.names_, schema.kinds_)):
            if kind == CONTINUOUS:
                cont_pos.append(ic)
                nom_pos.append(-1)
                x = cont[:, ic]
                ic += 1
                components.append(self._continuous_component(j, name, x, pol_c, norm, trim,
                                                             ycodes, C, column_weights(sw, j)))
            else:
                cont_pos.append(-1)
                nom_pos.append(inom)
                codes = nom[:, inom]
                inom += 1
                V = len(schema.categories_[j]) + (1 if pol_n == SYMBOL else 0)
                components.append(self._nominal_component(j, name, codes, V, pol_n, ycodes, C,
                                                          nom, schema, cont,
                                                          column_weights(sw, j)))
            if report is not None and j + 1 < m_attr:
                report(m_attr + j + 1, 2 * m_attr)
        weights = self._weights(schema, cont, nom, ycodes, C, sw)
        plan = Plan(components, weights, p, agg == "mean", cont_pos, nom_pos,
                    names=schema.names_)
        self.schema_ = schema
        self.n_features_in_ = schema.n_features_in_
        self.feature_names_in_ = np.array(schema.names_, dtype=object)
        self.kinds_ = list(schema.kinds_)
        self.weights_ = weights
        if classes is not None:
            self.classes_ = np.array(classes, dtype=object) if any(
                isinstance(c, str) for c in classes) else np.array(classes)
        unseen = None
        if keep is not None:
            # every row is a training row; the rows of weight 0 are encoded as data the
            # statistics never saw (values of theirs not seen are unseen values, with
            # codes that queries share)
            unseen = [dict() for _ in schema.nominal_names]
            cont, nom = schema.encode(X, unseen, "X")
        train = plan.encode(cont, nom)
        self.n_train_ = train.n
        self._fit = FitState(plan, train, y_all, unseen)
        if report is not None:
            report(2 * m_attr, 2 * m_attr)
        return self

    # the fitted state, read through one object that each fit replaces whole
    plan_ = property(lambda self: self._fitted().plan, doc="The fitted Plan.")
    train_ = property(lambda self: self._fitted().train,
                      doc="The training rows encoded by the fitted Plan.")
    _y = property(lambda self: self._fitted().y)

    def _fitted(self):
        try:
            return self.__dict__["_fit"]
        except KeyError:
            raise AttributeError("this %s metric is not fitted" % self.name) from None

    def _ctrain(self):
        """The training rows as the kernels read them."""
        return self._fitted().crows()

    def _check_same_fit(self, state, owner):
        """Refuse to serve ``owner`` (an index or estimator built on this metric when
        its fitted state was ``state``) after the metric was re-fitted or reset."""
        if self.__dict__.get("_fit") is not state:
            raise ValueError("the metric of this %s was re-fitted (or its parameters were "
                             "set) after the %s was fitted, so its rows and the metric's "
                             "statistics no longer belong together; call fit again"
                             % (owner, owner))

    def _continuous_component(self, j, name, x, policy, norm, trim, y, C, sw=None):
        kind = self.info.continuous
        if kind is None:
            raise ValueError("metric %r compares nominal attributes only, but column %r is "
                             "continuous; declare it nominal (nominal=[...]) or use hvdm"
                             % (self.name, name))
        if policy == SYMBOL:
            policy = ONE
        present = x[~np.isnan(x)]
        if present.size == 0:
            # no observed training value (allowed under "one" / "ignore"): every training
            # row is missing there, and observed query values compare as equal (no spread)
            if kind == "diff":
                self.delta_[name] = math.inf
            return DiffComponent(j, math.inf, 0.0, 0.0, policy)
        lo, hi = float(present.min()), float(present.max())
        if kind == "diff":
            delta = est.normalization_delta(x, norm, trim, sw)
            if hi == lo and norm != "none":
                # a column constant in training has no spread to normalize by: observed
                # values compare as equal (Weka's normalization maps them all to 0), so
                # range-normalized metrics stay within their bounds (Gower's in [0, 1]);
                # a missing value still counts 1 ("max" has no largest difference here)
                delta = math.inf
                if policy == MAX:
                    policy = ONE
            self.delta_[name] = delta
            return DiffComponent(j, delta, lo, hi, policy)
        factory = _CONT_EXTRA[kind][0]
        return factory(self, j, name, x, policy, y, C, sample_weight=sw)

    def _nominal_component(self, j, name, codes, V, policy, y, C, nom, schema, cont=None,
                           sw=None):
        kind = self.info.nominal
        sym_codes = np.where(codes < 0, V - 1, codes) if policy == SYMBOL else codes
        if kind == "overlap":
            return OverlapComponent(j, V, policy)
        if kind == "vdm":
            unseen = self._param("unseen")
            P = est.class_probabilities(sym_codes, y, V, C, empty=unseen, w=sw)
            self.vdm_probabilities_[name] = P
            q, f = est.vdm_scale(self._param("vdm"), C)
            if (V + 1) ** 2 <= est.TABLE_BUDGET:
                T = est.vdm_table(P, self._param("vdm"))
                self.value_tables_[name] = T
                return TableComponent(j, T, policy, V, embedding=P * f if q == 2 else None)
            comp = EmbedComponent(j, C, q, est.ProbabilityRows(P, f), policy, nominal=True)
            comp.n_values = V   # learned values (symbol included), as tables have
            return comp
        factory = _NOM_EXTRA[kind]
        return factory(self, j, name, sym_codes, V, policy, nom, schema, cont,
                       sample_weight=sw)

    def _weights(self, schema, cont, nom, y, C, sw=None):
        m = schema.n_features_in_
        w = self._param("weights")
        if w is None:
            return np.ones(m)
        if isinstance(w, str):
            if w == "mi":
                from .._core.information import mi_weights
                return mi_weights(self, schema, cont, nom, y, C, sw)
            raise ValueError("weights must be None, 'mi', an array or a dict, got %r" % w)
        if isinstance(w, dict):
            bad = set(w) - set(schema.names_)
            if bad:
                raise ValueError("weights: no column(s) named %r" % sorted(bad))
            arr = np.array([w.get(nm, 1.0) for nm in schema.names_], dtype=np.float64)
        else:
            try:
                arr = np.asarray(w, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError("weights must hold numbers, got %r" % (w,))
        if arr.ndim != 1 or arr.shape[0] != m:
            raise ValueError("weights must have one entry per column (%d), got shape %s"
                             % (m, arr.shape))
        if not np.all(np.isfinite(arr)):
            raise ValueError("weights must be finite, got %r" % (arr.tolist(),))
        if (arr < 0).any():
            raise ValueError("weights must be non-negative, got %r" % (arr.tolist(),))
        if not (arr > 0).any():
            raise ValueError("weights must not all be zero")
        return arr

    # -- use ------------------------------------------------------------------------
    def _check_fitted(self):
        if not hasattr(self, "plan_"):
            raise NotFittedError("this %s metric is not fitted yet; call fit(X, y) first"
                                 % self.name) from None

    def encode(self, X, unseen=None, what="X"):
        """Rows of ``X`` encoded for the kernels (:class:`hdist._core.plan.Rows`)."""
        self._check_fitted()
        with _progress.phase("encode"):
            cont, nom = self.schema_.encode(X, unseen=unseen, what=what)
            return self.plan_.encode(cont, nom)

    def pairwise(self, X, Y=None, *, out=None, n_jobs=None, reduced=False, progress=None):
        """Distance matrix ``D[i, j] = d(X_i, Y_j)`` (``Y=None``: X against itself, each
        pair computed once).  Returns true distances, or the reduced distance
        ``Σ w d^p`` (no root, no mean) when ``reduced=True``.  ``progress`` as for
        :meth:`kneighbors` (rows of ``X``; with ``Y=None`` the symmetric matrix is then
        computed by blocks of rows, each pair still once)."""
        self._check_fitted()
        threads = effective_n_jobs(n_jobs)
        unseen = [dict() for _ in self.schema_.nominal_names]
        A = self.encode(X, unseen, "X")
        B = A if Y is None else self.encode(Y, unseen, "Y")
        shape = (A.n, B.n)
        if out is None:
            what = "a pairwise matrix of %d x %d rows (%d pairs)" % (A.n, B.n, A.n * B.n)
            check_result_size(8 * A.n * B.n, what, PAIRWISE_REMEDY)
            with out_of_memory(what, PAIRWISE_REMEDY, lambda: " (it takes %s)"
                               % nbytes_text(8 * A.n * B.n)):
                out = np.empty(shape)
        else:
            if not isinstance(out, np.ndarray):
                raise TypeError("out must be a numpy array, got %s" % type(out).__name__)
            if out.dtype != np.float64:
                raise ValueError("out must have dtype float64, got %s" % out.dtype)
            if out.shape != shape:
                raise ValueError("out must have shape %s, got %s" % (shape, out.shape))
            if not out.flags.c_contiguous:
                raise ValueError("out must be C-contiguous")
            if not out.flags.writeable:
                raise ValueError("out must be writeable")
        from .._kernels import CRows, pairwise
        cA = CRows(A)
        cB = cA if Y is None else CRows(B)
        report = _progress.reporter(progress, A.n, "pairwise")
        if report is None:
            pairwise(self.plan_.cplan, cA, cB, out, threads, Y is None, bool(reduced))
            return out
        for a, b in _progress.blocks(A.n, report):
            part = A.take(np.arange(a, b))
            if Y is None:       # the upper triangle of rows a..b, mirrored below
                cols = A.take(np.arange(a, A.n))
                blk = np.empty((b - a, A.n - a))
                pairwise(self.plan_.cplan, CRows(part), CRows(cols), blk, threads, False,
                         bool(reduced))
                for t in range(b - a):
                    out[a + t, a + t:] = blk[t, t:]
                    out[a + t:, a + t] = blk[t, t:]
            else:
                pairwise(self.plan_.cplan, CRows(part), cB, out[a:b], threads, False,
                         bool(reduced))
        return out

    def _queries(self, Q):
        if Q is None:
            return self.train_
        unseen = self._fitted().unseen
        return self.encode(Q, None if unseen is None else [dict(d) for d in unseen], "Q")

    def kneighbors(self, Q=None, k=5, *, exclude_self=False, return_distance=True,
                   n_jobs=None, progress=None):
        """The ``k`` nearest training rows of each row of ``Q`` (``None``: the training
        rows), sorted by true distance, ties broken by the smaller training index.

        Returns ``(distances, indices)`` of shape ``[n_q, k]`` (only indices when
        ``return_distance=False``).  The k-th place is decided on the distance returned
        (docs/metrics.md, section 8): two rows whose reduced distances ``Σ w d^p`` differ
        but round to one true distance after the root count as tied, and the smaller
        training index comes first -- the same on every path, thread count and tile size,
        and ``kneighbors(k)`` is a prefix of ``kneighbors(k + 1)``.  ``exclude_self``
        skips training row ``i`` for query row ``i`` (``Q`` must then be the training
        rows).  ``progress``: ``True`` (a tqdm
        bar) or a callable receiving ``(done, total)`` query rows after each block of
        queries, and a final ``(total, total)`` (docs/guide/threads.md, "Progress").  Afterwards
        ``search_`` says which search ran and why, and ``search_["phases"]`` the call's
        seconds per phase (:func:`search_record`; docs/guide/threads.md)."""
        d, i = self._kneighbors(Q, k, exclude_self, n_jobs, progress)
        return (d, i) if return_distance else i

    def _kneighbors(self, Q, k, exclude_self=False, n_jobs=None, progress=None, ties=False):
        """``kneighbors``'s ``(dist, ind)``; with ``ties=True`` each list also holds, after
        its k-th place, every other training row at the k-th distance (in index order, at
        that distance; shorter lists padded with ``inf`` and index 0), found by the same
        search.  Those lists cost 8 bytes per tied row of each query during the search
        and 16 bytes per column of the widest one after it: 10^6 identical training rows
        make that 24 GB for 1 000 queries, so a ``MemoryError`` names the size where it
        does not fit.  ``ties`` a :class:`hdist._search.votes.TieTally`: the lists are
        the k nearest and the tally counts the tied rows beyond them (the votes of
        ``ties="include"``, memory independent of the ties).  The phases of the call are
        timed into ``search_["phases"]``."""
        with _progress.timed_call() as phases:
            out = self._kneighbors_timed(Q, k, exclude_self, n_jobs, progress, ties)
        self.search_["phases"] = phases
        return out

    def _kneighbors_timed(self, Q, k, exclude_self, n_jobs, progress, ties):
        self._check_fitted()
        rows = self._queries(Q)
        k = _check_k(k, self.n_train_ - (1 if exclude_self else 0))
        if exclude_self and rows.n != self.n_train_:
            raise ValueError("exclude_self=True needs the training rows as queries (%d rows),"
                             " got %d" % (self.n_train_, rows.n))
        from .._kernels import CRows
        threads = effective_n_jobs(n_jobs)
        algo, tree, why = self._search(rows.n * self.n_train_)
        state = self._fitted()
        if tree is not None:            # a k beyond the pilot's is decided at that k
            from .choice import k_rule
            rule = k_rule(state.plan, state.train, state.crows(), k,
                          lambda q, kk: self._knn_rows(q, kk, False, 1),
                          state.__dict__.setdefault("k_choices", {}))
            if rule is not None and rule[0] == "brute":
                algo, tree, why = "brute", None, rule[1]

        def search(part, kk, excl):
            if tree is None:
                return self._knn_rows(part, kk, excl, threads, ties=ties)
            cq = state.crows() if part is state.train else CRows(part)
            with _progress.phase("kernel"):
                return tree.knn(cq, kk, threads, excl, ties)[:2]
        report = _progress.reporter(progress, rows.n, "kneighbors")
        with knn_guard(rows.n, k):
            if report is None or (exclude_self and _tallies(ties)):
                d, i = search(rows, k, bool(exclude_self))
                if report is not None:      # a tally's own rows: one block
                    report(rows.n, rows.n)
            else:
                d, i = _progress.knn_blocks(lambda part, kk: search(part, kk, False),
                                            rows, k, bool(exclude_self), report, ties)
        self._record_search(algo, why, threads)
        return d, i

    def _search(self, pairs=None):
        """``(algorithm, tree, reason)``: the search :class:`hdist.NeighborsIndex`'s
        ``"auto"`` rule picks for the training rows (``hdist._search.auto_choice``: brute
        force, or a KD-tree built here), decided once per fit.  ``pairs``: the (query,
        row) pairs the caller is about to search; where the rule needs its pilot
        (``hdist._search.choice.Probe``) the calls are answered by brute force, undecided,
        until they have searched ``AUTO_DECIDE_PAIRS`` in all, so that deciding never
        costs a small call more than it costs to answer."""
        state = self._fitted()
        if state.search is not None:
            return state.search
        with state.lock:        # one decision (and one tree) for threads that meet here
            if state.search is not None:
                return state.search
            from . import choice as _search
            n = state.train.n
            if pairs is not None and _search.needs_pilot(state.plan, n):
                state.searched += int(pairs)
                if state.searched < _search.AUTO_DECIDE_PAIRS:
                    return "brute", None, (
                        "brute force until the searches have covered %d pairs (%d so far),"
                        " when the rule's pilot decides" % (_search.AUTO_DECIDE_PAIRS,
                                                           state.searched))
            probe = []

            def pilot():
                probe.append(_search.Probe(state.plan, state.train, state.crows()))
                return probe[0].evaluations()
            with _progress.phase("decide"):
                algo, why = _search.auto_choice(
                    state.plan, n, pilot,
                    lambda: probe[0].race(lambda q, k: self._knn_rows(q, k, False, 1)))
            tree = None
            if algo == "kd_tree":
                with _progress.phase("build"):
                    tree = probe[0].tree if probe and probe[0].full else \
                        _search.KDTree(state.plan, state.train, state.crows())
            state.search = (algo, tree, why)
            return state.search

    def _record_search(self, algo, why, threads):
        """Set ``search_``: which path the last search ran, on how many threads, and why."""
        self.search_ = search_record(algo, why, threads, getattr(self, "_brute_path", None))

    #: below this many pairs the direct kernel is used without the GEMM filter
    _GEMM_MIN_PAIRS = 1 << 18

    def _use_filter(self, rows, R, method):
        """Whether a brute-force search of encoded query rows against ``R`` tries the
        matrix-product filter: ``method`` "gemm", or "auto" with at least
        ``_GEMM_MIN_PAIRS`` pairs and 16 queries ("direct": never)."""
        if method not in ("auto", "direct", "gemm"):
            raise ValueError("method must be 'auto', 'direct' or 'gemm', got %r" % (method,))
        return method == "gemm" or (method == "auto" and rows.n * R.n >= self._GEMM_MIN_PAIRS
                                    and rows.n >= 16)

    def _knn_rows(self, rows, k, exclude_self, threads, method="auto", R=None, cR=None,
                  cache=None, ties=False):
        """Brute-force k-NN of encoded query rows against the training rows (or ``R``).

        ``method``: "direct" (the pair kernel over tiles), "gemm" (matrix-product filter,
        p = 2 plans only; falls back to direct when not applicable) or "auto".  ``ties``:
        the lists also hold the rows tied with the k-th (``_kneighbors``)."""
        from . import gemm_filter as _gemm
        from .._kernels import CRows, knn
        state = self._fitted()
        if R is None:
            R, cR = state.train, state.crows()
        with _progress.phase("tables"):
            cQ = CRows(rows)
        if self._use_filter(rows, R, method):
            cache = state.gemm_cache if R is state.train else cache
            res = _gemm.knn(state.plan, rows, R, cQ, cR, k, threads, exclude_self, cache=cache,
                            ties=ties)
            if res is not None:
                self._brute_path = ("filter", "the matrix-product filter (p = 2)")
                return res
            why = "the direct kernel (the matrix-product filter does not apply to this plan)"
        else:
            why = ("the direct kernel (asked for)" if method == "direct" else
                   "the direct kernel (under %d pairs or 16 queries: no matrix-product "
                   "filter)" % self._GEMM_MIN_PAIRS)
        self._brute_path = ("direct", why)
        with _progress.phase("kernel"):
            return knn(state.plan.cplan, cQ, cR, k, threads, exclude_self=exclude_self,
                       ties=ties)

    def _radius_rows(self, rows, r, exclude_self, threads, self_offset=0, method="auto",
                     R=None, cR=None, cache=None):
        """Brute-force radius search of encoded query rows against the training rows (or
        ``R``): two lists of arrays (distances, indices).  ``exclude_self`` skips reference
        row ``q + self_offset`` for query row ``q``; ``method`` as for ``_knn_rows`` (the
        filter applies to finite radii)."""
        from . import gemm_filter as _gemm
        from .._kernels import CRows, radius
        state = self._fitted()
        if R is None:
            R, cR = state.train, state.crows()
        cQ = CRows(rows)
        if self._use_filter(rows, R, method):
            cache = state.gemm_cache if R is state.train else cache
            res = _gemm.radius(state.plan, rows, R, cQ, cR, r, threads, exclude_self,
                               self_offset, cache=cache)
            if res is not None:
                self._brute_path = ("filter", "the matrix-product filter (radius search)")
                return res
        self._brute_path = ("direct", "the direct kernel (radius search)")
        return radius(state.plan.cplan, cQ, cR, r, threads, exclude_self, self_offset)

    def radius_neighbors(self, Q=None, r=1.0, *, exclude_self=False, return_distance=True,
                         n_jobs=None, progress=None):
        """Training rows within distance ``r`` (inclusive) of each query row, sorted by
        (distance, index).  Returns object arrays of arrays, like scikit-learn.
        ``progress`` as for :meth:`kneighbors`."""
        self._check_fitted()
        r = _check_number("r", r, lo=0.0, lo_open=False, allow_inf=True)
        rows = self._queries(Q)
        if exclude_self and rows.n != self.n_train_:
            raise ValueError("exclude_self=True needs the training rows as queries")
        threads = effective_n_jobs(n_jobs)
        state = self._fitted()
        algo, tree, why = self._search(rows.n * self.n_train_)
        dl, il = [], []
        report = _progress.reporter(progress, rows.n, "radius_neighbors")
        whole = report is None          # one block, as one kernel call
        with radius_guard(rows.n, self.n_train_, r, il):
            self._radius_blocks(rows, r, exclude_self, threads, state, tree, report, whole,
                                dl, il)
        self._record_search(algo, why, threads)
        D = np.empty(len(dl), dtype=object)
        I = np.empty(len(il), dtype=object)
        D[:] = dl
        I[:] = il
        return (D, I) if return_distance else I

    def _radius_blocks(self, rows, r, exclude_self, threads, state, tree, report, whole,
                       dl, il):
        """``radius_neighbors``' lists, appended to ``dl``, ``il`` block by block."""
        from .._kernels import CRows
        for a, b in _progress.blocks(rows.n, _progress.silent if whole else report,
                                     max(rows.n, 1) if whole else None):
            part = rows if (a, b) == (0, rows.n) else rows.take(np.arange(a, b))
            if tree is None:
                d_, i_ = self._radius_rows(part, r, bool(exclude_self), threads, a)
            else:
                own = part is state.train
                d_, i_, _ = tree.radius(state.crows() if own else CRows(part), r, threads,
                                        bool(exclude_self) and own)
                if exclude_self and not own:    # the block's own rows are a..b-1
                    keep = [i != a + t for t, i in enumerate(i_)]
                    d_ = [d[m] for d, m in zip(d_, keep)]
                    i_ = [i[m] for i, m in zip(i_, keep)]
            dl += list(d_)
            il += list(i_)

    def value_distances(self, attribute):
        """The learned value x value table ``d_a(v, w)`` of a nominal attribute.

        Unweighted component distances between the values seen in ``fit`` (with the
        "symbol" policy, the missing symbol is the last value, labelled ``"<missing>"``).
        Returns a pandas DataFrame when pandas is installed, else ``(labels, table)``."""
        self._check_fitted()
        names = self.schema_.names_
        j = self.schema_.column(attribute)
        if self.schema_.kinds_[j] != "nominal":
            raise ValueError("column %r is continuous; value tables exist for nominal "
                             "columns only" % names[j])
        comp = self.plan_.components[j]
        labels = list(self.schema_.categories_[j])
        V = comp.n_values
        if len(labels) < V:
            labels.append("<missing>")
        if isinstance(comp, TableComponent):
            T = np.array(comp.table[:V, :V], dtype=np.float64)
        elif isinstance(comp, OverlapComponent):
            T = 1.0 - np.eye(V)
        else:
            codes = np.arange(V)
            E = comp.encode(codes)
            diff = E[:, None, :] - E[None, :, :]
            T = np.abs(diff).sum(-1) if comp.q == 1 else np.sqrt((diff * diff).sum(-1))
        try:
            import pandas as pd
        except ImportError:
            return labels, T
        return pd.DataFrame(T, index=pd.Index(labels, name=names[j]),
                            columns=pd.Index(labels, name=names[j]))

    def explain(self, x, y):
        """How ``d(x, y)`` is made, attribute by attribute, for two single rows.

        Parameters
        ----------
        x, y : row
            Single rows: 1-D sequences (by position), dicts or pandas Series (by name) or
            1-row tables.

        Returns
        -------
        Explanation
            Each attribute's two values side by side, its distance ``d_a``, its weight
            ``w_a`` and its term ``w_a d_a^p``, then the reduction that gives the
            distance: the terms summed (the largest taken for ``p = inf``), rescaled by
            ``Σ w / Σ w (compared)`` when the "ignore" policy skipped attributes, divided
            by ``Σ w`` for ``aggregate="mean"``, and the ``p``-th root.  ``print()`` it to
            check the distance by hand.

        Raises
        ------
        ValueError
            A row is not a single row, or its columns do not match the fitted ones.
        RuntimeError
            The metric is not fitted.

        See Also
        --------
        Explanation : the fields and the printed form.
        hdist.plot.explain : the terms as a bar chart.

        Examples
        --------
        >>> import pandas as pd, hdist
        >>> X = pd.DataFrame({"age": [20.0, 40.0, 60.0], "colour": ["red", "blue", "red"]})
        >>> e = hdist.Metric("heom").fit(X).explain(X.iloc[0], X.iloc[1])
        >>> print(e)  # doctest: +NORMALIZE_WHITESPACE
        column  x    y     d_a  w_a  w_a*d_a^2
        age     20   40    0.5  1       0.2500
        colour  red  blue  1    1       1.0000
        sum of the terms                1.2500
        distance = 1.2500^(1/2) = 1.1180
        >>> round(e.distance, 4)
        1.118
        """
        self._check_fitted()
        unseen = [dict() for _ in self.schema_.nominal_names]
        rx, ry = _one_row(x, self.schema_), _one_row(y, self.schema_)
        A = self.encode(rx, unseen, "x")
        B = self.encode(ry, unseen, "y")
        if A.n != 1 or B.n != 1:
            raise ValueError("explain takes single rows; got %d and %d rows" % (A.n, B.n))
        from .._kernels import CRows, pair_terms, finalize_array
        plan = self.plan_
        tc, to, tt, te, sc, so, st, se, red = pair_terms(plan.cplan, CRows(A), 0, CRows(B), 0)
        m = plan.m
        raw = np.zeros(m)
        skipped = np.zeros(m, dtype=bool)
        for attr, t, s in ((plan.c_attr, tc, sc), (plan.o_attr, to, so), (plan.t_attr, tt, st),
                           (plan.e_attr, te, se)):
            raw[attr] = t
            skipped[attr] = s
        scale = 1.0
        compared = None
        if skipped.any():
            compared = float(plan.weights[~skipped].sum())
            if not compared > 0:
                raw = plan.weights.copy()       # nothing known: every component is 1
            elif plan.pmode != 0:
                scale = plan.w_all / compared
        if plan.mean and plan.pmode != 0:
            scale = scale / plan.w_all
        red_shown = red / plan.w_all if (plan.mean and plan.pmode != 0) else red
        dist = float(finalize_array(plan.cplan, np.array([red]))[0])
        w = plan.weights
        with np.errstate(divide="ignore", invalid="ignore"):
            d = raw / w
            if plan.pmode >= 2:
                d = np.power(d, 1.0 / plan.p)
        d = np.where(w > 0, d, np.nan)
        if compared is None or compared > 0:
            d[skipped] = np.nan
        return Explanation(list(self.schema_.names_), raw * scale, skipped, float(red_shown),
                           dist, plan.p, x=self._row_values(rx, unseen),
                           y=self._row_values(ry, unseen), d=d, weights=w.copy(), raw=raw,
                           mean=bool(plan.mean), compared=compared)

    def _row_values(self, row, unseen):
        """The values of a single row as the metric reads them, in column order
        (``None`` where missing): floats, and nominal labels (unseen ones included)."""
        schema = self.schema_
        cont, nom = schema.encode(row, unseen=unseen, what="x")
        out = []
        ic = inom = 0
        for j, kind in enumerate(schema.kinds_):
            if kind == CONTINUOUS:
                v = float(cont[0, ic])
                out.append(None if v != v else v)
                ic += 1
                continue
            code = int(nom[0, inom])
            cats = schema.categories_[j]
            if code < 0:
                out.append(None)
            elif code < len(cats):
                out.append(cats[code])
            else:
                out.append(next((k for k, c in unseen[inom].items() if c == code), None))
            inom += 1
        return out


def _fmt_value(v):
    """A value as the printed explanation shows it (``?`` for a missing one)."""
    if v is None:
        return "?"
    if isinstance(v, (float, np.floating)):
        return "%.6g" % v
    return str(v)


def _decimals(values):
    """Decimals that give the largest of ``values`` five significant digits (4 at least,
    12 at most): the terms and every step of the reduction are printed with the same
    ones, so that the printed terms add up to the printed sum to within rounding."""
    big = max([abs(v) for v in values if np.isfinite(v)] + [0.0])
    if big == 0.0:
        return 4
    return int(min(12, max(4, 4 - math.floor(math.log10(big)))))


@dataclass
class Explanation:
    """How one distance is made (returned by :meth:`Metric.explain`).

    ``print(explanation)`` shows one line per attribute -- its two values side by side,
    the attribute's distance ``d_a``, its weight ``w_a`` and its term ``w_a d_a^p`` --
    and below them the reduction to the distance, one step per line with the number it
    gives: the sum of the terms (the largest for ``p = inf``), the rescaling of the
    "ignore" policy, the division of ``aggregate="mean"``, the ``p``-th root.  The terms
    and the steps are printed with the same decimals, so the printed terms add up to the
    printed sum to within rounding and the distance can be checked by hand.

    Attributes
    ----------
    columns : list
        Column names (positions for unnamed tables).
    terms : ndarray of float
        What each attribute adds to ``reduced``: ``w_a d_a^p``, times ``Σ w / Σ w
        (compared)`` when the "ignore" policy skipped attributes and divided by ``Σ w``
        for ``aggregate="mean"`` (``w_a d_a`` for ``p = inf``); 0 where skipped.
    skipped : ndarray of bool
        Attributes left out by the "ignore" missing-value policy.
    reduced : float
        The sum of ``terms`` (their maximum for ``p = inf``).
    distance : float
        The true distance ``reduced ** (1/p)``.
    p : float
        The Minkowski exponent.
    x, y : list
        The two rows' values as the metric reads them (``None`` where missing).
    d : ndarray of float
        Each attribute's distance ``d_a`` (NaN where skipped or of weight 0).
    weights : ndarray of float
        The attribute weights ``w_a``.
    raw : ndarray of float
        ``w_a d_a^p`` before the rescaling and the mean: the printed terms.
    mean : bool
        ``aggregate="mean"``: the sum is divided by ``Σ w``.
    compared : float or None
        ``Σ w`` of the attributes compared, when the "ignore" policy skipped some.

    See Also
    --------
    Metric.explain : computes it.
    hdist.plot.explain : draws the terms.

    Examples
    --------
    >>> import numpy as np, hdist
    >>> X = np.array([[0.0, 1.0], [2.0, np.nan], [4.0, 3.0]])
    >>> e = hdist.Metric("gower").fit(X).explain(X[0], X[1])
    >>> e.skipped.tolist(), round(e.distance, 4)
    ([False, True], 0.5)
    >>> print(e)  # doctest: +NORMALIZE_WHITESPACE
    column  x  y  d_a      w_a  w_a*d_a
    0       0  2  0.5      1     0.5000
    1       1  ?  skipped  1     0.0000
    sum of the terms             0.5000
    x Σw / Σw compared = 2 / 1   1.0000
    / Σw = 2                     0.5000
    distance = 0.5000
    """
    columns: list
    terms: np.ndarray
    skipped: np.ndarray
    reduced: float
    distance: float
    p: float
    x: list = None
    y: list = None
    d: np.ndarray = None
    weights: np.ndarray = None
    raw: np.ndarray = None
    mean: bool = False
    compared: float = None

    def to_dict(self):
        """``{column: term}`` (the terms that add up to ``reduced``)."""
        return dict(zip(self.columns, self.terms.tolist()))

    def to_frame(self):
        """A pandas DataFrame indexed by column: ``x``, ``y``, ``d_a``, ``weight``,
        ``raw`` (``w_a d_a^p``), ``term`` (what it adds to ``reduced``), ``skipped``."""
        import pandas as pd
        n = len(self.columns)
        nan = np.full(n, np.nan)
        data = {"x": self.x if self.x is not None else [None] * n,
                "y": self.y if self.y is not None else [None] * n,
                "d_a": nan if self.d is None else self.d,
                "weight": nan if self.weights is None else self.weights,
                "raw": self.terms if self.raw is None else self.raw,
                "term": self.terms, "skipped": self.skipped}
        return pd.DataFrame(data, index=pd.Index(self.columns, name="column"))

    def _lines(self, names=("x", "y")):
        """The printed table and reduction, as lines (``names``: the headers of the two
        value columns)."""
        n = len(self.columns)
        raw = np.asarray(self.terms if self.raw is None else self.raw, dtype=np.float64)
        inf = not np.isfinite(self.p)
        head = "w_a*d_a" + ("" if (inf or self.p == 1) else "^" + _fmt_value(float(self.p)))
        x = self.x if self.x is not None else [None] * n
        y = self.y if self.y is not None else [None] * n
        d = self.d if self.d is not None else np.full(n, np.nan)
        w = self.weights if self.weights is not None else np.full(n, np.nan)
        w_all = float(np.sum(w))
        # the reduction, step by step: (what is done, its result)
        total = float(np.max(raw)) if (inf and n) else float(np.sum(raw))
        steps = [("largest term" if inf else "sum of the terms", total)]
        if self.compared is not None and not inf:
            if self.compared > 0:
                total = total * w_all / self.compared
                steps.append(("x Σw / Σw compared = %.6g / %.6g" % (w_all, self.compared),
                              total))
            else:
                steps[0] = ("nothing compared: every d_a counts as 1, sum", total)
        if self.mean and not inf:
            total = total / w_all
            steps.append(("/ Σw = %.6g" % w_all, total))
        num = "%%.%df" % _decimals(list(raw) + [v for _, v in steps])
        rows = [["column", names[0], names[1], "d_a", "w_a"]]
        terms = [head]
        for j in range(n):
            if self.skipped[j] and self.compared != 0.0:
                da = "skipped"
            else:
                da = "%.6g" % d[j] if np.isfinite(d[j]) else "-"
            rows.append([str(self.columns[j]), _fmt_value(x[j]), _fmt_value(y[j]), da,
                         "%.6g" % w[j]])
            terms.append(num % raw[j])
        widths = [max(len(r[c]) for r in rows) for c in range(5)]
        left = ["  ".join(r[c].ljust(widths[c]) for c in range(5)) for r in rows]
        labels = [lab for lab, _ in steps]
        lw = max(len(s) for s in left + labels) + 2
        tw = max(len(t) for t in terms + [num % v for _, v in steps])
        out = [a.ljust(lw) + t.rjust(tw) for a, t in zip(left, terms)]
        out += [lab.ljust(lw) + (num % v).rjust(tw) for lab, v in steps]
        if inf or self.p == 1:
            out.append("distance = %s" % (num % self.distance))
        else:
            out.append("distance = %s^(1/%s) = %s" % (num % total, _fmt_value(float(self.p)),
                                                        num % self.distance))
        return out

    def __str__(self):
        return "\n".join(self._lines())


class FitState:
    """What one :meth:`Metric.fit` produced that queries read: the Plan, the encoded
    training rows, their class codes, and what is derived from those rows on first use
    (the kernels' view of them, the matrix-product filter's embedding).

    ``fit`` builds a new object and replaces the old one whole; ``set_params`` drops it.
    A cache therefore never outlives the rows it was derived from, and an index or
    estimator holding a reference can tell whether the metric was re-fitted under it
    (:meth:`Metric._check_same_fit`).

    Threads share it: ``lock`` makes the kernels' view and the search choice (with its
    KD-tree) be built once, however many threads ask at once; the matrix-product
    filter's entries in ``gemm_cache`` are built by one thread under the cache's own
    lock (its ``"lock"`` entry; the others wait rather than each build a copy), published
    whole, and never changed afterwards."""

    def __init__(self, plan, train, y, unseen=None):
        self.plan, self.train, self.y = plan, train, y
        # codes of the values of the training rows the statistics did not see (rows of
        # sample_weight 0), per nominal column; None when there are none
        self.unseen = unseen
        self._crows = None
        self.gemm_cache = {}
        # (algorithm, KD-tree or None, reason) of Metric._search, made on first use, and
        # the pairs searched by brute force before it was made
        self.search = None
        self.searched = 0
        self.lock = threading.RLock()

    def crows(self):
        """The training rows as the kernels read them (built once)."""
        from .._kernels import CRows
        return built_once(self, "_crows", self.lock, lambda: CRows(self.train))

    def __getstate__(self):
        return {"plan": self.plan, "train": self.train, "y": self.y, "unseen": self.unseen}

    def __setstate__(self, st):
        self.__init__(st["plan"], st["train"], st["y"], st.get("unseen"))


def _check_empty_columns(schema, cont, nom, pol_c, pol_n):
    """A column with no observed training value (a cross-validation fold can lose a rare
    column) is fitted with a warning under the "one" and "ignore" policies, where every
    comparison with a missing value is defined without training statistics; any other
    policy needs them, and the column is refused."""
    ic = inom = 0
    for name, kind in zip(schema.names_, schema.kinds_):
        if kind == CONTINUOUS:
            empty, policy = bool(np.isnan(cont[:, ic]).all()), pol_c
            ic += 1
        else:
            empty, policy = bool((nom[:, inom] < 0).all()), pol_n
            inom += 1
        if not empty:
            continue
        if policy not in (ONE, IGNORE) and not (policy == SYMBOL and kind == CONTINUOUS):
            raise ValueError("column %r has no observed value in the training data; with "
                             "missing=%r it cannot be fitted (use missing 'one' or "
                             "'ignore' for it, or drop the column)" % (name, policy))
        warnings.warn("column %r has no observed value in the training data: every "
                      "training row is missing there (missing=%r)" % (name, policy),
                      UserWarning, stacklevel=_caller_level())


def _kept_labels(y, n, keep):
    """Class labels of all ``n`` rows -> (codes of the rows ``keep``, their classes, codes
    of all rows), the classes being those of the kept rows only; a row whose class no
    kept row has gets code -1.  Labels of every row are validated."""
    codes, classes = encode_labels(y, n)
    present = np.unique(codes[keep])
    remap = np.full(len(classes), -1, dtype=np.int64)
    remap[present] = np.arange(present.size)
    return remap[codes[keep]], [classes[i] for i in present], remap[codes]


def memory_limit():
    """Bytes this process can hold at most: the machine's physical memory, or its
    address-space limit (``RLIMIT_AS``) where lower; None where neither is known."""
    limits = []
    try:
        import os
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY and soft > 0:
            limits.append(soft)
    except (ImportError, ValueError, OSError):
        pass
    return min(limits) if limits else None


def nbytes_text(n):
    """A byte count in words (``"2.3 GB"``), as the kernels' messages write it."""
    from .._kernels.plan import _bytes
    return _bytes(n)


def check_result_size(nbytes, what, remedy):
    """Raise a ``MemoryError`` before a call whose result alone (``nbytes``) exceeds
    :func:`memory_limit`, naming what was asked (``what``), its size and the
    ``remedy``."""
    limit = memory_limit()
    if limit is not None and nbytes > limit:
        raise MemoryError("%s would return %s, more than the %s this process can hold; %s"
                          % (what, nbytes_text(nbytes), nbytes_text(limit), remedy))


class out_of_memory:
    """Context: a ``MemoryError`` raised inside is raised again naming what was asked
    (``what``, with ``size()`` -- a text -- where given) and the ``remedy``, not the size
    of the allocation that failed (which is kept as the cause)."""

    def __init__(self, what, remedy, size=None):
        self.what, self.remedy, self.size = what, remedy, size

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb):
        if kind is not None and issubclass(kind, MemoryError):
            detail = str(exc)
            size = self.size() if self.size is not None else ""
            raise MemoryError("%s ran out of memory%s; %s%s"
                              % (self.what, size, self.remedy,
                                 " (the allocation that failed: %s)" % detail if detail
                                 else "")) from exc
        return False


#: what to do when a pairwise matrix does not fit
PAIRWISE_REMEDY = ("compute it by blocks of X's rows (pairwise(X[a:b], Y)), into out= "
                   "a numpy.memmap on disk, or search the neighbors only (kneighbors, "
                   "radius_neighbors)")
#: ... and when a radius search's lists do not
RADIUS_REMEDY = ("use a smaller radius, a k-NN search, or fewer query rows per call "
                 "(progress= searches by blocks)")


def radius_guard(nq, nr, r, found):
    """A radius search's guard: with ``r = inf`` (every pair) its size is checked before
    (:func:`check_result_size`, ``16 nq nr`` bytes); a ``MemoryError`` names the pairs
    the blocks already done had found (``found``: their index lists)."""
    what = "a radius search of %d query rows against %d rows within r = %g" % (nq, nr, r)
    if math.isinf(r):
        check_result_size(16 * nq * nr, what + " (all %d pairs)" % (nq * nr),
                          RADIUS_REMEDY)

    def size():
        done = len(found)
        pairs = sum(len(i) for i in found)
        if not done:
            return " (the lists of its pairs did not fit)"
        return (" after %d pairs found for its first %d query rows (%s)"
                % (pairs, done, nbytes_text(16 * pairs)))
    return out_of_memory(what, RADIUS_REMEDY, size)


#: what to do when a k-NN search's lists do not fit
KNN_REMEDY = "ask for a smaller k, or search fewer query rows per call"


def knn_guard(nq, k):
    """:func:`check_result_size` of a k-NN search (``16 nq k`` bytes of lists) and the
    :class:`out_of_memory` context around it."""
    what = "a k-NN search of %d query rows with k = %d (%d pairs)" % (nq, k, nq * k)
    check_result_size(16 * nq * k, what, KNN_REMEDY)
    return out_of_memory(what, KNN_REMEDY, lambda: " (its lists take %s)"
                         % nbytes_text(16 * nq * k))


def _tallies(ties):
    """Whether a search's ``ties`` is a tally of the tied rows (``votes.TieTally``), not
    a yes/no for lists of them."""
    return ties is not None and ties is not False and ties is not True


def _check_k(k, n):
    if isinstance(k, bool) or not isinstance(k, numbers.Integral):
        raise TypeError("k must be an int, got %r" % (k,))
    k = int(k)
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    if k > n:
        raise ValueError("k = %d is larger than the %d available training rows" % (k, n))
    return k


def _one_row(x, schema):
    """A single row given as a 1-D sequence, dict or a 1-row table -> 1-row table."""
    if isinstance(x, dict):
        return _dict_row(x, schema)
    mod = type(x).__module__.split(".")[0]
    if mod == "pandas" and type(x).__name__ == "Series":
        return _dict_row(x.to_dict(), schema)
    if isinstance(x, np.ndarray) and x.dtype.names is not None:
        return np.atleast_1d(x)
    if isinstance(x, (list, tuple)) or (isinstance(x, np.ndarray) and x.ndim == 1):
        row = np.empty((1, len(x)), dtype=object)
        row[0, :] = list(x)
        if schema.by_name_:
            return _dict_row(dict(zip(schema.names_, list(x))), schema) \
                if len(x) == len(schema.names_) else row
        return row
    return x


def _dict_row(d, schema):
    """Build a 1-row table matched by name without pandas: a structured object array."""
    missing = [n for n in schema.names_ if n not in d]
    if missing:
        raise ValueError("row is missing the column(s) %r" % missing)
    extra = [n for n in d if n not in schema.names_]
    if extra:
        raise ValueError("row has column(s) %r not seen in fit" % extra)
    dt = np.dtype([(n, object) for n in schema.names_])
    rec = np.empty(1, dtype=dt)
    for n in schema.names_:
        rec[n][0] = d[n]
    return rec


def search_record(algo, why, threads, brute_path=None):
    """The ``search_`` attribute of a Metric or NeighborsIndex after a search:
    ``algorithm`` ("brute", "kd_tree", "ball_tree", "ivf"), ``path`` (the algorithm, or for
    brute force "filter" when the matrix-product filter ran and "direct" for the tile
    kernel alone), ``threads``, and ``why`` in words.  ``brute_path``: (path, reason) of
    the brute force's last call.  A k-NN call adds ``phases`` (seconds per phase of
    :data:`hdist._core.progress.PHASES`, and ``total``)."""
    path = algo
    if algo == "brute":
        path, detail = brute_path or ("direct", "")
        why = why + ("; " + detail if detail else "")
    return {"algorithm": algo, "path": path, "threads": int(threads), "why": why}
