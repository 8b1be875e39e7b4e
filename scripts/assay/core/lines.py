"""A file's complete lines, with their offsets, read in chunks (a journal or run.log of 100,000+
lines is never held whole); never through a symlink."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator

from . import writer

CHUNK = 1 << 20


def iter_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its newline) for every complete line of a file, read in chunks."""
    try:
        fd = writer.open_file(path, os.O_RDONLY)
    except (FileNotFoundError, writer.SymlinkError):
        return
    try:
        offset, rest = 0, b""
        while True:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                return
            data = rest + chunk
            start = 0
            while True:
                nl = data.find(b"\n", start)
                if nl < 0:
                    break
                yield offset + start, data[start:nl + 1]
                start = nl + 1
            offset += start
            rest = data[start:]
    finally:
        os.close(fd)
