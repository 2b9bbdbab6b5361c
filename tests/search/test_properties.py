"""Properties every metric of ``hdist.METRICS`` must have, on generated mixed data.

Each test is parametrized over the registry, so a preset added later is covered without
touching this file.  Checked (docs/metrics.md §2-6, §8):

- symmetry ``d(x, y) = d(y, x)``, bit for bit;
- non-negativity, and no NaN or infinity from finite inputs;
- ``d(x, x) = 0`` for rows with no missing value (also for unseen nominal values);
- the triangle inequality wherever docs/metrics.md promises a metric: ``p >= 1``, no
  ``"ignore"`` policy, and, when rows have missing values, components that can never exceed
  2 (docs/metrics.md §8);
- monotonicity in ``p`` with unit weights (below);
- agreement of ``pairwise``, ``kneighbors`` (every search path) and ``radius_neighbors``.

Monotonicity in ``p``.  For fixed component distances ``d_a >= 0`` the power sum
``(Σ_a d_a^p)^(1/p)`` is non-increasing in ``p`` (an l_p norm; its limit at ``p = inf`` is
``max_a d_a``), while the power mean ``(Σ_a d_a^p / m)^(1/p)`` is non-decreasing (power-mean
inequality), bounded by the same maximum.  Neither holds with arbitrary weights (one
attribute with ``w < 1`` gives ``w^(1/p) d``, increasing in ``p``), so the test keeps unit
weights.  The "ignore" rescaling ``(m/k · Σ_known d^p)^(1/p)`` multiplies the norm by
``(m/k)^(1/p)``, itself non-increasing, so the sum form stays monotone there too, and the
mean form becomes the power mean of the known terms.

The number of generated examples (:data:`BUDGET`, about 11 000 per CI run) is split evenly
over the presets, so it does not grow with the registry; the ``big`` hypothesis profile
(``HYPOTHESIS_PROFILE=big``) multiplies it.
"""
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hdist
from hdist.metrics import METRICS, Metric
from test_gemm import knn_rows

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")
pytestmark = [pytestmark, pytest.mark.sanitize]

PRESETS = sorted({info.name for info in METRICS.values()})
P_PRESETS = [n for n in PRESETS if "p" in METRICS[n].params]
#: presets that can be metrics (p >= 1 possible; "fractional" never is)
METRIC_PRESETS = [n for n in PRESETS if METRICS[n].defaults.get("p", 2.0) >= 1]
POLICIES = ("one", "max", "ignore", "symbol")
#: generated cases per CI run for each property, split evenly over the presets, so the
#: total (about 11 000) does not grow with the registry; ``HYPOTHESIS_PROFILE=big``
#: multiplies every budget
BUDGET = {"cheap": 2_200, "monotone": 1_000, "search": 1_000}
_SCALE = {"ci": 1, "big": 25}.get(os.environ.get("HYPOTHESIS_PROFILE", "ci"), 1)


def _examples(kind, n_tests):
    return max(20, math.ceil(BUDGET[kind] / n_tests)) * _SCALE


EXAMPLES = _examples("cheap", len(PRESETS))
P_EXAMPLES = _examples("monotone", len(P_PRESETS))
SEARCH_EXAMPLES = _examples("search", len(PRESETS))

# value pools: training rows use codes 0..5, query rows also 6..7 (outside the training
# range / unseen nominal values); code -1 is a missing value
_BASE = np.array([0.0, 1.0, 2.5, -3.0, 7.0, 1e-3, 40.0, -25.0])
_SCALES = (1e-6, 1.0, 3.0, 1e6)
_LABELS = np.array(["a", "b", "c", "d", "e", "f", "unseen-1", "unseen-2"], dtype=object)
P_GRID = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, math.inf)
FRACTIONAL_GRID = (0.1, 0.25, 0.5, 0.9)


def _nominal_only(name):
    return METRICS[name].continuous is None


class Case:
    """A fitted metric with its training table ``X`` and query table ``Q``."""

    def __init__(self, name, params, X, Q, y, nominal_cols, missing):
        self.name, self.params, self.X, self.Q, self.y = name, params, X, Q, y
        self.nominal_cols = nominal_cols
        # the other columns are continuous (the nominal-only presets read every column as
        # nominal): declared, so that small integer codes draw no ColumnKindWarning
        self.kinds = dict(nominal=nominal_cols,
                          **({} if _nominal_only(name) else {"continuous": "rest"}))
        self.missing_rows_X = missing[: len(X)]
        self.missing_rows_Q = missing[len(X):]
        self.metric = Metric(name, **self.kinds, **params).fit(X, y)

    @property
    def all_rows(self):
        return np.vstack([self.X, self.Q]) if len(self.Q) else self.X

    @property
    def row_missing(self):
        return np.concatenate([self.missing_rows_X, self.missing_rows_Q])

    def __repr__(self):
        return "Case(%r, %r,\nX=%r,\nQ=%r,\ny=%r)" % (self.name, self.params, self.X.tolist(),
                                                    self.Q.tolist(), self.y.tolist())


def _table(codes, kinds, scales):
    out = np.empty(codes.shape, dtype=object)
    for a, kind in enumerate(kinds):
        col = codes[:, a]
        if kind == "c":
            vals = [None if c < 0 else float(_BASE[c] * scales[a]) for c in col]
        else:
            vals = [None if c < 0 else _LABELS[c] for c in col]
        out[:, a] = vals
    return out


@st.composite
def cases(draw, name, *, missing=True, p_at_least_one=False, bounded=False,
          queries_outside=True, params=None):
    """A random mixed table (2..9 training rows, 0..3 query rows, 2..5 columns) and a
    metric of preset ``name`` with random parameters, fitted on it.

    ``bounded``: every component stays <= 2 on the rows produced (range normalization,
    no query value outside the training range, VDM N3 excluded) -- the condition of
    docs/metrics.md §8 under which rows with missing values keep the triangle inequality."""
    info = METRICS[name]
    n = draw(st.integers(2, 9))
    nq = draw(st.integers(0, 3))
    m = draw(st.integers(2, 5))
    if _nominal_only(name):
        kinds = ["n"] * m
    else:
        kinds = draw(st.lists(st.sampled_from("cn"), min_size=m, max_size=m))
    n_levels = draw(st.integers(1, 6))
    lo = -1 if missing else 0
    codes = draw(hnp.arrays(np.int8, (n, m), elements=st.integers(lo, n_levels - 1)))
    top = 7 if queries_outside else n_levels - 1
    qcodes = draw(hnp.arrays(np.int8, (nq, m), elements=st.integers(lo, top)))
    if bounded:
        # a continuous query value must stay inside the training range: reuse values
        # of the training column
        for a, k in enumerate(kinds):
            if k == "c":
                for i in range(nq):
                    if qcodes[i, a] >= 0:
                        qcodes[i, a] = codes[qcodes[i, a] % n, a]
    for a in range(m):  # every training column needs an observed value (docs/metrics.md §1)
        if (codes[:, a] < 0).all():
            codes[0, a] = 0
    scales = [draw(st.sampled_from(_SCALES)) for _ in range(m)]
    X = _table(codes, kinds, scales)
    Q = _table(qcodes, kinds, scales) if nq else np.empty((0, m), dtype=object)
    y = draw(hnp.arrays(np.int64, n, elements=st.integers(0, 2)))
    nominal_cols = [a for a, k in enumerate(kinds) if k == "n"]
    params = dict(params or {})
    if "p" in info.params and "p" not in params:
        grid = FRACTIONAL_GRID if name == "fractional" else P_GRID
        if p_at_least_one:
            grid = [p for p in grid if p >= 1]
        if grid:
            params["p"] = draw(st.sampled_from(grid))
    if "normalization" in info.params and "normalization" not in params:
        params["normalization"] = "range" if bounded else draw(st.sampled_from(
            ("range", "trimmed_range", "4std", "mean_diff", "none")))
    if "vdm" in info.params and "vdm" not in params:
        params["vdm"] = draw(st.sampled_from(("N1", "N2") if bounded else ("N1", "N2", "N3")))
    if "unseen" in info.params and "unseen" not in params:
        params["unseen"] = draw(st.sampled_from(("zero", "prior")))
    if "missing" not in params and draw(st.booleans()):
        params["missing"] = draw(st.sampled_from(POLICIES))
    if "weights" not in params and draw(st.booleans()):
        w = draw(st.lists(st.sampled_from((0.0, 0.5, 1.0, 2.0, 3.0)), min_size=m, max_size=m))
        if not any(w):
            w[0] = 1.0
        params["weights"] = w
    missing_rows = np.concatenate([(codes < 0).any(axis=1), (qcodes < 0).any(axis=1)])
    return Case(name, params, X, Q, y, nominal_cols, missing_rows)


def prop(presets, n_examples):
    """A hypothesis property over ``data``, parametrized over ``presets``."""
    def wrap(test):
        test = given(data=st.data())(settings(max_examples=n_examples)(test))
        return pytest.mark.parametrize("name", presets)(test)
    return wrap


# -- the metric axioms ---------------------------------------------------------------


@prop(PRESETS, EXAMPLES)
def test_symmetry(name, data):
    case = data.draw(cases(name), label="case")
    A = case.all_rows
    B = A[::-1]
    D = case.metric.pairwise(A, B, n_jobs=1)
    Dt = case.metric.pairwise(B, A, n_jobs=1)
    np.testing.assert_array_equal(D, Dt.T)
    np.testing.assert_array_equal(case.metric.pairwise(A, n_jobs=1), D[:, ::-1])


@prop(PRESETS, EXAMPLES)
def test_non_negative_and_finite(name, data):
    case = data.draw(cases(name), label="case")
    D = case.metric.pairwise(case.all_rows, case.X, n_jobs=1)
    assert np.isfinite(D).all(), D
    assert (D >= 0).all(), D
    R = case.metric.pairwise(case.all_rows, case.X, reduced=True, n_jobs=1)
    assert np.isfinite(R).all() and (R >= 0).all(), R


@prop(PRESETS, EXAMPLES)
def test_identity_without_missing(name, data):
    case = data.draw(cases(name), label="case")
    A = case.all_rows
    D = case.metric.pairwise(A, n_jobs=1)
    complete = ~case.row_missing
    assert (np.diag(D)[complete] == 0).all(), np.diag(D)
    # identical complete rows (duplicates, equal unseen values) are at distance 0 too
    same = np.array([[complete[i] and list(A[i]) == list(A[j]) for j in range(len(A))]
                     for i in range(len(A))])
    assert (D[same] == 0).all()


def _metric_params(name):
    """Parameters that keep a preset a metric: no "ignore" (Gower's default)."""
    return {"missing": "one"} if METRICS[name].defaults.get("missing") == "ignore" else {}


@prop(METRIC_PRESETS, EXAMPLES)
def test_triangle_inequality(name, data):
    with_missing = data.draw(st.booleans(), label="with_missing")
    params = _metric_params(name)
    params["missing"] = data.draw(st.sampled_from(("one", "max", "symbol")), label="policy")
    case = data.draw(cases(name, missing=with_missing, p_at_least_one=True,
                           bounded=with_missing, params=params), label="case")
    assert case.metric.plan_.p >= 1
    A = case.all_rows
    D = case.metric.pairwise(A, n_jobs=1)
    # D[i, k] <= D[i, j] + D[j, k] for every triple, with a rounding margin
    lhs = D[:, None, :]
    rhs = D[:, :, None] + D[None, :, :]
    slack = 1e-12 * (1.0 + rhs)
    bad = np.argwhere(lhs > rhs + slack)
    assert bad.size == 0, "d(%d, %d) > d(%d, %d) + d(%d, %d): %r" % (
        bad[0][0], bad[0][2], bad[0][0], bad[0][1], bad[0][1], bad[0][2], D)


@prop(P_PRESETS, P_EXAMPLES)
def test_monotone_in_p(name, data):
    aggregate = data.draw(st.sampled_from(("sum", "mean")), label="aggregate")
    case = data.draw(cases(name, params={"aggregate": aggregate}), label="case")
    grid = FRACTIONAL_GRID if name == "fractional" else P_GRID
    base = dict(case.params)
    base.pop("weights", None)
    A = case.all_rows
    Ds = [Metric(name, **case.kinds, **dict(base, p=p)).fit(case.X, case.y)
          .pairwise(A, case.X, n_jobs=1) for p in grid]
    tol = 1e-12
    for lo, hi in zip(Ds, Ds[1:]):
        if aggregate == "sum":
            assert (hi <= lo * (1 + tol) + 1e-300).all(), (lo, hi)
        else:
            assert (hi >= lo * (1 - tol)).all(), (lo, hi)


# -- one answer from every search path ------------------------------------------------


def _expected_neighbors(D, R, k):
    """The k nearest of each row of true distances ``D`` (docs/metrics.md, section 8):
    the first k in (true distance, index) order -- the k-th place is decided on the
    distance returned, so that ``kneighbors(k)`` is a prefix of ``kneighbors(k + 1)``, also
    where the root rounds two different reduced distances (``R``, unused here) to one
    true distance."""
    n = D.shape[1]
    Is = np.empty((len(D), k), dtype=np.intp)
    for q in range(len(D)):
        Is[q] = np.lexsort((np.arange(n), D[q]))[:k]
    return np.take_along_axis(D, Is, axis=1), Is


def test_kth_place_is_decided_on_the_returned_distance():
    """Rows 2 and 4 have reduced distances 1.0469544482673188 and ...185 to query 0 at
    p = 7.5, and one true distance: the 4th place goes to the smaller index (2), on every
    path, and k = 4 is a prefix of k = 5."""
    X = np.array([["a", "a", 0.0, None], ["a", "a", 0.0, "a"], ["a", "a", None, "a"],
                  ["a", "a", 0.0, "a"], ["a", None, 0.0, "a"]], dtype=object)
    Q = np.array([["unseen-2", "a", 3.0, "e"]], dtype=object)
    m = hdist.get_metric("gvdm", p=7.5, vdm="N2", unseen="zero",
                         nominal=[0, 1, 3]).fit(X, [0, 1, 0, 2, 2])
    R = m.pairwise(Q, X, reduced=True)[0]
    D = m.pairwise(Q, X)[0]
    assert R[4] < R[2] and D[4] == D[2]
    five = m.kneighbors(Q, 5)[1][0]
    assert list(five) == [1, 3, 0, 2, 4]
    for label, index in _indexes(m):
        d, i = index.kneighbors(Q, 4, n_jobs=1)
        assert list(i[0]) == [1, 3, 0, 2], label
        np.testing.assert_array_equal(d[0], D[[1, 3, 0, 2]])


def _indexes(metric):
    """Every neighbor search over a fitted ``metric``: the metric itself and the
    algorithms of :class:`hdist.NeighborsIndex` (ball tree only where it is exact)."""
    out = [("metric", metric)]
    index_cls = getattr(hdist, "NeighborsIndex", None)
    if index_cls is not None:
        for algo in ("brute", "kd_tree", "ball_tree"):
            try:
                out.append((algo, index_cls(metric, algorithm=algo, leaf_size=2).fit()))
            except ValueError as exc:   # refused where the triangle inequality fails
                assert algo == "ball_tree" and "ball_tree" in str(exc), exc
        # inverted lists probing every list: brute force, bit for bit
        L = min(3, metric.train_.n)
        out.append(("ivf", index_cls(metric, algorithm="ivf", n_lists=L, n_probe=L).fit()))
    return out


@prop(PRESETS, SEARCH_EXAMPLES)
def test_search_paths_agree(name, data):
    case = data.draw(cases(name), label="case")
    metric = case.metric
    use_train = len(case.Q) == 0
    Q = None if use_train else case.Q
    A = case.X if use_train else case.Q
    D = metric.pairwise(A, case.X, n_jobs=1)
    R = metric.pairwise(A, case.X, reduced=True, n_jobs=1)
    n = len(case.X)
    exclude = use_train and data.draw(st.booleans(), label="exclude_self")
    if exclude:
        D, R = D.copy(), R.copy()
        np.fill_diagonal(D, np.inf)
        np.fill_diagonal(R, np.inf)
    k = data.draw(st.integers(1, n - 1 if exclude else n), label="k")
    Dk, Ik = _expected_neighbors(D, R, k)
    r = data.draw(st.sampled_from(sorted(set(D[np.isfinite(D)].tolist())) or [0.0]),
                  label="r")
    n_jobs = data.draw(st.sampled_from((1, 2)), label="n_jobs")
    for label, index in _indexes(metric):
        d, i = index.kneighbors(Q, k, exclude_self=exclude, n_jobs=n_jobs)
        np.testing.assert_array_equal(i, Ik, err_msg=label)
        np.testing.assert_array_equal(d, Dk, err_msg=label)
        rd, ri = index.radius_neighbors(Q, r, exclude_self=exclude, n_jobs=n_jobs)
        for q in range(len(D)):
            keep = np.flatnonzero(D[q] <= r)
            keep = keep[np.lexsort((keep, D[q, keep]))]
            np.testing.assert_array_equal(ri[q], keep, err_msg=label)
            np.testing.assert_array_equal(rd[q], D[q, keep], err_msg=label)
    # the matrix-product filter (p = 2 plans) returns exactly the direct kernel's answer
    rows = metric.train_ if use_train else metric.encode(case.Q)
    dg, ig = knn_rows(metric, rows, k, exclude, n_jobs, method="gemm")
    np.testing.assert_array_equal(ig, Ik)
    np.testing.assert_array_equal(dg, Dk)
