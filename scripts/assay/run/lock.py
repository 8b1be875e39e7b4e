"""The runner lock (docs/runner-contract.md §10.4).

An exclusive `fcntl.flock` on `<reports>/.<run-id>.lock`, beside the run dir so the run
dir's file list stays exact. A second runner finds it held and exits 2; wait_run.py can
take a shared lock only when no runner is alive; a crashed runner's lock is released by
the kernel, so a stale file never blocks --resume.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from ..core.jsonio import loads
from ..core import writer
from ..core.errors import AssayError


def lock_path(out: Path) -> Path:
    return out.parent / f".{out.name}.lock"


class RunLock:
    def __init__(self, out: Path, info: dict[str, Any]) -> None:
        self.path = lock_path(out)
        self.info = info
        self.fd: int | None = None

    def acquire(self) -> None:
        try:   # the run's first write: a reports dir it cannot write is said here, before anything is sent
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = writer.open_file(self.path, os.O_RDWR | os.O_CREAT)  # never through a symlink
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            where = exc.filename or self.path
            raise AssayError(f"pre-flight: cannot write {where} ({os.strerror(exc.errno)}): the runner writes its "
                             f"lock and the run dir {self.info.get('run_id')} in {self.path.parent}. Make that "
                             "directory writable (or give a plan whose state dir is) and run again; nothing was "
                             "sent to the app", 3, key="--out", path=str(where)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = ""
            try:
                holder = f" (held by pid {loads(writer.read_bytes(self.path)).get('pid')})"
            except (OSError, ValueError, AttributeError):
                pass
            raise AssayError(f"another runner is running run {self.info.get('run_id')!r}{holder}: "
                             f"{self.path} is locked. Wait for it (wait_run.py) or use a new run id.", 2,
                             lock=str(self.path))
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps(self.info, sort_keys=True) + "\n").encode("utf-8"))
        self.fd = fd

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None
