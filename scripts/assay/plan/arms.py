"""Arms: named configurations of one agent app (`arms:` in adapter.yaml), so that the same suite
run under two of them measures what a change gives (a skill, a plugin, an MCP server, a prompt).

    arms:
      with-skill: {plugin_dirs: [../my-plugin]}
      without: {plugin_dirs: []}

An arm overrides keys of `invocation.agent` (any key of that block). `make_plan.py --arm NAME`
plans the run under it and records `manifest_extra.arm` (the name and its overrides);
`compare_runs.py` between two arms' runs reads as lift (assay.compare.lift)."""

from __future__ import annotations

import copy
from typing import Any

from ..core.errors import AssayError
from ..core.suggest import did_you_mean


def apply_arm(adapter: dict[str, Any], name: str | None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the adapter under arm `name`, the record for manifest_extra.arm); no name: unchanged, None."""
    if name is None:
        return adapter, None
    arms = adapter.get("arms")
    if not isinstance(arms, dict) or not arms:
        raise AssayError(f"--arm {name}: the adapter declares no arms; add `arms: {{{name}: {{plugin_dirs: [...]}}}}` "
                         "to adapter.yaml (each arm overrides keys of invocation.agent)", 2, key="arms")
    if name not in arms:
        raise AssayError(f"--arm {name} is not an arm of the adapter{did_you_mean(name, sorted(arms))} (arms: "
                         f"{', '.join(sorted(arms))})", 2, key="arms")
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), dict) else {}
    if inv.get("mode") != "agent":
        raise AssayError(f"--arm {name}: arms apply to invocation.mode agent (this adapter's mode is "
                         f"{inv.get('mode')!r})", 2, key="invocation.mode")
    overrides = arms[name]
    if not isinstance(overrides, dict):
        raise AssayError(f"arms.{name} must be a mapping of invocation.agent keys to values", 2, key=f"arms.{name}")
    out = copy.deepcopy(adapter)
    out["invocation"]["agent"] = {**(out["invocation"].get("agent") or {}), **copy.deepcopy(overrides)}
    return out, {"name": name, "overrides": copy.deepcopy(overrides)}


def same_arms(adapter: dict[str, Any], name: str) -> list[str]:
    """The other arms whose invocation.agent (apply_arm's) is exactly arm `name`'s: a comparison between
    them measures nothing (an arm `without: {}` beside `with-server: {mcp_config: ...}` when the base
    block already sets mcp_config runs the server in both)."""
    def agent(arm: str) -> Any:
        try:
            return apply_arm(adapter, arm)[0]["invocation"].get("agent")
        except AssayError:   # a malformed arm: said when it is planned
            return None
    mine = agent(name)
    return sorted(other for other in adapter.get("arms") or {} if other != name and agent(other) == mine)
