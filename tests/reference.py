"""A plain, slow reference of hdist's foundation formulas, written from docs/metrics.md.

Nothing here imports hdist.  Everything is computed one pair and one attribute at a time,
in the most literal way the specification allows, so that the compiled package can be
checked against it:

- §1 values: a column is a plain list of raw values; ``None``, ``NaN``, ``pandas.NA`` and
  ``pandas.NaT`` are missing.  Column kinds are given explicitly ("continuous" or
  "nominal"); nominal values are compared by Python equality (numpy scalars are turned
  into Python scalars first).  A nominal value never seen in ``fit`` is *unseen*: it
  equals only itself, and its class statistics are those of an empty value.
- §2 aggregation ``d = (Σ_a w_a d_a^p)^(1/p)``, ``p = inf`` -> ``max_a w_a d_a``;
  ``aggregate="mean"`` divides ``Σ w d^p`` by ``Σ w`` before the root (Gower).
- §3 components: ``|x - y| / δ`` with the five normalizations, overlap, VDM N1/N2/N3.
- §4 missing values: "one", "max", "ignore", "symbol", or a dict by kind.
- §8 brute-force neighbors ordered by ``(distance, index)`` and radius neighbors.

Two choices where docs/metrics.md is silent, written down here:

- "ignore" when the components that *are* known all have weight 0: the documented rescaling
  ``(Σ_known w d^p) / (Σ_known w)`` is 0/0, so this is treated like "nothing known"
  (every component counts 1).  For ``p = inf`` the same rule applies: the distance is the
  largest ``w_a d_a`` over the known components of positive weight, and ``max_a w_a`` when
  there is none.
- ``aggregate="mean"`` has no effect when ``p = inf`` (the largest weighted term is
  already a scale-free summary; dividing it by ``Σ w`` would not be an average).
"""
from __future__ import annotations

import math
import statistics
from fractions import Fraction

import numpy as np

CONTINUOUS = "continuous"
NOMINAL = "nominal"
INF = math.inf


class _MissingSymbol:
    """The value a missing nominal cell takes under the "symbol" policy."""

    def __repr__(self):
        return "<missing>"


MISSING_SYMBOL = _MissingSymbol()


def is_missing(v):
    """True for None, float NaN (Python or numpy), pandas.NA and pandas.NaT."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    name = type(v).__name__
    return name in ("NAType", "NaTType")


def plain(v):
    """A numpy scalar as the equal Python scalar (so that np.int64(3) == 3 as a key)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


# --------------------------------------------------------------------------------------
# §3 normalization factors, each from its definition


def observed(values):
    """The present values of a continuous column, as Python floats."""
    return [float(v) for v in values if not is_missing(v)]


def quantile_linear(sorted_values, q):
    """numpy's default ("linear") quantile: position ``h = (n - 1) q`` in the sorted
    values, interpolated between the two neighbours; in exact rational arithmetic
    (a :class:`fractions.Fraction`), so that the difference of two quantiles is exact."""
    n = len(sorted_values)
    h = (n - 1) * Fraction(q)
    lo = math.floor(h)
    hi = min(lo + 1, n - 1)
    frac = h - lo
    a, b = Fraction(sorted_values[lo]), Fraction(sorted_values[hi])
    return a + frac * (b - a)


def delta_range(x):
    return max(x) - min(x)


def delta_trimmed_range(x, trim):
    s = sorted(x)
    return float(quantile_linear(s, 1 - Fraction(trim)) - quantile_linear(s, trim))


def delta_4std(x):
    """4 × the sample standard deviation (ddof = 1), computed by ``statistics.stdev``
    in exact rational arithmetic (so a constant column gives exactly 0)."""
    if len(x) < 2:
        return float("nan")  # the sample standard deviation is undefined
    return 4.0 * statistics.stdev(x)


def delta_mean_diff(x):
    """Average of |x_i - x_j| over all pairs i < j, by enumerating the pairs (O(n²)).

    Each row of pairs is summed with numpy to keep large training sets usable; the
    definition is still the plain pair average."""
    n = len(x)
    if n < 2:
        return float("nan")
    arr = np.asarray(x, dtype=np.float64)
    total = 0.0
    for i in range(n - 1):
        total += float(np.sum(np.abs(arr[i + 1:] - arr[i])))
    return total / (n * (n - 1) / 2)


def normalization_factor(values, method, trim=0.05):
    """δ of docs/metrics.md §3; zero or undefined (constant column, one observed value)
    -> 1."""
    x = observed(values)
    if method == "none":
        return 1.0
    if method == "range":
        d = delta_range(x)
    elif method == "trimmed_range":
        d = delta_trimmed_range(x, trim)
    elif method == "4std":
        d = delta_4std(x)
    elif method == "mean_diff":
        d = delta_mean_diff(x)
    else:
        raise ValueError(method)
    if not (d > 0) or math.isinf(d):
        return 1.0
    return d


# --------------------------------------------------------------------------------------
# presets of docs/metrics.md §7

PRESETS = {
    "heom": dict(nominal_kind="overlap", normalization="range", p=2.0, missing="one"),
    "hvdm": dict(nominal_kind="vdm", vdm="N2", normalization="4std", p=2.0,
                 missing="one"),
    "vdm": dict(nominal_kind="vdm", vdm="N1", p=1.0, missing="one",
                allow_continuous=False),
    "minkowski": dict(nominal_kind="overlap", normalization="range", p=2.0,
                      missing="one"),
    "euclidean": dict(nominal_kind="overlap", normalization="range", p=2.0,
                      missing="one"),
    "manhattan": dict(nominal_kind="overlap", normalization="range", p=1.0,
                      missing="one"),
    "chebyshev": dict(nominal_kind="overlap", normalization="range", p=INF,
                      missing="one"),
    "fractional": dict(nominal_kind="overlap", normalization="range", p=0.5,
                       missing="one"),
    "gower": dict(nominal_kind="overlap", normalization="range", p=1.0,
                  missing="ignore", aggregate="mean"),
}
NEEDS_Y = {"hvdm", "vdm"}


def reference_metric(preset, kinds, **params):
    """The :class:`Reference` that docs/metrics.md §7's preset ``preset`` with ``params``
    defines."""
    cfg = dict(PRESETS[preset])
    if not cfg.pop("allow_continuous", True) and CONTINUOUS in kinds:
        raise ValueError("preset %r takes nominal attributes only" % preset)
    cfg.update(params)
    return Reference(kinds, **cfg)


class Reference:
    """A fitted heterogeneous distance, evaluated literally.

    Parameters
    ----------
    kinds : list of "continuous" / "nominal", one per attribute
    nominal_kind : "overlap" or "vdm"
    p, weights, normalization, trim, vdm, missing, unseen, aggregate : as in
        docs/metrics.md §2-6;
        ``weights`` is a list of m numbers (or None); ``missing`` a policy name or a dict
        ``{"continuous": ..., "nominal": ...}`` (absent kinds default to "one").
    """

    def __init__(self, kinds, *, nominal_kind="overlap", p=2.0, weights=None,
                 normalization="range", trim=0.05, vdm="N2", missing="one", unseen="zero",
                 aggregate="sum"):
        self.kinds = list(kinds)
        self.m = len(self.kinds)
        self.nominal_kind = nominal_kind
        self.p = float(p)
        self.weights = [1.0] * self.m if weights is None else [float(w) for w in weights]
        assert len(self.weights) == self.m
        self.normalization = normalization
        self.trim = float(trim)
        self.vdm = vdm
        self.unseen = unseen
        self.aggregate = aggregate
        if isinstance(missing, str):
            self.policy = {CONTINUOUS: missing, NOMINAL: missing}
        else:
            self.policy = {CONTINUOUS: missing.get(CONTINUOUS, "one"),
                           NOMINAL: missing.get(NOMINAL, "one")}

    # ---------------------------------------------------------------- fit
    def fit(self, columns, y=None):
        """Learn δ, min, max (continuous) and class counts (VDM) from training columns."""
        assert len(columns) == self.m
        n = len(columns[0])
        self.delta, self.lo, self.hi = {}, {}, {}
        self.seen = {}
        self.counts = {}
        if y is not None:
            labels = [plain(v) for v in y]
            self.classes = sorted(set(labels))
            self.class_of = [self.classes.index(v) for v in labels]
            C = len(self.classes)
            self.priors = [sum(1 for c in self.class_of if c == k) / n for k in range(C)]
        for a, (kind, col) in enumerate(zip(self.kinds, columns)):
            if kind == CONTINUOUS:
                x = observed(col)
                self.lo[a], self.hi[a] = min(x), max(x)
                self.delta[a] = normalization_factor(col, self.normalization, self.trim)
                if min(x) == max(x) and self.normalization != "none":
                    self.delta[a] = math.inf   # constant: observed values compare equal
            else:
                values = [self._nominal_value(a, v) for v in col]
                self.seen[a] = set(v for v in values if v is not None)
                if self.nominal_kind == "vdm":
                    counts = {}
                    for v, c in zip(values, self.class_of):
                        if v is None:
                            continue
                        counts.setdefault(v, [0] * len(self.classes))
                        counts[v][c] += 1
                    self.counts[a] = counts
        return self

    def _nominal_value(self, a, v):
        """The value a nominal cell takes: None when missing (or the missing symbol)."""
        if is_missing(v):
            return MISSING_SYMBOL if self.policy[NOMINAL] == "symbol" else None
        return plain(v)

    # ------------------------------------------------------------ statistics
    def probabilities(self, a, v):
        """P_a(c | v) for every class; an unseen or empty value has all zeros, or the
        class priors with unseen="prior"."""
        counts = self.counts[a].get(v)
        total = sum(counts) if counts is not None else 0
        if total == 0:
            if self.unseen == "prior":
                return list(self.priors)
            return [0.0] * len(self.classes)
        return [counts[c] / total for c in range(len(self.classes))]

    def vdm_distance(self, a, v, w):
        Pv = self.probabilities(a, v)
        Pw = self.probabilities(a, w)
        diffs = [pv - pw for pv, pw in zip(Pv, Pw)]
        if self.vdm == "N1":
            return sum(abs(t) for t in diffs)
        if self.vdm == "N2":
            return math.sqrt(sum(t * t for t in diffs))
        if self.vdm == "N3":
            return math.sqrt(len(self.classes) * sum(t * t for t in diffs))
        raise ValueError(self.vdm)

    def value_table(self, a):
        """Labels (seen values in sorted order, then the missing symbol when the "symbol"
        policy learned it) and the table of d_a between them."""
        vals = [v for v in self.seen[a] if v is not MISSING_SYMBOL]
        try:
            vals.sort()
        except TypeError:
            vals.sort(key=repr)
        if self.policy[NOMINAL] == "symbol":
            vals.append(MISSING_SYMBOL)
        T = np.zeros((len(vals), len(vals)))
        for i, v in enumerate(vals):
            for j, w in enumerate(vals):
                T[i, j] = self.nominal_component(a, v, w, coded=True)
        return vals, T

    # ------------------------------------------------------------ components
    def continuous_component(self, a, x, y):
        """d_a for a continuous attribute, or None when "ignore" skips it."""
        policy = self.policy[CONTINUOUS]
        delta = self.delta[a]
        xm, ym = is_missing(x), is_missing(y)
        if not xm and not ym:
            return abs(float(x) - float(y)) / delta
        if policy == "ignore":
            return None
        if policy == "max" and not math.isinf(delta):   # constant column: as "one"
            lo, hi = self.lo[a], self.hi[a]
            if xm and ym:
                return (hi - lo) / delta
            v = float(y) if xm else float(x)
            return max(v - lo, hi - v) / delta
        return 1.0  # "one", and "symbol", which falls back to "one" for continuous

    def nominal_component(self, a, x, y, coded=False):
        """d_a for a nominal attribute, or None when "ignore" skips it.  With ``coded``
        the values are already mapped by :meth:`_nominal_value` (used for tables)."""
        if not coded:
            x = self._nominal_value(a, x)
            y = self._nominal_value(a, y)
        if x is None or y is None:
            if self.policy[NOMINAL] == "ignore":
                return None
            return 1.0  # "one" and "max" both give 1 for nominal attributes
        if self.nominal_kind == "overlap":
            return 0.0 if x == y else 1.0
        if x == y:
            return 0.0
        return self.vdm_distance(a, x, y)

    def component(self, a, x, y):
        if self.kinds[a] == CONTINUOUS:
            return self.continuous_component(a, x, y)
        return self.nominal_component(a, x, y)

    # ------------------------------------------------------------ aggregation
    def terms(self, x, y):
        """Per-attribute terms of d(x, y) as ``explain`` shows them.

        Returns ``(terms, skipped, reduced)``: ``terms[a] = w_a d_a^p`` (``w_a d_a`` for
        p = inf), with the "ignore" rescaling and the mean applied; skipped components
        have term 0; ``reduced`` is their sum (their max for p = inf)."""
        d = [self.component(a, x[a], y[a]) for a in range(self.m)]
        w = self.weights
        skipped = [v is None for v in d]
        known_weight = sum(w[a] for a in range(self.m) if not skipped[a])
        W = sum(w)
        if self.p == INF:
            if known_weight > 0:
                terms = [0.0 if skipped[a] else w[a] * d[a] for a in range(self.m)]
            else:
                terms = [w[a] * 1.0 for a in range(self.m)]
            return terms, skipped, max(terms)
        if known_weight > 0:
            scale = W / known_weight if any(skipped) else 1.0
            terms = [0.0 if skipped[a] else w[a] * d[a] ** self.p * scale
                     for a in range(self.m)]
        else:
            terms = [w[a] * 1.0 ** self.p for a in range(self.m)]
        if self.aggregate == "mean":
            terms = [t / W for t in terms]
        return terms, skipped, sum(terms)

    def reduced(self, x, y, mean=True):
        """``Σ w d^p`` (rescaled for "ignore"; divided by ``Σ w`` for the mean unless
        ``mean=False``); the max of the terms for p = inf."""
        _, _, r = self.terms(x, y)
        if not mean and self.aggregate == "mean" and self.p != INF:
            r = r * sum(self.weights)
        return r

    def distance(self, x, y):
        r = self.reduced(x, y)
        if self.p == INF:
            return r
        return r ** (1.0 / self.p)

    # ------------------------------------------------------------ many pairs
    def pairwise(self, X, Y=None, reduced=False):
        """Matrix of d(X_i, Y_j) for lists of rows (``reduced``: no root, no mean)."""
        Y = X if Y is None else Y
        out = np.empty((len(X), len(Y)))
        for i, x in enumerate(X):
            for j, yv in enumerate(Y):
                out[i, j] = self.reduced(x, yv, mean=False) if reduced \
                    else self.distance(x, yv)
        return out

    def kneighbors(self, Q, train, k, exclude_self=False, D=None):
        """Brute-force k nearest training rows of each query row, ordered by
        ``(distance, index)``; ``exclude_self`` skips index i for query i."""
        if D is None:
            D = self.pairwise(Q, train)
        dist = np.empty((len(Q), k))
        ind = np.empty((len(Q), k), dtype=np.intp)
        for i in range(len(Q)):
            cand = [(D[i, j], j) for j in range(len(train))
                    if not (exclude_self and j == i)]
            cand.sort()
            for pos in range(k):
                dist[i, pos], ind[i, pos] = cand[pos]
        return dist, ind

    def radius_neighbors(self, Q, train, r, exclude_self=False, D=None):
        """Training rows with d <= r for each query row, ordered by (distance, index)."""
        if D is None:
            D = self.pairwise(Q, train)
        out = []
        for i in range(len(Q)):
            hits = sorted((D[i, j], j) for j in range(len(train))
                          if D[i, j] <= r and not (exclude_self and j == i))
            out.append(hits)
        return out


def rows_of(columns):
    """Columns (lists) -> rows (tuples)."""
    return list(zip(*columns))
