"""Canonical JSON and atomic writes: no partial file is ever visible."""

from __future__ import annotations

import json
import os
import re
from itertools import repeat
from typing import Any


def dumps(value: Any, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    """UTF-8 JSON text as every assay file is written (sorted keys, no ASCII escaping)."""
    return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)


def canonical(value: Any) -> str:
    """Compact, sorted, deterministic JSON: what a SHA-256 of a document is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_json(value: Any) -> str:
    import hashlib   # (OpenSSL) loaded by the first digest, not by every command that reads JSON
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    import hashlib
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike[str]) -> str:
    """sha256 (hex) of a file, read in chunks, never through a symlink."""
    import hashlib
    from .writer import open_file
    digest = hashlib.sha256()
    fd = open_file(path, os.O_RDONLY)
    try:
        while True:
            chunk = os.read(fd, 4 << 20)
            if not chunk:
                return digest.hexdigest()
            digest.update(chunk)
    finally:
        os.close(fd)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Atomic write through the one artifact writer (core.writer: secrets redacted, no symlink)."""
    from . import writer
    writer.write_bytes(path, data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> bytes:
    """Write through the writer's choke point; returns the bytes that landed (redacted)."""
    from . import writer
    return writer.write_text(path, text)


def atomic_write_json(path: str | os.PathLike[str], value: Any, *, indent: int | None = 2) -> None:
    from . import writer
    writer.write_json(path, value, indent=indent)


def atomic_write_jsonl(path: str | os.PathLike[str], rows: list[Any]) -> None:
    from . import writer
    writer.write_jsonl(path, rows)


def maybe_json(value: Any) -> Any:
    """A string holding JSON parsed (apps often send JSON as text); anything else unchanged.
    NaN, Infinity and lone surrogates in it come back as `core.hostile.HostileText`."""
    if isinstance(value, str):
        from .hostile import loads as app_loads
        try:
            return app_loads(value)[0]
        except (ValueError, RecursionError):
            return value
    return value


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
MAX_DEPTH = 100   # no document assay reads (plan, adapter, run files) nests deeper than this


MISSING = object()   # what dig() returns when the path names nothing (a JSON value may be null)


def dig(node: Any, parts: Any) -> Any:
    """The value at `parts` (keys of objects, decimal indexes of arrays) inside a JSON value, or MISSING."""
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return MISSING
    return node


def shallow(value: Any) -> bool:
    """True when `value` nests at most two levels of containers (a dict or list whose containers
    hold none): a row of a run file, whose depth `too_deep` then need not walk."""
    if isinstance(value, dict):
        items = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return True
    for v in items:
        if isinstance(v, dict):
            if any(map(isinstance, v.values(), repeat(_CONTAINERS))):
                return False
        elif isinstance(v, list):
            if any(map(isinstance, v, repeat(_CONTAINERS))):
                return False
    return True


_CONTAINERS = (dict, list)


def too_deep(value: Any, limit: int = MAX_DEPTH) -> str | None:
    """The key path (`a.b[0]`) of the first container nested deeper than `limit`, else None.
    Iterative: safe on any depth the parser let through. A shallow container (a row of a run
    file) that ends within `limit` is not walked, and a path is spelled only for the one returned."""
    if not isinstance(value, _CONTAINERS) or (limit >= 2 and shallow(value)):
        return None
    stack: list[tuple[Any, int, Any, Any]] = [(value, 1, None, None)]   # (container, depth, parent's entry, key)
    while stack:
        entry = stack.pop()
        item, depth = entry[0], entry[1]
        if depth > limit:
            return _path_of(entry) or "(root)"
        skip = depth + 2 <= limit   # a shallow child's containers end at depth + 2
        for k, v in (item.items() if isinstance(item, dict) else enumerate(item)):
            if isinstance(v, _CONTAINERS) and not (skip and shallow(v)):
                stack.append((v, depth + 1, entry, k))
    return None


def _path_of(entry: tuple) -> str:
    steps = []
    while entry[2] is not None:
        steps.append((isinstance(entry[2][0], list), entry[3]))
        entry = entry[2]
    path = ""
    for in_list, k in reversed(steps):
        path = f"{path}[{k}]" if in_list else (f"{path}.{k}" if path else str(k))
    return path


# --- a faster decoder for big reads (the `fast` extra: msgspec), the same answers
# msgspec's JSON decoder accepts a subset of what json.loads accepts (it refuses NaN and Infinity, a
# number beyond a double, a lone surrogate escape, nesting past its limit) and gives the same value
# on it (integers of any size exact, floats correctly rounded, the last of a repeated key); on
# anything it refuses, the standard library's decoder runs and gives its own value or its own
# error. So every reader answers as without it (tests/test_fast_json.py holds the two apart on
# hostile input and on real runs), ~2.5x sooner a journal line. It is engaged only once a process
# reads FAST_ABOVE bytes of JSON at once (its import costs ~10 ms, which small reads never repay);
# ASSAY_FAST_JSON_ABOVE=<bytes> moves that (0: always; a huge value: never).
FAST_ABOVE = 4 << 20
_fast: Any = None       # msgspec's decode, once engaged
_fast_tried = False


def bulk(nbytes: int) -> None:
    """A reader is about to decode `nbytes` of JSON: engage the faster decoder when that is enough."""
    global _fast, _fast_tried
    if _fast_tried or nbytes < _fast_above():
        return
    _fast_tried = True
    try:
        from msgspec.json import Decoder
    except ImportError:   # not installed: the standard library's decoder, as always
        return
    _fast = Decoder().decode


def _fast_above() -> int:
    raw = os.environ.get("ASSAY_FAST_JSON_ABOVE", "").strip()
    try:
        return max(0, int(raw)) if raw else FAST_ABOVE
    except ValueError:
        return FAST_ABOVE


def fast_decode(data: str | bytes) -> Any:
    """The faster decoder's value of `data`, or MISSING when it is not engaged or refuses `data`
    (the caller then asks the standard library, whose answer that is)."""
    if _fast is None:
        return MISSING
    try:
        return _fast(data)
    except Exception:   # noqa: BLE001 -- any refusal (bad JSON, too deep, not UTF-8): json decides
        return MISSING


def fast_typed(kind: Any) -> Any:
    """msgspec's JSON decode into the type `kind(msgspec)` builds (once per `kind`), or None when the
    faster decoder is not engaged (`bulk`). A typed decode answers only for input of that type: the
    caller proves that its answer is the standard library's on what it takes, and reads the rest
    as before."""
    if _fast is None:
        return None
    decode = _TYPED.get(kind)
    if decode is None:
        import msgspec
        decode = _TYPED[kind] = msgspec.json.Decoder(kind(msgspec)).decode
    return decode


_TYPED: dict[Any, Any] = {}


def plain_loads(data: str | bytes) -> Any:
    """json.loads(data): the same value or the same exception (sooner once `bulk` engaged msgspec)."""
    doc = fast_decode(data)
    return json.loads(data) if doc is MISSING else doc


def loads(text: str | bytes, *, max_depth: int | None = None) -> Any:
    """json.loads whose too-deep input is a ValueError like any other bad JSON (never a
    RecursionError); with `max_depth`, a document nested deeper than that is refused too."""
    bulk(len(text))
    doc = fast_decode(text)   # its value passes every check below (no constant, finite, no lone surrogate)
    if doc is not MISSING:
        if max_depth is not None:
            _refuse_deeper(doc, max_depth)
        return doc
    try:
        doc = json.loads(text, parse_constant=no_constant, parse_float=finite_float)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None
    if SURROGATE_ESCAPE.search(text if isinstance(text, str) else text.decode("utf-8", "replace")):
        try:  # an escaped surrogate is fine in a pair; a lone one is not text and cannot be written back
            json.dumps(doc, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone UTF-16 surrogate escape (\\ud800-\\udfff): not text") from None
    if max_depth is not None:
        _refuse_deeper(doc, max_depth)
    return doc


def _refuse_deeper(doc: Any, max_depth: int) -> None:
    where = too_deep(doc, max_depth)
    if where is not None:
        raise ValueError(f"JSON nested deeper than {max_depth} levels at {_short(where)}")


def line_parser(text: str, *, max_depth: int | None = None) -> Any:
    """A function parsing each line of the JSONL `text` exactly as `loads(line, max_depth=max_depth)`
    does (the same value or the same ValueError), ~1.5x faster a line: `loads_line`, its check for an
    escaped surrogate made once over `text` (none in it: none in a line)."""
    bulk(len(text))
    parse = loads_line if SURROGATE_ESCAPE.search(text) else _parse_line
    if max_depth is None:
        return parse

    def parse_within(line: str) -> Any:
        doc = parse(line)
        _refuse_deeper(doc, max_depth)
        return doc
    return parse_within


def id_line_parser(parse: Any, key: str = "case_id", limit: int = 4096) -> Any:
    """`parse` (a function of one JSONL line) for rows that differ mostly by one top-level string,
    `key` (verdicts.jsonl: ten thousand lines, a handful of shapes): a line `IdShapes` takes is parsed
    once per shape and the row is a copy of that parse with the string put back. The answer is
    `parse(line)`'s (the same value; any line the shape parse does not take, and any error, is
    `parse(line)` itself), but rows share their nested values: read them, never change them."""
    shapes = IdShapes(parse, key, limit)

    def parse_row(line: str) -> Any:
        got = shapes.shape(line)
        if got is None:
            return parse(line)
        row = dict(got[1][0])
        row[key] = got[0]
        return row
    return parse_row


class IdShapes:
    """JSONL lines alike but for one top-level string, `key`: a line whose only `"key": "` holds a
    plain string (no escape, nothing unprintable: its text is its value) is parsed once per shape,
    the line with that string written as `\\u0000` (in a line holding no `\\u0000`, so the parse's
    NUL at `key` can only be that string's). At most `limit` shapes are kept."""

    def __init__(self, parse: Any, key: str = "case_id", limit: int = 4096) -> None:
        self.parse, self.key, self.limit = parse, key, limit
        self.marker = f'"{key}": "'
        self.shapes: dict[str, list] = {}

    def shape(self, line: str) -> tuple[str, list] | None:
        """(the line's `key` string, [its shape's parse, a slot for the caller: None until it sets it,
        kept with the shape]) when parse(line) is that parse with the string at `key`; None when the
        line is not read by its shape (parse(line) is the answer, or its error)."""
        marker = self.marker
        at = line.find(marker)
        if at < 0 or line.find(marker, at + 1) >= 0 or _NUL_ESCAPE in line:
            return None
        start = at + len(marker)
        end = line.find('"', start)
        value = line[start:end]
        if end < 0 or "\\" in value or not value.isprintable():
            return None
        shape_text = line[:start] + _NUL_ESCAPE + line[end:]
        entry = self.shapes.get(shape_text)
        if entry is None:
            try:
                shape = self.parse(shape_text)
            except ValueError:
                return None
            if not (isinstance(shape, dict) and shape.get(self.key) == "\x00"):
                return None
            entry = [shape, None]
            if len(self.shapes) < self.limit:
                self.shapes[shape_text] = entry
        return value, entry


_NUL_ESCAPE = "\\u0000"


def loads_line(line: str) -> Any:
    """`loads(line)` (the same value or the same ValueError) for one line of a JSONL file read a line
    at a time (run.log), ~2x faster: one decoder for every line; `loads` itself only for a line
    holding an escaped surrogate (its lone-surrogate check)."""
    if SURROGATE_ESCAPE.search(line):
        return loads(line)
    return _parse_line(line)


def _parse_line(line: str) -> Any:
    if line.startswith("\ufeff"):
        return loads(line)   # its own words for a byte-order mark
    if _fast is not None:
        doc = fast_decode(line)
        if doc is not MISSING:
            return doc
    try:
        return _DECODER.decode(line)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {_short(text)} is too large for a double (assay never writes one)")
    return value


def no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (assay never writes NaN or Infinity)")


_DECODER = json.JSONDecoder(parse_constant=no_constant, parse_float=finite_float)   # what `loads` parses with


def _short(path: str) -> str:
    from .writer import redact_text   # a key of an app's JSON may hold a secret: redact, then cut
    path = redact_text(path)
    return path if len(path) <= 120 else path[:60] + " … " + path[-40:]


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file, never through a symlink (core.writer.SymlinkError, exit 2).
    Raises OSError / ValueError (bad JSON, not UTF-8, nested too deeply)."""
    from .writer import read_bytes
    return loads(read_bytes(path).decode("utf-8"))


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    from .writer import read_bytes
    rows = []
    for line in read_bytes(path).decode("utf-8").splitlines():
        if line.strip():
            rows.append(loads(line))
    return rows
