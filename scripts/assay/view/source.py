"""Where a case is written: its YAML file under the state dir's datasets/ and the line of the
expectation that failed (`datasets/c-1f2e.yaml:14`), as the file is on disk now.

A run dir does not name its cases' files, so the viewer finds them: first the usual name
(`datasets/<id>.yaml`, checked by its `id:` line), else an index of every case file's `id:` built
once per state dir on a background thread that yields to requests (a 10,000-file suite is never
read on a request). The line is found by reading the file's keys by indentation (no YAML parse):
the run page asks for its shown failing rows only (one read each, once while the run's index
lives), the case page for its case. Nothing is read through a symlink (O_NOFOLLOW under a
datasets/ that is not a link; paths.read_raw below it).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from pathlib import Path
from typing import Any

from ..report.sections import EXPECT_KEYS
from ..core.writer import SymlinkError, read_bytes
from .paths import NotFound, read_raw
from .quiet import wait_quiet, waiting

DATASETS = "datasets"
SUFFIXES = (".yaml", ".yml")
SKIPPED_DIRS = ("templates",)
HEAD_BYTES = 65536
SCAN_BATCH = 200
MAX_SOURCE = 200_000
_ID = re.compile(r"^id:[ \t]*(['\"]?)([^'\"#\s]+)\1[ \t]*(?:#.*)?$", re.M)
_INDEX: dict[str, dict] = {}
_LOCK = threading.Lock()


def _id_of(data: bytes) -> str | None:
    m = _ID.search(data[:HEAD_BYTES].decode("utf-8", "replace"))
    return m.group(2) if m else None


def _scan(state: Path, doc: dict) -> None:
    ids: dict[str, str] = {}
    root = state / DATASETS
    seen = 0
    try:
        for d, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = sorted(x for x in dirs if x not in SKIPPED_DIRS and not x.startswith("."))
            for f in sorted(files):
                if not f.endswith(SUFFIXES) or f.startswith("dataset."):
                    continue
                path = Path(d) / f
                seen += 1
                if seen % SCAN_BATCH == 0:
                    wait_quiet()  # yields to the requests being answered, like the viewer's other passes
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


def datasets_ok(state: Path) -> bool:
    """The state dir has a datasets/ directory that is not a symlink (a linked one is never read)."""
    try:
        return stat.S_ISDIR(os.lstat(state / DATASETS).st_mode)
    except OSError:
        return False


def _find(state: Path, case_id: str, wait: float = 0.0, checked: bool | None = None) -> tuple[str, bytes] | None:
    """(the case file's path relative to the state dir, its bytes), or None: not found, or the
    index of the datasets is still being built and `wait` s were not enough. `checked`: the
    caller's datasets_ok(state), asked once for a page of rows."""
    root = state / DATASETS
    if not (datasets_ok(state) if checked is None else checked):
        return None
    for suffix in SUFFIXES:
        path = root / f"{case_id}{suffix}"
        try:  # a direct child of the checked datasets/: O_NOFOLLOW on the file is the whole check
            data = read_bytes(path)
        except (SymlinkError, OSError):
            continue
        if _id_of(data) == case_id:
            return path.relative_to(state).as_posix(), data
    doc = _index(state)
    if wait > 0 and not doc["ready"].is_set():
        with waiting():
            doc["ready"].wait(wait)
    rel = (doc["ids"] or {}).get(case_id)
    if rel is None:
        return None
    try:
        return rel, read_raw(state / rel, root)
    except NotFound:
        return None


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


# (the blanks before the colon start only after a non-blank: the lazy key then never ends inside a long run of
# blanks to scan the rest of it again, quadratic on a padded line of a mined case; the same matches)
_KEY = re.compile(r"""(?:- +)?(["']?)([^"'#{}\[\],:]+?)\1(?<![ \t])[ \t]*:(?:[ \t]|$)""")


def key_line(text: str, path: tuple[str, ...]) -> int | None:
    """The 1-based line of the deepest key of `path` the YAML text has in block style (a flow
    mapping's inner keys are on their parent's line), read by indentation: no parse, so a page of
    100 failing rows costs a read and a scan each."""
    lines = text.splitlines()
    best, start, parent = None, 0, -1
    for depth, key in enumerate(path):
        found = None
        for i in range(start, len(lines)):
            raw = lines[i]
            body = raw.lstrip(" ")
            if not body or body.startswith("#"):
                continue
            indent = len(raw) - len(body)
            if indent <= parent:
                break  # left the parent's block
            m = _KEY.match(body)
            if m and m.group(2).strip() == key and (depth or indent == 0):
                found = (i, indent)
                break
        if found is None:
            break
        best, start, parent = found[0] + 1, found[0] + 1, found[1]
    return best


def where(state: Path, case_id: str, failure: dict | None, wait: float = 0.0, checked: bool | None = None) -> dict | None:
    """{"path", "line"} of a case's file and of what failed in it (`failure`: report.sections'
    first_failure; line None without one), read once; None when the file is not found."""
    found = _find(state, case_id, wait, checked)
    if found is None:
        return None
    rel, data = found
    path = expect_path(failure)
    line = None
    if path:
        text = data[:MAX_SOURCE].decode("utf-8", "replace")
        line = key_line(text, path) or key_line(text, ("id",)) or 1
    return {"path": rel, "line": line}


def source_doc(state: Path, case_id: str, failure: dict | None) -> dict[str, Any] | None:
    """where() plus the file's text (the case page shows the YAML with its path)."""
    found = _find(state, case_id, wait=5.0)
    if found is None:
        return None
    rel, data = found
    text = data[:MAX_SOURCE].decode("utf-8", "replace")
    path = expect_path(failure)
    line = (key_line(text, path) or key_line(text, ("id",)) or 1) if path else key_line(text, ("id",))
    return {"path": rel, "line": line, "text": text + ("\n… (clipped by the viewer)" if len(data) > MAX_SOURCE else "")}
