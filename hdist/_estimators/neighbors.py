"""scikit-learn estimators over hdist's heterogeneous metrics (docs/metrics.md, section 8).

:class:`KNeighborsClassifier`, :class:`KNeighborsRegressor`, :class:`NearestNeighbors` and
:class:`KNeighborsTransformer` take mixed tables as they are -- pandas (numpy, nullable,
``string``, ``category`` dtypes), polars, pyarrow, numpy object arrays -- and hand them to
hdist's one schema path: nothing is converted to a float array first, so nominal columns
stay nominal and missing values stay missing.  They work with ``clone``, ``Pipeline``,
``GridSearchCV`` and ``cross_val_score`` like scikit-learn's own neighbors estimators;
``metric`` may be a preset name or a configured :class:`hdist.Metric` (whose parameters
are then tunable as ``metric__p`` and so on).

Neighbors are ordered by ``(distance, training index)``, so every result is
deterministic; a majority-vote tie goes to the smallest class label in sorted order.

scikit-learn's ``check_estimator`` passes for all four estimators.  Two of its
expectations do not fit mixed data and are declared through estimator tags instead of
being worked around: ``allow_nan`` (a ``NaN`` is a missing value that every metric
handles, docs/metrics.md section 6, not an error) and ``string`` (string columns are nominal attributes,
so an object column is never cast to float).
"""
from __future__ import annotations

import copy
import numbers

import numpy as np
from scipy import sparse
from sklearn.base import (BaseEstimator, ClassifierMixin, ClassNamePrefixFeaturesOutMixin,
                          RegressorMixin, TransformerMixin)
from sklearn.utils.metadata_routing import UNUSED
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import (_num_samples, check_array, check_is_fitted,
                                      column_or_1d)

from .._search import votes as _knn
from .._search.index import make_index
from .._core.schema import (MixedTableTags, check_label_types, check_sample_weight,
                            check_target, missing_mask)
from .._core.config import extend_doc
from .._search.resolve import resolve_metric

__all__ = ["KNeighborsClassifier", "KNeighborsRegressor", "NearestNeighbors",
           "KNeighborsTransformer"]

_PARAMS_DOC = """
    n_neighbors : int, default=5
        Number of neighbors ``k``.
    metric : str or hdist.Metric, default="heom"
        A preset name from ``hdist.METRICS`` or an :class:`hdist.Metric` (copied, never
        fitted in place; a fitted one is fitted again, on the training rows).
    metric_params : dict, default=None
        Parameters for the metric (``p``, ``nominal``, ``normalization``, ``missing``,
        ...), applied over those of a given :class:`hdist.Metric`.
    algorithm : {"auto", "brute", "kd_tree", "ball_tree", "ivf"}, default="auto"
        Search structure (:class:`hdist.NeighborsIndex`); every exact choice returns
        the same neighbors.  ``"ivf"`` is approximate (inverted lists, docs/ivf.md):
        exact distances, but some true neighbors may be missed; ``"auto"`` never
        picks it.
    leaf_size : int, default=30
        Leaf size of the trees.
    algorithm_params : dict, default=None
        Parameters of ``algorithm="ivf"``: ``n_lists``, ``n_probe``,
        ``target_recall``, ``random_state`` (:class:`hdist.NeighborsIndex`).
    device : {"cpu", "cuda"}, default="cpu"
        Where the neighbor searches run: ``"cuda"`` on a CUDA GPU by brute force
        (``algorithm`` "auto" or "brute"; the CPU's results bit for bit,
        docs/guide/gpu.md).  Checked in ``fit``; without CuPy or a GPU ``fit`` raises
        :class:`hdist.CudaUnavailableError`.
    n_jobs : int, default=None
        Threads for neighbor queries: ``None`` every core the process may use, ``-1``
        all, ``k`` exactly k.  Results do not depend on it."""


_ATTRIBUTES_DOC = """
    metric_ : hdist.Metric
        The metric fitted on the training rows (and ``y`` when it learns from classes).
    index_ : hdist.NeighborsIndex
        The fitted index over the training rows that the queries search (read-only).
    n_samples_fit_ : int
        Number of training rows.
    n_features_in_ : int
        Number of columns seen in ``fit``.
    feature_names_in_ : ndarray of str
        Column names seen in ``fit`` (named columns only)."""


def _shared_params(cls):
    """Write the parameters and attributes the four estimators share (``_PARAMS_DOC``,
    ``_ATTRIBUTES_DOC``) where the class's docstring has the line ``    {shared}`` or
    ``    {shared_attributes}``: a docstring must be one literal, so the
    class keeps its own ``__doc__`` (``help()`` would show a base class's otherwise)."""
    if cls.__doc__:          # not under python -OO
        cls.__doc__ = extend_doc(cls.__doc__).replace(
            "\n{shared}\n", "\n" + extend_doc("", _PARAMS_DOC)).replace(
            "\n{shared_attributes}\n", "\n" + extend_doc("", _ATTRIBUTES_DOC))
    return cls


def _widened_search(search, X, k, ties, n_ref):
    """``(dist, ind)`` of the k nearest of ``X`` by ``search(X, width)`` (an
    estimator's ``with_search``) over ``n_ref`` training rows.  ``ties``: the lists hold
    every row tied with the k-th, as the estimator's own search gives them -- searched
    again at twice the width until no list ends inside its k-th distance's ties, and the
    rows past those ties blanked (distance ``inf``, index 0); a tally
    (:class:`~hdist._search.votes.TieTally`) gets the rows past k and the lists are cut
    to k."""
    n = n_ref if X is None else _query_count(X)
    dist, ind = _checked_search(search, X, k, n, n_ref)
    width = k
    while ties and width < n_ref and (dist[:, -1] == dist[:, k - 1]).any():
        width = min(n_ref, 2 * width)
        dist, ind = _checked_search(search, X, width, n, n_ref)
    if width > k:
        past = dist > dist[:, k - 1:k]
        dist = np.where(past, np.inf, dist)
        ind = np.where(past, 0, ind)
    if ties is not True and ties:
        ties.add_lists(dist, ind, k)
        return dist[:, :k], ind[:, :k]
    return dist, ind


def _query_count(X):
    """The number of query rows of ``X`` as ``predict`` takes it (any table)."""
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None and len(shape) else len(X)


def _checked_search(search, X, width, n, n_ref):
    """``search(X, width)``'s ``(dist, ind)`` as arrays, refused with an error naming
    ``search`` and what it returned unless they are ``[n, width]`` real distances (no
    NaN) and integer positions in ``[0, n_ref)``."""
    got = search(X, width)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        raise TypeError("search must return a pair (dist, ind), got %s"
                        % ("a %s of %d" % (type(got).__name__, len(got))
                           if isinstance(got, (tuple, list)) else repr(got)[:80]))
    dist, ind = np.asarray(got[0]), np.asarray(got[1])
    for name, a in (("dist", dist), ("ind", ind)):
        if a.shape != (n, width):
            raise ValueError("search returned %s of shape %s for %d query rows and k = %d;"
                             " it must be (%d, %d)" % (name, a.shape, n, width, n, width))
    if dist.dtype.kind not in "fiu":
        raise TypeError("search returned dist of dtype %s; distances are real numbers"
                        % dist.dtype)
    if ind.dtype.kind not in "iu":
        raise TypeError("search returned ind of dtype %s; training positions are integers"
                        % ind.dtype)
    dist = np.asarray(dist, dtype=np.float64)
    if np.isnan(dist).any():
        raise ValueError("search returned NaN distances")
    if ind.size:
        lo, hi = ind.min(), ind.max()
        if lo < 0 or hi >= n_ref:
            raise ValueError("search returned training positions outside [0, %d): %d"
                             % (n_ref, lo if lo < 0 else hi))
    return dist, np.asarray(ind, dtype=np.intp)


def _check_table(X, what="X"):
    """Refuse, with scikit-learn's messages, the inputs that are not 2-D tables."""
    if isinstance(X, np.ndarray) and X.dtype.kind == "c":
        raise ValueError("Complex data not supported: %s has dtype %s" % (what, X.dtype))
    ndim = getattr(X, "ndim", None)
    if ndim is None and isinstance(X, (list, tuple)) and len(X) and \
            not isinstance(X[0], (list, tuple, np.ndarray, dict)):
        ndim = 1
    if ndim == 1 and type(X).__name__ == "Series":
        raise ValueError("Expected a 2-D table for %s, got a pandas Series. Pass "
                         "series.to_frame() if it is a single feature, or "
                         "series.to_frame().T if it is a single row." % what)
    if ndim == 1:
        raise ValueError("Expected a 2-D table for %s, got a 1-D array. Reshape your data "
                         "either using x.reshape(-1, 1) if it has a single feature or "
                         "x.reshape(1, -1) if it is a single row." % what)


class _NeighborsBase(MixedTableTags, BaseEstimator):
    """Shared fit / query machinery: a metric, an index, and scikit-learn validation."""

    # ``progress`` is a display option of the call, not sample metadata: scikit-learn
    # reads every keyword of fit / predict / predict_proba as metadata a meta-estimator
    # may route (``set_fit_request(progress=...)``) unless the class declares it unused
    __metadata_request__fit = {"progress": UNUSED}
    #: (estimators pickled before ``algorithm_params`` existed read it as None)
    algorithm_params = None
    #: (estimators pickled before ``device`` existed searched on the CPU)
    device = "cpu"
    #: the search of a copy made by ``with_search`` (None: the estimator's own index)
    _search = None

    def __init__(self, n_neighbors=5, *, metric="heom", metric_params=None,
                 algorithm="auto", leaf_size=30, n_jobs=None, algorithm_params=None,
                 device="cpu"):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.metric_params = metric_params
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.n_jobs = n_jobs
        self.algorithm_params = algorithm_params
        self.device = device

    # -- validation ------------------------------------------------------------------
    def _validate_X(self, X, reset):
        _check_table(X)
        self._check_features(X, reset)
        if reset and getattr(self, "n_features_in_", None) == 0:
            raise ValueError("Found array with 0 feature(s) (shape=(%d, 0)) while a minimum "
                             "of 1 is required." % _num_samples(X))
        return X

    def _resolve_metric(self):
        """The metric to fit, unfitted: ``metric`` with ``metric_params`` applied over a
        given Metric's parameters (:func:`~hdist._search.resolve.resolve_metric`); a
        fitted Metric is copied too and fitted again on the training rows."""
        return resolve_metric(self.metric, self.metric_params, refit=True)

    def _check_k(self, k, name="n_neighbors"):
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError("%s must be an int, got %r" % (name, k))
        if k < 1:
            raise ValueError("%s must be >= 1, got %d" % (name, k))
        return int(k)

    def _fit_index(self, X, labels, sample_weight=None, progress=None, metric=None):
        """Validate X, fit the metric (``metric``, else :meth:`_resolve_metric`'s) once
        on X and index its training rows.  The metric's statistics are fitted with
        ``sample_weight`` (rows of weight 0 left out of them, as if absent;
        :meth:`hdist.Metric.fit`).  ``progress`` as for :meth:`hdist.NeighborsIndex.fit`:
        the metric's fit, then the index's build."""
        X = self._validate_X(X, reset=True)
        n = _num_samples(X)
        if n < 2:
            raise ValueError("%s needs at least 2 training rows, got %d sample(s)"
                             % (type(self).__name__, n))
        self._check_k(self.n_neighbors)
        if isinstance(self.leaf_size, bool) or not isinstance(self.leaf_size, numbers.Integral) \
                or self.leaf_size < 1:
            raise ValueError("leaf_size must be a positive int, got %r" % (self.leaf_size,))
        self._sample_weight = check_sample_weight(sample_weight, n)
        if metric is None:
            metric = self._resolve_metric()
        index = make_index(metric, self.algorithm, int(self.leaf_size),
                           self.algorithm_params, self.device)
        metric.fit(X, labels, sample_weight=self._sample_weight, progress=progress)
        index.fit(None, progress=progress)
        self._index = index
        self.metric_ = metric
        self.n_samples_fit_ = n
        return X

    @property
    def index_(self):
        """The fitted :class:`hdist.NeighborsIndex` over the training rows, which the
        queries search (read-only; shared, not copied).

        Raises
        ------
        NotFittedError
            The estimator is not fitted.
        """
        check_is_fitted(self)
        return self._index

    # -- queries ------------------------------------------------------------------------
    def _query(self, X, k, progress=None, ties=False):
        """(distances, indices) of the k nearest training rows; ``X=None`` queries the
        training rows, each without itself (as scikit-learn does).  ``ties``: each list
        also holds every training row tied with its k-th, found by the same search
        (:meth:`hdist.NeighborsIndex._kneighbors`)."""
        if self._search is not None:
            return _widened_search(self._search, X, k, ties, self.n_samples_fit_)
        check_is_fitted(self)
        if X is None:
            return self._index._kneighbors(None, k, exclude_self=True, n_jobs=self.n_jobs,
                                           progress=progress, ties=ties)
        X = self._validate_X(X, reset=False)
        return self._index._kneighbors(X, k, n_jobs=self.n_jobs, progress=progress,
                                       ties=ties)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True, *, progress=None):
        """The ``n_neighbors`` nearest training rows of each row of ``X``.

        Parameters
        ----------
        X : table or None
            Query rows; ``None`` queries the training rows, each without itself.
        n_neighbors : int, default=None
            ``k`` (default: the estimator's).
        return_distance : bool, default=True
        progress : None, bool or callable, default=None
            ``True`` (a tqdm bar) or a callable receiving ``(done, total)`` query rows
            after each block, and a final ``(total, total)`` (docs/guide/threads.md, "Progress").

        Returns
        -------
        distances : ndarray [n_queries, k]
            True distances, ascending (only with ``return_distance``).
        indices : ndarray [n_queries, k]
            Training row positions; ties broken by the smaller position.
        """
        k = self._check_k(self.n_neighbors if n_neighbors is None else n_neighbors)
        dist, ind = self._query(X, k, progress)
        return (dist, ind) if return_distance else ind

    def kneighbors_graph(self, X=None, n_neighbors=None, mode="connectivity"):
        """Sparse CSR graph ``[n_queries, n_samples_fit_]`` of the k nearest neighbors,
        holding 1 (``mode="connectivity"``) or the distance (``mode="distance"``, explicit
        zeros kept) at each neighbor."""
        if mode not in ("connectivity", "distance"):
            raise ValueError("mode must be 'connectivity' or 'distance', got %r" % (mode,))
        k = self._check_k(self.n_neighbors if n_neighbors is None else n_neighbors)
        dist, ind = self._query(X, k)
        n_q = ind.shape[0]
        data = dist.ravel() if mode == "distance" else np.ones(n_q * k)
        return sparse.csr_matrix((data, ind.ravel(), np.arange(0, n_q * k + 1, k)),
                                 shape=(n_q, self.n_samples_fit_))


@_shared_params
class NearestNeighbors(_NeighborsBase):
    """Unsupervised nearest-neighbor search with an hdist metric.

    The rows of a mixed table (continuous and nominal columns, missing values) are
    indexed under a heterogeneous metric; :meth:`kneighbors` and
    :meth:`radius_neighbors` return the training rows nearest to each query, ordered by
    (distance, training position), identical for every ``algorithm`` and ``n_jobs``.

    Parameters
    ----------
    {shared}
    radius : float, default=1.0
        Default radius of :meth:`radius_neighbors`.

    Attributes
    ----------
    {shared_attributes}

    See Also
    --------
    KNeighborsClassifier : vote of the neighbors' classes.
    KNeighborsRegressor : mean of the neighbors' targets.
    KNeighborsTransformer : the neighbors as a sparse graph.
    hdist.NeighborsIndex : the index underneath, with incremental ``insert``.
    sklearn.neighbors.NearestNeighbors : the same interface on numeric arrays.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> q = pd.DataFrame({"age": [30.0, 55.0], "job": ["clerk", "retired"]})
    >>> nn = hdist.NearestNeighbors(n_neighbors=2).fit(X)
    >>> dist, ind = nn.kneighbors(q)
    >>> ind.tolist(), dist.round(3).tolist()
    ([[1, 0], [4, 3]], [[0.051, 0.128], [0.179, 1.005]])
    >>> [rows.tolist() for rows in nn.radius_neighbors(q, radius=0.5)[1]]
    [[1, 0], [4]]
    """

    def __init__(self, *, n_neighbors=5, radius=1.0, metric="heom", metric_params=None,
                 algorithm="auto", leaf_size=30, n_jobs=None, algorithm_params=None,
                 device="cpu"):
        super().__init__(n_neighbors, metric=metric, metric_params=metric_params,
                         algorithm=algorithm, leaf_size=leaf_size, n_jobs=n_jobs,
                         algorithm_params=algorithm_params, device=device)
        self.radius = radius

    def fit(self, X, y=None, *, progress=None):
        """Fit the metric (with ``y`` when given, for metrics that learn from classes)
        and index the rows of ``X``.  ``progress``: ``True`` (tqdm bars) or a callable
        receiving ``(done, total)`` for the metric's fit and the tree build
        (docs/guide/threads.md, "Progress")."""
        self._fit_index(X, None if y is None else column_or_1d(check_target(y), warn=True),
                        progress=progress)
        return self

    def radius_neighbors(self, X=None, radius=None, return_distance=True, sort_results=True,
                         *, progress=None):
        """Training rows within ``radius`` (inclusive) of each query row, sorted by
        (distance, index).  Returns object arrays of arrays, like scikit-learn
        (``sort_results`` is accepted for compatibility; results are always sorted).
        ``progress`` as for :meth:`kneighbors`."""
        check_is_fitted(self)
        r = self.radius if radius is None else radius
        if X is None:
            return self._index.radius_neighbors(None, r, exclude_self=True,
                                                return_distance=return_distance,
                                                n_jobs=self.n_jobs, progress=progress)
        X = self._validate_X(X, reset=False)
        return self._index.radius_neighbors(X, r, return_distance=return_distance,
                                            n_jobs=self.n_jobs, progress=progress)

    def radius_neighbors_graph(self, X=None, radius=None, mode="connectivity",
                               sort_results=False):
        """Sparse CSR graph of the neighbors within ``radius`` (see
        :meth:`kneighbors_graph` for ``mode``)."""
        if mode not in ("connectivity", "distance"):
            raise ValueError("mode must be 'connectivity' or 'distance', got %r" % (mode,))
        dist, ind = self.radius_neighbors(X, radius, return_distance=True)
        counts = np.array([len(i) for i in ind], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        cols = np.concatenate(list(ind)) if len(ind) else np.zeros(0, dtype=np.intp)
        data = np.concatenate(list(dist)) if mode == "distance" and len(dist) else \
            np.ones(int(indptr[-1]))
        return sparse.csr_matrix((data, cols, indptr), shape=(len(ind), self.n_samples_fit_))


class _SupervisedBase(_NeighborsBase):
    """Weights, leave-one-out choice of k, and shared predict plumbing."""

    __metadata_request__predict = {"progress": UNUSED}

    def __init__(self, n_neighbors=5, *, weights="uniform", metric="heom", metric_params=None,
                 algorithm="auto", leaf_size=30, n_jobs=None, select_k=None, ties="include",
                 algorithm_params=None, device="cpu"):
        super().__init__(n_neighbors, metric=metric, metric_params=metric_params,
                         algorithm=algorithm, leaf_size=leaf_size, n_jobs=n_jobs,
                         algorithm_params=algorithm_params, device=device)
        self.weights = weights
        self.select_k = select_k
        self.ties = ties

    def _check_fit_params(self, y):
        if y is None:
            raise ValueError("%s requires y to be passed, but the target y is None"
                             % type(self).__name__)
        _knn.check_weights(self.weights)
        if self.select_k not in (None, "loo"):
            raise ValueError("select_k must be None or 'loo', got %r" % (self.select_k,))
        if not isinstance(self.ties, str) or self.ties not in _knn.TIES:
            raise ValueError("ties must be one of %s, got %r" % (_knn.TIES, self.ties))

    def with_search(self, search):
        """A shallow copy of this fitted estimator whose neighbor queries go through
        ``search`` instead of its own index (a search spread over a cluster, for one).

        Parameters
        ----------
        search : callable
            ``search(X, k) -> (dist, ind)``: for the query rows ``X`` (as given to
            ``predict`` / ``predict_proba``), the ``k`` nearest training rows, ``dist``
            ``[n, k]`` their exact distances ascending and ``ind`` ``[n, k]`` their
            training positions, ties in training order -- what :meth:`kneighbors`
            returns.  With ``ties="include"`` it is asked again at twice the width while
            some list ends inside the ties of its k-th distance.

        Returns
        -------
        estimator
            The copy (the estimator itself is not changed); its predictions are those of
            the estimator when ``search`` returns what the estimator's index finds.

        Raises
        ------
        TypeError
            ``search`` is not callable.
        sklearn.exceptions.NotFittedError
            The estimator is not fitted.

        A query of the copy raises a ValueError or TypeError naming ``search`` when
        what it returns is not such a pair: arrays of another shape, distances that
        are not real numbers or NaN, positions that are not integers or lie outside the
        training rows.
        """
        if not callable(search):
            raise TypeError("search must be a callable search(X, k) -> (dist, ind), got %r"
                            % (search,))
        check_is_fitted(self)
        est = copy.copy(self)
        est._search = search
        return est

    def _choose_k(self, targets, task):
        """Set ``n_neighbors_`` (and ``loo_scores_`` when ``select_k="loo"``)."""
        K = self._check_k(self.n_neighbors)
        if self.select_k is None:
            self.n_neighbors_ = K
            return
        if K > self.n_samples_fit_ - 1:
            raise ValueError("select_k='loo' tries k = 1..n_neighbors against the other "
                             "training rows; n_neighbors = %d exceeds the %d available"
                             % (K, self.n_samples_fit_ - 1))
        # ties included: the search tallies the rows tied with the K-th beyond the K
        # listed (each row tied with the k-th of some k <= K is listed or tallied)
        if self._sample_weight is not None:
            dist, ind, res = self._with_mass(None, K)
        else:
            tally = self._tie_tally() if self.ties == "include" else None
            dist, ind = self._query(None, K, ties=tally)
            res = None if tally is None else tally.result(len(dist))
        self.loo_scores_ = _knn.loo_scores(dist, ind, targets, self.weights, task, self.ties,
                                           K, self._sample_weight, tally=res)
        self.n_neighbors_ = _knn.best_k(self.loo_scores_)

    def _with_mass(self, X, k, progress=None):
        """``(dist, ind, tally)``: lists of neighbors widened (doubling) until every row's
        weighted neighborhood is in them (``_knn.mass_complete``); with
        ``ties="include"`` the search tallies the training weights of the rows tied with
        the lists' last distance beyond them (``_mass_tally``), so duplicates do not
        widen the lists, else ``tally`` is None."""
        avail = self.n_samples_fit_ - (1 if X is None else 0)
        width = min(k, avail)
        while True:
            tally = self._mass_tally() if self.ties == "include" else None
            dist, ind = self._query(X, width, progress, ties=tally)
            res = None if tally is None else tally.result(len(dist))
            if width >= avail or _knn.mass_complete(
                    dist, self._sample_weight[ind], k, self.ties,
                    None if res is None else res[1][:, -1]).all():
                return dist, ind, res
            width = min(avail, 2 * width)

    def _neighbor_weights(self, X, progress=None):
        """Vote weights ``[n, k]`` and the neighbors they belong to with
        ``ties="index"``: the k nearest, or the rows of the weighted neighborhood
        (``sample_weight``, ``_knn.mass_weights``); None for ``ties="include"``, whose
        votes come from :meth:`_tallied`."""
        check_is_fitted(self)
        k = self.n_neighbors_
        if self.ties == "include":
            return None
        if self._sample_weight is not None:
            dist, ind, _ = self._with_mass(X, k, progress)
            return _knn.mass_weights(dist, self._sample_weight[ind], k, self.weights,
                                     self.ties), ind
        dist, ind = self._query(X, k, progress)
        return _knn.tie_weights(dist, k, self.weights, self.ties), ind

    def _tallied(self, X, progress=None):
        """``(w, ind, tw, tacc, tden)`` of ``ties="include"``: the listed neighbors'
        weights, and the tally of the rows tied with the last listed distance beyond
        them, counted inside the search so the memory does not grow with the ties --
        ``tw`` ``[n]`` the weight of one tallied unit, ``tacc`` the tallied counts (or
        training weights) per class or sums of the targets, ``tden`` their count (or
        weight) -- for ``_knn.tallied_votes`` / ``tallied_mean``."""
        k = self.n_neighbors_
        if self._sample_weight is not None:
            dist, ind, res = self._with_mass(X, k, progress)
            tden = res[1][:, -1]
            w, tw = _knn.mass_tally_weights(dist, self._sample_weight[ind], k,
                                            self.weights, tden)
            return w, ind, tw, res[1][:, :-1], tden
        tally = self._tie_tally()
        dist, ind = self._query(X, k, progress, ties=tally)
        count, acc = tally.result(len(dist))
        w = _knn.neighbor_weights(dist, self.weights)
        return w, ind, w[:, k - 1], acc, count


@_shared_params
class KNeighborsClassifier(ClassifierMixin, _SupervisedBase):
    """k-nearest-neighbor classification with an hdist metric (docs/metrics.md, section 8).

    Parameters
    ----------
    {shared}
    weights : {"uniform", "distance", "dudani"} or callable, default="uniform"
        Vote weights: equal; ``1/d`` (exact zero distances win outright); Dudani's
        linear ``(d_k - d_j) / (d_k - d_1)`` (S. A. Dudani, IEEE Trans. SMC 6, 1976); or
        a callable from the distance array to weights of the same shape.
    select_k : {None, "loo"}, default=None
        ``"loo"`` chooses ``k`` in ``1..n_neighbors`` by leave-one-out accuracy on the
        training rows from a single neighbor query (Weka IBk's ``-X``); the smallest
        best ``k`` wins.  With metrics that learn from the classes (VDM family) the
        metric is fitted once on all training rows, so a held-out row's own class is part
        of the learned value tables it is scored with.
    ties : {"index", "include"}, default="include"
        Which neighbors vote when several training rows are at the k-th distance:
        ``"index"`` keeps exactly k (the smaller training positions win the tie);
        ``"include"`` lets every row at a distance at most the k-th one's vote, each with
        its weight, as Weka's IBk and R's ``class::knn`` do.  ``predict(None)`` gives the
        leave-one-out predictions of the training rows.

    Attributes
    ----------
    classes_ : ndarray
        Class labels in sorted order (any label type scikit-learn accepts).
    n_neighbors_ : int
        The ``k`` used by predict (``n_neighbors``, or the leave-one-out choice).
    loo_scores_ : ndarray [n_neighbors]
        Leave-one-out accuracy of k = 1..n_neighbors (``select_k="loo"`` only).
    {shared_attributes}

    See Also
    --------
    KNeighborsRegressor : the mean of the neighbors' targets.
    NearestNeighbors : the neighbors themselves.
    PrototypeClassifier : a few prototypes per class instead of every training row.
    sklearn.neighbors.KNeighborsClassifier : the same interface on numeric arrays.

    Notes
    -----
    Majority-vote ties go to the smallest class label in sorted order; neighbors at equal
    distance are taken in training order.

    ``fit(X, y, sample_weight=w)`` lets a row of weight ``m`` vote as ``m`` copies of it
    would: the neighborhood is the nearest rows whose weights sum to ``k`` (more than k
    rows when weights are below 1, fewer above), the k-th distance (Dudani's ``d_k``,
    the ``ties`` rule) is that of the row carrying the k-th unit of weight, and each row's
    vote is its distance weight times the part of its training weight inside the
    neighborhood (all of it with ``ties="include"``).  Integer weights therefore give the
    predictions of repeated rows.  The metric is fitted with the same weights
    (:meth:`hdist.Metric.fit`): its scales and value tables count a row of weight ``m``
    ``m`` times, and rows of weight 0 are left out of them.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> clf = hdist.KNeighborsClassifier(n_neighbors=3).fit(X, y)
    >>> q = pd.DataFrame({"age": [30.0, 55.0], "job": ["clerk", "retired"]})
    >>> clf.predict(q).tolist()
    ['no', 'yes']
    >>> clf.predict_proba(q).round(3).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """

    def fit(self, X, y, sample_weight=None, *, progress=None):
        """Fit the metric on ``(X, y)`` and index the training rows.

        ``sample_weight`` ``[n]`` (non-negative): a row of weight ``m`` votes as ``m``
        copies of itself would (see the class notes).  ``progress`` as for
        :meth:`NearestNeighbors.fit`."""
        self._check_fit_params(y)
        y = column_or_1d(check_target(y), warn=True)
        check_label_types(y)
        if y.dtype == object:
            bad = np.flatnonzero(missing_mask(y)).tolist()
        else:
            bad = np.flatnonzero(~np.isfinite(y)).tolist() if y.dtype.kind == "f" else []
        if bad:
            raise ValueError("y has a missing or infinite label at row %d; every training "
                             "row needs a class" % bad[0])
        check_classification_targets(y)
        self.classes_, codes = np.unique(y, return_inverse=True)
        self._y = codes.astype(np.int64).ravel()
        self._fit_index(X, self._y, sample_weight, progress)
        self._choose_k(self._y, "classification")
        return self

    __metadata_request__predict_proba = {"progress": UNUSED}

    def _tie_tally(self):
        return _knn.TieTally(codes=self._y, n_classes=len(self.classes_))

    def _mass_tally(self):
        """A tally of the training weight per class and in all ``[n, C + 1]``."""
        C = len(self.classes_)
        vals = np.zeros((len(self._y), C + 1))
        vals[np.arange(len(self._y)), self._y] = self._sample_weight
        vals[:, C] = self._sample_weight
        return _knn.TieTally(values=vals)

    def _votes(self, X, progress=None):
        """Weighted votes ``[n_queries, n_classes]``."""
        wi = self._neighbor_weights(X, progress)
        if wi is None:
            w, ind, tw, tacc, _ = self._tallied(X, progress)
            return _knn.tallied_votes(self._y, ind, w, tw, tacc, len(self.classes_))
        return _knn.class_votes(self._y[wi[1]], wi[0], len(self.classes_))

    def predict_proba(self, X, *, progress=None):
        """Weighted vote shares ``[n_queries, n_classes]``, columns in ``classes_``
        order.  ``progress`` as for :meth:`kneighbors`."""
        return _knn.vote_probabilities(self._votes(X, progress))

    def predict(self, X, *, progress=None):
        """The class with the largest weighted vote (ties: smallest label).
        ``progress`` as for :meth:`kneighbors`."""
        votes = self._votes(X, progress)
        return self.classes_[_knn.vote_winner(votes)]


@_shared_params
class KNeighborsRegressor(RegressorMixin, _SupervisedBase):
    """k-nearest-neighbor regression with an hdist metric: the (weighted) mean of the
    neighbors' targets (docs/metrics.md, section 8).

    Parameters
    ----------
    {shared}
    weights : {"uniform", "distance", "dudani"} or callable, default="uniform"
        As for :class:`KNeighborsClassifier`.
    select_k : {None, "loo"}, default=None
        ``"loo"`` chooses ``k`` by the leave-one-out mean absolute error (Weka IBk's
        ``-X`` default for a numeric class).
    ties : {"index", "include"}, default="include"
        As for :class:`KNeighborsClassifier`: ``"include"`` averages every row at a
        distance at most the k-th one's.

    Attributes
    ----------
    n_neighbors_ : int
        The ``k`` used by predict (``n_neighbors``, or the leave-one-out choice).
    loo_scores_ : ndarray [n_neighbors]
        Leave-one-out mean absolute error of k = 1..n_neighbors (``select_k="loo"``
        only).
    n_outputs_ : int or None
        Columns of a 2-D target ``y`` (``y.shape[1]``; ``predict`` then returns
        ``[n_queries, n_outputs_]``), or ``None`` for a 1-D ``y`` (``predict`` returns
        ``[n_queries]``).
    {shared_attributes}

    See Also
    --------
    KNeighborsClassifier : the vote of the neighbors' classes.
    hdist.KNNImputer : fills missing cells from the neighbors.
    sklearn.neighbors.KNeighborsRegressor : the same interface on numeric arrays.

    Notes
    -----
    A metric that learns from classes (``hvdm``, VDM family) is fitted with the targets
    as class labels, so each distinct target value is a class; that suits targets with a
    few distinct values, and a metric that needs no labels suits the others.
    Multi-output targets ``[n, t]`` are supported by metrics that do not need labels.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> reg = hdist.KNeighborsRegressor(n_neighbors=2, weights="distance")
    >>> reg = reg.fit(X, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    >>> q = pd.DataFrame({"age": [30.0, 55.0], "job": ["clerk", "retired"]})
    >>> reg.predict(q).round(3).tolist()
    [1.714, 4.848]
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _more_tags(self):  # scikit-learn < 1.6
        return {"multioutput": True}

    def fit(self, X, y, sample_weight=None, *, progress=None):
        """Fit the metric on ``X`` (and ``y`` if the metric needs labels) and index it.

        ``sample_weight`` ``[n]`` (non-negative): a row of weight ``m`` enters the
        neighborhood and the mean as ``m`` copies of itself would.  ``progress`` as for
        :meth:`NearestNeighbors.fit`."""
        self._check_fit_params(check_target(y))
        y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        if y.ndim not in (1, 2):
            raise ValueError("y must be 1-D or 2-D, got shape %s" % (y.shape,))
        self._y = y
        self.n_outputs_ = y.shape[1] if y.ndim == 2 else None
        metric = self._resolve_metric()
        labels = y if _knn.needs_labels(metric) else None
        self._fit_index(X, labels, sample_weight, progress, metric)
        if len(y) != self.n_samples_fit_:
            raise ValueError("y has %d rows for %d rows of X" % (len(y), self.n_samples_fit_))
        self._choose_k(y, "regression")
        return self

    def predict(self, X, *, progress=None):
        """Weighted mean of the neighbors' targets ``[n_queries]`` (``[n_queries, t]``
        for 2-D targets).  ``progress`` as for :meth:`kneighbors`."""
        wi = self._neighbor_weights(X, progress)
        if wi is None:
            w, ind, tw, tacc, tden = self._tallied(X, progress)
            return _knn.tallied_mean(self._y, ind, w, tw, tacc, tden)
        return _knn.weighted_mean(self._y[wi[1]], wi[0])

    def _tie_tally(self):
        return _knn.TieTally(values=self._y)

    def _mass_tally(self):
        """A tally of the weighted targets and the training weight ``[n, t + 1]``."""
        sw = self._sample_weight
        y = self._y.reshape(len(self._y), -1)
        return _knn.TieTally(values=np.column_stack([sw[:, None] * y, sw]))


@_shared_params
class KNeighborsTransformer(ClassNamePrefixFeaturesOutMixin, TransformerMixin, _NeighborsBase):
    """Rows into a sparse k-nearest-neighbor graph, for estimators that take
    ``metric="precomputed"`` sparse input (DBSCAN, Isomap, TSNE, scikit-learn's own
    KNeighborsClassifier...).

    ``transform(X)`` returns a CSR matrix ``[n_queries, n_samples_fit_]`` whose rows hold
    their neighbors in (distance, index) order, explicit zero distances included.

    Parameters
    ----------
    mode : {"distance", "connectivity"}, default="distance"
        Store distances or ones.  As in scikit-learn, ``"distance"`` finds
        ``n_neighbors + 1`` neighbors because each training row is its own nearest
        neighbor when the training rows are transformed.
    {shared}

    Attributes
    ----------
    {shared_attributes}

    See Also
    --------
    NearestNeighbors : the same neighbors as arrays.
    sklearn.neighbors.KNeighborsTransformer : the same interface on numeric arrays.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> G = hdist.KNeighborsTransformer(n_neighbors=2).fit_transform(X)
    >>> G.shape, G.nnz
    ((6, 6), 18)
    """

    def __init__(self, *, mode="distance", n_neighbors=5, metric="heom", metric_params=None,
                 algorithm="auto", leaf_size=30, n_jobs=None, algorithm_params=None,
                 device="cpu"):
        super().__init__(n_neighbors, metric=metric, metric_params=metric_params,
                         algorithm=algorithm, leaf_size=leaf_size, n_jobs=n_jobs,
                         algorithm_params=algorithm_params, device=device)
        self.mode = mode

    def fit(self, X, y=None, *, progress=None):
        """Fit the metric (with ``y`` when given) and index the rows of ``X``.
        ``progress`` as for :meth:`NearestNeighbors.fit`."""
        if self.mode not in ("connectivity", "distance"):
            raise ValueError("mode must be 'connectivity' or 'distance', got %r"
                             % (self.mode,))
        self._fit_index(X, None if y is None else column_or_1d(y, warn=True),
                        progress=progress)
        self._n_features_out = self.n_samples_fit_
        return self

    def transform(self, X):
        """The k-NN graph of the rows of ``X`` against the training rows."""
        check_is_fitted(self)
        extra = 1 if self.mode == "distance" else 0
        return self.kneighbors_graph(X, self.n_neighbors + extra, mode=self.mode)

    def fit_transform(self, X, y=None):
        return self.fit(X, y).transform(X)
