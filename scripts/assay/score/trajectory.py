"""The `trajectory` layer: did the agent call the tools the case expects (`expect.tools`)?

`expect.tools` keys (each list non-empty, of tool names):
- `subset` (the default mode): every listed tool was called; duplicates count
  (`[a, a]` needs two calls of `a`).
- `order` with `order_mode`: `in_order` (default; a subsequence of the calls), `exact`
  (the call list, exactly) or `any_order` (the same multiset). Given with `subset`,
  `order` wins and a `warning` says so.
- `forbidden`: any listed tool that was called fails the layer (a tool name, or a permission-style
  rule `Bash(rm -rf *)` read as Claude Code reads it: score.tool_rule).
Errored calls are always reported; they fail the layer only with `fail_on_errored_calls`.
`precision`/`recall` are over multisets (precision null with no calls, recall null with
no expected list). A malformed block raises ScorerInputError.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .base import FAIL, PASS, ScorerInputError
from .tool_rule import rule_matches

ORDER_MODES = ("in_order", "exact", "any_order")
KNOWN_KEYS = ("subset", "order", "order_mode", "forbidden")


def _names(tools: dict, key: str) -> list[str] | None:
    if key not in tools:
        return None
    value = tools[key]
    if not isinstance(value, list) or not value:
        raise ScorerInputError(f"expect.tools.{key} must be a non-empty list of tool names, got {value!r}")
    for name in value:
        if not isinstance(name, str) or not name:
            raise ScorerInputError(f"expect.tools.{key} entries must be non-empty strings, got {name!r}")
    return value


def _is_subsequence(needle: list[str], hay: list[str]) -> bool:
    it = iter(hay)
    return all(any(n == h for h in it) for n in needle)


def tool_names(trajectory: dict | None) -> list[str]:
    """Tool names in call order (the normalized trace orders them by start time)."""
    return [c.get("name") for c in (trajectory or {}).get("tool_calls") or [] if isinstance(c, dict)]


def score_trajectory(trajectory: dict, expect: dict, *, fail_on_errored_calls: bool = False) -> dict:
    """Score `expect.tools` against the trajectory's tool calls; returns the layer dict."""
    tools = (expect or {}).get("tools")
    if not isinstance(tools, dict) or not tools:
        raise ScorerInputError(f"expect.tools must be a non-empty mapping, got {tools!r}")
    unknown = sorted(set(tools) - set(KNOWN_KEYS))
    if unknown:
        raise ScorerInputError(f"expect.tools has unknown key(s) {unknown}; known: {list(KNOWN_KEYS)}")
    subset, order, forbidden = _names(tools, "subset"), _names(tools, "order"), _names(tools, "forbidden")
    order_mode = tools.get("order_mode")
    if order_mode is not None and order is None:
        raise ScorerInputError("expect.tools.order_mode is given without expect.tools.order")
    if order is not None:
        order_mode = order_mode or "in_order"
        if order_mode not in ORDER_MODES:
            raise ScorerInputError(f"expect.tools.order_mode {order_mode!r} is unknown; use one of {list(ORDER_MODES)}")
    if subset is None and order is None and forbidden is None:
        raise ScorerInputError("expect.tools asserts nothing: give subset, order or forbidden")

    called = tool_names(trajectory)
    calls = [c for c in (trajectory or {}).get("tool_calls") or [] if isinstance(c, dict)]
    cwd = (trajectory or {}).get("cwd") if isinstance((trajectory or {}).get("cwd"), str) else None
    out: dict[str, Any] = {}
    failures: list[str] = []
    if order is not None:
        mode, expected = order_mode, order
        if subset is not None:
            out["warning"] = "both expect.tools.subset and expect.tools.order are given; order wins"
        ok = {"in_order": lambda: _is_subsequence(order, called),
              "exact": lambda: called == order,
              "any_order": lambda: Counter(called) == Counter(order)}[mode]()
        if not ok:
            failures.append(f"calls {called} do not match {mode} {order}")
    elif subset is not None:
        mode, expected = "subset", subset
        missing = Counter(subset) - Counter(called)
        if missing:
            failures.append(f"expected tool call(s) missing: {sorted(missing.elements())}")
    else:
        mode, expected = "forbidden", None

    violations = []
    for name in dict.fromkeys(forbidden or []):
        n = sum(1 for c in calls if rule_matches(name, c, cwd))
        if n:
            violations.append({"tool": name, "calls": n})
            failures.append(f"forbidden tool {name!r} was called {n} time(s)")
    errored = [{"index": i, "tool": c.get("name"), "error": c.get("error")}
               for i, c in enumerate(calls) if c.get("error")]
    if errored and fail_on_errored_calls:
        failures.append(f"{len(errored)} tool call(s) errored (fail_on_errored_calls)")

    precision = recall = None
    if expected is not None:
        overlap = sum((Counter(expected) & Counter(called)).values())
        precision = round(overlap / len(called), 4) if called else None
        recall = round(overlap / len(expected), 4)
    missing_list = sorted((Counter(expected or []) - Counter(called)).elements())
    unexpected = sorted((Counter(called) - Counter(expected or [])).elements()) if expected is not None else []
    out.update({
        "verdict": FAIL if failures else PASS, "mode": mode, "forbidden_violations": violations,
        "errored_calls": errored, "fail_on_errored_calls": bool(fail_on_errored_calls),
        "precision": precision, "recall": recall, "failures": failures,
        "detail": {"expected": expected, "called": called, "missing": missing_list, "unexpected": unexpected},
    })
    return out
