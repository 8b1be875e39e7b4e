"""Test helpers for GenAI traces: write OTLP JSON span lines, build trajectories for scorer tests.

    from otlp_util import agent_spans, write_spans, tool_call, trajectory

    spans = agent_spans(trace_id, "billing", [("get_invoice", {"id": "INV-1"}, {"total": 3})],
                        parent_span_id=parent)           # an app continuing a traceparent
    write_spans(path, spans)                              # one TracesData line, appended
"""

from __future__ import annotations

from typing import Any, Iterable

from assay.traces.otlp_writer import (  # noqa: F401  (re-exported for other tests)
    new_span_id, new_trace_id, parse_traceparent, span, traces_data, write_spans,
)

MISSING = object()


def agent_spans(trace_id: str, agent: str | None, tools: Iterable[tuple] = (), *,
                parent_span_id: str | None = None, t0: int = 1_700_000_000_000_000_000,
                llm_tokens: tuple[int, int] | None = (10, 5), model: str = "test-model") -> list[dict]:
    """Spans of one agent turn: an invoke_agent root, one chat span, then one execute_tool span
    per `(name, arguments, result[, error])` entry (result MISSING = not captured), 1 ms apart."""
    root_id = new_span_id()
    tools = list(tools)
    spans, t = [], t0 + 1_000_000
    if llm_tokens is not None:
        finish = ["tool_calls"] if tools else ["stop"]  # what a real chat span says about its tool requests
        spans.append(span(trace_id=trace_id, parent_span_id=root_id, operation="chat", model=model,
                          input_tokens=llm_tokens[0], output_tokens=llm_tokens[1], start_ns=t, end_ns=t + 500_000,
                          attributes={"gen_ai.response.finish_reasons": finish}))
        t += 1_000_000
    for entry in tools:
        name, args, result = entry[0], entry[1], entry[2]
        error = entry[3] if len(entry) > 3 else None
        spans.append(span(trace_id=trace_id, parent_span_id=root_id, operation="execute_tool", tool=name,
                          arguments=args, result=None if result is MISSING else result, error=error,
                          start_ns=t, end_ns=t + 500_000))
        t += 1_000_000
    root = span(trace_id=trace_id, span_id=root_id, parent_span_id=parent_span_id, operation="invoke_agent",
                agent=agent, start_ns=t0, end_ns=t + 1_000_000)
    return [root, *spans]


def tool_call(name: str, arguments: Any = MISSING, result: Any = MISSING, error: str | None = None) -> dict:
    """A normalized tool call as `normalize_trace` produces it (MISSING = not captured)."""
    return {"name": name, "agent": None, "error": error,
            "arguments": None if arguments is MISSING else arguments, "arguments_captured": arguments is not MISSING,
            "result": None if result is MISSING else result, "result_captured": result is not MISSING}


def trajectory(*calls: dict, agents: Iterable[str] = ()) -> dict:
    """A normalized trajectory holding `calls` in order."""
    return {"trace_id": "0" * 31 + "1", "agents": [{"name": a} for a in agents], "llm_calls": [],
            "tool_calls": list(calls), "usage": {"by_agent": {}, "total": {"input_tokens": 0, "output_tokens": 0}}}


def span_app(spans_path, spans_of, reply: dict):
    """A fakeapp handler of a traced app: the health check answers ok; each message continues the
    request's traceparent, writes the spans `spans_of(trace_id, parent_span_id)` gives (one write at a
    time) and answers `reply`."""
    import threading

    from fakeapp import Reply
    lock = threading.Lock()

    def handler(req) -> "Reply":
        if req.method == "GET":
            return Reply(200, {"ok": True})
        trace_id, parent = parse_traceparent(req.headers.get("traceparent") or req.headers.get("Traceparent"))
        spans = spans_of(trace_id, parent)
        with lock:
            write_spans(spans_path, spans)
        return Reply(200, reply)
    return handler
