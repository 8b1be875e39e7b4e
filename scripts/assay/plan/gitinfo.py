"""The app repo's git SHA and clean/dirty state, for manifest_extra.app.

No repo declared, no git installed, or not a git work tree -> (None, "n/a"): never an error.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 10


def _git(repo: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state(repo: Path | None) -> tuple[str | None, str]:
    """(sha, "clean" | "dirty" | "n/a") of the repo at `repo`."""
    if repo is None or not repo.is_dir():
        return None, "n/a"
    sha = _git(repo, "rev-parse", "HEAD")
    if sha is None:
        return None, "n/a"
    status = _git(repo, "status", "--porcelain")
    if status is None:
        return sha.strip(), "n/a"
    return sha.strip(), "dirty" if status.strip() else "clean"
