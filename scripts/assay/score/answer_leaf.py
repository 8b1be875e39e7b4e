"""An answer that is not text: the adapter's `<answer>` path led to an object or a list.

Such a leaf is the answer's JSON text (assay.invoke.templates.as_text), on purpose: a structured
answer is checked with `format.json_schema`. A text check (`must_contain`, `must_not_contain`) on
that JSON matches key names, the object's other fields and escaped quotes, not what the app said
(`{"reply": "<answer>"}` where `reply` is `{"text": ...}`: must_contain "text" passed on a key), so
the answer scorer leaves it unscorable (not_text_reason), and the layer records the leaf
(`answer_not_text`). A number or a bool is its own text and is checked as such. The same holds for
an adapter with no `response_body` whose whole response body (an HTTP body, a cli's stdout) is a JSON
object or list: the leaf is recorded with `whole_body: true` and the fix names the key to add.

An answer that is the user's message word for word (whitespace collapsed, NFC: an `<answer>` path on
a field where the app echoes the question) proves nothing about a `must_contain` entry found in that
message: such an entry is unscorable with ECHO words, the layer records `answer_echo` (echo_of), the
run counts it (`summary.answer_echo`, the same fold) and the gate closes on it (echo_close).

Here: what the runner records of the leaf (leaf_of) or of an echo (echo_of), the words of an
unscorable check, the fold of the run's records into results.json `summary.answer_not_text` and
`summary.answer_echo` (NotTextFold) and the gate's close reasons over them (not_text_close,
echo_close). Pure.
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


def leaf_of(value: Any, path: Any = None, text: str | None = None, *, whole_body: bool = False) -> dict[str, Any] | None:
    """What a run records of an `<answer>` leaf that is not text (an object or a list), else None:
    `{path, kind, keys, text_fields, text_field, read}`; `text_fields` are the object's keys holding a
    string, `text_field` the one the fix names (a string field called text, content, answer, ... or the
    only one; else None), `read` the leaf's JSON, redacted then cut (writer.clip); `whole_body: true`
    (only then present) when no response_body is declared and the leaf is the whole body."""
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
    out = {"path": dotted(path), "kind": "object" if isinstance(value, dict) else "list",
           "keys": keys[:_KEYS_SHOWN], "text_fields": [clip(k, 60) for k in texty[:3]],
           "text_field": clip(sure[0], 60) if sure else None, "read": clip(text, READ_LIMIT, ellipsis="…")}
    if whole_body:
        out["whole_body"] = True
    return out


def _what(leaf: Mapping[str, Any]) -> str:
    if leaf.get("kind") == "list":
        return "a list"
    keys = leaf.get("keys") if isinstance(leaf.get("keys"), list) else []
    return f"an object (keys: {', '.join(map(str, keys))})" if keys else "an object"


def fix_words(leaf: Mapping[str, Any]) -> str:
    """The fix: the `<answer>` path pointed at the text field (named when it is sure: text_field; else
    the string fields listed), or the structure checked with format.json_schema."""
    path, field, fields = leaf.get("path"), leaf.get("text_field"), leaf.get("text_fields")
    if leaf.get("whole_body") is True:
        if isinstance(field, str) and field and template_for(field):
            at = f"declare invocation.response_body marking its text field (response_body '{template_for(field)}')"
        elif isinstance(fields, list) and fields:
            at = ("declare invocation.response_body with \"<answer>\" at the field that holds the reply's text "
                  f"(string fields there: {', '.join(map(str, fields))})")
        else:
            at = "declare invocation.response_body with \"<answer>\" at the field that holds the reply's text"
        return f"{at}, or check the structure with format.json_schema instead of text checks"
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
    if leaf.get("whole_body") is True:
        mark = f" (e.g. '{template_for(to)}')" if to and template_for(to) else ""
        return (f"the answer is the whole response body (the adapter declares no response_body) and it is "
                f"{_what(leaf)}, not text, so a text check on it is not scored: declare response_body with "
                f"\"<answer>\" at its text field{mark} or check it with format.json_schema")
    return (f"the answer at the adapter's <answer> path{where} is {_what(leaf)}, not text, so a text check on it "
            f"is not scored: point the path at its text field{f' ({to})' if to else ''} or check it with "
            "format.json_schema")


def _same_words(text: str) -> str:
    import unicodedata
    return " ".join(unicodedata.normalize("NFC", text).split())


def echo_of(answer: Any, turn: Any, path: Any = None, *, whole_body: bool = False) -> dict[str, Any] | None:
    """What a run records when the answer read is the user's turn word for word (whitespace collapsed,
    NFC on both): `{path, read}` (`read`: the turn, redacted then cut; `whole_body: true` when no
    response_body is declared), else None. An empty turn is never an echo."""
    if not isinstance(answer, str) or not isinstance(turn, str) or not turn.strip():
        return None
    if _same_words(answer) != _same_words(turn):
        return None
    out: dict[str, Any] = {"path": path if isinstance(path, str) else dotted(path),
                           "read": clip(" ".join(turn.split()), READ_LIMIT, ellipsis="…")}
    if whole_body:
        out["whole_body"] = True
    return out


def _echo_source(echo: Mapping[str, Any]) -> str:
    if echo.get("whole_body") is True:
        return "the answer (the whole response body: the adapter declares no response_body)"
    where = f" ({echo['path']})" if echo.get("path") else ""
    return f"the answer at the adapter's response_body <answer> path{where}"


def _echo_fix(echo: Mapping[str, Any]) -> str:
    if echo.get("whole_body") is True:
        return ("declare invocation.response_body with \"<answer>\" at the field that holds the app's reply, "
                "or assert words the reply must hold that the question does not")
    return ("point the <answer> path at the field that holds the app's reply (this one echoes the question), "
            "or assert words the reply must hold that the question does not")


def echo_reason(echo: Mapping[str, Any]) -> str:
    """Why a must_contain entry found in an echoed turn is unscorable (recorded on the check)."""
    return (f"{_echo_source(echo)} is the user's message word for word, so an entry found in it proves nothing "
            f"and is not scored: {_echo_fix(echo)}")


class _First:
    """One summary block's count and first case (plan order; `read` only from a non-holdout case)."""

    def __init__(self) -> None:
        self.cases = 0
        self.first: tuple[int, Mapping[str, Any], Any] | None = None   # (index, record, case id)
        self.first_open: tuple[int, Mapping[str, Any]] | None = None   # (index, record) of a non-holdout case

    def add(self, index: int, held: bool, case_id: Any, leaf: Mapping[str, Any]) -> None:
        self.cases += 1
        if self.first is None or index < self.first[0]:
            self.first = (index, leaf, None if held else case_id)
        if not held and (self.first_open is None or index < self.first_open[0]):
            self.first_open = (index, leaf)


class NotTextFold:
    """Over the gating non-canary cases of a run (holdout counted, never named): how many had a text
    check left unscorable because the answer was not text (`answer_not_text`) or was the user's turn
    word for word (`answer_echo`), and the first one's record (plan order; what was read only from a
    case that is not holdout)."""

    def __init__(self) -> None:
        self.not_text, self.echo = _First(), _First()

    def add(self, index: int, record: Mapping[str, Any]) -> None:
        if record.get("canary") or record.get("gating", True) is False or record.get("verdict") == "skipped":
            return
        entry = (record.get("layers") or {}).get("answer")
        if not (isinstance(entry, dict) or isinstance(entry, Mapping)):   # a dict first: Mapping's check is slow
            return
        held = bool(record.get("holdout"))
        for key, fold in (("answer_not_text", self.not_text), ("answer_echo", self.echo)):
            got = entry.get(key)
            if isinstance(got, dict) or (got is not None and isinstance(got, Mapping)):
                fold.add(index, held, record.get("case_id"), entry[key])

    def result(self) -> dict[str, Any]:
        """{"answer_not_text": block, "answer_echo": block} for results.json's summary, each only when
        a case counts."""
        out: dict[str, Any] = {}
        if self.not_text.first is not None:
            _, leaf, case = self.not_text.first
            out["answer_not_text"] = {"cases": self.not_text.cases, "path": leaf.get("path"), "kind": leaf.get("kind"),
                                      "keys": leaf.get("keys"), "text_fields": leaf.get("text_fields"),
                                      "text_field": leaf.get("text_field"),
                                      "first_case": case,
                                      "read": self.not_text.first_open[1].get("read") if self.not_text.first_open else None}
            if leaf.get("whole_body") is True:
                out["answer_not_text"]["whole_body"] = True
        if self.echo.first is not None:
            _, echo, case = self.echo.first
            seen = self.echo.first_open[1] if self.echo.first_open else {}
            entries = seen.get("entries") if isinstance(seen.get("entries"), list) else []
            out["answer_echo"] = {"cases": self.echo.cases, "path": echo.get("path"), "first_case": case,
                                  "entry": entries[0] if entries else None, "read": seen.get("read")}
            if echo.get("whole_body") is True:
                out["answer_echo"]["whole_body"] = True
        return out


def not_text_close(block: Any) -> str | None:
    """The gate's close reason for summary.answer_not_text: gating text checks that never ran because
    the adapter's <answer> path read an object or a list."""
    if not isinstance(block, Mapping) or not isinstance(block.get("cases"), int) or block["cases"] < 1:
        return None
    where = f" ({block['path']})" if block.get("path") else ""
    first = f"first: {block['first_case']}" if isinstance(block.get("first_case"), str) else ""
    read = f"e.g. {block['read']}" if isinstance(block.get("read"), str) else ""
    seen = f" ({'; '.join(w for w in (first, read) if w)})" if first or read else ""
    source = ("the adapter declares no response_body, so the answer was the whole response body:"
              if block.get("whole_body") is True else f"the adapter's response_body <answer> path{where} read")
    return (f"{block['cases']} gating case(s) asserted must_contain / must_not_contain on an answer that is not "
            f"text, so those checks were not scored: {source} "
            f"{_what(block)}{seen}; on its JSON they would match key names, other fields and escaped quotes; "
            f"{fix_words(block)}")


def echo_close(block: Any) -> str | None:
    """The gate's close reason for summary.answer_echo: gating must_contain entries found only in the
    user's own message, read back as the answer."""
    if not isinstance(block, Mapping) or not isinstance(block.get("cases"), int) or block["cases"] < 1:
        return None
    first = f"first: {block['first_case']}" if isinstance(block.get("first_case"), str) else ""
    entry = block.get("entry")
    read = (f"e.g. {json.dumps(entry, ensure_ascii=False)} in {json.dumps(block['read'], ensure_ascii=False)}"
            if isinstance(entry, (str, int, float)) and isinstance(block.get("read"), str) else "")
    seen = f" ({'; '.join(w for w in (first, read) if w)})" if first or read else ""
    return (f"{block['cases']} gating case(s) asserted must_contain on an answer that is the user's message word "
            f"for word, so entries found in that message were not scored: {_echo_source(block)} read the "
            f"question back{seen}; {_echo_fix(block)}")
