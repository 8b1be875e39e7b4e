"""Request templates and declared response paths (adapter-profile facts §1.2).

Placeholders: `<user turn>`, `<uuid>`, `<persona>`, `<case id>`, `<session>`. A string that
is exactly one placeholder becomes the typed value; otherwise the value is substituted
as text. An unset value (`UNSET`, e.g. `<session>` before a server-id app gave one) drops a
mapping entry or list item that is exactly that placeholder, and is "" inside a longer
string. Values are read from a response only at paths the adapter declares.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.jsonio import loads
from ..core.errors import AssayError

PLACEHOLDERS = ("<user turn>", "<uuid>", "<persona>", "<case id>", "<session>")
SESSION_MARK = "<session>"
ANSWER_MARK = "<answer>"
TRACE_ID_MARK = "<trace id>"
DEFAULT_FUNCTION_BODY = {"message": "<user turn>", "session_id": "<uuid>"}
_MISSING = object()


class _Unset:
    """A placeholder value that is not known yet: the entry holding it is not sent at all."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()


def parse_template(value: Any, where: str) -> Any:
    """A template is a JSON string (as written in adapter.yaml) or an already-parsed mapping."""
    if isinstance(value, (dict, list)):
        return value
    if isinstance(value, str):
        try:
            return loads(value)
        except ValueError as exc:
            raise AssayError(f"pre-flight: {where} is not valid JSON ({exc}); write it as a JSON "
                             "string template, e.g. '{\"message\": \"<user turn>\"}'", 3, key=where)
    raise AssayError(f"pre-flight: {where} must be a JSON string template or a mapping", 3, key=where)


def fill(template: Any, values: dict[str, Any]) -> Any:
    """Substitute placeholders. An exact-placeholder string becomes the typed value; an entry
    whose whole value is an UNSET placeholder is dropped (never sent as null)."""
    if isinstance(template, str):
        if template in values:
            return values[template]
        if "<" not in template:
            return template
        out = template
        for mark, val in values.items():
            if mark in out:
                out = out.replace(mark, "" if val is None or val is UNSET else (
                    val if isinstance(val, str) else json.dumps(val)))
        return out
    if isinstance(template, dict):
        filled = {k: fill(v, values) for k, v in template.items()}
        return {k: v for k, v in filled.items() if v is not UNSET}
    if isinstance(template, list):
        return [v for v in (fill(v, values) for v in template) if v is not UNSET]
    return template


def mentions(template: Any, mark: str) -> bool:
    """True when any string of a parsed template contains `mark`."""
    if isinstance(template, str):
        return mark in template
    if isinstance(template, dict):
        return any(mentions(v, mark) for v in template.values())
    if isinstance(template, list):
        return any(mentions(v, mark) for v in template)
    return False


def find_mark(template: Any, mark: str) -> list[Any] | None:
    """The path (keys / list indexes) to the leaf of a parsed template equal to `mark`."""
    stack: list[tuple[Any, list[Any]]] = [(template, [])]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str) and node == mark:
            return path
        if isinstance(node, dict):
            stack.extend((v, path + [k]) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, path + [i]) for i, v in enumerate(node))
    return None


_SEGMENT = re.compile(r"[^.\[\]]+|\[\d+\]")


def split_path(dotted: str) -> list[Any]:
    """`data.rows[0].value` / `data.rows.0.value` -> ['data', 'rows', 0, 'value']."""
    parts: list[Any] = []
    for seg in _SEGMENT.findall(dotted):
        if seg.startswith("["):
            parts.append(int(seg[1:-1]))
        else:
            parts.append(seg)
    return parts


def get_path(doc: Any, path: list[Any]) -> Any:
    """The value at `path`, or _MISSING. A digit segment indexes a list."""
    node = doc
    for part in path:
        if isinstance(node, dict):
            if part in node:
                node = node[part]
            elif isinstance(part, int) and str(part) in node:
                node = node[str(part)]
            else:
                return _MISSING
        elif isinstance(node, list):
            try:
                idx = int(part)
            except (TypeError, ValueError):
                return _MISSING
            if not -len(node) <= idx < len(node):
                return _MISSING
            node = node[idx]
        else:
            return _MISSING
    return node


def lookup(doc: Any, dotted: str | list[Any]) -> tuple[bool, Any]:
    path = split_path(dotted) if isinstance(dotted, str) else dotted
    value = get_path(doc, path)
    return (value is not _MISSING), (None if value is _MISSING else value)


def as_text(value: Any) -> str | None:
    """A response leaf as answer text: strings as-is, numbers as text, containers as JSON, null -> None."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return None
