"""k-nearest-neighbor imputation of mixed tables (continuous and nominal columns).

:class:`KNNImputer` fills each missing cell from the ``k`` nearest training rows that
have a value in that column (the *donors*), as scikit-learn's ``KNNImputer`` does for
numbers and R's ``VIM::kNN`` (Kowarik & Templ, "Imputation with the R package VIM",
J. Stat. Softw. 74(7), 2016) does for mixed data:

- distances come from any hdist metric, by default with the ``"ignore"`` missing-value
  policy: each pair of rows is compared on the attributes both have, rescaled to all
  attributes (docs/metrics.md, section 6; Wilson & Martinez, "Improved heterogeneous
  distance functions", JAIR 6, 1997, use the same idea for HVDM).  With HEOM and
  ``normalization="none"`` this is scikit-learn's ``nan_euclidean`` distance;
- the donors of a cell are found with hdist's exact neighbor index
  (:class:`hdist.NeighborsIndex`: brute force or a KD-tree where it prunes), ordered by
  ``(distance, training row position)``: among training rows at equal distance the one
  earlier in the training table is taken first, so the result never depends on the
  algorithm, thread count or block size;
- by default (``attribute_weights="mi"``) each column has its own search: the metric's
  attribute weights are multiplied by the mutual information of each attribute with the
  column being imputed (continuous columns cut into 10 equal-frequency bins; the column
  itself weighs 0), so that a column's donors are the rows closest on the attributes that
  predict it -- as Tutz & Ramzan ("Improved methods for the imputation of missing data by
  nearest neighbor methods", CSDA 90, 2015) weigh attributes by their association with the
  variable imputed, here with the mutual-information weights of Wettschereck, Aha & Mohri
  (AI Review 11, 1997).  The search runs over an index of the column's donors alone, so it
  is exact and needs no widening;
- a continuous cell gets the (weighted) mean of its donors, or their (weighted) median
  (``continuous="median"``, VIM's ``numFun = median``); a nominal cell the (weighted) mode,
  ties going to the value that sorts first among the column's training labels;
- ``shrinkage`` s (default 4) pulls that towards the column's prior: the donors' weights
  are scaled to sum to the number of donors ``min(k, donors)``, a nominal cell's votes get
  ``s`` times the column's value frequencies (a Dirichlet prior of ``s`` pseudo-donors), a
  continuous cell's mean (median) one more donor of weight ``s`` holding the column's mean
  (median).  With few informative donors -- rows that miss many attributes, or attributes
  that say little about the column -- the column's mode or mean wins, as it should;
- weights are ``"uniform"`` or ``"distance"`` (``1/d``; donors at distance 0 take the
  whole weight), as in :mod:`hdist.neighbors`;
- ``fit(X, sample_weight=w)`` takes frequency weights (docs/metrics.md, section 10): a
  training row of weight ``m`` counts as ``m`` copies of itself, in the metric's
  statistics, in the column statistics and among the donors.  The ``k`` donors of a cell
  are the ``k`` nearest *copies*: donors are taken in ``(distance, position)`` order until
  their weight reaches ``k``, the last one counted with the part of its weight still
  needed (a donor of weight 3 fills up to 3 of the ``k`` places), and each donor enters
  the mean, median or mode with its counted weight times its distance weight (Dudani's
  ``d_1`` and ``d_k`` are the first and last counted donors; a callable receives each
  list's donor distances, those past the counted ones repeating the last counted distance,
  so an elementwise callable weighs a donor as it would weigh each of its copies).  Integer
  weights therefore impute exactly as the training rows repeated by their weights; rows of
  weight 0 are never donors.

A row with no observed value at all has no distance to anything: each of its cells gets
the column's training mean (median with ``continuous="median"``) or mode, as
scikit-learn does for rows without a usable distance.

scikit-learn's ``check_estimator`` passes; as for :mod:`hdist.neighbors`, the tags
``allow_nan`` (a NaN is the missing value to fill) and ``string`` (string columns are
nominal attributes) are declared rather than worked around.
"""
from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import _check_feature_names_in, _num_samples, check_is_fitted

from .._search import votes as _knn
from .neighbors import _check_table
from .._search.index import AUTO_PILOT_QUERIES, NeighborsIndex, auto_algorithm, make_index
from .._core.information import _discretized, _mi_codes
from .._core.schema import CONTINUOUS, MixedTableTags, check_sample_weight, records_frame
from .._search.resolve import resolve_metric

__all__ = ["KNNImputer"]

CONTINUOUS_STATISTICS = ("mean", "median")
ATTRIBUTE_WEIGHTS = ("mi",)
#: a cumulative weight within this part of the total from half of it is on half
MEDIAN_HALF_RTOL = 1e-12


def weighted_median(values, w):
    """Row-wise weighted median of ``values`` ``[n, k]`` with weights ``w`` ``[n, k]``
    (each row's weights positive in total): the value where the cumulative weight of the
    sorted values reaches half the total; where it lands on half, the mean of that value
    and the next one of positive weight.  "On half" allows the rounding of the sums
    (``MEDIAN_HALF_RTOL`` of the total), so that a weight ``3 w`` and three weights ``w``
    -- a row of sample weight 3 and its three copies -- give the same median.  With equal
    weights this is the ordinary median (``numpy.median``)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, axis=1, kind="stable")
    v = np.take_along_axis(values, order, axis=1)
    cum = np.cumsum(np.take_along_axis(np.asarray(w, dtype=np.float64), order, axis=1),
                    axis=1)
    half = cum[:, -1:] / 2.0
    tol = MEDIAN_HALF_RTOL * cum[:, -1:]
    rows = np.arange(v.shape[0])
    lo = v[rows, np.argmax(cum >= half - tol, axis=1)]
    hi = v[rows, np.argmax(cum > half + tol, axis=1)]
    return (lo + hi) / 2.0


def _frequencies(codes, present, V, w=None):
    """The shares of the ``V`` codes among the observed ``codes`` (each counted with its
    weight ``w``; None: 1)."""
    counts = np.bincount(codes[present], weights=None if w is None else w[present],
                         minlength=V).astype(np.float64)
    return counts / counts.sum()


def _column_mode(codes, V, w=None):
    """The most frequent code of ``codes`` (``-1`` missing), each counted with its weight
    ``w`` (None: 1); ties: the smallest code."""
    ok = codes >= 0
    counts = np.bincount(codes[ok], weights=None if w is None else w[ok], minlength=V)
    return int(np.argmax(counts))


class KNNImputer(MixedTableTags, TransformerMixin, BaseEstimator):
    """Impute missing values of mixed tables from the k nearest training rows.

    Parameters
    ----------
    n_neighbors : int, default=5
        Number of donors ``k`` per missing cell (all the column's donors when it has fewer).
    weights : {"uniform", "distance", "dudani"} or callable, default="uniform"
        Donor weights, as in :class:`hdist.neighbors.KNeighborsRegressor`: equal, ``1/d``
        (donors at distance 0 take the whole weight), Dudani's linear weights, or a callable
        from the donor distances ``[n, k]`` to weights.  ``"distance"`` imputes worse on
        the benchmark's data with 30 % of the cells missing (a row that shares few
        attributes with a donor can be at distance 0 from it), so it is not the default.
    metric : str or hdist.Metric, default="heom"
        A preset name or an :class:`hdist.Metric` (copied, never fitted in place; a
        fitted one is fitted again, on the training rows).  Unless the metric's
        parameters (or ``metric_params``) set ``missing``, the ``"ignore"`` policy is used
        (``METRIC_DEFAULTS``):
        rows are compared on the attributes both have.  ``nominal=`` (which columns of a
        numpy array are nominal) is a metric parameter: ``metric_params={"nominal": [2, 3]}``
        or ``Metric("heom", nominal=[2, 3])``.  Metrics that learn from classes (``hvdm``)
        need ``y`` in :meth:`fit`.
    metric_params : dict, default=None
        Parameters for the metric, applied over those of a given :class:`hdist.Metric`.
    attribute_weights : {"mi"} or None, default="mi"
        ``"mi"``: the donors of column ``j`` are searched with the metric's attribute
        weights times the mutual information of each attribute with column ``j``
        (``attribute_weights_``; module notes).  ``None``: one search with the metric's
        own weights for every column.
    shrinkage : float >= 0, default=4.0
        Pseudo-donors holding the column's prior: its value frequencies (nominal) or its
        training mean / median (continuous), against ``min(n_neighbors, donors)`` donors
        (module notes).  ``0``: the donors alone.
    continuous : {"mean", "median"}, default="mean"
        How the donors' values of a continuous column are combined (weighted by
        ``weights``; see :func:`weighted_median`).  Nominal columns always take the
        weighted mode.
    add_indicator : bool, default=False
        Append one boolean column per feature that had missing values in ``fit``, true
        where the value was missing (scikit-learn's ``MissingIndicator``; names
        ``missingindicator_<feature>``).
    algorithm : {"auto", "brute", "kd_tree", "ball_tree", "ivf"}, default="auto"
        Search structure of the donor index; every exact choice gives the same
        imputations.  ``"ivf"`` (approximate, docs/ivf.md) finds the donors among the
        probed lists only.
    leaf_size : int, default=30
    algorithm_params : dict, default=None
        Parameters of ``algorithm="ivf"`` (``n_lists``, ``n_probe``, ``target_recall``,
        ``random_state``; :class:`hdist.NeighborsIndex`), for the donor index and each
        column's index (``n_lists`` at most the rows holding a column's value).
    device : {"cpu", "cuda"}, default="cpu"
        Where the donor searches run: ``"cuda"`` on a CUDA GPU by brute force
        (``algorithm`` "auto" or "brute"; the CPU's imputations bit for bit,
        docs/guide/gpu.md).  Checked in ``fit``; without CuPy or a GPU ``fit`` raises
        :class:`hdist.CudaUnavailableError`.
    n_jobs : int, default=None
        Threads for the neighbor search (``None``: every core the process may use).

    Attributes
    ----------
    metric_ : hdist.Metric
        The fitted metric.
    index_ : hdist.NeighborsIndex
        The fitted index over every training row under ``metric_`` (read-only); a
        column's donors are searched in an index of their own when its attribute weights
        differ.
    n_samples_fit_ : int
    statistics_ : ndarray of object, shape ``(n_features_in_,)``
        The column's training mean (median) or mode: the value a row with no observed
        attribute gets, and the prior of a continuous column.
    attribute_weights_ : ndarray, shape ``(n_features_in_, n_features_in_)``
        Column ``j``: the attribute weights of the search for column ``j``'s donors,
        scaled to sum to ``n_features_in_ - 1`` (``"mi"``), or the metric's weights.
    mutual_information_ : ndarray, shape ``(n_features_in_, n_features_in_)``
        The mutual information (nats) between each pair of columns, over the training
        rows that have both (``attribute_weights="mi"`` only).
    indicator_features_ : ndarray of int
        Positions of the features that get an indicator column (``add_indicator``):
        those with a missing value in a training row (of positive ``sample_weight``).
    n_features_in_, feature_names_in_ (named columns only)

    Notes
    -----
    Output: a pandas DataFrame comes back as a DataFrame with the same columns, index and
    dtypes (a ``category`` column keeps its categories; a value learned in ``fit`` that
    the column's categories lack is added to them).  Integer columns (``Int64``, numpy
    integers) and ordered categoricals (continuous on their codes) get the imputed value
    rounded to the nearest integer (half to even) -- a mean of ages stays an age.  A
    continuous column held as objects or text (numbers in an object column, the numeric
    text of a CSV read as strings) gets its imputed values in the form of its observed
    ones: integers (rounded) when they are all integers, text when they are all text.  A
    float column keeps floats even when its values are whole: a 0/1 flag stored as floats
    is continuous and gets a mean such as 0.4 unless it is declared nominal
    (``metric_params={"nominal": [...]}``; ``fit`` warns about such columns,
    docs/metrics.md section 1).  A numpy array comes back as float64 when it is numeric,
    as an object array otherwise; other tables (polars, pyarrow) are read through
    ``to_pandas()`` and come back as DataFrames.

    Each cell's donors are the nearest training rows that have its column, so a row
    missing two columns may take them from different donors (scikit-learn's rule;
    ``VIM::kNN`` likewise searches per variable).  Every training row is a possible donor
    of a query row, itself included when the query row is a training row: it never has
    the value being imputed, so it never donates it.

    Rows with no attribute in common.  In scikit-learn's setting -- ``attribute_weights=
    None, shrinkage=0`` with the ``"ignore"`` policy on every attribute of positive
    weight (``metric="euclidean", metric_params={"normalization": "none"}`` then gives
    scikit-learn's values) -- a training row observed on none of the attributes of
    positive weight that the row to fill has is never its donor: the pair has no distance
    (scikit-learn's ``nan_euclidean`` gives it NaN and leaves it out), where the metric
    gives it the distance of every term equal to 1 (``sqrt(m)`` with p = 2 and unit
    weights: nearer than most real distances on unscaled data).  The cell takes the
    ``min(k, d)`` nearest of the ``d`` donors left, and the column's ``statistics_`` value
    when none is left.  In every other setting each training row that has the column may
    be a donor, such a pair at that distance.

    A pandas Series is refused (``ValueError``), as scikit-learn refuses a 1-D array: a
    Series may be one column or one row, so pass ``series.to_frame()`` (one column) or
    ``series.to_frame().T`` (one row).

    See Also
    --------
    sklearn.impute.KNNImputer : the same on numeric arrays, Euclidean distance.
    hdist.KNeighborsRegressor : predicts a whole target column from the neighbors.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, np.nan, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> out = hdist.KNNImputer(n_neighbors=2).fit_transform(X)
    >>> out["job"].tolist()
    ['clerk', 'clerk', 'manager', 'manager', 'retired', 'clerk']
    >>> print(round(float(out["age"][1]), 4))    # (2 * 36 + 4 * 41.6) / 6: towards the mean
    39.7333
    >>> hdist.KNNImputer(n_neighbors=2, shrinkage=0).fit_transform(X)["age"].tolist()
    [25.0, 36.0, 47.0, 51.0, 62.0, 23.0]
    """

    #: (imputers pickled before ``algorithm_params`` existed read it as None)
    algorithm_params = None
    #: (imputers pickled before ``device`` existed searched on the CPU)
    device = "cpu"

    def __init__(self, *, n_neighbors=5, weights="uniform", metric="heom", metric_params=None,
                 attribute_weights="mi", shrinkage=4.0, continuous="mean",
                 add_indicator=False, algorithm="auto", leaf_size=30, n_jobs=None,
                 algorithm_params=None, device="cpu"):
        self.n_neighbors = n_neighbors
        self.weights = weights
        self.metric = metric
        self.metric_params = metric_params
        self.attribute_weights = attribute_weights
        self.shrinkage = shrinkage
        self.continuous = continuous
        self.add_indicator = add_indicator
        self.algorithm = algorithm
        self.leaf_size = leaf_size
        self.n_jobs = n_jobs
        self.algorithm_params = algorithm_params
        self.device = device

    # -- validation ----------------------------------------------------------------------
    def _check_params(self):
        k = self.n_neighbors
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError("n_neighbors must be an int, got %r" % (k,))
        if k < 1:
            raise ValueError("n_neighbors must be >= 1, got %d" % k)
        _knn.check_weights(self.weights)
        if not isinstance(self.continuous, str) or \
                self.continuous not in CONTINUOUS_STATISTICS:
            raise ValueError("continuous must be one of %s, got %r"
                             % (CONTINUOUS_STATISTICS, self.continuous))
        aw = self.attribute_weights
        if aw is not None and not (isinstance(aw, str) and aw in ATTRIBUTE_WEIGHTS):
            raise ValueError("attribute_weights must be 'mi' or None, got %r" % (aw,))
        sh = self.shrinkage
        if isinstance(sh, bool) or not isinstance(sh, numbers.Real):
            raise TypeError("shrinkage must be a number, got %r" % (sh,))
        if not (np.isfinite(sh) and sh >= 0):
            raise ValueError("shrinkage must be finite and >= 0, got %r" % (sh,))
        if not isinstance(self.add_indicator, (bool, np.bool_)):
            raise TypeError("add_indicator must be a bool, got %r" % (self.add_indicator,))
        ls = self.leaf_size
        if isinstance(ls, bool) or not isinstance(ls, numbers.Integral) or ls < 1:
            raise ValueError("leaf_size must be a positive int, got %r" % (ls,))

    #: the missing-value policy of the imputer's metric unless ``metric_params`` or the
    #: Metric given sets ``missing``: rows are compared on the attributes both have
    METRIC_DEFAULTS = {"missing": "ignore"}

    def _resolve_metric(self):
        """The metric to fit, unfitted: ``metric`` with ``metric_params`` applied over a
        given Metric's parameters, over :data:`METRIC_DEFAULTS`
        (:func:`~hdist._search.resolve.resolve_metric`); a fitted Metric is copied too
        and fitted again on the training rows."""
        return resolve_metric(self.metric, self.metric_params,
                              defaults=self.METRIC_DEFAULTS, refit=True)

    @staticmethod
    def _as_table(X):
        """``X`` as a pandas DataFrame or a 2-D numpy array (rows can be taken by
        position, values written back)."""
        if isinstance(X, np.ndarray):
            if X.dtype.kind == "c":
                raise ValueError("Complex data not supported: X has dtype %s" % X.dtype)
            if X.ndim == 1 and X.dtype.names is None:
                raise ValueError("Expected a 2-D table for X, got a 1-D array. Reshape your "
                                 "data either using x.reshape(-1, 1) if it has a single "
                                 "feature or x.reshape(1, -1) if it is a single row.")
            if X.dtype.names is not None:
                import pandas as pd
                return pd.DataFrame.from_records(X)
            return X
        if hasattr(X, "iloc"):
            if getattr(X, "ndim", 2) == 1:      # a pandas Series: one column or one row?
                _check_table(X)
            return X
        if hasattr(X, "to_pandas") and hasattr(X, "schema"):     # polars, pyarrow
            return X.to_pandas()
        from scipy import sparse
        if sparse.issparse(X):
            raise TypeError("KNNImputer takes dense tables; got a sparse matrix (A sparse "
                            "matrix was passed, but dense data is required)")
        if hasattr(X, "__array__"):
            return KNNImputer._as_table(np.asarray(X))
        if isinstance(X, (list, tuple)):
            frame = records_frame(X)            # a list of dicts, one per row
            if frame is not None:
                return frame
            arr = np.asarray(X, dtype=object)
            if arr.ndim != 2:
                raise ValueError("Expected a 2-D table for X, got %d-D rows" % arr.ndim)
            try:
                return arr.astype(np.float64)
            except (TypeError, ValueError):
                return arr
        raise TypeError("X must be a table (pandas, polars, pyarrow, numpy or a list of "
                        "rows), got %s" % type(X).__name__)

    def _validate(self, X, reset):
        X = self._as_table(X)
        self._check_features(X, reset)
        return X

    # -- fit -----------------------------------------------------------------------------
    def fit(self, X, y=None, sample_weight=None):
        """Fit the metric on ``X`` (with ``y`` when the metric learns from classes) and
        index its rows as donors.

        ``sample_weight`` ``[n]`` (finite, non-negative, not all zero): frequency weights;
        a row of weight ``m`` counts as ``m`` copies of itself in the metric's statistics
        (:meth:`hdist.Metric.fit`), in ``statistics_`` and among the ``k`` donors of a
        cell (module notes).  Rows of weight 0 are never donors."""
        self._check_params()
        X = self._validate(X, reset=True)
        n = _num_samples(X)
        if n < 2:
            raise ValueError("KNNImputer needs at least 2 training rows, got %d sample(s)"
                             % n)
        sw = check_sample_weight(sample_weight, n)
        if self.n_features_in_ == 0:
            raise ValueError("Found array with 0 feature(s) (shape=(%d, 0)) while a minimum "
                             "of 1 is required." % n)
        metric = self._resolve_metric()
        labels = None
        if _knn.needs_labels(metric):
            if y is None:
                raise ValueError("metric %r learns from classes: call fit(X, y)"
                                 % metric.name)
            labels = y
        index = make_index(metric, self.algorithm, int(self.leaf_size),
                           self.algorithm_params, self.device)
        metric.fit(X, labels, sample_weight=sw)
        index.fit(None)
        self._index = index
        self.metric_ = metric
        schema = self.metric_.schema_
        values, present = self._encode(X)
        # a row of weight 0 donates nothing and shows no missing value to the indicator
        missing = ~present
        if sw is not None:
            present &= (sw > 0)[:, None]
            missing &= (sw > 0)[:, None]
        m = len(values)
        for j in range(m):
            if not present[:, j].any():
                raise ValueError("column %r has no observed value in the training data%s; "
                                 "there is nothing to impute it from"
                                 % (schema.names_[j], "" if sw is None
                                    else " (rows of positive sample_weight)"))
        self._values = values
        self._present = present
        self._mass = sw
        self._n_donors = present.sum(axis=0)
        stats = np.empty(m, dtype=object)
        for j in range(m):
            v = values[j]
            wj = None if sw is None else sw[present[:, j]]
            if schema.kinds_[j] == CONTINUOUS:
                obs = v[present[:, j]]
                if wj is None:
                    stats[j] = float(np.mean(obs) if self.continuous == "mean"
                                     else np.median(obs))
                elif self.continuous == "mean":
                    stats[j] = float(_knn.weighted_mean(obs[None, :], wj[None, :])[0])
                else:
                    stats[j] = float(weighted_median(obs[None, :], wj[None, :])[0])
            else:
                stats[j] = _column_mode(v, len(schema.categories_[j]), sw)
        self._stat_codes = stats
        # the prior the donors' vote is shrunk towards: the column's value frequencies
        self._prior = [None if schema.kinds_[j] == CONTINUOUS else
                       _frequencies(values[j], present[:, j], len(schema.categories_[j]), sw)
                       for j in range(m)]
        mass = np.ones(n) if sw is None else sw
        self._donor_count = np.array([min(float(self.n_neighbors), mass[present[:, j]].sum())
                                      for j in range(m)])
        self._column_index = None
        if self.attribute_weights == "mi":
            self.attribute_weights_ = self._mi_weights(values, present, sw)
            self._column_index = [self._donor_index(X, labels, sw, j) for j in range(m)]
        else:
            self.attribute_weights_ = np.repeat(self.metric_.weights_[:, None], m, axis=1)
        self.statistics_ = np.array([self._label(j, s) for j, s in enumerate(stats)],
                                    dtype=object)
        self.indicator_features_ = np.flatnonzero(missing.any(axis=0)) \
            if self.add_indicator else np.zeros(0, dtype=np.intp)
        self.n_samples_fit_ = n
        return self

    @property
    def index_(self):
        """The fitted :class:`hdist.NeighborsIndex` over every training row under
        ``metric_`` (read-only; shared, not copied).

        Raises
        ------
        NotFittedError
            The imputer is not fitted.
        """
        check_is_fitted(self, "metric_")
        return self._index

    def _mi_weights(self, values, present, sw):
        """``[m, m]``: column ``j`` holds the attribute weights of the search for the donors
        of column ``j``: the metric's weight of each attribute ``a`` times the mutual
        information ``I(x_a; x_j)`` (nats) over the training rows that have both (of
        positive weight), continuous columns cut into 10 equal-frequency bins first; the
        target's own weight is 0.  A column that shares no information with any other
        keeps the metric's weights.  Each column is scaled to sum to ``m - 1``."""
        schema = self.metric_.schema_
        m = len(values)
        zeros = np.zeros(len(values[0]), dtype=np.int64)
        codes = []
        for j in range(m):
            if schema.kinds_[j] == CONTINUOUS:
                w = None if sw is None else np.where(present[:, j], sw, 0.0)
                c = _discretized(np.where(present[:, j], values[j], np.nan), zeros, None,
                                 "discretizer", w)
            else:
                c = np.asarray(values[j], dtype=np.int64)
            codes.append(np.where(present[:, j], c, -1))
        info = np.zeros((m, m))
        for j in range(m):
            for a in range(j + 1, m):
                keep = (codes[a] >= 0) & (codes[j] >= 0)
                if keep.any():
                    info[a, j] = info[j, a] = _mi_codes(
                        codes[a][keep], codes[j][keep], None if sw is None else sw[keep])
        self.mutual_information_ = info
        base = np.asarray(self.metric_.weights_, dtype=np.float64)
        out = base[:, None] * info
        for j in range(m):
            col = out[:, j]
            if not col.sum() > 0.0:
                col[:] = base
            col[j] = 0.0
            total = col.sum()
            if total > 0.0:
                col *= max(m - 1, 1) / total
        return out

    def _donor_index(self, X, labels, sw, j):
        """``(index, rows)``: an index over the donors of column ``j`` (training rows that
        have it, of positive weight) whose metric weighs the attributes by column ``j`` of
        ``attribute_weights_`` (its other statistics as the imputer's metric, which is
        fitted on the same rows), and the donors' training positions (ascending, so that
        the index's ties by position are ties by training position)."""
        base = self.metric_
        w = self.attribute_weights_[:, j]
        if not w.any():         # a one-column table: any weights (its rows are blank)
            w = np.ones_like(w)
        metric = resolve_metric(base, {"weights": w}, refit=True)
        with warnings.catch_warnings():     # the imputer's own metric has said it all
            warnings.simplefilter("ignore")
            metric.fit(X, labels, sample_weight=sw)
        rows = np.flatnonzero(self._present[:, j])
        index = make_index(metric, self.algorithm, int(self.leaf_size),
                           self.algorithm_params, self.device)
        index.fit(_take(X, rows))
        return index, rows

    def _encode(self, X):
        """Per column (in table order) its values -- floats (NaN missing) or nominal codes
        (-1 missing) -- and the ``[n, m]`` mask of observed cells."""
        schema = self.metric_.schema_
        cont, nom = schema.encode(X, None, "X")
        values, ic, inom = [], 0, 0
        for kind in schema.kinds_:
            if kind == CONTINUOUS:
                values.append(cont[:, ic])
                ic += 1
            else:
                values.append(nom[:, inom])
                inom += 1
        present = np.empty((cont.shape[0], len(values)), dtype=bool)
        for j, v in enumerate(values):
            present[:, j] = ~np.isnan(v) if v.dtype.kind == "f" else v >= 0
        return values, present

    def _label(self, j, value):
        """A column's value as the label it has in the table (nominal: the training label
        of the code; continuous: the float)."""
        schema = self.metric_.schema_
        if schema.kinds_[j] == CONTINUOUS:
            return value
        return schema.categories_[j][int(value)]

    # -- transform -------------------------------------------------------------------------
    def transform(self, X):
        """``X`` with every missing cell imputed (see the class notes for the output
        type), followed by the indicator columns with ``add_indicator``."""
        check_is_fitted(self, "metric_")
        X = self._validate(X, reset=False)
        values, present = self._encode(X)
        missing = ~present
        filled = self._impute(X, missing)
        return self._write(X, filled, missing)

    def _impute(self, X, missing):
        """``{column: (rows, values)}`` for the missing cells of ``X``: values are floats
        (continuous) or training codes (nominal)."""
        m = missing.shape[1]
        out = {j: [[], []] for j in range(m)}
        blank = missing.all(axis=1)
        for j in range(m):
            rows = np.flatnonzero(blank & missing[:, j])
            if rows.size:
                out[j][0].append(rows)
                out[j][1].append(np.full(rows.size, self._stat_codes[j]))
        if self._column_index is None:
            groups = [(np.arange(m), self._index, None)]
        else:
            groups = [(np.array([j]), ix, pos) for j, (ix, pos) in
                      enumerate(self._column_index)]
        common = self._common_attributes()
        share = None if common is None else (np.packbits(~missing[:, common], axis=1),
                                             np.packbits(self._present[:, common], axis=1))
        for cols, index, pos in groups:
            self._impute_group(X, missing, blank, cols, index, pos, out, share)
        return {j: (np.concatenate(r), np.concatenate(v)) for j, (r, v) in out.items() if r}

    def _common_attributes(self):
        """Scikit-learn's donor rule (one search for all columns, no shrinkage) under the
        "ignore" policy on every attribute of positive weight: the mask of those
        attributes, a pair of rows having a distance only when one of them is observed in
        both; a training row with none of them in common with the row to fill is then no
        donor (class notes).  None otherwise: the rule is off, or every pair has a
        distance."""
        if self._column_index is not None or float(self.shrinkage) != 0.0:
            return None
        plan = self.metric_.plan_
        common = np.zeros(self.n_features_in_, dtype=bool)
        for comp, w in zip(plan.components, plan.weights):
            if w > 0.0:
                if comp.policy != "ignore":
                    return None
                common[comp.col] = True
        return common

    def _impute_group(self, X, missing, blank, cols, index, pos, out, share=None):
        """Impute the missing cells of columns ``cols`` of ``X`` from the donors ``index``
        finds (its rows are the training rows ``pos``; None: all of them), appending to
        ``out``.  A query row's neighbor list is widened (doubled) until it holds the
        donors each of its missing columns needs.  ``share``: the packed masks of the
        attributes observed in the rows of ``X`` and in the training rows, among those
        of :meth:`_common_attributes` (None: every listed row that has the column is a
        donor); a cell with no donor left gets the column's statistic."""
        rows = np.flatnonzero(missing[:, cols].any(axis=1) & ~blank)
        if not rows.size:
            return
        todo = missing[rows][:, cols]
        n = self.n_samples_fit_ if pos is None else pos.size
        k = int(self.n_neighbors)
        need = np.minimum(k, self._n_donors)
        # a first width that usually holds k donors of every column, doubled while not
        frac = self._n_donors[cols[todo.any(axis=0)]] / n
        width = min(n, int(np.ceil(2 * k / frac.min())))
        index = self._search_index(X, rows, index)
        while rows.size:
            dist, ind = index.kneighbors(_take(X, rows), width, n_jobs=self.n_jobs)
            if pos is not None:
                ind = pos[ind]
            again = np.zeros(rows.size, dtype=bool)
            for t in np.flatnonzero(todo.any(axis=0)):
                j = cols[t]
                sel = np.flatnonzero(todo[:, t])
                has = self._present[ind[sel], j]
                if share is not None:       # no donor without an attribute in common
                    has &= (share[0][rows[sel]][:, None, :] & share[1][ind[sel]]).any(axis=2)
                if self._mass is None:
                    done = has.sum(axis=1) >= need[j]
                else:       # k copies listed, or every donor of the column
                    done = (np.where(has, self._mass[ind[sel]], 0.0).sum(axis=1) >= k) | \
                        (has.sum(axis=1) >= self._n_donors[j])
                done |= width >= n
                ok = sel[done]
                if ok.size:
                    # fewer donors than needed only where the whole table was listed
                    hd = has[done]
                    got = np.minimum(hd.sum(axis=1), need[j]) if self._mass is None else \
                        np.where(hd.any(axis=1), need[j], 0)
                    for c in np.unique(got):
                        g = got == c
                        out[j][0].append(rows[ok[g]])
                        out[j][1].append(
                            np.full(int(g.sum()), self._stat_codes[j]) if c == 0 else
                            self._combine(j, dist[ok[g]], ind[ok[g]], hd[g], int(c)))
                    todo[ok, t] = False
                again[sel[~done]] = True
            rows, todo = rows[again], todo[again]
            width = min(n, 2 * width)

    def _search_index(self, X, rows, ix):
        """The index that finds the donors of query rows ``rows``.  With
        ``algorithm="auto"`` the index's own rule is applied once more, its pilot queries
        now being rows to impute: a KD-tree chosen on complete training rows prunes much
        less for rows with missing values (a skipped attribute bounds nothing), and brute
        force is used when the pilot shows it (the donors are the same either way).  On a
        device other than the CPU the index searches by brute force already."""
        if self.algorithm != "auto" or self.device != "cpu" or ix.algorithm_ == "brute" \
                or not rows.size:
            return ix
        n = ix.n_train_

        def pilot():
            q = np.unique(np.linspace(0, rows.size - 1, AUTO_PILOT_QUERIES).astype(np.intp))
            ix.kneighbors(_take(X, rows[q]), min(5, n), n_jobs=1)
            return float(np.mean(ix.n_distance_evaluations_))
        if auto_algorithm(ix.metric_.plan_, n, pilot) != "brute":
            return ix
        if ix is self._index:
            return NeighborsIndex(self.metric_, algorithm="brute").fit()
        brute = copy.copy(ix)       # the same rows and metric, searched by brute force
        brute.algorithm_, brute._tree = "brute", None
        return brute

    def _combine(self, j, dist, ind, has, kk):
        """The imputed value of column ``j`` for query rows whose neighbor lists
        ``(dist, ind)`` ``[r, width]`` (sorted by distance, then position) hold at least
        ``kk`` donors (``has``): their first ``kk`` donors' weighted mean, median or mode.
        With sample weights, the donors up to ``n_neighbors`` copies, each weighted by its
        counted copies (``_knn.mass_weights``, ties by position)."""
        pos = np.argsort(~has, axis=1, kind="stable")
        if self._mass is None:
            pos = pos[:, :kk]
        d = np.take_along_axis(dist, pos, axis=1)
        donors = np.take_along_axis(ind, pos, axis=1)
        if self._mass is None:
            w = _knn.neighbor_weights(d, self.weights)
        else:
            mass = np.where(np.take_along_axis(has, pos, axis=1), self._mass[donors], 0.0)
            k = int(self.n_neighbors)
            # the counted donors are a prefix of each list: keep the longest one
            used = (mass > 0) & (np.cumsum(mass, axis=1) - mass < k)
            L = max(1, int(used.sum(axis=1).max()))
            d, donors, mass = d[:, :L], donors[:, :L], mass[:, :L]
            w = _knn.mass_weights(d, mass, k, self.weights, "index")
            # a listed row that is no donor (weight 0) holds no value: any stands in
            donors = np.where(mass > 0, donors, donors[:, :1])
        vals = self._values[j][donors]
        s = float(self.shrinkage)
        if s > 0.0:     # the donors count as many as they fill places; the prior as s
            w = np.asarray(w, dtype=np.float64)
            w = w * (self._donor_count[j] / w.sum(axis=1, keepdims=True))
        if self.metric_.schema_.kinds_[j] != CONTINUOUS:
            V = len(self.metric_.schema_.categories_[j])
            votes = _knn.class_votes(vals, w, V)
            if s > 0.0:
                votes = votes + s * self._prior[j][None, :]
            return _knn.vote_winner(votes)
        if s > 0.0:     # the column's statistic as one more donor of weight s
            vals = np.hstack([vals, np.full((vals.shape[0], 1), self._stat_codes[j])])
            w = np.hstack([w, np.full((w.shape[0], 1), s)])
        if self.continuous == "median":
            return weighted_median(vals, w)
        return _knn.weighted_mean(vals, w)

    # -- output --------------------------------------------------------------------------
    def _write(self, X, filled, missing):
        schema = self.metric_.schema_
        names = self.get_feature_names_out()
        ind_cols = missing[:, self.indicator_features_]
        if hasattr(X, "iloc"):
            import pandas as pd
            out = X.copy()
            for j, (rows, vals) in filled.items():
                out.isetitem(j, _fill_series(out.iloc[:, j], rows, vals, schema, j))
            if self.indicator_features_.size:
                extra = pd.DataFrame(ind_cols, index=out.index,
                                     columns=list(names[self.n_features_in_:]))
                out = pd.concat([out, extra], axis=1)
            return out
        numeric = X.dtype.kind in "biuf"
        out = np.array(X, dtype=np.float64 if numeric else object, copy=True)
        for j, (rows, vals) in filled.items():
            if schema.kinds_[j] == CONTINUOUS:
                out[rows, j] = vals if numeric else _in_kind(X[:, j], vals, schema)
            else:
                labels = schema.categories_[j]
                out[rows, j] = [labels[int(c)] for c in vals]
        if self.indicator_features_.size:
            out = np.hstack([out, ind_cols.astype(out.dtype)])
        return out

    def get_feature_names_out(self, input_features=None):
        """The input feature names, then ``missingindicator_<name>`` for each indicator
        column."""
        check_is_fitted(self, "metric_")
        names = _check_feature_names_in(self, input_features)
        extra = ["missingindicator_%s" % names[j] for j in self.indicator_features_]
        return np.asarray(list(names) + extra, dtype=object)


def _take(X, rows):
    """Rows of a DataFrame or numpy array by position."""
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _fill_series(s, rows, vals, schema, j):
    """Column ``s`` of a DataFrame with ``vals`` written at positions ``rows``, in the
    column's own dtype (module notes)."""
    import pandas as pd
    s = s.copy()
    dtype = s.dtype
    if schema.kinds_[j] != CONTINUOUS:
        labels = schema.categories_[j]
        new = [labels[int(c)] for c in vals]
        if isinstance(dtype, pd.CategoricalDtype):
            lack = [v for v in dict.fromkeys(new) if v not in dtype.categories]
            if lack:
                s = s.cat.add_categories(lack)
        s.iloc[rows] = pd.array(new, dtype=s.dtype) if not isinstance(
            dtype, pd.CategoricalDtype) and dtype != object else new
        return s
    if isinstance(dtype, pd.CategoricalDtype):      # ordered: continuous on its codes
        cats = list(schema.categories_[j])
        codes = np.clip(np.rint(vals), 0, len(cats) - 1).astype(np.intp)
        new = [cats[c] for c in codes]
        lack = [v for v in dict.fromkeys(new) if v not in dtype.categories]
        if lack:
            s = s.cat.add_categories(lack)
        s.iloc[rows] = new
        return s
    vals = np.asarray(vals, dtype=np.float64)
    if pd.api.types.is_integer_dtype(dtype):
        vals = np.rint(vals)
    if dtype == object or pd.api.types.is_string_dtype(dtype):
        # numbers held as objects or text: in the column's own form (module notes)
        new = _in_kind(s.to_numpy(dtype=object), vals, schema)
        s.iloc[rows] = pd.array(new, dtype=dtype) if dtype != object else new
        return s
    # the column's own width (float32, Int32, Float32 ...)
    s.iloc[rows] = vals.astype(getattr(dtype, "numpy_dtype", dtype))
    return s


def _in_kind(column, vals, schema):
    """Imputed values ``vals`` of a continuous column held as Python objects or text
    (``column``), in the form of its observed values: integers (rounded, half to even)
    when every observed value is an integer or spells one, text when every one is text,
    else floats.  The schema's missing-value text is no observed value."""
    from .._core.schema import is_missing_scalar
    seen = [v for v in dict.fromkeys(column.tolist()) if not is_missing_scalar(v)
            and not (isinstance(v, str) and v.strip() in schema.na_values_)]
    text = bool(seen) and all(isinstance(v, str) for v in seen)
    whole = bool(seen) and all(
        (isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)))
        or (isinstance(v, str) and v.strip().lstrip("+-").isdigit()) for v in seen)
    out = np.empty(len(vals), dtype=object)
    for i, v in enumerate(np.asarray(vals, dtype=np.float64)):
        v = int(np.rint(v)) if whole else float(v)
        out[i] = str(v) if text else v
    return out
