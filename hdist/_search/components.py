"""The per-attribute components a :meth:`hdist.Metric.fit` learns (Wilson & Martinez
1997, eq. 1: one term ``d_a`` per attribute, docs/metrics.md sections 3-5) and the
attribute weights ``w_a`` (section 2).  Each function records what it learned on the
metric's public attributes (``delta_``, ``vdm_probabilities_``, ``value_tables_``,
``estimators_``, ``mutual_information_``) as ``fit`` documents them.  The kinds beyond
"diff", "overlap" and "vdm" come from the factories the Metric passes (its tables of the
presets' implementations)."""
from __future__ import annotations

import math

import numpy as np

from .._core import statistics as est
from .._core.plan import (DiffComponent, EmbedComponent, OverlapComponent, TableComponent,
                          MAX, ONE, SYMBOL)
from .._core.schema import CONTINUOUS, column_weights
from .checks import _check_weights

def continuous_component(metric, factories, j, name, x, policy, norm, trim, y, C, sw=None):
    """The component of continuous column ``j`` (``name``, training values ``x`` with NaN
    for missing ones) under ``metric``'s continuous kind: the normalized difference
    (``δ`` recorded in ``metric.delta_``) or the kind's factory of ``factories`` (kind ->
    ``(factory, needs labels)``; its fitted estimator recorded in
    ``metric.estimators_``)."""
    kind = metric.info.continuous
    if kind is None:
        raise ValueError("metric %r compares nominal attributes only, but column %r is "
                         "continuous; declare it nominal (nominal=[...]) or use hvdm"
                         % (metric.name, name))
    if policy == SYMBOL:
        policy = ONE
    present = x[~np.isnan(x)]
    if present.size == 0:
        # no observed training value (allowed under "one" / "ignore"): every training
        # row is missing there, and observed query values compare as equal (no spread)
        if kind == "diff":
            metric.delta_[name] = math.inf
        return DiffComponent(j, math.inf, 0.0, 0.0, policy)
    lo, hi = float(present.min()), float(present.max())
    if kind == "diff":
        delta = est.normalization_delta(x, norm, trim, sw)
        if hi == lo and norm != "none":
            # a column constant in training has no spread to normalize by: observed
            # values compare as equal (Weka's normalization maps them all to 0), so
            # range-normalized metrics stay within their bounds (Gower's in [0, 1]);
            # a missing value still counts 1 ("max" has no largest difference here)
            delta = math.inf
            if policy == MAX:
                policy = ONE
        metric.delta_[name] = delta
        return DiffComponent(j, delta, lo, hi, policy)
    factory = factories[kind][0]
    comp, estimator = factory(metric, j, name, x, policy, y, C, sample_weight=sw)
    metric.__dict__.setdefault("estimators_", {})[name] = estimator
    return comp


def nominal_component(metric, factories, j, name, codes, V, policy, y, C, nom, schema,
                      cont=None, sw=None):
    """The component of nominal column ``j`` (``name``, training ``codes``, ``V`` values
    with the missing symbol's) under ``metric``'s nominal kind: overlap, VDM (class
    probabilities in ``metric.vdm_probabilities_``, value distances in
    ``metric.value_tables_`` where the table fits) or the kind's factory of
    ``factories`` (kind -> factory)."""
    kind = metric.info.nominal
    sym_codes = np.where(codes < 0, V - 1, codes) if policy == SYMBOL else codes
    if kind == "overlap":
        return OverlapComponent(j, V, policy)
    if kind == "vdm":
        unseen = metric._param("unseen")
        P = est.class_probabilities(sym_codes, y, V, C, empty=unseen, w=sw)
        metric.vdm_probabilities_[name] = P
        q, f = est.vdm_scale(metric._param("vdm"), C)
        if (V + 1) ** 2 <= est.TABLE_BUDGET:
            T = est.vdm_table(P, metric._param("vdm"))
            metric.value_tables_[name] = T
            return TableComponent(j, T, policy, V, embedding=P * f if q == 2 else None)
        comp = EmbedComponent(j, C, q, est.ProbabilityRows(P, f), policy, nominal=True)
        comp.n_values = V   # learned values (symbol included), as tables have
        return comp
    factory = factories[kind]
    comp, metric.value_tables_[name] = factory(metric, j, name, sym_codes, V, policy, nom,
                                               schema, cont, sample_weight=sw)
    return comp


def fit_components(metric, factories, schema, cont, nom, pol_c, pol_n, norm, trim, y, C,
                   sw=None, step=None):
    """The components of every column of ``schema`` (training values ``cont`` / ``nom``),
    in column order, with each column's position among the continuous and the nominal
    ones (-1 for the other kind): ``(components, cont_pos, nom_pos)``.  ``factories``:
    the continuous and the nominal kinds' tables (:func:`continuous_component`,
    :func:`nominal_component`); ``step(j)``, when given, after column ``j - 1`` of all
    but the last."""
    components, cont_pos, nom_pos = [], [], []
    ic = inom = 0
    m_attr = len(schema.names_)
    for j, (name, kind) in enumerate(zip(schema.names_, schema.kinds_)):
        if kind == CONTINUOUS:
            cont_pos.append(ic)
            nom_pos.append(-1)
            x = cont[:, ic]
            ic += 1
            components.append(continuous_component(
                metric, factories[0], j, name, x, pol_c, norm, trim, y, C,
                column_weights(sw, j)))
        else:
            cont_pos.append(-1)
            nom_pos.append(inom)
            codes = nom[:, inom]
            inom += 1
            V = len(schema.categories_[j]) + (1 if pol_n == SYMBOL else 0)
            components.append(nominal_component(
                metric, factories[1], j, name, codes, V, pol_n, y, C, nom, schema, cont,
                column_weights(sw, j)))
        if step is not None and j + 1 < m_attr:
            step(j + 1)
    return components, cont_pos, nom_pos


def attribute_weights(metric, schema, cont, nom, y, C, sw=None):
    """The weights ``w_a`` of ``metric``'s ``weights`` parameter for the fitted columns:
    ones, mutual information with the class (recorded in
    ``metric.mutual_information_``), or the given ones checked against the columns."""
    m = schema.n_features_in_
    w = metric._param("weights")
    if w is None:
        return np.ones(m)
    if isinstance(w, str):
        if w == "mi":
            from .._core.information import mi_weights
            w, metric.mutual_information_ = mi_weights(metric, schema, cont, nom, y, C, sw)
            return w
        raise ValueError("weights must be None, 'mi', an array or a dict, got %r" % w)
    return _check_weights(w, schema.names_)


def value_table(comp, V):
    """The unweighted distances ``d_a(v, w)`` ``[V, V]`` between the first ``V`` values of
    a fitted nominal component (:meth:`hdist.Metric.value_distances`): its value table,
    the overlap's 0/1, or the distances between the values' embedded vectors."""
    if isinstance(comp, TableComponent):
        return np.array(comp.table[:V, :V], dtype=np.float64)
    if isinstance(comp, OverlapComponent):
        return 1.0 - np.eye(V)
    E = comp.encode(np.arange(V))
    diff = E[:, None, :] - E[None, :, :]
    return np.abs(diff).sum(-1) if comp.q == 1 else np.sqrt((diff * diff).sum(-1))
