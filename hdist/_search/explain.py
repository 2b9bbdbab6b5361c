"""How one distance is made, attribute by attribute: :meth:`hdist.Metric.explain` and
the :class:`Explanation` it returns, with its printed form (one line per attribute, then
the reduction to the distance step by step)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._core.schema import CONTINUOUS


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


def explain_pair(metric, x, y):
    """The :class:`Explanation` of ``d(x, y)`` under the fitted ``metric``, for two single
    rows (:meth:`hdist.Metric.explain`, which documents it)."""
    metric.check_fitted()
    unseen = [dict() for _ in metric.schema_.nominal_names]
    rx, ry = _one_row(x, metric.schema_), _one_row(y, metric.schema_)
    A = metric.encode(rx, unseen, "x")
    B = metric.encode(ry, unseen, "y")
    if A.n != 1 or B.n != 1:
        raise ValueError("explain takes single rows; got %d and %d rows" % (A.n, B.n))
    from .._kernels import CRows, pair_terms, finalize_array
    plan = metric.plan_
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
    schema = metric.schema_
    return Explanation(list(schema.names_), raw * scale, skipped, float(red_shown), dist,
                       plan.p, x=_row_values(schema, rx, unseen),
                       y=_row_values(schema, ry, unseen), d=d, weights=w.copy(), raw=raw,
                       mean=bool(plan.mean), compared=compared)


def _row_values(schema, row, unseen):
    """The values of a single row as the metric reads them, in column order
    (``None`` where missing): floats, and nominal labels (unseen ones included)."""
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
