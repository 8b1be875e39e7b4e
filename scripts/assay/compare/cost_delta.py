"""Cost and latency of two runs side by side: per case and in total, with their deltas.

Both sides are `assay.stats.cost.run_cost` (the one reading of tokens, prices and latency),
priced with the candidate's state dir `prices.yaml` when it exists and reads (else cost is null,
never 0). A case's delta is null when either side lacks the number. Holdout cases are in the
totals only (run_cost never lists them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..stats.cost import compare_to_baseline, default_prices_path, load_prices, run_cost


def _prices(run_dir: Path) -> tuple[dict | None, str | None]:
    path = default_prices_path(run_dir)
    if not path.is_file() or path.is_symlink():
        return None, f"no {path.name} in the state dir: tokens and latency only, no cost"
    try:
        return load_prices(path, path.name), None
    except AssayError as exc:
        return None, exc.message


def _delta(a: Any, b: Any, digits: int) -> float | None:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return round(b - a, digits)
    return None


def _side(totals: dict) -> dict:
    cost = totals.get("cost") or {}
    lat = totals.get("latency_ms") or {}
    return {"cost_total": cost.get("total"), "cost_per_case": cost.get("mean"),
            "latency_p50_ms": lat.get("p50"), "latency_p95_ms": lat.get("p95"), "latency_mean_ms": lat.get("mean"),
            "input_tokens": totals.get("input_tokens"), "output_tokens": totals.get("output_tokens"),
            "traced_cases": totals.get("traced_cases"), "complete": totals.get("complete")}


def cost_latency(base_dir: Path, cand_dir: Path) -> dict[str, Any]:
    """{"currency", "note", "base", "candidate", "delta" (each total), "by_verdict_change", "cases":
    {case_id: {"cost": [base, candidate, delta], "latency_ms": [base, candidate, delta]}}}."""
    prices, note = _prices(Path(cand_dir))
    try:
        b, c = run_cost(Path(base_dir), prices), run_cost(Path(cand_dir), prices)
    except AssayError as exc:
        return {"error": exc.message}
    bs, cs = _side(b["totals"]), _side(c["totals"])
    base_rows = {r["case_id"]: r for r in b["cases"]}
    cases = {}
    for r in c["cases"]:
        o = base_rows.get(r["case_id"])
        if o is None:
            continue
        cases[r["case_id"]] = {"cost": [o["cost"], r["cost"], _delta(o["cost"], r["cost"], 8)],
                               "latency_ms": [o["latency_ms"], r["latency_ms"], _delta(o["latency_ms"], r["latency_ms"], 3)]}
    return {"currency": c["currency"], "note": note or (c["totals"].get("k_note")),
            "base": bs, "candidate": cs, "delta": {k: _delta(bs[k], cs[k], 8) for k in bs if k != "complete"},
            "by_verdict_change": compare_to_baseline(c, b)["by_verdict_change"], "cases": cases}
