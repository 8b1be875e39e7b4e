"""Every pair of a comparison (compare.pairs.compare_pair over the ids in order), on two processes
when the comparison is big.

Each pair is a function of the two sides' files alone, so pairs can be made anywhere: above
FORK_ABOVE pairs, on a machine with more than one CPU and in a process with no other thread, a
forked child makes the second half while this process makes the first; the child's pairs come back
pickled, in order. When the child fails in any way (killed, an exception, a short answer), this
process makes its half too: the pairs are the same either way, only the time differs.

The sides' case stores are opened before the fork (one index scan, shared), and the objects alive
then are frozen out of the collector (`gc.freeze`) while the child lives: a collection in either
process would otherwise write to every object's header and copy the shared pages (the 250 MB bar).
`ASSAY_COMPARE_FORK_ABOVE` (pairs) moves the threshold (0: always, when a fork is possible, even on
one CPU; the tests use it). `LAST` says how the last comparison in this process made its pairs.
"""

from __future__ import annotations

import gc
import os
from typing import Any

from ..core.forked import Child, cpus, fork_safe
from .pairs import compare_pair
from .sides import Side

FORK_ABOVE = 20_000
LAST: dict[str, Any] = {}   # {"processes": 1 or 2, "fallback": why this process made the child's half}


def _threshold() -> tuple[int, bool]:
    raw = os.environ.get("ASSAY_COMPARE_FORK_ABOVE", "").strip()
    try:
        return (max(0, int(raw)), True) if raw else (FORK_ABOVE, False)
    except ValueError:
        return FORK_ABOVE, False


def _usable(n: int) -> bool:
    above, forced = _threshold()
    return n >= max(above, 2) and (forced or cpus() > 1) and fork_safe()


def _make(base: Side, cand: Side, ids: list[str], memo: dict) -> list[dict[str, Any]]:
    return [compare_pair(base, cand, cid, memo) for cid in ids]


def all_pairs(base: Side, cand: Side, ids: list[str], memo: dict) -> list[dict[str, Any]]:
    """compare_pair(base, cand, cid, memo) for every id, in order."""
    LAST.clear()
    if not _usable(len(ids)):
        LAST["processes"] = 1
        return _make(base, cand, ids, memo)
    half = len(ids) // 2
    base.open_store()
    cand.open_store()
    gc.freeze()
    try:
        child = Child(lambda: _make(base, cand, ids[half:], {}))
        try:
            mine = _make(base, cand, ids[:half], memo)
        except BaseException:
            child.cancel()
            raise
        theirs = child.result()
    finally:
        gc.unfreeze()
    LAST["processes"] = 2
    if not isinstance(theirs, list) or len(theirs) != len(ids) - half:
        LAST["fallback"] = "the child gave no answer"
        theirs = _make(base, cand, ids[half:], memo)
    mine.extend(theirs)
    return mine
