"""A case's journal line as a pair reads it: its verdict record at PAIR_KEYS and `layers.judged`
alone, its files as text (compare.sides: ~1.7x sooner a line than the whole decode; ~0.8 CPU s of a
100,000-case comparison).

What a comparison reads of a case's verdict record: compare.pairs (the title, `layers.judged` for the
judge flips and provisional rubrics, `turns`, `repeats`) and the cost fold's trace-less cases
(stats.cost.case_light: `judge_usage`, `latency_ms`, `verdict`, `holdout`, `repeats`). msgspec
decodes those keys of the line into a dict holding the ones present (each value as the whole
decode gives it) and skips every other key of the verdict unread. A record whose whole verdict is
asked for (`LightRecord.verdict`: a traced or judged case's cost row, lift's skills layer) decodes the
line again as before (core.casestore.parse_text_line), once; the side then decodes its next lines whole.

`light_record(line)` answers only where it provably reads the line as the whole decode does (the
same case, the same files, the same values at those keys); on any other line it returns None and the
caller decodes the line whole, whose answer (a record, or none) is the old one. What msgspec does
not check in a value it skips, and the whole decode refuses, is guarded here:
- UTF-8: json refuses a line that is not UTF-8; a skipped string is not checked (a line that is not
  ASCII is decoded as UTF-8 first; json's surrogatepass takes an encoded surrogate: it goes whole).
- integers: json refuses one of more digits than `sys.get_int_max_str_digits()`; a skipped one is
  not parsed (a line holding such a run of digits goes whole).
- nesting: msgspec checks the depth of what it skips as of what it decodes, against the same
  recursion limit as json; the line is decoded inside WRAP arrays of one item each (a line closing
  them is refused), so it has less room than json's own decode of the line from the same caller
  (tests/test_compare_light_record.py holds the two at the limit).
A `layers` that is not an object is refused by the type (the whole decode decides: a pair raises
on one, as before); NaN, a lone surrogate escape, a bad number or escape anywhere is refused by msgspec.
"""

from __future__ import annotations

import sys
from typing import Any, TypedDict

from ..core import casestore, jsonio, writer


class _Layers(TypedDict, total=False):
    judged: Any


class _Verdict(TypedDict, total=False):
    """The verdict record's keys a pair and case_light read, as a dict of those present (msgspec
    skips any other key; `layers` holds `judged` alone, and must be an object)."""
    title: Any
    turns: Any
    repeats: Any
    judge_usage: Any
    latency_ms: Any
    verdict: Any
    holdout: Any
    layers: _Layers


PAIR_KEYS = tuple(_Verdict.__annotations__)
WRAP = 16   # arrays around the decoded line: less recursion room than json's decode (CPython 3.11 needs 6)
_OPEN, _CLOSE = b"[" * WRAP, b"]" * WRAP


class LightRecord(casestore.CaseRecord):
    """A case read by `light_record`: `pair_doc`, its verdict at PAIR_KEYS and `layers.judged` (the
    ones present); `files` as text, each encoded when read; `verdict`: the whole verdict record,
    decoded from the line on first use (`on_whole` is then called: the side reads its next lines
    whole, a traced or judged run's every case needing them)."""

    def __init__(self, case_id: str, pair_doc: dict, files: dict, line: bytes, on_whole: Any) -> None:
        self.case_id, self.pair_doc, self.files = case_id, pair_doc, files
        self._line, self._on_whole, self._whole = line, on_whole, None

    @property
    def verdict(self) -> dict:   # type: ignore[override]
        return self.whole().verdict

    def whole(self) -> casestore.CaseRecord:
        if self._whole is None:
            if self._on_whole is not None:
                self._on_whole()
            self._whole = casestore.parse_text_line(self._line)   # the record: light_record took the line
        return self._whole

    def read(self, name: str) -> bytes | None:
        if name == casestore.VERDICT:
            return self.whole().read(name)
        text = self.files.get(name)
        return writer.encode(text) if text is not None else None


def pair_verdict(record: casestore.CaseRecord) -> dict:
    """The verdict record a pair reads: a LightRecord's `pair_doc`, else the record's verdict."""
    return record.pair_doc if isinstance(record, LightRecord) else record.verdict


def light_record(line: bytes, on_whole: Any = None) -> LightRecord | None:
    """The journal line's case as a LightRecord, or None: the line is to be decoded whole (see the
    module docstring), as when msgspec is not engaged (jsonio.bulk)."""
    decode = jsonio.fast_typed(_line_type)
    if decode is None or not (line.isascii() or _utf8(line)) or _long_digits(line):
        return None
    try:
        got = decode(b"".join((_OPEN, line, _CLOSE)))
    except Exception:   # noqa: BLE001 -- any refusal (bad JSON, a wrong type, too deep): the whole decode decides
        return None
    for _ in range(WRAP):
        got = got[0]
    return LightRecord(got.case_id, got.verdict, got.files, line, on_whole)


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _long_digits(line: bytes) -> bool:
    """Whether the line holds a run of more ASCII digits than an integer json takes. A run longer
    than the limit covers a multiple of it: only the digits found at those offsets are measured."""
    limit = sys.get_int_max_str_digits()
    if not limit:
        return False
    for at in range(limit, len(line), limit):
        if 48 <= line[at] <= 57:
            start, end = at, at + 1
            while start > 0 and 48 <= line[start - 1] <= 57:
                start -= 1
            while end < len(line) and 48 <= line[end] <= 57:
                end += 1
            if end - start > limit:
                return True
    return False


def _line_type(msgspec: Any) -> Any:
    """A journal line typed as `light_record` decodes it (inside WRAP arrays of one item): no top-level
    key but the three (a repeated key: the last, as json's), the files a map of strings."""
    class Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
        case_id: str
        verdict: _Verdict
        files: dict[str, str]

    kind: Any = Line
    for _ in range(WRAP):   # one value each: the line itself, never `{...}], [...` closing the wrap
        kind = tuple[kind]
    return kind
