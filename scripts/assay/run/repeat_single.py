"""One repeat of a single-turn case: send with retries, then trace, score and judge the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..core.ids import new_uuid4
from ..core.vocab import UNSCORED
from ..score.rollup import case_verdict
from ..invoke.http import user_turn
from .judged_reason import JUDGE_PENDING
from ..invoke.outcome import (RATE_LIMITED_PREFIX, Outcome, attempt_with_retries, attempts_reason, expected_status_of,
                              is_expected, is_rate_limited)
from .repeat_scoring import infra_part, response_record, score_answered, scrub
from ..traces.collect import request_trace_headers

if TYPE_CHECKING:
    from .casework import CaseWorker


def one_repeat(w: "CaseWorker", case: Mapping[str, Any], n: int, ref: dict) -> dict:
    """Repeat `n`: its request, response, every attempt's outcome, its layers and verdict."""
    trace_headers, sent_trace_id = request_trace_headers(w.trace)
    wire, recorded = w.invoker.prepare(case, new_uuid4(), trace_headers)
    sent = {"n": 0, "headers": trace_headers, "trace_id": sent_trace_id}
    retrace = getattr(w.invoker, "retrace", None)

    def send_attempt() -> Outcome:
        # every attempt its own trace (a fresh traceparent): spans of an attempt that failed after
        # the app did work (a handoff, a tool call) are never read as the answered attempt's
        sent["n"] += 1
        if sent["n"] > 1 and sent["trace_id"] and retrace is not None:
            headers, trace_id = request_trace_headers(w.trace)
            if retrace(wire, recorded, headers):
                sent.update(headers=headers, trace_id=trace_id)
        return w.send(wire)

    def on_retry(attempt: int, out: Outcome, wait: float) -> None:
        w.runlog.event("retry", **ref, repeat=n, attempt=attempt, outcome=scrub(out.describe()),
                       wait_s=round(wait, 3))
    budget = w.execution.get("rate_limit_wait_s") if w.execution.get("adaptive", True) else None
    expected = expected_status_of(case.get("expect"))
    outcomes = attempt_with_retries(send_attempt, max_attempts=int(w.execution["max_attempts"]),
                                    backoff_s=list(w.execution["backoff_s"]), on_retry=on_retry,
                                    rate_limit_wait_s=budget, expected_status=expected)
    final = outcomes[-1]
    response = response_record(outcomes)
    result: dict[str, Any] = {"n": n, "request": w.kept_request(recorded), "response": response, "outcomes": outcomes}
    if final.retriable and not is_expected(final, expected):
        reason = attempts_reason(outcomes)
        if budget is not None and is_rate_limited(final):
            reason = (f"{RATE_LIMITED_PREFIX}: {final.describe()} on {len(outcomes)} attempt(s) until "
                      f"execution.rate_limit_wait_s ({budget:g} s) was spent")
        result.update(infra_part(w.trace, final, reason))
    else:
        result.update(score_answered(w, case, final, sent["headers"], sent["trace_id"]))
        if w.judge is not None and result["layers"]["judged"].get("reason") == JUDGE_PENDING:
            result["layers"]["judged"], result["judge_doc"] = judge_answer(
                w, case, result["answer_text"], result["trajectory"], ref)
            result["verdict"] = case_verdict(result["layers"], skipped=False)
    return result


def judge_answer(w: "CaseWorker", case, answer: str | None, trajectory: dict | None,
                 ref: dict) -> tuple[dict, dict | None]:
    """(judged layer, judge.json doc or None) for one scored repeat."""
    from ..judge.prompt import Material   # the judge's modules: only for a run with a judge
    from ..judge.rubrics import case_pins as rubric_pins
    from ..judge.turns import gold_of
    from .turn_judging import NO_ANSWER, tool_results_of
    if answer is None:
        return {"verdict": UNSCORED, "reason": NO_ANSWER}, None
    material = Material(user_message=scrub(user_turn(case)) or "", answer=scrub(answer) or "",
                        tool_results=tool_results_of(trajectory), gold=gold_of(case.get("expect")))
    got = w.judge.judge_case(case, material, rubric_pins(case), ref)
    return got.layer, got.doc
