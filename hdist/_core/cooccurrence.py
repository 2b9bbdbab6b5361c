"""Co-occurrence value tables for nominal attributes: HDS and ADD (docs/metrics.md, section 4; no class needed).

A nominal value is described by how the *other* attributes are distributed over the
training rows that hold it.  For attribute ``a``, value ``v`` and another attribute
``j != a``, ``Q_{a,v}^j`` is the distribution of ``j`` over the rows where ``a = v``
(continuous ``j`` is binned first: equal frequency, ``n_bins`` bins).  Two values are as
far apart as these distributions:

- ``hds`` (Zhao, Liu & Wang 2016, eq. 4 and Algorithm 1):
  ``S_H(v, w) = Σ_{j≠a} H(Q_v^j, Q_w^j)`` with the Hellinger distance
  ``H(P, Q) = sqrt(½ Σ_λ (√P(λ) − √Q(λ))²)``;
- ``add`` (Ahmad & Dey 2007, the "ADD" of Zhao, Liu & Wang's experiments):
  ``Σ_{j≠a} ½ Σ_λ |Q_v^j(λ) − Q_w^j(λ)|`` (total variation distance).

Conventions (docs/metrics.md, section 4): missing values of a co-attribute are left out of its distribution;
a term whose distribution is empty for ``v`` or ``w`` is 1; ``T[v, v] = 0``; with
``average=True`` (the default) the sum is divided by ``m − 1`` so that ``0 ≤ T ≤ 1``.
With the "symbol" missing policy the missing symbol of ``a`` is one more value whose
distributions come from the rows where ``a`` is missing (co-attributes still leave their
own missing values out).  An unseen value has empty distributions, so it is at ``m − 1``
(1 after averaging) from every learned value; two *different* unseen values are at the
same distance (``T[V, V]``), and equal unseen values are at 0 like any equal pair.

The metric ``smd`` (simple matching distance, Huang 1998; Zhao, Liu & Wang's baseline) is the
overlap of nominal attributes, registered here as a nominal-only preset with ``p = 1``.

Binning: continuous co-attributes go through :class:`hdist.discretize.EqualFrequency`
(cuts at the ``k / n_bins`` quantiles of the training values, numpy's linear
interpolation, repeated cuts merged, bins ``[c_{k-1}, c_k)`` with open ends), so a column
with many ties gets fewer bins.

References
----------
- L. Zhao, J. Liu, X. Wang, "Hellinger Distance Based Similarity Analysis for Categorical
  Variables in Mixture Dataset", Computer Science 43(6) (2016) 280-282.
- A. Ahmad, L. Dey, "A k-mean clustering algorithm for mixed numeric and categorical
  data", Data & Knowledge Engineering 63(2) (2007) 503-527.
- Z. Huang, "Extensions to the k-Means Algorithm for Clustering Large Data Sets with
  Categorical Values", Data Mining and Knowledge Discovery 2 (1998) 283-304.
"""
from __future__ import annotations

import numbers
import threading

import numpy as np

from .plan import TableComponent
from .schema import CONTINUOUS
from .discretize import MAX_BINS, EqualFrequency

#: largest number of doubles in one block of pairwise differences (``rows x V x L``)
BLOCK_BUDGET = 1 << 20

def check_params(average, n_bins):
    """Validate the co-occurrence parameters; returns ``(average, n_bins)``."""
    if not isinstance(average, (bool, np.bool_)):
        raise TypeError("average must be True or False, got %r" % (average,))
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, numbers.Integral):
        raise TypeError("n_bins must be an int, got %r" % (n_bins,))
    if n_bins < 2:
        raise ValueError("n_bins must be >= 2, got %d" % n_bins)
    if n_bins > MAX_BINS:
        raise ValueError("n_bins must be <= %d, got %d" % (MAX_BINS, n_bins))
    return bool(average), int(n_bins)


def _check_metric(metric):
    check_params(metric._param("average"), metric._param("n_bins"))


#: nominal kind of hdist._core.presets.TABLE -> parameter check
CHECKS = {"hds": _check_metric, "add": _check_metric}


#: the binned continuous block of the fit in progress (per thread): Metric.fit asks for
#: one table per nominal column, all from the same ``cont`` array
_BINNED = threading.local()


def binned_continuous(cont, n_bins, w=None):
    """``(codes, n_levels)`` of every continuous column, binned by
    :class:`hdist.discretize.EqualFrequency` (on the weighted quantiles with row weights
    ``w``); computed once per ``cont`` array."""
    hit = getattr(_BINNED, "entry", None)
    if hit is not None and hit[0] is cont and hit[1] == n_bins and hit[3] is w:
        return hit[2]
    out = []
    for c in range(cont.shape[1]):
        if np.isnan(cont[:, c]).all():     # no observed value: every row missing, no level
            out.append((np.full(cont.shape[0], -1, dtype=np.int64), 0))
            continue
        disc = EqualFrequency(n_bins).fit(cont[:, c], sample_weight=w)
        out.append((disc.codes(cont[:, c]), disc.n_bins_))
    _BINNED.entry = (cont, n_bins, out, w)
    return out


def coattributes(schema, cont, nom, n_bins, skip=None, w=None):
    """Every column but ``skip`` as ``(codes, n_levels)`` (``-1`` = missing), in schema
    order; continuous columns binned by :func:`binned_continuous` (row weights ``w``)."""
    out = []
    binned = binned_continuous(cont, n_bins, w)
    ic = inom = 0
    for k, kind in enumerate(schema.kinds_):
        if kind == CONTINUOUS:
            ic += 1
            if k == skip:
                continue
            out.append(binned[ic - 1])
        else:
            col = nom[:, inom]
            inom += 1
            if k == skip:
                continue
            out.append((col, len(schema.categories_[k])))
    return out


def _pair_terms(F, kind):
    """``[V, V]`` term of one co-attribute from rows ``F`` (``√Q`` for hds, ``Q`` for add),
    computed in row blocks of at most :data:`BLOCK_BUDGET` doubles."""
    V, L = F.shape
    out = np.empty((V, V))
    step = max(1, BLOCK_BUDGET // max(1, V * L))
    for r0 in range(0, V, step):
        r1 = min(V, r0 + step)
        diff = F[r0:r1, None, :] - F[None, :, :]
        if kind == "hds":
            out[r0:r1] = np.sqrt(0.5 * np.einsum("vwl,vwl->vw", diff, diff))
        else:
            out[r0:r1] = 0.5 * np.abs(diff).sum(axis=2)
    return out


def cooccurrence_table(codes, V, coattrs, kind, average, w=None):
    """The ``(V + 1) x (V + 1)`` table of ``hds`` or ``add`` for one nominal attribute.

    Parameters
    ----------
    codes : int array [n]
        Codes of the attribute (``0 .. V-1``; ``-1`` missing, left out).
    V : int
        Number of learned values (the "symbol" value included).
    coattrs : list of (codes, n_levels)
        The other attributes (``-1`` = missing, left out of the distributions).
    kind : {"hds", "add"}
    average : bool
        Divide by the number of co-attributes.
    w : float array [n], optional
        Row weights: the distributions ``Q`` count a row of weight ``m`` as ``m`` rows.

    Row and column ``V`` stand for unseen values: every term 1.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n_co = len(coattrs)
    T = np.zeros((V + 1, V + 1))
    has_a = codes >= 0
    for cj, L in coattrs:
        ok = has_a & (cj >= 0)
        N = np.bincount(codes[ok] * L + cj[ok], weights=None if w is None else w[ok],
                        minlength=V * L).reshape(V, L)
        N = N.astype(np.float64)
        tot = N.sum(axis=1)
        empty = tot == 0
        Q = N / np.where(empty, 1.0, tot)[:, None]
        term = _pair_terms(np.sqrt(Q) if kind == "hds" else Q, kind)
        term[empty, :] = 1.0
        term[:, empty] = 1.0
        T[:V, :V] += term
    T[V, :] = n_co
    T[:, V] = n_co
    if average:
        T /= n_co
    np.fill_diagonal(T[:V, :V], 0.0)
    return T


def _factory(kind):
    def factory(metric, j, name, codes, V, policy, nom, schema, cont, sample_weight=None):
        """The value-table component of nominal column ``j`` and its learned table
        (:meth:`hdist.Metric.fit` keeps it as ``value_tables_[name]``)."""
        average, n_bins = check_params(metric._param("average"), metric._param("n_bins"))
        if schema.n_features_in_ < 2:
            raise ValueError("metric %r describes a value of column %r by the other "
                             "columns, but X has no other column" % (metric.name, name))
        coattrs = coattributes(schema, cont, nom, n_bins, skip=j, w=sample_weight)
        if j == max(k for k, kd in enumerate(schema.kinds_) if kd != CONTINUOUS):
            _BINNED.entry = None    # the last nominal column of this fit
        T = cooccurrence_table(codes, V, coattrs, kind, average, sample_weight)
        return TableComponent(j, T, policy, V), T
    factory.__name__ = "%s_component" % kind
    return factory


#: nominal kind of hdist._core.presets.TABLE -> component factory
FACTORIES = {"hds": _factory("hds"), "add": _factory("add")}
