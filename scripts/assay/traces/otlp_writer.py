"""Write OpenTelemetry GenAI spans as OTLP JSON lines: the format the runner's `otlp-file` source reads.

This is the app side of the trace contract, small enough to copy into an app that has no
OpenTelemetry SDK: build spans with `span(...)`, append them with `write_spans(path, spans)`.
Each call appends ONE line holding one OTLP `TracesData` object, exactly as the
OpenTelemetry Collector's file exporter does, with a single `write()` on an O_APPEND file
descriptor so concurrent writers never interleave half lines.

An app that received a W3C `traceparent` header continues that trace:

    trace_id, parent = parse_traceparent(headers["traceparent"])
    root = span("invoke_agent billing", trace_id=trace_id, parent_span_id=parent,
                operation="invoke_agent", agent="billing")
    call = span("execute_tool get_invoice", trace_id=trace_id, parent_span_id=root["spanId"],
                operation="execute_tool", tool="get_invoice",
                arguments={"invoice_id": "INV-1"}, result={"total": 12})
    write_spans("/var/otel/traces.jsonl", [root, call])
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Iterable

TRACEPARENT_RE = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")
STATUS_UNSET, STATUS_OK, STATUS_ERROR = 0, 1, 2


def new_trace_id() -> str:
    import secrets   # the writer's side only: the runner reads traceparents and never mints one here
    return secrets.token_hex(16)


def new_span_id() -> str:
    import secrets
    return secrets.token_hex(8)


def parse_traceparent(header: str | None) -> tuple[str, str] | None:
    """(trace_id, parent_span_id) from a W3C traceparent header value, or None if it is not one."""
    if not isinstance(header, str):
        return None
    m = TRACEPARENT_RE.fullmatch(header.strip().lower())
    if not m or set(m.group(1)) == {"0"} or set(m.group(2)) == {"0"}:
        return None
    return m.group(1), m.group(2)


def any_value(value: Any) -> dict:
    """A Python value as an OTLP JSON AnyValue (int64 as a string, as protobuf JSON writes it)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": str(k), "value": any_value(v)} for k, v in value.items()]}}
    return {"stringValue": "" if value is None else str(value)}


def _json_text(value: Any) -> str:
    # GenAI semconv carries tool arguments/results as (JSON) strings.
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def span(name: str | None = None, *, trace_id: str, span_id: str | None = None,
         parent_span_id: str | None = None, operation: str | None = None, agent: str | None = None,
         tool: str | None = None, arguments: Any = None, result: Any = None, error: str | None = None,
         model: str | None = None, input_tokens: int | None = None, output_tokens: int | None = None,
         start_ns: int | None = None, end_ns: int | None = None, attributes: dict | None = None) -> dict:
    """One OTLP JSON span with GenAI semantic-convention attributes.

    `operation` is `gen_ai.operation.name` (invoke_agent | execute_tool | chat ...); `agent`,
    `tool`, `model` and the token counts map to their `gen_ai.*` keys; `arguments`/`result`
    (any JSON value, written as JSON text) map to `gen_ai.tool.call.arguments`/`.result` and are
    omitted when None; `error` sets `error.type` and status code 2. Times default to now.
    """
    attrs: dict[str, Any] = {}
    if operation:
        attrs["gen_ai.operation.name"] = operation
    if agent is not None:
        attrs["gen_ai.agent.name"] = agent
    if tool is not None:
        attrs["gen_ai.tool.name"] = tool
    if arguments is not None:
        attrs["gen_ai.tool.call.arguments"] = _json_text(arguments)
    if result is not None:
        attrs["gen_ai.tool.call.result"] = _json_text(result)
    if model is not None:
        attrs["gen_ai.request.model"] = model
    if input_tokens is not None:
        attrs["gen_ai.usage.input_tokens"] = int(input_tokens)
    if output_tokens is not None:
        attrs["gen_ai.usage.output_tokens"] = int(output_tokens)
    if error is not None:
        attrs["error.type"] = error
    attrs.update(attributes or {})
    now = time.time_ns()
    start = now if start_ns is None else int(start_ns)
    end = start + 1_000_000 if end_ns is None else int(end_ns)
    if name is None:
        subject = agent if operation == "invoke_agent" else tool if operation == "execute_tool" else model
        name = " ".join(x for x in (operation or "span", subject) if x)
    out: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id or new_span_id(),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": any_value(v)} for k, v in attrs.items()],
        "status": {"code": STATUS_ERROR, "message": error} if error is not None else {},
    }
    if parent_span_id:
        out["parentSpanId"] = parent_span_id
    return out


def traces_data(spans: Iterable[dict], *, service_name: str = "app") -> dict:
    """Wrap spans in one OTLP TracesData object (one resource, one scope)."""
    return {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service_name}}]},
        "scopeSpans": [{"scope": {"name": "assay.otlp_writer"}, "spans": list(spans)}],
    }]}


def write_spans(path: str | os.PathLike[str], spans: Iterable[dict], *, service_name: str = "app") -> None:
    """Append one TracesData line holding `spans` to the file at `path` (created if absent)."""
    spans = list(spans)
    if not spans:
        return
    line = (json.dumps(traces_data(spans, service_name=service_name), ensure_ascii=False,
                       separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(os.fspath(path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]
    finally:
        os.close(fd)


def trace_doc(triples: list[tuple[dict, dict, dict]]) -> dict:
    """An OTLP TracesData of the given spans, grouped by resource and scope (trace.json)."""
    groups: dict[str, dict] = {}
    for sp, resource, scope in triples:
        key = json.dumps([resource, scope], sort_keys=True)
        g = groups.setdefault(key, {"resource": resource, "scope": scope, "spans": []})
        g["spans"].append(sp)
    return {"resourceSpans": [{"resource": g["resource"], "scopeSpans": [{"scope": g["scope"], "spans": g["spans"]}]}
                              for g in groups.values()]}
