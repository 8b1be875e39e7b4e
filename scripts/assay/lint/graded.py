"""Which layers a case's `expect` grades: one definition, used by the linter and make_plan.

A value counts only when it has the right type and is not null, false, 0, {}, [] or "".
Only layers the runner actually scores count toward "graded": http (liveness only),
rules (never scored) and state (reserved) are listed but can never make a case gradable
(case-format §1 "Gradedness"). judged counts: the run's judge scores it (a provisional,
uncalibrated rubric leaves such a case unscored, never pass).
"""

from __future__ import annotations

from typing import Any

from ..core.vocab import matrix_enabled

# Layers a runner verdict can come from, in report order.
SCORED_LAYERS: tuple[str, ...] = ("routing", "trajectory", "tool_selection", "answer", "execution", "authz",
                                  "skills", "files", "check", "permissions", "judged")
UNSCORED_LAYERS: tuple[str, ...] = ("http", "rules", "state")


def is_given(value: Any) -> bool:
    """True unless the value is null, false, 0, {}, [] or ""."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return False
    if isinstance(value, (str, list, dict)) and len(value) == 0:
        return False
    return True


def _nonempty_list(value: Any) -> bool:
    return isinstance(value, list) and len(value) > 0


def layers_in_expect(expect: Any) -> list[str]:
    """Every layer (report-row name) this expect asserts, scored or not, in LAYER_ORDER-ish order."""
    if not isinstance(expect, dict):
        return []
    out: list[str] = []
    if isinstance(expect.get("http"), dict) and is_given(expect["http"]):
        out.append("http")
    route = expect.get("route")
    if (isinstance(route, str) and route) or _nonempty_list(expect.get("route_acceptable")):
        out.append("routing")
    tools = expect.get("tools")
    if isinstance(tools, dict) and any(_nonempty_list(tools.get(k)) for k in ("subset", "order", "forbidden")):
        out.append("trajectory")
    args = expect.get("args")
    if isinstance(args, dict) and any(isinstance(v, dict) and set(v) - {"calls"} for v in args.values()):
        out.append("tool_selection")
    answer = expect.get("answer")
    fmt = expect.get("format")
    answer_checks = isinstance(answer, dict) and any(
        _nonempty_list(answer.get(k)) for k in ("must_contain", "must_not_contain"))
    format_check = isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict) and is_given(fmt["json_schema"])
    if answer_checks or format_check:
        out.append("answer")
    result = expect.get("result")
    if isinstance(result, dict) and (("scalar" in result) != ("rows" in result)):
        out.append("execution")
    authz = expect.get("authz")
    if isinstance(authz, dict) and (
        any(_nonempty_list(authz.get(k)) for k in ("allowed_record_ids", "forbidden_record_ids", "forbidden_tools"))
        or authz.get("expect_refusal") is True
    ):
        out.append("authz")
    if isinstance(answer, dict) and _nonempty_list(answer.get("rules")):
        out.append("rules")
    if isinstance(answer, dict) and _nonempty_list(answer.get("rubric")):
        out.append("judged")
    if "state" in expect and is_given(expect.get("state")):
        out.append("state")
    for layer in ("skills", "files", "check"):
        if isinstance(expect.get(layer), dict) and is_given(expect[layer]):
            out.append(layer)
    perms = expect.get("permissions")
    if isinstance(perms, dict) and isinstance(perms.get("max_denied"), int) and not isinstance(perms["max_denied"], bool):
        out.append("permissions")
    return out


def grading_expect(case: dict[str, Any]) -> Any:
    """The expect that decides gradedness: top-level expect, with input.every_turn merged for a conversation."""
    expect = case.get("expect")
    inp = case.get("input") if isinstance(case.get("input"), dict) else {}
    every = inp.get("every_turn")
    if isinstance(inp.get("turns"), list) and isinstance(every, dict):
        merged = dict(every)
        if isinstance(expect, dict):
            merged.update(expect)
        return merged
    return expect


def scored_layers(case: dict[str, Any]) -> list[str]:
    """Layers of this case that a runner verdict can come from (before the capability matrix)."""
    return [layer for layer in layers_in_expect(grading_expect(case)) if layer in SCORED_LAYERS]


def enabled_scored_layers(case: dict[str, Any], matrix: dict[str, Any] | None) -> list[str]:
    """scored_layers filtered by the capability matrix (a missing entry counts as enabled)."""
    return [layer for layer in scored_layers(case) if matrix_enabled(matrix or {}, layer)[0]]
