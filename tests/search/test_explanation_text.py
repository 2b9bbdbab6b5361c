"""The printed explanation of a distance (``Metric.explain``): each attribute's line shows
its two values and its term, the terms add up to the printed steps, and the last line is
the distance the kernels compute; one pair of single rows only."""
import itertools
import math

import numpy as np
import pytest

from hdist import Metric

import strategies as S
from reference import CONTINUOUS, INF, NOMINAL
from test_foundation import sweep_tables

# kinds are inferred here from random or small tables of whole numbers on purpose; the
# warning for code-like numbers is asserted in tests/core/test_kinds.py and test_edge_inputs.py
pytestmark = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

pd = pytest.importorskip("pandas")


def check_printed_explanation(e):
    """The printed explanation adds up: each printed term is the attribute's ``w_a d_a^p``
    rounded, the printed terms sum (or, for p = inf, max) to the printed first step within
    their rounding, the last step is the kernel's reduced distance and the last line its
    distance, both as printed; each line shows the attribute's two values."""
    lines = str(e).splitlines()
    m = len(e.columns)
    frame = e.to_frame()
    attr, steps, last = lines[1:1 + m], lines[1 + m:-1], lines[-1]
    printed = np.array([float(ln.split()[-1]) for ln in attr])
    dec = len(attr[0].split()[-1].split(".")[1])
    half = 0.5 * 10.0 ** -dec * (1 + 1e-9)
    raw = frame["raw"].to_numpy(float)
    assert np.all(np.abs(printed - raw) <= half)
    for ln, col, x, y in zip(attr, e.columns, frame["x"], frame["y"]):
        words = ln.split()
        assert words[0] == str(col)
        for v in (x, y):
            if v is None or (isinstance(v, float) and math.isnan(v)):
                assert "?" in words
            else:
                assert ("%.6g" % v if isinstance(v, float) else str(v)) in words
    first = float(steps[0].split()[-1])
    if math.isinf(e.p):
        assert abs(printed.max() - first) <= 2 * half
    else:
        assert abs(printed.sum() - first) <= (m + 1) * half
        known = frame["d_a"].notna().to_numpy()
        w, d = frame["weight"].to_numpy(float), frame["d_a"].to_numpy(float)
        np.testing.assert_allclose((w * d ** e.p)[known], raw[known], rtol=1e-9, atol=1e-15)
    assert abs(float(steps[-1].split()[-1]) - e.reduced) <= half
    assert last.startswith("distance = ")
    assert abs(float(last.split()[-1]) - e.distance) <= half


@pytest.mark.parametrize("p", [0.5, 1.0, 2.0, INF])
@pytest.mark.parametrize("missing", ["ignore", "one"])
@pytest.mark.parametrize("aggregate", ["sum", "mean"])
def test_printed_explanation_adds_up(p, missing, aggregate):
    cols = [[1.0, None, 3.0, 8.0], ["a", "b", None, "a"], [0.5, None, 0.5, 2.0]]
    kinds = [CONTINUOUS, NOMINAL, CONTINUOUS]
    table = S.Table(["x", "s", "z"], kinds, ["float", "object", "float"], cols, [[]] * 3)
    X = table.frame()
    m = Metric("heom", p=p, missing=missing, aggregate=aggregate,
               weights=[0.5, 2.0, 1.0]).fit(X)
    for i, j in itertools.product(range(4), repeat=2):
        check_printed_explanation(m.explain(X.iloc[i], X.iloc[j]))


@pytest.mark.parametrize("preset", ["heom", "hvdm", "gower", "fractional", "chebyshev",
                                    "dvdm", "ivdm"])
def test_printed_explanation_adds_up_on_real_data(preset):
    from hdist.datasets import load_credit_a
    X, y = load_credit_a()
    m = Metric(preset).fit(X, y)
    rows = np.flatnonzero(X.isna().any(axis=1).to_numpy())[:3].tolist() + [0, 5, 17]
    for i, j in itertools.combinations(rows, 2):
        e = m.explain(X.iloc[i], X.iloc[j])
        check_printed_explanation(e)
        assert e.distance == pytest.approx(m.pairwise(X.iloc[[i]], X.iloc[[j]])[0, 0],
                                           rel=1e-12)


def test_explain_rejects_several_rows():
    train, queries, y = sweep_tables("heom")
    m = Metric("heom", nominal=train.override()).fit(train.frame())
    with pytest.raises(ValueError, match="single rows"):
        m.explain(train.frame().iloc[:2], train.frame().iloc[[0]])
