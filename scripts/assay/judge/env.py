"""A `command` judge's environment: an allowlist, like a cli app's (runner contract, "The judge
config"), and which of its values are secrets.

The judge command is given the plain variables the runner has (`secrets.PLAIN_ENV`: PATH, HOME,
LANG, ...), the variables judge.yaml's `env_allowlist` names, and the `${VAR}`s the judge config
references; nothing else of the runner's environment (an API key it happens to hold) leaks in.
Every allowlisted value but the plain ones is registered as a secret: a key passed by name,
never written as `${VAR}`, is still a key.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ..core import secrets


def allowlist(plan: Mapping[str, Any]) -> list[str]:
    block = plan.get("judge")
    if not isinstance(block, dict) or not block.get("enabled"):
        return []
    from ..judge.config import members
    out: list[str] = []
    for cfg in members(dict(block.get("config") or {})):
        names = cfg.get("env_allowlist") if cfg.get("provider") == "command" else None
        out += [n for n in names or [] if isinstance(n, str) and n not in out]
    return out


def command_env(plan: Mapping[str, Any], refs: Iterable[str], env: Mapping[str, str],
                environ: Mapping[str, str]) -> dict[str, str]:
    """The command judge's whole environment. `refs`: the `${VAR}`s its config names (resolved in `env`)."""
    out = {n: environ[n] for n in sorted(secrets.PLAIN_ENV) if n in environ}
    out.update({n: environ[n] for n in allowlist(plan) if n in environ})
    out.update({n: env[n] for n in sorted(refs) if n in env})
    return out


def judge_allowlisted_secrets(plan: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """The allowlisted variables a command judge is given whose values are secrets (all but the plain ones)."""
    return {n: environ[n] for n in allowlist(plan) if n not in secrets.PLAIN_ENV and environ.get(n)}
