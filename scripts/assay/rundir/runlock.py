"""Reading the runner lock from outside the runner (docs/runner-contract.md §10.4).

The runner holds an exclusive `fcntl.flock` on `<reports>/.<run-id>.lock` while it owns a run id
(from before pre-flight to its exit); a reader that can take a shared one (non-blocking) knows no
runner is alive. These are the one reading of it, for wait_run, the gate, the viewer, the pytest
session and `gate.py --latest`'s rule for a run stopped before its run dir existed
(`assay.rundir.not_started`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..core.commands import SCRIPTS_DIR


def lock_path(run_dir: Path, run_id: str) -> Path:
    return Path(run_dir).parent / f".{run_id}.lock"


def runner_state(lock: Path) -> str:
    """'alive' when some process holds the lock exclusively, else 'gone'."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)  # a symlinked lock is "unknown", never followed
    except FileNotFoundError:
        return "gone"
    except OSError:
        return "unknown"
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return "alive"
        except OSError:
            return "unknown"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return "gone"
    finally:
        os.close(fd)


def resume_command(run_dir: Path, lock_doc: dict | None) -> tuple[str, str | None]:
    """(the exact --resume command, a note when the plan path had to be guessed). A rescore
    (`manifest_extra.rescored_from`) has no --resume and no plan file: the rescore.py command that
    scores its source again into a new run dir, and a note saying so."""
    run_dir = Path(run_dir).resolve()
    restart = rescore_restart(run_dir, lock_doc)
    if restart is not None:
        return restart
    runner = SCRIPTS_DIR / "run_cases.py"
    plan = (lock_doc or {}).get("plan")
    out = (lock_doc or {}).get("out") or str(run_dir)
    note = None
    if not isinstance(plan, str) or not plan or plan == "-":
        plan, found = _plan_of(run_dir)
        note = (f"the runner's lock did not record the plan path; {plan} is this run's plan (its run_id is "
                f"{run_dir.name})" if found else
                f"the runner's lock did not record the plan path; {plan} is where the run skill writes it "
                "(<state>/work/plan.json) -- use the plan this run was started from")
    return f'python3 "{runner}" --plan "{plan}" --out "{out}" --resume', note


def _plan_of(run_dir: Path) -> tuple[str, bool]:
    """(the plan a run was most likely started from, whether its run_id says so): the copy a pytest
    session keeps (<state>/work/pytest/<run-id>.plan.json), then the run skill's <state>/work/plan.json;
    that last path (unconfirmed) when neither names this run. A plan's cases are walked, not held."""
    from ..core.runplan import read_plan_text
    work = run_dir.parent.parent / "work"
    for path in (work / "pytest" / f"{run_dir.name}.plan.json", work / "plan.json"):
        try:
            walked = read_plan_text(path.read_text(encoding="utf-8"), _Dropped) if path.is_file() else None
        except (OSError, UnicodeDecodeError):
            walked = None
        if walked is not None and walked[0].get("run_id") == run_dir.name:
            return str(path), True
    return str(work / "plan.json"), False


class _Dropped:
    """A plan walk's case table that keeps nothing (only the top-level keys are read)."""

    def append(self, case: object) -> None:
        pass

    def close(self) -> "_Dropped":
        return self


def rescore_restart(run_dir: Path, lock_doc: dict | None = None) -> tuple[str, str] | None:
    """(command, note) for an interrupted rescore.py run, else None. Its plan lives only in the
    rescore's memory (the lock says `plan: rescore`), so `run_cases.py --plan ... --resume` cannot
    finish it: rescore the source run again into a new run dir (rescore.py refuses a non-empty --out)."""
    from ..core.ids import new_run_id, parse_run_id
    from .streamed import CasesFile
    try:
        doc = CasesFile(Path(run_dir) / "manifest.yaml", None)
        head = doc.whole if doc.whole is not None else doc.head
    except (OSError, UnicodeDecodeError, ValueError):
        head = None
    extra = head.get("manifest_extra") if isinstance(head, dict) else None
    source = extra.get("rescored_from") if isinstance(extra, dict) else None
    if not isinstance(source, dict) and (lock_doc or {}).get("plan") != "rescore":
        return None
    source = source if isinstance(source, dict) else {}
    state = Path(run_dir).parent.parent
    rel = source.get("run_dir")
    src = str(state / rel) if isinstance(rel, str) and rel else "<the source run dir>"
    parsed = parse_run_id(Path(run_dir).name)
    mode = parsed[0] if parsed else "<mode>"
    out = Path(run_dir).parent / new_run_id(mode)
    command = f'python3 "{SCRIPTS_DIR / "rescore.py"}" "{src}" --out "{out}"'
    note = (f"{Path(run_dir).name} is a rescore of run {source.get('run_id') or '(unknown)'}: a rescore has no "
            f"--resume (its plan is rebuilt each time, never written to a file), so rescore the source again into "
            f"a new run dir (any new {mode}-YYYYMMDDTHHMMSSZ id), then delete this interrupted one ({run_dir})")
    return command, note


def how_to_finish(run_dir: Path, lock_doc: dict | None) -> str:
    """The words after "killed?;" that every reader of an interrupted run says: `finish it with:
    <run_cases.py --resume command>`, or for a rescore the rescore.py command and why."""
    command, note = resume_command(run_dir, lock_doc)
    if rescore_restart(run_dir, lock_doc) is not None:
        return f"rescore it again: {command} ({note})"
    return f"finish it with: {command}"
