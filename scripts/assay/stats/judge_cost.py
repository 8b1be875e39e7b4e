"""The judge's tokens and cost, apart from the app's: priced with the same prices file
(`<state>/prices.yaml`), each judge call at its judge model's price. Read from what the runner
stored (verdict.json `judge_usage`); never from the judge again. stats.cost puts them in every
cost view (score_cost.py, results.json cost_latency.judge, the report, the gate's budget).
"""

from __future__ import annotations

import math
from array import array
from typing import Any, Callable


def token_count(v: Any) -> int:
    """A stored token or call count, or 0 for anything that is not a non-negative int."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


NO_JUDGE_MODEL = "(judge with no model name)"


def judge_model_of(manifest: dict) -> str | None:
    """The model that prices a judge call when its usage names none (one judge, or an ensemble of
    one model): the manifest's `judge.model`."""
    judge = manifest.get("judge") if isinstance(manifest.get("judge"), dict) else {}
    return judge.get("model") if isinstance(judge.get("model"), str) and judge.get("model") else None


def judged_repeats(verdict: dict, judge_json: Callable[[], Any]) -> int | None:
    """How many of a k > 1 case's repeats the judge judged (None at k = 1, or for a case not judged):
    verdict.json `judge_usage.judged_repeats`; a run written before it was recorded, the `repeats` its
    judge.json lists (`judge_json()` reads that file), else every repeat."""
    usage, reps = verdict.get("judge_usage"), verdict.get("repeats")
    if not usage or not isinstance(usage, dict) or not isinstance(reps, list) or len(reps) < 2:
        return None
    n = usage.get("judged_repeats")
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n
    doc = judge_json()
    listed = doc.get("repeats") if isinstance(doc, dict) else None
    return len(listed) if isinstance(listed, list) and listed else len(reps)


def judge_row(verdict: dict, prices: dict | None, judge_model: str | None, answers: int | None = None) -> dict:
    """A case's judge tokens (verdict.json `judge_usage`) and their price: each judge model at its own
    price (`by_model`), else the run's judge model. A model the prices file does not name: unpriced,
    never 0. A judge call that reported no token usage (`calls_without_usage`) has an unknown cost, as
    an app's model call without usage has (wave 4 §1): the case's judge cost is unknown, never 0.
    `answers`: at k > 1 the repeats the judge judged (judged_repeats): `spend` is every one's calls,
    `cost` one answer's (their mean), as the app's row (stats.cost.case_cost); at k = 1 (None) `cost` is
    the case's."""
    usage = verdict.get("judge_usage")
    if not usage or not isinstance(usage, dict):   # no judge call (most cases): the empty row
        return {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": None, "unpriced_models": [],
                "calls_without_usage": 0}
    calls = token_count(usage.get("calls"))
    row: dict[str, Any] = {"calls": calls, "input_tokens": token_count(usage.get("input_tokens")),
                           "output_tokens": token_count(usage.get("output_tokens")), "cost": None, "unpriced_models": [],
                           "calls_without_usage": min(token_count(usage.get("calls_without_usage")), calls)}
    if answers is not None and calls:
        row.update(answers=answers, spend=None)
    if not calls or prices is None:
        return row
    by_model = usage.get("by_model") if isinstance(usage.get("by_model"), dict) else {
        judge_model or NO_JUDGE_MODEL: row}
    cost, unpriced = 0.0, set()
    for model, counts in by_model.items():
        p = prices["per_token"].get(model)
        if p is None:
            unpriced.add(str(model))
            continue
        cost += token_count(counts.get("input_tokens")) * p["input"] + token_count(counts.get("output_tokens")) * p["output"]
    row["unpriced_models"] = sorted(unpriced)
    if not (unpriced or row["calls_without_usage"]):
        row["cost"] = round(cost, 8)
        if "answers" in row:
            row.update(spend=round(cost, 8), cost=round(cost / row["answers"], 8))
    return row


class JudgeFold:
    """judge_totals folded one case's judge row at a time (a comparison's one pass holds no row):
    sums, the models prices.yaml lacks, and each priced case's cost, its every judged repeat's (the
    total) and one answer's (the mean) (8 bytes each: summed once, exactly, at the end, so any order
    and any split over processes gives the same total)."""

    def __init__(self) -> None:
        self.cases = self.calls = self.input_tokens = self.output_tokens = self.no_usage = self.unknown = 0
        self.answers = 0   # the judged answers: a case's judged repeats at k > 1, else 1
        self.unpriced: set[str] = set()
        self.costs, self.per_answer = array("d"), array("d")

    def add(self, j: dict) -> None:
        if not j["calls"]:
            return
        self.cases += 1
        self.answers += j.get("answers", 1)
        self.calls += j["calls"]
        self.input_tokens += j["input_tokens"]
        self.output_tokens += j["output_tokens"]
        self.no_usage += j.get("calls_without_usage", 0)
        self.unpriced.update(j["unpriced_models"])
        if j["cost"] is None:
            self.unknown += 1
        else:
            self.costs.append(j["spend"] if "spend" in j else j["cost"])
            self.per_answer.append(j["cost"])

    def merge(self, other: "JudgeFold") -> None:
        for k in ("cases", "answers", "calls", "input_tokens", "output_tokens", "no_usage", "unknown"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.unpriced |= other.unpriced
        self.costs.extend(other.costs)
        self.per_answer.extend(other.per_answer)

    def totals(self, prices: dict | None, n_cases: int, k: int = 1) -> dict:
        """`cost`: every judge call's, the run's spend; `mean_per_case`: one answer's judge cost (a case's
        over its judged repeats at k > 1) averaged over every case. At k > 1 `answers` says how many
        judged answers (repeats) that is."""
        judged = self.cases
        unpriced = sorted(self.unpriced)
        complete = prices is not None and not self.unknown
        total = round(math.fsum(self.costs), 8) if complete else None
        one = round(math.fsum(self.per_answer), 8) if complete else None
        out = {"cases": judged, "calls": self.calls,
               "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
               "complete": complete if judged else True, "unpriced_models": unpriced,
               "calls_without_usage": self.no_usage,
               "incomplete_reason": incomplete_reason(unpriced, self.no_usage, self.calls),
               "cost": total if judged else (0.0 if prices is not None else None),
               "mean_per_case": (round(one / n_cases, 8) if one is not None and n_cases else None)
               if judged else (0.0 if prices is not None else None)}
        if k > 1:
            out["answers"] = self.answers
        return out


def judge_totals(rows: list[dict], prices: dict | None, n_cases: int | None = None, k: int = 1) -> dict:
    """The judge's calls, tokens and cost over the run's cases, apart from the app's. `cost` is null
    unless every judged case was priced (`unpriced_models` names what the prices file lacks);
    `mean_per_case` is over every non-skipped case (what judging adds to one answer of a case on
    average): `n_cases` of them when `rows` holds only the judged ones, else len(rows). (JudgeFold's totals.)"""
    fold = JudgeFold()
    for r in rows:
        fold.add(r["judge"])
    return fold.totals(prices, len(rows) if n_cases is None else n_cases, k)


def incomplete_reason(unpriced: list[str], no_usage: int, calls: int) -> str | None:
    """Why the judge's cost is not known, in words (None when it is): the one wording the gate's
    budget, its `judge cost:` line, results.json and the report give."""
    parts = []
    if no_usage:
        parts.append(f"{no_usage} of {calls} judge call(s) reported no token usage (their cost is unknown, not 0)")
    if unpriced:
        parts.append(f"the judge model(s) {', '.join(unpriced)} are not in prices.yaml: not priced at 0")
    return "; ".join(parts) or None
