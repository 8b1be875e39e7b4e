"""The part of promptfoo's Nunjucks templating an import can reproduce exactly.

promptfoo renders every prompt (and var, and assertion value) with Nunjucks. An import
cannot run arbitrary Nunjucks, so it renders the subset whose result is certain:
`{{ name }}`, `{{ name.field }}`, `{{ env.NAME }}` (left as `${NAME}` only where the caller
asks), the filters `dump`, `trim`, `upper`, `lower`, `{% for x in list %}` loops whose body holds
only expressions, and whitespace control (`{{-`, `-%}`). Anything else (`{% ... %}` blocks,
other filters, expressions) raises `Unrenderable` with the construct, so the caller lists
the test as not converted instead of guessing what the template meant.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.strict_yaml import YamlTimestamp

_EXPR = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}", re.DOTALL)
_BLOCK = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$")
_FILTERS = ("dump", "trim", "upper", "lower")
MISSING = object()


class Unrenderable(Exception):
    """A template construct the import does not evaluate (the message names it)."""


def references(template: str) -> set[str]:
    """The top-level variable names a template's `{{ ... }}` expressions read."""
    names: set[str] = set()
    for m in _EXPR.finditer(template):
        head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", m.group(1).strip())
        if head:
            names.add(head.group(0))
    for m in _BLOCK.finditer(template):
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", m.group(0)))
    return names


def uses_var(template: Any, name: str) -> bool:
    return isinstance(template, str) and name in references(template)


def _lookup(expr: str, variables: dict[str, Any]) -> Any:
    node: Any = variables
    for seg in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|\[\d+\]", expr):
        if seg.startswith("["):
            idx = int(seg[1:-1])
            node = node[idx] if isinstance(node, list) and idx < len(node) else MISSING
        else:
            node = node.get(seg, MISSING) if isinstance(node, dict) else MISSING
        if node is MISSING:
            return MISSING
    return node


def _as_text(value: Any) -> str:
    # Nunjucks prints a string as is, a number or bool as JS would, an object as [object Object]
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, YamlTimestamp):
        raise Unrenderable("a YAML date or time (promptfoo reads it as a JavaScript Date and prints it in the "
                           "machine's time zone; quote it to send the text)")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))      # JavaScript prints 1.0 and 1e3 as 1 and 1000
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise Unrenderable("an object or list printed without `| dump`")


def has_timestamp(value: Any) -> bool:
    if isinstance(value, dict):
        return any(has_timestamp(v) for v in value.values())
    if isinstance(value, list):
        return any(has_timestamp(v) for v in value)
    return isinstance(value, YamlTimestamp)


_FOR = re.compile(r"\{%(-?)\s*for\s+([A-Za-z_]\w*)\s+in\s+([A-Za-z_][\w.]*)\s*(-?)%\}(.*?)"
                  r"\{%(-?)\s*endfor\s*(-?)%\}", re.DOTALL)


def _for_loop(template: str, variables: dict[str, Any], env_as: str | None) -> str | None:
    """`{% for x in items %}...{% endfor %}` over a list (the body holds expressions only), with
    Nunjucks' `{%-` / `-%}` whitespace control; None when the template has no loop."""
    m = _FOR.search(template)
    if m is None:
        return None
    before, body, after = template[:m.start()], m.group(5), template[m.end():]
    if m.group(1):
        before = before.rstrip()
    if m.group(4):
        body = body.lstrip()
    if m.group(6):
        body = body.rstrip()
    if m.group(7):
        after = after.lstrip()
    if "{%" in body:
        raise Unrenderable("a Nunjucks block inside a for loop")
    items = _lookup(m.group(3), variables)
    if items is MISSING or items is None:
        items = []
    if not isinstance(items, list):
        raise Unrenderable(f"a for loop over {m.group(3)}, which is not a list")
    out = []
    for i, item in enumerate(items):
        loop = {"index": i + 1, "index0": i, "first": i == 0, "last": i == len(items) - 1, "length": len(items)}
        out.append(render(body, {**variables, m.group(2): item, "loop": loop}, env_as=env_as))
    return render(before, variables, env_as=env_as) + "".join(out) + render(after, variables, env_as=env_as)


def render(template: str, variables: dict[str, Any], *, env_as: str | None = None) -> str:
    """Render the supported subset; `env_as="${}"` turns `{{ env.X }}` into `${X}`."""
    if not isinstance(template, str):
        return template
    # Nunjucks whitespace control: `{{-` / `{%-` strip the whitespace before, `-}}` / `-%}` after
    template = re.sub(r"\s*(\{\{-)", r"\1", re.sub(r"(-\}\})\s*", r"\1", template))
    looped = _for_loop(template, variables, env_as)
    if looped is not None:
        return looped
    block = _BLOCK.search(template)
    if block:
        raise Unrenderable(f"the Nunjucks block {block.group(0)[:40]!r}")

    def one(m: re.Match[str]) -> str:
        parts = [p.strip() for p in m.group(1).split("|")]
        expr, filters = parts[0], parts[1:]
        if not _NAME.match(expr):
            raise Unrenderable(f"the expression {{{{ {m.group(1).strip()[:40]} }}}}")
        if expr.startswith("env.") and env_as is not None:
            if filters:
                raise Unrenderable(f"a filter on {expr}")
            return "${" + expr[4:] + "}"
        value = _lookup(expr, variables)
        if value is MISSING:
            # Nunjucks prints an undefined variable as an empty string
            value = ""
        for f in filters:
            if f not in _FILTERS:
                raise Unrenderable(f"the filter `| {f}`")
            if f == "dump":
                if has_timestamp(value):
                    raise Unrenderable("a YAML date under `| dump` (JSON.stringify of a JavaScript Date)")
                value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
            else:
                text = _as_text(value)
                value = text.strip() if f == "trim" else text.upper() if f == "upper" else text.lower()
        return _as_text(value)

    return _EXPR.sub(one, template)


def chat_messages(text: str) -> list[dict[str, str]] | None:
    """A rendered prompt that is a JSON chat array ([{role, content}] or [{user: ...}]), or an
    object holding one (`{messages: [...]}`, with an optional `system` text), as messages; None
    for a plain-text prompt."""
    stripped = text.strip()
    if not stripped.startswith(("[", "{")):
        return None
    try:
        doc = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(doc, dict):
        if set(doc) - {"messages", "system"} or not isinstance(doc.get("messages"), list):
            return None
        msgs = messages_of(doc["messages"])
        if msgs is not None and isinstance(doc.get("system"), str):
            msgs.insert(0, {"role": "system", "content": doc["system"]})
        return msgs
    return messages_of(doc)


TEXT_PARTS = ("text", "input_text")


def _content_text(content: Any) -> str | None:
    """A message's content: a string, or a list of content parts whose text parts are joined by a
    newline. A part that is not text (an image, a file, audio) cannot be sent as a user turn."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict):
            raise Unrenderable(f"a {part.get('type', 'non-text')!s:.20} content part (assay sends text turns)")
        else:
            return None
    return "\n".join(texts)


def messages_of(doc: Any) -> list[dict[str, str]] | None:
    if not isinstance(doc, list) or not doc:
        return None
    out: list[dict[str, str]] = []
    for item in doc:
        if not isinstance(item, dict):
            return None
        if "role" in item and "content" in item:
            content = _content_text(item["content"])
            if content is None:
                return None
            out.append({"role": str(item["role"]), "content": content})
        elif len(item) == 1 and next(iter(item)) in ("user", "assistant", "system"):
            role, content = next(iter(item.items()))
            if not isinstance(content, str):
                return None
            out.append({"role": role, "content": content})
        else:
            return None
    return out
