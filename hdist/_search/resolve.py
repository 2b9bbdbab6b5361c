"""One way to name a metric: :func:`resolve_metric` turns what a user passes as
``metric`` (and ``metric_params``) into a :class:`~hdist.Metric`, for the estimators, the
index and the faces alike."""
import numpy as np

from .metric import METRICS, Metric

__all__ = ["resolve_metric"]


def resolve_metric(metric, metric_params=None, *, what="metric", defaults=None,
                   refit=False):
    """The :class:`~hdist.Metric` that ``metric`` and ``metric_params`` name.

    One precedence, from lowest to highest: ``defaults`` (the caller's documented
    defaults), the parameters of a given :class:`~hdist.Metric`, then ``metric_params``.

    - a preset name: ``Metric(name, **defaults, **metric_params)``;
    - an unfitted Metric: a new unfitted Metric of the same preset with its parameters,
      ``metric_params`` applied over them (the given object is never modified);
    - a fitted Metric: that same object, unchanged (``metric_params`` must be empty:
      changing a parameter needs a new fit);
    - with ``refit=True`` a fitted Metric counts as unfitted: the caller gets an unfitted
      copy to fit on its own data.

    Parameters
    ----------
    metric : str or hdist.Metric
        A preset name of ``hdist.METRICS`` (any case) or a Metric, fitted or not.
    metric_params : dict or None, default=None
        Parameters of the metric (``p``, ``nominal``, ``missing``, ...).
    what : str or None, default="metric"
        The argument's name in error messages (``"--metric"`` on the command line).
        None: an unknown preset name is refused with the Metric's own message (no
        prefix), and the other messages name ``metric``.
    defaults : dict or None, default=None
        Parameters the caller sets unless ``metric_params`` or the given Metric sets them;
        a key the preset does not accept is left out.  Never applied to a fitted Metric
        that is returned as it is.
    refit : bool, default=False
        Return an unfitted copy of a fitted Metric too.

    Returns
    -------
    Metric
        Unfitted (a new object), or the fitted ``metric`` itself.

    Raises
    ------
    TypeError
        ``metric`` is neither a string nor a Metric, ``metric_params`` is not a dict,
        ``refit`` is not a bool, or a parameter is not one the preset takes.
    ValueError
        The name is not a preset, a parameter value is refused by the Metric, or
        ``metric_params`` is given with a fitted Metric (and ``refit`` is false).

    Examples
    --------
    >>> import hdist
    >>> from hdist._search.resolve import resolve_metric
    >>> resolve_metric("hvdm", {"p": 1.0}).params
    {'p': 1.0}
    >>> resolve_metric(hdist.Metric("hvdm", vdm="N1"), {"vdm": "N3"}).params
    {'vdm': 'N3'}
    """
    if metric_params is None:
        metric_params = {}
    elif not isinstance(metric_params, dict):
        raise TypeError("metric_params must be a dict or None, got %r" % (metric_params,))
    if what is not None and not isinstance(what, str):
        raise TypeError("what must be a str or None, got %r" % (what,))
    name_of = "metric" if what is None else what
    if defaults is not None and not isinstance(defaults, dict):
        raise TypeError("defaults must be a dict or None, got %r" % (defaults,))
    if not isinstance(refit, (bool, np.bool_)):
        raise TypeError("refit must be a bool, got %r" % (refit,))
    if isinstance(metric, Metric):
        if hasattr(metric, "plan_") and not refit:
            if metric_params:
                raise ValueError("metric_params cannot change the fitted Metric given as "
                                 "%s; pass the parameters to Metric(...) and fit it again"
                                 % name_of)
            return metric
        name, given = metric.name, metric.params
    elif isinstance(metric, str):
        name, given = metric, {}
    else:
        raise TypeError("%s must be a metric name or an hdist.Metric, got %r"
                        % (name_of, metric))
    info = METRICS.get(name.lower())
    if info is None:
        try:
            Metric(name)            # the Metric's own message: the presets to choose from
        except ValueError as exc:
            if what is None:
                raise
            raise ValueError("%s: %s" % (what, exc)) from None
    merged = {k: v for k, v in (defaults or {}).items() if k in info.params}
    merged.update(given)
    merged.update(metric_params)
    return Metric(name, **merged)
