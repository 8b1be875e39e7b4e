"""What to pass instead of a path that is not a state dir, for the commands that take one (view.py,
run_history.py; make_plan.py and convert_suite.py for a run or reports dir): the mistakes a person makes first are a path that does not exist, the reports dir
itself, one run directory, and the app's directory that holds `.assay/`; each is answered with the
path that works."""

from __future__ import annotations

from pathlib import Path

from .ids import parse_run_id

RUN_FILES = ("results.json", "manifest.yaml", "run.log")


def run_dir_id(path: Path) -> str | None:
    """The run id of `path` when it is a run directory (a run id for its name, a run file in it), else None."""
    path = Path(path)
    if parse_run_id(path.name) and any((path / name).is_file() for name in RUN_FILES):
        return path.name
    return None


def _runs_in(path: Path) -> int:
    try:
        return sum(1 for p in path.iterdir() if p.is_dir() and not p.is_symlink() and parse_run_id(p.name))
    except OSError:
        return 0


def run_or_reports_dir(path: Path) -> str | None:
    """Why `path`, a directory given for a state dir, is a run directory or a reports dir instead, and the
    state dir to pass; None when it is neither."""
    path = Path(path)
    if run_dir_id(path):
        state = path.parent.parent if path.parent.name == "reports" else None
        instead = f"pass its state dir, {state}" if state is not None else "pass the state dir whose reports/ holds it"
        return f"{path} is a run directory, not a state dir: {instead} (the one whose reports/ holds the runs)"
    runs = _runs_in(path)
    if runs:
        return (f"{path} is a reports dir ({runs} run(s)), not a state dir: pass its parent, {path.parent} "
                "(the state dir holding reports/)")
    return None


def not_a_state_dir(path: Path) -> str:
    """Why `path` is not a state dir holding runs, and the path to pass instead."""
    path = Path(path)
    if not path.is_dir():
        there = "nothing is there" if not path.exists() else "a file"
        return f"{path}: not a directory ({there}); pass the app's state dir, the one holding reports/ (e.g. <app>/.assay)"
    instead = run_or_reports_dir(path)
    if instead is not None:
        return instead
    hidden = path / ".assay"
    if (hidden / "reports").is_dir() and not hidden.is_symlink():
        return f"{path}/reports: no reports directory; {hidden} holds one: pass that state dir, {hidden}"
    return (f"{path}/reports: no reports directory; run a suite first (run_cases.py --out {path}/reports/<run-id>) "
            "or pass the state dir that holds reports/")

