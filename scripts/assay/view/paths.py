"""Reading under <state>/reports/ only: run ids and case ids checked, no symlink ever followed.

Every read goes through `assay.core.writer.read_bytes` (O_NOFOLLOW) after
`refuse_symlinks_between` (no linked directory between the file and reports/). The viewer writes
nothing into the state dir.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.ids import is_safe_run_name as safe_run_id
from ..core.jsonio import id_line_parser, line_parser, loads
from ..core.writer import SymlinkError, read_bytes, refuse_symlinks_between

MAX_TEXT = 2_000_000


class NotFound(Exception):
    """A path the viewer will not serve (absent, unsafe, a symlink, a holdout case)."""


def run_dir(reports: Path, run_id: str) -> Path:
    if not safe_run_id(run_id):
        raise NotFound("bad run id")
    d = reports / run_id
    if d.is_symlink() or not d.is_dir():
        raise NotFound("no such run")
    return d


def read_raw(path: Path, root: Path) -> bytes:
    """The bytes of `path` under `root`; NotFound when absent, a symlink or under one."""
    try:
        refuse_symlinks_between(path, root)
        return read_bytes(path)
    except (SymlinkError, OSError):
        raise NotFound(str(path.name)) from None


def read_text(path: Path, root: Path, limit: int = MAX_TEXT) -> str | None:
    try:
        data = read_raw(path, root)
    except NotFound:
        return None
    text = data[:limit].decode("utf-8", "replace")
    return text + ("\n… (clipped by the viewer)" if len(data) > limit else "")


def read_json(path: Path, root: Path) -> Any:
    """Parsed JSON (manifest.yaml is JSON bytes), or None when absent or unreadable."""
    try:
        return loads(read_raw(path, root).decode("utf-8"))
    except (NotFound, UnicodeDecodeError, ValueError, RecursionError):
        return None


def read_jsonl(path: Path, root: Path) -> list[dict]:
    try:
        data = read_raw(path, root).decode("utf-8", "replace")
    except NotFound:
        return []
    rows, parse = [], id_line_parser(line_parser(data))   # rows share their parts: never changed here
    for line in data.splitlines():
        try:
            row = parse(line) if line.strip() else None
        except (ValueError, RecursionError):
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows
