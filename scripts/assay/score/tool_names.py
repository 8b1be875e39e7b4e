"""The adapter's tool vocabulary against what the app called (wave 2 §1, no silent green).

A forbidden-tool list is only as good as its names: an app that ships `approve_payout` as
`approve_claim_payout` passes `forbidden_tools: [approve_payout]` forever. When the adapter
declares a `tools` list, a called tool outside it is named (`undeclared_tools` on the record),
and a tool check that passed on such a trace is not a pass: it becomes `unscored` (a check that
never ran), so a gating case closes the gate. A failed check stays failed (it already says no).
With no `tools` list there is no vocabulary to hold the trace to; the linter says so
(tools_not_declared). Pure functions; one definition, imported by the linter and the runner.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.vocab import PASS, UNSCORED

# Layers whose verdict depends on the tool names in the trace.
TOOL_CHECK_LAYERS = ("trajectory", "tool_selection", "authz")


def declared_tools(adapter: Mapping[str, Any] | None) -> list[str]:
    """The tool names the adapter's `tools` list declares ([] when it declares none)."""
    tools = (adapter or {}).get("tools")
    if not isinstance(tools, list):
        return []
    return [t["name"] for t in tools if isinstance(t, Mapping) and isinstance(t.get("name"), str)]


def undeclared_calls(trajectory: Mapping[str, Any] | None, declared: frozenset[str] | set[str]) -> list[str]:
    """Sorted names of called tools the adapter does not declare ([] with no declared list)."""
    if not declared or not isinstance(trajectory, Mapping):
        return []
    calls = trajectory.get("tool_calls") if isinstance(trajectory.get("tool_calls"), list) else []
    return sorted({str(c.get("name")) for c in calls
                   if isinstance(c, Mapping) and c.get("name") and c.get("name") not in declared})


def checks_tool_names(layer: str, expect: Mapping[str, Any]) -> bool:
    """Whether this layer's verdict for this expect rests on tool names."""
    if layer == "authz":
        authz = expect.get("authz") if isinstance(expect.get("authz"), Mapping) else {}
        return bool(authz.get("forbidden_tools"))
    return layer in TOOL_CHECK_LAYERS


def undeclared_reason(names: list[str]) -> str:
    return (f"the trace holds tool(s) the adapter's tools list does not declare: {', '.join(names)} (a renamed "
            "tool defeats a forbidden list, so this pass is not one); declare it in adapter.yaml tools, and "
            "forbid it where it should be")


def hold_to_declared(layers: dict[str, Any], expect: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """The layers with every passing tool check over an undeclared tool made `unscored`; each tool
    check layer that applies carries `undeclared_tools`."""
    if not names:
        return layers
    out = dict(layers)
    for layer in TOOL_CHECK_LAYERS:
        entry = out.get(layer)
        if not isinstance(entry, dict) or not checks_tool_names(layer, expect):
            continue
        if entry.get("verdict") == PASS:
            out[layer] = dict(entry, verdict=UNSCORED, reason=undeclared_reason(names), undeclared_tools=names)
        elif entry.get("verdict") not in ("n/a", "unscorable"):
            out[layer] = dict(entry, undeclared_tools=names)
    return out
