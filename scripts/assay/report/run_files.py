"""Reading a run's JSON and JSONL files (results.json, manifest.yaml, verdicts.jsonl, ...): each
file's errors worded once (AssayError naming the file and the fix), a 100,000-row file walked or
shared rather than held twice. `report.rundir` (what a run dir is) reads through here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.jsonio import MAX_DEPTH, IdShapes, id_line_parser, line_parser, loads, too_deep
from ..core.writer import read_bytes
from .cases_cut import head_past_cases


def read_json_file(path: Path) -> Any:
    """Parse a JSON file; raise AssayError(2) naming the file and the fix."""
    try:
        return loads(read_bytes(path).decode("utf-8"), max_depth=MAX_DEPTH)
    except FileNotFoundError:
        raise AssayError(f"{path}: file not found", 2, path=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AssayError(f"{path}: not readable UTF-8 JSON ({exc}); re-check the run with "
                         f"`run_cases.py --verify {Path(path).parent}`", 2, path=str(path)) from None


def try_json(path: Path) -> Any:
    """Parse a JSON file, or None when it is absent or unreadable (a file mid-write counts as absent)."""
    try:
        return loads(read_bytes(path).decode("utf-8"), max_depth=MAX_DEPTH)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def try_json_head(path: Path, take: Any = None) -> Any:
    """`try_json` of a file whose `cases` array is not wanted (manifest.yaml, results.json: 100,000
    rows at 100,000 cases): its top-level keys without `cases`, the rows walked one at a time and
    dropped. None exactly when try_json is None; a document the walk cannot take is parsed whole.
    The answer is kept while the file is unchanged (the gate asks for the manifest's keys 6 times):
    read it, never change it. `take(row)`, when given, sees every case row (nothing is kept then)."""
    import os
    if take is not None:
        return _json_head(path, take)
    try:
        st = os.stat(path)
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _HEADS:
        return _HEADS[key]
    head = _json_head(path)
    if key is not None:
        if len(_HEADS) >= 8:
            _HEADS.clear()
        _HEADS[key] = head
    return head


_HEADS: dict[tuple, Any] = {}


def _json_head(path: Path, take: Any = None) -> Any:
    from ..rundir.streamed import CasesFile
    deep = _DeepRows(take)
    try:
        doc = CasesFile(Path(path), None, deep)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if doc.whole is not None:   # parsed whole (a small file, or one the walk does not take): try_json's answer
        whole = doc.whole
        if too_deep(whole, MAX_DEPTH) is not None:
            return None
        if not isinstance(whole, dict) or not isinstance(whole.get("cases"), list):
            return whole
        for row in whole["cases"] if take is not None else ():
            take(row)
        return {k: v for k, v in whole.items() if k != "cases"}
    return doc.head if not deep.deep and too_deep(doc.head, MAX_DEPTH) is None else None


class _DeepRows:
    """A walk's `take` noting whether any case row nests deeper than MAX_DEPTH allows (it sits at
    depth 3: the document, its `cases` array, the row)."""

    def __init__(self, take: Any = None) -> None:
        self.deep, self.take = False, take

    def __call__(self, row: Any) -> None:
        if not self.deep and too_deep(row, MAX_DEPTH - 2) is not None:
            self.deep = True
        if self.take is not None:
            self.take(row)


class _SharedRows(list):
    """results.json's case rows, read one at a time (core.runplan's walk), each row's `layers`,
    `failed_layers` and `verdict` one object for every equal row: 100,000 rows hold a handful of
    layer maps, not 100,000 (the rows are read, never mutated, by every reader of a run)."""

    def __init__(self, check_depth: bool = True) -> None:
        super().__init__()
        self.memo: dict[Any, Any] = {}
        self.deep = _DeepRows()
        self.check_depth = check_depth

    def append(self, row: Any) -> None:
        super().append(self.shared(row))

    def shared(self, row: Any) -> Any:
        """`row` with its parts shared as the class docstring says."""
        if self.check_depth:
            self.deep(row)
        if isinstance(row, dict):
            memo = self.memo
            # the parser makes each row's key strings anew: one set of them for every row alike
            keys = tuple(row)
            shared_keys = memo.setdefault(("keys", keys), keys)
            if shared_keys is not keys:
                row = dict(zip(shared_keys, row.values()))
            layers = row.get("layers")
            if isinstance(layers, dict) and all(type(v) is str for v in layers.values()):
                key = ("layers", *layers.items())
                row["layers"] = memo.setdefault(key, layers)
            failed = row.get("failed_layers")
            if isinstance(failed, list) and all(type(v) is str for v in failed):
                row["failed_layers"] = memo.setdefault(("failed", *failed), failed)
            verdict = row.get("verdict")
            if type(verdict) is str:
                row["verdict"] = memo.setdefault(verdict, verdict)
            if len(memo) > 100_000:   # rows that share nothing: stop sharing, never grow without bound
                memo.clear()
        return row

    def close(self) -> "_SharedRows":
        return self


def read_results_file(path: Path, *, rows: bool = True) -> Any:
    """`read_json_file` of a results.json: the same document, its case rows shared as `_SharedRows`
    says (the document parsed whole, with its errors, whenever the walk does not take it).
    `rows=False`: its top-level keys only (the rows walked and dropped; no `cases` key)."""
    import os

    from ..core.runplan import read_plan_text
    from ..rundir.streamed import WALK_ABOVE
    try:
        small = os.stat(path).st_size <= WALK_ABOVE
    except OSError:
        small = True
    if small:   # parsed whole, as it always was (no second read)
        doc = read_json_file(path)
        return doc if rows or not isinstance(doc, dict) else {k: v for k, v in doc.items() if k != "cases"}
    try:
        data = read_bytes(path)
        head = None if rows else head_past_cases(data)
        if head is not None:
            return head
        text = data.decode("utf-8")
        del data
    except (OSError, UnicodeDecodeError):
        return read_json_file(path)   # its error, worded as always
    walked = read_plan_text(text, _SharedRows if rows else _DroppedRows)
    del text
    if walked is None or walked[1] is None or walked[1].deep.deep or too_deep(walked[0], MAX_DEPTH) is not None \
            or list(walked[0]) != sorted(walked[0]):
        doc = read_json_file(path)
        return doc if rows or not isinstance(doc, dict) else {k: v for k, v in doc.items() if k != "cases"}
    top, cases = walked
    if not rows:
        return top
    cases.memo.clear()
    return {key: top[key] if key != "cases" else cases for key in sorted([*top, "cases"])}


class _DroppedRows:
    """A walk's table that keeps no case row (only whether one nests too deep)."""

    def __init__(self) -> None:
        self.deep = _DeepRows()

    def append(self, row: Any) -> None:
        self.deep(row)

    def close(self) -> "_DroppedRows":
        return self


def read_jsonl_file(path: Path, *, share: bool = False, take: Any = None) -> list[dict]:
    """Rows of a JSONL file (absent file -> []); a bad line is AssayError(2) naming file and line.
    `share`: equal `layers` maps, `failed_layers` lists and verdicts one object (read-only rows,
    e.g. verdicts.jsonl of a 100,000-case run for a comparison). `take` (with `share`): each row
    handed to it as it is read, none kept (the list returned is empty)."""
    path = Path(path)
    rows = _SharedRows(check_depth=False) if share else []   # loads() checks each row's depth
    text = _jsonl_text(path)
    if text is None:
        return []
    parse = line_parser(text, max_depth=MAX_DEPTH)   # loads(line, max_depth=MAX_DEPTH), sooner
    if share:   # the rows are read-only: lines alike but for their case id are parsed once
        parse = id_line_parser(parse)
    for lineno, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        row = _parsed(parse, line, path, lineno)
        if isinstance(row, dict):
            if take is not None and share:
                take(rows.shared(row))
            else:
                rows.append(row)
    return list(rows) if share else rows


def read_jsonl_by_id(path: Path, keep: Any, key: str = "case_id") -> dict[str, Any]:
    """`{row[key]: keep(row without key)}` over read_jsonl_file(path)'s rows whose `key` is a string,
    in the order of each id's first row (a later row of an id replaces its value), with the same
    errors. Each row is shared as `_SharedRows` says before `keep` sees it. `keep` must answer from
    the row's value alone (read-only rows: verdicts.jsonl for a comparison): it is asked once per
    shape of line (lines alike but for their id, jsonio.IdShapes), its answer kept for every line
    of that shape; 100,000 lines of a handful of shapes are a find and a dict look-up each, not a
    parse, a copy and two sharing passes."""
    path = Path(path)
    text = _jsonl_text(path)
    if text is None:
        return {}
    parse = line_parser(text, max_depth=MAX_DEPTH)   # loads(line, max_depth=MAX_DEPTH), sooner
    shapes = IdShapes(parse, key)
    share = _SharedRows(check_depth=False).shared   # loads() checks each row's depth
    out: dict[str, Any] = {}
    for lineno, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        got = shapes.shape(line)
        if got is not None:   # its shape's parse, the id put back: read from the shape once
            entry = got[1]
            if entry[1] is None:
                entry[1] = (keep(share({k: v for k, v in entry[0].items() if k != key})),)
            out[got[0]] = entry[1][0]
            continue
        row = _parsed(parse, line, path, lineno)
        if isinstance(row, dict) and isinstance(row.get(key), str):
            out[row[key]] = keep(share({k: v for k, v in row.items() if k != key}))
    return out


def _jsonl_text(path: Path) -> str | None:
    """A JSONL file's text (None: absent); AssayError(2) when it is not readable UTF-8."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AssayError(f"{path}: not readable UTF-8 ({exc})", 2, path=str(path)) from None


def _parsed(parse: Any, line: str, path: Path, lineno: int) -> Any:
    try:
        return parse(line)
    except ValueError as exc:
        raise AssayError(f"{path}:{lineno}: not a JSON line ({exc})", 2, path=str(path), line=lineno) from None


_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")   # and, in a text not all ASCII:
_OTHER_BREAKS_WIDE = _OTHER_BREAKS + ("\x85", "\u2028", "\u2029")


def split_lines(text: str):
    """`text.splitlines()`, one line at a time (a 100,000-line file is not held twice). A text whose
    only line breaks are newlines (what assay writes) is cut at each by `str.find` (a 100,000-line
    verdicts.jsonl in 0.06 s instead of 1 s)."""
    start = 0
    if not any(brk in text for brk in (_OTHER_BREAKS if text.isascii() else _OTHER_BREAKS_WIDE)):
        find = text.find
        while (end := find("\n", start)) >= 0:
            yield text[start:end]
            start = end + 1
        if start < len(text):
            yield text[start:]
        return
    for m in _BREAKS.finditer(text):
        yield text[start:m.start()]
        start = m.end()
    if start < len(text):
        yield text[start:]


_SUMMARY_KEY = b'\n  "summary": '
TAIL_BYTES = 1 << 20


def file_tail(path: Path, size: int = TAIL_BYTES) -> bytes | None:
    """The file's last `size` bytes, never read through a symlink; None when it cannot be opened or read."""
    import os

    from ..core.writer import open_file
    try:
        fd = open_file(path, os.O_RDONLY)
    except (OSError, AssayError):
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - size))
            return fh.read(size)
    except OSError:
        return None


def status_from_tail(path: Path) -> str | None:
    """summary.status of a results.json as the runner writes it (sorted keys: `summary` the last
    top-level key, at two spaces of indent), read from the file's last MiB without walking its case
    rows; None when the tail is not that shape (the caller reads the whole file). A raw newline
    never occurs inside a JSON string, so the key at that indent is top-level; the object must close
    the document. A caller that skips work on this answer confirms it against the whole file."""
    import json
    tail = file_tail(path)
    if tail is None:
        return None
    at = tail.rfind(_SUMMARY_KEY)
    if at < 0:
        return None
    try:
        text = tail[at + len(_SUMMARY_KEY):].decode("utf-8")
        summary, end = json.JSONDecoder().raw_decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if text[end:].strip() != "}" or not isinstance(summary, dict):
        return None
    status = summary.get("status")
    return status if isinstance(status, str) else None
