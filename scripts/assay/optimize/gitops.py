"""The few git plumbing calls the candidate bookkeeping needs, each with a clear refusal.

Every call runs with every `GIT_*` variable removed from the environment (a `GIT_DIR` or
`GIT_WORK_TREE` left in the shell must not point a revert at another repository) and with
`--literal-pathspecs` (a path is a path: `:/`, `*` or `:(glob)` never widen it to more files).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path, PurePosixPath

from ..core.errors import AssayError

BLOB_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
PLAIN_FILE_MODES = ("100644", "100755")   # a tracked symlink (120000) or submodule (160000) is refused


def clean_env() -> dict[str, str]:
    """The environment without any GIT_* variable (and with prompts off: never wait for a person)."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("GIT_")}
    env["GIT_TERMINAL_PROMPT"] = "0"
    return env


def git_bytes(app: Path, *args: str) -> bytes:
    try:
        proc = subprocess.run(["git", "--literal-pathspecs", "-C", str(app), *args], capture_output=True,
                              timeout=60, env=clean_env(), stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise AssayError("git is not installed; candidate bookkeeping needs the app in a git repository", 2) from None
    if proc.returncode != 0:
        said = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()
        raise AssayError(f"git {' '.join(args)} failed in {app}: {said}", 2, git=list(args))
    return proc.stdout


def git(app: Path, *args: str) -> str:
    return git_bytes(app, *args).decode("utf-8", "replace")


def toplevel(app: Path) -> Path:
    if not app.is_dir():
        raise AssayError(f"--app {app}: not a directory (pass the app's git checkout)", 2)
    try:
        return Path(git(app, "rev-parse", "--show-toplevel").strip())
    except AssayError:
        raise AssayError(f"--app {app}: not inside a git repository; candidates are recorded as git blobs, "
                         "so the app must be a git checkout (`git init` and commit first)", 2) from None


def check_repo(app: Path) -> None:
    toplevel(app)


def surface_problem(path: object) -> str | None:
    """Why `path` cannot be a surface (a relative path to one file, nothing git reads as magic), or None."""
    if not isinstance(path, str) or not path:
        return "not a non-empty string"
    if "\x00" in path or "\\" in path:
        return "holds a NUL or a backslash"
    if path.startswith(":") or path.startswith("/") or os.path.isabs(path):
        return "is absolute or a git pathspec (`:/`, `:(...)`); name one file relative to the app"
    parts = PurePosixPath(path).parts
    if not parts or any(p in ("..", ".") for p in path.split("/")) or path.endswith("/"):
        return "must name one file inside the app (no `.`, `..` or trailing `/`)"
    if parts[0] == ".git":
        return "is inside .git"
    return None


def dirty(app: Path, path: str) -> str:
    return git(app, "status", "--porcelain", "--", path).strip()


def head_entry(app: Path, path: str) -> tuple[str, str, str] | None:
    """(mode, type, blob) of `path` at HEAD (relative to `app`), or None when HEAD has no such entry."""
    out = git(app, "ls-tree", "-z", "HEAD", "--", path)
    rows = [r for r in out.split("\x00") if r]
    if len(rows) != 1:
        return None
    meta, _, name = rows[0].partition("\t")
    mode, kind, blob = meta.split()
    if name != path:   # ls-tree names paths relative to the cwd (the app): anything else is another file
        return None
    return mode, kind, blob


def head_blob(app: Path, path: str) -> str:
    entry = head_entry(app, path)
    if entry is None:
        raise AssayError(f"surface {path}: not tracked at HEAD in {app}; commit it first (a candidate must be "
                         "revertible to a recorded blob)", 2, surface=path)
    mode, kind, blob = entry
    if kind != "blob" or mode not in PLAIN_FILE_MODES:
        raise AssayError(f"surface {path}: tracked as mode {mode} ({kind}), not a plain file; a candidate's "
                         "surface is one regular file (never a symlink or submodule)", 2, surface=path)
    return blob


def index_blob(app: Path, path: str) -> str | None:
    out = git(app, "ls-files", "-s", "-z", "--", path)
    rows = [r for r in out.split("\x00") if r]
    if len(rows) != 1:
        return None
    return rows[0].split()[1]


def worktree_blob(app: Path, path: str) -> str:
    return git(app, "hash-object", "--", path).strip()


def store_worktree(app: Path, path: str) -> str:
    """Write the file's current bytes into the repository's object store (`git hash-object -w`), so
    what a revert replaces stays recoverable with `git cat-file -p <blob>`; returns the blob id."""
    return git(app, "hash-object", "-w", "--", path).strip()


def blob_bytes(app: Path, blob: str, path: str) -> bytes:
    """The recorded blob's bytes as a checkout would write them (the path's smudge filters applied)."""
    return git_bytes(app, "cat-file", "--filters", f"--path={path}", blob)


def changed_outside(app: Path, surfaces: list[str], state: Path) -> list[str]:
    """Tracked files whose working copy or index differs from HEAD, other than the `surfaces` (paths
    relative to `app`) and what is under the state dir, as paths from the repository's root: what a
    run measured besides the candidate's own edit (another candidate's, a stray change)."""
    top = toplevel(app).resolve()
    mine = {str((Path(app) / rel).resolve().relative_to(top)) for rel in surfaces}
    try:
        skip = str(Path(state).resolve().relative_to(top))
    except ValueError:
        skip = None
    fields = git_bytes(app, "status", "--porcelain=v1", "-z", "--untracked-files=no").split(b"\0")
    out, i = [], 0
    while i < len(fields):
        entry = fields[i].decode("utf-8", "surrogateescape")
        i += 1
        if len(entry) < 4:
            continue
        path = entry[3:]
        if entry[0] in "RC":   # a rename or copy: the source path follows
            i += 1
        if path in mine or (skip and (path == skip or path.startswith(skip + "/"))):
            continue
        out.append(path)
    return out


def untracked_since(app: Path, state: Path, since: float) -> list[str]:
    """Untracked files (not ignored: `git status --untracked-files=all`) outside the state dir, made or
    changed at or after `since` (a POSIX time: the candidate's `new`), as paths from the repository's
    root: a file the app reads that the runs measured, that no revert removes and no blob records."""
    top = toplevel(app).resolve()
    try:
        skip = str(Path(state).resolve().relative_to(top))
    except ValueError:
        skip = None
    out = []
    for entry in git_bytes(app, "status", "--porcelain=v1", "-z", "--untracked-files=all").split(b"\0"):
        path = entry.decode("utf-8", "surrogateescape")[3:]
        if not entry.startswith(b"?? ") or (skip and (path == skip or path.startswith(skip + "/"))):
            continue
        try:
            changed = (top / path).lstat().st_mtime
        except OSError:
            continue
        if changed >= since:
            out.append(path)
    return out
