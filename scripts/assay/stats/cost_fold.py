"""A run's cost and latency totals folded one case row (stats.cost.case_cost's) at a time: the one
computation of them, for run_cost (score_cost.py, results.json, the gate, the report) and for a
comparison's one pass over both runs (compare.cost_delta), which holds no row. Each sample the
percentiles and sums read is an 8-byte number in an array, summed with math.fsum: the order the
cases come in, and a split over two processes, never move a digit.
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Any, Iterable

from .judge_cost import JudgeFold
from .latency import stats as _stats

PRICES_FILE = "prices.yaml"


def _capability(manifest: dict) -> dict:
    matrix = (manifest.get("capability_matrix") or {}).get("cost_latency") or {}
    traces = manifest.get("traces") or {}
    if matrix.get("enabled") is False:
        return {"enabled": False, "blocked_by": matrix.get("blocked_by") or "disabled in profile.yaml"}
    if "cost_latency" in (traces.get("disabled_layers") or []) or traces.get("collected") is False:
        return {"enabled": False, "blocked_by": "no traces collected (adapter traces.source); tokens and model "
                                                 "latency come only from a trace"}
    return {"enabled": True, "blocked_by": None}


class CostFold:
    """run_cost's totals folded one case row (case_cost's) at a time: the one computation of a run's
    cost and latency totals, for run_cost and for a comparison's one pass over both runs
    (compare.cost_delta), which holds no row. Sums and counts, the models prices.yaml lacks, and
    each sample the percentiles and exact sums read (8 bytes each in an array: summed with
    math.fsum, so the order and the split over processes never move a digit)."""

    def __init__(self) -> None:
        self.cases = self.holdout = self.traced = self.input_tokens = self.output_tokens = 0
        self.model_calls = self.no_usage = self.partial = self.no_call = 0
        # model-like spans the reader could not read as a model call, and the cases (ids) that hold them
        self.unread_spans, self.unread_cases = 0, []
        # k > 1: the answers (repeats) read, the repeats with no trace, the traced cases by how they were read
        self.answers = self.answers_untraced = 0
        self.scopes: dict[str, int] = {}
        self.unpriced: set[str] = set()
        # priced: each priced case's cost of one answer (the mean, p50, p95); spent: its every answer's (the total)
        self.latencies, self.model_latencies, self.priced, self.spent = array("d"), array("d"), array("d"), array("d")
        self.judge = JudgeFold()

    def add(self, row: dict) -> bool:
        """Fold a case's row in; False (nothing folded) for a skipped case."""
        if not self.add_light(row["verdict"], row["holdout"], row["latencies_ms"]):
            return False
        self.unpriced.update(row["unpriced_models"])
        if row["judge"]["calls"]:
            self.judge.add(row["judge"])
        if row["traced"]:
            self.traced += 1
            self.input_tokens += row["input_tokens"]
            self.output_tokens += row["output_tokens"]
            self.model_calls += row["model_calls"]
            self.no_usage += row["calls_without_usage"]
            self.partial += row["calls_partial_usage"]
            unread = row.get("unread_model_spans") or 0
            self.unread_spans += unread
            if unread:
                self.unread_cases.append(str(row["case_id"]))
            self.no_call += not row["model_calls"] and not unread   # a case whose model span was not read made one
            self.answers += row["answers"]
            self.answers_untraced += row["answers_without_trace"]
            if row["trace_scope"]:
                self.scopes[row["trace_scope"]] = self.scopes.get(row["trace_scope"], 0) + 1
            self.model_latencies.extend(row["model_latencies_ms"])
            if row["cost"] is not None:
                self.priced.append(row["cost"])
                self.spent.append(row["spend"])
        return True

    def add_light(self, verdict: Any, holdout: bool, latencies: list) -> bool:
        """A case's verdict, holdout and latency samples (all a case with no trace and no judge call
        adds: stats.cost.case_light); False for a skipped case."""
        if verdict == "skipped":
            return False
        self.cases += 1
        self.holdout += bool(holdout)
        self.latencies.extend(latencies)
        return True

    def merge(self, other: "CostFold") -> None:
        """Fold in another fold's cases (a forked child's half)."""
        for k in ("cases", "holdout", "traced", "input_tokens", "output_tokens", "model_calls", "no_usage",
                  "partial", "no_call", "answers", "answers_untraced", "unread_spans"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        for scope, n in other.scopes.items():
            self.scopes[scope] = self.scopes.get(scope, 0) + n
        self.unpriced |= other.unpriced
        self.unread_cases += other.unread_cases
        for k in ("latencies", "model_latencies", "priced", "spent"):
            getattr(self, k).extend(getattr(other, k))
        self.judge.merge(other.judge)

    def result(self, run_dir: Path, manifest: dict, prices: dict | None, prices_note: str | None = None) -> dict:
        """run_cost's document without `cases`."""
        n_traced, unpriced, calls = self.traced, sorted(self.unpriced), self.model_calls
        capability = _capability(manifest)
        if capability["enabled"] and not n_traced:
            capability = {"enabled": False, "blocked_by": "traces were configured but no case has a trajectory.json"}
        k = manifest.get("k") if isinstance(manifest.get("k"), int) else 1
        judge = self.judge.totals(prices, self.cases, k)
        totals = {
            "cases": self.cases, "traced_cases": n_traced,
            # the answers whose traces were read (a case's every repeat at k > 1, when each stored its own)
            "traced_answers": self.answers, "answers_without_trace": self.answers_untraced,
            "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "model_calls": calls,
            "cost": None,
            "complete": bool(prices is not None and n_traced and len(self.priced) == n_traced and calls
                             and not self.no_usage and not self.partial and not self.unread_spans),
            "unpriced_cases": (n_traced - len(self.priced)) if prices is not None else None,
            "calls_without_usage": self.no_usage, "calls_partial_usage": self.partial,
            "cases_without_model_call": self.no_call,   # priced at 0: said beside the budget
            "unread_model_spans": self.unread_spans,   # their cases' cost is unknown (unread_model_cases)
            "unread_model_cases": sorted(self.unread_cases),
            # why the total is not the run's cost, in words (None when it is): wave 4 §1
            "incomplete_reason": _incomplete_reason(n_traced, unpriced, self.no_usage, calls,
                                                    (prices or {}).get("per_token") or {}, self.partial,
                                                    self.unread_spans, self.unread_cases),
            "latency_ms": _stats(self.latencies),   # every repeat's
            "model_latency_ms": _stats(self.model_latencies),   # one sample per answer read
            "k": k,
            "k_note": k_note(k, self.scopes, self.answers_untraced, judge) if k > 1 else None,
            # the traced cases by how their repeats were read (k > 1): every_repeat, conversation, not_stored
            "repeats_read": {s: self.scopes.get(s, 0) for s in ("every_repeat", "conversation", "not_stored")}
                            if k > 1 else None,
        }
        spent = round(math.fsum(self.spent), 8) if self.spent else None
        if prices is not None:
            # an incomplete total would read as the run's cost: give only what was priced, apart. The mean,
            # p50 and p95 are of one answer per case; the total is every answer's, the run's spend
            totals["cost"] = {**_stats(self.priced), "total": spent} if totals["complete"] else {
                "n": len(self.priced), "total": None, "mean": None, "p50": None, "p95": None,
                "priced_cases_total": spent}
        totals["judge"] = judge
        return {
            "run_id": Path(run_dir).name, "capability": capability,
            "currency": prices["currency"] if prices else None,
            "prices": prices["file"] if prices else None, "prices_note": prices_note,
            "unpriced_models": unpriced, "totals": totals,
            "holdout_cases_in_totals": self.holdout,
            "timeout_s": (manifest.get("invocation") or {}).get("timeout_s"),   # a case's latency stops there
        }


def k_note(k: int, scopes: dict[str, int], untraced: int, judge: dict | None = None) -> str | None:
    """What the tokens and cost of a k > 1 run are of, in words: each traced case's every repeat, or
    its deciding repeat only and why (a conversation's repeats store no trace; a run dir written
    before each repeat's trace was stored); and the judge's, one answer's per case too (`judge`:
    JudgeFold's totals). None when no case was traced and none judged."""
    every, conv, old = (scopes.get(s, 0) for s in ("every_repeat", "conversation", "not_stored"))
    parts = []
    if every:
        parts.append(f"every repeat's trace is read for {every} case(s): their tokens, model calls and cost total "
                     f"are the run's whole spend on them, and a case's cost is the mean of one answer (its repeats' "
                     "cost over those with a trace)")
    if untraced:
        parts.append(f"{untraced} repeat(s) stored no trace: their cost is unknown and left out of their case's mean")
    if conv:
        parts.append(f"{conv} conversation case(s) store only the deciding repeat's traces, so their tokens and cost "
                     f"are of one repeat; the run spent about {k} times as much on them")
    if old:
        parts.append(f"{old} case(s) have only the deciding repeat's trace (a run dir written before each repeat's "
                     f"trace was stored), so their tokens and cost are of one repeat; the run spent about {k} times "
                     "as much on them")
    if judge and judge.get("calls"):
        parts.append(judge_note(judge))
    return f"k={k}: " + "; ".join(parts) if parts else None


def judge_note(judge: dict) -> str:
    """The judge's part of a k > 1 run's k_note: its cost per case is one answer's, as the app's."""
    return (f"the judge's cost per case is one answer's too: its {judge['calls']} call(s) on {judge.get('answers')} "
            f"judged answer(s) of {judge['cases']} case(s), each case's over the repeats it judged (the judge's "
            "total is the run's spend)")


def _near_price(model: str, priced: Iterable[str]) -> str:
    """` (prices.yaml names 'gpt-4.1-mini'; ...)` for an unpriced model one name in the file is close to: a
    provider's dated id (`gen_ai.response.model` is read first), another case or spelling."""
    from ..core.suggest import closest
    priced = list(priced)
    hit = next((p for p in priced if p.lower() == model.lower() or model.startswith(p + "-")), None) or closest(model, priced)
    return (f" (prices.yaml names {hit!r}; a model is priced only under the exact name its spans report: "
            f"add {model!r} to models)") if hit else ""


def _incomplete_reason(traced: int, unpriced: list[str], no_usage: int, calls: int,
                       priced: dict | None = None, partial: int = 0, unread: int = 0,
                       unread_cases: list[str] | None = None) -> str | None:
    if not traced:
        return None
    parts = []
    if unread:   # assay.traces.conventions.model_like: a model call the trajectory lacks is not a call at 0
        ids = sorted(unread_cases or [])
        parts.append(f"{unread} span(s) in case(s) {', '.join(ids[:5])}{f' (and {len(ids) - 5} more)' if len(ids) > 5 else ''} "
                     "look like a model call but are not read as one (token usage, or gen_ai.system with a "
                     "model, on a span with no gen_ai.operation.name chat / text_completion / generate_content: "
                     "an instrumentation from before GenAI semantic conventions 1.27, or a framework's own span "
                     "name), so their cost is unknown, not 0 (each case's trajectory.json names them in unread_model_spans); "
                     "use an instrumentation that writes gen_ai.operation.name, or set adapter.yaml "
                     "traces.convention to the one its spans use")
    if no_usage:
        parts.append(f"{no_usage} of {calls} model call(s) reported no token usage (their cost is unknown, not 0)")
    if partial:   # an output side dropped from the span is not 0 output tokens
        parts.append(f"{partial} of {calls} model call(s) reported input or output tokens but not both (the missing "
                     "side's cost is unknown, not 0)")
    if unpriced:
        parts.append(f"model(s) {', '.join(unpriced)} not in {PRICES_FILE}: not priced at 0"
                     + "".join(_near_price(m, priced or {}) for m in unpriced))
    if not calls and not unread:
        parts.append(f"no model call in any of the {traced} trace(s): the instrumentation wrote no LLM span, "
                     "so the app's cost is unknown, not 0")
    return "; ".join(parts) or None


CHANGE_GROUPS = ("unchanged", "fixed", "broken", "other")


class ChangeFold:
    """compare_to_baseline's groups folded one pair of rows (the same case in both runs) at a time:
    each group's cases, cases of unknown cost, and its cost and latency changes (summed exactly at
    the end, as CostFold's)."""

    def __init__(self) -> None:
        self.cases = dict.fromkeys(CHANGE_GROUPS, 0)
        self.unknown = dict.fromkeys(CHANGE_GROUPS, 0)
        self.cost = {g: array("d") for g in CHANGE_GROUPS}
        self.latency = {g: array("d") for g in CHANGE_GROUPS}

    def add(self, b: dict, r: dict) -> None:
        """b: the baseline's row of a case, r: the current run's."""
        self.add_values(b["verdict"], r["verdict"], b["cost"], r["cost"], b["latency_ms"], r["latency_ms"])

    def add_values(self, bv: Any, rv: Any, bc: float | None, rc: float | None, bl: float | None,
                   rl: float | None) -> None:
        """A case's verdict, cost and latency in the baseline (b) and the current run (r)."""
        if rv == bv:
            g = "unchanged"
        elif (bv, rv) == ("fail", "pass"):
            g = "fixed"
        elif (bv, rv) == ("pass", "fail"):
            g = "broken"
        else:
            g = "other"
        self.cases[g] += 1
        if rc is None or bc is None:
            self.unknown[g] += 1
        else:
            self.cost[g].append(rc - bc)
        if rl is not None and bl is not None:
            self.latency[g].append(rl - bl)

    def merge(self, other: "ChangeFold") -> None:
        for g in CHANGE_GROUPS:
            self.cases[g] += other.cases[g]
            self.unknown[g] += other.unknown[g]
            self.cost[g].extend(other.cost[g])
            self.latency[g].extend(other.latency[g])

    def groups(self) -> dict[str, dict]:
        return {g: {"cases": self.cases[g], "cost_delta": round(math.fsum(self.cost[g]), 8),
                    "cost_unknown": self.unknown[g], "latency_delta_ms": round(math.fsum(self.latency[g]), 3)}
                for g in CHANGE_GROUPS}
