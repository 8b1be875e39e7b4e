"""The few git plumbing calls the candidate bookkeeping needs, each with a clear refusal."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..core.errors import AssayError


def git(app: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", "-C", str(app), *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise AssayError("git is not installed; candidate bookkeeping needs the app in a git repository", 2) from None
    if proc.returncode != 0:
        raise AssayError(f"git {' '.join(args)} failed in {app}: {proc.stderr.strip() or proc.stdout.strip()}", 2,
                         git=list(args))
    return proc.stdout


def check_repo(app: Path) -> None:
    if not app.is_dir():
        raise AssayError(f"--app {app}: not a directory (pass the app's git checkout)", 2)
    try:
        git(app, "rev-parse", "--show-toplevel")
    except AssayError:
        raise AssayError(f"--app {app}: not inside a git repository; candidates are recorded as git blobs, "
                         "so the app must be a git checkout (`git init` and commit first)", 2) from None


def dirty(app: Path, path: str) -> str:
    return git(app, "status", "--porcelain", "--", path).strip()


def head_blob(app: Path, path: str) -> str:
    try:
        return git(app, "rev-parse", f"HEAD:./{path}").strip()
    except AssayError:
        raise AssayError(f"surface {path}: not tracked at HEAD in {app}; commit it first (a candidate must be "
                         "revertible to a recorded blob)", 2, surface=path) from None


def worktree_blob(app: Path, path: str) -> str:
    return git(app, "hash-object", "--", path).strip()


def checkout(app: Path, path: str) -> None:
    git(app, "checkout", "--", path)
