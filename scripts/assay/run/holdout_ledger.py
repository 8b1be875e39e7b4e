"""The holdout ledger: where it is (confined to the state dir) and the one look a run appends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from ..core import writer
from ..core.errors import AssayError
from ..core.ids import utc_now_iso
from ..core.jsonio import loads
from ..core.runplan import RunPlan
from .run_paths import inside, state_dir_of


def ledger_path(plan: RunPlan) -> Path | None:
    """The holdout ledger for a holdout-touching plan, confined to the state dir."""
    if plan.selecting_split != "holdout" and plan.mode != "holdout":
        return None
    state = state_dir_of(plan)
    raw = Path(plan.paths["holdout_ledger"])
    path = raw if raw.is_absolute() else state / raw
    real = Path(os.path.realpath(path))
    if not inside(real, state):
        raise AssayError(f"plan paths.holdout_ledger {str(raw)!r} resolves outside the state dir "
                         f"{str(state)!r}; use datasets/holdout-looks.jsonl", 2, key="paths.holdout_ledger")
    writer.refuse_symlinks_between(path, state, "the holdout ledger path")
    return real


def append_ledger(path: Path, plan: RunPlan, stderr=None) -> int:
    """Append one look for this run id (never a second); return the running look count.

    The line is on disk (fsync'd, and the directory entry of a new ledger too) when this returns:
    the caller makes no holdout result readable before it. The read and the append are under an
    exclusive lock on the ledger, so two shards of one plan starting together write one line."""
    import fcntl
    stderr = stderr or sys.stderr
    path.parent.mkdir(parents=True, exist_ok=True)
    created = not (path.exists() or path.is_symlink())
    fd = writer.open_append(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        rows = []
        for line in writer.read_bytes(path).decode("utf-8").splitlines():
            try:
                rows.append(loads(line))
            except ValueError:
                continue
        if not any(isinstance(r, dict) and r.get("run_id") == plan.run_id for r in rows):
            reason = plan.manifest_extra.get("holdout_reason") or "run_cases.py holdout run"
            row = {"run_id": plan.run_id, "date": utc_now_iso(), "mode": plan.mode, "reason": reason}
            writer.write_all(fd, (json.dumps(row, sort_keys=True) + "\n").encode("utf-8"), path)
            os.fsync(fd)
            rows.append(row)
    finally:
        os.close(fd)   # releases the lock
    if created:
        _fsync_dir(path.parent)
    looks = len(rows)
    stderr.write(f"assay: holdout look {looks} recorded in {path.name} (run {plan.run_id}); "
                 f"{looks} look(s) so far{' - a reseal is due after 5' if looks >= 5 else ''}\n")
    return looks


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
