"""The simulator config `<state>/simulator/simulator.yaml` (schema `simulator.schema.json`).

The judge's providers, keys and checks (`assay.judge.config`), with the simulator's own
defaults, concurrency and budget. `${VAR}` stays unresolved here; the runner resolves it at
pre-flight as it does the judge's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..judge import config as judge_config

SIMULATOR_CONFIG = "simulator/simulator.yaml"
DEFAULTS: dict[str, Any] = dict(judge_config.DEFAULTS, max_tokens=512)
IDENTITY_KEYS = ("provider", "model", "command", "temperature")


def load_simulator_config(state: Path) -> dict[str, Any] | None:
    """simulator.yaml validated, or None when the file is absent."""
    return judge_config.load_model_config(state, SIMULATOR_CONFIG, "simulator")


def effective(config: dict[str, Any]) -> dict[str, Any]:
    return judge_config.effective(config, DEFAULTS)


def identity(config: dict[str, Any]) -> dict[str, Any]:
    """What makes two simulated users the same user: provider, model or command, temperature and
    the simulator prompt's version (not where it is served, its timeouts or its budget)."""
    from .prompt import PROMPT_VERSION   # the prompt's module (dataclasses): not for every suite's conversion
    out = {k: config[k] for k in IDENTITY_KEYS if config.get(k) is not None}
    out["prompt_version"] = PROMPT_VERSION
    return out


def manifest_view(config: dict[str, Any]) -> dict[str, Any]:
    """What the manifest records: no key, no header values, `${VAR}` unresolved."""
    from .prompt import PROMPT_VERSION
    return dict(judge_config.manifest_view(config), temperature=config.get("temperature"),
                budget=config.get("budget"), prompt_version=PROMPT_VERSION)
