"""A run's latency samples and their nearest-rank percentiles (stats.cost reads them for the p95 budget)."""

from __future__ import annotations

import math
from typing import Any


def _ms(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def repeat_latencies(verdict: dict) -> list[float]:
    """The case's latency samples for the run's p50/p95: one per repeat at k > 1 (the runner records each
    repeat's in `repeats[].latency_ms`), else the case's own. The deciding repeat alone would hide a slow
    tail in the others: at k = 3 a p95 budget read a third of the requests (the first, when all passed).
    A run dir written before repeats carried their latency gives the case's one."""
    reps = verdict.get("repeats")
    if not reps or not isinstance(reps, list):   # k = 1: the case's own
        own = verdict.get("latency_ms")
        return [own] if isinstance(own, (int, float)) and not isinstance(own, bool) else []
    found = [_ms(r.get("latency_ms")) for r in reps if isinstance(r, dict) and "latency_ms" in r]
    if found and len(found) == len(reps):
        return [v for v in found if v is not None]
    own = _ms(verdict.get("latency_ms"))
    return [own] if own is not None else []


def percentile(values: Any, q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    vals = sorted(values)
    if not vals:
        return None
    rank = max(1, math.ceil(q / 100 * len(vals)))
    return vals[rank - 1]


def stats(values: Any) -> dict:
    """n, total, mean (summed exactly: math.fsum, so the order the values came in never moves a
    digit) and the nearest-rank p50 / p95 of a list or array of numbers."""
    total = math.fsum(values) if len(values) else None
    return {"n": len(values), "total": round(total, 8) if total is not None else None,
            "mean": round(total / len(values), 8) if total is not None else None,
            "p50": percentile(values, 50), "p95": percentile(values, 95)}
