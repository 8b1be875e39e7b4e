"""The order cases are sent in (`run_cases.py --order history|plan`), and `--fail-fast N`.

Only the order of sending changes: every derived file, results.json and the reports stay
keyed by case id in plan order, so a run's files do not depend on the order it ran in.

**history** (the default when `<state>/reports/` holds an earlier run): the verdicts of the
last `WINDOW` earlier runs (any mode but holdout, any status, read from each run's
`verdicts.jsonl`; the run being written is never its own history) rank each case:

0. failed in the most recent earlier run that had it;
1. flipped between pass and fail, or failed, in the window;
2. never seen (a new case: nothing is known about it);
3. passed every time it was seen.

Ties keep plan order. Canaries still run first, alone. Holdout cases are never ranked (they
keep plan order after the ranked ones, wherever their split puts them): history about a
sealed case must not steer anything, and a holdout plan always runs in plan order.
**plan**: plan order, as before (and the order whenever there is no history).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.ids import parse_run_id
from ..core.vocab import FAIL, PASS

WINDOW = 10
ORDERS = ("history", "plan")
FAIL_FAST_MODES = ("smoke", "targeted")
RANK_WORDS = ("failed last time", "flipped or failed recently", "new (no history)", "passed every time")


def earlier_runs(reports: Path, run_id: str) -> list[Path]:
    """Run dirs under reports/ older than `run_id` (by the run id's UTC stamp), newest last."""
    if not reports.is_dir():
        return []
    mine = parse_run_id(run_id)
    found = []
    for entry in reports.iterdir():
        parsed = parse_run_id(entry.name)
        if not parsed or entry.is_symlink() or not entry.is_dir() or entry.name == run_id:
            continue
        if parsed[0] == "holdout" or (mine and parsed[1] > mine[1]):
            continue
        found.append((parsed[1], entry.name, entry))
    return [p for _, _, p in sorted(found)][-WINDOW:]


def case_history(runs: list[Path]) -> dict[str, list[str]]:
    """case id -> its pass/fail verdicts over `runs`, oldest first (holdout rows left out)."""
    from ..report.rundir import read_jsonl_file
    seqs: dict[str, list[str]] = {}
    for run in runs:
        try:
            rows = read_jsonl_file(run / "verdicts.jsonl")
        except (AssayError, OSError):
            continue   # an unreadable run is no history; it never stops a run
        for row in rows:
            cid, verdict = row.get("case_id"), row.get("verdict")
            if isinstance(cid, str) and not row.get("holdout") and verdict in (PASS, FAIL):
                seqs.setdefault(cid, []).append(verdict)
    return seqs


def rank(seq: list[str] | None) -> int:
    if not seq:
        return 2
    if seq[-1] == FAIL:
        return 0
    if FAIL in seq:
        return 1
    return 3


def choose(requested: str | None, plan: Mapping[str, Any], reports: Path) -> tuple[str, list[Path], str]:
    """(order used, history runs, why): history by default when there is an earlier run."""
    if requested not in (None, *ORDERS):
        raise AssayError(f"--order {requested!r}: use history or plan", 2, key="--order")
    if plan["mode"] == "holdout" or plan.get("selecting_split") == "holdout":
        return "plan", [], "a holdout run always runs in plan order"
    if requested == "plan":
        return "plan", [], "--order plan"
    runs = earlier_runs(reports, plan["run_id"])
    if not runs:
        return "plan", [], ("--order history, but " if requested else "") + "no earlier run in reports/"
    return "history", runs, f"{'--order history' if requested else 'default'}: {len(runs)} earlier run(s) read"


def history_order(cases: list[dict], indexes: list[int], seqs: Mapping[str, list[str]]) -> tuple[list[int], dict]:
    """`indexes` (plan indexes) sorted by rank, plan order within a rank; holdout cases last."""
    from ..suite import holdout
    ranked = [i for i in indexes if not holdout.is_holdout(cases[i])]
    sealed = [i for i in indexes if holdout.is_holdout(cases[i])]
    ranks = {i: rank(seqs.get(cases[i]["id"])) for i in ranked}
    ordered = sorted(ranked, key=lambda i: (ranks[i], i)) + sealed
    counts = {word: sum(1 for i in ranked if ranks[i] == r) for r, word in enumerate(RANK_WORDS)}
    if sealed:
        counts["holdout (plan order, not ranked)"] = len(sealed)
    return ordered, counts


def check_fail_fast(n: int | None, plan: Mapping[str, Any], shard: int | None) -> None:
    """--fail-fast N: smoke and targeted runs only, never a shard (contract §7)."""
    if n is None:
        return
    if n < 1:
        raise AssayError(f"--fail-fast {n}: give the number of confirmed gating failures to stop after (1 or more)",
                         2, key="--fail-fast")
    if plan["mode"] not in FAIL_FAST_MODES or plan.get("selecting_split") == "holdout":
        raise AssayError(f"--fail-fast applies to smoke and targeted runs; this plan is a {plan['mode']} run, which "
                         "decides a gate or a release on every case: run it without --fail-fast", 2, key="--fail-fast")
    if shard is not None:
        raise AssayError("--fail-fast does not apply to one shard: a shard cannot count the whole run's failures; "
                         "run the plan unsharded with --fail-fast, or the shards without it", 2, key="--fail-fast")
