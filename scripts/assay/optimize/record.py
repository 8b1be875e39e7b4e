"""`<state>/candidates/`: where each candidate is recorded, read back checked, and logged.

Nothing here follows a symlink: `candidates/`, `candidates/<id>/`, `candidate.json` and
`log.jsonl` are refused when they are links (exit 2 naming the path), and candidate.json is
checked against its shape before any field of it is used (exit 2 naming the file and key),
since it is a file a person may edit by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core import writer
from ..core.errors import AssayError
from ..core.ids import is_safe_case_id
from ..core.jsonio import atomic_write_json
from ..report.rundir import read_json_file
from .gitops import BLOB_RE, surface_problem

STATUSES = ("open", "rejected", "reverted", "revert_failed", "kept")


def cand_dir(state: Path, cid: str) -> Path:
    if not is_safe_case_id(cid):
        raise AssayError(f"--id {cid!r}: use 1-128 characters of [A-Za-z0-9._-]", 2)
    return state / "candidates" / cid


def _no_links(state: Path, *paths: Path) -> None:
    for path in paths:
        writer.refuse_symlinks_between(path, state, "inside the state dir's candidates/")
        writer.refuse_symlink(path, "inside the state dir's candidates/")


def append_log(state: Path, row: dict[str, Any]) -> None:
    path = state / "candidates" / "log.jsonl"
    _no_links(state, path.parent)
    path.parent.mkdir(parents=True, exist_ok=True)
    _no_links(state, path)
    fd = writer.open_append(path)
    try:
        writer.append_all(fd, writer.encode(json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"), path)
    finally:
        os.close(fd)


def make_dir(state: Path, cid: str) -> Path:
    cdir = cand_dir(state, cid)
    _no_links(state, cdir.parent)
    if cdir.exists() or cdir.is_symlink():
        raise AssayError(f"candidate {cid!r} already exists ({cdir}); pick another --id", 2)
    cdir.parent.mkdir(parents=True, exist_ok=True)
    _no_links(state, cdir.parent)
    os.mkdir(cdir)
    return cdir


def save(state: Path, cid: str, doc: dict[str, Any]) -> None:
    path = cand_dir(state, cid) / "candidate.json"
    _no_links(state, path)
    atomic_write_json(path, doc)


def load(state: Path, cid: str) -> dict[str, Any]:
    path = cand_dir(state, cid) / "candidate.json"
    _no_links(state, path)
    if not path.is_file():
        raise AssayError(f"candidate {cid!r}: {path} not found; start one with `candidate.py new`", 2)
    doc = read_json_file(path)
    problem = shape_problem(doc, cid)
    if problem:
        key, why = problem
        raise AssayError(f"{path}: {key} {why}; candidate.json is written by `candidate.py new` - restore it "
                         "(from git) or start a new candidate", 2, path=str(path), key=key)
    return doc


def shape_problem(doc: Any, cid: str) -> tuple[str, str] | None:
    """(key, what is wrong) for a candidate.json that is not the shape `new` writes, else None."""
    if not isinstance(doc, dict):
        return "(root)", f"is {type(doc).__name__}, not an object"
    if doc.get("id") != cid:
        return "id", f"is {doc.get('id')!r}, not {cid!r}"
    app = doc.get("app")
    if not isinstance(app, str) or not app or "\x00" in app or not os.path.isabs(app):
        return "app", "must be the app checkout's absolute path (a string)"
    if doc.get("status") not in STATUSES:
        return "status", f"is {doc.get('status')!r}, not one of {', '.join(STATUSES)}"
    surfaces = doc.get("surfaces")
    if not isinstance(surfaces, list) or not surfaces:
        return "surfaces", "must be a non-empty list of {path, blob}"
    seen = set()
    for i, s in enumerate(surfaces):
        if not isinstance(s, dict):
            return f"surfaces[{i}]", "must be an object {path, blob}"
        why = surface_problem(s.get("path"))
        if why:
            return f"surfaces[{i}].path", f"({s.get('path')!r}) {why}"
        if s["path"] in seen:
            return f"surfaces[{i}].path", f"({s['path']!r}) is listed twice"
        seen.add(s["path"])
        if not isinstance(s.get("blob"), str) or not BLOB_RE.match(s["blob"]):
            return f"surfaces[{i}].blob", "must be a git blob id (40 or 64 lowercase hex digits)"
    if "decisions" in doc and not isinstance(doc["decisions"], list):
        return "decisions", "must be a list"
    return None


UNREVERTED = ("open", "rejected", "revert_failed")   # its recorded blob would still be written back by a revert


def holders(state: Path, app: str, path: str) -> list[tuple[str, str]]:
    """(id, status) of each candidate of this app that records `path` as a surface and was neither kept
    nor reverted: its revert writes its recorded blob over the file, whoever edited it since."""
    root = state / "candidates"
    if not root.is_dir() or root.is_symlink():
        return []
    out = []
    for cdir in sorted(root.iterdir()):
        if cdir.is_symlink() or not cdir.is_dir() or not is_safe_case_id(cdir.name):
            continue
        try:
            doc = load(state, cdir.name)
        except AssayError:
            continue   # unreadable: its own revert refuses it, naming the file and key
        if doc["status"] in UNREVERTED and doc["app"] == app and any(s["path"] == path for s in doc["surfaces"]):
            out.append((cdir.name, doc["status"]))
    return out
