"""A plain, slow reference of docs/metrics.md §5 (continuous attributes through class
posteriors), §7 (the dvdm / ivdm / gvdm / lvdm / pvdm presets), §9 (discretization) and §2
(mutual information weights), written from the specification one value at a time.

Nothing here imports hdist.  Columns are Python lists (``None`` or NaN = missing); class
labels are int codes ``0 .. C-1``.  Choices where docs/metrics.md is silent are those
documented by the package and written down here:

- bins are ``[c_k, c_{k+1})`` with open ends: ``bin(x) = #{cuts <= x}``;
- equal-width cut points ``lo + (hi - lo) * k / s``; equal-frequency cut points the
  ``k / s`` quantiles (linear interpolation), repeated cuts merged, a cut equal to the
  minimum dropped; a zero width gives no cut;
- MDLP: the first boundary (in value order) whose class entropy is within 1e-12 (relative)
  of the smallest; entropies in bits;
- "priors" are the class frequencies of all training rows; a constant column gives every
  value the class frequencies of the rows where it is observed;
- GVDM is the exact sum, each weight multiplied by ``exp(min_j t_j²)`` (which leaves the
  ratio unchanged), and the priors where ``exp(-min_j t_j²)`` underflows to 0;
- the "max" missing policy acts as "one" on these attributes; "ignore" rescales as in
  docs/metrics.md §6;
- mutual information leaves out the rows where the attribute is missing; natural log.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def is_missing(v):
    return v is None or (isinstance(v, float) and math.isnan(v)) or \
        (isinstance(v, np.floating) and np.isnan(v))


def observed(xs, ys=None):
    """Observed values (and their classes) of a column."""
    if ys is None:
        return [float(v) for v in xs if not is_missing(v)]
    pairs = [(float(v), int(c)) for v, c in zip(xs, ys) if not is_missing(v)]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def quantile_linear(sorted_values, q):
    """numpy's default quantile: position ``(n - 1) q`` interpolated between neighbours."""
    n = len(sorted_values)
    h = (n - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


# --------------------------------------------------------------------------------------
# §6 discretization

def equal_width_cuts(xs, n_bins, trim=0.0):
    x = sorted(observed(xs))
    if trim > 0:
        lo, hi = quantile_linear(x, trim), quantile_linear(x, 1.0 - trim)
    else:
        lo, hi = x[0], x[-1]
    if not hi > lo:
        return []
    # Wilson & Martinez, eq. 18: bin(x) = floor((x - lo) / w), w = (hi - lo) / n, the
    # maximum in the last bin, computed by hand: exact cut points on the decimals written
    lo, hi = decimal(lo), decimal(hi)
    return [lo + (hi - lo) * k / n_bins for k in range(1, n_bins)]


def decimal(v):
    """The number a float stands for as written: its shortest round-trip decimal."""
    return Fraction(repr(float(v)))


def equal_frequency_cuts(xs, n_bins):
    x = sorted(observed(xs))
    cuts = set(quantile_linear(x, k / n_bins) for k in range(1, n_bins))
    return sorted(c for c in cuts if c > x[0])


def bin_of(cuts, v):
    """Bin number of ``v`` (None when missing)."""
    if is_missing(v):
        return None
    return sum(1 for c in cuts if c <= (decimal(v) if isinstance(c, Fraction) else v))


def entropy_bits(counts):
    n = sum(counts)
    return -sum(c / n * math.log2(c / n) for c in counts if c > 0)


def mdlp_cuts(xs, ys):
    """Fayyad & Irani's recursive split with the MDL stopping rule."""
    x, y = observed(xs, ys)
    pairs = sorted(zip(x, y), key=lambda p: p[0])
    C = max(y) + 1
    cuts = []

    def counts(part):
        c = [0] * C
        for _, k in part:
            c[k] += 1
        return c

    def split(part):
        n = len(part)
        if n < 2:
            return
        best = None
        cands = []
        for i in range(n - 1):
            if part[i][0] < part[i + 1][0]:
                left, right = part[:i + 1], part[i + 1:]
                e = (len(left) * entropy_bits(counts(left))
                     + len(right) * entropy_bits(counts(right))) / n
                cands.append((i, e))
        if not cands:
            return
        emin = min(e for _, e in cands)
        for i, e in cands:
            if e <= emin + 1e-12 * max(1.0, abs(emin)):
                best = (i, e)
                break
        i, e = best
        left, right = part[:i + 1], part[i + 1:]
        cs, c1, c2 = counts(part), counts(left), counts(right)
        es, e1, e2 = entropy_bits(cs), entropy_bits(c1), entropy_bits(c2)
        gain = es - e
        if not gain > 0:
            return
        k = sum(1 for c in cs if c)
        k1 = sum(1 for c in c1 if c)
        k2 = sum(1 for c in c2 if c)
        delta = math.log2(3 ** k - 2) - (k * es - k1 * e1 - k2 * e2)
        if not gain > (math.log2(n - 1) + delta) / n:
            return
        cuts.append((part[i][0] + part[i + 1][0]) / 2)
        split(left)
        split(right)

    split(pairs)
    return sorted(cuts)


# --------------------------------------------------------------------------------------
# §3 estimators: fit(xs, ys, C); p(v) -> list of C floats

class _Estimator:
    def fit(self, xs, ys, C):
        self.C = C
        self.priors = [sum(1 for c in ys if c == k) / len(ys) for k in range(C)]
        self.x, self.y = observed(xs, ys)
        self.lo, self.hi = min(self.x), max(self.x)
        self.R = self.hi - self.lo
        self.freq = self.frequencies(range(len(self.x)))
        if self.R > 0:
            self.setup()
        return self

    def frequencies(self, idx, empty=None):
        idx = list(idx)
        if not idx:
            return list(empty) if empty is not None else [0.0] * self.C
        return [sum(1 for i in idx if self.y[i] == k) / len(idx) for k in range(self.C)]

    def setup(self):
        pass

    def p(self, v):
        if is_missing(v):
            return None
        if not self.R > 0:
            return list(self.freq)
        return self.posterior(float(v))


class DVDM(_Estimator):
    """Class frequencies of the bin (cuts from ``cut_fn(x, y)``)."""

    def __init__(self, n_bins=None, cut_fn=None):
        self.n_bins, self.cut_fn = n_bins, cut_fn

    def setup(self):
        if self.cut_fn is None:
            self.cuts = equal_width_cuts(self.x, self.n_bins or max(5, self.C))
        else:
            self.cuts = self.cut_fn(self.x, self.y)

    def posterior(self, v):
        b = bin_of(self.cuts, v)
        return self.frequencies(i for i, t in enumerate(self.x) if bin_of(self.cuts, t) == b)


class IVDM(_Estimator):
    def __init__(self, n_bins=None):
        self.n_bins = n_bins

    def setup(self):
        s = self.s = self.n_bins or max(5, self.C)
        cuts = equal_width_cuts(self.x, s)
        assert len(cuts) == s - 1
        self.P = [self.frequencies(i for i, t in enumerate(self.x) if bin_of(cuts, t) == u)
                  for u in range(s)]
        self.mid = [self.lo + self.R * (u + 0.5) / s for u in range(s)]

    def posterior(self, v):
        mid, P = self.mid, self.P
        if v <= mid[0]:
            return list(P[0])
        if v >= mid[-1]:
            return list(P[-1])
        for u in range(self.s - 1):
            if mid[u] <= v <= mid[u + 1]:
                f = (v - mid[u]) / (mid[u + 1] - mid[u])
                return [P[u][c] + f * (P[u + 1][c] - P[u][c]) for c in range(self.C)]
        raise AssertionError("unreachable")


class GVDM(_Estimator):
    def __init__(self, sigma=0.5):
        self.sigma = sigma

    def setup(self):
        self.h = self.sigma * self.R
        self.xa = np.array(self.x)
        self.ya = np.array(self.y)

    def posterior(self, v):
        t2 = ((v - self.xa) / self.h) ** 2
        m = t2.min()
        if math.exp(-m) == 0.0:
            return list(self.priors)
        w = np.exp(-(t2 - m))
        return [float(w[self.ya == k].sum() / w.sum()) for k in range(self.C)]


class LVDM(_Estimator):
    def __init__(self, width=0.2):
        self.width = width

    def posterior(self, v):
        W = self.width * self.R
        half = W / 2
        return self.frequencies((i for i, t in enumerate(self.x) if v - half <= t <= v + half),
                                self.priors)


class PVDM(_Estimator):
    def __init__(self, width=0.4, step=0.05):
        self.width, self.step = width, step

    def setup(self):
        W = self.width * self.R
        S = self.step * self.R
        self.windows = []
        z = 1
        while (self.lo - W) + z * S <= self.hi:
            b = (self.lo - W) + z * S
            self.windows.append((b, b + W))
            z += 1

    def posterior(self, v):
        rows = []
        for b, e in self.windows:
            if b <= v < e:
                inside = [i for i, t in enumerate(self.x) if b <= t < e]
                if inside:
                    rows.append(self.frequencies(inside))
        if not rows:
            return list(self.priors)
        return [sum(r[c] for r in rows) / len(rows) for c in range(self.C)]


ESTIMATORS = {"dvdm": DVDM, "ivdm": IVDM, "gvdm": GVDM, "lvdm": LVDM, "pvdm": PVDM}


# --------------------------------------------------------------------------------------
# §7 information

def entropy(values):
    vals = [v for v in values if not is_missing(v)]
    n = len(vals)
    out = 0.0
    for v in set(vals):
        p = vals.count(v) / n
        out -= p * math.log(p)
    return out


def mutual_information(xs, ys):
    """``I(x; y)`` (nats) of discrete values over the rows where ``x`` is present."""
    pairs = [(x, y) for x, y in zip(xs, ys) if not is_missing(x)]
    n = len(pairs)
    out = 0.0
    for a in set(p[0] for p in pairs):
        na = sum(1 for p in pairs if p[0] == a)
        for b in set(p[1] for p in pairs):
            nb = sum(1 for p in pairs if p[1] == b)
            nab = sum(1 for p in pairs if p == (a, b))
            if nab:
                out += nab / n * math.log(nab * n / (na * nb))
    return out


def mi_weights(columns, kinds, ys, n_bins=10):
    """docs/metrics.md §2 weights ("mi"); continuous columns binned by equal frequency
    first."""
    info = []
    for col, kind in zip(columns, kinds):
        if kind == "continuous":
            cuts = equal_frequency_cuts(col, n_bins)
            col = [bin_of(cuts, v) for v in col]
        info.append(mutual_information(col, ys))
    m = len(columns)
    tot = sum(info)
    if not tot > 0:
        return [1.0] * m, info
    return [m * i / tot for i in info], info


# --------------------------------------------------------------------------------------
# §2, §4, §5: the metric

class PosteriorMetric:
    """A posterior preset evaluated literally.

    ``kinds``: "continuous" / "nominal" per column; ``estimator``: a factory returning a
    fresh estimator of this module for a continuous column; nominal columns use VDM
    (``P(c|v) = N_vc / N_v``, zeros or priors for unseen values) with N2 (``q = 2``) or N1
    (``q = 1``); continuous ones ``(Σ_c |p(x)_c - p(y)_c|^q)^(1/q)``."""

    def __init__(self, kinds, estimator, p=2.0, q=2, weights=None, missing="one",
                 unseen="zero", vdm="N2"):
        self.kinds = list(kinds)
        self.estimator = estimator
        self.p, self.q = float(p), q
        self.weights = [1.0] * len(kinds) if weights is None else list(weights)
        self.missing, self.unseen, self.vdm = missing, unseen, vdm

    def fit(self, columns, ys, C):
        self.C = C
        self.priors = [sum(1 for c in ys if c == k) / len(ys) for k in range(C)]
        self.est, self.P, self._memo = {}, {}, {}
        for a, (kind, col) in enumerate(zip(self.kinds, columns)):
            if kind == "continuous":
                self.est[a] = self.estimator().fit(col, ys, C)
            else:
                table = {}
                for v, c in zip(col, ys):
                    if not is_missing(v):
                        table.setdefault(v, [0] * C)[c] += 1
                self.P[a] = {v: [k / sum(cnt) for k in cnt] for v, cnt in table.items()}
        return self

    def vector(self, a, v):
        if self.kinds[a] == "continuous":
            if is_missing(v):
                return None
            key = (a, float(v))
            if key not in self._memo:
                self._memo[key] = self.est[a].p(v)
            return self._memo[key]
        if is_missing(v):
            return None
        if v in self.P[a]:
            return self.P[a][v]
        return list(self.priors) if self.unseen == "prior" else [0.0] * self.C

    def component(self, a, x, y):
        px, py = self.vector(a, x), self.vector(a, y)
        if px is None or py is None:
            return None if self.missing == "ignore" else 1.0
        if self.kinds[a] == "nominal" and x == y:
            return 0.0
        q = self.q if self.kinds[a] == "continuous" else (1 if self.vdm == "N1" else 2)
        s = sum(abs(u - w) ** q for u, w in zip(px, py))
        d = s ** (1.0 / q)
        if self.kinds[a] == "nominal" and self.vdm == "N3":
            d *= math.sqrt(self.C)
        return d

    def terms(self, x, y):
        d = [self.component(a, x[a], y[a]) for a in range(len(self.kinds))]
        w = self.weights
        known = [a for a in range(len(d)) if d[a] is not None]
        kw = sum(w[a] for a in known)
        W = sum(w)
        if kw <= 0:
            return [wa for wa in w]
        scale = W / kw if len(known) < len(d) else 1.0
        return [0.0 if d[a] is None else w[a] * d[a] ** self.p * scale for a in range(len(d))]

    def distance(self, x, y):
        return sum(self.terms(x, y)) ** (1.0 / self.p)

    def pairwise(self, X, Y):
        return np.array([[self.distance(x, y) for y in Y] for x in X])


# --------------------------------------------------------------------------------------
# real data

def _data_dir():
    """``$HDIST_DATA``, else a ``shared/data`` folder beside the repository."""
    from datadir import data_dir
    return str(data_dir())


def load(name):
    """``(frame of the features, class labels, kinds)`` of a dataset of the data folder
    (``$HDIST_DATA``): kinds from its schema JSON, an empty CSV field missing."""
    import json
    import os

    import pandas as pd
    DATA = _data_dir()
    with open(os.path.join(DATA, name + ".schema.json")) as f:
        schema = json.load(f)
    nominal = {c["name"] for c in schema["columns"] if c["type"] in ("nominal", "logical")}
    df = pd.read_csv(os.path.join(DATA, name + ".csv"), keep_default_na=False, na_values=[""],
                     dtype={c: str for c in nominal})
    cls = schema["class"]
    y = df.pop(cls).tolist()
    kinds = ["nominal" if c in nominal else "continuous" for c in df.columns]
    for c, k in zip(df.columns, kinds):
        df[c] = df[c].astype(object if k == "nominal" else float)
        if k == "nominal":
            df[c] = df[c].where(df[c].notna(), None)
    return df, y, kinds


def class_codes(labels):
    classes = sorted(set(labels))
    return [classes.index(v) for v in labels], len(classes)
