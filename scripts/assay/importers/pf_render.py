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
from typing import Any, Iterator

from ..core.strict_yaml import YamlTimestamp

# A template is scanned by position (str.find), not by `\{\{-?\s*(.*?)\s*-?\}\}` or `\{%.*?%\}|\{#.*?#\}`:
# those tried every `{{` / `{%` again to the end of the text when nothing closed it (quadratic in the
# openers), and the expression's blanks on both sides of a lazy group made a `{{` before a long run of
# blanks cubic (a 10 KB prompt: ~30 min). The spans and texts found are the same.
_BLOCK_CLOSE = {"{%": "%}", "{#": "#}"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$")
_FILTERS = ("dump", "trim", "upper", "lower")
MISSING = object()


class Unrenderable(Exception):
    """A template construct the import does not evaluate (the message names it)."""


def expressions(template: str) -> Iterator[tuple[int, int, str]]:
    """Each `{{ ... }}` as (start, end, expression): from a `{{` to the first `}}` after it, the
    expression without its whitespace control (`{{-`, `-}}`) and the blanks around it."""
    pos = 0
    while True:
        start = template.find("{{", pos)
        close = template.find("}}", start + 2) if start >= 0 else -1
        if close < 0:
            return
        expr = template[start + 2:close]
        expr = (expr[1:] if expr.startswith("-") else expr).lstrip()
        expr = (expr[:-1] if expr.endswith("-") else expr).rstrip()
        yield start, close + 2, expr
        pos = close + 2


def blocks(template: str) -> Iterator[tuple[int, int]]:
    """Each `{% ... %}` and `{# ... #}` as (start, end): from the leftmost opener to the first closer
    of its kind after it, then on after it."""
    nxt = {opener: template.find(opener) for opener in _BLOCK_CLOSE}
    while True:
        live = [(at, opener) for opener, at in nxt.items() if at >= 0]
        if not live:
            return
        start, opener = min(live)
        close = template.find(_BLOCK_CLOSE[opener], start + 2)
        if close < 0:           # no later opener of this kind can close either
            nxt[opener] = -1
            continue
        yield start, close + 2
        for other, at in nxt.items():
            if 0 <= at < close + 2:
                nxt[other] = template.find(other, close + 2)


def references(template: str) -> set[str]:
    """The top-level variable names a template's `{{ ... }}` expressions read."""
    names: set[str] = set()
    for _, _, expr in expressions(template):
        head = re.match(r"[A-Za-z_][A-Za-z0-9_]*", expr)
        if head:
            names.add(head.group(0))
    for start, end in blocks(template):
        names.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", template[start:end]))
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
_ENDFOR = re.compile(r"\{%-?\s*endfor\s*-?%\}")


def loops_end(template: str) -> int:
    """Where the template's last `{% endfor %}` ends (0 without one): a loop is looked for before it only,
    since a loop opened after it never closes (looked for to the end of the text, each unclosed opener
    was read again to the end: quadratic in the openers)."""
    end = 0
    for m in _ENDFOR.finditer(template):
        end = m.end()
    return end


def _for_loop(template: str, variables: dict[str, Any], env_as: str | None) -> str | None:
    """`{% for x in items %}...{% endfor %}` over a list (the body holds expressions only), with
    Nunjucks' `{%-` / `-%}` whitespace control; None when the template has no loop."""
    m = _FOR.search(template, 0, loops_end(template))
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
    # (the blanks before `{{-` are matched from the start of their run only: tried from each of its
    # blanks, a long run with no `{{-` after it was read again from each, quadratic)
    template = re.sub(r"(?<!\s)\s*(\{\{-)", r"\1", re.sub(r"(-\}\})\s*", r"\1", template))
    looped = _for_loop(template, variables, env_as)
    if looped is not None:
        return looped
    block = next(blocks(template), None)
    if block:
        raise Unrenderable(f"the Nunjucks block {template[block[0]:block[1]][:40]!r}")

    def one(text: str) -> str:
        parts = [p.strip() for p in text.split("|")]
        expr, filters = parts[0], parts[1:]
        if not _NAME.match(expr):
            raise Unrenderable(f"the expression {{{{ {text.strip()[:40]} }}}}")
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

    out, pos = [], 0
    for start, end, expr in expressions(template):
        out += [template[pos:start], one(expr)]
        pos = end
    return "".join(out) + template[pos:]


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
