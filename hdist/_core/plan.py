"""The Plan: what a fitted metric hands to the kernels.

A fitted metric is a list of per-attribute *components* (what was learned for each
column) plus the aggregation (weights, ``p``, mean or sum).  :class:`Plan` turns them into
contiguous arrays, grouped in four blocks so that the kernels' inner loops have no
per-attribute switch on kind:

========  =====================================================  =====================
block     term of attribute a for values x, y                     encoded per row
========  =====================================================  =====================
c         ``w · (|x' - y'| / δ')^p`` on values scaled by a       float64 value, and the
          power of two (``x' = x · 2^e``, ``δ' = δ · 2^e``)       term used when the
                                                                  other side is missing
o         ``w`` if the codes differ, else 0 (overlap)             int32 code
t         ``T_a[x, y]`` from a table pre-weighted, pre-raised     int32 code
e         ``(Σ_c |e_x - e_y|^q)^(p/q)`` on vectors pre-scaled     float64 vector
========  =====================================================  =====================

For ``p = inf`` the scale is ``w`` instead of ``w^(1/p)`` and terms are ``w · d``.
A Plan is immutable and picklable; the compiled view (``CPlan``) is made on demand.
"""
from __future__ import annotations

import math

import numpy as np

ONE, MAX, IGNORE, SYMBOL = "one", "max", "ignore", "symbol"


class DiffComponent:
    """Continuous attribute: ``d = |x - y| / delta``."""

    block = "c"

    def __init__(self, col, delta, lo, hi, policy):
        self.col, self.delta, self.lo, self.hi, self.policy = col, float(delta), float(lo), \
            float(hi), policy


class OverlapComponent:
    """Nominal attribute compared by equality (no table; any cardinality)."""

    block = "o"

    def __init__(self, col, n_values, policy):
        self.col, self.n_values, self.policy = col, n_values, policy


class TableComponent:
    """Nominal attribute with a learned value table.

    ``table`` is ``(V + 1) x (V + 1)`` of component distances ``d_a`` (unweighted): rows
    ``0..V-1`` the learned values (with the "symbol" policy the last of them is the
    missing symbol), row ``V`` every unseen value.  ``T[v, v] = 0`` for learned values.
    """

    block = "t"

    def __init__(self, col, table, policy, n_values, embedding=None):
        # embedding (optional, (V + 1) x dim): T[v, w] = ||E[v] - E[w]||_2 for every pair,
        # which lets p = 2 searches use matrix products (VDM N2/N3: the probability rows)
        self.col, self.table, self.policy, self.n_values = col, table, policy, n_values
        self.embedding = embedding


class EmbedComponent:
    """Attribute mapped to a vector per value; ``d = ||e(x) - e(y)||_q``.

    ``encode(values) -> float64 [n, dim]`` gets the schema-encoded column (float values for
    continuous attributes, int codes for nominal ones, already remapped for "symbol") and
    returns NaN rows for missing values."""

    block = "e"

    def __init__(self, col, dim, q, encode, policy, nominal):
        self.col, self.dim, self.q, self.encode, self.policy = col, dim, q, encode, policy
        self.nominal = nominal


class Rows:
    """Encoded rows: the arrays one side of a kernel call reads."""

    __slots__ = ("n", "c", "cpen", "o", "t", "e", "D")

    def __init__(self, n, c, cpen, o, t, e):
        self.n, self.c, self.cpen, self.o, self.t, self.e = n, c, cpen, o, t, e
        self.D = e.shape[1]

    def take(self, idx):
        idx = np.asarray(idx, dtype=np.intp)
        return Rows(len(idx), self.c[idx], self.cpen[idx], self.o[idx], self.t[idx],
                    self.e[idx])

    def block(self, a, b):
        """Rows ``a .. b - 1`` as views of these arrays (no copy; row slices of
        C-contiguous arrays stay C-contiguous)."""
        return Rows(b - a, self.c[a:b], self.cpen[a:b], self.o[a:b], self.t[a:b],
                    self.e[a:b])

    def concat(self, other):
        return Rows(self.n + other.n, np.vstack([self.c, other.c]),
                    np.vstack([self.cpen, other.cpen]), np.vstack([self.o, other.o]),
                    np.vstack([self.t, other.t]), np.vstack([self.e, other.e]))

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, st):
        for k, v in st.items():
            setattr(self, k, v)


def p_mode(p):
    if p == math.inf:
        return 0
    if p == 1:
        return 1
    if p == 2:
        return 2
    return 3


class Plan:
    """Contiguous arrays for the kernels, built from a fitted metric's components.

    Parameters
    ----------
    components : list, one per attribute, in schema column order
    weights : float64 [m] (non-negative)
    p : float > 0 or inf
    mean : divide the reduced distance by the total weight (Gower's average)
    cont_pos, nom_pos : position of each column in the schema's continuous / nominal
        encoded arrays (-1 where not of that kind)
    names : column names, for error messages (optional)

    Floating-point range: the weights must keep ``Σ w``, ``Σ w / min(w > 0)`` and, for a
    sum (not the mean), ``(Σ w)^(1/p)`` finite (else ValueError), and a continuous value
    whose encoded form ``x · 2^e`` (``2^e`` the power of two that brings δ near 1)
    overflows float64 is refused by :meth:`encode` naming its column.  Every term of the
    kernels is then a finite number or ``+inf``, so a difference or a power that overflows
    gives an infinite distance, never NaN; a zero weight removes its term even when ``d^p``
    overflows.
    """

    def __init__(self, components, weights, p, mean, cont_pos, nom_pos, names=None):
        self.components = list(components)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.names = None if names is None else list(names)
        self.p = float(p)
        self.mean = bool(mean)
        _check_weight_range(self.weights, self.p, self.mean)
        self.pmode = p_mode(self.p)
        self.cont_pos = np.asarray(cont_pos, dtype=np.intp)
        self.nom_pos = np.asarray(nom_pos, dtype=np.intp)
        m = len(components)
        self.m = m
        self.w_all = float(self.weights.sum())
        self.w_max = float(self.weights.max()) if m else 0.0
        by = {"c": [], "o": [], "t": [], "e": []}
        for a, comp in enumerate(components):
            by[comp.block].append(a)
        self.c_attr = np.array(by["c"], dtype=np.intp)
        self.o_attr = np.array(by["o"], dtype=np.intp)
        self.t_attr = np.array(by["t"], dtype=np.intp)
        self.e_attr = np.array(by["e"], dtype=np.intp)
        self.mc, self.mo, self.mt, self.me = (len(by[k]) for k in "cote")
        self.has_ignore = int(any(c.policy == IGNORE for c in components))
        w = self.weights
        inf = self.pmode == 0

        def raise_p(d):
            return d if (inf or self.pmode == 1) else np.power(d, self.p)

        cs = [components[a] for a in by["c"]]
        self.c_rw = w[by["c"]].copy()
        # A pair's continuous term is  w · (|x - y| · c_inv)^p  on values multiplied by a
        # power of two (exact), so that two rows at the same difference from a query get
        # bit-identical terms: fl(x' - y') is a function of the exact difference.  The values
        # are not shifted (by the training minimum, say): a shift by a much larger value
        # rounds small values away.  The power of two brings δ towards [1, 2), so that 1/δ
        # never overflows (subnormal spreads).  The weight multiplies the raised term: no
        # w^(1/p) (it underflows for small p).  A column that contributes nothing (zero
        # weight, or a constant column: δ = inf) keeps only its missing pattern: its present
        # values are encoded as 0.
        self.c_void = np.array([(w[a] == 0.0) or not np.isfinite(c.delta)
                                for a, c in zip(by["c"], cs)], dtype=bool)
        self.c_pow2 = np.ones(len(cs))
        self.c_inv = np.zeros(len(cs))
        for k, (void, c) in enumerate(zip(self.c_void, cs)):
            if not void:
                self.c_pow2[k], self.c_inv[k] = _pow2_split(c.delta)
        self.c_ign = np.array([c.policy == IGNORE for c in cs], dtype=np.uint8)
        self.c_max = np.array([c.policy == MAX for c in cs], dtype=bool)
        self.c_lo = np.array([c.lo for c in cs])
        self.c_hi = np.array([c.hi for c in cs])
        self.c_delta = np.array([c.delta for c in cs])
        self._encoded_range()
        self.c_maxp = self.c_max.astype(np.uint8)
        with np.errstate(over="ignore"):
            both = np.where(self.c_max, (self.c_hi - self.c_lo) / self.c_delta, 1.0) \
                if cs else np.zeros(0)
            self.c_both = _weighted(self.c_rw, raise_p(both))

        os_ = [components[a] for a in by["o"]]
        self.o_rw = w[by["o"]].copy()
        self.o_w = self.o_rw.copy()
        self.o_miss = self.o_rw.copy()
        self.o_ign = np.array([c.policy == IGNORE for c in os_], dtype=np.uint8)

        ts = [components[a] for a in by["t"]]
        self.t_rw = w[by["t"]].copy()
        self.t_miss = self.t_rw.copy()
        self.t_ign = np.array([c.policy == IGNORE for c in ts], dtype=np.uint8)
        tabs, raws, offs, Vs = [], [], [], []
        off = 0
        for a, c in zip(by["t"], ts):
            T = np.asarray(c.table, dtype=np.float64)
            V = T.shape[0] - 1
            raws.append(T.ravel())
            with np.errstate(over="ignore"):
                tabs.append(_weighted(w[a], raise_p(T)).ravel())
            offs.append(off)
            Vs.append(V)
            off += T.size
        self.t_tab = np.concatenate(tabs) if tabs else np.zeros(0)
        # unraised tables: only the exact fallback of p = 2 and general p reads them
        self.t_raw = np.concatenate(raws) if (raws and self.pmode >= 2) else np.zeros(0)
        self.t_off = np.array(offs, dtype=np.intp)
        self.t_V = np.array(Vs, dtype=np.intc)

        es = [components[a] for a in by["e"]]
        self.e_rw = w[by["e"]].copy()
        self.e_miss = self.e_rw.copy()
        self.e_ign = np.array([c.policy == IGNORE for c in es], dtype=np.uint8)
        self.e_q = np.array([c.q for c in es], dtype=np.uint8)
        self.e_off = np.concatenate([[0], np.cumsum([c.dim for c in es])]).astype(np.intp)
        self.D = int(self.e_off[-1])
        self._cplan = None

    def _encoded_range(self):
        """The training range in encoded units (``c_elo``, ``c_ehi``): Weka's "max" penalty
        of the exact recomputation, the centre of the matrix-product filter and the
        embedding's origin."""
        with np.errstate(over="ignore", invalid="ignore"):
            self.c_elo = np.where(self.c_void, 0.0, self.c_lo * self.c_pow2)
            self.c_ehi = np.where(self.c_void, 0.0, self.c_hi * self.c_pow2)

    # -- pickling: the compiled view is rebuilt on demand ---------------------
    def __getstate__(self):
        st = dict(self.__dict__)
        st["_cplan"] = None
        return st

    def __setstate__(self, st):
        self.__dict__.update(st)

    @property
    def cplan(self):
        if self._cplan is None:
            from .._kernels import CPlan
            self._cplan = CPlan(self)
        return self._cplan

    # -- encoding ----------------------------------------------------------------
    def nominal_codes(self, comp, codes):
        """Schema codes -> codes for the kernels ("symbol": missing becomes a value)."""
        codes = np.asarray(codes, dtype=np.int64)
        if comp.policy == SYMBOL:
            return _symbol_codes(codes, comp.n_values - 1)
        return codes

    def encode(self, cont, nom):
        """Schema-encoded arrays -> :class:`Rows`.  The continuous and the nominal blocks
        are made a whole block at a time (the same operations on each value as one column
        at a time: the same bits), so that a short call's encoding costs a few array
        operations rather than a few per attribute."""
        n = cont.shape[0] if cont.ndim == 2 else nom.shape[0]
        inf = self.pmode == 0
        # (np.take: C-contiguous blocks, as the kernels read them; cont[:, idx] is not)
        v = np.take(cont, self.cont_pos[self.c_attr], axis=1) if self.mc else np.empty((n, 0))
        with np.errstate(over="ignore", invalid="ignore"):
            c = v * self.c_pow2
        if self.c_void.any():
            c[:, self.c_void] = np.where(np.isnan(v[:, self.c_void]), np.nan, 0.0)
        self._check_scaled_block(c, v)
        cpen = np.empty((n, self.mc))
        # the weight itself, which the kernels then read from the plan (PlanS.c_anymax)
        # instead of these rows, where the policy is not "max"
        cpen[...] = self.c_rw
        kmax = self.c_max
        if kmax.any():
            # Weka's penalty max(x - min, max - x) / δ in encoded units, as the pair terms:
            # it overflows only where the encoded value itself would
            with np.errstate(over="ignore", invalid="ignore"):
                x = c[:, kmax]
                pen = np.maximum(x - self.c_elo[kmax], self.c_ehi[kmax] - x) * self.c_inv[kmax]
                pen = np.where(np.isnan(pen), 0.0, np.maximum(pen, 0.0))
                cpen[:, kmax] = _weighted(self.c_rw[kmax], pen if (inf or self.pmode == 1)
                                          else np.power(pen, self.p))
        o = self._nominal_block(nom, self.o_attr, n)
        # every unseen code maps to row V in the kernel; keep distinct codes for equality
        t = self._nominal_block(nom, self.t_attr, n)
        e = np.empty((n, self.D))
        for k, a in enumerate(self.e_attr):
            comp = self.components[a]
            if comp.nominal:
                vals = self.nominal_codes(comp, nom[:, self.nom_pos[a]])
            else:
                vals = cont[:, self.cont_pos[a]]
            vec = np.asarray(comp.encode(vals), dtype=np.float64)
            lo, hi = self.e_off[k], self.e_off[k + 1]
            e[:, lo:hi] = vec
            miss = np.isnan(vec).any(axis=1) if vec.size else np.zeros(n, bool)
            e[miss, lo] = np.nan
        return Rows(n, c, cpen, o, t, e)

    def _nominal_block(self, nom, attrs, n):
        """The kernels' int32 codes of the nominal attributes ``attrs`` (one block):
        :meth:`nominal_codes` of each column."""
        if not len(attrs):
            return np.empty((n, 0), dtype=np.intc)
        codes = np.asarray(np.take(nom, self.nom_pos[attrs], axis=1), dtype=np.int64)
        sym = [k for k, a in enumerate(attrs) if self.components[a].policy == SYMBOL]
        if sym:
            V = np.array([self.components[attrs[k]].n_values - 1 for k in sym], np.int64)
            codes[:, sym] = _symbol_codes(codes[:, sym], V)
        return _as_int32(codes)

    def _check_scaled_block(self, c, v):
        """:meth:`_check_scaled` of the continuous block ``c`` (scaled) made from ``v``,
        naming the first column that overflowed."""
        bad = np.isinf(c) & ~np.isinf(v)
        if bad.any():
            k = int(np.flatnonzero(bad.any(axis=0))[0])
            a = self.c_attr[k]
            self._check_scaled(c[:, k], v[:, k], a, "scaled towards the spread δ = %r"
                               % self.components[a].delta)

    def _check_scaled(self, scaled, raw, a, how):
        """Refuse values whose scaled form overflowed (infinite where the input is not)."""
        bad = np.isinf(scaled) & ~np.isinf(raw)
        if bad.ndim > 1:
            bad = bad.any(axis=1)
        if bad.any():
            name = repr(self.names[a]) if self.names is not None else "at position %d" % a
            value = raw[np.flatnonzero(bad)[0]]
            raise ValueError("column %s: the value %r overflows float64 once %s and weighted;"
                             " rescale the column (or lower its weight)"
                             % (name, value.tolist() if hasattr(value, "tolist") else value,
                                how))


def _weighted(w, x):
    """``w * x`` with a zero weight giving 0 even where ``x`` overflowed to inf."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(w == 0, 0.0, w * x)


def _pow2_split(delta):
    """``(2^a, 2^b / m)`` with ``delta = m · 2^-(a + b)``, ``m`` in [1, 2) and ``|a| ≤ 1000``:
    values are multiplied by ``2^a`` (exact), differences by ``2^b / m`` (one rounding, the
    same for every spread, subnormal or huge)."""
    mant, e = math.frexp(delta)
    need = 1 - e
    a = min(1000, max(-1000, need))
    return math.ldexp(1.0, a), math.ldexp(1.0 / (2.0 * mant), need - a)


class WeightRangeError(ValueError):
    """Weights (with ``p``) whose distances would overflow float64: parameters refused
    once the columns are known, at ``fit`` (the command line reports it as a usage error
    of ``--param``)."""


def _check_weight_range(w, p, mean=False):
    """Weights whose sum, or whose sum over the smallest positive weight (the "ignore"
    rescaling), overflows float64 cannot be applied: refuse them, naming the argument.
    For a sum (not the mean) with ``p < 1`` the root can overflow too: ``(Σ w)^(1/p)``,
    the distance of two rows 1 apart in every attribute (the range-normalized maximum, and
    a missing value under "one"), must be finite, else every pair with a difference in a
    heavy attribute would be at distance inf and lose its order."""
    with np.errstate(over="ignore", divide="ignore"):
        total = w.sum()
        pos = w[w > 0]
        spread = total / pos.min() if pos.size else 1.0
    if not (np.isfinite(total) and np.isfinite(spread)):
        raise WeightRangeError("weights %r are out of float64's range for p = %r: the sum "
                               "and the ratio of the sum to the smallest positive weight "
                               "must be finite" % (w.tolist(), p))
    if not mean and p < 1.0 and not _pow_finite(float(total), 1.0 / p):
        raise WeightRangeError("weights %r are out of float64's range for p = %r: the "
                               "largest distance of rows within the training ranges, "
                               "(Σ w)^(1/p), overflows float64; use smaller weights (or "
                               "aggregate='mean')" % (w.tolist(), p))


def _pow_finite(x, e):
    """True when ``x ** e`` (libm's pow, as the kernels' root) is finite."""
    try:
        return math.isfinite(math.pow(x, e))
    except OverflowError:
        return False


def _symbol_codes(codes, V):
    """Codes under the "symbol" policy: missing (< 0) becomes ``V``, the last learned value
    (the symbol), and the unseen codes from ``V`` on move up by one (``V`` one value per
    column, or an array of them for a block of columns)."""
    return np.where(codes < 0, V, np.where(codes >= V, codes + 1, codes))


def _as_int32(codes):
    if codes.size and codes.max() > np.iinfo(np.int32).max:
        raise ValueError("more than 2**31 distinct nominal values in one column")
    return codes.astype(np.intc)
