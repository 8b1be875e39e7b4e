"""The completeness check of a big case journal on two processes (rundir.completeness).

A full check (--verify, the gate, compare's check of its base, publish, history) spends nearly
all its time in two independent passes over the journal: each record's own checks (the verdict
schema, the sha256 of every artifact against the one it recorded, the roll-up) and the fold of
every record into the counts and the derived rows the run's other files are compared with.
Above FORK_ABOVE bytes of journal, on a machine with more than one CPU and in a process with no
other thread, the record checks (and run.log's) run in a forked child while this process folds
and compares the run's files.

The child answers with its problems. When the record checks found none, every record is one the
one-process check would have folded, so this process's fold is exactly that check's and the
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
                  verdict_schema: Any) -> tuple[list[str], list[str]]:
    """The forked child's part: each record's own checks (journal_cases(part="checks")), then run.log's."""
    from .completeness_case import journal_cases
    from .runlog_check import check_runlog
    mine: list[str] = []
    journal_cases(store, index_of, name, mine, True, None, verdict_schema, None, part="checks")
    runlog: list[str] = []
    check_runlog(Path(out) / "run.log", runlog)
    return mine, runlog


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
