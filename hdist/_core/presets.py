"""The table of metric presets: every name, how it compares each kind of attribute, which
parameters it accepts and its effective defaults, in one place (docs/metrics.md, section 7).

:class:`hdist.Metric` reads this table; the implementations of the kinds named here live
in :mod:`hdist._core.plan` and :mod:`hdist._core.statistics` (``"diff"``, ``"overlap"``, ``"vdm"``),
:mod:`hdist._core.posteriors` (the class-posterior kinds ``"dvdm"`` ... ``"pvdm"``) and
:mod:`hdist._core.cooccurrence` (``"hds"``, ``"add"``).  This module imports nothing of hdist.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class MetricInfo:
    """One preset: how each kind is compared, defaults, accepted parameters.

    Attributes
    ----------
    name : str
        The preset's name.
    continuous : str or None
        How continuous attributes are compared: ``"diff"`` (normalized differences), a
        class-posterior estimator's name, or None (refused).
    nominal : str
        How nominal attributes are compared: ``"overlap"``, ``"vdm"``, ``"hds"``,
        ``"add"``.
    defaults : dict
        The parameters' defaults.
    params : frozenset
        The parameters the preset accepts.
    needs_y : bool
        Whether ``fit`` needs class labels.
    doc : str
        One line on the preset.
    aliases : tuple
        Other names of the preset.

    See Also
    --------
    hdist.METRICS : ``{name: MetricInfo}`` of every preset.

    Examples
    --------
    >>> import hdist
    >>> info = hdist.METRICS["hvdm"]
    >>> info.continuous, info.nominal, info.needs_y
    ('diff', 'vdm', True)
    """
    name: str
    continuous: str | None          # "diff", a posterior estimator name, or None (refused)
    nominal: str                    # "overlap", "vdm", "hds", "add"
    defaults: dict
    params: frozenset
    needs_y: bool
    doc: str
    aliases: tuple = field(default_factory=tuple)


#: parameters every preset accepts, with their defaults (a row below may change a default)
COMMON = {"nominal": None, "continuous": None, "na_values": None, "weights": None,
          "missing": "one", "aggregate": "sum", "mi_discretizer": None}

#: the parameters of range-style normalization of continuous differences
_DIFF = {"normalization": "range", "trim": 0.05}
#: the parameters of VDM on nominal attributes
_VDM = {"vdm": "N2", "unseen": "zero"}
#: the parameters of the class-posterior presets (besides their estimator's own)
_POST = {"p": 2.0, "vdm": "N2", "unseen": "zero", "q": 2}
#: the parameters of the co-occurrence presets
_COOC = {"p": 2.0, "normalization": "range", "trim": 0.05, "average": True, "n_bins": 10}
_POST_DOC = (" Nominal attributes: VDM N2.  Continuous attributes: d = ||p(x) - p(y)||_q "
             "(q = 2, or 1); a missing value gives d = 1 ('max' acts as 'one').")

#: One row per preset:
#: (name, continuous kind, nominal kind, needs y,
#:  {settable parameter: default} besides COMMON, {fixed parameter: value}, aliases, doc)
TABLE = [
    ("heom", "diff", "overlap", False, {**_DIFF, "p": 2.0}, {}, (),
     "Heterogeneous Euclidean-Overlap Metric (Wilson & Martinez 1997)."),
    ("hvdm", "diff", "vdm", True, {**_DIFF, **_VDM, "normalization": "4std", "p": 2.0}, {},
     (), "Heterogeneous Value Difference Metric (Wilson & Martinez 1997): |x-y|/4σ and "
     "VDM N2 on nominal attributes."),
    ("vdm", None, "vdm", True, {**_VDM, "vdm": "N1", "p": 1.0}, {}, (),
     "Value Difference Metric (Stanfill & Waltz 1986; N1 as in Wilson & Martinez)."),
    ("minkowski", "diff", "overlap", False, {**_DIFF, "p": 2.0}, {}, (),
     "Minkowski aggregation of range-normalized differences and overlap."),
    ("euclidean", "diff", "overlap", False, _DIFF, {"p": 2.0}, (), "Minkowski with p = 2."),
    ("manhattan", "diff", "overlap", False, _DIFF, {"p": 1.0}, ("cityblock",),
     "Minkowski with p = 1."),
    ("chebyshev", "diff", "overlap", False, _DIFF, {"p": math.inf}, (),
     "Minkowski with p = inf (largest term)."),
    ("fractional", "diff", "overlap", False, {**_DIFF, "p": 0.5}, {}, (),
     "Minkowski with a fractional 0 < p < 1 (default 0.5)."),
    ("gower", "diff", "overlap", False,
     {**_DIFF, "p": 1.0, "missing": "ignore", "aggregate": "mean"}, {}, (),
     "Gower's coefficient (1971): mean of range-normalized |x-y| and overlap over the "
     "attributes both rows have."),
    ("hds", "diff", "hds", False, _COOC, {}, (),
     "Hellinger distance similarity (Zhao, Liu & Wang 2016): range-normalized differences "
     "and, for nominal values, the sum over the other attributes of the Hellinger "
     "distance between their conditional distributions."),
    ("add", "diff", "add", False, _COOC, {}, (),
     "Ahmad & Dey's distance (2007): range-normalized differences and, for nominal values, "
     "the sum over the other attributes of the total variation distance between their "
     "conditional distributions."),
    ("smd", None, "overlap", False, {"p": 1.0}, {}, (),
     "Simple matching distance (Huang 1998): the number of nominal attributes whose "
     "values differ (nominal columns only)."),
    ("dvdm", "dvdm", "vdm", True, {**_POST, "n_bins": None, "discretizer": None}, {}, (),
     "Discretized VDM (Wilson & Martinez 1997): class frequencies of equal-width bins "
     "(n_bins, default max(5, C)) or of any hdist.discretize discretizer." + _POST_DOC),
    ("ivdm", "ivdm", "vdm", True, {**_POST, "n_bins": None}, {}, (),
     "Interpolated VDM (Wilson & Martinez 1997): bin frequencies interpolated linearly "
     "between bin midpoints (n_bins, default max(5, C))." + _POST_DOC),
    ("gvdm", "gvdm", "vdm", True, {**_POST, "sigma": 0.5}, {}, (),
     "Gaussian VDM (Wieczorek, Blachnik & Duch): Gaussian-kernel posteriors with "
     "bandwidth sigma x range (sigma default 0.5)." + _POST_DOC),
    ("lvdm", "lvdm", "vdm", True, {**_POST, "width": 0.2}, {}, (),
     "Local VDM (Wieczorek, Blachnik & Duch): class frequencies in a window of width x "
     "range around the value (width default 0.2)." + _POST_DOC),
    ("pvdm", "pvdm", "vdm", True, {**_POST, "width": 0.4, "step": 0.05}, {}, (),
     "Parzen VDM (Wieczorek, Blachnik & Duch): mean class frequencies of sliding windows "
     "(width 0.4, step 0.05, times the range)." + _POST_DOC),
]


def _registry(table):
    """``{name or alias: MetricInfo}`` from the rows of :data:`TABLE`."""
    out = {}
    for name, cont, nom, needs_y, settable, fixed, aliases, doc in table:
        info = MetricInfo(name, cont, nom, {**COMMON, **settable, **fixed},
                          frozenset(COMMON) | frozenset(settable), needs_y, doc,
                          tuple(aliases))
        for key in (name,) + tuple(aliases):
            out[key] = info
    return out


#: name or alias -> :class:`MetricInfo`
METRICS: dict[str, MetricInfo] = _registry(TABLE)
