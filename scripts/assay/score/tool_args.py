"""The `tool_selection` layer: were the tools called with the right arguments (`expect.args`)?

`expect.args` is `{tool: {arg: expectation, ..., calls: any|all|first}}`. An expectation is:
- `present` or `{present: true}`: the argument exists and is not empty (null, "", [], {});
  `{present: false}`: it is absent or empty.
- `from_tool_result` or `{from_tool_result: "<tool>[.<field>]"}`: the value appears, as a
  whole token, in the captured result of an EARLIER tool call (the agent used what a tool
  returned rather than inventing it); the mapping form only looks at that tool's results,
  and at the dotted `field` inside them when given. Fails on the first call of the trace;
  `unscorable` when no earlier (matching) result was captured or the value is under 3
  characters (too short to be evidence) or not a scalar.
- anything else: a literal, compared type-aware (a bool is never a number, "5" is not 5,
  1 == 1.0) with strings after NFC, recursively through lists and objects.
Scope `calls`: `any` (default; some call meets every expectation), `all` (every call does),
`first` (the first call does). A tool never called is a `tool_not_called` fail. Arguments
not captured by the trace make that call's checks `unscorable`. An unknown scope, or an entry
that asserts nothing, raises ScorerInputError.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.jsonio import MISSING, dig
from .base import FAIL, PASS, UNSCORABLE, ScorerInputError, contains_token, fold_checks, is_number, nfc, short

SCOPES = ("any", "all", "first")
PRESENT, FROM_TOOL_RESULT = "present", "from_tool_result"
MIN_EVIDENCE_CHARS = 3


def values_equal(expected: Any, actual: Any) -> bool:
    """Type-aware equality: NFC strings, numbers by value but never bools, containers recursively."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if is_number(expected) or is_number(actual):
        return is_number(expected) and is_number(actual) and expected == actual
    if isinstance(expected, str) and isinstance(actual, str):
        return nfc(expected) == nfc(actual)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(values_equal(e, a) for e, a in zip(expected, actual))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(values_equal(v, actual[k]) for k, v in expected.items())
    return expected is None and actual is None


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def _result_text(result: Any) -> str:
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, sort_keys=True)


def _keyword(expectation: Any) -> tuple[str | None, Any]:
    """(`present` | `from_tool_result` | None for a literal, its parameter)."""
    if expectation in (PRESENT, FROM_TOOL_RESULT):
        return expectation, (True if expectation == PRESENT else None)
    if isinstance(expectation, dict) and len(expectation) == 1:
        (key, param), = expectation.items()
        if key == PRESENT and isinstance(param, bool):
            return PRESENT, param
        if key == FROM_TOOL_RESULT and isinstance(param, str) and param:
            return FROM_TOOL_RESULT, param
    return None, None


def _source_text(call: dict, source: str | None) -> str | None:
    """The text of an earlier call's result to search, or None when it is not a matching source."""
    if not call.get("result_captured", "result" in call):
        return None
    result = call.get("result")
    if source is None:
        return _result_text(result)
    tool, _, field = source.partition(".")
    if call.get("name") != tool:
        return None
    result = dig(result, field.split(".") if field else [])
    return None if result is MISSING else _result_text(result)


def _uncaptured(trajectory: dict, what: str) -> str:
    """Where the trace's own convention keeps a call's `arguments` / `results` and what hides them
    (the normalizer records it: trajectory.convention.capture); gen_ai's attribute for an older trajectory."""
    capture = ((trajectory or {}).get("convention") or {}).get("capture")
    said = capture.get(what) if isinstance(capture, dict) else None
    return str(said) if said else {"arguments": "gen_ai.tool.call.arguments", "results": "gen_ai.tool.call.result"}[what]


def _check_arg(arg: str, expectation: Any, call: dict, index: int, earlier: list[dict],
               trajectory: dict | None = None) -> tuple[str, str | None]:
    """(status, reason) of one expectation on one call; `index` is its position in the whole trace."""
    if not call.get("arguments_captured", "arguments" in call):
        return UNSCORABLE, f"the trace did not capture this call's arguments ({_uncaptured(trajectory, 'arguments')})"
    args = call.get("arguments")
    if not isinstance(args, dict):
        return UNSCORABLE, f"arguments are not a JSON object: {short(args, 80)}"
    keyword, param = _keyword(expectation)
    if keyword == PRESENT:
        if param:
            return (PASS, None) if not _empty(args.get(arg)) else (FAIL, f"argument {arg!r} is missing or empty")
        return (PASS, None) if _empty(args.get(arg)) else (FAIL, f"argument {arg!r} was passed but must not be")
    if arg not in args:
        return FAIL, f"argument {arg!r} was not passed"
    value = args[arg]
    if keyword == FROM_TOOL_RESULT:
        if index == 0:
            return FAIL, "first tool call of the trace: no earlier result the value could come from"
        if isinstance(value, (dict, list)) or value is None:
            return UNSCORABLE, f"from_tool_result needs a scalar value, got {short(value, 80)}"
        text = nfc(value if isinstance(value, str) else json.dumps(value))
        if len(text) < MIN_EVIDENCE_CHARS:
            return UNSCORABLE, f"value {text!r} is under {MIN_EVIDENCE_CHARS} characters: too short to be evidence"
        texts = [t for t in (_source_text(c, param) for c in earlier) if t is not None]
        if not texts:
            where = f"of {param}" if param else "of any tool"
            return UNSCORABLE, f"no earlier tool result {where} was captured ({_uncaptured(trajectory, 'results')})"
        if any(contains_token(t, text) for t in texts):
            return PASS, None
        return FAIL, f"value {short(text, 80)!r} appears in no earlier tool result{f' of {param}' if param else ''}"
    if values_equal(expectation, value):
        return PASS, None
    return FAIL, f"expected {short(expectation, 80)}, got {short(value, 80)}"


def _validate(args_block: Any) -> dict[str, tuple[str, dict]]:
    if not isinstance(args_block, dict) or not args_block:
        raise ScorerInputError(f"expect.args must be a non-empty mapping of tool -> argument expectations, got {short(args_block, 80)}")
    specs = {}
    for tool, entry in args_block.items():
        if not isinstance(entry, dict):
            raise ScorerInputError(f"expect.args.{tool} must be a mapping of argument -> expectation, got {short(entry, 80)}")
        scope = entry.get("calls", "any")
        if scope not in SCOPES:
            raise ScorerInputError(f"expect.args.{tool}.calls {scope!r} is unknown; use one of {list(SCOPES)}")
        expectations = {k: v for k, v in entry.items() if k != "calls"}
        if not expectations:
            raise ScorerInputError(f"expect.args.{tool} asserts nothing (only `calls`); name at least one argument")
        specs[tool] = (scope, expectations)
    return specs


def score_tool_args(trajectory: dict, expect: dict) -> dict:
    """Score `expect.args` against the trajectory's tool calls; returns the layer dict."""
    specs = _validate((expect or {}).get("args"))
    calls = [c for c in (trajectory or {}).get("tool_calls") or [] if isinstance(c, dict)]
    checks: list[dict] = []
    for tool, (scope, expectations) in specs.items():
        mine = [(i, c) for i, c in enumerate(calls) if c.get("name") == tool]
        if not mine:
            checks.append({"tool": tool, "arg": None, "expectation": None, "call_index": None,
                           "calls": scope, "status": FAIL, "reason": "tool_not_called"})
            continue
        per_call = []
        for i, call in (mine[:1] if scope == "first" else mine):
            rows = []
            for arg, expectation in expectations.items():
                status, reason = _check_arg(arg, expectation, call, i, calls[:i], trajectory)
                row = {"tool": tool, "arg": arg, "expectation": expectation, "call_index": i,
                       "calls": scope, "status": status}
                if reason:
                    row["reason"] = reason
                rows.append(row)
            per_call.append(rows)
        if scope == "any":
            # Some call meeting every expectation passes; else one with no fail shows what was
            # unscorable; else every call failed somewhere: show them all.
            chosen = (next((r for r in per_call if all(x["status"] == PASS for x in r)), None)
                      or next((r for r in per_call if all(x["status"] != FAIL for x in r)), None))
            checks.extend(chosen if chosen is not None else [x for r in per_call for x in r])
        else:
            checks.extend(x for r in per_call for x in r)
    verdict = fold_checks(checks)
    unscorable = sum(1 for c in checks if c["status"] == UNSCORABLE)
    out: dict[str, Any] = {"verdict": verdict, "checks": checks, "unscorable": unscorable,
                           "partially_unscored": verdict == PASS and unscorable > 0}
    if verdict != PASS and verdict != FAIL:
        out["reason"] = "every argument check was unscorable: " + "; ".join(
            sorted({c.get("reason", "") for c in checks if c["status"] == UNSCORABLE}))
    return out
