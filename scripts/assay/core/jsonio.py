"""Canonical JSON and atomic writes: no partial file is ever visible."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
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
    """Write to a temp file in the same directory, fsync-free, then os.replace."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike[str], value: Any, *, indent: int | None = 2) -> None:
    atomic_write_text(path, dumps(value, indent=indent) + "\n")


def atomic_write_jsonl(path: str | os.PathLike[str], rows: list[Any]) -> None:
    atomic_write_text(path, "".join(dumps(r, indent=None) + "\n" for r in rows))


def maybe_json(value: Any) -> Any:
    """A string holding JSON parsed (apps often send JSON as text); anything else unchanged."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file. Raises OSError / ValueError (json.JSONDecodeError, UnicodeDecodeError)."""
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode("utf-8"))


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    rows = []
    with open(path, "rb") as fh:
        for line in fh.read().decode("utf-8").splitlines():
            if line.strip():
                rows.append(json.loads(line))
    return rows
