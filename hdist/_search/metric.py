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

import copy

import numpy as np

from .._core import cooccurrence as _cooccurrence, posteriors as _posteriors, progress as _progress
from .._core.plan import Plan
from .._core.presets import METRICS, MetricInfo  # noqa: F401  (re-exported)
from .._core.schema import NA_VALUES, ColumnKindWarning  # noqa: F401  (re-exported)
from .._core.schema import (NotFittedError, Schema, check_sample_weight, encode_labels,
                            n_rows, take_rows)
from .._core.threads import effective_n_jobs
from . import params as _params
from .checks import _check_out, _check_weights, check_k, check_number  # noqa: F401
from .components import attribute_weights, fit_components, value_table
from .explain import Explanation, _one_row, explain_pair  # noqa: F401  (re-exported)
from .fitted import FitState, _check_empty_columns, _kept_labels
from .operations import distances, prepare
from .memory import (PAIRWISE_REMEDY, check_result_size, memory_limit,  # noqa: F401
                     nbytes_text, out_of_memory)
from .rowindex import RowIndex, device_algorithm
from .searchers import LEAF_SIZE, SEARCHERS
from .params import POLICIES, is_mi  # noqa: F401  (re-exported)
from .scoring import balanced_accuracy  # noqa: F401  (re-exported)

#: shown as names of this module, which hdist.metrics publishes (help, repr, pickles)
Explanation.__module__ = balanced_accuracy.__module__ = __name__

#: implementations of the kinds beyond "diff", "overlap" and "vdm" (hdist._core.presets.TABLE):
#: continuous kind -> (factory(metric, j, name, x, policy, y, C) -> (component, fitted
#: estimator), needs class labels)
_CONT_EXTRA = {kind: (f, True) for kind, f in _posteriors.FACTORIES.items()}
#: nominal kind -> factory(metric, j, name, codes, V, policy, nom, schema, cont) ->
#: (component, value table)
_NOM_EXTRA = dict(_cooccurrence.FACTORIES)
#: preset name -> callable(metric) validating its own parameters; run at the start of
#: ``fit`` so that a bad value is refused even when no column would use it
PARAM_CHECKS = {**_posteriors.CHECKS, **_cooccurrence.CHECKS}


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

    # -- fit ------------------------------------------------------------------
    def check_params(self):
        """Validate the parameter values without data (``fit`` calls it first); raises
        a TypeError / ValueError naming the parameter.  Values that can only be
        checked against the columns (per-column ``weights``) are checked by ``fit``."""
        return _params.check_params(self, PARAM_CHECKS.get(self.name))

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

    def fit_summary(self, X, y, W):
        """Fit from a summary table instead of training rows (``hdist.dask.fit_metric``).

        Column ``j``'s statistics see row ``i`` with weight ``W[i, j]`` (rows that hold
        other columns' values have weight 0 there), so per-column value counts stand for
        the rows they count.  The rows are not kept as training rows.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n, m)
            The summary table: the values the weights count.
        y : array-like of shape (n,) or None
            Class labels of the rows (None: no labels).
        W : array-like of shape (n, m)
            Finite, non-negative per-column weights of the rows.

        Returns
        -------
        Metric
            ``self``, fitted.

        Raises
        ------
        ValueError
            The preset compares pairs of columns jointly (co-occurrence statistics, which
            per-column counts cannot give), or ``W`` is not a finite, non-negative
            ``[rows, columns]`` array.
        """
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
        ``keep`` (None: all rows), or per-column weights ``[n, m]`` (``fit_summary``)."""
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
        needs_y = info.needs_y or is_mi(self._param("weights")) or \
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

        self.delta_ = {}
        self.vdm_probabilities_ = {}
        self.value_tables_ = {}
        step = None if report is None else (lambda j: report(m_attr + j, 2 * m_attr))
        components, cont_pos, nom_pos = fit_components(
            self, (_CONT_EXTRA, _NOM_EXTRA), schema, cont, nom, pol_c, pol_n, norm, trim,
            ycodes, C, sw, step)
        weights = attribute_weights(self, schema, cont, nom, ycodes, C, sw)
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

    # -- use ------------------------------------------------------------------------
    def check_fitted(self):
        """Refuse a metric that is not fitted.

        Raises
        ------
        NotFittedError
            ``fit`` (or ``fit_summary``) has not run, or ``set_params`` reset the fit.
        """
        if not hasattr(self, "plan_"):
            raise NotFittedError("this %s metric is not fitted yet; call fit(X, y) first"
                                 % self.name) from None

    def without_training_rows(self):
        """A copy of this fitted metric without its training rows.

        The copy shares the Plan and every statistic (what encoding and the distances
        need) and holds no training row, so it is cheap to send to other processes; it
        measures ``pairwise`` and encodes as this metric does.  This metric is not
        changed.

        Returns
        -------
        Metric
            The copy; its ``train_`` has no row (``n_train_`` is this metric's).

        Raises
        ------
        NotFittedError
            The metric is not fitted.
        """
        self.check_fitted()
        state = self._fitted()
        slim = copy.copy(self)
        slim.__dict__ = dict(self.__dict__)
        slim.__dict__["_fit"] = FitState(state.plan, state.train.take(np.zeros(0, np.intp)),
                                         state.y[:0] if state.y is not None else None)
        return slim

    def encode(self, X, unseen=None, what="X"):
        """Rows of ``X`` encoded for the kernels (:class:`hdist._core.plan.Rows`)."""
        self.check_fitted()
        with _progress.phase("encode"):
            cont, nom = self.schema_.encode(X, unseen=unseen, what=what)
            return self.plan_.encode(cont, nom)

    def pairwise(self, X, Y=None, *, out=None, n_jobs=None, reduced=False, progress=None,
                 device="cpu"):
        """Distance matrix ``D[i, j] = d(X_i, Y_j)`` (``Y=None``: X against itself, each
        pair computed once).  Returns true distances, or the reduced distance
        ``Σ w d^p`` (no root, no mean) when ``reduced=True``.  ``progress`` as for
        :meth:`kneighbors` (rows of ``X``; with ``Y=None`` the symmetric matrix is then
        computed by blocks of rows, each pair still once).  ``device``: ``"cpu"``, or
        ``"cuda"`` to compute the matrix on a CUDA GPU (the rows of ``Y`` uploaded, those
        of ``X`` streamed; the CPU's matrix bit for bit, docs/guide/gpu.md)."""
        self.check_fitted()
        on_device = device_algorithm("auto", device) != "auto"
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
            _check_out(out, shape)
        report = _progress.reporter(progress, A.n, "pairwise")
        if on_device:
            return self._pairwise_on(device, A, B, Y is None, out, reduced, report)
        if report is None:
            return distances(self, A, None if Y is None else B, out=out, threads=threads,
                             reduced=reduced)
        pB = None if Y is None else prepare(B)
        for a, b in _progress.blocks(A.n, report):
            part = A.take(np.arange(a, b))
            if Y is None:       # the upper triangle of rows a..b, mirrored below
                blk = distances(self, part, A.take(np.arange(a, A.n)), threads=threads,
                                reduced=reduced)
                for t in range(b - a):
                    out[a + t, a + t:] = blk[t, t:]
                    out[a + t:, a + t] = blk[t, t:]
            else:
                distances(self, part, pB, out=out[a:b], threads=threads, reduced=reduced)
        return out

    def _pairwise_on(self, device, A, B, symmetric, out, reduced, report):
        """``pairwise`` on ``device`` (not the CPU): ``B`` uploaded to the device's
        searcher, ``A`` streamed (by blocks of rows when ``report``); with ``symmetric``
        (``B`` is ``A``) the lower triangle is the upper one's mirror, as the CPU's
        symmetric matrix is."""
        cls = SEARCHERS[device_algorithm("auto", device)]
        reason = cls.refusal(self.plan_, B, self.schema_.names_)
        if reason is not None:
            raise ValueError("device=%r cannot compute this metric exactly: %s"
                             % (device, reason))
        searcher = cls(self.plan_, B)
        searcher.build()
        if report is None:
            searcher.pairwise(A, out=out, reduced=reduced)
        else:
            for a, b in _progress.blocks(A.n, report):
                searcher.pairwise(A.take(np.arange(a, b)), out=out[a:b], reduced=reduced)
        if symmetric:
            for i in range(1, A.n):
                out[i, :i] = out[:i, i]
        return out

    def _search_index(self, device):
        """The index over the training rows that the searches on ``device`` run on: the
        fitted state's own for the CPU; for another device one over that device's
        searcher, made once per fit (its rows uploaded once) and kept with the fit."""
        state = self._fitted()
        if device_algorithm("auto", device) == "auto":
            return state._search_index()
        with state.lock:
            indexes = state.__dict__.setdefault("_device_indexes", {})
            index = indexes.get(device)
            if index is None:
                index = RowIndex("auto", LEAF_SIZE, device)
                index._index_rows(state.plan, state.train, self.schema_.names_,
                                  crows=state.crows())
                indexes[device] = index
        return index

    def _queries(self, Q):
        if Q is None:
            return self.train_
        unseen = self._fitted().unseen
        return self.encode(Q, None if unseen is None else [dict(d) for d in unseen], "Q")

    def kneighbors(self, Q=None, k=5, *, exclude_self=False, return_distance=True,
                   n_jobs=None, progress=None, device="cpu"):
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
        seconds per phase (:func:`hdist._search.rowindex.search_record`;
        docs/guide/threads.md).  ``device``: ``"cpu"``, or ``"cuda"`` to search on a CUDA
        GPU by brute force (the training rows uploaded once per fit; the CPU's results bit
        for bit, docs/guide/gpu.md)."""
        d, i = self._kneighbors(Q, k, exclude_self, n_jobs, progress, device=device)
        return (d, i) if return_distance else i

    def _kneighbors(self, Q, k, exclude_self=False, n_jobs=None, progress=None, ties=False,
                    device="cpu"):
        """``kneighbors``'s ``(dist, ind)``; with ``ties=True`` each list also holds, after
        its k-th place, every other training row at the k-th distance (in index order, at
        that distance; shorter lists padded with ``inf`` and index 0), found by the same
        search.  Those lists cost 8 bytes per tied row of each query during the search
        and 16 bytes per column of the widest one after it: 10^6 identical training rows
        make that 24 GB for 1 000 queries, so a ``MemoryError`` names the size where it
        does not fit.  ``ties`` a :class:`hdist._search.votes.TieTally`: the lists are
        the k nearest and the tally counts the tied rows beyond them (the votes of
        ``ties="include"``, memory independent of the ties).  The phases of the call are
        timed into ``search_["phases"]``.  ``device`` as for :meth:`kneighbors`."""
        with _progress.timed_call() as phases:
            out = self._kneighbors_timed(Q, k, exclude_self, n_jobs, progress, ties, device)
        self.search_["phases"] = phases
        return out

    def _kneighbors_timed(self, Q, k, exclude_self, n_jobs, progress, ties, device="cpu"):
        self.check_fitted()
        device_algorithm("auto", device)
        rows = self._queries(Q)
        k = check_k(k, self.n_train_ - (1 if exclude_self else 0))
        if exclude_self and rows.n != self.n_train_:
            raise ValueError("exclude_self=True needs the training rows as queries (%d rows),"
                             " got %d" % (self.n_train_, rows.n))
        index = self._search_index(device)
        d, i, _, self.search_ = index._search_knn(rows, k, bool(exclude_self),
                                                  effective_n_jobs(n_jobs), progress, ties)
        return d, i

    def radius_neighbors(self, Q=None, r=1.0, *, exclude_self=False, return_distance=True,
                         n_jobs=None, progress=None, device="cpu"):
        """Training rows within distance ``r`` (inclusive) of each query row, sorted by
        (distance, index).  Returns object arrays of arrays, like scikit-learn.
        ``progress`` and ``device`` as for :meth:`kneighbors`."""
        self.check_fitted()
        device_algorithm("auto", device)
        r = check_number("r", r, lo=0.0, lo_open=False, allow_inf=True)
        rows = self._queries(Q)
        if exclude_self and rows.n != self.n_train_:
            raise ValueError("exclude_self=True needs the training rows as queries")
        index = self._search_index(device)
        dl, il, _, self.search_ = index._search_radius(rows, r, bool(exclude_self),
                                                       effective_n_jobs(n_jobs), progress)
        D = np.empty(len(dl), dtype=object)
        I = np.empty(len(il), dtype=object)
        D[:] = dl
        I[:] = il
        return (D, I) if return_distance else I

    def value_distances(self, attribute):
        """The learned value x value table ``d_a(v, w)`` of a nominal attribute.

        Unweighted component distances between the values seen in ``fit`` (with the
        "symbol" policy, the missing symbol is the last value, labelled ``"<missing>"``).
        Returns a pandas DataFrame when pandas is installed, else ``(labels, table)``."""
        self.check_fitted()
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
        T = value_table(comp, V)
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
        return explain_pair(self, x, y)
