"""Where a case is written: its YAML file under the state dir's datasets/ and the line of the
expectation that failed (`datasets/c-1f2e.yaml:14`), as the file is on disk now.

A run dir does not name its cases' files, so the viewer finds them: first the usual name
(`datasets/<id>.yaml`, checked by its `id:` line), else an index of every case file's `id:` built
once per state dir on a background thread (a 10,000-file suite is never read on a request).
The line comes from the file's own parse (core.strict_yaml's line index), computed for a case
that is shown, once per file version. Nothing is read through a symlink (paths.read_raw).
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.strict_yaml import loads
from ..report.sections import EXPECT_KEYS
from .paths import NotFound, read_raw

DATASETS = "datasets"
SUFFIXES = (".yaml", ".yml")
SKIPPED_DIRS = ("templates",)
HEAD_BYTES = 65536
MAX_SOURCE = 200_000
_ID = re.compile(r"^id:[ \t]*(['\"]?)([^'\"#\s]+)\1[ \t]*(?:#.*)?$", re.M)
_INDEX: dict[str, dict] = {}
_LINES: dict[tuple, int | None] = {}
_LOCK = threading.Lock()


def _id_of(data: bytes) -> str | None:
    m = _ID.search(data[:HEAD_BYTES].decode("utf-8", "replace"))
    return m.group(2) if m else None


def _scan(state: Path, doc: dict) -> None:
    ids: dict[str, str] = {}
    root = state / DATASETS
    try:
        for d, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(x for x in dirs if x not in SKIPPED_DIRS and not x.startswith("."))
            for f in sorted(files):
                if not f.endswith(SUFFIXES) or f.startswith("dataset."):
                    continue
                path = Path(d) / f
                try:
                    cid = _id_of(read_raw(path, root))
                except NotFound:
                    continue
                if cid and cid not in ids:
                    ids[cid] = path.relative_to(state).as_posix()
    finally:
        doc["ids"] = ids
        doc["ready"].set()


def _index(state: Path) -> dict:
    key = str(state)
    with _LOCK:
        doc = _INDEX.get(key)
        if doc is None:
            doc = _INDEX[key] = {"ids": None, "ready": threading.Event()}
            threading.Thread(target=_scan, args=(state, doc), daemon=True, name="assay-view-sources").start()
    return doc


def source_path(state: Path, case_id: str, wait: float = 0.0) -> str | None:
    """The case file's path relative to the state dir, or None (not found, or the index of the
    datasets is still being built and `wait` s were not enough)."""
    root = state / DATASETS
    if root.is_symlink() or not root.is_dir():
        return None
    for suffix in SUFFIXES:
        path = root / f"{case_id}{suffix}"
        try:
            if _id_of(read_raw(path, root)) == case_id:
                return path.relative_to(state).as_posix()
        except NotFound:
            continue
    doc = _index(state)
    if wait > 0:
        doc["ready"].wait(wait)
    return (doc["ids"] or {}).get(case_id)


def expect_path(failure: dict | None) -> tuple[str, ...]:
    """The key path of what failed in the case file (`failure`: report.sections.first_failure):
    `expect.args.<tool>.<arg>` for a tool argument, `expect.answer.<check>` for an answer check,
    `expect.<key>` for another layer (report.sections.EXPECT_KEYS); () when no layer failed."""
    name = (failure or {}).get("layer")
    if not name:
        return ()
    check = failure.get("check") or {}
    if name == "judged":
        return ("expect", "rubrics")
    if name == "tool_selection" and check.get("tool"):
        return tuple(x for x in ("expect", "args", check["tool"], check.get("arg")) if x)
    if name == "answer" and check.get("check"):
        return ("expect", "answer", check["check"])
    keys = EXPECT_KEYS.get(name, (name,))
    return ("expect", keys[0]) if keys else ("expect",)


def source_line(state: Path, rel: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line of `path` (its deepest key the file has) in the case file, or None."""
    full = state / rel
    try:
        mtime = os.stat(full, follow_symlinks=False).st_mtime
    except OSError:
        return None
    key = (str(full), mtime, path)
    with _LOCK:
        if key in _LINES:
            return _LINES[key]
    line = None
    try:
        _, lines = loads(read_raw(full, state / DATASETS).decode("utf-8", "replace"), rel)
        line = lines.line_of(path) if path else None
        line = line or lines.line_of(("id",)) or 1
    except (NotFound, AssayError, ValueError, RecursionError):
        line = None
    with _LOCK:
        _LINES[key] = line
    return line


def where(state: Path, case_id: str, failure: dict | None, wait: float = 0.0) -> dict | None:
    """{"path", "line"} of a case's file and its failing expectation, or None when not found."""
    rel = source_path(state, case_id, wait)
    if rel is None:
        return None
    return {"path": rel, "line": source_line(state, rel, expect_path(failure))}


def source_doc(state: Path, case_id: str, failure: dict | None) -> dict[str, Any] | None:
    """where() plus the file's text (the case page shows the YAML with its path)."""
    found = where(state, case_id, failure, wait=5.0)
    if found is None:
        return None
    try:
        data = read_raw(state / found["path"], state / DATASETS)
    except NotFound:
        return None
    text = data[:MAX_SOURCE].decode("utf-8", "replace")
    return dict(found, text=text + ("\n… (clipped by the viewer)" if len(data) > MAX_SOURCE else ""))
