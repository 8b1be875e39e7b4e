"""The adapter's tool vocabulary against what the app called (wave 2 §1, no silent green).

A forbidden-tool list is only as good as its names: an app that ships `approve_payout` as
`approve_claim_payout` passes `forbidden_tools: [approve_payout]` forever. When the adapter
declares a `tools` list, a called tool outside it is named (`undeclared_tools` on the record),
and a tool check that passed on such a trace is not a pass: it becomes `unscored` (a check that
never ran), so a gating case closes the gate. A failed check stays failed (it already says no).
With no `tools` list there is no vocabulary to hold the trace to; the linter says so
(tools_not_declared).

An agent's transcript brings a vocabulary of its own: the tools its session had (the init
event's `tools`). A tool check naming a tool the session did not have can never fail when it
forbids it (a typo: `mcp__notes__delete` for `mcp__notes__delete_note`), and passes only on a call
the agent could not make when it requires it (the CLI refuses it: "No such tool available"): its
pass is `unscored`, naming the tool and the closest one the session had. An MCP tool of a server
the session was not given (another arm's) is left alone: that arm cannot call it.
Pure functions; one definition, imported by the linter and the runner.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.vocab import PASS, UNSCORED
from .tool_rule import rule_tool

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


def expect_tool_names(expect: Any, prefix: str) -> list[tuple[str, str]]:
    """(where, tool name) for every tool one expect block names: tools.subset/order/forbidden, the
    args keys and authz.forbidden_tools (a permission-style rule, `Bash(rm -rf *)`, as written)."""
    out: list[tuple[str, str]] = []
    if not isinstance(expect, Mapping):
        return out
    tools = expect.get("tools") if isinstance(expect.get("tools"), Mapping) else {}
    for key in ("subset", "order", "forbidden"):
        if isinstance(tools.get(key), list):
            out += [(f"{prefix}.tools.{key}", t) for t in tools[key] if isinstance(t, str)]
    if isinstance(expect.get("args"), Mapping):
        out += [(f"{prefix}.args", t) for t in expect["args"] if isinstance(t, str)]
    authz = expect.get("authz") if isinstance(expect.get("authz"), Mapping) else {}
    if isinstance(authz.get("forbidden_tools"), list):
        out += [(f"{prefix}.authz.forbidden_tools", t) for t in authz["forbidden_tools"] if isinstance(t, str)]
    return out


_LAYER_OF_KEY = {"tools": "trajectory", "args": "tool_selection", "authz": "authz"}


def not_in_session(expect: Mapping[str, Any], trajectory: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """{layer: [where names 'tool' (the session had none such; did you mean ...)]} for the tools the
    case's expect names that the agent's session did not have ({} when the trajectory lists no
    session tools: not an agent transcript)."""
    import difflib
    from ..core.ids import split_mcp
    if not isinstance(trajectory, Mapping):
        return {}
    have = [t for t in trajectory.get("available_tools") or [] if isinstance(t, str)]
    if not have:
        return {}
    bare = {split_mcp(t)[1] for t in have if split_mcp(t)}
    servers = {s.get("name") for s in trajectory.get("mcp_servers") or [] if isinstance(s, Mapping)}
    out: dict[str, list[str]] = {}
    for where, name in expect_tool_names(expect, "expect"):
        tool = rule_tool(name)
        parts = split_mcp(tool)
        if tool in have or tool in bare or (parts and parts[0] not in servers):
            continue
        close = difflib.get_close_matches(tool, have + sorted(bare), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        out.setdefault(_LAYER_OF_KEY[where.split(".")[1]], []).append(f"{where} names {name!r}{hint}")
    return out


def hold_to_session(layers: dict[str, Any], unknown: Mapping[str, list[str]]) -> dict[str, Any]:
    """The layers with each passing tool check that names a tool the agent's session did not have
    made `unscored`, naming it (a forbidden name that cannot be called, a required call refused)."""
    if not unknown:
        return layers
    out = dict(layers)
    for layer, named in unknown.items():
        entry = out.get(layer)
        if isinstance(entry, dict) and entry.get("verdict") == PASS:
            out[layer] = dict(entry, verdict=UNSCORED, reason=(
                f"{'; '.join(named)}: a tool the agent's session did not have (the transcript's init event "
                "lists its tools), so this check cannot fail, or passed on a call the agent could not make; "
                "fix the name"))
    return out


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
