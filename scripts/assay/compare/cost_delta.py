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

compare_runs.py (compare.json's `cost_latency`) folds each case into the totals in its one pass
over both runs (`CaseCosts`, from the records its pairs read: stats.cost_fold's CostFold and ChangeFold,
the rules run_cost uses), holding no row and no per case map: the same block as
`cost_latency(base, candidate)` reading the runs itself. A case's own cost and latency are on its
pair (`cost_latency`, compare_runs.py) when it is not still passing and either changed.
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..stats.cost import case_light, case_reader, default_prices_path, load_prices, reads_traces
from ..stats.cost_fold import ChangeFold, CostFold
from ..stats.cost_words import judge_cost_part, with_judge, words
from .light_record import pair_verdict


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
    answers = totals.get("traced_answers", n)   # per case figures are one answer's (k > 1: every repeat read)
    return {"cost_total": cost.get("total"), "cost_per_case": cost.get("mean"),
            "judge_cost_per_case": judge_mean, "judge_calls": judge.get("calls") or 0, "judge_note": judge_note,
            "cost_per_case_with_judge": with_judge(cost.get("mean"), judge_mean, judge.get("calls") or 0),
            "latency_p50_ms": lat.get("p50"), "latency_p95_ms": lat.get("p95"), "latency_mean_ms": lat.get("mean"),
            "input_tokens": totals.get("input_tokens"), "output_tokens": totals.get("output_tokens"),
            "input_tokens_per_case": _per_case(totals.get("input_tokens"), answers),
            "output_tokens_per_case": _per_case(totals.get("output_tokens"), answers),
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


def _both_traced(fold: "CompareFold") -> dict:
    """The app's cost and tokens summed over the cases traced in both runs (by id; holdout cases are
    never in it): totals of like with like. Cost null when a case is unpriced."""
    out: dict[str, Any] = {"cases": fold.both}
    for side in ("base", "candidate"):
        costs = fold.both_cost[side]
        out[side] = {"cost_total": round(math.fsum(costs), 8) if fold.both and len(costs) == fold.both else None,
                     "input_tokens": fold.both_tokens[side][0], "output_tokens": fold.both_tokens[side][1]}
    out["delta"] = {k: _delta(out["base"][k], out["candidate"][k], 8) for k in out["base"]}
    return out


def _note(prices_note: str | None, base: dict, cand: dict) -> str | None:
    """The block's note: why nothing is priced, else the candidate's k_note (what its figures are of at
    k > 1); when the two runs' k notes differ (a k=1 base, a k=3 candidate), both sides', so a comparison
    never reads one side's figures as the other's."""
    bn, cn = base.get("k_note"), cand.get("k_note")
    if bn == cn:
        return prices_note or cn
    sides = "; ".join(f"{role} {n or _one_read(t)}" for role, n, t in (("base", bn, base), ("candidate", cn, cand)))
    both = (f"the two runs' costs were read differently: {sides}. Each per case figure is one answer's on both sides; "
            "each total is its own run's spend (a run at a higher k sent each case more times)")
    return f"{prices_note}; {both}" if prices_note else both


def _one_read(totals: dict) -> str:
    """A side with no k_note: k = 1 (each case one answer), or k > 1 with nothing traced or judged."""
    k = totals.get("k") if isinstance(totals.get("k"), int) else 1
    return "k=1: each case is one answer" if k == 1 else f"k={k}: no case traced or judged"


def _traced_note(bs: dict, cs: dict, both: int) -> str | None:
    if bs["traced_cases"] == cs["traced_cases"] == both:
        return None
    return (f"the base traced {bs['traced_cases']} case(s), the candidate {cs['traced_cases']}: the totals are over "
            f"the {both} case(s) traced in both runs; each per case figure is its run's mean over its own traced cases")


class CompareFold:
    """What a comparison's pass keeps of its cases' cost and latency: each side's CostFold, the
    cases traced in both runs (their count, each side's cost per case in an array, token sums),
    and the verdict-change groups (ChangeFold). No row, no case id: a forked child's half is one
    of these, merged into the parent's."""

    def __init__(self) -> None:
        self.sides = {"base": CostFold(), "candidate": CostFold()}
        self.both = 0
        self.both_cost = {"base": array("d"), "candidate": array("d")}
        self.both_tokens = {"base": [0, 0], "candidate": [0, 0]}
        self.change = ChangeFold()

    def merge(self, other: "CompareFold") -> None:
        for w in ("base", "candidate"):
            self.sides[w].merge(other.sides[w])
            self.both_cost[w].extend(other.both_cost[w])
            self.both_tokens[w] = [a + b for a, b in zip(self.both_tokens[w], other.both_tokens[w])]
        self.both += other.both
        self.change.merge(other.change)


class CaseCosts:
    """One comparison's cost and latency, folded as its pairs are made (compare.pair_all):
    `add_pair(base_record, candidate_record, sealed)` per case id (a record None when the side has
    no such case); then cost_latency(..., costs=self). A holdout case (`sealed`) is in each side's
    totals only. `manifests`: each side's manifest.yaml as the comparison read it."""

    def __init__(self, base_manifest: dict, cand_manifest: dict, prices: tuple[dict | None, str | None]) -> None:
        self.prices = prices
        self.manifests = {"base": base_manifest, "candidate": cand_manifest}
        self.readers = {w: case_reader(m, prices[0]) for w, m in self.manifests.items()}
        self.traces = {w: reads_traces(m) for w, m in self.manifests.items()}
        self.fold = CompareFold()

    def fresh(self) -> "CaseCosts":
        """An empty CaseCosts of the same comparison (a forked child's half of the cases)."""
        other = CaseCosts.__new__(CaseCosts)
        other.prices, other.manifests, other.readers, other.traces = self.prices, self.manifests, self.readers, self.traces
        other.fold = CompareFold()
        return other

    def add_pair(self, base_record: Any, cand_record: Any, sealed: bool = False) -> dict | None:
        """Fold the case in; its own figures `{"cost": [base, candidate, change], "latency_ms": [...]}`
        when both runs have it (not skipped, not holdout) and its cost or latency changed, else None."""
        fold = self.fold
        if base_record is not None and cand_record is not None:
            lb = case_light(pair_verdict(base_record), self.traces["base"])
            lc = case_light(pair_verdict(cand_record), self.traces["candidate"]) if lb is not None else None
            if lc is not None:   # no trace read, no judge call (a trace-less run's cases): their rows need no more
                return self._light(lb, lc, sealed)
        b = self.readers["base"](base_record) if base_record is not None else None
        c = self.readers["candidate"](cand_record) if cand_record is not None else None
        skipped = False
        for which, row in (("base", b), ("candidate", c)):
            if row is not None:
                if sealed:
                    row["holdout"] = True
                skipped = not fold.sides[which].add(row) or skipped   # a skipped case: in no total
        if skipped or b is None or c is None or b["holdout"] or c["holdout"]:
            return None
        fold.change.add(b, c)
        if b["traced"] and c["traced"]:
            fold.both += 1
            for which, row in (("base", b), ("candidate", c)):
                if row["spend"] is not None:   # every answer's, as the tokens beside it
                    fold.both_cost[which].append(row["spend"])
                tokens = fold.both_tokens[which]
                tokens[0] += row["input_tokens"]
                tokens[1] += row["output_tokens"]
        if b["cost"] == c["cost"] and b["latency_ms"] == c["latency_ms"]:
            return None
        return {"cost": [b["cost"], c["cost"], _delta(b["cost"], c["cost"], 8)],
                "latency_ms": [b["latency_ms"], c["latency_ms"], _delta(b["latency_ms"], c["latency_ms"], 3)]}


    def _light(self, b: tuple, c: tuple, sealed: bool) -> dict | None:
        """add_pair of two cases case_light reads (their case_cost rows: verdict, holdout, latency)."""
        folded = [self.fold.sides[w].add_light(v[0], v[1] or sealed, v[3]) for w, v in (("base", b), ("candidate", c))]
        if not all(folded) or sealed or b[1] or c[1]:
            return None
        self.fold.change.add_values(b[0], c[0], None, None, b[2], c[2])
        if b[2] == c[2]:
            return None
        return {"cost": [None, None, None], "latency_ms": [b[2], c[2], _delta(b[2], c[2], 3)]}


def _read_both(base_dir: Path, cand_dir: Path) -> CaseCosts:
    """CaseCosts of two runs read here (the pass compare_runs.py makes with its pairs, without them)."""
    from .sides import load_side
    base, cand = load_side(Path(base_dir), "base"), load_side(Path(cand_dir), "candidate")
    costs = CaseCosts(base.manifest, cand.manifest, prices_of(cand.run_dir))
    for cid in dict.fromkeys([*cand.rows, *base.rows]):
        costs.add_pair(base.record(cid) if cid in base.rows else None, cand.record(cid) if cid in cand.rows else None,
                       cid in base.holdout or cid in cand.holdout)
    return costs


def cost_latency(base_dir: Path, cand_dir: Path, costs: CaseCosts | None = None) -> dict[str, Any]:
    """{"currency", "note", "words", "traced_note", "both_traced", "base", "candidate", "delta" (each
    total), "by_verdict_change"}. `costs`: the totals a caller folded in its own pass over both runs
    (no case is read again here); without it both runs are read here."""
    try:
        costs = costs if costs is not None else _read_both(Path(base_dir), Path(cand_dir))
    except AssayError as exc:
        return {"error": exc.message}
    prices, note = costs.prices
    fold = costs.fold
    b, c = (fold.sides[w].result(Path(d), costs.manifests[w], prices)
            for w, d in (("base", base_dir), ("candidate", cand_dir)))
    bs, cs = _side(b["totals"]), _side(c["totals"])
    bs["cost_note"], cs["cost_note"] = _cost_note(b, prices is not None), _cost_note(c, prices is not None)
    both = _both_traced(fold)
    return {"currency": c["currency"], "note": _note(note, b["totals"], c["totals"]), "words": words(),
            "traced_note": _traced_note(bs, cs, both["cases"]), "both_traced": both,
            "base": bs, "candidate": cs,
            "delta": {k: _delta(bs[k], cs[k], 8) for k in bs if k not in ("complete", "judge_note", "cost_note")},
            "by_verdict_change": fold.change.groups()}
