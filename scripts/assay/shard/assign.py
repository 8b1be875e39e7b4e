"""Assigning cases to shards (wave 2 §4): round-robin, or packed by recorded duration.

Pure over plain data except `read_durations`, which reads a previous run directory.

- **Round-robin** (no durations): the plan's non-canary cases are dealt 1, 2, …, N, 1, …
  in plan order.
- **Duration packing** (`--durations <run-dir>`): each case weighs its latency in that run
  (`verdict.json` `latency_ms`) × the plan's k; a case the run does not have (or whose
  latency is not a number, e.g. it was skipped) weighs the median of the known ones.
  Longest first onto the least-loaded shard (ties: plan order, then the lowest shard).
- Canaries are in no assignment: they run first in every shard, so their weight is added
  to every shard's predicted wall.
- **Predicted wall** of a shard = (its weight + the canaries' weight) ÷ max_concurrency,
  in seconds; unknown (null) without durations. The CI timeout derived from it is
  `ceil(2 × wall / 60) + 10` minutes (the slack covers checkout, app start and upload),
  and `DEFAULT_TIMEOUT_MINUTES` without durations.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from ..core import casestore
from ..core.errors import AssayError
from ..core.jsonio import read_json
from ..plan.shards import MAX_SHARDS, is_canary

DEFAULT_TIMEOUT_MINUTES = 60


def check_count(count: Any, cases: list[Mapping[str, Any]]) -> int:
    assignable = sum(1 for c in cases if not is_canary(c))
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= MAX_SHARDS:
        raise AssayError(f"--shards {count}: must be an integer between 1 and {MAX_SHARDS}", 2, key="--shards")
    if count > assignable:
        raise AssayError(f"--shards {count}: the selection has only {assignable} non-canary case(s), so at most "
                         f"{assignable} shard(s) can each hold a case; use --shards {max(assignable, 1)} or fewer",
                         2, key="--shards", cases=assignable)
    return count


def round_robin(cases: list[Mapping[str, Any]], count: int) -> dict[str, int]:
    """Non-canary cases dealt onto shards 1..count in plan order."""
    out: dict[str, int] = {}
    for case in cases:
        if not is_canary(case):
            out[case["id"]] = len(out) % count + 1
    return out


def case_weights(cases: list[Mapping[str, Any]], latency_ms: Mapping[str, Any], k: int) -> dict[str, float]:
    """Milliseconds each case is expected to take: its recorded latency × k, unknown -> the median."""
    known = [float(v) for v in latency_ms.values()
             if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0]
    median = statistics.median(known) if known else 0.0
    out = {}
    for case in cases:
        v = latency_ms.get(case["id"])
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
        out[case["id"]] = (float(v) if ok else median) * k
    return out


def pack(cases: list[Mapping[str, Any]], count: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Longest first onto the least-loaded shard (LPT). Ties: plan order, then the lowest shard.
    The result is in plan order (the plan's assignment reads like the plan)."""
    assignable = [c["id"] for c in cases if not is_canary(c)]
    order = sorted(range(len(assignable)), key=lambda i: (-weights[assignable[i]], i))
    loads = [0.0] * count
    chosen: dict[str, int] = {}
    for i in order:
        shard = min(range(count), key=lambda s: (loads[s], s))
        loads[shard] += weights[assignable[i]]
        chosen[assignable[i]] = shard + 1
    return {cid: chosen[cid] for cid in assignable}


def predicted_walls(cases: list[Mapping[str, Any]], assignment: Mapping[str, int], count: int,
                    weights: Mapping[str, float], max_concurrency: int) -> list[float]:
    canary_ms = sum(weights[c["id"]] for c in cases if is_canary(c))
    loads = [canary_ms] * count
    for cid, shard in assignment.items():
        loads[shard - 1] += weights[cid]
    return [round(ms / 1000.0 / max(1, max_concurrency), 3) for ms in loads]


def timeout_minutes(wall_s: float | None) -> int:
    if wall_s is None:
        return DEFAULT_TIMEOUT_MINUTES
    return math.ceil(2 * wall_s / 60) + 10


def read_durations(run_dir: Path) -> tuple[dict[str, Any], str]:
    """(case id -> latency_ms, the run's id) from a previous run dir's case verdicts."""
    run_dir = Path(run_dir)
    try:
        manifest = read_json(run_dir / "manifest.yaml")
    except (OSError, ValueError):
        raise AssayError(f"--durations {run_dir}: not a run directory (no readable manifest.yaml); pass a "
                         "previous run's reports/<run-id>", 2, key="--durations") from None
    out: dict[str, Any] = {}
    for cid, doc in sorted(casestore.open_store(run_dir).verdicts()):
        if doc.get("case_id") == cid:
            out[cid] = doc.get("latency_ms")
    if not any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in out.values()):
        raise AssayError(f"--durations {run_dir}: no finished case with a latency_ms in it; pass a run that "
                         "sent cases, or drop --durations (round-robin)", 2, key="--durations")
    return out, str(manifest.get("run_id") if isinstance(manifest, dict) else run_dir.name)


def shards_block(cases: list[Mapping[str, Any]], count: int, *, k: int, max_concurrency: int,
                 durations: tuple[Mapping[str, Any], str] | None = None) -> dict[str, Any]:
    """The plan's `shards` block."""
    count = check_count(count, cases)
    if durations is None:
        assignment = round_robin(cases, count)
        return {"count": count, "method": "round-robin", "durations_from": None, "assignment": assignment,
                "predicted_wall_s": None}
    latency, source = durations
    weights = case_weights(cases, latency, k)
    assignment = pack(cases, count, weights)
    return {"count": count, "method": "duration", "durations_from": source, "assignment": assignment,
            "predicted_wall_s": predicted_walls(cases, assignment, count, weights, max_concurrency)}


def shard_summary(plan: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per shard: its case count (canaries apart) and predicted wall / CI timeout."""
    block = plan["shards"]
    canaries = sum(1 for c in plan["cases"] if is_canary(c))
    walls = block.get("predicted_wall_s") or [None] * block["count"]
    sizes = Counter(block["assignment"].values())
    rows = []
    for i in range(1, block["count"] + 1):
        rows.append({"shard": i, "cases": sizes.get(i, 0), "canaries": canaries, "predicted_wall_s": walls[i - 1],
                     "timeout_minutes": timeout_minutes(walls[i - 1])})
    return rows


def add_shards(plan: dict[str, Any], count: int, durations_dir: Path | None = None) -> dict[str, Any]:
    """make_plan --shards N [--durations DIR]: the plan with its `shards` block, validated again."""
    from ..plan.validate import validate_plan
    mc = (plan["adapter"].get("invocation") or {}).get("max_concurrency", 1)
    mc = mc if isinstance(mc, int) and not isinstance(mc, bool) and mc >= 1 else 1
    durations = read_durations(durations_dir) if durations_dir is not None else None
    plan["shards"] = shards_block(plan["cases"], count, k=plan["k"], max_concurrency=mc, durations=durations)
    validate_plan(plan, source="plan (built by make_plan.py --shards)")
    return plan
