"""scikit-learn's estimator checks with expected failures, on every scikit-learn release
hdist supports.  From 1.6 the expected failures are an argument of
``parametrize_with_checks`` and ``check_estimator``; before it they are not, and the
checks come from ``check_estimator(generate_only=True)`` with the expected ones marked
here by name (a check that 1.6 replaced stands for the checks it replaced), and a check
that such an old release cannot run beside a newer scipy is skipped with the reason."""
import inspect
import warnings
from functools import partial
from unittest import SkipTest

import pytest
import scipy
import sklearn
from scipy import sparse
from sklearn.utils import estimator_checks as checks

from hdist.metrics import ColumnKindWarning

#: scikit-learn's checks feed small arrays of whole numbers, which hdist reads as
#: continuous with a ColumnKindWarning: not what they check
IGNORE_KINDS = pytest.mark.filterwarnings("ignore::hdist.metrics.ColumnKindWarning")

#: scikit-learn >= 1.6: the checks take ``expected_failed_checks``
EXPECTED_ARGUMENT = tuple(int(v) for v in sklearn.__version__.split(".")[:2]) >= (1, 6)

#: checks of scikit-learn 1.6 and the older checks each replaced: the equivalence of
#: integer weights and repeated rows covers unit weights and zero weights
REPLACED = {"check_sample_weight_equivalence_on_dense_data":
            ("check_sample_weights_invariance(kind=ones)",
             "check_sample_weights_invariance(kind=zeros)")}


def _old_check_bugs(estimator):
    """Checks of scikit-learn < 1.6 that fail inside the check itself for ``estimator``."""
    tags = estimator._get_tags()
    if "categorical" in tags["X_types"] and tags["allow_nan"]:
        # it turns the data into int32 category codes, then writes NaN into them
        return {"check_estimators_pickle": "the check cannot put NaN into int32 codes"}
    return {}


#: estimators whose transform returns a sparse matrix
SPARSE_OUTPUT = ("KNeighborsTransformer",)


def _unrunnable(estimator, check):
    """Why an old scikit-learn's own check cannot run beside the installed scipy, or None.
    scikit-learn before 1.4 turns a sparse output dense with ``.A``, which scipy 1.14
    removed: check_methods_subset_invariance then fails inside the check on an estimator
    whose output is sparse (KNeighborsTransformer), whatever the estimator does."""
    func = check.func if isinstance(check, partial) else check
    if func.__name__ == "check_methods_subset_invariance" and \
            type(estimator).__name__ in SPARSE_OUTPUT and not hasattr(sparse.csr_matrix, "A") and \
            ".A\n" in inspect.getsource(checks._apply_on_subsets):
        return ("scikit-learn %s's check calls .A on a sparse matrix, which scipy %s removed"
                % (sklearn.__version__, scipy.__version__))
    return None


def _old_checks(estimators, expected_failed_checks):
    """``(estimator, check, reason)`` for each check of scikit-learn < 1.6; ``reason`` is
    None unless the check is expected to fail.  A check is named as in 1.6 (the
    function's name) or as in scikit-learn's test ids (with its keyword arguments)."""
    for estimator in estimators:
        expected = _old_check_bugs(estimator)
        expected.update(expected_failed_checks(estimator) if expected_failed_checks else {})
        for new, olds in REPLACED.items():
            if new in expected:
                expected.update((old, expected[new]) for old in olds)
        for est, check in checks.check_estimator(estimator, generate_only=True):
            func = check.func if isinstance(check, partial) else check
            reason = expected.get(checks._get_check_estimator_ids(check),
                                  expected.get(func.__name__))
            yield est, check, reason


def parametrize_with_checks(estimators, expected_failed_checks=None):
    """scikit-learn's ``parametrize_with_checks``, the checks listed (scikit-learn 1.7 hands
    pytest a generator, which pytest 9 deprecates); ``expected_failed_checks`` maps an
    estimator to ``{check name: reason}``, those checks are expected to fail."""
    if EXPECTED_ARGUMENT:
        mark = checks.parametrize_with_checks(
            estimators, expected_failed_checks=expected_failed_checks)
        names, params = mark.args
        # a check expected to fail comes as pytest.param with its xfail mark, kept
        params = [pytest.param(*p, marks=IGNORE_KINDS) if type(p) is tuple
                  else pytest.param(*p.values, marks=list(p.marks) + [IGNORE_KINDS], id=p.id)
                  for p in params]
        return pytest.mark.parametrize(names, params, **mark.kwargs)
    params = [pytest.param(est, check, marks=[IGNORE_KINDS]
                           + ([pytest.mark.xfail(reason=reason)] if reason else [])
                           + ([pytest.mark.skip(reason=_unrunnable(est, check))]
                              if _unrunnable(est, check) else []))
              for est, check, reason in _old_checks(estimators, expected_failed_checks)]
    return pytest.mark.parametrize("estimator, check", params,
                                   ids=checks._get_check_estimator_ids)


def failed_checks(estimator, expected):
    """``(check name, message)`` of every check ``estimator`` fails, less those in
    ``expected`` (``{check name: reason}``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ColumnKindWarning)
        return _failed_checks(estimator, expected)


def _failed_checks(estimator, expected):
    if EXPECTED_ARGUMENT:
        res = checks.check_estimator(estimator, on_fail=None, expected_failed_checks=expected)
        return [(r["check_name"], str(r["exception"])[:200]) for r in res
                if r["status"] == "failed"]
    failed = []
    for est, check, reason in _old_checks([estimator], lambda _: expected):
        if reason is not None or _unrunnable(est, check):
            continue
        try:
            check(est)
        except SkipTest:
            pass
        except Exception as e:  # noqa: BLE001 - every failing check is reported
            failed.append((checks._get_check_estimator_ids(check), str(e)[:200]))
    return failed
