"""Which model answered a judge call, against the judge configured (docs/runner-contract.md, The
judge, "The model that answered"). Pure; the one definition of the rule.

Every Anthropic Messages and OpenAI Chat Completions reply names the model that served it (`model`).
A calibration measured the configured judge; a reply served by another model is another judge. A
provider that answers an undated name with a dated snapshot of it is the same judge: asking
`gpt-4o` is answered by `gpt-4o-2024-08-06`, `claude-3-5-sonnet-latest` by
`claude-3-5-sonnet-20241022`, `gpt-4` by `gpt-4-0613`. A deployment name or a proxy alias that
serves a model under another name is declared in judge.yaml `served_model`.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.secrets import REDACTED
from ..core.patterns import lazy_pattern

# a dated snapshot's suffix: -2024-08-06 (OpenAI), -20241022 (Anthropic), -0613 / -2411 (older OpenAI, Mistral)
DATE_SUFFIX = lazy_pattern(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|\d{4})")
ALIAS_SUFFIXES = ("-latest", "-0")   # a name that follows the newest snapshot (Anthropic's aliases)
OTHER = "served_other_model"      # the call record's mark: served by a model that is not the judge's
MAX_NAME = 200


def expected_model(cfg: Mapping[str, Any]) -> str | None:
    """The model a reply should name: judge.yaml `served_model` when set (a deployment name, a proxy
    alias), else `model`; None for a command judge."""
    value = cfg.get("served_model") or cfg.get("model")
    return str(value) if value else None


def same_judge(expected: str, served: str) -> bool:
    """served is expected, or a dated snapshot of it (expected, an alias suffix dropped, then `-` and a
    date): `-latest` (`claude-3-5-sonnet-latest` → `claude-3-5-sonnet-20241022`) or Anthropic's `-0`
    (`claude-sonnet-4-0` → `claude-sonnet-4-20250514`)."""
    if served == expected:
        return True
    bases = {expected} | {expected[:-len(s)] for s in ALIAS_SUFFIXES if expected.endswith(s)}
    return any(served.startswith(base) and DATE_SUFFIX().fullmatch(served[len(base):]) is not None for base in bases)


def served_model_of(body: Any) -> str | None:
    """The reply's `model` (a JSON body of an http provider), or None when it names none."""
    value = body.get("model") if isinstance(body, dict) else None
    return value[:MAX_NAME] if isinstance(value, str) and value else None


def mark(call: dict[str, Any], cfg: Mapping[str, Any], served: str | None = None) -> dict[str, Any]:
    """The call record with OTHER set iff the reply named a model that is not the judge's. `cfg` is the
    RESOLVED judge block and `served` the name the reply gave, before redaction (in memory only): the
    record keeps it redacted when it holds a variable's value (`model: ${JUDGE_MODEL}`). Without
    `served`, the recorded name is compared, unless redaction has hidden it: then the mark made when
    the reply was read stands (a cached call: the cache key binds the resolved judge)."""
    if served is None:
        served = call.get("served_model")
        if isinstance(served, str) and REDACTED in served:
            return call
    call.pop(OTHER, None)
    expected = expected_model(cfg)
    if isinstance(served, str) and expected and not same_judge(expected, served):
        call[OTHER] = True
    return call


def served_of(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The judged layer's keys: `served_models` {model: calls} over every call that named one, and
    `other_model` {models: {model: calls}, calibrated} when some call was served by another model
    (`calibrated`: one of them judged a calibrated rubric version, so its verdict gates)."""
    models: dict[str, int] = {}
    other: dict[str, int] = {}
    calibrated = False
    for res in results:
        nodes = [n for n in res.get("nodes") or [] if isinstance(n, dict)]
        for call in [c for n in nodes for c in n.get("calls") or [] if isinstance(c, dict)]:
            name = call.get("served_model")
            if not isinstance(name, str):
                continue
            models[name] = models.get(name, 0) + 1
            if call.get(OTHER):
                other[name] = other.get(name, 0) + 1
                calibrated = calibrated or not res.get("provisional")
    out: dict[str, Any] = {}
    if models:
        out["served_models"] = dict(sorted(models.items()))
    if other:
        out["other_model"] = {"models": dict(sorted(other.items())), "calibrated": calibrated}
    return out
