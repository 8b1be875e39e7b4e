"""What both paths of a case (a single-turn repeat, a conversation's turns) share: the answer read
from a response, the response's record, and the scoring of one answered or unanswered request."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ..core import hostile, writer
from ..score.answer_leaf import dotted, echo_of, leaf_of
from ..score.rollup import case_verdict
from ..invoke import templates
from ..invoke.http import user_turn
from .layers import RepeatEvidence, score_repeat, stopped_layers
from ..invoke.outcome import RESPONSE, Outcome
from ..core.secrets import REDACTED
from ..traces.collect import NOT_COLLECTED, TraceConfig, collect_case_trace, not_sent_block
from ..core.vocab import INFRA_ERROR
from ..core.vocab import is_holdout

if TYPE_CHECKING:
    from .casework import CaseWorker


def scrub(text: str | None) -> str | None:
    """Replace any resolved secret value an app echoed back with REDACTED (core.writer)."""
    return writer.redact_text(text)


_ANSWER_PATHS: dict[str, tuple | None] = {}


def _answer_path(tmpl_raw: Any) -> list | tuple | None:
    """The <answer> path of the adapter's response template; a JSON string template (the usual
    adapter.yaml form, the same for every case of a run) is parsed once, not once per answer."""
    if not isinstance(tmpl_raw, str):
        return templates.find_mark(templates.parse_template(tmpl_raw, "invocation.response_body"),
                                   templates.ANSWER_MARK)
    if tmpl_raw not in _ANSWER_PATHS:
        tmpl = templates.parse_template(tmpl_raw, "invocation.response_body")
        path = templates.find_mark(tmpl, templates.ANSWER_MARK)
        _ANSWER_PATHS[tmpl_raw] = tuple(path) if path is not None else None   # shared: never mutated
    return _ANSWER_PATHS[tmpl_raw]


def answer_of(adapter: Mapping[str, Any], mode: str, out: Outcome) -> tuple[str | None, str | None, dict | None]:
    """(the answer at the adapter's <answer> path, None, the leaf when it is an object or a list:
    score.answer_leaf.leaf_of) or (None, why there is none, None)."""
    if out.answer_withheld:
        return None, out.answer_withheld, None
    tmpl_raw = (adapter.get("invocation") or {}).get("response_body")
    if tmpl_raw is None:  # no template declared: the whole body is the answer
        # an http body or a cli's stdout that is a JSON object or list is not text (score.answer_leaf);
        # agent and function modes' body_text is the reply's text already
        whole = (leaf_of(out.body_json, None, out.body_text, whole_body=True)
                 if mode in ("http", "cli") and out.json_ok and out.body_text is not None else None)
        return out.body_text, None, whole
    path = _answer_path(tmpl_raw)
    if out.body_json is None:
        if mode == "function" and out.body_text is not None and not out.json_ok:
            return out.body_text, None, None
        why = "; ".join(out.notes) or "the response body is not JSON"
        return None, f"no answer at the adapter's <answer> path: {why}", None
    found, value = templates.lookup(out.body_json, path or [])
    if not found:
        return None, "no answer at the adapter's <answer> path (path absent in the response)", None
    bad = hostile.holds(value)
    if bad is not None:
        return None, hostile.reason("the answer at the adapter's <answer> path", bad), None
    text = templates.as_text(value)
    return text, None, leaf_of(value, path, text) if text is not None else None


def _no_template(adapter: Mapping[str, Any]) -> bool:
    return (adapter.get("invocation") or {}).get("response_body") is None


def _echo_path(adapter: Mapping[str, Any]) -> str | None:
    """The `<answer>` path as dotted text (named when the answer echoes the user's turn)."""
    tmpl_raw = (adapter.get("invocation") or {}).get("response_body")
    return None if tmpl_raw is None else dotted(_answer_path(tmpl_raw))


def response_record(outcomes: list[Outcome]) -> dict[str, Any]:
    """response.json: the final outcome (redacted) and every attempt's log line."""
    final = outcomes[-1]
    body: Any = None
    body_format = None
    if final.kind == RESPONSE:
        # A JSON body stays JSON with its secrets redacted value by value, so a rescore reads the
        # structure the run scored (not "not JSON" because a token was echoed into it).
        if final.json_ok and final.body_json is not None:
            body, body_format = writer.redact_value(final.body_json), "json"
        elif final.body_text is not None:
            body, body_format = scrub(final.body_text), "text"
    headers = {k: (scrub(v) if k.lower() not in ("set-cookie", "authorization") else REDACTED)
               for k, v in sorted(final.headers.items()) if k.lower() not in ("date",)}
    extra = {}
    if final.cli is not None:  # cli mode: exit code, signal, stderr, caps, scratch dir
        extra["cli"] = {k: scrub(v) if isinstance(v, str) else v for k, v in final.cli.items()}
    return {
        **extra,
        "status": final.status, "outcome": final.kind, "headers": headers, "body": body,
        "body_format": body_format, "notes": list(final.notes), "error": scrub(final.error),
        "attempts": len(outcomes), "retry_count": len(outcomes) - 1, "crashed": any(o.crashed for o in outcomes),
        "latency_ms": final.latency_ms,
        "attempt_log": [{"attempt": i + 1, "outcome": o.kind, "status": o.status,
                         "error": scrub(o.error), "latency_ms": o.latency_ms}
                        for i, o in enumerate(outcomes)],
    }


def infra_part(trace: TraceConfig, final: Outcome, reason: str) -> dict[str, Any]:
    """What a request that never got an answer records: infra_error on http, nothing scored."""
    reason = scrub(reason)
    layers = stopped_layers("http", {"verdict": INFRA_ERROR, "reason": reason, "status": final.status},
                            "transport failure: not scored")
    return {"answer_text": None, "actual": None, "actual_reason": f"no response ({INFRA_ERROR})",
            "trajectory": None, "raw_spans": None, "trace_status": NOT_COLLECTED, "infra_reason": reason,
            "trace": not_sent_block(trace, f"no answer ({INFRA_ERROR}): no trace was looked for"),
            "layers": layers, "verdict": INFRA_ERROR, "workdir": None}


def score_answered(w: "CaseWorker", case, final: Outcome, trace_headers: Mapping[str, str],
                   sent_trace_id: str | None) -> dict[str, Any]:
    """Trace, answer and every layer of one answered request (a single-turn case or one turn).
    The judged layer is left as the plan set it (JUDGE_PENDING when a judge runs): each path judges."""
    answer, note, leaf = answer_of(w.adapter, getattr(w.invoker, "mode", ""), final)
    echo = echo_of(answer, user_turn(case), _echo_path(w.adapter), whole_body=_no_template(w.adapter))
    def collect() -> Any:
        return collect_case_trace(w.trace, {"sent_trace_id": sent_trace_id,
                                            "sent_traceparent": trace_headers.get("traceparent"),
                                            "response_json": final.body_json, "function_trace_id": final.trace_id,
                                            "agent": final.agent,   # a holdout case is never named (its id is sealed)
                                            "case_id": None if is_holdout(case) else case.get("id")})
    if getattr(final, "_replay", None) is None:   # no --record / --replay: the trace source's
        got = collect()
    else:   # --replay: the recorded trace (the shim was loaded with the run's replay session at pre-flight)
        from ..replay.shim import trace_through
        got = trace_through(final, collect)
    trace_status, trajectory, raw, trace_reason = got
    ev = RepeatEvidence(status=final.status, response_json=final.body_json, answer=answer, answer_note=note, answer_leaf=leaf,
                        answer_echo=echo,
                        trace_status=trace_status, trajectory=trajectory, trace_reason=trace_reason,
                        workdir=(final.agent or {}).get("workdir"))
    layers, actual = score_repeat(case, w.score_ctx, ev)
    return {"answer_text": scrub(answer) if answer is not None else None, "actual": actual,
            "actual_reason": "the execution layer did not run (not applicable or disabled)",
            "trajectory": trajectory, "raw_spans": raw, "trace_status": trace_status, "trace": got.block(),
            "infra_reason": None, "layers": layers, "verdict": case_verdict(layers, skipped=False),
            "workdir": ev.workdir if isinstance(ev.workdir, dict) else None}
