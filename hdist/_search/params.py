"""The checks of a :class:`~hdist.Metric`'s parameter values that need no data: the
exponent ``p``, the missing-value policies, and the preset's own parameters
(docs/metrics.md, section 7).  :meth:`hdist.Metric.check_params` runs them; ``fit`` runs
them first, so a bad value is refused even when no column would use it."""
from __future__ import annotations

from .._core import statistics as est
from .._core.plan import IGNORE, MAX, ONE, SYMBOL
from .checks import check_number

#: the missing-value policies (docs/metrics.md, section 6)
POLICIES = (ONE, MAX, IGNORE, SYMBOL)

def is_mi(weights):
    """True when ``weights`` asks for mutual-information weights (may be an array)."""
    return isinstance(weights, str) and weights == "mi"


def missing_policies(metric):
    """The policies ``(continuous, nominal)`` of ``metric``'s ``missing`` parameter (a
    policy name for both kinds, or a dict kind -> policy, "one" for a kind it leaves
    out), refused with an error naming ``missing``."""
    miss = metric._param("missing")
    if isinstance(miss, str):
        pc = pn = miss
    elif isinstance(miss, dict):
        bad = set(miss) - {"continuous", "nominal"}
        if bad:
            raise ValueError("missing: keys must be 'continuous' and/or 'nominal', got %r"
                             % sorted(bad))
        pc = miss.get("continuous", ONE)
        pn = miss.get("nominal", ONE)
    else:
        raise TypeError("missing must be a policy name or a dict, got %r" % (miss,))
    for v in (pc, pn):
        if v not in POLICIES:
            raise ValueError("missing policy must be one of %s, got %r" % (POLICIES, v))
    return pc, pn


def exponent(metric):
    """``metric``'s Minkowski exponent ``p`` as a float (> 0, +inf allowed; below 1 for
    the ``fractional`` preset), refused with an error naming ``p``."""
    p = check_number("p", metric._param("p"), lo=0.0, allow_inf=True)
    if metric.name == "fractional" and not p < 1.0:
        raise ValueError("fractional metric needs 0 < p < 1, got %r" % p)
    return p


def check_params(metric, check=None):
    """Every check of ``metric``'s parameter values that needs no data, in the order
    :meth:`hdist.Metric.check_params` documents (``check``: the preset's own check of its
    parameters, ``callable(metric)``, or None); returns ``(p, continuous policy, nominal
    policy, aggregate, normalization, trim)``."""
    info = metric.info
    param = metric._param
    p = exponent(metric)
    pol_c, pol_n = missing_policies(metric)
    agg = param("aggregate")
    if agg not in ("sum", "mean"):
        raise ValueError("aggregate must be 'sum' or 'mean', got %r" % (agg,))
    if metric.params.get("unseen", "zero") not in ("zero", "prior"):
        raise ValueError("unseen must be 'zero' or 'prior', got %r" % metric.params["unseen"])
    norm = param("normalization")
    if "normalization" in info.params and norm not in est.NORMALIZATIONS:
        raise ValueError("normalization must be one of %s, got %r"
                         % (est.NORMALIZATIONS, norm))
    trim = param("trim")
    if "trim" in info.params:
        trim = check_number("trim", trim, lo=0.0, lo_open=False)
        if not trim < 0.5:
            raise ValueError("trim must be in [0, 0.5), got %r" % trim)
    if "vdm" in info.params and param("vdm") not in est.VDM_NORMS:
        raise ValueError("vdm must be one of %s, got %r" % (est.VDM_NORMS, param("vdm")))

    if check is not None:
        try:
            check(metric)
        except (TypeError, ValueError) as exc:
            raise type(exc)("metric %r: %s" % (metric.name, exc)) from None
    na = param("na_values")
    if na is not None and (isinstance(na, str) or not all(isinstance(v, str) for v in na)):
        raise TypeError("na_values must be None or a list of strings (the text read as "
                        "missing), got %r" % (na,))
    w = param("weights")
    if isinstance(w, str) and w != "mi":
        raise ValueError("weights must be None, 'mi', an array or a dict, got %r" % w)
    return p, pol_c, pol_n, agg, norm, trim
