"""The trace branch (pre-flight step 4) and the ONE per-case hook that returns a trajectory.

`collect_case_trace(config, request_ctx) -> CaseTrace` is the only place the engine asks for a
trace; `request_trace_headers(config)` is what it sends
so the trace can be found. The decision is `assay.traces.plan` (trace_plan, make_traceparent,
trace_id_from_response); the sources are `assay.traces.otlp_file` and `assay.traces.otlp_http`.

trace_status: "complete" (score trace-fed layers), "incomplete" / "missing" (the case is
`infra_incomplete`, never fail), or "not_collected" (a trace-less run). verdict.json's `trace`
block (runner-contract §10.1) says the same in its own words: `CaseTrace.block()`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.vocab import TRACE_DEPENDENT_LAYERS
from . import plan

COMPLETE = "complete"
INCOMPLETE = "incomplete"
MISSING = "missing"
NOT_COLLECTED = "not_collected"
TRANSCRIPT = "transcript"     # an agent's stream-json transcript, read by the invoker (agent mode)


@dataclass
class TraceConfig:
    collected: bool
    reason: str | None = None
    source: str | None = None
    convention: str | None = None
    correlation: str | None = None
    response_field: str | None = None
    source_obj: Any = field(default=None, repr=False)
    scored: dict[str, list] = field(default_factory=dict, repr=False)   # trace id -> the case ids read with it

    def manifest(self) -> dict[str, Any]:
        out = {"collected": self.collected, "reason": self.reason, "source": self.source,
               "convention": self.convention, "correlation": self.correlation,
               "disabled_layers": [] if self.collected else list(TRACE_DEPENDENT_LAYERS)}
        if getattr(self.source_obj, "address", None):
            out["listen"] = self.source_obj.address  # otlp-http: where the runner received spans
        return out

    def close(self) -> None:
        """Stop what the source runs (the otlp-http listener); a no-op for a span file."""
        close = getattr(self.source_obj, "close", None)
        if callable(close):
            close()


def trace_branch(adapter: Mapping[str, Any], state_dir: Path, env: Mapping[str, str]) -> TraceConfig:
    """Decide whether this run collects traces. An unsupported store is exit 3 naming it. An agent's
    transcript is its trace (`assay.traces.claude_code`): an agent run always collects one."""
    from ..core.secrets import expand_deep
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), Mapping) else {}
    if inv.get("mode") == "agent":
        return TraceConfig(True, None, source=TRANSCRIPT, convention="claude-code", correlation="session_id")
    tr = adapter.get("traces") if isinstance(adapter.get("traces"), Mapping) else {}
    source = tr.get("source")
    resolved = dict(adapter)
    resolved["traces"] = expand_deep(dict(tr), env)
    decision = plan.trace_plan(resolved, state_dir=str(state_dir))
    if decision.get("refusal"):
        raise AssayError(f"pre-flight: {decision['refusal']}", 3, key="traces", trace_source=source)
    cfg = TraceConfig(bool(decision.get("queryable")), decision.get("reason"), source=source,
                      convention=decision.get("convention"), correlation=decision.get("correlation"),
                      response_field=decision.get("response_field"))
    if cfg.collected and source == "otlp-http":
        cfg.reason = None
        from .otlp_http import OtlpHttpSource, proto_install, protobuf_available
        if tr.get("protocol") != "http/json" and not protobuf_available():
            raise AssayError(f"pre-flight: traces.source otlp-http: {proto_install()}", 3,
                             key="traces.protocol", trace_source=source, python=sys.executable)
        try:
            cfg.source_obj = OtlpHttpSource(decision["location"], decision["convention"],
                                            decision["quiescence_ms"], decision["max_wait_s"],
                                            correlation=decision.get("correlation"))
        except OSError as exc:
            raise AssayError(f"pre-flight: {exc} (traces.location; another run or collector may hold the port)",
                             3, key="traces.location", trace_source=source)
    elif cfg.collected:
        from .otlp_file import OtlpFileSource   # a trace-less run (the most common) never loads the span reader
        cfg.reason = None
        cfg.source_obj = OtlpFileSource(decision["location"], decision["convention"],
                                        decision["quiescence_ms"], decision["max_wait_s"],
                                        written=tr.get("location"), correlation=decision.get("correlation"))
    return cfg


def request_trace_headers(config: TraceConfig) -> tuple[dict[str, str], str | None]:
    """Headers to send so the trace can be found (traceparent-echo), and the trace id they carry."""
    if not config.collected or config.correlation != "traceparent-echo":
        return {}, None
    header, trace_id = plan.make_traceparent()
    return {"traceparent": header}, trace_id


@dataclass
class CaseTrace:
    """What the trace source gave one answered request (iterable as the old 4-tuple)."""
    status: str
    trajectory: dict | None
    trace_doc: Any
    reason: str | None
    trace_id: str | None = None
    correlation: str | None = None

    def __iter__(self):
        return iter((self.status, self.trajectory, self.trace_doc, self.reason))

    def block(self) -> dict[str, Any]:
        """verdict.json's `trace` block: {collected, status ok|infra_incomplete|not_collected,
        trace_id, correlation, reason}."""
        return trace_block(self.status, self.trace_id, self.correlation, self.reason)


def trace_block(status: str, trace_id: str | None, correlation: str | None, reason: str | None) -> dict[str, Any]:
    """The `trace` block for a runner trace status (complete/incomplete/missing/not_collected)."""
    block_status = {COMPLETE: "ok", NOT_COLLECTED: NOT_COLLECTED}.get(status, "infra_incomplete")
    return {"collected": status == COMPLETE, "status": block_status, "trace_id": trace_id,
            "correlation": correlation, "reason": None if status == COMPLETE else reason}


def not_sent_block(config: TraceConfig, why: str) -> dict[str, Any]:
    """The `trace` block of a sent case whose request got no answer (no trace was looked for)."""
    reason = config.reason if not config.collected else why
    return trace_block(NOT_COLLECTED, None, config.correlation, reason)


def collect_case_trace(config: TraceConfig, request_ctx: Mapping[str, Any]) -> CaseTrace:
    """The trace of one answered request: status, trajectory, trace doc, reason, trace id.

    request_ctx: {"sent_trace_id": str|None, "sent_traceparent": str|None, "response_json": obj,
    "function_trace_id": str|None}. The traceparent's span id is the caller span the app's root
    hangs from: knowing it lets a trace whose own root has not arrived yet read as incomplete.
    """
    corr = config.correlation
    if config.source == TRANSCRIPT:
        got = request_ctx.get("agent")
        if not isinstance(got, Mapping):
            return CaseTrace(MISSING, None, None, "the agent wrote no transcript", None, corr)
        traj = got.get("trajectory")
        sid = traj.get("session_id") if isinstance(traj, Mapping) else None
        if got.get("status") != "ok" or traj is None:
            return CaseTrace(INCOMPLETE, None, None, got.get("reason") or "transcript incomplete", sid, corr)
        return CaseTrace(COMPLETE, traj, got.get("events"), None, sid, corr)
    if not config.collected:
        return CaseTrace(NOT_COLLECTED, None, None, config.reason, None, corr)
    trace_id = request_ctx.get("function_trace_id") or request_ctx.get("sent_trace_id")
    if config.response_field:
        trace_id, why = plan.trace_id_from_response(request_ctx.get("response_json"), config.response_field)
        if trace_id is None:
            return CaseTrace(MISSING, None, None, why, None, corr)
    if not trace_id:
        return CaseTrace(MISSING, None, None, "no trace id to correlate this request with", None, corr)
    from .otlp_writer import parse_traceparent
    sent = parse_traceparent(request_ctx.get("sent_traceparent"))
    parent = sent[1] if sent and sent[0] == trace_id else None
    outcome = config.source_obj.collect(trace_id, parent_span_id=parent)
    if outcome.status == "ok" and outcome.trajectory is not None:
        case_id = request_ctx.get("case_id")
        readers = config.scored.setdefault(trace_id, [])
        other = next((c for c in readers if c != case_id and (c or case_id)), MISSING_CASE)
        readers.append(case_id)
        if other is not MISSING_CASE:
            return CaseTrace(INCOMPLETE, None, None, another_case_reason(trace_id, other, config), trace_id, corr)
        return CaseTrace(COMPLETE, outcome.trajectory, outcome.trace_doc, None, trace_id, corr)
    return CaseTrace(INCOMPLETE, None, None, outcome.reason or "trace incomplete", trace_id, corr)


MISSING_CASE = object()


def another_case_reason(trace_id: str, other: str | None, config: TraceConfig) -> str:
    """Why a case is not scored on a trace another case of the run was already read with: its spans are
    that request's (the app answered with another request's trace id), never this case's evidence."""
    where = (f"the response field {config.response_field!r} holds another request's trace id (does the app "
             "return the trace id of the request it answers, not a stored one?)") if config.response_field else (
             "the app joined this request to another request's trace")
    return (f"trace id {trace_id} was already read for {'case ' + other if other else 'another case'}: "
            f"{where}; two cases never share a trace, so this case's trace layers are not scored on it")


LATE_SPANS_FIX = ("raise traces.completeness.quiescence_ms above the app's export batch delay "
                  "(OTEL_BSP_SCHEDULE_DELAY, default 5000 ms), and wrap each request in one span")


def late_spans_block(config: TraceConfig) -> dict[str, Any] | None:
    """results.json `late_spans`: the cases scored on part of their trace, because more of its spans
    arrived after it was read as complete (a second root span, a late export batch). Their trace
    layers (a forbidden tool, a loop, the arguments) may have missed the calls that came late. A trace
    id read by several turns (one trace per session) is left to the same-trace rule. None when none."""
    late = getattr(config.source_obj, "late_spans", None)
    if not config.collected or not callable(late):
        return None
    rows = [{"case_id": ids[0], "trace_id": tid, "spans_scored": n, "spans_seen": seen}   # a holdout case: None
            for tid, (n, seen) in late().items()
            for ids in [config.scored.get(tid) or [None]] if len(ids) == 1]
    if not rows:
        return None
    rows.sort(key=lambda r: (str(r["case_id"]), r["trace_id"]))
    return {"cases": rows, "fix": LATE_SPANS_FIX}


def note_late_spans(config: TraceConfig, extra: dict[str, Any], runlog: Any) -> None:
    """At the end of a run: record `late_spans_block` in results.json (`extra`) and run.log."""
    late = late_spans_block(config)
    if late:
        extra["late_spans"] = late
        runlog.event("late_spans", cases=[r["case_id"] for r in late["cases"]])
