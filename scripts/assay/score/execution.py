"""The `execution` layer: did the app compute the right result?

`extract_actual` reads the app's result only from a source the adapter declares, in
priority order `result_from_tool` -> `result_from_response` -> `result_pattern`; the
first declared source that yields a value wins (what each earlier one lacked is kept
in `notes`). Nothing declared, or nothing found, is `{"missing": true, "reason"}`:
the layer is then `unscored`, never `fail`.

- `result_from_tool: {tool, field?}`: the LAST call named `tool` in the trajectory's
  tool calls (`{name, arguments, result, error}`); its `result`, or `result[field]`.
  A result captured as JSON text is parsed first.
- `result_from_response: "a.b.0.c"`: a dotted path into the response JSON (integer
  segments index lists).
- `result_pattern`: group 1 of a regex over the answer text (bounded like every author
  regex) -> a string scalar.
A list becomes `{"rows": [...]}`; a scalar (string, number, bool, null) becomes
`{"scalar": v}`; an object is `missing` (name a `field` / deeper path instead).

Equality (`values_equal`), strict and documented:
- a bool equals only the same bool (never 1/0, never "true");
- null equals only null;
- numbers compare numerically, within `float_tolerance` (absolute, inclusive) when one
  is set, else exactly (1 == 1.0; 0.1 + 0.2 != 0.3 -- set a tolerance for floats);
- a number and a string compare numerically when the string, stripped, is a plain
  decimal number (`"3"`, `"-2.50"`, `"1e3"`; not `"1,000"`, `"0x10"`, `"nan"`): a
  `result_pattern` always yields text, and "3" from the answer should match 3;
- two strings compare as NFC text, exactly (no numeric reading: "3.0" != "3");
- lists compare element by element; objects by the same keys and equal values.
Rows compare as multisets (each expected row matched to a distinct equal actual row)
unless `ordered: true`; with `columns`, object rows are compared on those columns only
(without it, whole rows must be equal). An expected scalar against actual rows that
hold exactly one row with one value compares against that value (`SELECT count(*)`).
Tolerance: `expect.result.float_tolerance`, else the plan's `scoring.float_tolerance`,
else exact. An expectation `result_spec` says would let a wrong result pass is refused.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from assay.core import regex_guard
from assay.core.jsonio import maybe_json
from assay.score.base import FAIL, PASS, UNSCORED, ScorerInputError, is_number, nfc, short
from assay.score.result_spec import NUMERIC_TEXT as _NUMERIC_TEXT
from assay.score.result_spec import columns_problem, scalar_summary, shown, tolerance_problem

SOURCES = ("result_from_tool", "result_from_response", "result_pattern")
_MISSING = object()
_SHOW = 5  # rows shown in a diff


# ---------------------------------------------------------------- extraction

def extract_actual(invocation: dict, response_json: object, answer_text: str | None,
                   tool_calls: list[dict] | None = None, *, regex_timeout_s: float = 2.0) -> dict:
    """actual.json content: `{"scalar"|"rows"|"missing"+"reason", "source", "notes"?}`."""
    invocation = invocation or {}
    notes: list[str] = []
    first_declared: str | None = None
    for source in SOURCES:
        spec = invocation.get(source)
        if spec is None:
            continue
        first_declared = first_declared or source
        if source == "result_from_tool":
            found = _from_tool(spec, tool_calls)
        elif source == "result_from_response":
            found = _from_response(spec, response_json)
        else:
            found = _from_pattern(spec, answer_text, regex_timeout_s)
        if "missing" not in found:
            found["source"] = source
            if notes:
                found["notes"] = notes
            return found
        notes.append(f"{source}: {found['reason']}")
    if first_declared is None:
        return {"missing": True, "source": None,
                "reason": "the adapter declares no result source (result_from_tool, "
                          "result_from_response or result_pattern)"}
    return {"missing": True, "source": first_declared, "reason": "; ".join(notes)}


def _shape(value: Any, where: str) -> dict:
    if isinstance(value, list):
        return {"rows": value}
    if isinstance(value, dict):
        return {"missing": True,
                "reason": f"{where} is an object, not a scalar or a list of rows (point the path at a field)"}
    return {"scalar": value}


def _from_tool(spec: Any, tool_calls: list[dict] | None) -> dict:
    if not isinstance(spec, dict) or not isinstance(spec.get("tool"), str):
        return {"missing": True, "reason": f"result_from_tool must be {{tool, field?}}, got {short(spec, 80)}"}
    tool, field = spec["tool"], spec.get("field")
    if tool_calls is None:
        return {"missing": True, "reason": "no tool-call log: no trace was collected, or the trace could not "
                "show tool calls"}
    calls = [c for c in tool_calls if isinstance(c, dict) and c.get("name") == tool]
    if not calls:
        return {"missing": True, "reason": f"tool {tool!r} was not called"}
    call = calls[-1]
    if "result" not in call or call.get("result") is None:
        return {"missing": True, "reason": f"the last {tool!r} call has no captured result"
                + (f" (error: {short(call.get('error'), 80)})" if call.get("error") else "")}
    result = call["result"]
    if field is None:
        parsed = maybe_json(result)
        return _shape(parsed, f"the result of {tool!r}")
    doc = maybe_json(result)
    value = _walk(doc, str(field))
    if value is _MISSING:
        return {"missing": True, "reason": f"the result of the last {tool!r} call has no field {field!r}"}
    return _shape(value, f"field {field!r} of {tool!r}'s result")


def _walk(doc: Any, path: str) -> Any:
    node = doc
    for part in path.split("."):
        if isinstance(node, dict):
            if part not in node:
                return _MISSING
            node = node[part]
        elif isinstance(node, list) and re.fullmatch(r"-?\d+", part):
            index = int(part)
            if not -len(node) <= index < len(node):
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _from_response(path: Any, response_json: object) -> dict:
    if not isinstance(path, str) or not path:
        return {"missing": True, "reason": f"result_from_response must be a dotted path, got {short(path, 80)}"}
    if response_json is None:
        return {"missing": True, "reason": "the response body is not JSON"}
    value = _walk(response_json, path)
    if value is _MISSING:
        return {"missing": True, "reason": f"path {path!r} is absent from the response JSON"}
    return _shape(value, f"path {path!r}")


def _from_pattern(pattern: Any, answer_text: str | None, timeout_s: float) -> dict:
    if not isinstance(pattern, str):
        return {"missing": True, "reason": f"result_pattern must be a regex string, got {short(pattern, 80)}"}
    if answer_text is None:
        return {"missing": True, "reason": "no answer text to apply result_pattern to"}
    try:
        value = regex_guard.bounded_group(pattern, nfc(answer_text), timeout_s)
    except regex_guard.RegexTimeout:
        return {"missing": True, "reason": f"result_pattern timed out after {timeout_s:g} s"}
    except regex_guard.RegexProblem as err:
        return {"missing": True, "reason": f"result_pattern: {err}"}
    if value is None:
        return {"missing": True, "reason": "result_pattern did not match the answer (or group 1 was empty)"}
    return {"scalar": value}


# ---------------------------------------------------------------- equality

def _as_number(value: Any) -> float | int | None:
    if is_number(value):
        return value
    if isinstance(value, str) and _NUMERIC_TEXT.fullmatch(value.strip()):
        number = float(value.strip())
        return number if math.isfinite(number) else None
    return None


def values_equal(expected: Any, actual: Any, tolerance: float | None = None) -> bool:
    """Type-aware equality (see the module docstring)."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected is actual
    if expected is None or actual is None:
        return expected is None and actual is None
    if is_number(expected) or is_number(actual):
        e, a = _as_number(expected), _as_number(actual)
        if e is None or a is None:
            return False
        if tolerance is None:
            return e == a
        gap = abs(e - a)
        # A gap equal to the tolerance passes even when binary floats land a hair above it.
        return gap <= tolerance or math.isclose(gap, tolerance, rel_tol=1e-9)
    if isinstance(expected, str) and isinstance(actual, str):
        return nfc(expected) == nfc(actual)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            values_equal(e, a, tolerance) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(
            values_equal(v, actual[k], tolerance) for k, v in expected.items())
    return False


# ---------------------------------------------------------------- scoring

def _read_expect(expect_result: Any, float_tolerance: float | None) -> dict[str, Any]:
    if not isinstance(expect_result, dict):
        raise ScorerInputError(f"expect.result must be an object, got {type(expect_result).__name__}")
    has_scalar, has_rows = "scalar" in expect_result, "rows" in expect_result
    if has_scalar == has_rows:
        raise ScorerInputError("expect.result needs exactly one of `scalar` or `rows`"
                               + (" (both given)" if has_scalar else " (neither given)"))
    rows = expect_result.get("rows")
    if has_rows and not isinstance(rows, list):
        raise ScorerInputError(f"expect.result.rows must be a list, got {type(rows).__name__}")
    ordered = expect_result.get("ordered", False)
    if not isinstance(ordered, bool):
        raise ScorerInputError(f"expect.result.ordered must be true or false, got {short(ordered, 40)}")
    columns = expect_result.get("columns")
    if columns is not None:
        if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
            raise ScorerInputError("expect.result.columns must be a non-empty list of column names")
        if has_rows and not all(isinstance(r, dict) for r in rows):
            raise ScorerInputError("expect.result.columns needs object rows ({column: value})")
        if has_rows and (problem := columns_problem(rows, columns)):
            raise ScorerInputError(f"expect.result.{problem}")
    tolerance = expect_result.get("float_tolerance", float_tolerance)
    if tolerance is not None and (not is_number(tolerance) or tolerance < 0 or not math.isfinite(tolerance)):
        raise ScorerInputError(f"float_tolerance must be a number >= 0, got {short(tolerance, 40)}")
    if problem := tolerance_problem(expect_result["scalar"] if has_scalar else rows, tolerance,
                                    "scalar" if has_scalar else "rows"):
        raise ScorerInputError(f"expect.result: {problem}")
    return {"ordered": ordered, "columns": columns, "tolerance": tolerance}


def score_execution(expect_result: dict, actual: dict, *, float_tolerance: float | None = None) -> dict:
    """The execution layer dict: compares `expect.result` with actual.json content."""
    spec = _read_expect(expect_result, float_tolerance)
    expected = ({"scalar": expect_result["scalar"]} if "scalar" in expect_result
                else {"rows": expect_result["rows"]})
    out: dict[str, Any] = {"expected": expected, "actual": actual, "float_tolerance": spec["tolerance"],
                           "ordered": spec["ordered"], "columns": spec["columns"],
                           "source": (actual or {}).get("source")}
    if not isinstance(actual, dict) or actual.get("missing") or not ("scalar" in actual or "rows" in actual):
        reason = actual.get("reason") if isinstance(actual, dict) else None
        out.update(verdict=UNSCORED, reason=f"no actual result: {reason or 'nothing was extracted'}")
        return out
    tol = spec["tolerance"]
    if "scalar" in expected:
        got, note = _actual_scalar(actual)
        if got is _MISSING:
            out.update(verdict=FAIL, diff={"summary": note})
            return out
        equal = values_equal(expected["scalar"], got, tol)
        diff: dict[str, Any] = {"expected": expected["scalar"], "actual": got}
        e, a = _as_number(expected["scalar"]), _as_number(got)
        if not isinstance(expected["scalar"], bool) and not isinstance(got, bool) and e is not None and a is not None:
            diff["difference"] = a - e
        diff["summary"] = "equal" if equal else scalar_summary(expected["scalar"], got)
        if note:
            diff["note"] = note
        out.update(verdict=PASS if equal else FAIL, diff=diff)
        return out
    if "rows" not in actual:
        out.update(verdict=FAIL, diff={"summary": f"expected {len(expected['rows'])} row(s), got a scalar "
                                                  f"{shown(actual.get('scalar'))}"})
        return out
    equal, diff = compare_rows(expected["rows"], actual["rows"], ordered=spec["ordered"],
                               columns=spec["columns"], tolerance=tol)
    out.update(verdict=PASS if equal else FAIL, diff=diff)
    return out


def _actual_scalar(actual: dict) -> tuple[Any, str | None]:
    if "scalar" in actual:
        return actual["scalar"], None
    rows = actual["rows"]
    if len(rows) == 1:
        row = rows[0]
        if isinstance(row, dict) and len(row) == 1:
            return next(iter(row.values())), "compared against the single value of the single row"
        if isinstance(row, list) and len(row) == 1:
            return row[0], "compared against the single value of the single row"
        if not isinstance(row, (dict, list)):
            return row, "compared against the single row"
    return _MISSING, f"expected a scalar, got {len(rows)} row(s) that are not a single value"


def _project(row: Any, columns: list[str] | None) -> Any:
    if columns is None:
        return row
    if not isinstance(row, dict):
        return _MISSING  # cannot be projected: never equal to an expected row
    return {c: row.get(c, _MISSING) for c in columns}


def _canon(value: Any) -> str | None:
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False, default=lambda _: 1 / 0)
    except (ValueError, TypeError, ZeroDivisionError, RecursionError):
        return None


def compare_rows(expected: list, actual: list, *, ordered: bool = False, columns: list[str] | None = None,
                 tolerance: float | None = None) -> tuple[bool, dict[str, Any]]:
    """(equal, diff). Multiset comparison unless ordered; projected onto `columns`."""
    exp = [_project(r, columns) for r in expected]
    act = [_project(r, columns) for r in actual]

    def eq(e: Any, a: Any) -> bool:
        if e is _MISSING or a is _MISSING:
            return False
        if isinstance(e, dict) and isinstance(a, dict) and columns is not None:
            return all(a[k] is not _MISSING and values_equal(v, a[k], tolerance) for k, v in e.items())
        return values_equal(e, a, tolerance)

    diff: dict[str, Any] = {"expected_rows": len(exp), "actual_rows": len(act)}
    if ordered:
        mismatch = next((i for i, (e, a) in enumerate(zip(exp, act)) if not eq(e, a)), None)
        equal = mismatch is None and len(exp) == len(act)
        if mismatch is not None:
            diff["first_mismatch_index"] = mismatch
            diff["expected_row"] = expected[mismatch]
            diff["actual_row"] = actual[mismatch]
        diff["summary"] = ("equal" if equal else
                           f"row {mismatch} differs" if mismatch is not None else
                           f"expected {len(exp)} rows, got {len(act)}")
        return equal, diff
    unmatched_exp, unmatched_act = _match(exp, act, eq)
    equal = not unmatched_exp and not unmatched_act
    diff["missing_rows"] = [expected[i] for i in unmatched_exp[:_SHOW]]
    diff["unexpected_rows"] = [actual[i] for i in unmatched_act[:_SHOW]]
    diff["missing_count"] = len(unmatched_exp)
    diff["unexpected_count"] = len(unmatched_act)
    diff["summary"] = ("equal (as a multiset)" if equal else
                       f"{len(unmatched_exp)} expected row(s) missing, {len(unmatched_act)} unexpected row(s)")
    return equal, diff


def _match(exp: list, act: list, eq) -> tuple[list[int], list[int]]:
    """Maximum matching of expected rows to distinct equal actual rows.

    Identical rows (same canonical JSON, hence equal) pair off first in O(n); each
    expected row left over then searches an augmenting path (Kuhn's algorithm from that
    initial matching, which still ends maximum), so the result stays right when a
    tolerance or a numeric string makes equality non-transitive. Neighbours are computed
    lazily: an all-identical pass costs no pairwise comparison. Returns the unmatched
    indices on each side.
    """
    buckets: dict[str, list[int]] = {}
    for j, row in enumerate(act):
        key = _canon(row)
        if key is not None:
            buckets.setdefault(key, []).append(j)
    owner: dict[int, int] = {}  # actual index -> expected index
    partner: dict[int, int] = {}  # expected index -> actual index
    for i, row in enumerate(exp):
        key = _canon(row)
        bucket = buckets.get(key) if key is not None else None
        if bucket:
            j = bucket.pop()
            owner[j], partner[i] = i, j
    neighbours: dict[int, list[int]] = {}

    def adj(i: int) -> list[int]:
        if i not in neighbours:
            neighbours[i] = [j for j in range(len(act)) if eq(exp[i], act[j])]
        return neighbours[i]

    for start in range(len(exp)):
        if start in partner:
            continue
        # Iterative DFS for an augmenting path from `start`.
        seen: set[int] = set()
        stack: list[tuple[int, int]] = [(start, 0)]  # (expected index, next neighbour position)
        path: list[tuple[int, int]] = []  # (expected index, actual index) edges tried
        found = False
        while stack:
            i, pos = stack[-1]
            options = adj(i)
            while pos < len(options) and options[pos] in seen:
                pos += 1
            if pos >= len(options):
                stack.pop()
                if path:
                    path.pop()
                continue
            j = options[pos]
            stack[-1] = (i, pos + 1)
            seen.add(j)
            path.append((i, j))
            if j not in owner:
                found = True
                break
            stack.append((owner[j], 0))
        if found:
            for i, j in path:
                owner[j], partner[i] = i, j
    return ([i for i in range(len(exp)) if i not in partner],
            [j for j in range(len(act)) if j not in owner])
