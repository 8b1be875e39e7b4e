"""An answer that is not text: the adapter's `<answer>` path led to an object or a list.

Such a leaf is the answer's JSON text (assay.invoke.templates.as_text), on purpose: a structured
answer is checked with `format.json_schema`. A text check (`must_contain`, `must_not_contain`) on
that JSON matches key names, the object's other fields and escaped quotes, not what the app said
(`{"reply": "<answer>"}` where `reply` is `{"text": ...}`: must_contain "text" passed on a key), so
the answer scorer leaves it unscorable (not_text_reason), and the layer records the leaf
(`answer_not_text`). A number or a bool is its own text and is checked as such.

Here: what the runner records of the leaf (leaf_of), the words of an unscorable check, the fold of
the run's records into results.json `summary.answer_not_text` (NotTextFold) and the gate's close
reason over it (not_text_close). Pure.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..core.writer import clip

READ_LIMIT = 160       # characters of the first leaf's JSON kept as the example of what was read
_KEYS_SHOWN = 6
# the fields a newcomer's app most often puts its words in, suggested first
_TEXTY = ("text", "content", "answer", "message", "output", "reply", "response", "result")


def dotted(path: Any) -> str | None:
    """The `<answer>` path as a dotted path (`reply`, `choices[0].message`), None when there is none."""
    if not isinstance(path, (list, tuple)) or not path:
        return None
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def leaf_of(value: Any, path: Any = None, text: str | None = None) -> dict[str, Any] | None:
    """What a run records of an `<answer>` leaf that is not text (an object or a list), else None:
    `{path, kind, keys, text_fields, text_field, read}`; `text_fields` are the object's keys holding a
    string, `text_field` the one the fix names (a string field called text, content, answer, ... or the
    only one; else None), `read` the leaf's JSON, redacted then cut (writer.clip)."""
    if not isinstance(value, (dict, list)):
        return None
    if text is None:
        try:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError, RecursionError):
            text = ""
    keys = [str(k) for k in value] if isinstance(value, dict) else []
    texty = [k for k in keys if isinstance(value.get(k), str)] if isinstance(value, dict) else []
    texty.sort(key=lambda k: (_TEXTY.index(k.lower()) if k.lower() in _TEXTY else len(_TEXTY), keys.index(k)))
    sure = texty[:1] if texty and (len(texty) == 1 or texty[0].lower() in _TEXTY) else []
    return {"path": dotted(path), "kind": "object" if isinstance(value, dict) else "list",
            "keys": keys[:_KEYS_SHOWN], "text_fields": [clip(k, 60) for k in texty[:3]],
            "text_field": clip(sure[0], 60) if sure else None, "read": clip(text, READ_LIMIT, ellipsis="…")}


def _what(leaf: Mapping[str, Any]) -> str:
    if leaf.get("kind") == "list":
        return "a list"
    keys = leaf.get("keys") if isinstance(leaf.get("keys"), list) else []
    return f"an object (keys: {', '.join(map(str, keys))})" if keys else "an object"


def fix_words(leaf: Mapping[str, Any]) -> str:
    """The fix: the `<answer>` path pointed at the text field (named when it is sure: text_field; else
    the string fields listed), or the structure checked with format.json_schema."""
    path, field, fields = leaf.get("path"), leaf.get("text_field"), leaf.get("text_fields")
    if isinstance(field, str) and field:
        to = f"{path}.{field}" if path else field
        at = f"point the <answer> path at the text field ({to}"
        at += f", e.g. response_body '{template_for(to)}')" if template_for(to) else ")"
    elif isinstance(fields, list) and fields:
        at = f"point the <answer> path at the field that holds the reply's text (string fields there: {', '.join(map(str, fields))})"
    else:
        at = "point the <answer> path at the field that holds the reply's text"
    return f"{at}, or check the structure with format.json_schema instead of text checks"


def template_for(dotted_path: str) -> str | None:
    """`{"reply": {"text": "<answer>"}}` for `reply.text` (a path of plain keys only), else None."""
    parts = dotted_path.split(".")
    if any(not p or "[" in p for p in parts):
        return None
    doc: Any = "<answer>"
    for part in reversed(parts):
        doc = {part: doc}
    return json.dumps(doc, ensure_ascii=False)


def not_text_reason(leaf: Mapping[str, Any]) -> str:
    """Why a text check on this leaf is unscorable (recorded on the check): short, the gate's
    line (not_text_close) says the rest."""
    where = f" ({leaf['path']})" if leaf.get("path") else ""
    field = leaf.get("text_field")
    to = (f"{leaf['path']}.{field}" if leaf.get("path") else field) if isinstance(field, str) and field else None
    return (f"the answer at the adapter's <answer> path{where} is {_what(leaf)}, not text, so a text check on it "
            f"is not scored: point the path at its text field{f' ({to})' if to else ''} or check it with "
            "format.json_schema")


class NotTextFold:
    """Over the gating non-canary cases of a run (holdout counted, never named): how many had a text
    check left unscorable because the answer was not text, and the first one's leaf (plan order; its
    `read` only from a case that is not holdout)."""

    def __init__(self) -> None:
        self.cases = 0
        self.first: tuple[int, Mapping[str, Any], Any] | None = None   # (index, leaf, case id)
        self.first_open: tuple[int, Any] | None = None                 # (index, read) of a non-holdout case

    def add(self, index: int, record: Mapping[str, Any]) -> None:
        if record.get("canary") or record.get("gating", True) is False or record.get("verdict") == "skipped":
            return
        entry = (record.get("layers") or {}).get("answer")
        leaf = entry.get("answer_not_text") if isinstance(entry, Mapping) else None
        if not isinstance(leaf, Mapping):
            return
        self.cases += 1
        held = bool(record.get("holdout"))
        if self.first is None or index < self.first[0]:
            self.first = (index, leaf, None if held else record.get("case_id"))
        if not held and (self.first_open is None or index < self.first_open[0]):
            self.first_open = (index, leaf.get("read"))

    def result(self) -> dict[str, Any]:
        """{"answer_not_text": block} for results.json's summary, {} when no case counts."""
        if self.first is None:
            return {}
        _, leaf, case = self.first
        return {"answer_not_text": {"cases": self.cases, "path": leaf.get("path"), "kind": leaf.get("kind"),
                                    "keys": leaf.get("keys"), "text_fields": leaf.get("text_fields"),
                                    "text_field": leaf.get("text_field"),
                                    "first_case": case,
                                    "read": self.first_open[1] if self.first_open else None}}


def not_text_close(block: Any) -> str | None:
    """The gate's close reason for summary.answer_not_text: gating text checks that never ran because
    the adapter's <answer> path read an object or a list."""
    if not isinstance(block, Mapping) or not isinstance(block.get("cases"), int) or block["cases"] < 1:
        return None
    where = f" ({block['path']})" if block.get("path") else ""
    first = f"first: {block['first_case']}" if isinstance(block.get("first_case"), str) else ""
    read = f"e.g. {block['read']}" if isinstance(block.get("read"), str) else ""
    seen = f" ({'; '.join(w for w in (first, read) if w)})" if first or read else ""
    return (f"{block['cases']} gating case(s) asserted must_contain / must_not_contain on an answer that is not "
            f"text, so those checks were not scored: the adapter's response_body <answer> path{where} read "
            f"{_what(block)}{seen}; on its JSON they would match key names, other fields and escaped quotes; "
            f"{fix_words(block)}")
