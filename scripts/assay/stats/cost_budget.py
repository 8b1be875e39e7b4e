"""The gate's cost and latency budgets over a run's cost block (`stats.cost.run_cost`): each budget
either holds (a line with its margin) or closes the gate (over it, or it cannot be checked)."""

from __future__ import annotations

from .cost_words import answers_part, judge_answers_part, with_judge


def _cost_budget(cost: dict, budget: float, include_judge: bool = True) -> tuple[bool, str]:
    """The mean cost per case against the budget: the app's (per traced case) plus, unless
    `include_judge` is false, the judge's (over every case). At k > 1 both are one answer's (a case's
    repeats averaged), so a budget means the same at any k. Unpriced judge calls make it
    uncheckable, as unpriced app calls do."""
    t, cur = cost["totals"], cost.get("currency") or ""
    mean = (t.get("cost") or {}).get("mean")
    if not cost["capability"]["enabled"]:
        return True, f"cost budget {budget:g} {cur}/case cannot be checked: {cost['capability']['blocked_by']}"
    if cost.get("prices") is None:
        return True, f"cost budget {budget:g}/case cannot be checked: no prices file ({cost.get('prices_note')})"
    if not t["complete"] or mean is None:
        return True, (f"cost budget {budget:g} {cur}/case cannot be checked: "
                      + (t.get("incomplete_reason") or f"{t['unpriced_cases']} case(s) unpriced (unknown model(s): "
                         f"{', '.join(cost['unpriced_models']) or 'none named'})"))
    judge, split = t.get("judge") or {}, answers_part(t)   # k > 1: what one case's cost is of
    if judge.get("calls") and include_judge:
        if judge.get("mean_per_case") is None:
            if judge.get("calls_without_usage"):   # wave 4 §1: a judge call without usage costs unknown, not 0
                return True, (f"cost budget {budget:g} {cur}/case cannot be checked: {judge['incomplete_reason']}; "
                              "make the judge report its usage, or leave the judge out with gate.py --no-judge-cost")
            return True, (f"cost budget {budget:g} {cur}/case cannot be checked: the judge's calls are unpriced "
                          f"(judge model(s) {', '.join(judge.get('unpriced_models') or []) or 'unnamed'} not in the "
                          "prices file); price them, or leave the judge out with gate.py --no-judge-cost")
        split += f" (app {mean:.6g} + judge {judge['mean_per_case']:.6g}{judge_answers_part(judge)})"
        mean = with_judge(mean, judge["mean_per_case"], judge["calls"])   # the one rule the pages say too
    elif judge.get("calls"):
        split += f" (the app's only: {judge['calls']} judge call(s) left out by --no-judge-cost)"
    if t.get("cases_without_model_call"):   # a trace with no model call is priced at 0: never silently
        split += (f" ({t['cases_without_model_call']} of {t['traced_cases']} traced case(s) made no model call and "
                  "count at 0: if the app called a model there, its instrumentation lost the span)")
    untraced = (t.get("cases") or 0) - (t.get("traced_cases") or 0)
    if untraced > 0:   # an infra error, a lost trace under --max-infra-rate: the mean is of the others only
        split += (f" (the mean of {t['traced_cases']} traced case(s) of {t['cases']}: {untraced} have no trace, so "
                  "their cost is unknown and left out)")
    if mean > budget:
        pct = f"{(mean / budget - 1) * 100:.1f} %" if budget else "any cost is over a 0 budget"
        return True, f"cost {mean:.6g} {cur}/case{split} is over the budget {budget:g} by {mean - budget:.6g} ({pct})"
    return False, f"cost {mean:.6g} {cur}/case{split}, budget {budget:g}: margin {budget - mean:.6g}"


def _latency_budget(cost: dict, budget: float) -> tuple[bool, str]:
    p95 = (cost["totals"]["latency_ms"] or {}).get("p95")
    if p95 is None:
        return True, f"latency budget p95 {budget:g}s cannot be checked: no case latency recorded"
    timeout = cost.get("timeout_s")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and budget > timeout:
        # a slower case stops at its timeout, so p95 never passes it: a budget there never closes (one
        # written in milliseconds, 2000 for 2 s, read as 2000 s)
        return True, (f"latency budget p95 {budget:g}s cannot be checked: it is above the cases' timeout "
                      f"({timeout:g}s), where a slower case stops, so p95 can never exceed it; budgets are in "
                      f"seconds: set one below {timeout:g}")
    t = cost["totals"]
    # at k > 1 every repeat is a sample (stats.cost.repeat_latencies): say so, the count is not the cases'
    over = (f" (over {t['latency_ms']['n']} latencies: every repeat of {t['cases']} case(s) at k={t['k']})"
            if isinstance(t.get("k"), int) and t["k"] > 1 and t["latency_ms"].get("n") else "")
    if p95 / 1000 > budget:
        return True, f"p95 latency {p95 / 1000:.3f}s{over} is over the budget {budget:g}s by {p95 / 1000 - budget:.3f}s"
    return False, f"p95 latency {p95 / 1000:.3f}s{over}, budget {budget:g}s: margin {budget - p95 / 1000:.3f}s"


def budget_lines(cost: dict, *, max_cost_per_case: float | None, max_p95_latency_s: float | None,
                 sources: dict[str, str] | None = None, include_judge: bool = True) -> tuple[list[str], list[str]]:
    """(close reasons, lines for the gate's screen). A budget that cannot be checked closes the gate.
    `sources` names where each budget came from (a flag, profile.yaml's line); it ends its line."""
    close, lines = [], []
    for key, budget, check in (("max_cost_per_case", max_cost_per_case,
                                lambda c, b: _cost_budget(c, b, include_judge)),
                               ("max_p95_latency_s", max_p95_latency_s, _latency_budget)):
        if budget is None:
            continue
        closes, text = check(cost, budget)
        if (sources or {}).get(key):
            text += f" [budget from {sources[key]}]"
        (close if closes else lines).append(text)
    return close, lines
