"""A `command` judge's environment: an allowlist, like a cli app's (runner contract, "The judge
config"), and which of its values are secrets.

The judge command is given the plain variables the runner has (`secrets.PLAIN_ENV`: PATH, HOME,
LANG, ...), the variables judge.yaml's `env_allowlist` names, and the `${VAR}`s the judge config
references; nothing else of the runner's environment (an API key it happens to hold) leaks in.
Every allowlisted value but the plain ones is registered as a secret: a key passed by name,
never written as `${VAR}`, is still a key.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Mapping

from ..core import secrets


def _enabled(plan: Mapping[str, Any], block: str) -> Mapping[str, Any] | None:
    """The plan's judge (or `simulator`: the same providers, the same rules) config when enabled."""
    doc = plan.get(block)
    if not isinstance(doc, dict) or not doc.get("enabled"):
        return None
    return doc.get("config") or {}


def allowlist(plan: Mapping[str, Any], block: str = "judge") -> list[str]:
    cfg = _enabled(plan, block)
    if cfg is None:
        return []
    from .config import members
    out: list[str] = []
    for member in members(dict(cfg)):   # one judge, or each judge of an ensemble
        names = member.get("env_allowlist") if member.get("provider") == "command" else None
        out += [n for n in names or [] if isinstance(n, str) and n not in out]
    return out


def allowlisted_unset(plan: Mapping[str, Any], environ: Mapping[str, str], block: str = "judge") -> list[str]:
    """The `env_allowlist` names the runner's environment does not set: the command runs without them,
    so a typo (`ANTHROPIC_API_KY`) shows up only as a failing command on every call. Pre-flight names
    them (`say_allowlisted_unset`) and the manifest's probe block lists them (`allowlisted_unset`), as
    a cli app's are (`health_check.allowlisted_unset`)."""
    return sorted(n for n in allowlist(plan, block) if n not in environ)


def say_allowlisted_unset(names: list[str], source: str, who: str) -> None:
    if names:
        sys.stderr.write(f"assay: {source} env_allowlist names variable(s) this environment does not set, so the "
                         f"{who} command will not have them: {', '.join(names)}\n")


def env_names(plan: Mapping[str, Any], block: str = "judge") -> set[str]:
    """The `${VAR}`s the enabled judge's (simulator's) config references: always required."""
    cfg = _enabled(plan, block)
    return set() if cfg is None else secrets.env_refs(cfg)


def address_vars(plan: Mapping[str, Any], env: Mapping[str, str], block: str = "judge") -> set[str]:
    """Variables that hold only the enabled judge's (simulator's) address: named in a judge's
    `base_url` and nowhere else in its config, with a value that carries no credentials (no `user@`,
    no query or fragment). Not secrets, as the app's base URL is not (`secrets.address_vars`): the
    probe's and an outage's errors show the URL they posted to."""
    cfg = _enabled(plan, block)
    if cfg is None:
        return set()
    from .config import members
    named: set[str] = set()
    elsewhere = secrets.env_refs({k: v for k, v in cfg.items() if k not in ("judges", "base_url")})
    for member in members(dict(cfg)):
        if isinstance(member.get("base_url"), str):
            named |= secrets.env_refs(member["base_url"])
        elsewhere |= secrets.env_refs({k: v for k, v in member.items() if k != "base_url"})
    return {n for n in named - elsewhere if n in env and not any(ch in env[n] for ch in "@?#")}


def command_env(plan: Mapping[str, Any], refs: Iterable[str], env: Mapping[str, str],
                environ: Mapping[str, str], block: str = "judge") -> dict[str, str]:
    """The command judge's (simulator's) whole environment. `refs`: the `${VAR}`s its config names
    (resolved in `env`)."""
    out = {n: environ[n] for n in sorted(secrets.PLAIN_ENV) if n in environ}
    out.update({n: environ[n] for n in allowlist(plan, block) if n in environ})
    out.update({n: env[n] for n in sorted(refs) if n in env})
    return out


def judge_allowlisted_secrets(plan: Mapping[str, Any], environ: Mapping[str, str],
                              block: str = "judge") -> dict[str, str]:
    """The allowlisted variables a command judge (simulator) is given whose values are secrets (all but
    the plain ones)."""
    return {n: environ[n] for n in allowlist(plan, block) if n not in secrets.PLAIN_ENV and environ.get(n)}
