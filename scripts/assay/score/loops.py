"""The `loops` layer: did the agent spin? Applies whenever a trace was collected.

Findings (any finding fails the layer):
- `identical-repeat-loop`: one tool called with the same arguments (SHA-256 of their
  canonical JSON) at least `repeat_threshold` times.
- `possible-flailing`: one tool called with at least 2 x `repeat_threshold` distinct
  argument sets.
- `call-budget-exceeded`: more than `call_budget` tool calls in total.
Calls whose arguments were not captured are counted for the budget but cannot prove an
identical repeat or flailing; `uncaptured_argument_calls` says how many there were.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from assay.core.jsonio import sha256_json

from .base import FAIL, PASS, ScorerInputError


def _args_hash(call: dict) -> str | None:
    if not call.get("arguments_captured", "arguments" in call):
        return None
    try:
        return sha256_json(call.get("arguments"))
    except (TypeError, ValueError):
        return sha256_json(repr(call.get("arguments")))


def score_loops(trajectory: dict, *, repeat_threshold: int = 3, call_budget: int = 15) -> dict:
    """Loop findings over the trajectory's tool calls; returns the layer dict."""
    if isinstance(repeat_threshold, bool) or not isinstance(repeat_threshold, int) or repeat_threshold < 2:
        raise ScorerInputError(f"repeat_threshold must be an integer >= 2, got {repeat_threshold!r}")
    if isinstance(call_budget, bool) or not isinstance(call_budget, int) or call_budget < 1:
        raise ScorerInputError(f"call_budget must be an integer >= 1, got {call_budget!r}")
    calls = [c for c in (trajectory or {}).get("tool_calls") or [] if isinstance(c, dict)]
    per_tool = Counter(c.get("name") for c in calls)
    same_args: Counter = Counter()
    distinct: dict[Any, set] = defaultdict(set)
    uncaptured = 0
    for c in calls:
        h = _args_hash(c)
        if h is None:
            uncaptured += 1
            continue
        same_args[(c.get("name"), h)] += 1
        distinct[c.get("name")].add(h)

    findings: list[dict] = []
    identical = [{"tool": tool, "calls": n, "arguments_sha256": h}
                 for (tool, h), n in sorted(same_args.items(), key=lambda kv: (str(kv[0][0]), kv[0][1]))
                 if n >= repeat_threshold]
    for rep in identical:
        findings.append({"kind": "identical-repeat-loop", **rep,
                         "message": f"{rep['tool']} called {rep['calls']} times with identical arguments "
                                    f"(threshold {repeat_threshold})"})
    for tool in sorted(distinct, key=str):
        n = len(distinct[tool])
        if n >= 2 * repeat_threshold:
            findings.append({"kind": "possible-flailing", "tool": tool, "distinct_argument_sets": n,
                             "message": f"{tool} called with {n} distinct argument sets "
                                        f"(threshold {2 * repeat_threshold})"})
    if len(calls) > call_budget:
        findings.append({"kind": "call-budget-exceeded", "calls": len(calls), "budget": call_budget,
                         "message": f"{len(calls)} tool calls exceed the budget of {call_budget}"})
    return {
        "verdict": FAIL if findings else PASS, "total_calls": len(calls), "findings": findings,
        "identical_repeats": identical,
        "heavy_tools": {str(t): n for t, n in sorted(per_tool.items(), key=lambda kv: str(kv[0])) if n >= repeat_threshold},
        "repeat_threshold": repeat_threshold, "call_budget": call_budget,
        "uncaptured_argument_calls": uncaptured,
    }
