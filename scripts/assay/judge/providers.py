"""Provider wire formats, pure: build the request for one judge call and read the reply.

- anthropic: Messages API, `POST {base_url}/v1/messages` with `x-api-key` and
  `anthropic-version: 2023-06-01`; the verdict is forced through one tool (`tool_choice`
  `{"type": "tool", "name": "record_verdict"}`), whose `input` is the verdict object; usage
  from `usage.input_tokens` / `usage.output_tokens`.
- openai: Chat Completions, `POST {base_url}/chat/completions` (base_url ends in `/v1` as in the
  official SDKs; vLLM, Ollama and proxies speak the same) with `Authorization: Bearer`; the
  verdict is forced with `response_format: {type: json_schema, json_schema: {name, strict,
  schema}}`; the reply is `choices[0].message.content`; usage from `usage.prompt_tokens` /
  `usage.completion_tokens`.
- command: the argv reads the prompt on stdin and prints the verdict JSON on stdout (a
  `claude -p --output-format json` envelope `{"result": "<text>", "usage": {...}}` is unwrapped).

`structured_output: false` drops the tool / response_format and relies on strict parsing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.writer import clip
from .prompt import VERDICT_SCHEMA, VERDICT_TOOL

ANTHROPIC_VERSION = "2023-06-01"
# Why a 2xx reply stopped, when it did not stop of itself: a reply cut off or refused is never read,
# even when what came before the stop parses (a tool input cut after its `verdict` reads as a verdict).
CUT_OFF = "the reply was cut off at the token limit ({field} {value}) before it was complete: raise max_tokens"
STOPPED = {"anthropic": ("stop_reason", {"max_tokens": CUT_OFF, "model_context_window_exceeded": CUT_OFF,
                                         "refusal": "the model refused ({field} {value})"}),
           "openai": ("finish_reason", {"length": CUT_OFF,
                                        "content_filter": "the provider's content filter stopped the reply "
                                                          "({field} {value})"})}


@dataclass(frozen=True)
class ReplyShape:
    """The one object a structured reply holds: the Anthropic tool it is forced through, the OpenAI
    json_schema's name, and the schema (the judge's verdict; the simulator's user turn)."""
    tool: str
    description: str
    schema_name: str
    schema: dict[str, Any]


VERDICT_SHAPE = ReplyShape(VERDICT_TOOL, "Record the verdict on the criterion.", "judge_verdict", VERDICT_SCHEMA)


def build_request(config: dict[str, Any], system: str, user: str,
                  shape: ReplyShape = VERDICT_SHAPE) -> tuple[str, dict[str, str], dict[str, Any]]:
    """(url, headers, JSON body) for an http provider. `config` is resolved (secrets in it)."""
    provider = config["provider"]
    base = str(config["base_url"]).rstrip("/")
    headers = {"content-type": "application/json"}
    headers.update(config.get("headers") or {})
    structured = config.get("structured_output", True)
    if provider == "anthropic":
        if config.get("api_key"):
            headers["x-api-key"] = config["api_key"]
        headers["anthropic-version"] = ANTHROPIC_VERSION
        body: dict[str, Any] = {"model": config["model"], "max_tokens": int(config.get("max_tokens") or 1024),
                                "system": system, "messages": [{"role": "user", "content": user}]}
        if structured:
            body["tools"] = [{"name": shape.tool, "description": shape.description, "input_schema": shape.schema}]
            body["tool_choice"] = {"type": "tool", "name": shape.tool}
        return base + "/v1/messages", headers, body
    if provider == "openai":
        if config.get("api_key"):
            headers["authorization"] = f"Bearer {config['api_key']}"
        body = {"model": config["model"], "max_tokens": int(config.get("max_tokens") or 1024),
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}
        if structured:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": shape.schema_name, "strict": True, "schema": shape.schema}}
        return base + "/chat/completions", headers, body
    raise ValueError(f"not an http provider: {provider}")


def _usage(block: Any, inp: str, out: str) -> dict[str, int] | None:
    if not isinstance(block, dict):
        return None
    i, o = block.get(inp), block.get(out)
    if isinstance(i, int) and isinstance(o, int) and not isinstance(i, bool) and not isinstance(o, bool):
        return {"input_tokens": i, "output_tokens": o}
    return None


def read_reply(provider: str, body: Any, tool: str = VERDICT_TOOL) -> tuple[str, Any, dict[str, int] | None, str | None]:
    """(raw reply text, the value to parse (a verdict; the simulator's turn), usage or None, error or None)
    from a 2xx body; `tool` is the ReplyShape's tool an Anthropic reply carries it in."""
    if provider == "anthropic":
        if not isinstance(body, dict) or not isinstance(body.get("content"), list):
            return _text(body), None, None, "not a Messages API response (no content list)"
        usage = _usage(body.get("usage"), "input_tokens", "output_tokens")
        stopped = _stopped(provider, body.get("stop_reason"))
        if stopped:
            return _text(body), None, usage, stopped
        calls = [b for b in body["content"] if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == tool]
        if len(calls) > 1:   # one verdict per reply, as two fenced blocks are refused: never the first one read
            return _text(body), None, usage, (f"the reply holds {len(calls)} {tool} tool calls; "
                                              "give exactly one")
        if calls:
            return json.dumps(calls[0].get("input"), ensure_ascii=False, sort_keys=True), calls[0].get("input"), usage, None
        text = "".join(b.get("text", "") for b in body["content"] if isinstance(b, dict) and b.get("type") == "text")
        if not text.strip():
            others = [str(b.get("name")) for b in body["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
            return _text(body), None, usage, (f"the reply called tool {others[0]!r}, not {tool}" if others else
                                              f"the reply holds no text and no {tool} tool call "
                                              f"({len(body['content'])} content block(s))")
        return text, text, usage, None
    if provider == "openai":
        try:
            message = body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            return _text(body), None, None, "not a Chat Completions response (no choices[0].message)"
        usage = _usage(body.get("usage"), "prompt_tokens", "completion_tokens")
        stopped = _stopped(provider, body["choices"][0].get("finish_reason") if isinstance(body["choices"][0], dict)
                           else None)
        if stopped:
            return _text(body), None, usage, stopped
        if isinstance(message, dict) and message.get("refusal"):
            return str(message["refusal"]), None, usage, f"the model refused: {clip(message['refusal'], 200)}"
        content = message.get("content") if isinstance(message, dict) else None
        if content is None and isinstance(message, dict) and message.get("tool_calls"):
            return _text(body), None, usage, "the reply called a tool (message.tool_calls) instead of answering"
        if not isinstance(content, str):
            return _text(body), None, usage, "choices[0].message.content is not a string"
        return content, content, usage, None
    if provider == "command":
        text = body if isinstance(body, str) else _text(body)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):
            return text, text, None, None
        if isinstance(doc, dict) and "verdict" not in doc and "preferred" not in doc and isinstance(doc.get("result"), str):
            return text, doc["result"], _usage(doc.get("usage"), "input_tokens", "output_tokens"), None
        usage = _usage(doc.get("usage"), "input_tokens", "output_tokens") if isinstance(doc, dict) else None
        return text, doc, usage, None
    raise ValueError(provider)


def stopped_error(error: Any) -> bool:
    """Whether `error` is read_reply's word for a reply that did not stop of itself (STOPPED: cut off at
    the token limit, refused, filtered). Such a reply says what max_tokens and the moment gave, not a
    verdict on the material, so the verdict cache never keeps it (nor answers with one it kept)."""
    if not isinstance(error, str):
        return False
    return any(error.startswith(why.split("({field}")[0]) for _, whys in STOPPED.values() for why in whys.values())


def _stopped(provider: str, value: Any) -> str | None:
    """Why a reply that stopped with `value` (stop_reason / finish_reason) is not read, or None."""
    field, why = STOPPED[provider]
    return why[value].format(field=field, value=value) if isinstance(value, str) and value in why else None


def _text(body: Any) -> str:
    if isinstance(body, str):
        return body
    return json.dumps(body, ensure_ascii=False, sort_keys=True)
