"""Plain reference of the co-occurrence metrics ``hds`` and ``add`` (docs/metrics.md §3-4),
written from the specification with dictionaries and loops, independent of the package.

Columns are Python lists of values (``None`` = missing); ``kinds[k]`` is "continuous" or
"nominal".  Nothing here imports hdist.
"""
from __future__ import annotations

import json
import math
import os



def data_folder():
    """The real datasets: ``$HDIST_DATA``, else ``shared/data`` beside the repository."""
    from datadir import data_dir
    return str(data_dir())


def read_dataset(name):
    """A dataset of the data folder as (DataFrame, schema dict): nominal and logical
    columns as strings, the others as floats, an empty field missing."""
    import pandas as pd
    folder = data_folder()
    with open(os.path.join(folder, name + ".schema.json")) as f:
        schema = json.load(f)
    dtype = {c["name"]: (str if c["type"] in ("nominal", "logical") else float)
             for c in schema["columns"]}
    df = pd.read_csv(os.path.join(folder, name + ".csv"), dtype=dtype,
                     keep_default_na=False, na_values=[""])
    return df, schema


def is_missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v))


def quantile_linear(sorted_values, q):
    """The q-quantile with linear interpolation between order statistics."""
    n = len(sorted_values)
    h = (n - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, n - 1)
    frac = h - lo
    return sorted_values[lo] + frac * (sorted_values[hi] - sorted_values[lo])


def equal_frequency_labels(column, n_bins):
    """Each value's bin: the number of distinct cut points (the k/n_bins quantiles) that
    are <= the value; None for missing."""
    present = sorted(v for v in column if not is_missing(v))
    cuts = sorted(set(quantile_linear(present, k / n_bins) for k in range(1, n_bins)))
    out = []
    for v in column:
        out.append(None if is_missing(v) else sum(1 for c in cuts if c <= v))
    return out


def distribution(rows, values_j):
    """Relative frequencies of the non-missing values of ``values_j`` over ``rows``."""
    counts = {}
    for i in rows:
        v = values_j[i]
        if v is None:
            continue
        counts[v] = counts.get(v, 0) + 1
    total = sum(counts.values())
    return {k: c / total for k, c in counts.items()}


def hellinger(P, Q):
    keys = set(P) | set(Q)
    s = sum((math.sqrt(P.get(k, 0.0)) - math.sqrt(Q.get(k, 0.0))) ** 2 for k in keys)
    return math.sqrt(0.5 * s)


def total_variation(P, Q):
    keys = set(P) | set(Q)
    return 0.5 * sum(abs(P.get(k, 0.0) - Q.get(k, 0.0)) for k in keys)


MISSING_SYMBOL = ("<missing>",)


def value_table(columns, kinds, a, kind="hds", average=True, n_bins=10, policy="one"):
    """``(values, table)``: the learned values of nominal column ``a`` in sorted order
    (with ``MISSING_SYMBOL`` last under the "symbol" policy) and the dict
    ``table[(v, w)]`` of the component distance.  Also ``table[("unseen", v)]``."""
    n = len(columns[0])
    m = len(columns)
    co = []
    for k in range(m):
        if k == a:
            continue
        if kinds[k] == "continuous":
            co.append(equal_frequency_labels(columns[k], n_bins))
        else:
            co.append([None if is_missing(v) else v for v in columns[k]])
    col = columns[a]
    values = sorted(set(v for v in col if not is_missing(v)))
    groups = {v: [i for i in range(n) if not is_missing(col[i]) and col[i] == v]
              for v in values}
    if policy == "symbol":
        values.append(MISSING_SYMBOL)
        groups[MISSING_SYMBOL] = [i for i in range(n) if is_missing(col[i])]
    dists = {v: [distribution(groups[v], cj) for cj in co] for v in values}
    scale = 1.0 / (m - 1) if average else 1.0
    f = hellinger if kind == "hds" else total_variation
    table = {}
    for v in values:
        for w in values:
            if v == w:
                table[(v, w)] = 0.0
                continue
            s = 0.0
            for P, Q in zip(dists[v], dists[w]):
                s += 1.0 if (not P or not Q) else f(P, Q)
            table[(v, w)] = s * scale
        table[("unseen", v)] = (m - 1) * scale
    table[("unseen", "unseen")] = (m - 1) * scale
    return values, table


class RefMetric:
    """``hds`` / ``add`` distance between rows (docs/metrics.md §2-4): range-normalized
    differences and the value tables above, Minkowski ``p``, missing "one" or "symbol"."""

    def __init__(self, kind="hds", p=2.0, average=True, n_bins=10, policy="one"):
        self.kind, self.p, self.average, self.n_bins, self.policy = kind, p, average, \
            n_bins, policy

    def fit(self, columns, kinds):
        self.kinds = kinds
        self.tables, self.values, self.ranges = {}, {}, {}
        for a, k in enumerate(kinds):
            if k == "nominal":
                vals, tab = value_table(columns, kinds, a, self.kind, self.average,
                                        self.n_bins, self.policy)
                self.values[a], self.tables[a] = vals, tab
            else:
                present = [v for v in columns[a] if not is_missing(v)]
                r = max(present) - min(present)
                self.ranges[a] = r if r > 0 else 1.0
        return self

    def term(self, a, x, y):
        """The component distance d_a(x, y)."""
        if self.kinds[a] == "continuous":
            if is_missing(x) or is_missing(y):
                return 1.0
            return abs(x - y) / self.ranges[a]
        if self.policy == "symbol":
            x = MISSING_SYMBOL if is_missing(x) else x
            y = MISSING_SYMBOL if is_missing(y) else y
        elif is_missing(x) or is_missing(y):
            return 1.0
        if x == y:
            return 0.0
        known = self.values[a]
        kx = x if x in known else "unseen"
        ky = y if y in known else "unseen"
        if kx == "unseen" and ky == "unseen":
            return self.tables[a][("unseen", "unseen")]
        if kx == "unseen":
            return self.tables[a][("unseen", ky)]
        if ky == "unseen":
            return self.tables[a][("unseen", kx)]
        return self.tables[a][(kx, ky)]

    def distance(self, x, y):
        terms = [self.term(a, x[a], y[a]) for a in range(len(self.kinds))]
        if self.p == math.inf:
            return max(terms)
        return sum(t ** self.p for t in terms) ** (1.0 / self.p)
