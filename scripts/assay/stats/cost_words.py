"""What each cost and latency figure covers, in the words every surface that shows one uses (the
viewer's Compare and History pages, compare's cost block, run_history.py's history.json): one
definition, so a page never says "cost per case" for the app's calls alone while the gate's
budget adds the judge's.

`WORDS` maps each figure's key to (its label, what it covers); `judge_cost_part` reads a judge
block (stats.judge_cost.judge_totals, or results.json `cost_latency.judge`) into the judge's per
case cost, or the reason it is unknown; `with_judge` adds it to the app's as gate.py's cost
budget does (stats.cost_budget).
"""

from __future__ import annotations

from typing import Any

APP_COST = "app cost per traced case"
JUDGE_COST = "judge cost per case"
BUDGET_COST = "app + judge per case"
LATENCY = "latency (end to end)"

WORDS: dict[str, tuple[str, str]] = {
    "cost_per_case": (APP_COST, "the app's own model calls in its traces, priced with prices.yaml, averaged over the "
                                "cases that have a trace (at k > 1 one answer's: a case's every repeat read, "
                                "averaged over its repeats); the judge's calls are not in it"),
    "judge_cost_per_case": (JUDGE_COST, "the judge's calls, priced with prices.yaml, averaged over every case of the "
                                        "run (judged or not; at k > 1 one answer's: a judged case's calls over the "
                                        "repeats it judged); none when the run called no judge"),
    "cost_per_case_with_judge": (BUDGET_COST, "the app's cost per traced case plus the judge's per case (at k > 1 "
                                              "each one answer's): what gate.py's cost budget checks (unless "
                                              "--no-judge-cost); unknown when either part is"),
    "input_tokens_per_case": ("input tokens per traced case", "the app's model calls, averaged over the cases that "
                                                              "have a trace (each run over its own; at k > 1 over "
                                                              "their repeats: one answer's)"),
    "output_tokens_per_case": ("output tokens per traced case", "the app's model calls, averaged over the cases that "
                                                                "have a trace (each run over its own; at k > 1 over "
                                                                "their repeats: one answer's)"),
    "latency": (LATENCY, "per case, timed by the runner on the attempt whose answer was scored: failed attempts "
                         "before it, their backoff and rate-limit waits are not in it (response.json attempt_log "
                         "times every attempt); at k > 1 every repeat is a sample"),
}


def words() -> dict[str, dict[str, str]]:
    """WORDS as JSON for a page: {key: {"label", "covers"}}."""
    return {k: {"label": label, "covers": covers} for k, (label, covers) in WORDS.items()}


def answers_part(totals: dict) -> str:
    """What the app's cost per case the gate's budget checks is of at k > 1 (stats.cost_fold's totals,
    `repeats_read`): one answer's, each case's every repeat averaged, or the deciding repeat's where no
    other repeat's trace was stored. '' at k = 1."""
    k, read = totals.get("k"), totals.get("repeats_read")
    if not isinstance(k, int) or k < 2 or not isinstance(read, dict):
        return ""
    every, one = read.get("every_repeat") or 0, (read.get("conversation") or 0) + (read.get("not_stored") or 0)
    parts = []
    if every:
        parts.append(f"one answer's: the mean over every repeat of {every} case(s) at k={k}, "
                     f"{totals.get('traced_answers')} answer(s)")
    if one:
        parts.append(f"{one} case(s) read at their deciding repeat only (no other repeat's trace is stored: k_note)")
    return f" ({'; '.join(parts)})" if parts else ""


def judge_answers_part(judge: dict) -> str:
    """What the judge's cost per case the gate's budget adds is of at k > 1 (stats.judge_cost's totals,
    `answers`): one answer's, as the app's. '' at k = 1."""
    if not isinstance(judge.get("answers"), int):
        return ""
    return f", the judge's one answer's too: its {judge.get('calls')} call(s) on {judge['answers']} judged answer(s)"


def judge_cost_part(judge: dict | None) -> tuple[float | None, str | None]:
    """(the judge's cost per case, why it is unknown). No judge call: (None, None), nothing to add.
    Calls whose cost is unknown (no usage reported, a judge model prices.yaml does not name, no
    prices file): (None, the run's own reason)."""
    judge = judge if isinstance(judge, dict) else {}
    calls = judge.get("calls") if isinstance(judge.get("calls"), int) else 0
    if not calls:
        return None, None
    mean = judge.get("mean_per_case")
    if isinstance(mean, (int, float)) and not isinstance(mean, bool):
        return float(mean), None
    reason = judge.get("incomplete_reason") or judge.get("reason") or "its calls were not priced"
    return None, f"the judge's cost is unknown: {reason}"


def with_judge(app: Any, judge: float | None, judge_calls: int) -> float | None:
    """The app's cost per traced case plus the judge's per case, as gate.py's budget adds them;
    the app's alone when the run called no judge; None when a part is unknown."""
    if not isinstance(app, (int, float)) or isinstance(app, bool):
        return None
    if not judge_calls:
        return app
    return None if judge is None else round(app + judge, 10)
