"""Where a run may write: the state dir, the --out rules, and what a start killed before its
manifest.yaml leaves behind (pre-flight step 1; nothing here writes but `clear_unstarted`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from ..core import casestore, writer
from ..core.errors import AssayError


def state_dir_of(plan: Mapping[str, Any]) -> Path:
    p = Path(plan["paths"]["state_dir"])
    try:
        is_dir = p.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL byte: not a directory either
        is_dir = False
    if not is_dir:
        raise AssayError(f"plan paths.state_dir {str(p)!r} is not a directory; rebuild the plan with "
                         "make_plan.py --state-dir <app>/.assay", 2, key="paths.state_dir")
    real = p.resolve()
    problem = not_a_state_dir(real)
    if problem:
        raise AssayError(f"plan paths.state_dir {str(p)!r} {problem}; the runner writes only under an assay "
                         "state dir's reports/. Rebuild the plan with make_plan.py --state-dir <app>/.assay",
                         2, key="paths.state_dir")
    return real


STATE_DIR_MARKERS = ("adapter.yaml", "profile.yaml", "datasets", "reports")


def not_a_state_dir(path: Path) -> str | None:
    """Why `path` (resolved) is not an assay state dir, or None. A state dir holds at least one
    of STATE_DIR_MARKERS and is never the filesystem root or the home directory (a hand-edited
    `state_dir: "/"` must not let --out point anywhere)."""
    if path == Path(path.anchor):
        return "is the filesystem root, not an assay state dir"
    try:
        if path == Path.home().resolve():
            return "is the home directory, not an assay state dir"
    except (OSError, RuntimeError):
        pass
    if not any((path / m).exists() for m in STATE_DIR_MARKERS):
        return f"is not an assay state dir (it holds none of {', '.join(STATE_DIR_MARKERS)})"
    return None


def inside(child: Path, parent: Path) -> bool:
    try:
        child.relative_to(parent)
        return True
    except ValueError:
        return False


def check_out(plan: Mapping[str, Any], out_arg: str, *, resume: bool, name: str | None = None) -> Path:
    """The --out rules: basename = run_id (or `name`: a shard's), inside the state dir, no symlink,
    empty unless --resume."""
    try:
        return _check_out(plan, out_arg, resume=resume, name=name)
    except (OSError, ValueError) as exc:  # e.g. a path component longer than the filesystem allows
        raise AssayError(f"--out {out_arg!r}: unusable path ({exc}); use --out <state>/reports/"
                         f"{name or plan['run_id']}", 2, key="--out") from None


def _check_out(plan: Mapping[str, Any], out_arg: str, *, resume: bool, name: str | None = None) -> Path:
    out = Path(os.path.abspath(out_arg))
    name = name or plan["run_id"]
    if out.name != name:
        what = "the plan's run_id" if name == plan["run_id"] else "the plan's run_id and the shard (<run_id>.shard-<I>)"
        raise AssayError(f"--out {out_arg!r}: its last path component must be {name!r}, {what} "
                         f"(use --out <state>/reports/{name})", 2, key="--out")
    state = state_dir_of(plan)
    real = out.parent.resolve() / out.name
    if inside(real, state):  # never through a link: the run dir, reports/ and anything between
        writer.refuse_symlinks_between(out, state, "on the --out path inside the state dir")
    if out.is_symlink() or not inside(real, state / "reports"):
        raise AssayError(f"--out {out_arg!r} is outside the state dir's reports/ {str(state / 'reports')!r} "
                         f"(or a symlink); use --out {state}/reports/{name}", 2, key="--out")
    if resume:
        if out.is_dir():  # --resume reads, rewrites and deletes in here: no link anywhere inside
            writer.refuse_symlinks_in(out, what="inside the run directory --resume would repair")
        if out.exists() and not (out / "manifest.yaml").is_file() and unstarted_debris(out) is None:
            raise AssayError(f"--resume: {out_arg} is not a run directory (no manifest.yaml); start the run "
                             "without --resume", 2, key="--out")
    elif out.exists() and (not out.is_dir() or any(out.iterdir())):
        from ..rundir.runlock import lock_path, runner_state
        if runner_state(lock_path(out, out.name)) == "alive":   # --resume would be refused too: say what is
            raise AssayError(f"--out {out_arg}: another runner is running run {out.name} right now (it holds "
                             f"{lock_path(out, out.name)}); wait for it with wait_run.py {out_arg}, or use a "
                             "new run id", 2, key="--out")
        finished = _finished(out)
        if finished:   # nothing to finish there: a second run of a plan needs its own run id
            raise AssayError(f"--out {out_arg} already holds a finished run (status {finished}); a new run needs a "
                             "new run id (make_plan.py gives each plan its own: plan again), or read that run "
                             "(gate.py, compare_runs.py)", 2, key="--out")
        hint = (" (a start that was killed before its manifest.yaml was written: --resume starts it over)"
                if out.is_dir() and unstarted_debris(out) is not None else "")
        raise AssayError(f"--out {out_arg} already exists and is not empty{hint}; pass --resume to finish that "
                         "run, or use a new run id", 2, key="--out")
    return out


def _finished(out: Path) -> str | None:
    """The status of the finished run `out` holds (ok, or how it stopped), else None."""
    from ..report.run_files import status_from_tail
    if not out.is_dir() or out.is_symlink() or not (out / "manifest.yaml").is_file():
        return None
    status = status_from_tail(out / "results.json")
    return status if status not in (None, "running") else None


# What a runner killed in its first milliseconds can leave before manifest.yaml exists.
_START_DEBRIS = (casestore.LEGACY_DIR, casestore.JOURNAL, "results.json", "run.log")


def unstarted_debris(out: Path) -> list[Path] | None:
    """A run dir with no manifest.yaml and no finished case (a kill before pre-flight wrote the
    manifest): the entries to clear so the run starts over, [] for an empty dir. None when it
    holds anything else (a manifest, a verdict.json, a file the runner never writes)."""
    if not out.is_dir() or (out / "manifest.yaml").exists():
        return None
    found: list[Path] = []
    for entry in out.iterdir():
        temp = entry.name.startswith(".") and entry.name.endswith(".tmp")
        if entry.is_symlink() or not (entry.name in _START_DEBRIS or temp):
            return None
        if entry.name == casestore.JOURNAL and (not entry.is_file() or entry.stat().st_size):
            return None   # a journal with a finished case in it
        if entry.name == casestore.LEGACY_DIR:   # an older runner's case dirs
            if not entry.is_dir():
                return None
            for cdir in entry.iterdir():
                if cdir.is_symlink() or not cdir.is_dir() or (cdir / casestore.VERDICT).exists():
                    return None
        found.append(entry)
    return found


def clear_unstarted(out: Path) -> bool:
    """--resume on a run that never got its manifest: clear the debris (under the runner lock) so
    the run starts over as a fresh one. False when `out` is not such a dir."""
    debris = unstarted_debris(out)
    if debris is None:
        return False
    for entry in debris:
        writer.remove_tree(entry)
    return True
