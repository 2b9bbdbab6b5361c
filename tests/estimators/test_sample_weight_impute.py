"""sample_weight in KNNImputer.fit: a training row of integer weight m imputes exactly as m
copies of it (the k donors of a cell are the k nearest copies), checked against the plain
reference imputer of tests/test_impute.py on the repeated rows; fractional weights against
a plain weighted reference written below."""
import math
from functools import partial

import numpy as np
import pandas as pd
import pytest

import strategies as S
from hdist.impute import KNNImputer
from hdist.impute import KNNImputer as KNNImputerClass
from reference import NOMINAL, is_missing, plain, reference_metric
from test_impute import (MIXED, OLD, SHRINKAGE, check_against_reference, column_references,
                         ref_median, reference_impute, snap)

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")


def weighted_table(seed, n=50, nq=25):
    train, queries = S.random_table(seed, n, MIXED, p_missing=0.2, n_queries=nq)
    y = np.asarray(S.random_labels(seed, train.n), dtype=object)
    rng = np.random.default_rng(seed)
    sw = rng.integers(1, 4, size=train.n)
    sw[rng.choice(train.n, size=5, replace=False)] = 0
    return train, queries, y, sw


@pytest.mark.parametrize("preset,k,weights,continuous,new", [
    ("heom", 1, "uniform", "mean", OLD),
    ("heom", 4, "uniform", "median", OLD),
    ("gower", 3, "distance", "mean", OLD),
    ("hvdm", 5, "uniform", "median", OLD),
    ("heom", 6, "distance", "median", OLD),
    ("heom", 4, "distance", "mean", {}),
    ("hvdm", 3, "uniform", "median", dict(shrinkage=2.0)),
])
def test_integer_weights_equal_repeated_rows(preset, k, weights, continuous, new):
    """Against the reference imputer on the repeated rows (donors by (distance, position):
    the copies of a row sit together, so a donor of weight 3 fills up to 3 of the k
    places) and against the imputer fitted on the repeated rows."""
    train, queries, y, sw = weighted_table(11)
    rows = np.repeat(np.arange(train.n), sw)
    rep = train.take(rows)
    est = dict(n_neighbors=k, weights=weights, metric=preset, continuous=continuous,
               metric_params={"nominal": train.override()}, **new)
    imp = KNNImputer(**est).fit(train.frame(), y, sample_weight=sw)
    plain_imp = KNNImputer(**est).fit(rep.frame(), y[rows])
    ref = reference_metric(preset, train.kinds, missing="ignore").fit(rep.columns, list(y[rows]))
    refs = column_references(preset, rep, list(y[rows]), {},
                             new.get("attribute_weights", "mi"))
    np.testing.assert_allclose(imp.attribute_weights_, plain_imp.attribute_weights_,
                               rtol=1e-12, atol=1e-12)
    for table in (queries, train):
        out = imp.transform(table.frame())
        check_against_reference(out, reference_impute(ref, rep, table, k, weights, continuous,
                                                      new.get("shrinkage", SHRINKAGE), refs), table)
        want = plain_imp.transform(table.frame())
        pd.testing.assert_frame_equal(out, want, check_exact=False, rtol=1e-12, atol=1e-12)
    assert [type(v) for v in imp.statistics_] == [type(v) for v in plain_imp.statistics_]
    for a, b in zip(imp.statistics_, plain_imp.statistics_):
        assert a == pytest.approx(b, rel=1e-12) if isinstance(a, float) else a == b


@pytest.mark.parametrize("continuous", ["mean", "median"])
@pytest.mark.parametrize("weights", ["dudani", lambda d: np.exp(-3.0 * d)])
def test_dudani_and_callable_weights_equal_repeated_rows(weights, continuous):
    """Dudani's d_1 and d_k are the first and last counted copies; an elementwise callable
    weighs a donor as each of its copies."""
    train, queries, y, sw = weighted_table(14)
    rows = np.repeat(np.arange(train.n), sw)
    rep = train.take(rows)
    est = dict(n_neighbors=5, weights=weights, metric="gower", continuous=continuous,
               metric_params={"nominal": train.override()})
    a = KNNImputer(**est).fit(train.frame(), sample_weight=sw)
    b = KNNImputer(**est).fit(rep.frame())
    for table in (queries, train):
        pd.testing.assert_frame_equal(a.transform(table.frame()), b.transform(table.frame()),
                                      check_exact=False, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weights", ["uniform", "distance", "dudani"])
def test_zero_and_unit_weights(weights):
    """Rows of weight 0 are as absent (never donors, out of every statistic); weights of
    1 change nothing."""
    train, queries, y, _ = weighted_table(12)
    rng = np.random.default_rng(0)
    sw = (rng.random(train.n) < 0.7).astype(float)
    keep = np.flatnonzero(sw)
    est = dict(n_neighbors=3, weights=weights, metric="hvdm",
               metric_params={"nominal": train.override()})
    a = KNNImputer(**est).fit(train.frame(), y, sample_weight=sw)
    b = KNNImputer(**est).fit(train.take(keep).frame(), y[keep])
    c = KNNImputer(**est).fit(train.frame(), y, sample_weight=np.ones(train.n))
    d = KNNImputer(**est).fit(train.frame(), y)
    Q = queries.frame()
    pd.testing.assert_frame_equal(a.transform(Q), b.transform(Q), check_exact=False,
                                  rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(c.transform(Q), d.transform(Q), check_exact=False,
                                  rtol=1e-12, atol=1e-12)


def ref_weighted_impute(ref, train, queries, k, sw, weights, continuous, shrinkage=0.0):
    """The module's rule written out: donors (observed value, positive weight) in
    (distance, position) order, each counted with min(its weight, what k still needs),
    times 1/d for ``"distance"`` (donors at distance 0 take it all).  ``shrinkage`` s: the
    donors' weights scaled to sum to min(k, the column's total weight), then a nominal
    column's votes get s times its weighted label shares, a continuous column one more
    donor of weight s holding its weighted mean (median)."""
    R = ref.pairwise(queries.rows(), train.rows())
    out = {}
    for i, row in enumerate(queries.rows()):
        blank = all(is_missing(v) for v in row)
        for j, v in enumerate(row):
            if not is_missing(v):
                continue
            col = train.columns[j]
            donors = [t for t in range(train.n) if not is_missing(col[t]) and sw[t] > 0]
            vals, w = [], []
            if blank:
                vals, w = [plain(col[t]) for t in donors], [sw[t] for t in donors]
            else:
                ds = snap([R[i, t] for t in donors])
                cum = 0.0
                counted = []
                for s in sorted(range(len(donors)), key=lambda s: (ds[s], donors[s])):
                    if cum >= k:
                        break
                    c = min(sw[donors[s]], k - cum)
                    cum += c
                    counted.append((donors[s], c))
                vals = [plain(col[t]) for t, _ in counted]
                dist = [R[i, t] for t, _ in counted]
                w = [c for _, c in counted]
                if weights == "distance":
                    zero = any(d == 0 for d in dist)
                    w = [c * (float(d == 0) if zero else 1.0 / d) for c, d in zip(w, dist)]
                if shrinkage > 0:
                    total = sum(sw[t] for t in donors)
                    w = [wt * min(k, total) / sum(w) for wt in w]
                    obs = [plain(col[t]) for t in donors]
                    ow = [float(sw[t]) for t in donors]
                    if train.kinds[j] == NOMINAL:
                        for x in set(obs):
                            vals = vals + [x]
                            w = w + [shrinkage * sum(c for o, c in zip(obs, ow) if o == x)
                                     / total]
                    else:
                        xs = [float(x) for x in obs]
                        vals = vals + [ref_median(xs, ow) if continuous == "median" else
                                       sum(c * x for c, x in zip(ow, xs)) / total]
                        w = w + [float(shrinkage)]
            if train.kinds[j] == NOMINAL:
                votes = {}
                for x, wt in zip(vals, w):
                    votes[x] = votes.get(x, 0.0) + wt
                best = max(votes.values())
                out[i, j] = {x for x, s in votes.items() if s >= best * (1 - 1e-9)}
            elif continuous == "median":
                out[i, j] = ref_median([float(x) for x in vals], w)
            else:
                out[i, j] = sum(wt * x for wt, x in zip(w, vals)) / sum(w)
    return out


@pytest.mark.parametrize("k,weights,continuous,shrinkage", [
    (1, "uniform", "mean", 0.0), (3, "uniform", "median", 0.0), (4, "distance", "mean", 0.0),
    (2, "distance", "median", 0.0), (4, "distance", "mean", 1.0),
    (3, "uniform", "median", 2.5)])
def test_fractional_weights_against_reference(k, weights, continuous, shrinkage):
    """Positive fractional weights (HEOM's ranges do not depend on them): the last donor
    is counted with the part of its weight that k still needs."""
    train, queries, _, _ = weighted_table(13)
    sw = np.random.default_rng(1).uniform(0.2, 2.5, size=train.n)
    imp = KNNImputer(n_neighbors=k, weights=weights, metric="heom", continuous=continuous,
                     metric_params={"nominal": train.override()}, attribute_weights=None,
                     shrinkage=shrinkage)
    imp.fit(train.frame(), sample_weight=sw)
    ref = reference_metric("heom", train.kinds, missing="ignore").fit(train.columns)
    for table in (queries, train):
        want = ref_weighted_impute(ref, train, table, k, sw, weights, continuous, shrinkage)
        check_against_reference(imp.transform(table.frame()), want, table)


def test_k_copies_by_hand():
    """One column to impute from donors at x = 0, 1, 2, 3 (weights 3, 0, 1, 2), the query
    at x = 0.4: with k = 4 the donor of weight 3 fills three places and the one at x = 2
    the fourth; the one of weight 0 is skipped (hdist 0.1's donor weights and votes)."""
    KNNImputer = partial(KNNImputerClass, weights="uniform", **OLD)
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0, 0.4], "v": [10.0, 99.0, 20.0, 40.0, np.nan]})
    sw = [3, 0, 1, 2, 1]
    imp = KNNImputer(n_neighbors=4).fit(X, sample_weight=sw)
    assert imp.transform(X)["v"].iloc[4] == (3 * 10.0 + 20.0) / 4
    # k = 5: the fifth place goes to one of the two copies of the row at x = 3
    imp5 = KNNImputer(n_neighbors=5).fit(X, sample_weight=sw)
    assert imp5.transform(X)["v"].iloc[4] == (3 * 10.0 + 20.0 + 40.0) / 5
    # a half weight: k = 1 needs the nearest donor and half of the next one
    half = KNNImputer(n_neighbors=1).fit(X, sample_weight=[0.5, 0, 1, 1, 1])
    assert half.transform(X)["v"].iloc[4] == (0.5 * 10.0 + 0.5 * 20.0) / 1.0
    # the median of the copies 10, 10, 10, 20, 40 and the weighted mode
    med = KNNImputer(n_neighbors=5, continuous="median").fit(X, sample_weight=sw)
    assert med.transform(X)["v"].iloc[4] == 10.0
    assert med.statistics_[1] == 15.0          # median of 10 x3, 20, 40 x2
    Xn = X.assign(v=["a", "b", "c", "c", None])
    assert KNNImputer(n_neighbors=4).fit(Xn, sample_weight=sw).transform(Xn)["v"].iloc[4] \
        == "a"
    assert KNNImputer(n_neighbors=4).fit(Xn).transform(Xn)["v"].iloc[4] == "c"


@pytest.mark.parametrize("sw, message", [
    (-np.ones(5), "non-negative"),
    (np.r_[np.ones(4), np.nan], "finite"),
    (np.ones(4), "one weight per training row"),
    (np.zeros(5), "all zero"),
    (np.array(["a"] * 5, dtype=object), "numbers"),
    (np.full(5, 1e308), "infinity"),
])
def test_bad_sample_weight(sw, message):
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0, np.nan, 4.0], "c": ["a", "b", None, "a", "b"]})
    with pytest.raises((ValueError, TypeError), match=message) as err:
        KNNImputer().fit(X, sample_weight=sw)
    assert "sample_weight" in str(err.value)


def test_column_observed_only_in_weight_zero_rows():
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "v": [1.0, np.nan, np.nan, np.nan]})
    with pytest.raises(ValueError, match="'v'.*positive sample_weight"), \
            pytest.warns(UserWarning, match="'v' has no observed value"):
        KNNImputer().fit(X, sample_weight=[0, 1, 1, 1])
    assert math.isclose(KNNImputer().fit(X, sample_weight=[2, 1, 1, 1]).statistics_[1], 1.0)


def test_indicator_ignores_rows_of_weight_zero():
    X = pd.DataFrame({"x": [0.0, 1.0, 2.0, 3.0], "v": [1.0, np.nan, 2.0, 3.0],
                      "w": [np.nan, 1.0, 2.0, 3.0]})
    imp = KNNImputer(add_indicator=True).fit(X, sample_weight=[1, 0, 1, 1])
    assert imp.indicator_features_.tolist() == [2]
    assert imp.get_feature_names_out().tolist() == ["x", "v", "w", "missingindicator_w"]
