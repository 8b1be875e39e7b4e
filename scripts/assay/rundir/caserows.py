"""The case rows of a walked manifest.yaml or results.json (rundir.streamed.CasesFile): `Rows`, the
receiver core.runplan's walk hands each row to, and `plain`, when a canonical line equals a row
without a parse (shared with streamed.same_lines)."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping

from ..core.jsonio import MAX_DEPTH, MISSING, IdShapes, fast_decode, plain_loads, too_deep

END = object()
_NONE = object()
_SPLIT = re.compile(rb"\xc2\x85|\xe2\x80\xa8|\xe2\x80\xa9")   # U+0085, U+2028, U+2029: str.splitlines splits there


def plain(raw: bytes) -> bool:
    """True when a line that equals a canonical row's bytes needs no parse to be that row: nothing in it
    that jsonio.loads refuses (a lone surrogate escape, NaN, Infinity) or that splits it in two."""
    if b"\\ud" in raw or b"NaN" in raw or b"Infinity" in raw:   # (three substring scans: ~2x a regex's alternation)
        return False
    return raw.isascii() or _SPLIT.search(raw) is None


def free_string(items: Mapping[str, Any]) -> str | None:
    """The property of a case row whose value may be any string without changing the row's verdict:
    when `items` says only type object, required, properties and additionalProperties (each property's
    value then checked by its own schema alone, additionalProperties never looking at it) and that
    property's schema is only `{"type": "string"}`. None when there is none."""
    from ..schemas.fast import ANNOTATIONS
    if not set(items) <= ANNOTATIONS | {"type", "required", "properties", "additionalProperties"} \
            or items.get("type") != "object" or not isinstance(items.get("properties"), dict):
        return None
    for name, sub in items["properties"].items():
        if isinstance(sub, dict) and sub.get("type") == "string" and set(sub) <= ANNOTATIONS | {"type"}:
            return name
    return None


_VERDICTS_HELD = 4096   # row shapes whose verdict is kept


def _decoded(text: str) -> Any:
    """The faster decoder's parse of a row shape's text (jsonio.fast_decode), ValueError where it
    refuses (the row is then decoded and appended as always)."""
    doc = fast_decode(text)
    if doc is MISSING:
        raise ValueError("not taken by the faster decoder")
    return doc


class Rows:
    """The walk's receiver (core.runplan.read_plan_text's `table`): each case row checked against
    the schema's `items` (yes/no) and against the next expected row, then handed to `take`; none is
    kept but the first. An expected row given as its canonical line (bytes, as the check's spill
    holds it) equals a row whose own text is those bytes without a parse (`_plain`, as same_lines);
    any other row is compared with the line parsed.

    Two faster ways in (core.runplan._walk_cases), the answers the same:
    - with no expected rows: rows in bulk (`append_rows`), checked together.
    - with expected rows and no `take` (the check's results.json): a row whose text is the expected
      line is taken by its text (`take_text`), its verdict (the schema's `items`, too_deep) that of
      its shape: the text with its free string (`free_string`: results.json's case_id) replaced by
      a placeholder, parsed and checked once per shape. The verdict cannot depend on that string (the
      schema checks it only for being a string), and the shape's parse proves the replaced span was
      that property's whole value (the placeholder `\\u0000` is in no row text, and parses back at
      that key). Any row it cannot so take is decoded and appended as usual."""

    wants_text = True

    def __init__(self, item_valid: Callable[[Any], bool] | None, take: Callable[[Any], None] | None,
                 expected: Iterator[dict] | None, free: str | None = None) -> None:
        self.item_valid, self.take, self.expected = item_valid, take, expected
        self.first: Any = END
        self.count = 0
        self.valid = True
        self.same = expected is not None   # every row so far == the expected one
        self._want: Any = _NONE            # an expected row take_text read and left to append
        if expected is None:
            self.append_rows = self._append_rows
        elif take is None and free is not None:
            self.take_text = self._take_text
            self._shapes = IdShapes(_decoded, free, _VERDICTS_HELD)

    def append(self, row: Any, text: str | None = None) -> None:
        self.count += 1
        if self.first is END:
            self.first = row
        elif self.item_valid is not None and self.valid:
            try:
                self.valid = bool(self.item_valid(row)) and too_deep(row, MAX_DEPTH - 2) is None
            except RecursionError:
                self.valid = False
        if self.same:
            want = self._want
            if want is _NONE:
                want = next(self.expected, END)
            self._want = _NONE
            if type(want) is bytes:   # a canonical line: its own text, or parsed
                own = text is not None and want[:-1] == text.encode("utf-8", "surrogatepass") and plain(want)
                want = row if own else plain_loads(want)
            if row != want:
                self.same = False
        if self.take is not None:
            self.take(row)

    def _append_rows(self, rows: list) -> None:
        """`append` of each of `rows` (no expected rows here): their depth checked in one walk (a row
        nests deeper than MAX_DEPTH - 2 exactly when the list of them nests deeper than MAX_DEPTH - 1)."""
        if self.first is END:
            self.append(rows[0])
            rows = rows[1:]
        self.count += len(rows)
        if self.item_valid is not None and self.valid:
            try:
                self.valid = all(map(self.item_valid, rows)) and too_deep(rows, MAX_DEPTH - 1) is None
            except RecursionError:
                self.valid = False
        if self.take is not None:
            for row in rows:
                self.take(row)

    def _take_text(self, text: str, i: int) -> int | None:
        """The end of the row starting at i when its text is the next expected line and its verdict is
        its shape's (see the class docstring); None: append decides."""
        if not self.same or self.first is END or self._want is not _NONE:
            return None
        want = self._want = next(self.expected, END)
        if type(want) is not bytes:
            return None
        try:
            own = want[:-1].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return None
        if not text.startswith(own, i) or not plain(want):
            return None
        verdict = self._verdict(own)   # also the proof that `own` is one whole JSON object
        if verdict is None:
            return None
        if self.item_valid is not None and self.valid:
            self.valid = verdict
        self._want = _NONE
        self.count += 1
        return i + len(own)

    def _verdict(self, own: str) -> bool | None:
        """The verdict of the row whose text is `own`, from its shape (None: no shape to take it by;
        jsonio.IdShapes, parsed by the faster decoder: a text it refuses is decoded as always).
        True when there is no schema to check (the shape is still parsed: that proves `own` whole)."""
        got = self._shapes.shape(own)
        if got is None:
            return None
        entry = got[1]
        if entry[1] is None:
            row = entry[0]
            try:
                entry[1] = self.item_valid is None or (bool(self.item_valid(row))
                                                       and too_deep(row, MAX_DEPTH - 2) is None)
            except RecursionError:
                entry[1] = False
        return entry[1]

    def close(self) -> "Rows":
        return self
