"""The verdict cache: a judge call is reused only for the same judge identity (provider, model or
command, prompt version), the same rubric content (rubric_sha256), the same node, and the same
prompt (system + user, which hold the material: user message, answer, tool results, gold)."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Mapping

from .providers import stopped_error

# `where` keys that name the case (in run.log), not what was asked: a verdict is the verdict of
# the material, whichever case carried it.
_CASE_KEYS = ("case_id", "case_index", "index", "holdout", "title")


def judge_request(runtime: Any, system: str, user: str, where: Mapping[str, Any]) -> dict[str, Any]:
    from .binding import rubric_sha256
    from .prompt import PROMPT_VERSION
    from .rubrics import resolve_pin
    slot = {k: v for k, v in where.items() if k not in _CASE_KEYS}
    pin = str(where.get("judge_node") or "").rsplit("/", 1)[0]
    rubric = resolve_pin(pin, runtime.rubrics)[0] if pin else None
    return {"identity": runtime.identity, "prompt_version": PROMPT_VERSION,
            "rubric_sha256": rubric_sha256(rubric) if rubric else None,
            "system_sha256": _sha(system), "material_sha256": _sha(user), "slot": slot}


def judge_through(runtime: Any, system: str, user: str, where: dict,
                  live: Callable[[str, str, dict], tuple]) -> tuple[dict, dict | None, str | None, bool]:
    """`live(system, user, where)` or the cached result of the same call; an outage (infra) is
    never cached, nor is a holdout case's call (sealed: its material never goes into the cache), nor a
    reply that did not stop of itself (cut off at max_tokens, refused, filtered: raising max_tokens
    must ask again), and a cached one of those (written before this rule) is not reused."""
    if where.get("holdout"):
        return live(system, user, where)

    def produce() -> dict:
        call, parsed, err, infra = live(system, user, where)
        return {"call": call, "parsed": parsed, "error": err, "infra": infra}

    value, mark = runtime.cache.through("judge", judge_request(runtime, system, user, where), produce,
                                        case_id=where.get("case_id"), what=str(where.get("judge_node") or ""),
                                        cacheable=lambda v: not v.get("infra") and not stopped_error(v.get("error")))
    call = dict(value["call"])
    if mark is not None:
        call["cache"] = mark
    return call, value.get("parsed"), value.get("error"), bool(value.get("infra"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()
