"""The runner's own resources running out: a full disk (ENOSPC, EDQUOT) or no file descriptor left
(EMFILE, ENFILE). Neither is the app's fault nor a bug of assay: each stops the command with a
clear exit (not 1, never a traceback) that names the cause and the fix, and no invoker ever
records one as the app's failure (docs/runner-contract.md, "Security", "The runner's resources").
"""

from __future__ import annotations

import errno
import os
import resource
from typing import Any

from .errors import AssayError

EXIT_CODE = 5         # the run stopped on infrastructure (here: the runner's own); 3 in pre-flight
_DISK = {errno.ENOSPC: "ENOSPC", getattr(errno, "EDQUOT", -1): "EDQUOT"}
_FDS = {errno.EMFILE: "EMFILE", errno.ENFILE: "ENFILE"}


def resource_errno(exc: BaseException | None) -> int | None:
    """The errno when `exc` (or an exception it was raised from) is the machine running out of disk
    or descriptors, else None."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, OSError) and exc.errno in _DISK.keys() | _FDS.keys():
            return exc.errno
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def is_runner_resource(exc: BaseException) -> bool:
    return resource_errno(exc) is not None


def _fd_limit() -> str:
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return "unknown"
    return f"{soft} (hard limit {hard if hard != resource.RLIM_INFINITY else 'unlimited'})"


def _filename(exc: BaseException | None) -> str | None:
    while exc is not None:
        if isinstance(exc, OSError) and exc.filename:
            return os.fspath(exc.filename) if not isinstance(exc.filename, int) else None
        exc = exc.__cause__ or exc.__context__
    return None


def resource_error(exc: BaseException, *, code: int = EXIT_CODE, what: str = "assay") -> AssayError:
    """The AssayError that names the exhausted resource, where it ran out and what to do."""
    num = resource_errno(exc)
    path = _filename(exc)
    where = f" (writing {path})" if path else ""
    resume = (" Nothing finished is lost: every finished case is on disk; re-run with --resume to finish "
              "the run.") if what == "run_cases.py" else ""
    if num in _DISK:
        message = (f"{what}: the disk is full ({_DISK[num]}){where}. This is the machine running the "
                   "runner, not the app. Free space on that filesystem (or point --out / ASSAY_SCRATCH_DIR "
                   f"at one with room) and run it again.{resume}")
        cause = _DISK[num]
    else:
        message = (f"{what}: the runner ran out of file descriptors ({_FDS.get(num, 'EMFILE')}; the limit is "
                   f"{_fd_limit()}){where}. This is the machine running the runner, not the app. Raise the "
                   "limit (ulimit -n 4096) or lower invocation.max_concurrency, and run it again."
                   f"{resume}")
        cause = _FDS.get(num, "EMFILE")
    fields: dict[str, Any] = {"cause": cause, "runner_resources": True}
    if path:
        fields["path"] = path
    return AssayError(message, code, **fields)
