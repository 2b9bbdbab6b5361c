"""Where the triangle inequality holds, which the ball tree prunes with
(docs/metrics.md, section 8): :func:`ball_tree_refusal` says why a ball tree over some
rows would not be exact for a Plan, and :func:`two_sided_rows` which query rows may
serve as the middle point of a triangle."""
from __future__ import annotations

import numpy as np

from .._core.plan import IGNORE


def _table_is_metric(T, tol=1e-9):
    """True when a value table (with its unseen row) satisfies the triangle inequality,
    unseen values counted as distinct points at ``T[V, V]`` from each other."""
    T = np.asarray(T, dtype=np.float64)
    V = T.shape[0] - 1
    M = np.empty((V + 2, V + 2))
    M[:V + 1, :V + 1] = T
    M[V + 1, :V + 1] = T[V]
    M[:V + 1, V + 1] = T[:, V]
    M[V + 1, V + 1] = 0.0
    M[V, V + 1] = M[V + 1, V] = T[V, V]
    np.fill_diagonal(M, 0.0)
    if (M < 0).any() or not np.allclose(M, M.T, rtol=tol, atol=tol):
        return False
    scale = max(1.0, float(M.max()))
    for u in range(M.shape[0]):
        # d(u, w) <= d(u, v) + d(v, w) for all v, w
        via = (M[u][:, None] + M).min(axis=0)
        if (M[u] > via + tol * scale).any():
            return False
    return True


#: tables larger than this are trusted to be metrics (VDM, Hellinger and total-variation
#: tables are by construction) instead of being checked in O(V^3)
TABLE_CHECK_MAX = 256


def _embed_bound(comp):
    """An upper bound of an embedded attribute's component distance, or None."""
    bound = getattr(comp, "max_distance", None)
    if bound is not None:
        return float(bound)
    enc = comp.encode
    P = getattr(enc, "P", None)
    if comp.nominal and isinstance(P, np.ndarray):
        # rows of (scaled) class probabilities: d(v, w) <= |P_v| + |P_w|
        norms = np.abs(P).sum(axis=1) if comp.q == 1 else np.sqrt((P * P).sum(axis=1))
        return 2.0 * float(norms.max()) if norms.size else 0.0
    bound = getattr(enc, "distance_bound", None)   # class-posterior estimators
    if bound is not None:
        b = bound(comp.q)
        return None if b is None else float(b)
    return None


def _missing_columns(plan, rows):
    """Which block positions have a missing value, per row: (c, o, t, e) boolean
    arrays of shape [n, m_block]."""
    c = np.isnan(rows.c)
    o = rows.o < 0
    t = rows.t < 0
    e = np.isnan(rows.e[:, plan.e_off[:-1]]) if plan.me else np.zeros((rows.n, 0), bool)
    return c, o, t, e


def _unsafe_when_missing(plan):
    """Attributes whose component distance may exceed 2, with a reason each: a missing
    value there (worth 1 to any other row) can break the triangle inequality when that
    row is the middle point.  Returns (c, o, t, e) lists of reasons (None = safe)."""
    c = [None if plan.c_max[k] else
         "|x - y| / δ can exceed 2 (use missing='max', or kd_tree)"
         for k in range(plan.mc)]
    o = [None] * plan.mo
    t = []
    for a in plan.t_attr:
        top = float(np.max(plan.components[a].table))
        t.append(None if top <= 2.0 else "its value distances reach %.4g > 2" % top)
    e = []
    for a in plan.e_attr:
        b = _embed_bound(plan.components[a])
        e.append(None if b is not None and b <= 2.0
                 else "its component distance is not bounded by 2")
    return c, o, t, e


def ball_tree_refusal(plan, rows, names=None):
    """Why a ball tree over ``rows`` would not be exact for ``plan``, or None.

    The ball tree prunes with the triangle inequality, which holds when
    ``p >= 1``, no attribute uses the "ignore" policy (its rescaling is not a metric),
    every value table is a metric, and, for attributes with a missing value in the
    indexed rows, the component distance never exceeds 2 (a missing middle point
    contributes 1 + 1 under "one"; Weka's "max" policy is a metric for continuous
    attributes)."""
    def name(a):
        return repr(names[a]) if names is not None else "#%d" % a

    if plan.p < 1.0:
        return ("p = %g < 1: the Minkowski aggregate is not a metric, so the triangle "
                "inequality the ball tree prunes with does not hold" % plan.p)
    if plan.has_ignore:
        a = next(a for a, c in enumerate(plan.components) if c.policy == IGNORE)
        return ("the 'ignore' missing policy (attribute %s) rescales by the known weight, "
                "which breaks the triangle inequality the ball tree prunes with" % name(a))
    for a in plan.t_attr:
        T = plan.components[a].table
        if T.shape[0] - 1 <= TABLE_CHECK_MAX and not _table_is_metric(T):
            return ("the value table of attribute %s does not satisfy the triangle "
                    "inequality" % name(a))
    missing = _missing_columns(plan, rows)
    blocks = (plan.c_attr, plan.o_attr, plan.t_attr, plan.e_attr)
    for attrs, miss, why in zip(blocks, missing, _unsafe_when_missing(plan)):
        for k, a in enumerate(attrs):
            if why[k] is not None and miss[:, k].any():
                return ("attribute %s has missing values in the indexed rows and %s, so a "
                        "missing row breaks the triangle inequality" % (name(a), why[k]))
    return None


def two_sided_rows(plan, rows):
    """uint8 per query row: 1 when the row may serve as the middle point of a triangle
    (no missing value where a component can exceed 2), which the ball tree's per-row
    bound |d(q, pivot) - d(x, pivot)| needs; 0 limits that query to one side."""
    ok = np.ones(rows.n, dtype=bool)
    for miss, why in zip(_missing_columns(plan, rows), _unsafe_when_missing(plan)):
        bad = np.array([w is not None for w in why], dtype=bool)
        if bad.any():
            ok &= ~miss[:, bad].any(axis=1)
    return ok.astype(np.uint8)
