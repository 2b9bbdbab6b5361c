"""Reference of the kind rule (docs/metrics.md, section 1) for tests, cell by cell on plain
Python values: which text is missing, which column is continuous, the numbers it holds, and
which inferred kinds draw a warning.  Written from the documentation, not from
hdist/_core/schema.py; never imported by the package."""
from __future__ import annotations

import math
import numbers
import warnings

#: the documented missing-value text: pandas' ``read_csv`` defaults and "?"
NA_TEXT = ("", "?", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
           "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan",
           "null")


def is_missing(v, na=NA_TEXT):
    """None, NaN, pandas' NA and NaT, or text that is (spaces around ignored) in ``na``."""
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip() in na
    if type(v).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return isinstance(v, numbers.Real) and math.isnan(float(v))
    except (TypeError, ValueError):
        return False


def as_number(v):
    """The float ``v`` is or spells, or None (booleans are no numbers; text with an
    underscore is none either, nor text that spells no finite number: "nan", "inf")."""
    if isinstance(v, bool) or type(v).__name__ == "bool_":
        return None
    if isinstance(v, numbers.Real):
        return float(v)
    if isinstance(v, str):
        t = v.strip()
        if "_" in t:
            return None
        try:
            f = float(t)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def reference_kind(values, na=NA_TEXT):
    """``(kind, floats)`` of a column of objects or text (values in row order): continuous
    when it has an observed value and every observed value is or spells a number (floats:
    one per row, NaN where missing), else nominal (floats None)."""
    observed = [v for v in values if not is_missing(v, na)]
    if observed and all(as_number(v) is not None for v in observed):
        return "continuous", [math.nan if is_missing(v, na) else as_number(v)
                              for v in values]
    return "nominal", None


def reference_categories(values, na=NA_TEXT):
    """The observed labels of a nominal column, a whole float counted as its integer."""
    out = set()
    for v in values:
        if is_missing(v, na):
            continue
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        out.add(v)
    return out


def reference_doubt(values, kind, na=NA_TEXT):
    """Whether the inferred ``kind`` of a column draws the warning: continuous whole
    numbers with at most 10 distinct values among at least twice as many rows, written
    with leading zeros, or all different over a span under twice the rows (20 rows at
    least); nominal with at least 3 distinct numbers and 1 or 2 distinct other texts."""
    observed = [v for v in values if not is_missing(v, na)]
    if kind == "continuous":
        nums = [as_number(v) for v in observed]
        if not nums or any(x != math.floor(x) for x in nums):
            return False
        for v in observed:
            if isinstance(v, str):
                t = v.strip().lstrip("+-")
                if len(t) > 1 and t[0] == "0" and t[1].isdigit():
                    return True
        distinct = len(set(nums))
        if distinct <= 10 and len(nums) >= 2 * distinct:
            return True
        return distinct == len(nums) >= 20 and max(nums) - min(nums) < 2 * len(nums)
    labels = reference_categories(values, na)
    texts = {v for v in labels if as_number(v) is None}
    return 1 <= len(texts) <= 2 and len(labels) - len(texts) >= 3


def kind_warnings(fit):
    """The ``columns`` (``(name, reason)`` pairs) of each ``ColumnKindWarning`` that
    ``fit()`` issues, in order."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [w.message.columns for w in caught if w.category.__name__ == "ColumnKindWarning"]
