"""One line per plan index, kept on disk in plan order, so a 100,000-case run holds none of them.

The runner learns its cases' rows in finish order but writes the derived files in plan order.
`PlanLines` keeps each row where it can be streamed back in plan order without holding them:
the plan is cut into buckets of BUCKET consecutive indexes, each bucket's lines stored as one
region of an anonymous temp file (created in the run dir and unlinked at once, so it is never a
file of the run dir and vanishes with the process). New lines wait in memory until `flush`
(at most FLUSH_BYTES of them: a --resume adopting 100,000 cases flushes as it goes), which
rewrites only the buckets they fall in, appended at the file's end; the dead regions are
reclaimed when they outweigh the live ones. Memory: a 4-byte length per plan index and one
(offset, length) per bucket. Reading back is one `pread` per bucket.
"""

from __future__ import annotations

import os
from array import array
from pathlib import Path
from typing import Iterator

BUCKET = 512
FLUSH_BYTES = 1 << 20


class PlanLines:
    """Lines (bytes, each ending in a newline, or empty for none) by plan index, in plan order on disk."""

    def __init__(self, directory: Path, n: int) -> None:
        self.n = n
        self._dir = directory
        import tempfile   # (random, shutil) paid only by the commands that spill rows
        self._fh = tempfile.TemporaryFile(dir=directory, prefix=".spill-")   # unlinked at creation
        self._fd = self._fh.fileno()
        self._lens = array("I", bytes(4 * n))
        self._regions: dict[int, tuple[int, int]] = {}   # bucket -> (offset, length)
        self._pending: dict[int, dict[int, bytes]] = {}
        self._pending_bytes = 0
        self._end = 0
        self._live = 0

    def add(self, index: int, line: bytes) -> None:
        self._pending.setdefault(index // BUCKET, {})[index] = line
        self._pending_bytes += len(line)
        if self._pending_bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Write the pending lines into their buckets' regions."""
        lens = self._lens
        for bucket in sorted(self._pending):
            new = self._pending[bucket]
            if bucket not in self._regions:   # its first write: nothing to merge (its lengths are all 0)
                order = sorted(new)
                for i in order:
                    lens[i] = len(new[i])
                self._write(bucket, b"".join([new[i] for i in order]))
                continue
            old = self._region(bucket)
            parts, at = [], 0
            lo = bucket * BUCKET
            for i in range(lo, min(lo + BUCKET, self.n)):
                size = self._lens[i]
                line = new.get(i)
                if line is not None:
                    parts.append(line)
                    self._lens[i] = len(line)
                elif size:
                    parts.append(old[at:at + size])
                if size:
                    at += size
            data = b"".join(parts)
            self._live -= len(old)
            self._write(bucket, data)
        self._pending.clear()
        self._pending_bytes = 0
        if self._end - self._live > max(self._live, 1 << 20):
            self._compact()

    def chunks(self) -> Iterator[bytes]:
        """Every bucket's lines in plan order (flush first): one read per bucket."""
        self.flush()
        for bucket in sorted(self._regions):
            data = self._region(bucket)
            if data:
                yield data

    def lines(self) -> Iterator[bytes]:
        """Every line in plan order, one at a time."""
        for data in self.chunks():
            start = 0
            while start < len(data):
                nl = data.index(b"\n", start)
                yield data[start:nl + 1]
                start = nl + 1

    def close(self) -> None:
        self._fh.close()

    # ------------------------------------------------------------------ the file
    def _region(self, bucket: int) -> bytes:
        at = self._regions.get(bucket)
        if at is None or not at[1]:
            return b""
        data = os.pread(self._fd, at[1], at[0])
        if len(data) != at[1]:
            raise OSError(f"the derived rows' spill file read short ({len(data)} of {at[1]} bytes)")
        return data

    def _write(self, bucket: int, data: bytes) -> None:
        view, at = memoryview(data), self._end
        while view:
            n = os.pwrite(self._fd, view, at)
            view, at = view[n:], at + n
        self._regions[bucket] = (self._end, len(data))
        self._end += len(data)
        self._live += len(data)

    def _compact(self) -> None:
        """Copy the live regions to a fresh temp file (the old one is dropped)."""
        old_fd, old_fh, regions = self._fd, self._fh, self._regions
        import tempfile
        self._fh = tempfile.TemporaryFile(dir=self._dir, prefix=".spill-")
        self._fd = self._fh.fileno()
        self._regions, self._end, self._live = {}, 0, 0
        for bucket in sorted(regions):
            off, size = regions[bucket]
            self._write(bucket, os.pread(old_fd, size, off) if size else b"")
        old_fh.close()
