"""Prototype rules ("P-rules"): a few prototypes per class, compared by any heterogeneous
distance, optimized by learning vector quantization and grown constructively.

An unknown row takes the class of its nearest prototype (Duch & Grudziński 2001;
Wieczorek, Blachnik & Duch, "Influence of probability estimation parameters on stability of
accuracy in prototype rules using heterogeneous distance functions").
:class:`PrototypeClassifier` selects the prototypes of each class (fuzzy c-means as in that
paper, k-means, k-medoids or random rows), moves them by LVQ1 or LVQ2.1 (Kohonen, "Self-
Organizing Maps", 3rd ed., Springer 2001, section 6) and, constructively, adds one prototype
at a time to the class with the lowest accuracy while the balanced accuracy improves.

Prototypes live in the fitted metric's own space:

- a continuous attribute compared by ``|x - y| / δ`` moves as LVQ moves it in the metric's
  normalized units ``(x - min) / δ``; the map is affine per attribute, so the same step in
  original units is the same move, and the value is kept within the training range;
- a nominal attribute takes the learned value ``v`` that minimizes the class-weighted sum of
  its terms ``Σ_i s_i · w_a d_a(v, x_ia)^p`` over the training rows ``i`` the prototype
  wins (the rows it is the centre of, for the initial centres), where ``s_i`` is the row's
  weight: ``+1`` for a row of the prototype's class and ``-1`` for another class under
  LVQ, the membership weight for fuzzy c-means, ``1`` for k-means.  An update that sees no
  row of the prototype's own class with a value there leaves the value as it is;
- an attribute compared through class-posterior vectors ``p_a(x)`` (IVDM, DVDM, GVDM, LVDM,
  PVDM) moves in that embedded space, and the prototype is mapped back to the nearest
  representable record: the value whose ``p_a`` is nearest to the moved vector, among the
  distinct training values (at most 4096 of them, evenly spaced in sorted order) and 257
  evenly spaced points of the training range.

Nearest-prototype search is a k = 1 query of the shared kernels with the prototypes as
reference rows, so every metric, missing-value policy and weight works unchanged.

References
----------
- W. Duch, K. Grudziński, "Prototype based rules - a new way to understand the data",
  IJCNN 2001.
- T. Kohonen, "Self-Organizing Maps", Springer (LVQ1, LVQ2.1; the batch form used here
  sums each epoch's updates before applying them, so results do not depend on row order
  or thread count).
- J. C. Bezdek, "Pattern Recognition with Fuzzy Objective Function Algorithms", Plenum
  1981 (fuzzy c-means, fuzzifier 2).
- K. H. Brodersen et al., "The balanced accuracy and its posterior distribution",
  ICPR 2010.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples, check_is_fitted, column_or_1d

from .._core.statistics import weighted_quantile
from .._core.plan import SYMBOL
from .._core.schema import (CONTINUOUS, MixedTableTags, check_label_types,
                            check_sample_weight, check_target, missing_mask)
from .._core.threads import effective_n_jobs
from .._search import operations as _ops
from .._search.scoring import balanced_accuracy
from .._search.resolve import resolve_metric

__all__ = ["PrototypeClassifier", "PrototypeExplanation"]

INITS = ("fcm", "kmeans", "kmedoids", "random")
OPTIMIZERS = ("lvq1", "lvq21", None)

#: distinct training values tried when a posterior vector is mapped back to a value
MAX_GRID_VALUES = 4096
#: evenly spaced points of the training range added to those values
GRID_POINTS = 257
#: candidate values of a nominal attribute: all learned ones while (V + 1) x V terms fit
NOMINAL_TERMS_BUDGET = 1 << 22
#: rows of a class k-medoids works on (a sample when the class is larger; CLARA)
KMEDOIDS_SAMPLE = 1000
#: (row, prototype) pairs up to which the update's sums use dense matrices (sparse above)
DENSE_PAIRS = 1 << 16
#: groups among a class's misclassified rows, the largest of which gets a new prototype
NEW_GROUPS = 3
#: iterations of fuzzy c-means / k-means / k-medoids
CLUSTER_ITER = 100
#: defaults of the pruning thresholds (``min_support``, ``min_accuracy``): measured by
#: benchmarks/bench_prototypes.py --prune (README, "Prototype rules")
MIN_SUPPORT = 0.01
MIN_ACCURACY = 0.3
#: most decimals a continuous column's precision is looked for with
MAX_DECIMALS = 10


def _check_int(name, v, lo):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError("%s must be an int, got %r" % (name, v))
    if v < lo:
        raise ValueError("%s must be >= %d, got %d" % (name, lo, v))
    return int(v)


def _check_float(name, v, lo, hi, lo_open=True, hi_open=False):
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or v != v:
        raise TypeError("%s must be a number, got %r" % (name, v))
    v = float(v)
    if (v <= lo if lo_open else v < lo) or (v >= hi if hi_open else v > hi):
        raise ValueError("%s must be in %s%g, %g%s, got %r"
                         % (name, "(" if lo_open else "[", lo, hi, ")" if hi_open else "]",
                            v))
    return v


def _rng(random_state):
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2 ** 31 - 1))
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, (bool, np.bool_)) or \
            not isinstance(random_state, numbers.Integral) or random_state < 0:
        raise TypeError("random_state must be None, a non-negative int, a numpy Generator "
                        "or a RandomState, got %r" % (random_state,))
    return np.random.default_rng(int(random_state))


# -- the metric's space ------------------------------------------------------------------
class _State:
    """Prototypes under construction: continuous values in original units ``cont``
    ``[P, m_c]``, nominal schema codes ``nom`` ``[P, m_n]``, class codes ``labels``, and,
    while they move, the class-posterior vectors ``emb`` (one ``[P, dim]`` array per
    embedded continuous attribute; None once mapped back to values)."""

    def __init__(self, cont, nom, labels, emb=None):
        self.cont, self.nom, self.labels, self.emb = cont, nom, labels, emb

    @property
    def n(self):
        return len(self.labels)

    def copy(self):
        return _State(self.cont.copy(), self.nom.copy(), self.labels.copy(),
                      None if self.emb is None else [u.copy() for u in self.emb])

    def concat(self, other):
        emb = None
        if self.emb is not None and other.emb is not None:
            emb = [np.vstack([a, b]) for a, b in zip(self.emb, other.emb)]
        return _State(np.vstack([self.cont, other.cont]), np.vstack([self.nom, other.nom]),
                      np.concatenate([self.labels, other.labels]), emb)

    def take(self, idx):
        return _State(self.cont[idx], self.nom[idx], self.labels[idx],
                      None if self.emb is None else [u[idx] for u in self.emb])

    def sorted(self):
        """Prototypes ordered by class (stable), so that ties between prototypes at the
        same distance go to the smaller class code, as ``predict_proba``'s do."""
        o = np.argsort(self.labels, kind="stable")
        return _State(self.cont[o], self.nom[o], self.labels[o],
                      None if self.emb is None else [u[o] for u in self.emb])


class _Space:
    """The fitted metric seen from the prototypes: the training rows in the Plan's
    encoding and in the schema's (values and codes), and per attribute what a prototype
    update needs."""

    def __init__(self, metric, cont, nom, rows, y, threads, mass=None):
        plan = metric.plan_
        self.metric, self.plan, self.threads = metric, plan, threads
        self.cont, self.nom, self.rows, self.y = cont, nom, rows, y
        self.n = rows.n
        # frequency weights of the rows (None: 1 each); ``ones`` where they are needed
        self.mass = mass
        self.ones = np.ones(self.n) if mass is None else mass
        e_pos = {int(a): k for k, a in enumerate(plan.e_attr)}
        self.diff = []      # (position in cont, lo, hi)
        self.emb = []       # (position in cont, lo, hi offsets in e, component, grid, G)
        self.nominal = []   # (position in nom, component, data buckets [n], cand, R)
        for a, comp in enumerate(plan.components):
            cpos, npos = int(plan.cont_pos[a]), int(plan.nom_pos[a])
            if cpos >= 0 and comp.block == "e":
                k = e_pos[a]
                lo, hi = int(plan.e_off[k]), int(plan.e_off[k + 1])
                grid = _grid(cont[:, cpos])
                G = np.asarray(comp.encode(grid), dtype=np.float64)
                self.emb.append((cpos, lo, hi, comp, grid, G))
            elif cpos >= 0:
                self.diff.append((cpos, comp.lo, comp.hi))
            else:
                self.nominal.append(self._nominal_item(a, npos, comp))

    def _nominal_item(self, a, npos, comp):
        """Data buckets (kernel codes, -1 missing) and the reduced terms ``R[b, v]``
        between a data value ``b`` and each candidate prototype value ``v``."""
        plan = self.plan
        V = comp.n_values
        codes = plan.nominal_codes(comp, self.nom[:, npos])
        learned = V - 1 if comp.policy == SYMBOL else V   # the symbol is no candidate
        cand = np.arange(learned)
        if (V + 1) * max(learned, 1) > NOMINAL_TERMS_BUDGET:
            keep = max(1, NOMINAL_TERMS_BUDGET // (V + 1))
            ok = (codes >= 0) & (codes < learned)
            freq = np.bincount(codes[ok], minlength=learned,
                               weights=None if self.mass is None else self.mass[ok])
            cand = np.sort(np.argsort(-freq, kind="stable")[:keep])
        if comp.block == "o":
            k = int(np.flatnonzero(plan.o_attr == a)[0])
            R = np.full((V + 1, cand.size), plan.o_w[k])
            R[cand, np.arange(cand.size)] = 0.0
        elif comp.block == "t":
            k = int(np.flatnonzero(plan.t_attr == a)[0])
            off = plan.t_off[k]
            tab = plan.t_tab[off:off + (V + 1) ** 2].reshape(V + 1, V + 1)
            R = tab[:, cand].copy()
            R[cand, np.arange(cand.size)] = 0.0
        else:
            k = int(np.flatnonzero(plan.e_attr == a)[0])
            E = np.asarray(comp.encode(np.arange(V + 1)), dtype=np.float64)
            R = np.empty((V + 1, cand.size))
            for t, v in enumerate(cand):
                diff = E - E[v]
                norm = np.sqrt((diff * diff).sum(1)) if comp.q == 2 else np.abs(diff).sum(1)
                R[:, t] = plan.e_rw[k] * (norm if plan.pmode in (0, 1)
                                          else np.power(norm, plan.p))
            R[cand, np.arange(cand.size)] = 0.0
        return npos, comp, np.where(codes >= 0, np.minimum(codes, V), -1), cand, R

    # -- prototypes as reference rows ---------------------------------------------------
    def encode(self, st):
        """The prototypes as Plan rows (moving posterior vectors put in place)."""
        cont = st.cont
        if st.emb is not None and self.emb:
            cont = cont.copy()            # the vectors replace what these values encode
            cont[:, [pos for pos, *_ in self.emb]] = np.nan
        rows = self.plan.encode(cont, st.nom)
        if st.emb is not None:
            for (_, lo, hi, *_), u in zip(self.emb, st.emb):
                rows.e[:, lo:hi] = u
        return rows

    def vectors(self, st):
        """Start moving: the posterior vectors of the prototypes' values."""
        if st.emb is None:
            st.emb = [np.asarray(comp.encode(st.cont[:, pos]), dtype=np.float64)
                      for pos, _, _, comp, _, _ in self.emb]
        return st

    def finalize(self, st):
        """Map moved posterior vectors back to the nearest representable value."""
        if st.emb is not None:
            for (pos, _, _, comp, grid, G), u in zip(self.emb, st.emb):
                if comp.q == 2:
                    d = (u * u).sum(1)[:, None] + (G * G).sum(1)[None, :] - 2.0 * u @ G.T
                else:
                    d = np.abs(u[:, None, :] - G[None, :, :]).sum(2)
                st.cont[:, pos] = grid[np.argmin(d, axis=1)]
            st.emb = None
        return st

    def nearest(self, rows, proto_rows, k=1):
        """(distances, prototype indices) of the k nearest prototypes of encoded rows."""
        if rows is self.rows:
            if getattr(self, "_prepared", None) is None:
                self._prepared = _ops.prepare(rows)
            rows = self._prepared
        return _ops.nearest(self.metric, rows, proto_rows, k, threads=self.threads)

    def distances(self, rows, proto_rows, reduced=False):
        """``[n, P]`` distances from encoded rows to the prototypes."""
        return _ops.distances(self.metric, rows, proto_rows, threads=self.threads,
                              reduced=reduced)

    # -- weighted sums over (row, prototype, weight) triples ------------------------------
    def _sums(self):
        """Training data as the update reads it (built once): continuous values with 0
        for missing and their presence, posterior vectors likewise, and per row the
        column of each nominal value in the concatenated value lists (the last column
        for a missing value)."""
        if getattr(self, "_X0", None) is None:
            pos = [p for p, _, _ in self.diff]
            X = self.cont[:, pos]
            self._Xp = (~np.isnan(X)).astype(np.float64)
            self._X0 = np.where(np.isnan(X), 0.0, X)
            self._lo = np.array([lo for _, lo, _ in self.diff])
            self._hi = np.array([hi for _, _, hi in self.diff])
            E = [self.rows.e[:, lo:hi] for _, lo, hi, *_ in self.emb]
            E = np.hstack(E) if E else np.zeros((self.n, 0))
            self._Ep = (~np.isnan(E)).astype(np.float64)
            self._E0 = np.where(np.isnan(E), 0.0, E)
            cols, off = [], 0
            self._noff = []
            for _, _, buckets, _, R in self.nominal:
                cols.append(np.where(buckets >= 0, buckets + off, -1))
                self._noff.append(off)
                off += R.shape[0]
            C = np.stack(cols, axis=1) if cols else np.zeros((self.n, 0), dtype=np.int64)
            self._ncols = off + 1
            self._B = np.where(C >= 0, C, off)
        return self._X0, self._Xp, self._E0, self._Ep, self._B

    @staticmethod
    def _weighted_sums(pi, w, m, X, Xp, P):
        """Per prototype and column: ``Σ w x``, ``Σ w`` and ``Σ m`` (the rows' frequency
        weights: their count without sample weights) over present values, as
        sparse-by-dense products (one entry per (row, prototype) pair)."""
        n = pi.size
        if n * P <= DENSE_PAIRS:
            Mt = np.zeros((P, n))
            Mt[pi, np.arange(n)] = w
            M1 = np.zeros((P, n))
            M1[pi, np.arange(n)] = m
        else:
            from scipy import sparse
            ptr = np.arange(n + 1)
            Mt = sparse.csr_matrix((w, pi, ptr), shape=(n, P)).T
            M1 = sparse.csr_matrix((m, pi, ptr), shape=(n, P)).T
        return Mt @ X, Mt @ Xp, M1 @ Xp

    def update(self, st, ri, pi, w, rate):
        """Move every prototype ``j`` by the weighted pairs ``(row ri, prototype pi,
        weight w)`` (``ri=None``: every training row once; ``w`` includes the rows'
        frequency weights).  ``rate=None``: set it to the weighted centre of its rows
        (non-negative weights); else the batch LVQ step
        ``x_j += rate · Σ_i w_i (x_i - x_j) / n_j`` (``n_j`` the frequency weight of its
        rows with the attribute present: their number without sample weights) on
        continuous values and posterior vectors, and the class-weighted best value on
        nominal attributes.  Prototypes without such rows keep their values."""
        X0, Xp, E0, Ep, B = self._sums()
        P = st.n
        w = np.asarray(w, dtype=np.float64)

        def take(a):
            return a if ri is None else a[ri]
        m = take(self.ones)
        if self.diff:
            pos = [p for p, _, _ in self.diff]
            cur = st.cont[:, pos]
            new = self._step(cur, *self._weighted_sums(pi, w, m, take(X0), take(Xp), P),
                             rate)
            st.cont[:, pos] = np.clip(new, self._lo, self._hi)
        if st.emb is not None and self.emb:
            cur = np.hstack(st.emb)
            new = self._step(cur, *self._weighted_sums(pi, w, m, take(E0), take(Ep), P),
                             rate)
            a = 0
            for u in st.emb:
                u[:] = new[:, a:a + u.shape[1]]
                a += u.shape[1]
        if not self.nominal:
            return st
        nc = self._ncols
        m = B.shape[1]
        if np.all(np.abs(w) == 1.0):
            # LVQ: counts of the rows of each prototype's class and of the others
            idx = ((2 * pi + (w > 0))[:, None] * nc + take(B)).ravel()
            K = np.bincount(idx, minlength=2 * P * nc).reshape(P, 2, nc).astype(np.float64)
            Npos = K[:, 1]
            N = Npos - K[:, 0]
        else:
            idx = (pi[:, None] * nc + take(B)).ravel()
            N = np.bincount(idx, weights=np.repeat(w, m), minlength=P * nc).reshape(P, nc)
            Npos = np.bincount(idx, weights=np.repeat((w > 0).astype(np.float64), m),
                               minlength=P * nc).reshape(P, nc)
        for (pos, comp, buckets, cand, R), off in zip(self.nominal, self._noff):
            if cand.size == 0:          # no learned value (a column missing in training)
                continue
            nb = R.shape[0]
            cost = N[:, off:off + nb] @ R
            own = Npos[:, off:off + nb].sum(1) > 0
            best = cand[np.argmin(cost, axis=1)]
            cur = st.nom[:, pos]
            # a current value that is as good as the best stays
            where = np.minimum(np.searchsorted(cand, cur), max(cand.size - 1, 0))
            valid = (cur >= 0) & (cand[where] == cur)
            keep = valid & (cost[np.arange(P), where] <= cost.min(axis=1))
            st.nom[:, pos] = np.where(own & ~keep, best, cur)
        return st

    @staticmethod
    def _step(cur, S, wsum, cnt, rate):
        """New values from the weighted sums: the centre ``S / wsum`` (``rate=None``)
        or the LVQ step; unchanged where no row counted."""
        with np.errstate(invalid="ignore", divide="ignore"):
            if rate is None:
                new = S / wsum
                has = (cnt > 0) & (wsum > 0)
            else:
                new = cur + rate * (S - wsum * cur) / cnt
                has = cnt > 0
        return np.where(has, new, cur)


def _grid(x):
    """Values a posterior vector may be mapped back to: the distinct training values (at
    most ``MAX_GRID_VALUES``, evenly spaced in sorted order) and ``GRID_POINTS`` points
    spaced evenly over the training range."""
    v = np.unique(x[~np.isnan(x)])
    if v.size == 0:
        return np.array([np.nan])
    if v.size > MAX_GRID_VALUES:
        v = v[np.unique(np.linspace(0, v.size - 1, MAX_GRID_VALUES).round().astype(np.intp))]
    return np.unique(np.concatenate([v, np.linspace(v[0], v[-1], GRID_POINTS)]))


# -- initial prototypes of one class ---------------------------------------------------
def _center(space, idx, label):
    """One prototype at the centre of rows ``idx`` (weighted mean values, best nominal
    values, mean posterior vectors mapped back)."""
    st = _blank(space, 1, label)
    for pos, _, _ in space.diff:        # start from the middle of the range
        col = space.cont[:, pos]
        ok = ~np.isnan(col)
        if not ok.any():
            st.cont[0, pos] = np.nan
        elif space.mass is None:
            st.cont[0, pos] = np.nanmean(col)
        else:
            st.cont[0, pos] = np.dot(space.mass[ok], col[ok]) / space.mass[ok].sum()
    space.update(st, idx, np.zeros(idx.size, dtype=np.intp), space.ones[idx], None)
    return st


def _blank(space, P, label):
    mc, mn = space.cont.shape[1], space.nom.shape[1]
    st = _State(np.full((P, mc), np.nan), np.zeros((P, mn), dtype=np.int64),
                np.full(P, label, dtype=np.int64))
    for pos, comp, buckets, cand, R in space.nominal:
        st.nom[:, pos] = cand[0] if cand.size else -1
    for pos, *_ in space.emb:
        col = space.cont[:, pos]
        ok = ~np.isnan(col)
        st.cont[:, pos] = np.nan if not ok.any() else weighted_quantile(
            col[ok], 0.5, None if space.mass is None else space.mass[ok])
    return space.vectors(st)


#: total weight up to which whole-number weights are drawn as copies (exactly as the
#: repeated rows would be)
MAX_COPIES = 1 << 22


def _copies(mass):
    """Whole-number frequency weights as int64 counts when their total is at most
    ``MAX_COPIES`` (random steps then draw among the copies, with the random numbers the
    repeated rows would use), else None."""
    if mass is None or not np.all(mass == np.floor(mass)) or mass.sum() > MAX_COPIES:
        return None
    return mass.astype(np.int64)


def _draw(rng, n, mass):
    """One of ``n`` positions drawn with probability proportional to ``mass`` (None:
    uniformly): a copy among whole-number weights (``_copies``), else by the cumulative
    weight."""
    if mass is None:
        return int(rng.integers(n))
    cnt = _copies(mass)
    if cnt is not None:
        return int(np.searchsorted(np.cumsum(cnt), rng.integers(cnt.sum()), side="right"))
    cum = np.cumsum(mass)
    nxt = int(min(np.searchsorted(cum, rng.random() * cum[-1], side="right"),
                  mass.size - 1))
    while mass[nxt] == 0.0:
        nxt -= 1
    return nxt


def _rows_state(space, idx, label, fill):
    """Prototypes at the training rows ``idx``; a missing value takes ``fill``'s."""
    cont = space.cont[idx].copy()
    nom = space.nom[idx].copy()
    miss = np.isnan(cont)
    cont[miss] = np.broadcast_to(fill.cont[0], cont.shape)[miss]
    bad = nom < 0
    nom[bad] = np.broadcast_to(fill.nom[0], nom.shape)[bad]
    return _State(cont, nom, np.full(len(idx), label, dtype=np.int64))


def _seeds(space, idx, c, rng, mass=None):
    """k-means++ seeding (Arthur & Vassilvitskii 2007) of ``c`` rows among ``idx``; with
    frequency weights a row is drawn with probability proportional to its weight (the
    first) or to its weight times its reduced distance to the nearest row drawn.  With
    whole-number weights the draws are of copies (``_copies``): a row's copies not drawn
    yet stay candidates, so a row may be drawn twice, as two repeated rows may.  ``mass``:
    the weights of rows ``idx`` (None: no weights)."""
    cnt = _copies(mass)
    chosen = [_draw(rng, idx.size, mass)]
    rows = space.rows.take(idx)
    dmin = space.distances(rows, rows.take(chosen), reduced=True)[:, 0]
    for _ in range(1, c):
        if cnt is not None:
            left = cnt - np.bincount(chosen, minlength=idx.size)
            w = np.where(left > 0, dmin * left, 0.0)
        else:
            w = dmin.copy() if mass is None else dmin * mass
            w[chosen] = 0.0
        tot = w.sum()
        if tot > 0 and np.isfinite(tot):
            nxt = int(min(np.searchsorted(np.cumsum(w), rng.random() * tot, side="right"),
                          idx.size - 1))
            while w[nxt] == 0.0:
                nxt -= 1
        elif cnt is not None:           # a copy not drawn yet, uniformly
            nxt = _draw(rng, idx.size, left.astype(np.float64))
        else:
            free = np.setdiff1d(np.arange(idx.size), chosen)
            nxt = int(free[rng.integers(free.size)])
        chosen.append(nxt)
        dmin = np.minimum(dmin, space.distances(rows, rows.take([nxt]), reduced=True)[:, 0])
    return np.array(chosen, dtype=np.intp)


def _init_class(space, idx, c, label, init, rng):
    """``c`` initial prototypes of one class from its training rows ``idx``."""
    center = _center(space, idx, label)
    if c == 1 and init in ("fcm", "kmeans"):
        return center
    if init == "random":
        return space.vectors(_rows_state(space, np.sort(_draw_rows(space, idx, c, rng)),
                                         label, center))
    if init == "kmedoids":
        return space.vectors(_rows_state(space, _kmedoids(space, idx, c, rng), label,
                                         center))
    seeds = idx[_seeds(space, idx, c, rng, None if space.mass is None else space.mass[idx])]
    st = space.vectors(_rows_state(space, seeds, label, center))
    rows = space.rows.take(idx)
    prev = None
    for _ in range(CLUSTER_ITER):
        D = space.distances(rows, space.encode(st), reduced=(init == "kmeans"))
        if init == "kmeans":
            lab = np.argmin(D, axis=1)
            if prev is not None and np.array_equal(lab, prev):
                break
            prev = lab
            ri, pi, w = idx, lab, space.ones[idx]
        else:
            U = _fcm_memberships(D)
            if prev is not None and np.abs(U - prev).max() < 1e-4:
                break
            prev = U
            ri = np.repeat(idx, c)
            pi = np.tile(np.arange(c), idx.size)
            w = (U * U).ravel() if space.mass is None else \
                (U * U * space.mass[idx][:, None]).ravel()
        space.update(st, ri, pi, w, None)
    return st


def _draw_rows(space, idx, c, rng):
    """``c`` of the rows ``idx`` at random, without replacement: of the rows themselves,
    of their copies (whole-number weights: a row may come twice, as two of its copies),
    or with probability proportional to the weight."""
    if space.mass is None:
        return rng.choice(idx, c, replace=False)
    mass = space.mass[idx]
    cnt = _copies(mass)
    if cnt is not None:
        t = rng.choice(int(cnt.sum()), c, replace=False)
        return idx[np.searchsorted(np.cumsum(cnt), t, side="right")]
    return rng.choice(idx, c, replace=False, p=mass / mass.sum())


def _fcm_memberships(D):
    """Fuzzy c-means memberships for fuzzifier 2 (Bezdek 1981):
    ``u_ij = (1/d_ij²) / Σ_k (1/d_ik²)``; a row at distance 0 from centres belongs to
    them equally."""
    zero = D == 0
    with np.errstate(divide="ignore"):
        inv = 1.0 / (D * D)
    U = np.where(zero.any(1, keepdims=True), zero.astype(np.float64), inv)
    U = np.where(np.isfinite(U), U, 0.0)
    tot = U.sum(1, keepdims=True)
    return np.where(tot > 0, U / np.where(tot > 0, tot, 1.0), 1.0 / D.shape[1])


def _kmedoids(space, idx, c, rng):
    """``c`` medoid rows of a class by the alternating algorithm (Park & Jun 2009) on a
    sample of at most ``KMEDOIDS_SAMPLE`` of its rows (CLARA, Kaufman & Rousseeuw 1990).
    With frequency weights each row counts with its weight in the medoids' costs
    ``Σ_i w_i d(i, medoid)``; the sample is of ``KMEDOIDS_SAMPLE`` copies for whole-number
    weights (``_copies``: a row sampled twice weighs 2, as two repeated rows would), else
    of rows drawn uniformly, which keep their weights."""
    mass = None if space.mass is None else space.mass[idx]
    cnt = _copies(mass)
    size = idx.size if cnt is None else int(cnt.sum())
    sub = idx
    if size > KMEDOIDS_SAMPLE and cnt is not None:
        t = np.sort(rng.choice(size, KMEDOIDS_SAMPLE, replace=False))
        pos, mult = np.unique(np.searchsorted(np.cumsum(cnt), t, side="right"),
                              return_counts=True)
        sub, mass = idx[pos], mult.astype(np.float64)
    elif size > KMEDOIDS_SAMPLE:
        sub = np.sort(rng.choice(idx, KMEDOIDS_SAMPLE, replace=False))
        mass = None if mass is None else space.mass[sub]
    rows = space.rows.take(sub)
    D = space.distances(rows, rows)
    med = _seeds(space, sub, c, rng, mass)
    for _ in range(CLUSTER_ITER):
        lab = np.argmin(D[:, med], axis=1)
        new = med.copy()
        for j in range(c):
            members = np.flatnonzero(lab == j)
            if members.size:
                Dm = D[np.ix_(members, members)]
                cost = Dm.sum(1) if mass is None else Dm @ mass[members]
                new[j] = members[np.argmin(cost)]
        if np.array_equal(np.sort(new), np.sort(med)):
            break
        med = new
    return sub[np.sort(med)]


def _column_decimals(cont, schema):
    """Per column of the schema, the decimals of its training values: the fewest (up to
    ``MAX_DECIMALS``) to which every observed value of a continuous column rounds to
    itself, None when there are more (or no value); None for a nominal column."""
    out = []
    ic = 0
    for kind in schema.kinds_:
        if kind != CONTINUOUS:
            out.append(None)
            continue
        v = cont[:, ic]
        ic += 1
        v = v[np.isfinite(v)]
        dec = None
        if v.size:
            tol = 1e-12 * np.maximum(1.0, np.abs(v))
            for d in range(MAX_DECIMALS + 1):
                if np.all(np.abs(np.round(v, d) - v) <= tol):
                    dec = d
                    break
        out.append(dec)
    return out


def _rounded(value, dec):
    """A continuous value rounded to ``dec`` decimals (an int for 0); as it is for None."""
    if value is None or dec is None or not np.isfinite(value):
        return value
    return int(round(value)) if dec == 0 else round(float(value), dec)


# -- the classifier -------------------------------------------------------------------
@dataclass
class PrototypeExplanation:
    """Why a row got its class: the prototype that wins it, and how their distance is made.

    ``print()`` shows the row's and the prototype's values side by side with each
    attribute's term, then the reduction to the distance (:class:`hdist.Explanation`).

    Attributes
    ----------
    prototype : int
        Position of the winning prototype in ``prototypes_`` (and ``rules_``).
    label : object
        Its class: the predicted class of the row.
    distance : float
        The distance from the row to the prototype.
    terms : hdist.Explanation
        The distance attribute by attribute (``x``: the row, ``y``: the prototype).

    See Also
    --------
    PrototypeClassifier.explain : returns it.

    Examples
    --------
    >>> import pandas as pd, hdist
    >>> X = pd.DataFrame({"age": [21, 25, 23, 61, 65, 70],
    ...                   "smoker": ["no", "no", "yes", "yes", "yes", "no"]})
    >>> y = ["low", "low", "low", "high", "high", "high"]
    >>> clf = hdist.PrototypeClassifier("heom", random_state=0).fit(X, y)
    >>> e = clf.explain(X.iloc[0])
    >>> e.prototype, str(e.label)
    (2, 'low')
    >>> print(e)  # doctest: +NORMALIZE_WHITESPACE
    prototype 2 (class low) wins the row at distance 0.0361824
    column  row  prototype  d_a        w_a  w_a*d_a^2
    age     21   22.7729    0.0361824  1    0.0013092
    smoker  no   no         0          1    0.0000000
    sum of the terms                        0.0013092
    distance = 0.0013092^(1/2) = 0.0361824
    """
    prototype: int
    label: object
    distance: float
    terms: object            # hdist.Explanation: columns, terms, reduced, distance

    def to_frame(self):
        """The terms as a DataFrame (:meth:`hdist.Explanation.to_frame`) whose value
        columns are named ``row`` and ``prototype``."""
        return self.terms.to_frame().rename(columns={"x": "row", "y": "prototype"})

    def __str__(self):
        head = "prototype %d (class %s) wins the row at distance %.6g" % (
            self.prototype, self.label, self.distance)
        return "\n".join([head] + self.terms._lines(("row", "prototype")))


class PrototypeClassifier(MixedTableTags, ClassifierMixin, BaseEstimator):
    """Nearest-prototype classifier ("prototype rules") over any hdist metric.

    Parameters
    ----------
    metric : str, (str, dict) or hdist.Metric, default="hvdm"
        A preset name, a preset with its parameters (``("gvdm", {"sigma": 0.2})``) or an
        :class:`hdist.Metric` (copied, never fitted in place; a fitted one is fitted again);
        fitted on the training rows.
    n_prototypes : int, default=1
        Prototypes per class to start with (all of them when ``constructive=False``).
    init : {"fcm", "kmeans", "kmedoids", "random"}, default="fcm"
        How each class's starting prototypes are chosen from its rows: fuzzy c-means
        (fuzzifier 2) or k-means in the metric's space (k-means++ seeds), k-medoids (data
        rows; a sample of 1000 rows of a larger class), or random rows.  A prototype added
        by the constructive algorithm is the centre of the largest of three k-means groups
        of the class's misclassified rows (k-medoids groups for "kmedoids", one of those
        rows at random for "random").
    optimizer : {"lvq1", "lvq21", None}, default="lvq1"
        Batch LVQ1: every epoch each training row pulls its nearest prototype towards it
        when their classes agree and pushes it away when not; LVQ2.1 updates the two
        nearest prototypes when exactly one of them has the row's class and the row lies
        in the window ``d1/d2 > (1 - window)/(1 + window)``.  ``None``: no optimization.
    constructive : bool, default=True
        Add one prototype at a time to the class with the lowest recall (training rows, or
        the validation rows) and keep it when the balanced accuracy improves; a class
        whose addition did not help is passed over until another addition succeeds.
    max_per_class : int, default=10
        Most prototypes a class may get.
    max_iter : int, default=10
        Constructive iterations (additions tried).
    validation_fraction : float in (0, 1) or None, default=None
        Part of the training rows (stratified) held out to judge the constructive
        additions; ``None`` judges them on the training rows.
    learning_rate : float, default=0.1
        The LVQ rate at the first epoch; it decreases linearly to 0 over ``n_epochs``.
    n_epochs : int, default=20
        LVQ epochs per optimization.
    window : float, default=0.3
        LVQ2.1's window width.
    min_support : float in [0, 1), default=0.01
        After the search, a prototype that wins (is the nearest prototype of) less than
        this share of the training rows (of their total ``sample_weight``) is dropped.
    min_accuracy : float in [0, 1], default=0.3
        A prototype whose share of won rows of its own class is below this is dropped.
        Pruning drops one prototype at a time -- the one that wins least (ties: the lower
        accuracy, then the later prototype) among those below a threshold -- and assigns
        the rows again, until none is below; a class's last prototype is never dropped.
        0 and 0 keep every prototype.  The defaults were measured by
        ``benchmarks/bench_prototypes.py --prune`` (README, "Prototype rules"): on seven
        data sets they keep the cross-validated balanced accuracy of no pruning (0.817
        against 0.818 on average) with 5.3 prototypes instead of 5.6; ``min_support``
        0.02 or ``min_accuracy`` 0.4 and above lost accuracy on Glass (six classes).
    random_state : None, int or numpy Generator
        Seeds of the initialization, the sample of k-medoids and the validation split.
    n_jobs : int, default=None
        Threads of the distance kernels; results do not depend on it.
    metric_params : dict, default=None
        Parameters for a metric given by name (merged over those of a given Metric).

    Attributes
    ----------
    prototypes_ : DataFrame (pandas input) or ndarray
        One row per prototype in original units and labels, ordered by class.
    prototype_labels_ : ndarray
        The class of each prototype.
    classes_ : ndarray
        Class labels in sorted order.
    n_prototypes_per_class_ : ndarray of int
        Prototypes of each class, in ``classes_`` order.
    history_ : list of float
        Balanced accuracy of the kept prototypes at the start and after each constructive
        iteration (never decreasing), before pruning.
    n_pruned_ : int
        Prototypes dropped by ``min_support`` and ``min_accuracy``.
    decimals_ : list
        Per column, the decimals of its training values (the fewest, up to 10, to which
        every value rounds to itself; None for a nominal column or more decimals):
        ``rules_`` and :meth:`rules_text` round the prototypes' continuous values to
        them.
    n_iter_ : int
        Constructive iterations run (at most ``max_iter``; fewer when every class is
        learned perfectly or no addition helps any class).
    rules_ : DataFrame (or structured array without pandas)
        The prototypes (continuous values rounded to ``decimals_``) with their class, the number of training rows each wins
        (``n_won``; their total ``sample_weight`` when fitted with weights) and the share
        of those of its class (``accuracy``, weighted likewise).
    metric_ : the fitted :class:`hdist.Metric`
    n_features_in_, feature_names_in_

    Notes
    -----
    ``predict_proba`` gives each class the inverse of the distance ``d_c`` from the row
    to the nearest prototype of that class, normalized:
    ``p_c = (1 / d_c) / Σ_k (1 / d_k)``; classes at distance 0 share the probability
    equally.  Its largest entry is the class :meth:`predict` returns.

    ``fit(X, y, sample_weight=w)`` takes frequency weights (docs/metrics.md, section 10):
    a row of weight ``m`` counts as ``m`` copies of itself in the metric's statistics, in
    every centre (fuzzy c-means: membership² × weight; k-means: weighted means; k-medoids:
    ``Σ w_i d(i, medoid)``), in the LVQ steps (``x_j += rate Σ_i s_i w_i (x_i - x_j) /
    Σ_i w_i``), in the nominal value choice (``Σ_i s_i w_i d_a(v, x_ia)^p``), in the
    weighted recalls of the balanced accuracy and in the size of the groups the
    constructive step chooses among.  Rows of weight 0 take no part in the search (they
    are neither fitted nor validated).  The steps that draw at random -- the k-means++
    seeds of "fcm", "kmeans" and "kmedoids" (the first in proportion to the weight, the
    next to weight × reduced distance), the rows of "random", the validation split --
    the k-medoids sample of a class above 1000 rows -- draw among the *copies* when every
    weight is a whole number (total at most 2^22): a row of weight 3 is three of the
    copies a seed, a random row, a sampled or a held-out row is drawn from, with the
    random numbers the repeated rows would use, so that for a fixed
    ``random_state`` integer weights give the prototypes of the rows repeated by their
    weights (up to the rounding of the weighted sums).  Other weights draw rows in
    proportion to their weight (``"random"``: without replacement), and the validation
    split holds out whole rows, as many as bring the held-out weight nearest to
    ``validation_fraction`` of the class's weight; the k-medoids sample is then drawn
    uniformly among the rows, which keep their weights.

    See Also
    --------
    hdist.KNeighborsClassifier : every training row votes.
    PrototypeClassifier.rules_text : the prototypes as if-then rules.
    hdist.plot.prototypes : the prototypes drawn over two attributes.

    Examples
    --------
    >>> import pandas as pd
    >>> import hdist
    >>> X = pd.DataFrame({"age": [25.0, 32.0, 47.0, 51.0, 62.0, 23.0],
    ...                   "job": ["clerk", "clerk", "manager", "manager", "retired", None]})
    >>> y = ["no", "no", "yes", "yes", "yes", "no"]
    >>> clf = hdist.PrototypeClassifier("hvdm", random_state=0).fit(X, y)
    >>> clf.predict(X).tolist()
    ['no', 'no', 'yes', 'yes', 'yes', 'no']
    >>> clf.prototype_labels_.tolist()
    ['no', 'yes']
    """

    def __init__(self, metric="hvdm", *, n_prototypes=1, init="fcm", optimizer="lvq1",
                 constructive=True, max_per_class=10, max_iter=10, validation_fraction=None,
                 learning_rate=0.1, n_epochs=20, window=0.3, min_support=MIN_SUPPORT,
                 min_accuracy=MIN_ACCURACY, random_state=None, n_jobs=None,
                 metric_params=None):
        self.metric = metric
        self.n_prototypes = n_prototypes
        self.init = init
        self.optimizer = optimizer
        self.constructive = constructive
        self.max_per_class = max_per_class
        self.max_iter = max_iter
        self.validation_fraction = validation_fraction
        self.learning_rate = learning_rate
        self.n_epochs = n_epochs
        self.window = window
        self.min_support = min_support
        self.min_accuracy = min_accuracy
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.metric_params = metric_params

    # -- validation ---------------------------------------------------------------------
    def _check_params(self):
        if self.init not in INITS:
            raise ValueError("init must be one of %s, got %r" % (INITS, self.init))
        if self.optimizer not in OPTIMIZERS:
            raise ValueError("optimizer must be one of %s, got %r"
                             % (OPTIMIZERS, self.optimizer))
        _check_int("n_prototypes", self.n_prototypes, 1)
        _check_int("max_per_class", self.max_per_class, 1)
        _check_int("max_iter", self.max_iter, 0)
        _check_int("n_epochs", self.n_epochs, 1)
        _check_float("learning_rate", self.learning_rate, 0.0, 1.0)
        _check_float("window", self.window, 0.0, 1.0, hi_open=True)
        _check_float("min_support", self.min_support, 0.0, 1.0, lo_open=False, hi_open=True)
        _check_float("min_accuracy", self.min_accuracy, 0.0, 1.0, lo_open=False)
        if self.validation_fraction is not None:
            _check_float("validation_fraction", self.validation_fraction, 0.0, 1.0,
                         hi_open=True)
        if not isinstance(self.constructive, (bool, np.bool_)):
            raise TypeError("constructive must be True or False, got %r"
                            % (self.constructive,))
        if self.constructive and self.n_prototypes > self.max_per_class:
            raise ValueError("n_prototypes = %d exceeds max_per_class = %d"
                             % (self.n_prototypes, self.max_per_class))

    def _resolve_metric(self):
        """The metric to fit, unfitted: ``metric`` with ``metric_params`` applied over a
        given Metric's parameters or a ``(name, params)`` pair's
        (:func:`~hdist._search.resolve.resolve_metric`); a fitted Metric is copied too
        and fitted again on the training rows."""
        m = self.metric
        if isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) and \
                isinstance(m[1], dict):
            params = self.metric_params
            if params is not None and not isinstance(params, dict):
                raise TypeError("metric_params must be a dict or None, got %r" % (params,))
            return resolve_metric(m[0], {**m[1], **(params or {})})
        if isinstance(m, tuple):
            raise TypeError("metric must be a preset name, a (name, params) pair or an "
                            "hdist.Metric, got %r" % (m,))
        return resolve_metric(m, self.metric_params, refit=True)

    def _validate_X(self, X, reset):
        if isinstance(X, np.ndarray) and X.dtype.kind == "c":
            raise ValueError("Complex data not supported: X has dtype %s" % X.dtype)
        if getattr(X, "ndim", 2) == 1:
            raise ValueError("Expected a 2-D table for X, got a 1-D array. Reshape your data "
                             "either using x.reshape(-1, 1) if it has a single feature or "
                             "x.reshape(1, -1) if it is a single row.")
        self._check_features(X, reset)
        if reset and getattr(self, "n_features_in_", None) == 0:
            raise ValueError("Found array with 0 feature(s) (shape=(%d, 0)) while a minimum "
                             "of 1 is required." % _num_samples(X))
        return X

    def _check_y(self, y, n):
        if y is None:
            raise ValueError("PrototypeClassifier requires y to be passed, but the target y "
                             "is None")
        unused = []
        cat = getattr(y, "cat", None)
        if cat is not None:
            present = set(y.dropna().unique())
            unused = [c for c in cat.categories if c not in present]
        y = column_or_1d(check_target(y), warn=True)
        check_label_types(y)
        if y.dtype == object:
            bad = np.flatnonzero(missing_mask(y)).tolist()
        else:
            bad = np.flatnonzero(~np.isfinite(y)).tolist() if y.dtype.kind == "f" else []
        if bad:
            raise ValueError("y has a missing or infinite label at row %d; every training "
                             "row needs a class" % bad[0])
        if len(y) == 0:
            raise ValueError("y is empty: 0 sample(s) to fit")
        check_classification_targets(y)
        if len(y) != n:
            raise ValueError("y has %d labels for %d rows of X" % (len(y), n))
        if unused:
            raise ValueError("y: class %r has no training rows (an empty category of a "
                             "categorical y); every class needs rows to get prototypes"
                             % (unused[0],))
        classes, codes = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError("y has only one class (%r); a classifier needs at least 2 "
                             "classes" % (classes[0],))
        return classes, codes.astype(np.int64).ravel()

    # -- fit ------------------------------------------------------------------------------
    def fit(self, X, y, sample_weight=None):
        """Fit the metric on ``(X, y)`` and find the prototypes.

        ``sample_weight`` ``[n]`` (finite, non-negative, not all zero): frequency weights;
        a row of weight ``m`` counts as ``m`` copies of itself in the metric's statistics,
        the initial centres, the LVQ updates, the nominal value choice, the balanced
        accuracy that judges constructive additions and ``rules_``; rows of weight 0 take
        no part in the search (see the class notes for the random draws)."""
        self._check_params()
        X = self._validate_X(X, reset=True)
        n = _num_samples(X)
        classes, codes = self._check_y(y, n)
        sw = check_sample_weight(sample_weight, n)
        C = classes.size
        pos = np.arange(n) if sw is None else np.flatnonzero(sw > 0)
        counts = np.bincount(codes[pos], minlength=C)
        if sw is not None and (counts == 0).any():
            raise ValueError("y: class %r has no row of positive sample_weight; every class "
                             "needs rows to get prototypes"
                             % (classes[np.flatnonzero(counts == 0)[0]],))
        if sw is not None and _copies(sw) is not None:
            # whole-number weights: a class has as many rows as copies to draw from
            counts = np.bincount(codes, weights=sw, minlength=C).astype(np.int64)
        if not self.constructive or self.n_prototypes > 1:
            small = np.flatnonzero(counts < self.n_prototypes)
            if small.size:
                raise ValueError("n_prototypes = %d exceeds the %d training row(s)%s of "
                                 "class %r" % (self.n_prototypes, counts[small[0]],
                                               "" if sw is None
                                               else " (counted by sample_weight)",
                                               classes[small[0]]))
        rng = _rng(self.random_state)
        metric = self._resolve_metric()
        metric.fit(X, codes, sample_weight=sw)
        cont, nom = metric.schema_.encode(X, what="X")
        rows = metric.train_
        threads = effective_n_jobs(self.n_jobs)
        fit_idx, fit_w = pos, (None if sw is None else sw[pos])
        val = None
        if self.validation_fraction is not None:
            fw, vw = np.zeros(n), np.zeros(n)
            fw[pos], vw[pos] = _split(codes[pos], self.validation_fraction, rng, classes,
                                      None if sw is None else sw[pos])
            fit_idx, val_idx = np.flatnonzero(fw > 0), np.flatnonzero(vw > 0)
            fit_w = None if sw is None else fw[fit_idx]
            val = (rows.take(val_idx), codes[val_idx], None if sw is None else vw[val_idx])
        space = _Space(metric, cont[fit_idx], nom[fit_idx], rows.take(fit_idx),
                       codes[fit_idx], threads, fit_w)
        st = self._search(space, val, C, rng)
        self.metric_ = metric
        self._fit_state = metric._fitted()
        self.classes_ = classes
        st, self.n_pruned_ = self._prune(st, rows.take(pos), codes[pos],
                                         None if sw is None else sw[pos], threads)
        self.decimals_ = _column_decimals(cont[pos], metric.schema_)
        self._store(st, space, X, rows, codes, sw)
        return self

    def _prune(self, st, rows, y, mass, threads):
        """Drop the prototypes that win too few training rows or classify them too
        badly, one at a time: while a prototype wins less than ``min_support`` of the
        training weight, or has an accuracy (the share of the rows it wins that are of
        its class) below ``min_accuracy``, and is not its class's last one, the one that
        wins the least (ties: the lower accuracy, then the later prototype) goes and
        the rows are assigned again.  Returns the prototypes kept and how many went."""
        total = float(rows.n if mass is None else mass.sum())
        cq = _ops.prepare(rows)
        dropped = 0
        while st.n > 1:
            proto = self.metric_.plan_.encode(st.cont, st.nom)
            _, ind = _ops.nearest(self.metric_, cq, proto, 1, threads=threads)
            won = ind[:, 0]
            n_won = np.bincount(won, weights=mass, minlength=st.n)
            right = (st.labels[won] == y).astype(np.float64)
            right = np.bincount(won, weights=right if mass is None else right * mass,
                                minlength=st.n)
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = np.where(n_won > 0, right / n_won, 0.0)
            last = np.bincount(st.labels, minlength=st.labels.max() + 1)[st.labels] == 1
            bad = ((n_won < self.min_support * total) | (acc < self.min_accuracy)) & ~last
            if not bad.any():
                break
            cand = np.flatnonzero(bad)
            j = cand[np.lexsort((-cand, acc[cand], n_won[cand]))[0]]
            st = st.take(np.delete(np.arange(st.n), j))
            dropped += 1
        return st, dropped

    def _score(self, space, st, val):
        """Balanced accuracy of prototypes ``st`` and the recall of each class (with
        frequency weights: weighted recalls, their mean over the classes present)."""
        rows, y, mass = (space.rows, space.y, space.mass) if val is None else val
        _, ind = space.nearest(rows, space.encode(st))
        pred = st.labels[ind[:, 0]]
        C = int(max(st.labels.max(), y.max())) + 1
        right = (pred == y).astype(float)
        hits = np.bincount(y, weights=right if mass is None else right * mass, minlength=C)
        size = np.bincount(y, weights=mass, minlength=C)
        with np.errstate(invalid="ignore", divide="ignore"):
            recall = hits / size
        score = balanced_accuracy(y, pred) if mass is None else \
            float(np.mean(recall[size > 0]))
        return score, recall, pred

    def _search(self, space, val, C, rng):
        y = space.y
        by_class = [np.flatnonzero(y == c) for c in range(C)]
        for c, idx in enumerate(by_class):
            if idx.size == 0:
                raise ValueError("y: class %r has no rows left for fitting after the "
                                 "validation split" % (self.classes_[c] if hasattr(
                                     self, "classes_") else c,))
        parts = [_init_class(space, idx, self.n_prototypes, c, self.init, rng)
                 for c, idx in enumerate(by_class)]
        st = parts[0]
        for p in parts[1:]:
            st = st.concat(p)
        st = space.finalize(self._optimize(space, st))
        score, recall, _ = self._score(space, st, val)
        history = [score]
        if self.constructive:
            passed = set()
            for _ in range(self.max_iter):
                per = np.bincount(st.labels, minlength=C)
                _, _, pred_fit = self._score(space, st, None)
                order = np.lexsort((np.arange(C), recall))
                cand = [c for c in order if per[c] < self.max_per_class and c not in passed
                        and (pred_fit[by_class[c]] != c).any()]
                if not cand:
                    break
                c = int(cand[0])
                wrong = by_class[c][pred_fit[by_class[c]] != c]
                new = self._new_prototype(space, wrong, c, rng)
                trial = st.copy().concat(space.finalize(new))
                trial = space.finalize(self._optimize(space, trial))
                t_score, t_recall, _ = self._score(space, trial, val)
                if t_score > score:
                    st, score, recall = trial, t_score, t_recall
                    passed.clear()
                else:
                    passed.add(c)
                history.append(score)
        self.history_ = history
        self.n_iter_ = len(history) - 1
        return st.sorted()

    def _new_prototype(self, space, idx, c, rng):
        """A prototype for class ``c`` from its misclassified rows ``idx``: the centre
        of the largest of ``NEW_GROUPS`` k-means groups among them (k-medoids for
        "kmedoids"; one of them at random for "random")."""
        if self.init == "random":
            center = _center(space, idx, c)
            pick = _draw(rng, idx.size, None if space.mass is None else space.mass[idx])
            return space.vectors(_rows_state(space, idx[[pick]], c, center))
        k = min(NEW_GROUPS, idx.size)
        st = _init_class(space, idx, k, c, "kmedoids" if self.init == "kmedoids"
                         else "kmeans", rng)
        if k == 1:
            return st
        _, ind = space.nearest(space.rows.take(idx), space.encode(st))
        sizes = np.bincount(ind[:, 0], minlength=k,
                            weights=None if space.mass is None else space.mass[idx])
        return st.take([int(np.argmax(sizes))])

    def _optimize(self, space, st):
        """Batch LVQ epochs with a linearly decreasing rate."""
        space.vectors(st)
        if self.optimizer is None:
            return st
        rows, y = space.rows, space.y
        for epoch in range(self.n_epochs):
            rate = self.learning_rate * (1.0 - epoch / self.n_epochs)
            proto = space.encode(st)
            if self.optimizer == "lvq1":
                _, ind = space.nearest(rows, proto)
                pi = ind[:, 0]
                ri = None
                w = np.where(st.labels[pi] == y, 1.0, -1.0)
                if space.mass is not None:
                    w *= space.mass
            else:
                if st.n < 2:
                    return st
                d, ind = space.nearest(rows, proto, 2)
                l1, l2 = st.labels[ind[:, 0]], st.labels[ind[:, 1]]
                s = (1.0 - self.window) / (1.0 + self.window)
                with np.errstate(invalid="ignore", divide="ignore"):
                    inside = (d[:, 0] / d[:, 1] > s) | (d[:, 1] == 0)
                ok = inside & (l1 != l2) & ((l1 == y) | (l2 == y))
                r = np.flatnonzero(ok)
                first_right = l1[r] == y[r]
                ri = np.concatenate([r, r])
                pi = np.concatenate([ind[r, 0], ind[r, 1]])
                w = np.concatenate([np.where(first_right, 1.0, -1.0),
                                    np.where(first_right, -1.0, 1.0)])
                if space.mass is not None:
                    w *= space.mass[ri]
            if w.size == 0:
                break
            space.update(st, ri, pi, w, rate)
        return st

    def _store(self, st, space, X, rows, codes, sw=None):
        """Fitted attributes from the final prototypes (``rules_`` counts rows with their
        frequency weights ``sw``)."""
        self._proto_cont, self._proto_nom = st.cont, st.nom
        self._proto_rows = self.metric_.plan_.encode(st.cont, st.nom)
        self._proto_codes = st.labels
        self.prototype_labels_ = self.classes_[st.labels]
        self.n_prototypes_per_class_ = np.bincount(st.labels, minlength=self.classes_.size)
        self._pandas_out = type(X).__module__.split(".")[0] == "pandas"
        self.prototypes_ = self._decode(st.cont, st.nom)
        _, ind = space.nearest(rows, self._proto_rows)
        won = ind[:, 0]
        P = st.n
        n_won = np.bincount(won, minlength=P, weights=sw)
        right = (st.labels[won] == codes).astype(float)
        right = np.bincount(won, weights=right if sw is None else right * sw, minlength=P)
        with np.errstate(invalid="ignore", divide="ignore"):
            acc = right / n_won
        self.rules_ = self._rules(n_won, acc)

    def _records(self, cont, nom):
        """Prototype values in original units and labels: an object array ``[P, m]``."""
        return self.metric_.schema_.decode(cont, nom)

    def _decode(self, cont, nom):
        out = self._records(cont, nom)
        schema = self.metric_.schema_
        if self._pandas_out:
            import pandas as pd
            df = pd.DataFrame(out, columns=list(schema.names_))
            for j, kind in enumerate(schema.kinds_):
                if kind == CONTINUOUS:
                    df[schema.names_[j]] = df[schema.names_[j]].astype(float)
            return df
        if all(k == CONTINUOUS for k in schema.kinds_):
            return out.astype(np.float64)
        return out

    def _rules(self, n_won, acc):
        schema = self.metric_.schema_
        names = [str(nm) for nm in schema.names_]
        recs = self._records(self._proto_cont, self._proto_nom)
        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - without pandas
            dt = [(nm, object) for nm in names] + [("class", object), ("n_won", n_won.dtype),
                                                   ("accuracy", np.float64)]
            out = np.empty(len(n_won), dtype=dt)
            for j, nm in enumerate(names):
                out[nm] = [_rounded(v, self._decimals()[j]) for v in recs[:, j]]
            out["class"] = self.prototype_labels_
            out["n_won"] = n_won
            out["accuracy"] = acc
            return out
        df = pd.DataFrame(recs, columns=names)
        for j, kind in enumerate(schema.kinds_):
            if kind == CONTINUOUS:
                col = df[names[j]].astype(float)
                dec = self._decimals()[j]
                df[names[j]] = col if dec is None else col.round(dec)
        df["class"] = self.prototype_labels_
        df["n_won"] = n_won
        df["accuracy"] = acc
        df.index.name = "prototype"
        return df

    def _decimals(self):
        """``decimals_``; no rounding for a classifier pickled before it existed."""
        return getattr(self, "decimals_", None) or [None] * len(self.metric_.schema_.names_)

    def rules_text(self):
        """The prototypes as if-then rules, grouped by class.

        Each rule reads "IF the row is nearest to this prototype THEN its class", with
        the prototype's values (continuous ones rounded to the training data's own
        decimals, ``decimals_``) and what it does on the training rows (``rules_``: the
        rows it wins and the share of them of its class).

        Returns
        -------
        str
            One block per class, one rule per prototype (numbered as in ``rules_``).

        Examples
        --------
        >>> import pandas as pd, hdist
        >>> X = pd.DataFrame({"age": [21, 25, 23, 61, 65, 70],
        ...                   "smoker": ["no", "no", "yes", "yes", "yes", "no"]})
        >>> y = ["low", "low", "low", "high", "high", "high"]
        >>> clf = hdist.PrototypeClassifier("heom", random_state=0).fit(X, y)
        >>> print(clf.rules_text())
        Prototype rules (metric heom): a row takes the class of its nearest prototype.
        <BLANKLINE>
        class high
          rule 0: IF the row is nearest to (age = 65, smoker = yes)
                  THEN class = high   [wins 2 training rows, 100.0 % of them of class high]
          rule 1: IF the row is nearest to (age = 70, smoker = no)
                  THEN class = high   [wins 1 training rows, 100.0 % of them of class high]
        <BLANKLINE>
        class low
          rule 2: IF the row is nearest to (age = 23, smoker = no)
                  THEN class = low   [wins 2 training rows, 100.0 % of them of class low]
          rule 3: IF the row is nearest to (age = 23, smoker = yes)
                  THEN class = low   [wins 1 training rows, 100.0 % of them of class low]
        """
        check_is_fitted(self, "prototypes_")
        rules = self.rules_
        names = [str(nm) for nm in self.metric_.schema_.names_]
        recs = self._records(self._proto_cont, self._proto_nom)
        lines = ["Prototype rules (metric %s): a row takes the class of its nearest "
                 "prototype." % self.metric_.name]
        n_won = np.asarray(rules["n_won"], dtype=np.float64)
        acc = np.asarray(rules["accuracy"], dtype=np.float64)
        for c in self.classes_:
            lines.append("")
            lines.append("class %s" % (c,))
            for j in np.flatnonzero(self.prototype_labels_ == c):
                cond = ", ".join("%s = %s" % (nm, "?" if v is None else
                                              _rounded(v, self._decimals()[a])
                                              if isinstance(v, float) else v)
                                 for a, (nm, v) in enumerate(zip(names, recs[j])))
                share = "-" if not np.isfinite(acc[j]) else "%.1f %%" % (100 * acc[j])
                lines.append("  rule %d: IF the row is nearest to (%s)" % (j, cond))
                lines.append("          THEN class = %s   [wins %g training rows, %s of "
                             "them of class %s]" % (c, n_won[j], share, c))
        return "\n".join(lines)

    # -- use ------------------------------------------------------------------------------
    def _query_rows(self, X):
        check_is_fitted(self, "prototypes_")
        self.metric_._check_same_fit(self._fit_state, "PrototypeClassifier")
        X = self._validate_X(X, reset=False)
        return self.metric_.encode(X, what="X")

    def _nearest(self, rows, k=1):
        """The k = 1 query of the kernels with the prototypes as reference rows."""
        return _ops.nearest(self.metric_, rows, self._proto_rows, k,
                            threads=effective_n_jobs(self.n_jobs))

    def predict(self, X):
        """The class of each row's nearest prototype (ties: the smaller prototype
        index, prototypes being ordered by class)."""
        rows = self._query_rows(X)
        _, ind = self._nearest(rows)
        return self.classes_[self._proto_codes[ind[:, 0]]]

    def class_distances(self, X):
        """``[n, n_classes]`` distances from each row to the nearest prototype of each
        class (columns in ``classes_`` order)."""
        rows = self._query_rows(X)
        D = _ops.distances(self.metric_, rows, self._proto_rows,
                           threads=effective_n_jobs(self.n_jobs))
        out = np.full((rows.n, self.classes_.size), np.inf)
        for c in range(self.classes_.size):
            cols = np.flatnonzero(self._proto_codes == c)
            out[:, c] = D[:, cols].min(axis=1)
        return out

    def predict_proba(self, X):
        """``p_c = (1 / d_c) / Σ_k (1 / d_k)`` with ``d_c`` the distance to the nearest
        prototype of class ``c``; classes at distance 0 share the probability equally."""
        return _inverse_distance_proba(self.class_distances(X))

    def score(self, X, y, sample_weight=None):
        """Balanced accuracy of ``predict(X)`` against ``y`` (the mean recall over the
        classes present in ``y``); with ``sample_weight``, scikit-learn's weighted
        ``balanced_accuracy_score``."""
        pred = self.predict(X)
        if sample_weight is not None:
            from sklearn.metrics import balanced_accuracy_score
            return float(balanced_accuracy_score(y, pred, sample_weight=sample_weight))
        return balanced_accuracy(column_or_1d(y), pred)

    def explain(self, x):
        """The prototype that wins row ``x`` and the per-attribute terms of their
        distance (:meth:`hdist.Metric.explain`)."""
        from .._search.explain import _one_row
        schema = self.metric_.schema_
        check_is_fitted(self, "prototypes_")
        self.metric_._check_same_fit(self._fit_state, "PrototypeClassifier")
        row = _one_row(x, schema)
        rows = self.metric_.encode(row, what="x")
        if rows.n != 1:
            raise ValueError("explain takes a single row; got %d rows" % rows.n)
        d, ind = self._nearest(rows)
        j = int(ind[0, 0])
        rec = self._records(self._proto_cont[[j]], self._proto_nom[[j]])[0]
        proto = dict(zip(schema.names_, rec)) if schema.by_name_ else list(rec)
        terms = self.metric_.explain(row, proto)
        return PrototypeExplanation(j, self.prototype_labels_[j], float(d[0, 0]), terms)


def _inverse_distance_proba(D):
    zero = D == 0
    with np.errstate(divide="ignore"):
        inv = 1.0 / D
    P = np.where(zero.any(1, keepdims=True), zero.astype(np.float64), inv)
    tot = P.sum(1, keepdims=True)
    return np.where(tot > 0, P / np.where(tot > 0, tot, 1.0), 1.0 / D.shape[1])


def _split(codes, fraction, rng, classes, mass=None):
    """Stratified split: ``fraction`` of each class (at least one row, never all) held out
    for validation, the first rows of a random permutation of the class.  With frequency
    weights ``mass`` the permutation is of the copies (whole-number weights, see
    ``_copies``: a row's copies may fall on both sides) or of the rows held out whole, as
    many as bring the held-out weight nearest to ``fraction`` of the class's weight (the
    fewer on a tie).  Returns each row's weight ``[n]`` in the fitting and in the
    validation part (0 / 1 without weights)."""
    n = codes.size
    fit_w, val_w = np.zeros(n), np.zeros(n)
    for c in range(classes.size):
        idx = np.flatnonzero(codes == c)
        m = np.ones(idx.size) if mass is None else mass[idx]
        cnt = np.ones(idx.size, dtype=np.int64) if mass is None else _copies(m)
        size = idx.size if cnt is None else int(cnt.sum())
        if size < 2:
            raise ValueError("validation_fraction: class %r has %d training row(s)%s; it "
                             "needs at least 2 to be split"
                             % (classes[c], size, "" if mass is None
                                else " (counted by sample_weight)"))
        if cnt is not None:
            k = min(size - 1, max(1, int(round(fraction * size))))
            perm = rng.permutation(np.repeat(idx, cnt))
            held = np.bincount(perm[:k], minlength=n)[idx].astype(np.float64)
        else:
            perm = rng.permutation(idx.size)
            cum = np.cumsum(m[perm])
            k = int(np.argmin(np.abs(np.r_[0.0, cum] - fraction * cum[-1])))
            k = min(size - 1, max(1, k))
            held = np.zeros(idx.size)
            held[perm[:k]] = m[perm[:k]]
        val_w[idx] = held
        fit_w[idx] = m - held
    return fit_w, val_w
