"""A run file's `cases` array found by its bytes where the runner's layout (indent 2) puts it, so
that a reader wanting the top-level keys (results.json's, manifest.yaml's) neither walks 100,000
rows nor parses them as Python objects: `head_past_cases` drops them unread, `typed_cases_head`
decodes them typed (msgspec). Each answers exactly what the reader it stands in for answers, or None
(then that reader runs): see `split_at_cases` for why the cut is exact.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import MAX_DEPTH, loads, too_deep
from ..core.writer import read_bytes

_CASES_OPEN = b'{\n  "cases": [\n'
_CASES_KEY = b'\n  "cases": [\n'


def head_past_cases(data: bytes) -> dict | None:
    """The top-level keys but `cases` of a results.json as the runner writes it (sorted keys: the few
    before `cases` (`app`) each on a line of its own, then `cases`, one case row a line at four spaces,
    the array closed at two), parsed from the bytes before and after the array without reading a row;
    None when the bytes are not that shape (the caller walks the file). The rows are not looked at:
    for a reader that drops them (a comparison's side, after its run dir passed the completeness check)."""
    cut = split_at_cases(data)
    if cut is None:
        return None
    try:
        before, head = (loads(part.decode("utf-8"), max_depth=MAX_DEPTH) for part in (cut[0], cut[2]))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(before, dict) or not all(k < "cases" for k in before):
        return None
    if not isinstance(head, dict) or "cases" in head or list(head) != sorted(head) or set(head) & set(before):
        return None
    return {**before, **head} if before else head


def split_at_cases(data: bytes) -> tuple[bytes, slice, bytes] | None:
    """A JSON object's text cut around its `cases` array where the runner's layout (indent 2) puts it:
    (the keys before it as an object's text, where the array's text is, the keys after it as an object's text);
    None when the bytes are not that shape. A raw newline never occurs inside a JSON string, so
    `\n  "cases": [` and `\n  ]` are tokens; in the runner's layout (and any indent-2 one) they open
    and close the top-level array. The cut is exact once all three parts parse (two objects and an
    array): JSON has one parse, so the document is then those keys, `cases` that array; in any other
    valid document the parts do not all parse: exact or nothing. A part cut at a comma begins with
    a key (a comma after nothing is not JSON, and core.runplan's walk of a part then reads it all)."""
    if data.startswith(_CASES_OPEN):
        before, opened = b"{}", len(_CASES_OPEN)
    else:
        at = data.find(_CASES_KEY) if data.startswith(b"{\n") else -1
        if at < 0 or data[at - 1:at] != b",":
            return None
        before, opened = b"{" + data[1:at - 1] + b"}", at + len(_CASES_KEY)
        if not before[1:].lstrip(_JSON_SPACE).startswith(b'"'):
            return None   # a comma after no key (or not a key): not JSON
    close = data.find(b"\n  ]", opened - 1)
    if close < 0:
        return None
    after = close + len(b"\n  ]")
    if data[after:after + 1] == b",":
        rest = b"{" + data[after + 1:]
        if not rest[1:].lstrip(_JSON_SPACE).startswith(b'"'):
            return None
    elif data[after:].strip(_JSON_SPACE) == b"}":   # JSON's own blanks (not \x0b, \x0c: not JSON)
        rest = b"{}"
    else:
        return None
    return before, slice(opened - 2, after), rest


_JSON_SPACE = b" \t\n\r"


def typed_cases_head(path: Path, decode_rows: Any) -> tuple[dict, Any] | None:
    """(`try_json_head(path, take)`'s answer, its case rows as `decode_rows` decodes their array) for
    a file cut by `split_at_cases`, or None: the caller walks the file as before. `decode_rows` is a
    typed decode (jsonio.fast_typed) that refuses every array but one whose rows, read by the walk,
    are what it gives, none nesting deeper than two; the keys around the array are read by the walk's
    own reader (core.runplan), which refuses a repeated key. Any doubt (not UTF-8, a part that does not
    parse, `cases` twice, a head nested too deep): None. A surrogate escape in a row: msgspec refuses a
    lone one (so does the whole parse the walk leaves it to), and a pair is the same character either
    way. The array is decoded from the file's bytes where they are (no copy: 100,000 rows)."""
    from ..core.runplan import read_plan_text
    try:
        data = read_bytes(path)
        if not data.isascii():
            data.decode("utf-8")   # what the walk decodes first (then dropped)
    except (OSError, AssayError, UnicodeDecodeError):
        return None
    cut = split_at_cases(data)
    if cut is None:
        return None
    heads = (read_plan_text(cut[0].decode("utf-8")), read_plan_text(cut[2].decode("utf-8")))
    if any(h is None or h[1] is not None or "cases" in h[0] for h in heads) or set(heads[0][0]) & set(heads[1][0]):
        return None
    try:
        rows = decode_rows(memoryview(data)[cut[1]])
    except Exception:   # noqa: BLE001 -- any refusal (not JSON, another type): the walk decides
        return None
    head = {**heads[0][0], **heads[1][0]}
    return (head, rows) if too_deep(head, MAX_DEPTH) is None else None
