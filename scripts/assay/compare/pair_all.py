"""A comparison's two sides and every pair (compare.pairs.compare_pair over the ids in order), on
two processes when the comparison is big.

Each side is read from its run dir alone and each pair is a function of the two sides' files alone,
so both can be made anywhere: when the candidate's verdicts.jsonl is over FORK_ABOVE bytes, on a
machine with more than one CPU and in a process with no other thread, a forked child reads the
candidate while this process reads the base, then a child makes the second half of the pairs while
this process makes the first; each answer comes back pickled. When a child fails in any way
(killed, an exception, a short answer), this process does its part too: the sides and the pairs are
the same either way, only the time differs (a candidate that cannot be read is read again here, and
its error is this process's, after the base's, as on one process).

The sides' case stores are opened before the fork (one index scan, shared), and the objects alive
then are frozen out of the collector (`gc.freeze`) while the child lives: a collection in either
process would otherwise write to every object's header and copy the shared pages (the 250 MB bar).
`ASSAY_COMPARE_FORK_ABOVE` (bytes) moves the threshold (0: always, when a fork is possible, even on
one CPU; the tests use it). `LAST` says how the last comparison in this process made its pairs.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

from ..core.forked import Child, cpus, fork_safe
from .agent_cli import CliFold
from .cost_delta import CaseCosts
from .pairs import compare_pair
from .sides import Side, load_side

# buckets whose pairs carry no cost_latency of their own (the bulk of a big run; no page lists them
# with figures): their cases are in the totals only
UNLISTED = ("still_passing", "still_unscored")

FORK_ABOVE = 8 << 20       # bytes of the candidate's verdicts.jsonl: ~20,000 rows of a plain run
LAST: dict[str, Any] = {}   # {"processes": 1 or 2, "fallback": [what this process did again, the child failing]}


def _threshold() -> tuple[int, bool]:
    raw = os.environ.get("ASSAY_COMPARE_FORK_ABOVE", "").strip()
    try:
        return (max(0, int(raw)), True) if raw else (FORK_ABOVE, False)
    except ValueError:
        return FORK_ABOVE, False


def two_processes(candidate_dir: Path) -> bool:
    """True when this comparison should fork (see the module docstring)."""
    above, forced = _threshold()
    try:
        size = os.stat(Path(candidate_dir) / "verdicts.jsonl").st_size
    except OSError:
        size = 0
    return size >= above and (forced or cpus() > 1) and fork_safe()


def load_sides(base_dir: Path, candidate_dir: Path, fork: bool) -> tuple[Side, Side]:
    """(load_side(base), load_side(candidate)); with `fork`, the candidate read in a child meanwhile."""
    if not fork:
        return load_side(base_dir, "base"), load_side(candidate_dir, "candidate")
    child = Child(lambda: _opened(load_side(candidate_dir, "candidate")))
    try:
        base = _opened(load_side(base_dir, "base"))
    except BaseException:
        child.cancel()
        raise
    cand = child.result()
    if not isinstance(cand, Side):
        LAST.setdefault("fallback", []).append("the child read no candidate")
        cand = load_side(candidate_dir, "candidate")
    return base, cand


def _opened(side: Side) -> Side:
    """The side with its case store opened (a scan of its journal: each process scans its own side
    while the other does, rather than both after)."""
    side.open_store()
    return side


def _make(base: Side, cand: Side, ids: list[str], memo: dict, costs: CaseCosts | None,
          clis: CliFold | None = None) -> list[dict[str, Any]]:
    out = []
    for cid in ids:
        pair = compare_pair(base, cand, cid, memo)
        out.append(pair)
        if clis is not None:   # an agent side's CLI and model, from the record the pair just read
            clis.add("base", base, cid)
            clis.add("candidate", cand, cid)
        if costs is not None:   # the records the pair just read (each side keeps its last): no second read
            own = costs.add_pair(base.record(cid) if cid in base.rows else None,
                                 cand.record(cid) if cid in cand.rows else None,
                                 cid in base.holdout or cid in cand.holdout)
            if own is not None and pair.get("bucket") not in UNLISTED:
                pair["cost_latency"] = own   # a listed case's own figures (the quiet bulk: in the totals only)
    return out


def all_pairs(base: Side, cand: Side, ids: list[str], memo: dict, fork: bool,
              costs: CaseCosts | None = None, clis: CliFold | None = None) -> list[dict[str, Any]]:
    """compare_pair(base, cand, cid, memo) for every id, in order; with `fork`, half in a child.
    `costs`: each case is folded into its totals from the same records (compare.cost_delta); `clis`:
    each agent side's CLI versions and models (compare.agent_cli)."""
    if not fork or len(ids) < 2:
        LAST["processes"] = 1
        return _make(base, cand, ids, memo, costs, clis)
    half = len(ids) // 2
    base.open_store()
    cand.open_store()
    gc.freeze()
    try:
        child = Child(lambda: _made_apart(base, cand, ids[half:], costs, clis))
        try:
            mine = _make(base, cand, ids[:half], memo, costs, clis)
        except BaseException:
            child.cancel()
            raise
        answer = child.result()
    finally:
        gc.unfreeze()
    LAST["processes"] = 2
    theirs, fold, their_clis = answer if isinstance(answer, tuple) and len(answer) == 3 else (None, None, None)
    if not isinstance(theirs, list) or len(theirs) != len(ids) - half:
        LAST.setdefault("fallback", []).append("the child made no pairs")
        theirs = _make(base, cand, ids[half:], memo, costs, clis)
    else:
        if costs is not None:
            costs.fold.merge(fold)
        if clis is not None:
            clis.merge(their_clis)
    mine.extend(theirs)
    return mine


def _made_apart(base: Side, cand: Side, ids: list[str], costs: CaseCosts | None,
                clis: CliFold | None) -> tuple[list, Any, Any]:
    """A child's pairs, its cases' cost totals (its own CaseCosts' fold, the parent's readers) and its
    cases' agent CLIs (its own CliFold)."""
    mine = costs.fresh() if costs is not None else None
    their_clis = clis.fresh() if clis is not None else None
    return _make(base, cand, ids, {}, mine, their_clis), (mine.fold if mine is not None else None), their_clis
