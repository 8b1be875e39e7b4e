"""One repeat of a conversation case: every turn sent and scored (restarting on a retryable
outcome, `invoke.conversation.run_conversation`), and the case-level view of the turns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..core.vocab import LAYER_ORDER, UNSCORED
from ..judge.rubrics import case_pins as rubric_pins
from ..score.rollup import case_verdict, conversation_verdict, merge_turn_layers
from ..invoke import conversation as convo
from .judged_reason import JUDGE_PENDING
from ..invoke.outcome import Outcome
from .repeat_scoring import infra_part, response_record, score_answered, scrub
from ..core.secrets import REDACTED
from ..traces.collect import request_trace_headers

if TYPE_CHECKING:
    from .casework import CaseWorker

# Conversation turns are not judged in this build: the judged layer of a turn says so (never pass).
CONVERSATION_UNJUDGED = "unjudged (conversation turns are not judged in this build)"
# ... but a calibrated (gating) pin left unjudged is a check that never ran: not a chosen unscored.
CONVERSATION_UNJUDGED_GATING = ("conversation turns are not judged in this build, so the calibrated "
                                "(gating) rubric {pins} never ran; pin it on a single-turn case")


def one_conversation(w: "CaseWorker", case: Mapping[str, Any], n: int, ref: dict) -> dict:
    """One repeat of a conversation: every turn sent, scored, and the case-level view of it."""
    conv = w.conversation

    def on_retry(attempt: int, turn: int, out: Outcome, wait: float) -> None:
        w.runlog.event("retry", **ref, repeat=n, attempt=attempt, turn=turn, restart="conversation",
                       outcome=scrub(out.describe()), wait_s=round(wait, 3))

    def score_turn(tcase, out: Outcome, headers, sent_id) -> dict[str, Any]:
        scored = score_answered(w, tcase, out, headers, sent_id)
        if scored["layers"]["judged"].get("reason") == JUDGE_PENDING:
            scored["layers"]["judged"] = conversation_unjudged(w, tcase)
            scored["verdict"] = case_verdict(scored["layers"], skipped=False)
        return scored
    res = convo.run_conversation(
        case, conv, invoker=w.invoker, send=w.send, score_turn=score_turn,
        infra_turn=lambda final, reason: infra_part(w.trace, final, reason),
        trace_headers=lambda: request_trace_headers(w.trace),
        max_attempts=int(w.execution["max_attempts"]), backoff_s=list(w.execution["backoff_s"]),
        on_retry=on_retry, redact_cookie=REDACTED,
        rate_limit_wait_s=w.execution.get("rate_limit_wait_s") if w.execution.get("adaptive", True) else None)
    earlier = [o for _, o in res.endings[:-1]]
    turns = []
    for t in res.turns:
        response = dict(response_record(earlier + [t.outcome]), turn=t.spec.n)
        turns.append(dict(t.scored, n=t.spec.n, spec=t.spec, request=t.request, response=response))
    failed_turn, stop_reason = res.failed_turn, res.stop_reason
    shared = convo.shared_trace_blocker(turns)
    if shared is not None:
        # two turns read the same trace: no turn's spans can be told apart, so every
        # trace-dependent layer is unscorable (the answer still scores)
        for t in turns:
            t["layers"] = convo.block_trace_layers(t["layers"], shared)
            t["verdict"] = case_verdict(t["layers"], skipped=False)
        if failed_turn is not None and turns[-1]["verdict"] not in convo.STOP_VERDICTS:
            failed_turn = None
            stop_reason = f"turn {turns[-1]['n']}: stopped on a trace layer that is now unscorable ({shared})"
    layers = merge_turn_layers((t["n"], t["layers"]) for t in turns)
    verdict = conversation_verdict(layers, turns_sent=res.turns_sent, turns_total=res.turns_total,
                                   failed_turn=failed_turn)
    deciding = turns[-1]
    result = {k: deciding[k] for k in ("request", "response", "answer_text", "actual", "actual_reason",
                                       "trajectory", "raw_spans", "trace_status", "trace", "infra_reason")}
    result.update(n=n, outcomes=[o for _, o in res.endings], ending_turns=[t for t, _ in res.endings],
                  layers=layers, verdict=verdict, turns=turns, turns_sent=res.turns_sent,
                  turns_total=res.turns_total, failed_turn=failed_turn,
                  stop_reason=scrub(stop_reason), expect=deciding["spec"].expect)
    return result


def conversation_unjudged(w: "CaseWorker", case) -> dict[str, Any]:
    """A conversation turn's judged layer: never judged in this build. Provisional pins read as a
    chosen unscored; a calibrated pin would gate, so leaving it unjudged is a check that never ran."""
    gating = [str(p) for p in rubric_pins(case) if w.judge is not None and w.judge.calibration(str(p))[0]]
    if gating:
        return {"verdict": UNSCORED, "reason": CONVERSATION_UNJUDGED_GATING.format(pins=", ".join(gating))}
    return {"verdict": UNSCORED, "reason": CONVERSATION_UNJUDGED}


def conversation_record(record: dict[str, Any], repeats: list[dict], chosen: dict, folded: str, *, k: int,
                        conv: Any) -> None:
    """verdict.json's conversation keys, from the repeat whose verdict the case took (in place)."""
    record.update(conversation_fields(chosen, conv))
    record["has_result_expect"] = bool((chosen["expect"] or {}).get("result"))
    record["latency_ms"] = round(sum(t["response"].get("latency_ms") or 0 for t in chosen["turns"]), 3)
    if folded == UNSCORED and chosen["failed_turn"] is None and chosen["turns_sent"] < chosen["turns_total"]:
        record["unscored_reason"] = chosen["stop_reason"]   # stopped early: its later turns never ran
    if k > 1:
        record["repeats"] = [{"n": r["n"], "verdict": r["verdict"], "turns_sent": r["turns_sent"],
                              "failed_turn": r["failed_turn"]} for r in repeats]


def conversation_fields(chosen: dict, conv: Any) -> dict[str, Any]:
    """The conversation keys themselves: turns sent, where it stopped, each turn's verdict and layers."""
    return {"multi_turn": True, "turns_sent": chosen["turns_sent"], "turns_total": chosen["turns_total"],
            "failed_turn": chosen["failed_turn"], "stop_reason": chosen["stop_reason"],
            "memory": conv.memory if conv is not None else None,
            "turns": [{"n": t["n"], "verdict": t["verdict"], "trace_collected": t["trajectory"] is not None,
                       "user": t["spec"].user} for t in chosen["turns"]],
            "turn_layers": {f"t{t['n']}.{name}": t["layers"][name] for t in chosen["turns"] for name in LAYER_ORDER}}
