"""The cache directory: `<state>/cache/v1/` (docs/runner-contract.md, "Record and replay").

    exchanges/<k[:2]>/<k>.json      one app exchange (request, response, trace)
    calls/<kind>/<k[:2]>/<k>.json   one model call (judge, simulator)
    cases/<h[:2]>/<h>.json          per case (h = sha256 of the case id): the requests in order
    apps/<a>.json                   one per app recorded into it (a = sha256 of adapter.yaml app.name):
                                    what ties a bare cache to its app (`--replay` of another app: exit 2)

Every file is written through the one writer (`core.writer`: secrets redacted, never via a
symlink, temp + rename), so a reader sees a whole entry or none, and two shards or two runs
writing the same key at once leave one whole entry (same key, same request)."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from ..core import writer
from ..core.errors import AssayError
from ..core.jsonio import loads
from ..core.resources import is_runner_resource
from .key import sha256_text

LAYOUT = "v1"
KINDS = ("judge", "simulator")
SECTIONS = ("exchanges", "cases", "apps") + tuple(f"calls/{k}" for k in KINDS)   # the directories under v1/
_STRIPES = [threading.Lock() for _ in range(64)]   # one writer per path inside this process
_IGNORE_LOCK = threading.Lock()


def cache_dir(state: Path) -> Path:
    """The default cache of a state dir."""
    return Path(state) / "cache"


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.base = self.root / LAYOUT
        self._ignored = False
        if writer.is_symlink(self.root) or writer.is_symlink(self.base):
            raise AssayError(f"the cache {self.root} is a symlink; point --replay/--record at a real directory", 2,
                             key="cache")

    # ---- paths ---------------------------------------------------------------
    def exchange_path(self, key: str) -> Path:
        return self.base / "exchanges" / key[:2] / f"{key}.json"

    def call_path(self, kind: str, key: str) -> Path:
        return self.base / "calls" / kind / key[:2] / f"{key}.json"

    def case_path(self, case_id: str) -> Path:
        h = sha256_text(case_id)
        return self.base / "cases" / h[:2] / f"{h}.json"

    def app_path(self, app_name: str | None) -> Path:
        return self.base / "apps" / f"{sha256_text(app_name or '')[:16]}.json"

    # ---- which apps it holds -------------------------------------------------
    def mark_app(self, app_name: str | None) -> None:
        """Record that this cache holds recordings of `app_name` (adapter.yaml app.name; None: unnamed)."""
        path = self.app_path(app_name)
        if not path.is_file():
            self.write(path, {"app_name": app_name})

    def apps(self) -> list[str | None] | None:
        """The apps recorded into this cache (None for an adapter without app.name), or None when no
        recording named its app (a cache written before recordings did, or an empty one)."""
        top = self.base / "apps"
        if not top.is_dir() or top.is_symlink():
            return None
        names = [self.read_entry(path, "app_name", (str, type(None)), "the app's name (adapter.yaml app.name) or null")
                 for path in sorted(top.glob("*.json"))]
        found = {doc.get("app_name") for doc in names if doc is not None}
        return sorted(found, key=lambda n: (n is None, n or "")) if found else None

    # ---- read / write --------------------------------------------------------
    def read(self, path: Path) -> dict | None:
        try:
            doc = loads(writer.read_bytes(path).decode("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise AssayError(f"the cache entry {path} is unreadable ({exc}); delete it (cache.py prune) and "
                             "record again", 2, key="cache") from None
        return doc if isinstance(doc, dict) else None

    def read_entry(self, path: Path, key: str, shape: Any, what: str) -> dict | None:
        """An entry whose `key` must be a `shape` (a hand-edited file otherwise): None when absent,
        exit 2 naming the file and the fix when it has the wrong shape."""
        doc = self.read(path)
        if doc is not None and not (isinstance(doc.get(key), shape)
                                    and (shape is not list or all(isinstance(r, dict) for r in doc[key]))):
            raise AssayError(f"the cache entry {path} is malformed: {key!r} must be {what} (edited by hand?); delete "
                             "the file (or the cache, cache.py prune --older-than 0s) and record again with "
                             "run_cases.py --record", 2, key="cache")
        return doc

    def write(self, path: Path, doc: dict) -> None:
        try:
            self._write(path, doc)
        except OSError as exc:   # a full disk or no descriptor left: core.resources says it (exit 5)
            if is_runner_resource(exc):
                raise
            raise self.unwritable(exc.filename or path, exc.errno, during_run=True) from None

    def unwritable(self, where: Any, num: int | None, *, during_run: bool) -> AssayError:
        """THE error of a cache that cannot be written: a file where one of its directories should be,
        or a directory it may not write. Pre-flight (`--record`, before any case is sent) exit 3;
        during the run (a judge or simulator call, a case's recording) exit 5, finished cases kept."""
        why = os.strerror(num) if num else "cannot be written"
        fix = ("a file stands where the cache keeps a directory: move it aside (the cache holds only recordings)"
               if num in (errno.ENOTDIR, errno.EEXIST) else "make that directory writable")
        then = ("the run stopped; every finished case is on disk: fix it and run again with --resume and the same "
                "flags" if during_run else "nothing was sent to the app: fix it and run again")
        return AssayError(f"the cache {self.root} cannot be written: {where} ({why}); {fix}, or record into "
                          f"another state dir's cache; {then}", 5 if during_run else 3, key="cache", path=str(where))

    def check_writable(self) -> None:
        """--record, at pre-flight and without writing: every directory the recording writes into is a
        directory (or can be made) that this process may write; else `unwritable` (exit 3)."""
        for section in ("",) + SECTIONS:
            path = self.base / section if section else self.root
            probe = path
            while not os.path.lexists(probe) and probe.parent != probe:
                probe = probe.parent
            if not probe.is_dir():
                raise self.unwritable(probe, errno.ENOTDIR, during_run=False)
            if not os.access(probe, os.W_OK | os.X_OK):
                raise self.unwritable(probe, errno.EROFS if _read_only_fs(probe) else errno.EACCES,
                                      during_run=False)

    def _write(self, path: Path, doc: dict) -> None:
        if not self._ignored:   # the cache holds the app's answers: never committed by accident
            with _IGNORE_LOCK:    # the first writes of a run come from many case workers at once
                ignore = self.root / ".gitignore"
                if not self._ignored and not ignore.exists() and not ignore.is_symlink():
                    self.root.mkdir(parents=True, exist_ok=True)
                    writer.write_bytes(ignore, b"# run_cases.py --record: the app's recorded answers; keep out "
                                               b"of git\n*\n")
                self._ignored = True
        path.parent.mkdir(parents=True, exist_ok=True)
        data = writer.encode(writer.dumps(doc, indent=None) + "\n")
        with _STRIPES[hash(str(path)) % len(_STRIPES)]:
            writer.write_bytes(path, data)

    # ---- stats / prune ---------------------------------------------------------
    def entries(self) -> Iterator[tuple[str, Path]]:
        """(section, path) of every entry file: section exchanges, cases, calls/<kind>."""
        for section in ("exchanges", "cases") + tuple(f"calls/{k}" for k in KINDS):
            top = self.base / section
            if not top.is_dir():
                continue
            for sub in sorted(top.iterdir()):
                if sub.is_dir() and not sub.is_symlink():
                    for path in sorted(sub.iterdir()):
                        if path.name.endswith(".json") and not path.name.startswith("."):
                            yield section, path

    def stats(self) -> dict[str, Any]:
        sections: dict[str, dict[str, int]] = {}
        oldest = newest = None
        for section, path in self.entries():
            st = path.lstat()
            row = sections.setdefault(section, {"entries": 0, "bytes": 0})
            row["entries"] += 1
            row["bytes"] += st.st_size
            oldest = st.st_mtime if oldest is None else min(oldest, st.st_mtime)
            newest = st.st_mtime if newest is None else max(newest, st.st_mtime)
        return {"cache": str(self.root), "layout": LAYOUT, "apps": self.apps(), "sections": sections,
                "entries": sum(r["entries"] for r in sections.values()),
                "bytes": sum(r["bytes"] for r in sections.values()),
                "oldest": _iso(oldest), "newest": _iso(newest)}

    def prune(self, older_than_s: float, *, now: float | None = None, dry_run: bool = False) -> dict[str, Any]:
        """Delete entries last written more than `older_than_s` ago (a re-record refreshes them)."""
        cutoff = (time.time() if now is None else now) - older_than_s
        removed = kept = freed = 0
        for _section, path in list(self.entries()):
            st = path.lstat()
            if st.st_mtime < cutoff:
                removed += 1
                freed += st.st_size
                if not dry_run:
                    os.unlink(path)
            else:
                kept += 1
        for tmp in self.base.glob("**/.*.tmp") if self.base.is_dir() else []:
            if tmp.lstat().st_mtime < cutoff and not dry_run:   # a killed writer's leftover
                os.unlink(tmp)
        return {"cache": str(self.root), "removed": removed, "kept": kept, "bytes_freed": freed,
                "dry_run": dry_run, "older_than_s": older_than_s}


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: str) -> float:
    """`30d`, `12h`, `90m`, `3600s`, `2w` -> seconds; anything else is exit 2 naming the flag."""
    raw = str(text).strip().lower()
    unit = raw[-1:] if raw[-1:] in _UNITS else ""
    try:
        value = float(raw[: -1] if unit else raw)
    except ValueError:
        value = -1.0
    if not unit or not value >= 0 or value == float("inf"):
        raise AssayError(f"--older-than {text!r}: use a number and a unit s, m, h, d or w (e.g. 30d)", 2,
                         key="--older-than")
    return value * _UNITS[unit]
