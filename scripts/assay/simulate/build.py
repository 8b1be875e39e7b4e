"""The run's simulator from the plan (pre-flight: exit 3 on a simulator configured wrong), and the
variables it needs resolved. Built only when the plan enables one and a selected case is simulated."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..core import secrets
from ..core.errors import AssayError
from ..judge import config as judge_config
from ..judge.env import allowlisted_unset, command_env, env_names, judge_allowlisted_secrets, say_allowlisted_unset
from . import config as sim_config
from .scenario import any_simulated

if TYPE_CHECKING:
    from .runtime import SimulatorRuntime

SOURCE = "plan simulator.config (simulator/simulator.yaml)"
PER_SHARD = ("spent", "probe")   # what each shard's manifest may hold of its own


def needed(plan: Mapping[str, Any]) -> bool:
    block = plan.get("simulator")
    return (isinstance(block, dict) and bool(block.get("enabled"))
            and any_simulated(plan.get("cases")))


def simulator_env_names(plan: Mapping[str, Any]) -> set[str]:
    return env_names(plan, "simulator") if needed(plan) else set()


def simulator_allowlisted_secrets(plan: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    return judge_allowlisted_secrets(plan, environ, "simulator") if needed(plan) else {}


def build_simulator(plan: Mapping[str, Any], env: Mapping[str, str], state: Path, execution: Mapping[str, Any],
                    environ: Mapping[str, str] | None = None, probe: bool = True) -> SimulatorRuntime | None:
    """The run's simulator, or None. An anthropic / openai one is probed first, as the judge is (exit 3
    naming simulator/simulator.yaml, the URL, the status, the key's variable and the fix)."""
    if not needed(plan):
        return None
    from ..judge import probe as judge_probe   # here: a run without a simulated user never loads the simulator
    from .runtime import SimulatorRuntime
    cfg = sim_config.effective(plan["simulator"]["config"])
    resolved = secrets.expand_deep(cfg, env)
    judge_config.check_resolved(resolved, SOURCE)
    judge_config.check_command(resolved, state, source=SOURCE, who=judge_probe.SIMULATOR.name)
    child = (command_env(plan, simulator_env_names(plan), env, os.environ if environ is None else environ,
                         "simulator") if cfg["provider"] == "command" else None)
    runtime = SimulatorRuntime(config=resolved, recorded=sim_config.manifest_view(cfg),
                               identity=sim_config.identity(cfg), state=state, execution=execution, child_env=child,
                               key_variable=judge_probe.key_variable(cfg))
    runtime.probe = (judge_probe.probe_config(resolved, runtime.key_variable, judge_probe.SIMULATOR) if probe
                     else {"ok": None, "reason": "replay: not probed (a recorded user turn answers; a miss is a "
                                                 "replay miss)"})
    if probe and child is not None:
        unset = allowlisted_unset(plan, os.environ if environ is None else environ, "simulator")
        say_allowlisted_unset(unset, judge_probe.SIMULATOR.file, judge_probe.SIMULATOR.name)
        if unset:
            runtime.probe["allowlisted_unset"] = unset
    return runtime


def simulator_manifest(plan: Mapping[str, Any], runtime: SimulatorRuntime | None) -> dict[str, Any] | None:
    """The manifest's `simulator` block: None when no case is simulated."""
    if runtime is not None:
        return runtime.manifest()
    if not any_simulated(plan.get("cases")):
        return None
    block = plan.get("simulator") if isinstance(plan.get("simulator"), dict) else {}
    return {"enabled": False, "reason": block.get("reason") or "no simulator configured: add simulator/simulator.yaml"}


def merged_simulator_block(blocks: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """A sharded run's `simulator` block from its shards' (name, block), for the shards that held a
    simulated case: they must have met the same simulator; what each spent is summed."""
    if not blocks:
        return None
    first_name, first = blocks[0]
    for name, block in blocks[1:]:
        if {k: v for k, v in block.items() if k not in PER_SHARD} != {k: v for k, v in first.items()
                                                                       if k not in PER_SHARD}:
            raise AssayError(f"{name} and {first_name} ran with different 'simulator' in their manifests: the shards "
                             "of one run must meet the same simulator; re-run the odd shard", 2, key="simulator")
    merged = dict(first)
    spent = [b["spent"] for _, b in blocks if isinstance(b.get("spent"), dict)]
    if spent:
        merged["spent"] = {k: sum(int(d.get(k) or 0) for d in spent) for k in sorted({k for d in spent for k in d})}
    return merged
