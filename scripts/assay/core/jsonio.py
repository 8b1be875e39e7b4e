"""Canonical JSON and atomic writes: no partial file is ever visible."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any


def dumps(value: Any, *, indent: int | None = 2, sort_keys: bool = True) -> str:
    """UTF-8 JSON text as every assay file is written (sorted keys, no ASCII escaping)."""
    return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)


def canonical(value: Any) -> str:
    """Compact, sorted, deterministic JSON: what a SHA-256 of a document is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical(value).encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Atomic write through the one artifact writer (core.writer: secrets redacted, no symlink)."""
    from . import writer
    writer.write_bytes(path, data)


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    from . import writer
    writer.write_text(path, text)


def atomic_write_json(path: str | os.PathLike[str], value: Any, *, indent: int | None = 2) -> None:
    from . import writer
    writer.write_json(path, value, indent=indent)


def atomic_write_jsonl(path: str | os.PathLike[str], rows: list[Any]) -> None:
    from . import writer
    writer.write_jsonl(path, rows)


def maybe_json(value: Any) -> Any:
    """A string holding JSON parsed (apps often send JSON as text); anything else unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def loads(text: str | bytes) -> Any:
    """json.loads whose too-deep input is a ValueError like any other bad JSON (never a RecursionError)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


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
