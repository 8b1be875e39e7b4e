"""The script of the scripted Messages-API server (tests/messages_server.py): its steps, what a
computed tool input sees (`Context`: the tool results of the conversation so far), and the
JSON/YAML script file a session can be driven from by hand."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

@dataclass
class ToolResult:
    tool_use_id: str
    name: str | None
    text: str
    is_error: bool


@dataclass
class Context:
    """What a computed tool input can see: the conversation of the request being answered."""
    request: dict
    results: list[ToolResult]

    @property
    def last(self) -> str:
        return self.results[-1].text if self.results else ""

    def json(self, index: int = -1) -> Any:
        """The first JSON object or array in tool result `index` (default: the last)."""
        return first_json(self.results[index].text if self.results else "")


@dataclass
class Text:
    """A text block; a message of text alone ends the turn (`stop_reason: end_turn`)."""
    text: str


@dataclass
class Tool:
    """A `tool_use` block; `input` is a dict or a function of the `Context` returning one."""
    name: str
    input: dict | Callable[[Context], dict]


@dataclass
class Turn:
    """Several blocks in one message (text, then parallel tool calls)."""
    blocks: tuple


@dataclass
class ApiError:
    """An HTTP error in the API's error shape, sent once in place of a message."""
    status: int = 529
    type: str = "overloaded_error"
    message: str = "Overloaded"


text, tool, api_error = Text, Tool, ApiError


def turn(*blocks: Text | Tool) -> Turn:
    return Turn(tuple(blocks))


def first_json(s: str) -> Any:
    """The first JSON object/array in `s` (a script's stdout may have other lines), else None."""
    dec = json.JSONDecoder()
    for m in re.finditer(r"[{\[]", s):
        try:
            return dec.raw_decode(s, m.start())[0]
        except ValueError:
            continue
    return None


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def conversation_results(body: dict) -> list[ToolResult]:
    """Every `tool_result` in the request's messages, in order, with the name of the call it answers."""
    names: dict[str, str] = {}
    out: list[ToolResult] = []
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[block.get("id", "")] = block.get("name", "")
            elif block.get("type") == "tool_result":
                tid = block.get("tool_use_id", "")
                out.append(ToolResult(tid, names.get(tid), _block_text(block.get("content")),
                                      bool(block.get("is_error"))))
    return out


def step_from_json(raw: Any) -> Text | Tool | Turn | ApiError:
    """One step of a JSON/YAML script file (see the module docstring)."""
    if not isinstance(raw, dict):
        raise ValueError(f"a step is an object, got {raw!r}")
    if "blocks" in raw:
        return Turn(tuple(step_from_json(b) for b in raw["blocks"]))
    if "error" in raw:
        return ApiError(int(raw["error"]), raw.get("type", "api_error"), raw.get("message", "scripted error"))
    if "text" in raw:
        return Text(str(raw["text"]))
    if "tool" in raw and "input_template" in raw:
        template = raw["input_template"]
        return Tool(raw["tool"], lambda ctx, t=template: _fill(t, ctx))
    if "tool" in raw:
        return Tool(raw["tool"], dict(raw.get("input") or {}))
    raise ValueError(f"a step needs text, tool, blocks or error: {raw!r}")


def _fill(template: Any, ctx: Context) -> Any:
    if isinstance(template, str):
        return template.format(last=ctx.last, results=[r.text for r in ctx.results], last_json=ctx.json())
    if isinstance(template, dict):
        return {k: _fill(v, ctx) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, ctx) for v in template]
    return template


def load_script(path: str | os.PathLike[str]) -> list:
    raw_text = Path(path).read_text(encoding="utf-8")
    if str(path).endswith((".yaml", ".yml")):
        import yaml
        raw = yaml.safe_load(raw_text)
    else:
        raw = json.loads(raw_text)
    if not isinstance(raw, list):
        raise ValueError(f"{path}: a script is a list of steps")
    return [step_from_json(s) for s in raw]
