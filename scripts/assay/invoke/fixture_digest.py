"""One digest of an agent fixture's files: the suite version takes it (`assay.suite.version`: an agent
case's `case_sha256` covers the fixture it starts from, runner contract §20.2), and so does an agent
attempt's recorded request (`fixture_sha256`: what replay keys and rescore compares, §22)."""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

from .workdir import tree

# Where an agent attempt's recorded request (request.json, the replay key) names its fixture's digest
FIXTURE_DIGEST_KEY = "fixture_sha256"


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


class FixtureDigests:
    """fixture_sha256 of each distinct fixture (by its resolved path), each read once: a run's case
    hashes (its manifest) and its agent requests share one, so a run reads a fixture once."""

    def __init__(self) -> None:
        self._done: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def __call__(self, fixture: Path) -> str | None:
        where = str(Path(fixture).resolve())
        with self._lock:   # held while reading: two cases of one fixture never read it twice
            if where not in self._done:
                self._done[where] = fixture_sha256(Path(where))
            return self._done[where]
