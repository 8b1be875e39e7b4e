"""The completeness check of a big case journal on two processes (rundir.completeness).

A full check (--verify, the gate, compare's check of its base, publish, history) spends nearly
all its time in two independent passes over the journal: each record's own checks (the verdict
schema, the sha256 of every artifact against the one it recorded, the roll-up) and the fold of
every record into the counts and the derived rows the run's other files are compared with.
Above FORK_ABOVE bytes of journal, on a machine with more than one CPU and in a process with no
other thread, the record checks (and run.log's) run in a forked child while this process folds
and compares the run's files; the record checks the child has not reached by then, this process
takes its share of (`Shares`: chunks of journal lines, each to one process).

The child answers with its problems. When the record checks (the child's and this process's share)
found none, every record is one the one-process check would have folded, so this process's fold is exactly that check's and the
answer is the same. When they found any, or the child fails in any way (killed, an exception, a
short answer), the whole check runs again in one process, as before: a broken run's problems are
always the one-process check's, in the same words and order. `ASSAY_CHECK_FORK_ABOVE` (bytes)
moves the threshold (0: always, when a fork is possible, even on one CPU; the tests use it); `LAST` says how the
last check in this process ran.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import casestore
from ..core.forked import Child, cpus, fork_safe  # noqa: F401 (Child: the check's child, completeness.py)

FORK_ABOVE = 32 << 20        # ~8,000 cases of a plain single-turn run
LAST: dict[str, Any] = {}    # {"processes": 1 or 2, "fallback": why the one-process check ran again}


def bytes_setting(name: str, default: int) -> int:
    """A size in bytes from the environment variable `name` (unset, empty or not an integer: `default`)."""
    raw = os.environ.get(name, "")
    try:
        return max(0, int(raw)) if raw.strip() else default
    except ValueError:
        return default


def _threshold() -> int:
    return bytes_setting("ASSAY_CHECK_FORK_ABOVE", FORK_ABOVE)


def usable(store: casestore.CaseStore) -> bool:
    """True when this check should fork: a journal over the threshold; 2+ CPUs (or
    ASSAY_CHECK_FORK_ABOVE set: the answer is the same either way, so a one-CPU machine can run the
    forked path too); and no other thread in this process (a lock another thread holds at the fork
    would be held forever in the child)."""
    forced = os.environ.get("ASSAY_CHECK_FORK_ABOVE", "").strip() != ""
    return store.layout == "journal" and store.size >= _threshold() and (forced or cpus() > 1) and fork_safe()


def record_checks(out: Any, store: casestore.CaseStore, index_of: Mapping[str, int], name: Callable[[str], str],
                  verdict_schema: Any, share: "Shares | None" = None) -> tuple[list[str], list[str]]:
    """The forked child's part: run.log's checks, then each record's own (journal_cases(part="checks")):
    every record, or with `share` the chunks of them it takes first."""
    from .runlog_check import check_runlog
    runlog: list[str] = []
    check_runlog(Path(out) / "run.log", runlog)
    return own_checks(store, index_of, name, verdict_schema, share), runlog


def own_checks(store: casestore.CaseStore, index_of: Mapping[str, int], name: Callable[[str], str],
               verdict_schema: Any, share: "Shares | None" = None) -> list[str]:
    """Each record's own checks in this process: all of them, or the chunks of `share` it takes."""
    from .completeness_case import journal_cases
    mine: list[str] = []
    journal_cases(store, index_of, name, mine, True, None, verdict_schema, None, part="checks",
                  lines=share.lines() if share is not None else None)
    return mine


class Shares:
    """The record checks shared out in chunks of committed journal lines, each to whichever of the
    two processes asks first: the child from the start, this process once its fold and the run's
    files are done (until then the child takes every chunk; after, the two finish together instead
    of this process waiting for the child). The chunks' numbers are in a pipe, written before the
    fork and closed for writing: a read of 4 bytes takes one number (a pipe hands each byte to one
    reader), an empty pipe reads as its end. Each chunk is checked once, by one process, with the
    checks journal_cases runs on every record; a process that finds a problem, or dies holding
    chunks, makes its answer a fallback (the one-process check runs again), so the answer never
    depends on who checked what. `usable` is False when the numbers did not fit in the pipe."""

    TOKENS = 1024      # at most this many chunks (4 KiB of numbers: any pipe holds them unread)
    MIN_LINES = 256    # lines a chunk (~1 MiB of a plain journal: one read, and a short wait at the end)

    def __init__(self, store: casestore.CaseStore) -> None:
        import struct
        entries = sorted(store.index.values())   # by offset (an entry is offset << LEN_BITS | length)
        size = max(self.MIN_LINES, -(-len(entries) // self.TOKENS))
        self.chunks = [entries[i:i + size] for i in range(0, len(entries), size)]
        self.path = store.run_dir / casestore.JOURNAL
        self._fd, write = os.pipe()
        try:
            os.set_blocking(write, False)
            data = b"".join(struct.pack("<I", k) for k in range(len(self.chunks)))
            self.usable = os.write(write, data) == len(data) if data else True
        except OSError:
            self.usable = False
        finally:
            os.close(write)

    def lines(self):
        """(offset, line) of every committed line in the chunks this process takes, in order."""
        import struct
        from ..core import writer
        fd = writer.open_file(self.path, os.O_RDONLY)
        bits, mask = casestore.LEN_BITS, (1 << casestore.LEN_BITS) - 1
        try:
            while True:
                token = os.read(self._fd, 4)
                if not token:
                    return
                if len(token) != 4:
                    raise OSError("a short chunk number")   # the caller's answer is a fallback
                chunk = self.chunks[struct.unpack("<I", token)[0]]
                start, last = chunk[0] >> bits, chunk[-1]
                data = os.pread(fd, (last >> bits) + (last & mask) - start, start)
                for entry in chunk:
                    at = (entry >> bits) - start
                    yield start + at, data[at:at + (entry & mask)]
        finally:
            os.close(fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def fold_only(store: casestore.CaseStore, index_of: Mapping[str, int], records: Any) -> list[str]:
    """This process's part: every committed record of the plan folded into `records` (what
    journal_cases folds when the child's checks find no problem), read without its files
    (casestore.head_of); returns the finished ids."""
    found: list[str] = []
    for offset, line in casestore.iter_lines(store.run_dir / casestore.JOURNAL):
        cid, verdict = casestore.head_of(line, verdict=True)
        if cid is None or store.offset_of(cid) != offset:
            continue
        found.append(cid)
        index = index_of.get(cid)
        if index is not None and verdict is not None:
            records.add(index, verdict)
    return found
