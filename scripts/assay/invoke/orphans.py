"""What a later runner needs to kill the orphans of this one (runner contract §17, "A killed
runner"): `GroupRegistry` keeps, under `<scratch area>/pgroups/`, this runner's tag (written before
its first command starts; every command carries it in `ASSAY_RUNNER_TAG`) and one file per live
process group; `sweep()` at the next runner's pre-flight kills whatever of an earlier runner still
runs.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import threading
from pathlib import Path

from ..core import writer
from .procgroup import PROC, signal_group, boot_id, group_members, start_ticks

TAG_ENV = "ASSAY_RUNNER_TAG"     # in every command's environment: which runner started it
_TAG_PREFIX = "runner-"


class GroupRegistry:
    """What a later runner needs to kill the orphans of this one, on disk under `directory`.

    - `runner-<tag>`, written once **before the first command starts** (`arm`): every command
      gets `ASSAY_RUNNER_TAG=<tag>` in its environment, and its children inherit it, so a
      runner killed between starting a command and recording its group loses nothing.
    - one small file per live process group (written before the wait, removed after the group
      is gone), for a process that cleared its environment.

    A runner killed with SIGKILL leaves its files behind; `sweep()` (pre-flight of the next
    runner on that run id) kills what is still running. A normal end removes them (`close`)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._lock = threading.Lock()
        self._live: set[int] = set()
        self.tag = secrets.token_hex(12)
        self._armed = False

    def arm(self) -> dict[str, str]:
        """Record this runner's tag (once, before any command starts); returns the environment
        entry every command gets."""
        with self._lock:
            if not self._armed:
                writer.write_json(self.directory / f"{_TAG_PREFIX}{self.tag}",
                                  {"tag": self.tag, "boot_id": boot_id()}, indent=None)
                self._armed = True
        return {TAG_ENV: self.tag}

    def close(self) -> None:
        """The runner ends: kill what still runs, then forget the tag (nothing of ours is left)."""
        self.kill_live()
        with self._lock:
            if self._armed:
                (self.directory / f"{_TAG_PREFIX}{self.tag}").unlink(missing_ok=True)
                self._armed = False

    def add(self, pgid: int) -> None:
        with self._lock:
            self._live.add(pgid)
        doc = {"pgid": pgid, "boot_id": boot_id(), "start_ticks": start_ticks(pgid)}
        writer.write_json(self.directory / str(pgid), doc, indent=None)

    def remove(self, pgid: int) -> None:
        with self._lock:
            self._live.discard(pgid)
        try:
            (self.directory / str(pgid)).unlink()
        except FileNotFoundError:
            pass

    def kill_live(self) -> int:
        """SIGKILL every group this runner still has running (an interrupted run)."""
        with self._lock:
            live = sorted(self._live)
        for pgid in live:
            signal_group(pgid, signal.SIGKILL)
        return len(live)

    def sweep(self) -> list[int]:
        """Kill the groups an earlier runner recorded and never removed; returns their ids."""
        killed = []
        if not self.directory.is_dir():
            return killed
        me = boot_id()
        for path in sorted(self.directory.iterdir()):
            if path.name.startswith("."):
                path.unlink(missing_ok=True)
                continue
            if path.name.startswith(_TAG_PREFIX):
                if path.name != f"{_TAG_PREFIX}{self.tag}":
                    killed += _kill_tagged(path, me)
                    path.unlink(missing_ok=True)
                continue
            try:
                doc = json.loads(path.read_text(encoding="utf-8"))
                pgid = int(doc["pgid"])
            except (OSError, ValueError, KeyError, TypeError):
                path.unlink(missing_ok=True)
                continue
            if _is_that_group(pgid, doc, me):
                signal_group(pgid, signal.SIGKILL)
                killed.append(pgid)
            path.unlink(missing_ok=True)
        return sorted(set(killed))


def _kill_tagged(path: Path, me: str | None) -> list[int]:
    """SIGKILL the process group of every process that carries the tag recorded in `path`
    (same boot only; never this runner's own group). Returns the groups killed."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        tag = str(doc["tag"])
    except (OSError, ValueError, KeyError, TypeError):
        return []
    if (doc.get("boot_id") and me and doc["boot_id"] != me) or not PROC.is_dir():
        return []
    needle = f"{TAG_ENV}={tag}".encode()
    mine = os.getpgrp()
    groups: set[int] = set()
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            environ = (PROC / name / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            try:
                groups.add(os.getpgid(int(name)))
            except OSError:
                continue
    groups.discard(mine)
    for pgid in groups:
        signal_group(pgid, signal.SIGKILL)
    return sorted(groups)


def _is_that_group(pgid: int, doc: dict, me: str | None) -> bool:
    """The recorded group is still running (same boot; its members started no earlier than
    the recorded leader, so a recycled id of an older process is never hit)."""
    if doc.get("boot_id") and me and doc["boot_id"] != me:
        return False
    members = group_members(pgid)
    if members is None:  # no /proc: only while the recorded leader itself still leads the group
        try:
            return os.getpgid(pgid) == pgid
        except OSError:
            return False
    since = doc.get("start_ticks")
    for pid in members:
        ticks = start_ticks(pid)
        if since is None or (ticks is not None and ticks >= since):
            return True
    return False
