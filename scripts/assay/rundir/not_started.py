"""A run that never started (docs/runner-contract.md §10.4a).

A run stopped at pre-flight (exit 3: a missing variable, the app down, a span file that cannot
exist; exit 2 on the plan), or whose plan `make_plan.py` refused (a linter ERROR, a stale
converted.json), makes no run directory. Without a trace of it, `gate.py --latest`
would gate the newest run that did finish, an older one, and open on yesterday's green run
after today's run never reached the app. So the runner leaves one small file beside the run
dir, as it does its lock: `<reports>/.<run-id>.not-started.json` holding `{run_id, mode,
exit_code, error, at}` (written by the one writer: secrets redacted), removed when a run of that
id gets past pre-flight. `gate.py --latest` refuses (exit 2) when the newest thing of the mode
is such a file, naming the run and why it never started; the viewer's runs list says it above the
older runs (`newer_than` is that one rule, `reason` its words).

A run stopped in pre-flight without a refusal leaves no such file: Ctrl-C (SIGINT) there writes
one (exit 130), but SIGTERM or SIGKILL (a CI step's timeout, a cancelled job, a killed shell) while
the health check waits on a slow app ends the runner where it stands, and all that is left is its
lock file, `<reports>/.<run-id>.lock`, with no run dir beside it. That counts as a run that never
started too (`lock_record`): its runner may still be in pre-flight (it holds the lock) or gone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from ..core.ids import parse_run_id

SUFFIX = ".not-started.json"
_NAME = re.compile(r"^\.(.+)" + re.escape(SUFFIX) + "$")
_LOCK = re.compile(r"^\.(.+)\.lock$")


def marker_path(out: Path) -> Path:
    """Where a run dir's never-started file lives: beside it, hidden like its lock."""
    return out.parent / f".{out.name}{SUFFIX}"


def mark(out: Path, *, run_id: str, mode: str, exit_code: int, error: str, at: str, by: str | None = None,
         command: str | None = None) -> None:
    """Record that the run `out` never started; never fails the command (its error is the news).
    `by`: the command that refused it when it is not the runner (make_plan.py); `command`: the
    command that plans it again once the refusal is fixed."""
    from ..core import writer
    try:
        if out.exists() or out.is_symlink():
            return   # a run dir exists (a --resume): --latest reads that one
        record = {"run_id": run_id, "mode": mode, "exit_code": exit_code, "error": error, "at": at}
        extra = ({"by": by} if by else {}) | ({"command": command} if command else {})
        writer.write_json(marker_path(out), record | extra)
    except Exception:   # a full disk or a link there: the refusal itself still reaches the user
        pass


def clear(out: Path) -> None:
    """The run got past pre-flight: its never-started file (from an earlier try) goes."""
    try:
        os.unlink(marker_path(out))
    except OSError:
        pass


def _entries(reports_dir: Path, mode: str | None) -> list[tuple[str, str, str]]:
    """(stamp, run_id, file name) of every never-started file and every lock with no run dir
    beside it (of `mode`). A lock sorts after a never-started file of the same run id: the lock is
    from a later try (a refusal removes its lock after writing the file)."""
    found = []
    try:
        names = os.listdir(reports_dir)
    except OSError:
        return []
    for name in names:
        m = _NAME.match(name) or _LOCK.match(name)
        parsed = parse_run_id(m.group(1)) if m else None
        if not parsed or (mode is not None and parsed[0] != mode):
            continue
        if name.endswith(".lock") and os.path.lexists(Path(reports_dir) / m.group(1)):
            continue   # its run dir exists: that is the run (the gate reads it, interrupted or not)
        found.append((parsed[1], m.group(1), name))
    return found


def lock_record(lock: Path, run_id: str, mode: str) -> dict[str, Any]:
    """What a lock with no run dir beside it says: whose it was, and whether that runner lives."""
    from ..core.jsonio import read_json
    from .runlock import runner_state
    try:
        doc = read_json(lock)
    except (OSError, ValueError):
        doc = None
    doc = doc if isinstance(doc, dict) else {}
    return {"run_id": run_id, "mode": mode, "lock": str(lock), "runner": runner_state(lock),
            "pid": doc.get("pid"), "plan": doc.get("plan"), "out": doc.get("out")}


def newest(reports_dir: Path, mode: str | None = None) -> tuple[str, str, dict[str, Any]] | None:
    """(stamp, run_id, record) of the newest never-started run (of `mode`), or None."""
    from ..core.jsonio import read_json
    found = _entries(reports_dir, mode)
    if not found:
        return None
    stamp, run_id, name = max(found, key=lambda e: (e[0], e[1], e[2].endswith(".lock")))
    if name.endswith(".lock"):
        return stamp, run_id, lock_record(Path(reports_dir) / name, run_id, parse_run_id(run_id)[0])
    try:
        record = read_json(Path(reports_dir) / name)
    except (OSError, ValueError):
        record = None
    return stamp, run_id, record if isinstance(record, dict) else {}


def modes(reports_dir: Path) -> list[str]:
    """The modes that have a never-started run under `reports_dir`, sorted."""
    return sorted({parse_run_id(run_id)[0] for _, run_id, _ in _entries(reports_dir, None)})


def newer_than(reports_dir: Path, mode: str | None, stamp: str | None) -> tuple[str, str, dict[str, Any]] | None:
    """The newest never-started run of `mode` when it is newer than `stamp` (the run-id stamp of the
    newest run of the mode that did start; None: there is none), else None. Such a run is the mode's
    latest: no older run may be presented as its result."""
    never = newest(reports_dir, mode)
    if never is None or (stamp is not None and never[0] <= stamp):
        return None
    return never


def refused_plan(record: dict[str, Any]) -> bool:
    """The record is a plan make_plan.py refused: it never became a run (no runner was started)."""
    return record.get("by") == "make_plan.py" and not record.get("lock")


def headline(record: dict[str, Any], run_id: str, mode: str | None) -> str:
    """`the newest <mode> run, <run_id>, never started (<reason>)`; a runner still in pre-flight `has
    not started yet`; a plan make_plan.py refused is said to be one: `the newest <mode> plan, <run_id>,
    was refused (make_plan.py exit 2: ...): it never became a run`."""
    newest = f"the newest {mode} " if mode else "the newest "
    if refused_plan(record):
        return f"{newest}plan, {run_id}, was refused ({reason(record)}): it never became a run"
    verb = "has not started yet" if record.get("runner") == "alive" else "never started"
    return f"{newest}run, {run_id}, {verb} ({reason(record)})"


def fix(record: dict[str, Any]) -> str:
    """What to do about it (a sentence): for a refused plan, the command that plans it again."""
    if record.get("lock"):
        return ""
    if refused_plan(record):
        again = f": {record['command']}" if isinstance(record.get("command"), str) else ""
        return f"Fix what the refusal names and plan again{again}; then run the plan it writes."
    return "Fix what it names, plan and run again."


def reason(record: dict[str, Any]) -> str:
    """Why the run never started, from its file: `run_cases.py exit 3: <error>` (or `make_plan.py exit 2:
    ...` when the plan was refused); for a lock with no run dir, whether its runner is still in
    pre-flight or was stopped there, and how to go on."""
    if record.get("lock"):
        pid = f" (pid {record['pid']})" if isinstance(record.get("pid"), int) else ""
        if record.get("runner") == "alive":
            return (f"its runner{pid} holds {record['lock']} and is still in pre-flight, with no run directory "
                    "yet: wait for it, then gate again")
        how = "run it again under the same run id"
        if isinstance(record.get("plan"), str) and record["plan"] not in ("", "-", "rescore"):
            from .runlock import resume_command
            out = Path(record["out"]) if isinstance(record.get("out"), str) else Path(record["lock"]).parent / record["run_id"]
            how = f"start it over with: {resume_command(out, record)[0]}"
        return (f"its runner{pid} was stopped in pre-flight, before its run directory existed (killed or "
                f"terminated; only its lock file {record['lock']} is left): {how}, or delete that file")
    code, error, by = record.get("exit_code"), record.get("error"), record.get("by")
    by = by if by in ("make_plan.py",) else "run_cases.py"
    return f"{by} exit {code}: {error}" if isinstance(error, str) else "stopped at pre-flight"
