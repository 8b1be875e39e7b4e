"""When an `expect.result` is a check that lets a wrong result pass, defined once.

The execution scorer refuses such an expectation (a scorer input error: the case is
`unscored`, never `pass`) and the linter reports it as an ERROR (`validate_cases.py`,
`make_plan.py`), both through these two functions.

- `columns_problem`: with `columns`, every expected object row must hold exactly the
  listed columns. A key the row holds but `columns` does not list is never compared (the
  app may return any value there and the case passes); a listed column the row lacks can
  never match (the case fails with rows that look equal).
- `tolerance_problem`: a `float_tolerance` at least as large as a non-zero expected
  number lets 0 (and the value with the wrong sign) pass, the usual shape of a wrong
  result (an empty filter, a missing join). An expected 0 is exempt: that tolerance is
  how "near zero" is written.

And how a failed scalar reads (`scalar_summary`): values written as JSON (`null`, `true`,
`"1,234.50"`), so text is told from a number, with why a formatted number is not read as one.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Iterator

from ..core.writer import clip

# a plain decimal number as text ("3", "-2.50", "1e3"): the execution scorer reads it as a number
NUMERIC_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_FORMATTED_NUMBER = re.compile(r"\D{0,4}[+-]?\d[\d,. _']*\D{0,6}")


def _names(keys: list[str]) -> str:
    return ", ".join(repr(k) for k in keys)


def columns_problem(rows: Any, columns: Any) -> str | None:
    """The first expected row whose keys are not exactly `columns` (with how many more), or None."""
    if not isinstance(rows, list) or not isinstance(columns, list) or not columns:
        return None
    problems: list[str] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            problems.append(f"rows[{i}] is not an object row ({{column: value}}), which columns needs")
            continue
        extra = [k for k in row if k not in columns]
        lacking = [c for c in columns if c not in row]
        parts = ([f"holds {_names(extra)}, which columns does not list: never compared"] if extra else []) + \
                ([f"lacks {_names(lacking)}, which columns lists: the row can never match"] if lacking else [])
        if parts:
            problems.append(f"rows[{i}] " + "; it ".join(parts))
    if not problems:
        return None
    more = f" (and {len(problems) - 1} more row(s) alike)" if len(problems) > 1 else ""
    return (f"{problems[0]}{more}; make columns the keys the expected rows hold (or drop columns to compare "
            f"whole rows)")


def _numbers(value: Any, where: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield where, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{where}.{key}")


def tolerance_problem(expected: Any, tolerance: Any, where: str = "scalar") -> str | None:
    """Why `tolerance` swallows a non-zero expected number (the first one), or None."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance):
        return None
    for at, number in _numbers(expected, where):
        if number != 0 and math.isfinite(number) and tolerance >= abs(number):
            return (f"float_tolerance {tolerance:g} is at least the expected value {number:g} ({at}): a result "
                    f"of 0 would pass; use a tolerance below {abs(number):g}, or expect 0 if the value is "
                    f"meant to be near zero")
    return None


def zero_tolerance_problem(expected: Any, tolerance: Any, where: str = "scalar") -> str | None:
    """Why `tolerance` turns an expected 0 into a range (every expected number is 0 and the tolerance is
    1 or more), or None. float_tolerance absorbs float rounding; around 0 there is no value for
    tolerance_problem to measure it against, and 0 ± 1e9 passes any result the app can give. The linter
    refuses it; the scorer does not, so a recorded run rescores as it was scored."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance):
        return None
    numbers = list(_numbers(expected, where))
    if not numbers or any(n != 0 for _, n in numbers) or tolerance < 1:
        return None
    meant = f"; did you mean {1 / tolerance:g}?" if tolerance > 1 and math.log10(tolerance).is_integer() else ""
    return (f"float_tolerance {tolerance:g} around the expected 0 ({numbers[0][0]}) passes any result from "
            f"{-tolerance:g} to {tolerance:g}, so the check can hardly fail: a tolerance absorbs float rounding "
            f"(0.01, 1e-9), it is not a range{meant}")


def shown(value: Any, limit: int = 80) -> str:
    """A value as a diff shows it: JSON text (`null`, `true`, `"42"`), clipped and redacted."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(value)
    return clip(text, limit, ellipsis="…")


def scalar_summary(expected: Any, got: Any) -> str:
    """`expected 1234.5, got "1,234.50"` (+ why, when the app wrote a number as formatted text)."""
    text = f"expected {shown(expected)}, got {shown(got)}"
    if (isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(got, str)
            and _FORMATTED_NUMBER.fullmatch(got.strip()) and not NUMERIC_TEXT.fullmatch(got.strip())):
        text += (" (text, read as a number only when it is a plain decimal: no thousands separators, "
                 "currency or units; have the app return a number, or expect the text)")
    return text
