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
RESPONSE_MARKS = (ANSWER_MARK, TRACE_ID_MARK)   # what a response_body template may mark
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


_MARK_LIKE = re.compile(r"<[^<>\s][^<>]*>")


def response_body_problem(raw: Any) -> str | None:
    """Why an adapter's `invocation.response_body` cannot find the answer (None: it marks the answer
    leaf with "<answer>"). The one rule: convert_suite.py refuses it at adapter.yaml's line, the
    run's pre-flight at the plan's key; each names what it found and the fix."""
    fix = "e.g. '{\"answer\": \"<answer>\"}', or drop response_body to take the whole response text as the answer"
    try:
        tmpl = loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        return f"invocation.response_body is not valid JSON ({exc}); write a JSON text, {fix}"
    if find_mark(tmpl, ANSWER_MARK) is not None:
        return None
    leaves = _leaves(tmpl)
    inside = next((s for s in leaves if ANSWER_MARK in s), None)
    if inside is not None:
        return (f"invocation.response_body has \"{ANSWER_MARK}\" inside the text {inside!r}: the mark must be the "
                f"whole value of the field that holds the answer ({fix})")
    found = next((m for s in leaves for m in _MARK_LIKE.findall(s) if m not in RESPONSE_MARKS), None)
    if found is None:
        return (f"invocation.response_body marks no field with \"{ANSWER_MARK}\", so no answer can be read; write "
                f"\"{ANSWER_MARK}\" as the value of the field that holds the app's answer, {fix}")
    from ..core.suggest import closest
    hit = closest(found, RESPONSE_MARKS)
    what = ("a request_body placeholder, which no response fills" if found in PLACEHOLDERS
            else "an unknown placeholder" + (f" (did you mean \"{hit}\"?)" if hit else ""))
    fixed = (f"write response_body: {raw.replace(found, hit)!r}" if hit == ANSWER_MARK and isinstance(raw, str)
             else f"mark the answer's field with \"{ANSWER_MARK}\", {fix}")
    return (f"invocation.response_body has \"{found}\", {what}, and no \"{ANSWER_MARK}\", so no answer can be "
            f"read (its placeholders: {', '.join(RESPONSE_MARKS)}); {fixed}")


def request_template_problem(invocation: Any) -> tuple[str, str] | None:
    """(the key, why) when the adapter's request never carries the case's question: a request_body
    (http, function) or a cli `command` (without `stdin: user_turn`) that mentions no "<user turn>"
    (a typo such as "<user_turn>") sends every case the same request, and an app answering it the
    same way passes every case that its one answer happens to meet. None: the question is sent. The
    one rule: convert_suite.py refuses it at adapter.yaml's line, the run's pre-flight at the plan's key."""
    if not isinstance(invocation, dict):
        return None
    mode = invocation.get("mode")
    if mode in ("http", "function") and invocation.get("request_body") is not None:
        key, raw = "invocation.request_body", invocation["request_body"]
        try:
            tmpl = loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            return None   # not JSON: pre-flight names that
        example = "'{\"message\": \"<user turn>\"}'"
    elif mode == "cli" and invocation.get("stdin") != "user_turn" and isinstance(invocation.get("command"), list):
        key, raw = "invocation.command", None
        tmpl = invocation["command"]
        example = "[python3, agent.py, \"<user turn>\"] (or stdin: user_turn)"
    else:
        return None
    mark = PLACEHOLDERS[0]
    if mentions(tmpl, mark):
        return None
    from ..core.suggest import closest
    found = [m for s in _leaves(tmpl) for m in _MARK_LIKE.findall(s) if m not in PLACEHOLDERS]
    hit = next((m for m in found if closest(m, (mark,))), None)
    said = f"; it has \"{hit}\" (did you mean \"{mark}\"?)" if hit else ""
    fix = (f"write request_body: {raw.replace(hit, mark)!r}" if hit and isinstance(raw, str) else f"put \"{mark}\" where the app reads the question, e.g. {example}")
    return key, (f"{key} never mentions \"{mark}\", so no case's question reaches the app: every case would "
                 f"send the same request and be scored on the same answer{said}; {fix}")


def _leaves(template: Any) -> list[str]:
    """Every string leaf of a parsed template, in order."""
    if isinstance(template, str):
        return [template]
    if isinstance(template, dict):
        return [s for v in template.values() for s in _leaves(v)]
    if isinstance(template, list):
        return [s for v in template for s in _leaves(v)]
    return []


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
