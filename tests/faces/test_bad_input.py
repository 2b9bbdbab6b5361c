"""Bad and hostile input, as one table over every public function and estimator.

Each row of :data:`REFUSED` is a call that must raise ``ValueError`` or ``TypeError``
(scikit-learn's ``NotFittedError`` and hdist's are ValueErrors) with a message naming the
argument or column at fault.  Each row of :data:`DEFINED` is an input that docs/metrics.md
(or the documented floating-point rules of :class:`hdist._core.plan.Plan`) gives a meaning to, with
the exact result expected:

- read-only, memory-mapped, Fortran-ordered and strided inputs work and change nothing;
- a constant column has ``δ = inf`` (observed values compare as equal; ``δ = 1`` without
  normalization);
- a query whose values are all missing is at the distance the missing policy defines
  (docs/metrics.md §6): every component 1 under ``"one"``, the "as if every component were
  1" rule under ``"ignore"``, the largest possible difference under ``"max"``;
- huge magnitudes (±1e308) whose difference overflows float64 give an infinite distance,
  never NaN, and valid neighbor indices; a spread that overflows float64 is an undefined
  ``δ`` and becomes 1 (docs/metrics.md §3); subnormal values are normalized exactly;
- gigantic ``n_jobs`` is capped (results never depend on threads); 10^6 distinct
  nominal values work; object columns may mix types (``1`` and ``1.0`` are one value,
  ``"1"`` another).
"""
import math
import re

import numpy as np
import pytest

import hdist
from hdist import Metric, NeighborsIndex
from hdist import discretize as dz

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")
pytestmark = [pytestmark, pytest.mark.sanitize, pytest.mark.smoke]

pd = pytest.importorskip("pandas")

N = 8
DF = pd.DataFrame({
    "a": [0.5, -1.0, 2.0, 3.5, 0.0, 1.25, -2.0, 4.0],
    "b": list("xyxyxyzz"),
    "c": [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0],
})
Y = np.array([0, 1, 0, 1, 0, 1, 1, 0])
ARR = np.array([[0.5, 3.0], [-1.0, 1.0], [2.0, 4.0], [3.5, 1.0]])


def fitted(name="heom", X=DF, y="auto", **params):
    """``Metric(name, **params)`` fitted on ``X`` (with the first labels of ``Y``)."""
    if isinstance(y, str) and y == "auto":
        y = Y[:len(X)] if getattr(X, "ndim", 0) == 2 and len(X) <= N else None
    return Metric(name, **params).fit(X, y)


def index(algorithm="brute", **params):
    return NeighborsIndex(Metric("heom", **params), algorithm=algorithm).fit(DF, Y)


def _with(df, **cols):
    out = df.copy()
    for k, v in cols.items():
        out[k] = v
    return out


def _sk(name):
    return getattr(hdist, name)


def _optional(module, extra):
    """``hdist.<module>``, whose optional dependency ``extra`` must be installed."""
    pytest.importorskip(extra)
    return getattr(hdist, module)


# -- calls that must be refused ---------------------------------------------------------
# (id, call, exception, regular expression the message must match)
REFUSED = [
    # metric names and parameters
    ("metric-unknown", lambda: Metric("nope"), ValueError, "unknown metric 'nope'"),
    ("metric-name-not-str", lambda: Metric(3), TypeError, "metric name must be a string"),
    ("param-unknown", lambda: Metric("heom", q=2), TypeError, r"parameter\(s\) 'q'"),
    ("param-not-of-preset", lambda: Metric("euclidean", p=3), TypeError, "'p'"),
    ("p-zero", lambda: fitted(p=0), ValueError, "p must be > 0"),
    ("p-negative", lambda: fitted(p=-1), ValueError, "p must be > 0"),
    ("p-nan", lambda: fitted(p=float("nan")), ValueError, "p must not be NaN"),
    ("p-minus-inf", lambda: fitted(p=-math.inf), ValueError, "p must be finite"),
    ("p-string", lambda: fitted(p="2"), TypeError, "p must be a number"),
    ("p-bool", lambda: fitted(p=True), TypeError, "p must be a number"),
    ("p-fractional-too-big", lambda: fitted("fractional", p=2.0), ValueError, "0 < p < 1"),
    ("normalization-unknown", lambda: fitted(normalization="max"), ValueError,
     "normalization must be one of"),
    ("missing-unknown", lambda: fitted(missing="drop"), ValueError, "missing policy"),
    ("missing-dict-key", lambda: fitted(missing={"numeric": "one"}), ValueError,
     "missing: keys must be"),
    ("aggregate-unknown", lambda: fitted(aggregate="median"), ValueError, "aggregate"),
    ("trim-nan", lambda: fitted(normalization="trimmed_range", trim=float("nan")),
     ValueError, "trim must not be NaN"),
    ("trim-half", lambda: fitted(normalization="trimmed_range", trim=0.5), ValueError,
     r"trim must be in \[0, 0.5\)"),
    ("vdm-unknown", lambda: fitted("hvdm", vdm="N4"), ValueError, "vdm must be one of"),
    ("unseen-unknown", lambda: fitted("hvdm", unseen="mean"), ValueError, "unseen must be"),
    ("sigma-nan", lambda: fitted("gvdm", sigma=float("nan")), ValueError, "sigma"),
    ("sigma-inf", lambda: fitted("gvdm", sigma=math.inf), ValueError, "sigma"),
    ("width-zero", lambda: fitted("lvdm", width=0.0), ValueError, "width"),
    ("step-tiny", lambda: fitted("pvdm", step=1e-300), ValueError, "step"),
    ("n-bins-zero", lambda: fitted("ivdm", n_bins=0), ValueError, "n_bins"),
    ("n-bins-gigantic", lambda: fitted("dvdm", n_bins=10 ** 9), ValueError, "n_bins"),
    ("n-bins-float", lambda: fitted("ivdm", n_bins=2.5), TypeError, "n_bins"),
    ("hds-n-bins-one", lambda: fitted("hds", n_bins=1), ValueError, "n_bins"),
    ("hds-average-str", lambda: fitted("hds", average="yes"), TypeError, "average"),
    # weights
    ("weights-negative", lambda: fitted(weights=[1, -1, 1]), ValueError, "non-negative"),
    ("weights-length", lambda: fitted(weights=[1, 1]), ValueError, "one entry per column"),
    ("weights-2d", lambda: fitted(weights=[[1, 1, 1]]), ValueError, "one entry per column"),
    ("weights-nan", lambda: fitted(weights=[1, float("nan"), 1]), ValueError,
     "weights must be finite"),
    ("weights-inf", lambda: fitted(weights=[1, math.inf, 1]), ValueError,
     "weights must be finite"),
    ("weights-all-zero", lambda: fitted(weights=[0, 0, 0]), ValueError, "all be zero"),
    ("weights-strings", lambda: fitted(weights=["a", "b", "c"]), TypeError, "weights"),
    ("weights-unknown-name", lambda: fitted(weights={"zz": 1.0}), ValueError, "'zz'"),
    ("weights-bad-word", lambda: fitted(weights="entropy"), ValueError, "weights must be"),
    ("weights-overflow", lambda: fitted(p=0.5, weights=[1e308, 1e308, 1]), ValueError,
     "weights .* out of float64's range"),
    # nominal= declarations
    ("nominal-position", lambda: fitted(nominal=[5]), ValueError, "position 5"),
    ("nominal-name", lambda: fitted(nominal=["zz"]), ValueError, "no column named 'zz'"),
    ("nominal-float", lambda: fitted(nominal=[1.5]), TypeError, "nominal"),
    # class labels
    ("hvdm-without-y", lambda: fitted("hvdm", y=None), ValueError, "needs class labels"),
    ("hvdm-y-none", lambda: fitted("hvdm", y=[0, 1, None, 1, 0, 1, 1, 0]), ValueError,
     "missing label at row 2"),
    ("hvdm-y-nan", lambda: fitted("hvdm", y=[0, 1, np.nan, 1, 0, 1, 1, 0]), ValueError,
     "missing label at row 2"),
    ("ivdm-y-nat", lambda: fitted("ivdm", y=[0, 1, 1, pd.NaT, 0, 1, 1, 0]), ValueError,
     "missing label at row 3"),
    ("y-length", lambda: fitted("hvdm", y=[0, 1]), ValueError, "2 labels for 8 rows"),
    ("y-2d", lambda: fitted("hvdm", y=np.zeros((8, 2))), ValueError, "y must be 1-D"),
    # training tables
    ("fit-0-rows", lambda: fitted(X=DF.iloc[:0]), ValueError, "0 rows"),
    ("fit-1-row", lambda: fitted(X=DF.iloc[:1], y=None), ValueError, "1 row"),
    ("fit-1d", lambda: fitted(X=np.arange(5.0)), ValueError, "must be 2-D"),
    ("fit-3d", lambda: fitted(X=np.zeros((2, 2, 2))), ValueError, "must be 2-D"),
    ("fit-scalar", lambda: fitted(X=3.0), ValueError, "2-D"),
    ("fit-none", lambda: fitted(X=None), ValueError, "2-D"),
    ("fit-no-columns", lambda: fitted(X=np.zeros((3, 0))), ValueError, "no columns"),
    ("fit-series", lambda: fitted(X=DF["a"]), ValueError, "Series"),
    ("fit-complex", lambda: fitted(X=np.zeros((3, 2), complex)), TypeError,
     r"column '0' has an unsupported type \(complex\)"),
    ("fit-datetime", lambda: fitted(X=_with(DF, d=pd.date_range("2020", periods=N))),
     TypeError, r"column 'd' has an unsupported type \(datetime\)"),
    ("fit-timedelta", lambda: fitted(X=np.zeros((3, 2), "timedelta64[s]")), TypeError,
     "unsupported type"),
    ("fit-plus-inf", lambda: fitted(X=_with(DF, a=[np.inf] + [0.0] * 7)), ValueError,
     "column 'a' holds an infinite value"),
    ("fit-minus-inf-numpy", lambda: fitted(X=np.array([[1.0, -np.inf], [2.0, 3.0]])),
     ValueError, "column '1' holds an infinite value"),
    # (under "one" and "ignore" such a column is fitted with a warning)
    ("fit-all-missing", lambda: fitted(X=_with(DF, c=[np.nan] * N), missing="max"),
     ValueError, "column 'c' has no observed value"),
    ("fit-all-missing-nominal", lambda: fitted(X=_with(DF, b=[None] * N), nominal=["b"],
                                               missing="symbol"),
     ValueError, "column 'b' has no observed value"),
    ("fit-duplicated-names", lambda: fitted(X=DF.rename(columns={"c": "a"})), ValueError,
     "duplicated column names"),
    ("vdm-continuous-column", lambda: fitted("vdm", X=ARR, y=Y[:4]), ValueError,
     "column '0' is continuous"),
    ("hds-single-column", lambda: fitted("hds", X=DF[["b"]], y=None), ValueError,
     "no other column"),
    ("declared-continuous-strings",
     lambda: fitted(X=DF, nominal=["a"], continuous="rest"), TypeError,
     "column 'b' is declared continuous but holds the value 'x', which is not a number"),
    # query tables
    ("query-missing-column", lambda: fitted().pairwise(DF[["a", "b"]]), ValueError,
     r"missing the column\(s\) \['c'\]"),
    ("query-extra-column", lambda: fitted().pairwise(_with(DF, d=1.0)), ValueError,
     r"column\(s\) \['d'\] not seen in fit"),
    ("query-wrong-type", lambda: fitted().kneighbors(_with(DF, a=list("abcdefgh")), 2),
     TypeError, "column 'a' was continuous in fit but holds the value 'a', which is not a "
     r"number; convert the column first \(pandas.to_numeric"),
    ("query-wrong-width", lambda: fitted(X=ARR).pairwise(ARR[:, :1]), ValueError,
     "1 columns; the metric was fitted on 2"),
    ("query-1d", lambda: fitted(X=ARR).kneighbors(ARR[0], 1), ValueError, "2-D"),
    ("query-minus-inf", lambda: fitted().radius_neighbors(_with(DF, c=[-np.inf] * N), 1.0),
     ValueError, "column 'c' holds an infinite value"),
    ("query-complex", lambda: fitted(X=ARR).pairwise(ARR.astype(complex)), TypeError,
     "unsupported type"),
    ("query-duplicated-names", lambda: fitted().pairwise(
        pd.DataFrame([[1.0, "x", 2.0, 3.0]], columns=["a", "b", "c", "c"])), ValueError,
     "duplicated column names"),
    ("query-overflows-spread", lambda: fitted(X=np.array([[0.0], [1e-320], [5e-324]]))
     .pairwise(np.array([[1e10]])), ValueError,
     "column '0': the value 10000000000.0 overflows"),
    # k, r, n_jobs
    ("k-zero", lambda: fitted().kneighbors(DF, 0), ValueError, "k must be >= 1"),
    ("k-negative", lambda: fitted().kneighbors(DF, -3), ValueError, "k must be >= 1"),
    ("k-above-n", lambda: fitted().kneighbors(DF, N + 1), ValueError,
     "k = 9 is larger than the 8"),
    ("k-gigantic", lambda: fitted().kneighbors(DF, 10 ** 18), ValueError,
     "k = 1000000000000000000 is larger"),
    ("k-beyond-int64", lambda: fitted().kneighbors(DF, 2 ** 70), ValueError, "k = "),
    ("k-float", lambda: fitted().kneighbors(DF, 2.0), TypeError, "k must be an int"),
    ("k-string", lambda: fitted().kneighbors(DF, "3"), TypeError, "k must be an int"),
    ("k-n-excluding-self", lambda: fitted().kneighbors(None, N, exclude_self=True),
     ValueError, "larger than the 7"),
    ("exclude-self-foreign", lambda: fitted().kneighbors(DF.iloc[:3], 2, exclude_self=True),
     ValueError, "exclude_self"),
    ("r-negative", lambda: fitted().radius_neighbors(DF, -1.0), ValueError, "r must be >= 0"),
    ("r-nan", lambda: fitted().radius_neighbors(DF, float("nan")), ValueError,
     "r must not be NaN"),
    ("r-string", lambda: fitted().radius_neighbors(DF, "1"), TypeError, "r must be a number"),
    ("n-jobs-zero", lambda: fitted().kneighbors(DF, 2, n_jobs=0), ValueError, "n_jobs == 0"),
    ("n-jobs-float", lambda: fitted().pairwise(DF, n_jobs=1.5), TypeError, "n_jobs"),
    ("n-jobs-string", lambda: fitted().radius_neighbors(DF, 1.0, n_jobs="2"), TypeError,
     "n_jobs"),
    # use before fit
    ("unfitted-pairwise", lambda: Metric("heom").pairwise(DF), ValueError, "not fitted"),
    ("unfitted-kneighbors", lambda: Metric("hvdm").kneighbors(DF), ValueError, "not fitted"),
    ("unfitted-radius", lambda: Metric("gower").radius_neighbors(DF), ValueError,
     "not fitted"),
    ("unfitted-explain", lambda: Metric("heom").explain(DF.iloc[0], DF.iloc[1]), ValueError,
     "not fitted"),
    ("unfitted-value-distances", lambda: Metric("hvdm").value_distances("b"), ValueError,
     "not fitted"),
    ("unfitted-index", lambda: NeighborsIndex("heom").kneighbors(DF), ValueError,
     "not fitted"),
    ("unfitted-discretizer", lambda: dz.equal_width(3).transform([1.0]), ValueError,
     "not fitted"),
    # out=
    ("out-shape", lambda: fitted().pairwise(DF, out=np.empty((N - 1, N))), ValueError,
     r"out must have shape \(8, 8\)"),
    ("out-dtype", lambda: fitted().pairwise(DF, out=np.empty((N, N), np.float32)), ValueError,
     "out must have dtype float64"),
    ("out-order", lambda: fitted().pairwise(DF, out=np.empty((N, N), order="F")), ValueError,
     "out must be C-contiguous"),
    ("out-readonly", lambda: fitted().pairwise(DF, out=_readonly(np.empty((N, N)))),
     ValueError, "out must be writeable"),
    ("out-list", lambda: fitted().pairwise(DF, out=[[0.0] * N] * N), TypeError,
     "out must be a numpy array"),
    # explain / value_distances
    ("explain-two-rows", lambda: fitted().explain(DF.iloc[:2], DF.iloc[:1]), ValueError,
     "single rows"),
    ("explain-dict-missing-key", lambda: fitted().explain({"a": 1.0, "b": "x"},
                                                           DF.iloc[0]), ValueError, "'c'"),
    ("explain-dict-extra-key", lambda: fitted().explain(
        {"a": 1.0, "b": "x", "c": 1.0, "e": 2}, DF.iloc[0]), ValueError, "'e'"),
    ("value-distances-continuous", lambda: fitted().value_distances("a"), ValueError,
     "column 'a' is continuous"),
    ("value-distances-unknown", lambda: fitted().value_distances("zz"), ValueError,
     "no column named 'zz'"),
    ("value-distances-position", lambda: fitted().value_distances(7), ValueError,
     "position 7"),
    # NeighborsIndex
    ("index-algorithm", lambda: NeighborsIndex("heom", algorithm="cover"), ValueError,
     "algorithm must be one of"),
    ("index-leaf-zero", lambda: NeighborsIndex("heom", leaf_size=0), ValueError, "leaf_size"),
    ("index-leaf-float", lambda: NeighborsIndex("heom", leaf_size=1.5), TypeError,
     "leaf_size"),
    ("index-metric-type", lambda: NeighborsIndex(3), TypeError, "metric"),
    ("index-k-above-n", lambda: index("kd_tree").kneighbors(DF, N + 1), ValueError,
     "larger than the 8"),
    ("index-r-nan", lambda: index("kd_tree").radius_neighbors(DF, float("nan")), ValueError,
     "r must not be NaN"),
    ("index-ball-tree-ignore", lambda: NeighborsIndex("gower", algorithm="ball_tree").fit(
        _with(DF, a=[np.nan] + [1.0] * 7)), ValueError, "ball_tree.*'ignore'"),
    ("index-exclude-self-foreign", lambda: index().kneighbors(DF, 2, exclude_self=True),
     ValueError, "exclude_self"),
    # scikit-learn estimators
    ("clf-y-none", lambda: _sk("KNeighborsClassifier")().fit(DF, None), ValueError,
     "requires y"),
    ("clf-k-zero", lambda: _sk("KNeighborsClassifier")(n_neighbors=0).fit(DF, Y), ValueError,
     "n_neighbors must be >= 1"),
    ("clf-k-above-n", lambda: _sk("KNeighborsClassifier")(n_neighbors=N + 1).fit(DF, Y)
     .predict(DF), ValueError, "larger than the 8"),
    ("clf-metric", lambda: _sk("KNeighborsClassifier")(metric="nope").fit(DF, Y), ValueError,
     "unknown metric 'nope'"),
    ("clf-weights", lambda: _sk("KNeighborsClassifier")(weights="rank").fit(DF, Y),
     ValueError, "weights must be one of"),
    ("clf-y-missing", lambda: _sk("KNeighborsClassifier")().fit(
        DF, [0, 1, None, 1, 0, 1, 1, 0]), ValueError, "missing"),
    ("clf-unfitted", lambda: _sk("KNeighborsClassifier")().predict(DF), ValueError,
     "not fitted"),
    ("clf-1d", lambda: _sk("KNeighborsClassifier")().fit(np.arange(8.0), Y), ValueError,
     "2-D"),
    ("clf-complex", lambda: _sk("KNeighborsClassifier")().fit(np.zeros((8, 2), complex), Y),
     ValueError, "Complex data not supported"),
    ("clf-metric-params", lambda: _sk("KNeighborsClassifier")(metric_params=[1]).fit(DF, Y),
     TypeError, "metric_params"),
    ("reg-y-nan", lambda: _sk("KNeighborsRegressor")().fit(DF, [0, 1, np.nan, 1, 0, 1, 1, 0]),
     ValueError, "y contains NaN"),
    ("nn-radius-negative", lambda: _sk("NearestNeighbors")().fit(DF).radius_neighbors(
        DF, -1.0), ValueError, "r must be >= 0"),
    ("nn-n-jobs-zero", lambda: _sk("NearestNeighbors")(n_jobs=0).fit(DF).kneighbors(DF),
     ValueError, "n_jobs == 0"),
    ("transformer-mode", lambda: _sk("KNeighborsTransformer")(mode="graph").fit(DF),
     ValueError, "mode must be"),
    ("kmodes-continuous", lambda: _sk("KModes")(n_clusters=2, metric=Metric("smd")).fit(DF),
     ValueError, "column 'a' is continuous"),
    ("kprototypes-k-zero", lambda: _sk("KPrototypes")(n_clusters=0).fit(DF), ValueError,
     "n_clusters must be >= 1"),
    ("kprototypes-k-above-n", lambda: _sk("KPrototypes")(n_clusters=N + 1).fit(DF),
     ValueError, "n_clusters=9 is larger than the 8 rows"),
    ("kmedoids-k-above-n", lambda: _sk("KMedoids")(n_clusters=N + 1).fit(DF), ValueError,
     "n_clusters=9"),
    ("kmedoids-unfitted", lambda: _sk("KMedoids")().predict(DF), ValueError, "not fitted"),
    # discretizers, information, datasets
    ("equal-width-zero-bins", lambda: dz.equal_width(0), ValueError, "n_bins must be >= 1"),
    ("equal-width-gigantic-bins", lambda: dz.equal_width(10 ** 9), ValueError,
     "n_bins must be <="),
    ("equal-frequency-bins-float", lambda: dz.equal_frequency(2.5), TypeError, "n_bins"),
    ("equal-width-trim", lambda: dz.equal_width(5, trim=0.6), ValueError, "trim"),
    ("discretize-inf", lambda: dz.equal_width(3).fit([1.0, np.inf, 2.0]), ValueError,
     "infinite"),
    ("discretize-all-missing", lambda: dz.equal_frequency(3).fit([np.nan, np.nan]),
     ValueError, "no observed value"),
    ("mdlp-without-y", lambda: dz.mdlp().fit([1.0, 2.0, 3.0]), ValueError, "fit\\(x, y\\)"),
    ("entropy-empty", lambda: hdist.entropy([]), ValueError, "labels"),
    ("mutual-information-length", lambda: hdist.mutual_information([1, 2, 3], [1, 2]),
     ValueError, "2 labels for 3 values"),
    ("load-dataset-unknown", lambda: hdist.load_dataset("nope"), ValueError,
     "unknown dataset 'nope'"),
    # plots and Dask scoring (optional dependencies)
    ("plot-distances-nan", lambda: _optional("plot", "matplotlib").neighbor_distances(
        np.array([[np.nan]])), ValueError, "distances must be finite"),
    ("plot-distances-empty", lambda: _optional("plot", "matplotlib").neighbor_distances(
        np.array([])), ValueError, "distances must be a non-empty"),
    ("plot-ranks", lambda: _optional("plot", "matplotlib").neighbor_distances(
        np.ones((3, 2)), ranks=[5]), ValueError, "ranks must be between 1 and 2"),
    ("plot-value-distances-continuous", lambda: _optional("plot", "matplotlib")
     .value_distances(fitted(), "a"), ValueError, "column 'a' is continuous"),
    ("dask-unfitted", lambda: _optional("dask", "dask.dataframe").kneighbors(
        Metric("heom"), None), ValueError, "not fitted"),
    ("dask-not-a-dataframe", lambda: _optional("dask", "dask.dataframe").kneighbors(
        fitted(), DF), TypeError, "ddf must be a Dask DataFrame"),
    ("dask-method", lambda: _optional("dask", "dask.dataframe").predict(
        None, None, method="score"), ValueError, "method must be"),
]


def _readonly(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("call,exc,match", [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_refused(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_table_is_large_and_unique():
    ids = [c[0] for c in REFUSED] + [c[0] for c in DEFINED]
    assert len(ids) == len(set(ids))
    assert len(REFUSED) >= 40


# -- inputs with a defined answer ----------------------------------------------------------


def _same_neighbors(make):
    """``make(X)`` builds a variant of a float table; the variant must give exactly the
    answers of the plain C-ordered, writeable table."""
    rng = np.random.default_rng(3)
    X = rng.integers(-400, 400, size=(40, 4)) / 8.0   # exact in float32 too
    ref = Metric("heom").fit(X)
    d0, i0 = ref.kneighbors(X, 5)
    V = make(X)
    m = Metric("heom").fit(V)
    d, i = m.kneighbors(V, 5)
    np.testing.assert_array_equal(i, i0)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_array_equal(m.pairwise(V), ref.pairwise(X))


def _memmap(X, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, X)
    return np.load(path, mmap_mode="r")


def _only_missing(name, expected, **params):
    """A query row with every value missing, against every training row."""
    m = fitted(name, **params)
    q = pd.DataFrame({"a": [np.nan], "b": [None], "c": [np.nan]})
    D = m.pairwise(q, DF)
    np.testing.assert_allclose(D, expected(m), rtol=1e-15, atol=0)
    return D


def _max_policy_expected(m):
    """docs/metrics.md §6 "max": |v - min| or |max - v| (the larger) over δ for continuous,
    1 for nominal, then Minkowski p = 2."""
    terms = []
    for col in ("a", "c"):
        v = DF[col].to_numpy()
        lo, hi = v.min(), v.max()
        terms.append(np.maximum(v - lo, hi - v) / (hi - lo))
    terms.append(np.ones(N))
    return np.sqrt(sum(t * t for t in terms))[None, :]


def _huge():
    X = np.array([[1e308], [-1e308], [0.0], [1e308]])
    m = Metric("manhattan").fit(X)
    # max - min overflows: an undefined δ is 1 (docs/metrics.md §3)
    assert m.delta_["0"] == 1.0
    D = m.pairwise(X)
    assert D[0, 1] == math.inf and D[0, 3] == 0.0 and D[0, 2] == 1e308
    d, i = m.kneighbors(X, 4)
    np.testing.assert_array_equal(i[1], [1, 2, 0, 3])     # infinite ties by index
    np.testing.assert_array_equal(d[1], [0.0, 1e308, math.inf, math.inf])
    r = m.radius_neighbors(X[:1], math.inf)[1][0]
    np.testing.assert_array_equal(r, [0, 3, 2, 1])
    # p = 2: the square of 1e308 overflows, but the distance does not: the pair is computed
    # again with its terms scaled (1e308); 2e308 itself overflows; every path agrees, no NaN
    h = Metric("heom").fit(X)
    D = h.pairwise(X)
    assert not np.isnan(D).any() and D[0, 2] == 1e308 and D[0, 1] == math.inf
    assert D[0, 3] == 0.0
    for algorithm in ("brute", "kd_tree"):
        d, i = NeighborsIndex(h, algorithm=algorithm).fit().kneighbors(X, 4)
        np.testing.assert_array_equal(i, [[0, 3, 2, 1], [1, 2, 0, 3], [2, 0, 1, 3],
                                          [0, 3, 2, 1]])
        assert not np.isnan(d).any()


def _huge_finite_spread():
    # a spread that fits float64: values are shifted and scaled, nothing overflows
    X = np.array([[1e308], [0.5e308], [0.0]])
    m = Metric("heom").fit(X)
    np.testing.assert_allclose(m.pairwise(X), [[0, 0.5, 1], [0.5, 0, 0.5], [1, 0.5, 0]],
                               rtol=4e-16, atol=0)


def _huge_overflow_p():
    # the sum of powers overflows (1000^400) while the distance does not: the pair is
    # recomputed with its terms scaled, never inf or NaN
    X = np.array([[0.0, 0.0], [1.0, 1.0]])
    m = Metric("minkowski", p=400.0, normalization="none").fit(X)
    D = m.pairwise(np.array([[0.0, 0.0], [1e3, 1e3]]))
    assert D[0, 0] == 0.0
    assert D[0, 1] == pytest.approx(1e3 * 2.0 ** (1 / 400), rel=1e-14)
    assert D[1, 0] == D[0, 1]


def _subnormal():
    X = np.array([[0.0, 0.0], [1e-320, 1.0], [5e-324, 2.0]])
    m = Metric("heom").fit(X)
    assert m.delta_["0"] == 1e-320
    D = m.pairwise(X)
    assert np.isfinite(D).all()
    assert D[0, 1] == pytest.approx(math.sqrt(1.0 + 0.25), rel=1e-15, abs=0)
    np.testing.assert_allclose(D[0, 2], math.sqrt((5e-324 / 1e-320) ** 2 + 1.0), rtol=1e-15)
    assert D[2, 2] == 0.0


def _constant_column():
    X = _with(DF, c=[7.0] * N)
    for norm in ("range", "trimmed_range", "4std", "mean_diff", "none"):
        m = fitted(X=X, normalization=norm)
        assert m.delta_["c"] == (1.0 if norm == "none" else math.inf)
        # the constant column adds nothing: the distances of the other columns remain
        np.testing.assert_array_equal(m.pairwise(X), fitted(X=X[["a", "b"]],
                                                            normalization=norm).pairwise(
            X[["a", "b"]]))
    q = _with(DF.iloc[:1], c=[9.5])     # a query off the constant compares as equal ...
    d = fitted(X=X, p=1.0).pairwise(q, X.iloc[:1])
    assert d[0, 0] == 0.0
    d = fitted(X=X, p=1.0, normalization="none").pairwise(q, X.iloc[:1])
    assert d[0, 0] == 2.5               # ... except without normalization: |9.5 - 7|


def _many_values():
    n = 10 ** 6
    X = np.column_stack([np.arange(n, dtype=np.float64), np.zeros(n)])
    y = np.arange(n) % 3
    m = Metric("hvdm", nominal=[0]).fit(X, y)   # V^2 is past the table budget
    d, i = m.kneighbors(np.array([[5.0, 0.0], [-5.0, 0.0]]), 3)
    np.testing.assert_array_equal(i, [[2, 5, 8], [0, 1, 2]])
    # class-2 rows have the query's P(c | v); an unseen value has P = 0, at sqrt(1) from all
    np.testing.assert_array_equal(d, [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]])


def _mixed_types():
    X = np.array([[1], ["1"], [1.0], [None], ["x"], [2]], dtype=object)
    m = Metric("heom").fit(X)
    D = m.pairwise(X)
    assert D[0, 2] == 0.0          # 1 and 1.0: one value
    assert D[0, 1] == 1.0          # 1 and "1": two values
    assert D[3, 3] == 1.0          # missing: every component 1 under "one"
    assert D[0, 5] == 1.0 and D[4, 4] == 0.0


def _missing_markers():
    X = pd.DataFrame({"s": pd.Series(["a", None, np.nan, pd.NA, pd.NaT, "b"],
                                     dtype=object)})
    m = Metric("heom").fit(X)
    codes = m.encode(X).o[:, 0]
    np.testing.assert_array_equal(codes, [0, -1, -1, -1, -1, 1])


def _unseen_values():
    m = fitted()
    q = _with(DF.iloc[:3].reset_index(drop=True), b=["new", "new", "other"])
    D = m.pairwise(q, DF)
    assert np.isfinite(D).all()
    # an unseen value differs from every learned one; two different unseen values
    # differ, two equal ones do not (docs/metrics.md §1)
    assert (m.explain(q.iloc[0], DF.iloc[0]).terms[1] == 1.0)
    assert m.explain(q.iloc[0], q.iloc[2]).terms[1] == 1.0
    assert m.explain(q.iloc[0], q.iloc[1]).terms[1] == 0.0


def _gigantic_n_jobs():
    m = fitted()
    d1, i1 = m.kneighbors(DF, 3, n_jobs=1)
    for n_jobs in (10 ** 6, 2 ** 70, -10 ** 6):
        d, i = m.kneighbors(DF, 3, n_jobs=n_jobs)
        np.testing.assert_array_equal(i, i1)
        np.testing.assert_array_equal(d, d1)
        np.testing.assert_array_equal(m.pairwise(DF, n_jobs=n_jobs), m.pairwise(DF, n_jobs=1))


def _reordered_columns():
    # frames are matched by name and order, as scikit-learn's estimators do
    m = fitted()
    with pytest.raises(ValueError, match="another order.*'c', 'a', 'b'"):
        m.pairwise(DF[["c", "a", "b"]])
    np.testing.assert_array_equal(m.pairwise(DF[["c", "a", "b"]][list(m.feature_names_in_)]),
                                  m.pairwise(DF))


def _out_filled():
    m = fitted()
    out = np.full((N, N), -1.0)
    res = m.pairwise(DF, out=out)
    assert res is out
    np.testing.assert_array_equal(out, m.pairwise(DF))


def _k_equals_n():
    d, i = fitted().kneighbors(DF, N)
    assert sorted(i[0]) == list(range(N))
    assert (np.diff(d, axis=1) >= 0).all()


def _negative_zero():
    X = np.array([[-0.0, 1.0], [0.0, 2.0], [1.0, 3.0]])
    assert Metric("heom").fit(X).pairwise(X)[0, 1] == 0.5


DEFINED = [
    ("readonly", lambda tmp_path: _same_neighbors(_readonly)),
    ("memmap-readonly", lambda tmp_path: _same_neighbors(lambda X: _memmap(X, tmp_path))),
    ("fortran-order", lambda tmp_path: _same_neighbors(np.asfortranarray)),
    ("strided", lambda tmp_path: _same_neighbors(
        lambda X: np.repeat(X, 2, axis=1)[:, ::2])),
    ("reversed-strides", lambda tmp_path: _same_neighbors(
        lambda X: np.ascontiguousarray(X[::-1])[::-1])),
    ("float32-exact", lambda tmp_path: _same_neighbors(
        lambda X: X.astype(np.float32))),
    ("only-missing-one", lambda tmp_path: _only_missing(
        "heom", lambda m: np.full((1, N), math.sqrt(3.0)))),
    ("only-missing-manhattan", lambda tmp_path: _only_missing(
        "manhattan", lambda m: np.full((1, N), 3.0))),
    ("only-missing-chebyshev", lambda tmp_path: _only_missing(
        "chebyshev", lambda m: np.full((1, N), 1.0))),
    ("only-missing-ignore-gower", lambda tmp_path: _only_missing(
        "gower", lambda m: np.full((1, N), 1.0))),
    ("only-missing-ignore-sum", lambda tmp_path: _only_missing(
        "heom", lambda m: np.full((1, N), math.sqrt(3.0)), missing="ignore")),
    ("only-missing-weighted-ignore", lambda tmp_path: _only_missing(
        "heom", lambda m: np.full((1, N), math.sqrt(6.0)), missing="ignore",
        weights=[1.0, 2.0, 3.0])),
    ("only-missing-max", lambda tmp_path: _only_missing(
        "heom", _max_policy_expected, missing="max")),
    ("huge-overflowing-spread", lambda tmp_path: _huge()),
    ("huge-finite-spread", lambda tmp_path: _huge_finite_spread()),
    ("huge-power-overflow", lambda tmp_path: _huge_overflow_p()),
    ("subnormal", lambda tmp_path: _subnormal()),
    ("constant-column", lambda tmp_path: _constant_column()),
    ("million-nominal-values", lambda tmp_path: _many_values()),
    ("object-column-mixed-types", lambda tmp_path: _mixed_types()),
    ("missing-markers", lambda tmp_path: _missing_markers()),
    ("unseen-values", lambda tmp_path: _unseen_values()),
    ("gigantic-n-jobs", lambda tmp_path: _gigantic_n_jobs()),
    ("reordered-columns", lambda tmp_path: _reordered_columns()),
    ("out-filled-in-place", lambda tmp_path: _out_filled()),
    ("k-equals-n", lambda tmp_path: _k_equals_n()),
    ("negative-zero", lambda tmp_path: _negative_zero()),
]


@pytest.mark.parametrize("check", [c[1] for c in DEFINED], ids=[c[0] for c in DEFINED])
def test_defined(check, tmp_path):
    check(tmp_path)
