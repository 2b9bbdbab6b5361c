"""The schema seen through a fitted metric: kinds inferred from pandas dtypes and
overridden by name, position or mask; every input container (frames, object and numeric
arrays, Arrow, polars, structured arrays) against the plain reference (reference.py);
columns matched by position or by name; ordered categories read in the fitted order;
values never seen in fit."""
import math

import numpy as np
import pytest

from hdist import Metric

import strategies as S
from reference import CONTINUOUS, NOMINAL, reference_metric
from test_foundation import as_container, check_knn, close, fit_both

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")

SCHEMA_STYLES = ["float", "Float64", "Int64", "ordered", "object", "string", "str",
                 "category", "boolean", "code", "offset"]


def test_kind_inference_from_pandas_dtypes():
    train, queries = S.random_table(2, 12, SCHEMA_STYLES, p_missing=0.2, n_queries=4)
    X = train.frame()
    expect = {"float": "float64", "Float64": "Float64", "Int64": "Int64",
              "ordered": "category", "object": "object", "category": "category",
              "boolean": "boolean"}
    for nm, style in zip(train.names, train.styles):
        if style in expect:
            assert str(X[nm].dtype) == expect[style], (style, X[nm].dtype)
    assert str(X[train.names[SCHEMA_STYLES.index("string")]].dtype) == "string"
    m = Metric("heom").fit(X)
    inferred = [CONTINUOUS if s in ("float", "Float64", "Int64", "ordered", "code", "offset")
                else NOMINAL for s in train.styles]
    assert m.kinds_ == inferred
    # override by name, by position, by mask: the code column becomes nominal
    by_name = Metric("heom", nominal=train.nominal_names()).fit(X)
    by_pos = Metric("heom", nominal=train.nominal_positions()).fit(X)
    by_mask = Metric("heom", nominal=[k == NOMINAL for k in train.kinds]).fit(X)
    r = reference_metric("heom", train.kinds).fit(train.columns)
    want = r.pairwise(queries.rows(), train.rows())
    for m in (by_name, by_pos, by_mask):
        assert m.kinds_ == train.kinds
        close(m.pairwise(queries.frame(), X), want)
    np_pos = [a - train.m for a in train.nominal_positions()]   # negative positions
    close(Metric("heom", nominal=np_pos).fit(X).pairwise(queries.frame(), X), want)
    with pytest.raises(ValueError, match="no column named"):
        Metric("heom", nominal=["nope"]).fit(X)
    with pytest.raises(ValueError, match="out of range"):
        Metric("heom", nominal=[train.m]).fit(X)
    with pytest.raises(ValueError, match="mask"):
        Metric("heom", nominal=[True, False]).fit(X)


@pytest.mark.parametrize("container", ["frame", "object", "mask", "names", "arrow",
                                       "polars", "structured"])
@pytest.mark.parametrize("preset", ["heom", "hvdm", "gower"])
def test_containers_agree_with_reference(container, preset):
    if container == "arrow":
        pytest.importorskip("pyarrow")
    if container == "polars":
        pytest.importorskip("polars")
    train, queries = S.random_table(4, 15, SCHEMA_STYLES, p_missing=0.2, n_queries=5)
    y = S.random_labels(4, train.n)
    m, r = fit_both(preset, train, y, container, "dict", missing="max")
    assert m.kinds_ == train.kinds
    X, Q = as_container(train, container), as_container(queries, container)
    close(m.pairwise(Q, X), r.pairwise(queries.rows(), train.rows()))
    D, I = m.kneighbors(Q, 4)
    check_knn(D, I, r.pairwise(queries.rows(), train.rows()), 4)


def test_numeric_arrays_and_matching():
    train, queries = S.random_table(6, 14, ["float", "code", "float", "code"],
                                    p_missing=0.2, n_queries=5)
    Xn, Qn = train.numeric_array(), queries.numeric_array()
    assert Metric("heom").fit(Xn).kinds_ == [CONTINUOUS] * 4       # numbers: continuous
    m = Metric("heom", nominal=[1, 3]).fit(Xn)
    r = reference_metric("heom", train.kinds).fit(train.columns)
    close(m.pairwise(Qn, Xn), r.pairwise(queries.rows(), train.rows()))
    # arrays match columns by position: a permuted array is a different table
    perm = [2, 3, 0, 1]
    swapped = m.pairwise(Qn[:, perm], Xn)
    rows_perm = [tuple(row[p] for p in perm) for row in queries.rows()]
    close(swapped, r.pairwise(rows_perm, train.rows()))
    with pytest.raises(ValueError, match="columns"):
        m.pairwise(Qn[:, :3], Xn)
    # frames match by name and order (as scikit-learn's feature_names_in_): a reordered
    # frame is refused naming the columns; selected in the fitted order it is the same
    X, Q = train.frame(), queries.frame()
    mf = Metric("heom", nominal=train.override()).fit(X)
    base = mf.pairwise(Q, X)
    with pytest.raises(ValueError, match="another order"):
        mf.pairwise(Q[Q.columns[::-1]], X)
    with pytest.raises(ValueError, match="another order"):
        mf.kneighbors(Q[Q.columns[::-1]], 3)
    back = Q[Q.columns[::-1]][list(mf.feature_names_in_)]
    assert np.array_equal(mf.pairwise(back, X[X.columns[[2, 0, 3, 1]]][list(X.columns)]),
                          base)
    with pytest.raises(ValueError, match="c1"):
        mf.pairwise(Q.drop(columns="c1"), X)
    with pytest.raises(ValueError, match="extra"):
        mf.pairwise(Q.assign(extra=1.0), X)


def test_ordered_categories_follow_the_fitted_order():
    levels = ["low", "mid", "high"]
    train = pd.DataFrame({"o": pd.Categorical(["low", "high", "mid", None],
                                              categories=levels, ordered=True)})
    m = Metric("heom").fit(train)
    assert m.kinds_ == [CONTINUOUS]
    # the same values under another category order are read by the fitted order
    other = pd.DataFrame({"o": pd.Categorical(["mid", "high"], categories=levels[::-1],
                                              ordered=True)})
    same = pd.DataFrame({"o": pd.Categorical(["mid", "high"], categories=levels,
                                             ordered=True)})
    assert np.array_equal(m.pairwise(other, train), m.pairwise(same, train))
    # ranks 0, 2, 1 / range 2: d(mid, low) = 0.5, d(high, low) = 1
    np.testing.assert_allclose(m.pairwise(same, train)[:, 0], [0.5, 1.0])


def test_unseen_values():
    """A value never seen in fit is a value of its own: it equals only itself (overlap)
    and has empty class statistics (VDM: zeros, or the priors)."""
    train = pd.DataFrame({"s": ["a", "b", "a", "b"], "t": ["u", "u", "v", "v"]})
    y = [0, 0, 1, 1]
    Q = pd.DataFrame({"s": ["new", "new", "other"], "t": ["u", "zzz", "zzz"]})
    for preset, params in [("heom", {}), ("hvdm", {}), ("hvdm", dict(unseen="prior")),
                           ("vdm", dict(vdm="N3"))]:
        m = Metric(preset, **params).fit(train, y)
        r = reference_metric(preset, [NOMINAL, NOMINAL], **params).fit(
            [list(train["s"]), list(train["t"])], y)
        qrows = list(Q.itertuples(index=False, name=None))
        close(m.pairwise(Q), r.pairwise(qrows))
        close(m.pairwise(Q, train), r.pairwise(qrows, list(train.itertuples(
            index=False, name=None))))
    heom = Metric("heom").fit(train)
    D = heom.pairwise(Q)
    assert D[0, 1] == 1.0 and D[1, 2] == 1.0 and D[0, 2] == math.sqrt(2)
