"""One digest of an agent fixture's files, for the suite version (`assay.suite.version`: an agent
case's `case_sha256` takes the fixture it starts from, runner contract §20.2)."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from .workdir import tree


def fixture_sha256(fixture: Path) -> str | None:
    """Every entry `workdir.tree` lists (`.git` left out), by its `/`-separated path: a file's content
    and whether it is executable, a symlink's target. Not its times: a fresh checkout of the same
    files is the same fixture. None when it is not a directory that can be read."""
    if not fixture.is_dir():
        return None
    whole = hashlib.sha256()
    for rel, st in sorted(tree(fixture).items()):
        path = fixture / rel
        try:
            if stat.S_ISLNK(st.st_mode):
                what = "link:" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(path, "rb") as f:
                    for block in iter(lambda: f.read(1 << 20), b""):
                        h.update(block)
                what = ("exec:" if st.st_mode & 0o111 else "file:") + h.hexdigest()
            else:
                what = "other"
        except OSError:
            return None
        whole.update(f"{rel}\0{what}\n".encode("utf-8", "surrogateescape"))
    return whole.hexdigest()
