"""Reading one file a promptfoo config points at: a regular file, with a byte cap.

`read_text(path, label)` opens the file without following a final symlink and without
waiting (O_NONBLOCK: a FIFO's open returns at once), refuses anything that is not a regular
file (a device such as /dev/zero, a FIFO, a socket) and anything under /proc, /sys or /dev,
and reads at most MAX_FILE_BYTES + 1 bytes, whatever size the file states. Where a file may
be (inside the config's folder) is `Config.inside` in assay.importers.pf_load.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..core.errors import AssayError

MAX_FILE_BYTES = 10_000_000
KERNEL_DIRS = ("/proc", "/sys", "/dev")


def read_text(path: Path, label: str) -> str:
    """A regular file's text, read with a byte cap: a device (/dev/zero), a FIFO (which would block),
    a socket or a kernel file under /proc, /sys or /dev is refused, never opened for reading."""
    real = os.path.realpath(path)
    if any(real == d or real.startswith(d + "/") for d in KERNEL_DIRS):
        raise AssayError(f"{label}: is a kernel or device file ({real}); the import reads only regular files", 2,
                         file=label)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags)     # O_NONBLOCK: opening a FIFO returns at once instead of waiting
    except OSError as exc:
        raise AssayError(f"{label}: cannot read it ({exc.strerror or exc}); check the file:// path", 2,
                         file=label) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise AssayError(f"{label}: is a directory, not a file; pass the file (the config itself, e.g. "
                             "<dir>/promptfooconfig.yaml, or the file a file:// reference names)", 2, file=label)
        if not stat.S_ISREG(mode):
            raise AssayError(f"{label}: is not a regular file (a device, FIFO or socket); the import reads only "
                             "regular files", 2, file=label)
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, min(1 << 20, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise AssayError(f"{label}: cannot read it ({exc.strerror or exc})", 2, file=label) from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise AssayError(f"{label}: is over the {MAX_FILE_BYTES}-byte limit", 2, file=label)
    try:
        return b"".join(chunks).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AssayError(f"{label}: is not UTF-8 text", 2, file=label) from None
