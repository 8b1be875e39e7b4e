"""One repeat of a conversation case: every turn sent and scored (restarting on a retryable
outcome, `invoke.conversation.run_conversation`), and the case-level view of the turns."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..core.vocab import LAYER_ORDER, UNSCORED
from ..judge.fold import sum_usage
from ..judge.turns import conversation_doc
from ..score.rollup import case_verdict, conversation_verdict, merge_turn_layers
from ..invoke import conversation as convo
from ..invoke.outcome import Outcome
from .case_record import repeat_latency_ms
from .repeat_scoring import infra_part, response_record, score_answered, scrub
from ..core.secrets import REDACTED
from ..traces.collect import request_trace_headers
from .turn_judging import judge_turn

if TYPE_CHECKING:
    from .casework import CaseWorker

def one_conversation(w: "CaseWorker", case: Mapping[str, Any], n: int, ref: dict) -> dict:
    """One repeat of a conversation: every turn sent, scored, and the case-level view of it."""
    res, turns = drive(w, case, n, ref)
    return scripted_result(res, turns, n, case["id"])


def drive(w: "CaseWorker", case: Mapping[str, Any], n: int, ref: dict, script: Any = None) -> tuple[Any, list[dict]]:
    """Send one conversation (the case's turns, or `script`'s: a simulated user) -> (the driver's
    result, every sent turn as scored, with its request and response records)."""
    conv = w.conversation

    def on_retry(attempt: int, turn: int, out: Outcome, wait: float) -> None:
        w.runlog.event("retry", **ref, repeat=n, attempt=attempt, turn=turn, restart="conversation",
                       outcome=scrub(out.describe()), wait_s=round(wait, 3))

    def score_turn(tcase, out: Outcome, headers, sent_id, spec, earlier: list) -> dict[str, Any]:
        """One turn scored, then judged (assay.run.turn_judging) before the next is sent."""
        scored = score_answered(w, tcase, out, headers, sent_id)
        got = judge_turn(w.judge, case, spec, earlier, scored, ref)
        if got is not None:
            scored["layers"]["judged"], scored["judge_doc"] = got
            scored["verdict"] = case_verdict(scored["layers"], skipped=False)
        return scored
    res = convo.run_conversation(
        case, conv, invoker=w.invoker, send=w.send, score_turn=score_turn,
        infra_turn=lambda final, reason: infra_part(w.trace, final, reason),
        trace_headers=lambda: request_trace_headers(w.trace),
        max_attempts=int(w.execution["max_attempts"]), backoff_s=list(w.execution["backoff_s"]),
        on_retry=on_retry, redact_cookie=REDACTED,
        rate_limit_wait_s=w.execution.get("rate_limit_wait_s") if w.execution.get("adaptive", True) else None,
        script=script)
    earlier = [o for _, o in res.endings[:-1]]
    turns = []
    for t in res.turns:
        response = dict(response_record(earlier + [t.outcome]), turn=t.spec.n)
        turns.append(dict(t.scored, n=t.spec.n, spec=t.spec, request=w.kept_request(t.request), response=response))
    return res, turns


def scripted_result(res: Any, turns: list[dict], n: int, case_id: str) -> dict:
    """A scripted conversation's case-level view: its turns' layers merged, where it stopped."""
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
    judged = [(t["n"], t["judge_doc"]) for t in turns if t.get("judge_doc") is not None]
    if judged:
        result["judge_doc"] = conversation_doc(case_id, judged, sum_usage([d["usage"] for _, d in judged]))
    return result


def conversation_record(record: dict[str, Any], repeats: list[dict], chosen: dict, folded: str, *, k: int,
                        conv: Any) -> None:
    """verdict.json's conversation keys, from the repeat whose verdict the case took (in place)."""
    record.update(conversation_fields(chosen, conv))
    record["has_result_expect"] = bool((chosen["expect"] or {}).get("result"))
    record["latency_ms"] = repeat_latency_ms(chosen)
    if folded == UNSCORED and chosen["failed_turn"] is None and chosen["turns_sent"] < chosen["turns_total"]:
        record["unscored_reason"] = chosen["stop_reason"]   # stopped early: its later turns never ran
    if k > 1:
        record["repeats"] = [{"n": r["n"], "verdict": r["verdict"], "turns_sent": r["turns_sent"],
                              "failed_turn": r["failed_turn"], "latency_ms": repeat_latency_ms(r)} for r in repeats]


def conversation_fields(chosen: dict, conv: Any) -> dict[str, Any]:
    """The conversation keys themselves: turns sent, where it stopped, each turn's verdict and layers."""
    return {"multi_turn": True, "turns_sent": chosen["turns_sent"], "turns_total": chosen["turns_total"],
            "failed_turn": chosen["failed_turn"], "stop_reason": chosen["stop_reason"],
            "memory": conv.memory if conv is not None else None,
            "turns": [{"n": t["n"], "verdict": t["verdict"], "trace_collected": t["trajectory"] is not None,
                       "user": t["spec"].user, **({"judged": True} if t.get("judge_doc") is not None else {})}
                      for t in chosen["turns"]],
            "turn_layers": {f"t{t['n']}.{name}": t["layers"][name] for t in chosen["turns"] for name in LAYER_ORDER}}
