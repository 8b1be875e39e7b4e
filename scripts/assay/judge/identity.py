"""The judge's identity: what makes two judge verdicts the same judge's (provider, model or command,
the judge prompt's version, and the ensemble when one is configured). Where the judge is served
(base_url), its timeouts, concurrency and token budget are not part of it.

Used by the suite version (a judged case's `case_sha256`, `assay.suite.version`).
"""

from __future__ import annotations

from typing import Any, Mapping

IDENTITY_KEYS = ("provider", "model", "command")


def judge_identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """{provider, model, command, prompt_version} of a judge config (as written, `${VAR}` unresolved);
    an ensemble: {judges: [{provider, model, command}, ...], aggregate, prompt_version}."""
    from .prompt import PROMPT_VERSION
    if isinstance(config.get("judges"), list):
        out: dict[str, Any] = {"judges": [{k: m[k] for k in IDENTITY_KEYS if isinstance(m, Mapping) and m.get(k) is not None}
                                          for m in config["judges"]], "aggregate": config.get("aggregate")}
    else:
        out = {k: config[k] for k in IDENTITY_KEYS if config.get(k) is not None}
    out["prompt_version"] = PROMPT_VERSION
    return out
