"""Cost and latency of two runs side by side: per case and in total, with their deltas.

Both sides are `assay.stats.cost.run_cost` (the one reading of tokens, prices and latency),
priced with the candidate's state dir `prices.yaml` when it exists and reads (else cost is null,
never 0). A case's delta is null when either side lacks the number. Holdout cases are in the
totals only (run_cost never lists them).

Like with like: each figure says what it covers (assay.stats.cost_words, the words every page
uses). Per case figures are each run's mean over its own traced cases; the cost and token totals
are over the cases traced in BOTH runs (`both_traced`), so two runs that traced different cases
(a targeted rerun, an infra error) never show a drop that is only fewer cases. The judge's cost
per case is beside the app's, and their sum is what gate.py's cost budget checks.

compare_runs.py (compare.json's `cost_latency`) makes each case's row in its one pass over both
runs (`CaseCosts`, from the records its pairs read) and hands them here: the same block as
`cost_latency(base, candidate)` reading the runs itself, without a second pass over the journals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..stats.cost import case_reader, compare_to_baseline, default_prices_path, load_prices, run_cost
from ..stats.cost_words import judge_cost_part, with_judge, words


def prices_of(run_dir: Path) -> tuple[dict | None, str | None]:
    """(the prices a comparison uses: the candidate's state dir prices.yaml, or None; why none)."""
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


def _per_case(total: Any, n: Any) -> float | None:
    return round(total / n, 3) if isinstance(total, int) and isinstance(n, int) and n else None


def _side(totals: dict) -> dict:
    cost = totals.get("cost") or {}
    lat = totals.get("latency_ms") or {}
    judge = totals.get("judge") or {}
    judge_mean, judge_note = judge_cost_part(judge)
    n = totals.get("traced_cases")
    return {"cost_total": cost.get("total"), "cost_per_case": cost.get("mean"),
            "judge_cost_per_case": judge_mean, "judge_calls": judge.get("calls") or 0, "judge_note": judge_note,
            "cost_per_case_with_judge": with_judge(cost.get("mean"), judge_mean, judge.get("calls") or 0),
            "latency_p50_ms": lat.get("p50"), "latency_p95_ms": lat.get("p95"), "latency_mean_ms": lat.get("mean"),
            "input_tokens": totals.get("input_tokens"), "output_tokens": totals.get("output_tokens"),
            "input_tokens_per_case": _per_case(totals.get("input_tokens"), n),
            "output_tokens_per_case": _per_case(totals.get("output_tokens"), n),
            "traced_cases": n, "complete": totals.get("complete")}


def _cost_note(run: dict, priced: bool) -> str | None:
    """Why a side's app cost is unknown ("–", never 0), in its run's own words; None when it is known
    or when no prices file priced either side (the block's `note` says that once)."""
    t = run["totals"]
    if not priced or (t.get("cost") or {}).get("mean") is not None:
        return None
    if not run["capability"]["enabled"]:
        return f"the app's cost is unknown: {run['capability']['blocked_by']}"
    return "the app's cost is unknown: " + (t.get("incomplete_reason") or
                                             f"{t.get('unpriced_cases')} traced case(s) were not priced")


def _both_traced(base_rows: dict, cand_rows: list[dict]) -> dict:
    """The app's cost and tokens summed over the cases traced in both runs (by id; holdout cases are
    never listed, so never in it): totals of like with like. Cost null when a case is unpriced."""
    pairs = [(base_rows[r["case_id"]], r) for r in cand_rows
             if r["traced"] and r["case_id"] in base_rows and base_rows[r["case_id"]]["traced"]]
    out: dict[str, Any] = {"cases": len(pairs)}
    for side, i in (("base", 0), ("candidate", 1)):
        costs = [p[i]["cost"] for p in pairs]
        out[side] = {"cost_total": round(sum(costs), 8) if pairs and None not in costs else None,
                     "input_tokens": sum(p[i]["input_tokens"] for p in pairs),
                     "output_tokens": sum(p[i]["output_tokens"] for p in pairs)}
    out["delta"] = {k: _delta(out["base"][k], out["candidate"][k], 8) for k in out["base"]}
    return out


def _traced_note(bs: dict, cs: dict, both: int) -> str | None:
    if bs["traced_cases"] == cs["traced_cases"] == both:
        return None
    return (f"the base traced {bs['traced_cases']} case(s), the candidate {cs['traced_cases']}: the totals are over "
            f"the {both} case(s) traced in both runs; each per case figure is its run's mean over its own traced cases")


class CaseCosts:
    """Each case's cost row of one comparison, made from the case records a pass over both runs
    holds (compare.pair_all): `add(which, record, sealed)` per case of a side ("base" or
    "candidate"); then cost_latency(..., costs=self). A holdout case (`sealed`) is in the totals,
    never listed. `manifests`: each side's manifest.yaml as the comparison read it (its top-level keys)."""

    def __init__(self, base_manifest: dict, cand_manifest: dict, prices: tuple[dict | None, str | None]) -> None:
        self.prices = prices
        self.manifests = {"base": base_manifest, "candidate": cand_manifest}
        self.readers = {w: case_reader(m, prices[0]) for w, m in self.manifests.items()}
        self.rows: dict[str, list[dict]] = {"base": [], "candidate": []}
        self._alike: dict[tuple, Any] = {}

    def fresh(self) -> "CaseCosts":
        """An empty CaseCosts of the same comparison (a forked child's half of the cases)."""
        other = CaseCosts.__new__(CaseCosts)
        other.prices, other.manifests, other.readers = self.prices, self.manifests, self.readers
        other.rows, other._alike = {"base": [], "candidate": []}, {}
        return other

    def add(self, which: str, record: Any, sealed: bool = False) -> None:
        row = self.readers[which](record)
        if sealed:
            row["holdout"] = True
        # the parts most rows have alike (no judge call, no unpriced model) are one object each: at
        # 100,000 cases a side holds 100,000 rows until the totals are made (rows are read, never changed)
        judge = row["judge"]
        if not judge["calls"] and not judge["unpriced_models"]:
            row["judge"] = self._alike.setdefault(tuple(v for k, v in judge.items() if k != "unpriced_models"), judge)
        if not row["unpriced_models"]:
            row["unpriced_models"] = self._alike.setdefault("unpriced_models", row["unpriced_models"])
        self.rows[which].append(row)


def cost_latency(base_dir: Path, cand_dir: Path, costs: CaseCosts | None = None) -> dict[str, Any]:
    """{"currency", "note", "base", "candidate", "delta" (each total), "by_verdict_change", "cases":
    {case_id: {"cost": [base, candidate, delta], "latency_ms": [base, candidate, delta]}}}. `costs`:
    the rows a caller made in its own pass over both runs (no case is read again here)."""
    prices, note = costs.prices if costs is not None else prices_of(Path(cand_dir))
    try:
        if costs is None:
            b, c = run_cost(Path(base_dir), prices), run_cost(Path(cand_dir), prices)
        else:
            # each side's rows handed over, not kept here too (run_cost's `cases` are what is held after)
            b, c = (run_cost(Path(d), prices, manifest=costs.manifests[w], rows=costs.rows.pop(w))
                    for w, d in (("base", base_dir), ("candidate", cand_dir)))
    except AssayError as exc:
        return {"error": exc.message}
    bs, cs = _side(b["totals"]), _side(c["totals"])
    bs["cost_note"], cs["cost_note"] = _cost_note(b, prices is not None), _cost_note(c, prices is not None)
    base_rows = {r["case_id"]: r for r in b["cases"]}
    cases = {}
    for r in c["cases"]:
        o = base_rows.get(r["case_id"])
        if o is None:
            continue
        cases[r["case_id"]] = {"cost": [o["cost"], r["cost"], _delta(o["cost"], r["cost"], 8)],
                               "latency_ms": [o["latency_ms"], r["latency_ms"], _delta(o["latency_ms"], r["latency_ms"], 3)]}
    both = _both_traced(base_rows, c["cases"])
    return {"currency": c["currency"], "note": note or (c["totals"].get("k_note")), "words": words(),
            "traced_note": _traced_note(bs, cs, both["cases"]), "both_traced": both,
            "base": bs, "candidate": cs,
            "delta": {k: _delta(bs[k], cs[k], 8) for k in bs if k not in ("complete", "judge_note", "cost_note")},
            "by_verdict_change": compare_to_baseline(c, b)["by_verdict_change"], "cases": cases}
