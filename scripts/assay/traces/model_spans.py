"""Spans that look like a model call and are read as none: their calls' cost is unknown. Pure.

What only a model call writes, in any convention: its token usage, or its provider with its model. A span
that carries it and is read as no agent, model call or tool call (a chat span from before GenAI semantic
conventions 1.27 with gen_ai.system and no gen_ai.operation.name, a framework naming its span otherwise, an
embeddings call) is a model call the trajectory lacks: its cost is unknown (never 0). A span with none of it
(a cache lookup, an HTTP span, a workflow span) is no model call. Agent and tool operations carry a model
name too (an agent's configured model): never model-like.
"""

from __future__ import annotations

from typing import Any

from .conventions import CONVENTIONS

USAGE_KEYS = tuple(dict.fromkeys(k for c in CONVENTIONS.values() for k in (*c.input_tokens, *c.output_tokens)))
MODEL_KEYS = tuple(dict.fromkeys(k for c in CONVENTIONS.values() for k in c.model))
_PROVIDER_KEYS = ("gen_ai.system", "gen_ai.provider.name", "llm.provider", "llm.system")
_NOT_MODEL_OPS = ("invoke_agent", "create_agent", "execute_tool", "agent_handoff", "invoke_workflow")


def model_like(attrs: dict) -> str | None:
    """Why a span not read as a model call looks like one (its usage key, or its provider and model keys);
    None when it does not (the module docstring)."""
    if attrs.get("gen_ai.operation.name") in _NOT_MODEL_OPS:
        return None
    usage = next((k for k in USAGE_KEYS if isinstance(attrs.get(k), int) and not isinstance(attrs.get(k), bool)), None)
    if usage:
        return f"token usage ({usage})"
    provider = next((k for k in _PROVIDER_KEYS if attrs.get(k) not in (None, "")), None)
    model = next((k for k in MODEL_KEYS if attrs.get(k) not in (None, "")), None)
    return f"a provider and a model ({provider}, {model})" if provider and model else None


def unread_model_spans(spans: list[dict], conv: Any, kind: dict[int, Any], handoff_of: dict[int, Any]) -> list[dict]:
    """[{span, span_id, why}] of the spans (normalize_flat's) that look like a model call and that the convention
    `conv` reads as nothing: no agent, model or tool call (`kind`, by id), no handoff, and none it read as one and
    then dropped on purpose (a framework's wrapper of a nested model call, a span that sends no request)."""
    return [{"span": s["name"], "span_id": s["span_id"], "why": why} for s in spans
            if kind[id(s)] is None and handoff_of[id(s)] is None and conv.kind_of(s["attributes"]) is None
            and (why := model_like(s["attributes"]))]
