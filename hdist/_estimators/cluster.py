"""Clustering on any hdist metric: k-modes, k-prototypes and k-medoids.

The metric is fitted once on the data (its statistics, e.g. the HDS value tables, come
from the rows being clustered); every distance is then computed by the compiled kernels
over the fitted Plan, from encoded rows, so each pair's distance is the same whatever
``n_jobs`` is and every result depends only on ``random_state``.

- :class:`KModes` (Huang 1998) clusters nominal data around *modes*.  Zhao, Liu
  & Wang 2016) runs it with three dissimilarities: the simple matching distance
  (``"smd"``), Ahmad & Dey's ``"add"`` and the Hellinger ``"hds"``; any nominal hdist
  metric works.
- :class:`KPrototypes` (Huang 1997/1998) clusters mixed data: continuous means and nominal
  modes, compared under any hdist metric (Huang's cost is ``heom`` with
  ``normalization="none"``, ``p = 2`` and the nominal weights set to his ``γ``).
- :class:`KMedoids` clusters around data rows (medoids), so it needs nothing but
  distances: any metric, class-based ones too (``fit(X, y)``).  ``method="fasterpam"``
  (Schubert & Rousseeuw 2021, eager swaps) or ``"alternate"`` (Park & Jun 2009); beyond
  ``max_exact`` rows it works on samples and keeps the medoids that are best on all rows
  (CLARA, Kaufman & Rousseeuw 1990).

Centers of k-modes / k-prototypes are not data rows: they are kept as encoded values
(means, value codes), turned into rows of the fitted Plan and compared with the data by
the same kernels; ``cluster_centers_`` decodes them back to the original values.

References
----------
- Z. Huang, "Extensions to the k-Means Algorithm for Clustering Large Data Sets with
  Categorical Values", Data Mining and Knowledge Discovery 2 (1998) 283-304.
- L. Zhao, J. Liu, X. Wang, "Hellinger Distance Based Similarity Analysis for Categorical
  Variables in Mixture Dataset", Computer Science 43(6) (2016).
- E. Schubert, P. J. Rousseeuw, "Fast and eager k-medoids clustering: O(k) runtime
  improvement of the PAM, CLARA, and CLARANS algorithms", Information Systems 101 (2021).
- H.-S. Park, C.-H. Jun, "A simple and fast algorithm for K-medoids clustering", Expert
  Systems with Applications 36 (2009) 3336-3341.
- D. Arthur, S. Vassilvitskii, "k-means++: the advantages of careful seeding", SODA 2007.
"""
from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from .._core import progress as _progress
from .._core.config import extend_doc
from .._core.plan import SYMBOL
from .._core.schema import CONTINUOUS, MixedTableTags, check_sample_weight
from .._core.threads import effective_n_jobs
from .._search import operations as _ops
from .._search.metric import Metric
from .._search.resolve import resolve_metric

try:  # with scikit-learn installed, the estimators are scikit-learn estimators
    from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.metadata_routing import UNUSED
    from .neighbors import _check_table
    _SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    _SKLEARN = False

    class NotFittedError(ValueError, AttributeError):
        """Raised when a clustering estimator is used before ``fit``."""

__all__ = ["KModes", "KPrototypes", "KMedoids", "NotFittedError"]


# -- small validators -----------------------------------------------------------------
def _check_int(name, v, lo):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError("%s must be an int, got %r" % (name, v))
    if v < lo:
        raise ValueError("%s must be >= %d, got %d" % (name, lo, v))
    return int(v)


def _base_rng(random_state):
    """A numpy Generator from None, an int, a SeedSequence, a Generator or a RandomState."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2 ** 31 - 1))
    if random_state is None or isinstance(random_state, (np.random.Generator,
                                                         np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (bool, np.bool_)) or \
            not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise TypeError("random_state must be None, a non-negative int, a numpy Generator "
                        "or a RandomState, got %r" % (random_state,))
    return np.random.default_rng(int(random_state))


def _is_pandas_frame(X):
    return type(X).__module__.split(".")[0] == "pandas" and type(X).__name__ == "DataFrame"


def _draw(p, rng):
    """An index drawn with probability proportional to ``p`` (>= 0); -1 when all are 0."""
    total = p.sum()
    if not (total > 0 and np.isfinite(total)):
        return -1
    i = min(int(np.searchsorted(np.cumsum(p), rng.random() * total, side="right")),
            p.size - 1)
    while p[i] == 0.0:   # rounding at the end of the cumulative sum
        i -= 1
    return i


def _weighted_seeds(n, k, rng, dist_from, weight=None):
    """``k`` distinct row indices: the first uniform, each next one drawn with probability
    proportional to its distance to the nearest row drawn so far (``dist_from(i)``: the
    distances of row ``i`` to every row); uniform among the rest when all are at 0.  With
    row weights, every probability is also proportional to the row's weight (a row of
    weight ``m`` is drawn as one of ``m`` copies would be; weight 0 is never drawn)."""
    chosen = [int(rng.integers(n)) if weight is None else _draw(weight, rng)]
    dmin = dist_from(chosen[0])
    for _ in range(1, k):
        p = dmin.copy() if weight is None else dmin * weight
        p[chosen] = 0.0
        nxt = _draw(p, rng)
        if nxt < 0:
            free = np.setdiff1d(np.arange(n) if weight is None else np.flatnonzero(weight > 0),
                                chosen)
            nxt = int(free[rng.integers(free.size)])
        chosen.append(nxt)
        dmin = np.minimum(dmin, dist_from(nxt))
    return np.array(chosen, dtype=np.intp)


def _first_max(score):
    """Position of the largest entry of ``score`` (ties: the smallest position)."""
    return int(np.flatnonzero(score == score.max())[0])


def cao_seeds(nom, k, to_rows, weight=None):
    """Cao, Liang & Bai's (2009) initial modes: ``k`` data rows chosen by density and
    distance, deterministically.

    The density of row ``i`` is the average frequency of its values,
    ``Dens(x_i) = Σ_a |{j : x_ja = x_ia}| / (n m)`` (``nom``: ``[n, m]`` schema codes, a
    missing value, code -1, matching nothing; with row weights the counts and ``n`` are
    sums of weights).  The first mode is the densest row; each next one the row that
    maximizes ``min_c d(x_i, c) · Dens(x_i)`` over the modes ``c`` chosen so far
    (``to_rows(idx)``: distances ``[len(idx), n]`` of rows ``idx`` to every row).  Ties go
    to the smaller row index; chosen rows and rows of weight 0 are never chosen again."""
    n, m = nom.shape
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    dens = np.zeros(n)
    for a in range(m):
        codes = nom[:, a]
        ok = codes >= 0
        freq = np.bincount(codes[ok], weights=w[ok])
        dens[ok] += freq[codes[ok]]
    dens /= w.sum() * max(m, 1)
    allowed = w > 0
    chosen = [_first_max(np.where(allowed, dens, -np.inf))]
    dmin = to_rows([chosen[0]])[0]
    for _ in range(1, k):
        score = np.where(allowed, dmin * dens, -np.inf)
        score[chosen] = -np.inf
        nxt = _first_max(score)
        chosen.append(nxt)
        dmin = np.minimum(dmin, to_rows([nxt])[0])
    return np.array(chosen, dtype=np.intp)


def huang_modes(nom, n_values, k, rng, weight=None):
    """Steps 1 and 2 of Huang's (1998) initialization: ``k`` synthetic modes whose value
    of each attribute is drawn among the attribute's observed values with probability
    proportional to its frequency (weighted by the row weights), so that the frequent
    categories are spread over the modes.  ``n_values``: the number of learned values of
    each column.  Returns schema codes ``[k, m]`` (-1 for a column with no observed
    value)."""
    n, m = nom.shape
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
    out = np.full((k, m), -1, dtype=np.int64)
    for a in range(m):
        codes = nom[:, a]
        ok = (codes >= 0) & (w > 0)
        freq = np.bincount(codes[ok], weights=w[ok], minlength=n_values[a])
        if freq.sum() > 0:
            out[:, a] = rng.choice(freq.size, size=k, p=freq / freq.sum())
    return out


def huang_seeds(nom, categories, k, rng, to_modes, weight=None):
    """Huang's (1998) initialization: synthetic modes (:func:`huang_modes`), then step 3:
    mode 1, 2, ... in turn is replaced by the data row nearest to it (``to_modes(codes)``:
    distances ``[k, n]`` of the modes to every row; ties: the smaller row index) among the
    rows not chosen yet whose values differ from every row chosen so far ("Q_l ≠ Q_t"),
    or, when every such row is a duplicate of a chosen one, the nearest row not chosen.
    Rows of weight 0 are never chosen."""
    modes = huang_modes(nom, [len(c) for c in categories], k, rng, weight)
    D = to_modes(modes)
    n = nom.shape[0]
    allowed = np.ones(n, dtype=bool) if weight is None else np.asarray(weight) > 0
    chosen = []
    same = np.zeros(n, dtype=bool)        # rows equal to a chosen row
    for c in range(k):
        free = allowed.copy()
        free[chosen] = False
        cand = free & ~same
        if not cand.any():
            cand = free
        i = _first_max(np.where(cand, -D[c], -np.inf))
        chosen.append(i)
        same |= (nom == nom[i]).all(axis=1)
    return np.array(chosen, dtype=np.intp)


class _Params:
    """scikit-learn's parameter protocol, for when scikit-learn is not installed."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params):
        names = self._param_names()
        for k, v in params.items():
            if k not in names:
                raise ValueError("Invalid parameter %r for %s; it has %s"
                                 % (k, type(self).__name__, names))
            setattr(self, k, v)
        return self

    def __repr__(self):
        args = ", ".join("%s=%r" % kv for kv in self.get_params().items())
        return "%s(%s)" % (type(self).__name__, args)


_BASES = (MixedTableTags, ClusterMixin, TransformerMixin, BaseEstimator) if _SKLEARN \
    else (_Params,)


class _ClusterBase(*_BASES):
    """Input checks, the fitted metric and decoding shared by the estimators."""

    _default_metric = "heom"
    _categorical_input = True
    if _SKLEARN:
        # ``progress`` is not sample metadata (see hdist.neighbors): never routed
        __metadata_request__fit = {"progress": UNUSED}

    def _check_X(self, X, reset):
        """With scikit-learn: refuse what is not a 2-D table with its messages and check
        the number (and names) of columns against ``fit`` (without it, the schema does
        both).  Returns the number of rows."""
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2 and shape[1] == 0:
            raise ValueError("Found array with 0 feature(s) (shape=(%d, 0)) while a "
                             "minimum of 1 is required." % shape[0])
        if _SKLEARN:
            _check_table(X)
            self._check_features(X, reset)
        if shape is not None:
            return shape[0]
        return len(X) if hasattr(X, "__len__") else len(np.asarray(X, dtype=object))

    # -- the metric --------------------------------------------------------------------
    def _metric_defaults(self):
        """Parameters a metric given by name gets unless ``metric_params`` sets them."""
        return {}

    def _new_metric(self):
        """``(metric, fitted)``: ``metric`` (the class's default when None) with
        ``metric_params`` by :func:`~hdist._search.resolve.resolve_metric` -- over
        :meth:`_metric_defaults` for a name, over a given unfitted Metric's parameters
        (copied); a fitted Metric is used as it is."""
        metric = self._default_metric if self.metric is None else self.metric
        defaults = self._metric_defaults() if isinstance(metric, str) else None
        metric = resolve_metric(metric, self.metric_params, defaults=defaults)
        return metric, hasattr(metric, "plan_")

    def _prepare(self, X, y, sample_weight=None):
        """Fit (or reuse) the metric; encode X.  Sets ``metric_`` and returns the data
        (with ``sample_weight``, validated, as ``data.w``; the metric's statistics are
        fitted with it)."""
        n = self._check_X(X, reset=True)
        if n < 2:
            raise ValueError("%s needs at least 2 rows, got n_samples = %d"
                             % (type(self).__name__, n))
        sw = check_sample_weight(sample_weight, n)
        metric, prefit = self._new_metric()
        if prefit:
            if y is not None:
                raise ValueError("y is only used to fit the metric, but the metric given is "
                                 "already fitted")
            cont, nom = metric.schema_.encode(X)
            rows = metric.plan_.encode(cont, nom)
        else:
            metric.fit(X, y, sample_weight=sw)
            rows = metric.train_
            cont, nom = metric.schema_.encode(X)
        self.metric_ = metric
        self._fit_state = metric._fitted()
        self._pandas_out = _is_pandas_frame(X)
        self.n_features_in_ = metric.n_features_in_
        data = _Data(metric, rows, cont, nom, effective_n_jobs(self.n_jobs))
        data.w = sw
        return data

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            raise NotFittedError("This %s instance is not fitted yet; call fit(X) first"
                                 % type(self).__name__)

    def _decode(self, cont_c, nom_c):
        """Encoded centers -> a table of original values (DataFrame for pandas input)."""
        schema = self.metric_.schema_
        out = schema.decode(cont_c, nom_c)
        if self._pandas_out:
            import pandas as pd
            return pd.DataFrame(out, columns=list(schema.names_))
        return out

    def _query_rows(self, X):
        self._check_fitted()
        self.metric_._check_same_fit(self._fit_state, type(self).__name__)
        self._check_X(X, reset=False)
        return self.metric_.encode(X, what="X")

    def fit_predict(self, X, y=None, sample_weight=None, *, progress=None):
        """Fit and return ``labels_`` (arguments as for ``fit``)."""
        return self.fit(X, y, sample_weight, progress=progress).labels_

    def predict(self, X):
        """The nearest center of each row of ``X`` (ties: the smaller cluster index)."""
        return np.argmin(self._to_centers(X, True), axis=1)

    def transform(self, X):
        """True distances ``[n, n_clusters]`` from each row of ``X`` to each center."""
        return self._to_centers(X, False)

    def _to_centers(self, X, reduced):
        rows = self._query_rows(X)
        C = self._center_rows
        return _ops.distances(self.metric_, C, rows, threads=effective_n_jobs(self.n_jobs),
                              reduced=reduced).T


class _Data:
    """The fitted metric and the data rows in both encodings."""

    def __init__(self, metric, rows, cont, nom, threads):
        self.metric, self.plan, self.rows = metric, metric.plan_, rows
        self.prepared = _ops.prepare(rows)
        self.cont, self.nom, self.threads = cont, nom, threads
        self.n = rows.n

    def to(self, center_rows):
        """Reduced distances ``[k, n]`` of each center row to every data row."""
        return _ops.distances(self.metric, center_rows, self.prepared, threads=self.threads,
                              reduced=True)

    def true_from(self, idx_rows):
        """True distances ``[len, n]`` from some encoded rows to every data row."""
        return _ops.distances(self.metric, idx_rows, self.prepared, threads=self.threads)


# -- k-modes / k-prototypes ----------------------------------------------------------------
class _NominalCenters:
    """Per nominal attribute: the reduced term between each data value class (learned
    values, then one bucket for unseen ones) and each candidate center value, i.e. what the
    kernel adds to ``Σ w d^p`` for that pair (``[V + 1, V]``)."""

    def __init__(self, plan, schema):
        self.items = []   # (position in nom, component, R)
        inom = 0
        for a, kind in enumerate(schema.kinds_):
            if kind == CONTINUOUS:
                continue
            comp = plan.components[a]
            self.items.append((inom, comp, self._terms(plan, a, comp)))
            inom += 1

    @staticmethod
    def _terms(plan, a, comp):
        V = comp.n_values
        if comp.block == "o":
            k = int(np.flatnonzero(plan.o_attr == a)[0])
            R = np.full((V + 1, V), plan.o_w[k])
            R[np.arange(V), np.arange(V)] = 0.0
            return R
        if comp.block == "t":
            k = int(np.flatnonzero(plan.t_attr == a)[0])
            off = plan.t_off[k]
            tab = plan.t_tab[off:off + (V + 1) ** 2].reshape(V + 1, V + 1)
            R = tab[:, :V].copy()
            R[np.arange(V), np.arange(V)] = 0.0
            return R
        k = int(np.flatnonzero(plan.e_attr == a)[0])
        E = np.asarray(comp.encode(np.arange(V + 1)), dtype=np.float64)
        diff = E[:, None, :] - E[None, :V, :]
        if comp.q == 2:
            norm = np.sqrt(np.einsum("vcd,vcd->vc", diff, diff))
        else:
            norm = np.abs(diff).sum(axis=2)
        return plan.e_rw[k] * (norm if plan.pmode in (0, 1) else np.power(norm, plan.p))


class _CenterBase(_ClusterBase):
    #: the names ``init`` accepts
    _inits = ("k-means++", "random")

    def __init__(self, n_clusters=8, *, metric=None, metric_params=None, init="k-means++",
                 n_init="auto", max_iter=100, nominal_center="cost", random_state=None,
                 n_jobs=None):
        self.n_clusters = n_clusters
        self.metric = metric
        self.metric_params = metric_params
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.nominal_center = nominal_center
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _check_data(self, data):
        """Hook: KModes refuses continuous columns."""

    def fit(self, X, y=None, sample_weight=None, *, progress=None):
        """Cluster the rows of ``X``.  ``y`` is used only to fit a metric that needs class
        labels (it plays no other part).  ``sample_weight`` ``[n]`` (non-negative): a row
        of weight ``m`` counts as ``m`` copies of it in the metric's statistics, the
        centers (weighted means and weighted nominal centers), the cost ``inertia_`` and
        the seeding (drawn with probability proportional to the weight, times the
        distance for k-means++); rows of weight 0 are assigned a cluster but move no
        center.  ``progress``: ``True`` (a tqdm bar) or a
        callable receiving ``(done, total)`` iterations, ``total = n_init * max_iter``
        (a run that converges early skips to the end of its share), and a final
        ``(total, total)``.  Returns self."""
        k = _check_int("n_clusters", self.n_clusters, 1)
        explicit = not isinstance(self.init, str)
        if not explicit and self.init not in self._inits:
            raise ValueError("init must be %s or a table of n_clusters rows, got %r"
                             % (", ".join(repr(i) for i in self._inits), self.init))
        if isinstance(self.n_init, str) and self.n_init == "auto":
            n_init = 1 if explicit or self.init == "cao" else 10
        else:
            n_init = _check_int("n_init", self.n_init, 1)
        max_iter = _check_int("max_iter", self.max_iter, 1)
        if self.nominal_center not in ("cost", "mode"):
            raise ValueError("nominal_center must be 'cost' or 'mode', got %r"
                             % (self.nominal_center,))
        if explicit and n_init != 1:
            raise ValueError("init given as a table of centers needs n_init=1, got %d"
                             % n_init)
        base = _base_rng(self.random_state)
        data = self._prepare(X, y, sample_weight)
        self._check_data(data)
        if k > data.n:
            raise ValueError("n_clusters=%d is larger than the %d rows of X" % (k, data.n))
        if data.w is not None and k > np.count_nonzero(data.w):
            raise ValueError("n_clusters=%d is larger than the %d rows of X with a positive "
                             "sample_weight" % (k, np.count_nonzero(data.w)))
        first = None
        if explicit:
            first = self.metric_.encode(self.init, what="init")
            if first.n != k:
                raise ValueError("init has %d rows; n_clusters is %d" % (first.n, k))
        eng = _CenterEngine(data, k, self.nominal_center)
        seeds = base.integers(0, 2 ** 63 - 1, size=n_init)
        best = None
        report = _progress.reporter(progress, n_init * max_iter, type(self).__name__)
        for r, s in enumerate(seeds):
            rng = np.random.default_rng(int(s))
            start = first if explicit else data.rows.take(eng.seed_rows(rng, self.init))
            tick = None if report is None else \
                (lambda it, r=r: report(r * max_iter + it, n_init * max_iter))
            res = eng.run(start, max_iter, tick)
            if report is not None:
                report((r + 1) * max_iter, n_init * max_iter)
            if best is None or res[0] < best[0]:
                best = res
        inertia, labels, cont_c, nom_c, n_iter = best
        self.inertia_ = float(inertia)
        self.labels_ = labels
        self.n_iter_ = n_iter
        self._cont_c, self._nom_c = cont_c, nom_c
        self._center_rows = data.plan.encode(cont_c, nom_c)
        self.cluster_centers_ = self._decode(cont_c, nom_c)
        return self


class _CenterEngine:
    """One k-modes / k-prototypes run: assignment by the kernels, center update per
    attribute (continuous: mean; nominal: the value with the least total term over the
    cluster, or the most frequent one)."""

    def __init__(self, data, k, nominal_center):
        self.d, self.k, self.how = data, k, nominal_center
        self.w = getattr(data, "w", None)       # row weights (None: every weight 1)
        self.nominal = _NominalCenters(data.plan, data.metric.schema_)
        everyone = np.zeros(data.n, dtype=np.intp)
        # fallback for a cluster where an attribute is missing on every row
        self.fallback = self._update(everyone, 1, None)

    def seed_rows(self, rng, how):
        """Indices of the k initial rows: uniform without replacement, k-means++
        (probability proportional to the reduced distance to the nearest row drawn),
        Huang's or Cao's initialization."""
        if how == "cao":
            return cao_seeds(self.d.nom, self.k, self._to_rows, self.w)
        if how == "huang":
            return huang_seeds(self.d.nom, self.d.metric.schema_.nominal_categories, self.k,
                               rng, self._to_modes, self.w)
        if self.w is not None:
            return self._seed_weighted(rng, how)
        if how == "random":
            return np.sort(rng.choice(self.d.n, size=self.k, replace=False))
        return _weighted_seeds(self.d.n, self.k, rng,
                               lambda i: self.d.to(self.d.rows.take([i]))[0])

    def _seed_weighted(self, rng, how):
        """Seeding under row weights: draws in proportion to the weight ("random",
        without replacement, and k-means++'s first row), then to weight x reduced
        distance to the nearest row drawn (k-means++); rows of weight 0 are never drawn."""
        w = self.w
        chosen = []
        dmin = None
        for _ in range(self.k):
            p = w.copy() if (how == "random" or dmin is None) else w * dmin
            p[chosen] = 0.0
            total = p.sum()
            if not (total > 0 and np.isfinite(total)):    # every distance 0: by weight
                p = w.copy()
                p[chosen] = 0.0
                total = p.sum()
            cum = np.cumsum(p)
            nxt = min(int(np.searchsorted(cum, rng.random() * total, side="right")),
                      self.d.n - 1)
            while p[nxt] == 0.0:     # rounding at the end of the cumulative sum
                nxt -= 1
            chosen.append(nxt)
            if how != "random":
                d = self.d.to(self.d.rows.take([nxt]))[0]
                dmin = d if dmin is None else np.minimum(dmin, d)
        return np.sort(chosen) if how == "random" else np.array(chosen, dtype=np.intp)

    def _to_rows(self, idx):
        """Reduced distances ``[len(idx), n]`` from data rows ``idx`` to every row."""
        return self.d.to(self.d.rows.take(np.asarray(idx, dtype=np.intp)))

    def _to_modes(self, nom_codes):
        """Reduced distances ``[len, n]`` from centers given by their nominal schema
        codes to every row (KModes: no continuous column)."""
        cont = np.empty((nom_codes.shape[0], self.d.cont.shape[1]))
        return self.d.to(self.d.plan.encode(cont, nom_codes))

    def assign(self, center_rows):
        D = self.d.to(center_rows)
        labels = np.argmin(D, axis=0)
        return labels, D[labels, np.arange(self.d.n)]

    def _update(self, labels, k, fallback):
        d = self.d
        plan = d.plan
        w = self.w
        mc = d.cont.shape[1]
        cont_c = np.empty((k, mc))
        for c in range(mc):
            x = d.cont[:, c]
            ok = ~np.isnan(x)
            if w is not None:
                ok &= w > 0
            s = np.bincount(labels[ok], weights=x[ok] if w is None else x[ok] * w[ok],
                            minlength=k)
            cnt = np.bincount(labels[ok], weights=None if w is None else w[ok], minlength=k)
            with np.errstate(invalid="ignore", divide="ignore"):
                cont_c[:, c] = s / cnt
            if fallback is not None:
                cont_c[cnt == 0, c] = fallback[0][0, c]
        nom_c = np.empty((k, d.nom.shape[1]), dtype=np.int64)
        for pos, comp, R in self.nominal.items:
            V = comp.n_values
            codes = plan.nominal_codes(comp, d.nom[:, pos])
            ok = codes >= 0
            if w is not None:
                ok &= w > 0
            bucket = np.minimum(codes[ok], V)
            N = np.bincount(labels[ok] * (V + 1) + bucket,
                            weights=None if w is None else w[ok], minlength=k * (V + 1))
            N = N.reshape(k, V + 1).astype(np.float64)
            if self.how == "mode":
                best = np.argmax(N[:, :V], axis=1)
                empty = N[:, :V].sum(axis=1) == 0
            else:
                best = np.argmin(np.einsum("kv,vc->kc", N, R), axis=1)
                empty = N.sum(axis=1) == 0
            if fallback is not None:
                best[empty] = fallback[2][0, pos]
            nom_c[:, pos] = best
        # kernel codes -> schema codes (the "symbol" value is the schema's missing code)
        schema_codes = nom_c.copy()
        for pos, comp, R in self.nominal.items:
            if comp.policy == SYMBOL:
                col = schema_codes[:, pos]
                col[col == comp.n_values - 1] = -1
        return cont_c, schema_codes, nom_c

    def _fill_empty(self, labels, dmin):
        """Give every empty cluster the row farthest from its center (ties: the smaller
        row index) taken from a cluster that keeps at least one row.  Under row weights
        only rows of positive weight count (a cluster of weight-0 rows is empty)."""
        pos = None if self.w is None else self.w > 0
        sizes = np.bincount(labels if pos is None else labels[pos], minlength=self.k)
        for c in np.flatnonzero(sizes == 0):
            movable = sizes[labels] >= 2
            if pos is not None:
                movable &= pos
            if not movable.any():
                break
            cand = np.where(movable, dmin, -np.inf)
            i = int(np.argmax(cand))
            sizes[labels[i]] -= 1
            labels[i] = c
            sizes[c] = 1
            dmin[i] = 0.0
        return labels

    def run(self, start_rows, max_iter, tick=None):
        labels, dmin = self.assign(start_rows)
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            labels = self._fill_empty(labels, dmin)
            cont_c, nom_c, _ = self._update(labels, self.k, self.fallback)
            new, dmin = self.assign(self.d.plan.encode(cont_c, nom_c))
            converged = np.array_equal(new, labels)
            labels = new
            if tick is not None:
                tick(n_iter)
            if converged:
                break
        cost = dmin.sum() if self.w is None else np.dot(self.w, dmin)
        return float(cost), labels, cont_c, nom_c, n_iter


_CENTER_DOC = """
    Parameters
    ----------
    n_clusters : int, default 8
    metric : str, Metric or None, default None (``{default!r}``)
        A preset name (``hdist.METRICS``) or a :class:`hdist.Metric`.  An unfitted Metric
        (or a name) is fitted on ``X`` in ``fit``; a fitted Metric is used as it is (its
        statistics then come from the data it was fitted on).{extra}
    metric_params : dict, optional
        Parameters of the metric: over the class's defaults for a name, over the
        parameters of an unfitted Metric (refused with a fitted one).
    init : {{{inits}}} or a table of ``n_clusters`` rows
        Initial centers: ``n_clusters`` data rows, drawn uniformly or by k-means++ seeding
        (probability proportional to the reduced distance to the nearest row drawn), or
        the given rows (then ``n_init`` must be 1).  The first assignment is to these
        rows.{init_extra}
    n_init : int or "auto", default "auto"
        Runs from different initial rows; the one with the least ``inertia_`` is kept.
        "auto": 1 when ``init`` is a table of centers{cao_one}, else 10.
    max_iter : int, default 100
        Most rounds of (center update, assignment) per run; a run stops earlier when no
        row changes cluster.
    nominal_center : {{"cost", "mode"}}, default "cost"
        A nominal center value is the learned value with the least total term
        ``Σ_i w d_a(x_ia, c)^p`` over the cluster ("cost"; for overlap this is the mode,
        ties to the first value in sorted order) or the most frequent value ("mode", as
        in Huang's k-modes with another dissimilarity plugged in).  Missing values do not
        count (under the "symbol" policy the missing symbol is a value like any other).
        With ``sample_weight`` both sum row weights instead of rows.
    random_state : None, int, numpy Generator or RandomState
    n_jobs : None or int
        Threads of the distance kernels; results do not depend on it.

    Attributes
    ----------
    labels_ : int array [n]
        Cluster of each row (ties: the smaller cluster index).
    cluster_centers_ : DataFrame (pandas input) or object array [n_clusters, m]
        Centers in original values: means for continuous columns, values for nominal ones.
    inertia_ : float
        ``Σ_i`` reduced distance of row ``i`` to its center (``Σ_a w_a d_a^p``, the
        quantity the updates decrease), each row's term times its ``sample_weight``
        when ``fit`` was given one.
    n_iter_ : int
    metric_ : Metric
        The fitted metric.
"""


class KModes(_CenterBase):
    """k-modes clustering of nominal data (Huang 1998) under any nominal hdist metric.

    Every column is nominal unless the metric says otherwise (a metric given by name gets
    ``nominal="all"`` and ``p = 1``, so the distance is ``Σ_a d_a``: the number of
    mismatches for ``"smd"``, the sum of the value tables for ``"add"`` and ``"hds"`` as
    in Zhao, Liu & Wang's experiments); a continuous column is an error (``ValueError``
    naming it).  A column is continuous when the metric says so, or, unless the columns
    are declared nominal (``metric_params={"nominal": ...}`` or a Metric's ``nominal``),
    when it holds a number with a fractional part: integer-valued numbers (``1``, ``2.0``)
    are read as category codes, measurements (``1.25``) are refused.
    """

    _default_metric = "smd"
    _inits = ("k-means++", "random", "huang", "cao")

    def _metric_defaults(self):
        return {"nominal": "all", "p": 1.0}

    def _check_data(self, data):
        schema = data.metric.schema_
        cont = schema.continuous_names
        if not cont and not self._nominal_declared():
            cont = [nm for nm, cats in zip(schema.names_, schema.categories_)
                    if any(_fractional(v) for v in cats)]
        if cont:
            raise ValueError("KModes clusters nominal data, but column %r is continuous; "
                             "declare it nominal or use KPrototypes" % cont[0])

    def _nominal_declared(self):
        if isinstance(self.metric, Metric):
            return "nominal" in self.metric.params
        return "nominal" in (self.metric_params or {})


def _fractional(v):
    """True for a real number (not a bool) with a fractional part."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        return False
    return math.isfinite(float(v)) and float(v) != math.floor(float(v))


class KPrototypes(_CenterBase):
    """k-prototypes clustering of mixed data (Huang 1998): continuous means and nominal
    centers, compared under any hdist metric (default ``heom``: range-normalized squared
    differences plus mismatches, ``p = 2``).

    Means minimize the continuous part of the cost exactly for ``p = 2``.
    """

    _default_metric = "heom"


_KMODES_INITS = """
        ``"huang"`` (Huang 1998): ``n_clusters`` synthetic modes whose value of each
        attribute is drawn among its observed values with probability proportional to
        their frequencies, then mode 1, 2, ... in turn replaced by the data row nearest
        to it among the rows not chosen yet that differ from every row chosen so far
        (ties: the smaller row index).  ``"cao"`` (Cao, Liang & Bai 2009), deterministic:
        the density of a row is the mean over the attributes of the share of rows that
        share its value, ``Dens(x) = Σ_a |{y : y_a = x_a}| / (n m)`` (a missing value
        shares nothing; with ``sample_weight``, weights instead of counts); the first
        center is the densest row and each next one the row that maximizes
        ``Dens(x) · min_c d(x, c)`` over the centers chosen so far (ties: the smaller row
        index), ``d`` the fitted metric (the number of mismatches for ``"smd"``)."""


if KModes.__doc__:   # not under python -OO
    KModes.__doc__ = extend_doc(KModes.__doc__, _CENTER_DOC.format(default="smd", extra=(
        " ``\"smd\"`` (simple matching), ``\"add\"`` (Ahmad & Dey), ``\"hds\"`` "
        "(Hellinger, Zhao, Liu & Wang 2016) or any other metric over nominal columns."),
        inits='"k-means++", "random", "huang", "cao"', init_extra=_KMODES_INITS,
        cao_one=' or "cao"'))
    KPrototypes.__doc__ = extend_doc(KPrototypes.__doc__, _CENTER_DOC.format(
        default="heom", extra="", inits='"k-means++", "random"', init_extra="", cao_one=""))
    KModes.__doc__ = extend_doc(KModes.__doc__, """
    See Also
    --------
    KPrototypes : mixed data, continuous means beside nominal modes.
    KMedoids : centers that are data rows, any metric.

    Examples
    --------
    >>> import pandas as pd
    >>> from hdist.cluster import KModes
    >>> X = pd.DataFrame({"colour": ["red", "red", "blue", "blue", "blue", "red"],
    ...                   "size": ["S", "S", "L", "L", "M", "M"]})
    >>> km = KModes(2, init="cao").fit(X)
    >>> km.labels_.tolist()
    [0, 0, 1, 1, 1, 0]
    >>> km.cluster_centers_.to_numpy().tolist()
    [['red', 'S'], ['blue', 'L']]
    """)
    KPrototypes.__doc__ = extend_doc(KPrototypes.__doc__, """
    See Also
    --------
    KModes : nominal data only.
    KMedoids : centers that are data rows.

    Examples
    --------
    >>> import pandas as pd
    >>> from hdist.cluster import KPrototypes
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> KPrototypes(2, random_state=0).fit(X).labels_.tolist()
    [1, 1, 0, 0, 0, 1]
    """)


# -- k-medoids -------------------------------------------------------------------------------
class KMedoids(_ClusterBase):
    """k-medoids clustering under any hdist metric: centers are data rows.

    Parameters
    ----------
    n_clusters : int, default 8
    metric : str or Metric, default "heom"
        Any preset or Metric; one that needs class labels is fitted with ``fit(X, y)``.
        A fitted Metric is used as it is.
    metric_params : dict, optional
        Parameters of the metric: over those of an unfitted Metric (refused with a
        fitted one).
    method : {"fasterpam", "alternate"}, default "fasterpam"
        "fasterpam": eager swaps of a medoid with a non-medoid whenever the total
        deviation decreases (Schubert & Rousseeuw 2021, FasterPAM: each row keeps its
        nearest and second-nearest medoid, so one candidate's best swap costs one pass
        over its distance row), over the rows in random order until ``n`` candidates in a
        row bring no swap; the swap loop is compiled.  A swap is kept only when the loss
        recomputed after it is lower (one whose gain was rounding alone is undone and the
        search goes on), so at convergence, all rows clustered, no single swap lowers
        ``inertia_`` by more than the rounding of its sums, 1e-12 of it (docs/metrics.md,
        section 11).  Up to ``FULL_MATRIX_ENTRIES`` (2^28: 16 384 rows, 2 GiB) the
        distance matrix is computed once, each pair once; beyond, candidate rows are
        computed in tiles as the passes reach them.
        "alternate": assign, then move each medoid to the member with the least distance
        sum to its cluster (Park & Jun 2009).
    init : {"k-medoids++", "random"} or array of n_clusters row indices
    n_init : int, default 1
        Runs (each on a new sample in sampled mode); the least total deviation is kept.
    max_iter : int, default 100
        Most passes over the candidates (fasterpam) or medoid updates (alternate).
    max_exact : int or None, default 20000
        Sampled mode (CLARA, Kaufman & Rousseeuw 1990): with more rows than this, each
        of the ``n_init`` runs clusters a random sample of ``sample_size`` rows (rows of
        positive ``sample_weight``, keeping their weights) and its medoids are scored on
        all rows; the best is kept.  On all 48 842 rows of Adult (Gower, k = 8),
        ``sample_size=5000`` reached a loss 1.026 times the exact solve's
        (``benchmarks/bench_cluster.py --sampled``).  ``None``: always exact.
    sample_size : int, default 5000
        Rows of each sample in sampled mode.
    random_state, n_jobs : as in :class:`KModes`

    Attributes
    ----------
    labels_ : int array [n]
        Cluster of each row: its nearest medoid (ties: the smaller cluster index).
    medoid_indices_ : int array [n_clusters]
        Training positions of the medoids.
    cluster_centers_ : DataFrame (pandas input) or object array [n_clusters, m]
        The medoid rows in original values.
    inertia_ : float
        ``Σ_i w_i d(x_i, nearest medoid)``, true distances as ``metric_.pairwise`` gives
        them (a medoid with a missing value included), ``w_i = 1`` without
        ``sample_weight`` (docs/metrics.md, section 11).
    n_iter_ : int
        Passes (fasterpam) or medoid updates (alternate) of the kept run.
    metric_ : Metric
        The fitted metric.

    See Also
    --------
    KPrototypes : centers that are means and modes rather than data rows.
    KModes : nominal data, centers that are modes.

    Examples
    --------
    >>> import pandas as pd
    >>> from hdist.cluster import KMedoids
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> km = KMedoids(2, random_state=0).fit(X)
    >>> km.labels_.tolist(), km.medoid_indices_.tolist(), round(km.inertia_, 4)
    ([1, 1, 0, 0, 0, 1], [3, 0], 2.3224)
    """

    #: with at most this many entries, the full distance matrix is computed once
    FULL_MATRIX_ENTRIES = 1 << 28
    #: candidate rows per tile of distance rows
    TILE = 256
    #: from this many rows on, the swap phase evaluates candidates on n_jobs threads
    SWAP_PARALLEL_ROWS = 1 << 15

    def __init__(self, n_clusters=8, *, metric="heom", metric_params=None,
                 method="fasterpam", init="k-medoids++", n_init=1, max_iter=100,
                 max_exact=20000, sample_size=5000, random_state=None, n_jobs=None):
        self.n_clusters = n_clusters
        self.metric = metric
        self.metric_params = metric_params
        self.method = method
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.max_exact = max_exact
        self.sample_size = sample_size
        self.random_state = random_state
        self.n_jobs = n_jobs

    def fit(self, X, y=None, sample_weight=None, *, progress=None):
        """Cluster the rows of ``X``; ``y`` only fits a metric that needs labels.
        ``sample_weight`` ``[n]`` (non-negative): the loss is ``Σ_i w_i d(i, medoid(i))``,
        so a row of integer weight ``m`` counts as ``m`` copies of itself; a row of weight
        0 is never a medoid.  ``progress``: ``True`` (a tqdm bar) or a callable receiving
        ``(done, n_init)`` after each initialization, ending with ``(n_init, n_init)``."""
        k = _check_int("n_clusters", self.n_clusters, 1)
        n_init = _check_int("n_init", self.n_init, 1)
        max_iter = _check_int("max_iter", self.max_iter, 1)
        if self.method not in ("fasterpam", "alternate"):
            raise ValueError("method must be 'fasterpam' or 'alternate', got %r"
                             % (self.method,))
        if self.max_exact is not None:
            _check_int("max_exact", self.max_exact, 1)
        sample_size = _check_int("sample_size", self.sample_size, 1)
        explicit = not isinstance(self.init, str)
        if not explicit and self.init not in ("k-medoids++", "random"):
            raise ValueError("init must be 'k-medoids++', 'random' or n_clusters row "
                             "indices, got %r" % (self.init,))
        base = _base_rng(self.random_state)
        data = self._prepare(X, y, sample_weight)
        n = data.n
        w = data.w
        n_pos = n if w is None else int(np.count_nonzero(w))
        if k > n_pos:
            raise ValueError("n_clusters=%d is larger than the %d rows of X%s"
                             % (k, n_pos, "" if w is None else " of positive sample_weight"))
        sampled = self.max_exact is not None and n > self.max_exact
        if explicit:
            init_idx = np.asarray(self.init)
            if init_idx.ndim != 1 or init_idx.shape[0] != k or \
                    init_idx.dtype.kind not in "iu":
                raise ValueError("init must hold n_clusters=%d row indices, got %r"
                                 % (k, self.init))
            if len(np.unique(init_idx)) != k or init_idx.min() < 0 or init_idx.max() >= n:
                raise ValueError("init must hold %d distinct row indices in [0, %d)" % (k, n))
            if w is not None and (w[init_idx] == 0).any():
                raise ValueError("init holds row %d, whose sample_weight is 0"
                                 % init_idx[w[init_idx] == 0][0])
            if n_init != 1 or sampled:
                raise ValueError("init given as row indices needs n_init=1 and no sampling "
                                 "(max_exact=None or >= the number of rows)")
        if sampled and sample_size < k:
            raise ValueError("sample_size=%d is smaller than n_clusters=%d"
                             % (sample_size, k))
        seeds = base.integers(0, 2 ** 63 - 1, size=n_init)
        best = None
        report = _progress.reporter(progress, n_init, type(self).__name__)
        exact = None if sampled else _MedoidEngine(data, data.rows, self.TILE,
                                                   self.FULL_MATRIX_ENTRIES, w)
        for r, s in enumerate(seeds):
            rng = np.random.default_rng(int(s))
            if sampled:
                sub = np.sort(rng.choice(n if w is None else np.flatnonzero(w),
                                         size=min(sample_size, n_pos), replace=False))
                eng = _MedoidEngine(data, data.rows.take(sub), self.TILE,
                                    self.FULL_MATRIX_ENTRIES, None if w is None else w[sub])
                med_local, n_iter = eng.run(k, rng, self.init, self.method, max_iter)
                med = sub[med_local]
            else:
                start = np.array(init_idx, dtype=np.intp) if explicit else self.init
                med, n_iter = exact.run(k, rng, start, self.method, max_iter)
            Dm = data.true_from(data.rows.take(med))
            labels = np.argmin(Dm, axis=0)
            dmin = Dm[labels, np.arange(n)]
            td = float((dmin if w is None else dmin * w).sum())
            if best is None or td < best[0]:
                best = (td, med, labels, n_iter)
            if report is not None:
                report(r + 1, n_init)
        td, med, labels, n_iter = best
        self.inertia_ = td
        self.medoid_indices_ = np.asarray(med, dtype=np.intp)
        self.labels_ = labels
        self.n_iter_ = n_iter
        self._center_rows = data.rows.take(self.medoid_indices_)
        self.cluster_centers_ = self._decode(data.cont[self.medoid_indices_],
                                             data.nom[self.medoid_indices_])
        return self

    def predict(self, X):
        """The nearest medoid of each row of ``X`` by ``transform``'s distances (ties: the
        smaller cluster index): ``labels_`` for the training rows."""
        return np.argmin(self.transform(X), axis=1)


class _MedoidEngine:
    """k-medoids over a set of encoded rows (all rows, or a sample), each row with a weight
    (``weight`` None: all 1).  With at most ``full_entries`` pairs the distance matrix is
    computed once (each pair once, mirrored); otherwise candidate rows are computed in
    tiles of ``tile`` rows as the swaps need them."""

    def __init__(self, data, rows, tile, full_entries, weight=None):
        self.d = data
        self.rows = rows
        self.prepared = _ops.prepare(rows)
        self.n = rows.n
        self.tile = tile
        self.w = weight
        self.full = None
        if self.n * self.n <= full_entries:
            self.full = _ops.distances(data.metric, self.prepared, threads=data.threads)

    def block(self, idx):
        """True distances ``[len(idx), n]`` from rows ``idx`` to every row, a row's
        distance to itself included as the metric gives it (positive when a missing value
        counts, docs/metrics.md section 11)."""
        if self.full is not None:
            return self.full[idx]
        sub = self.rows.take(idx)
        return _ops.distances(self.d.metric, sub, self.prepared, threads=self.d.threads)

    # -- initial medoids ------------------------------------------------------------------
    def seeds(self, k, rng, how):
        if how == "random":
            if self.w is None:
                return np.sort(rng.choice(self.n, size=k, replace=False))
            return np.sort(rng.choice(self.n, size=k, replace=False, p=self.w / self.w.sum()))
        return _weighted_seeds(self.n, k, rng, lambda i: self.block(np.array([i]))[0], self.w)

    def run(self, k, rng, init, method, max_iter):
        med = init if isinstance(init, np.ndarray) else self.seeds(k, rng, init)
        med = np.array(med, dtype=np.intp)
        if method == "alternate":
            return self._alternate(med, max_iter)
        return self._fasterpam(med, rng, max_iter)

    # -- FasterPAM -----------------------------------------------------------------------
    def _fasterpam(self, med, rng, max_iter):
        """Eager swaps (the compiled kernels ``pam_assign`` / ``pam_swaps``) over the rows
        in a random order, pass after pass, until ``n`` candidates in a row bring no swap
        or ``max_iter`` passes are done.  Rows of weight 0 are never candidates."""
        from .._kernels import pam_assign, pam_swaps
        n = self.n
        Dm = np.ascontiguousarray(self.block(med))
        near = np.empty(n, dtype=np.intp)
        seco = np.empty(n, dtype=np.intp)
        dn = np.empty(n)
        ds = np.empty(n)
        w = np.empty(0) if self.w is None else np.ascontiguousarray(self.w, dtype=np.float64)
        loss = np.array([pam_assign(Dm, med, near, seco, dn, ds, w)])
        order = rng.permutation(n)
        if self.w is not None:
            order = np.ascontiguousarray(order[self.w[order] > 0])
        visit = order.size
        state = np.zeros(2, dtype=np.intp)
        step = self.tile if self.full is None else max(self.tile, 4096)
        # a candidate costs about n ns: below SWAP_PARALLEL_ROWS rows, parallel batches
        # of candidates (a barrier each) cost more than they save, most of all on a
        # loaded machine; the swaps made are the same either way
        threads = self.d.threads if n >= KMedoids.SWAP_PARALLEL_ROWS else 1
        passes = 0
        while passes < max_iter and state[0] < visit:
            passes += 1
            for t0 in range(0, visit, step):
                idx = order[t0:t0 + step]
                if self.full is None:
                    D, at = self.block(idx), np.arange(idx.size, dtype=np.intp)
                else:
                    D, at = self.full, idx
                pam_swaps(D, at, idx, Dm, med, near, seco, dn, ds, w, state, loss, visit,
                          threads)
                if state[0] >= visit:
                    break
        return med, passes

    # -- alternating -----------------------------------------------------------------------
    def _within_sums(self, members):
        """(Weighted) sum of distances from each member to the others (tiles of members)."""
        sums = np.empty(members.size)
        for t0 in range(0, members.size, self.tile):
            idx = members[t0:t0 + self.tile]
            blk = self.block(idx)[:, members]
            sums[t0:t0 + idx.size] = blk.sum(axis=1) if self.w is None else \
                blk @ self.w[members]
        return sums

    def _alternate(self, med, max_iter):
        k = med.size
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            labels = np.argmin(self.block(med), axis=0)
            new = med.copy()
            for c in range(k):
                members = np.flatnonzero(labels == c)
                if self.w is not None:
                    members = members[self.w[members] > 0]
                if members.size == 0:
                    continue
                sums = self._within_sums(members)
                cur = np.flatnonzero(members == med[c])
                best = int(np.argmin(sums))
                if cur.size and sums[cur[0]] <= sums[best]:
                    continue
                new[c] = members[best]
            if np.array_equal(new, med):
                break
            med = new
        return med, n_iter
