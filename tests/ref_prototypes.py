"""Plain references for the prototype classifier (hdist.prototypes), written from its
documented rules; the distances come from ``tests/reference.py`` (nothing here imports
hdist).

- nearest prototype: the smallest distance, ties to the smaller prototype index;
- one batch LVQ1 epoch at rate ``r``: each training row ``i`` (frequency weight ``w_i``,
  1 by default) is won by its nearest prototype ``j`` and weighs ``s_i = +w_i`` (same
  class) or ``-w_i``; a continuous value moves to ``x_j + r Σ s_i (x_i - x_j) / n_j`` over
  the rows with that value present (``n_j = Σ w_i`` over them), kept within the training
  range; a nominal value becomes the learned value ``v`` (in the given order) minimizing
  ``Σ s_i d_a(v, x_i)^2`` over the rows with that value present, unless no such row is of
  the prototype's class or the current value is as good.
"""
from __future__ import annotations

import math

from reference import CONTINUOUS, is_missing


def nearest(ref, rows, protos):
    """Index of the nearest prototype of each row (ties: the smaller index)."""
    out = []
    for x in rows:
        d = [ref.distance(x, p) for p in protos]
        best = min(range(len(protos)), key=lambda j: (d[j], j))
        out.append(best)
    return out


def lvq1_epoch(ref, kinds, rows, y, protos, labels, rate, values, w=None):
    """One batch LVQ1 epoch; ``values[a]`` lists the learned values of nominal ``a`` in
    the order ties are broken; ``w`` the rows' frequency weights (None: 1 each).  Returns
    new prototypes (lists)."""
    w = [1.0] * len(rows) if w is None else list(w)
    won = nearest(ref, rows, protos)
    new = [list(p) for p in protos]
    for j, p in enumerate(protos):
        cell = [i for i in range(len(rows)) if won[i] == j and w[i] > 0]
        for a, kind in enumerate(kinds):
            present = [i for i in cell if not is_missing(rows[i][a])]
            if not present:
                continue
            s = {i: (1.0 if y[i] == labels[j] else -1.0) * w[i] for i in present}
            if kind == CONTINUOUS:
                step = sum(s[i] * (rows[i][a] - p[a]) for i in present) / \
                    sum(w[i] for i in present)
                v = p[a] + rate * step
                new[j][a] = min(max(v, ref.lo[a]), ref.hi[a])
            else:
                if not any(s[i] > 0 for i in present):
                    continue

                def cost(v):
                    return sum(s[i] * ref.component(a, v, rows[i][a]) ** 2 for i in present)
                costs = [cost(v) for v in values[a]]
                best = min(costs)
                if p[a] in values[a] and math.isclose(cost(p[a]), best, rel_tol=1e-12,
                                                      abs_tol=1e-12):
                    continue
                new[j][a] = values[a][costs.index(best)]
    return new
