"""A tiny OpenTelemetry span recorder and OTLP/JSON-lines writer for the example app.

Self-contained on purpose: the example app is what a user's app looks like, so it
does not import the harness. Each request's spans become one line of OTLP
`TracesData` JSON (the shape the OpenTelemetry Collector's file exporter writes),
appended to the file under a lock and flushed before the HTTP response is sent, so
a reader that waits for the file to go quiet sees the whole trace.

Attribute names follow the OpenTelemetry GenAI semantic conventions:
`gen_ai.operation.name` (invoke_agent | chat | execute_tool), `gen_ai.agent.name`,
`gen_ai.tool.name`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`,
`gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`, and the chat span's captured
messages `gen_ai.input.messages` / `gen_ai.output.messages` (role + parts).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import urllib.request
from contextlib import contextmanager
from typing import Any, Iterator

TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")
SPAN_KIND = {"internal": 1, "server": 2, "client": 3}


def parse_traceparent(header: str | None) -> tuple[str, str] | None:
    """(trace_id, caller's span id) of a valid W3C `traceparent` header, else None (all-zero ids are invalid)."""
    if not header:
        return None
    m = TRACEPARENT_RE.match(header.strip().lower())
    if not m or set(m.group(1)) == {"0"} or set(m.group(2)) == {"0"}:
        return None
    return m.group(1), m.group(2)


def new_trace_id() -> str:
    return os.urandom(16).hex()


def _attr(key: str, value: Any) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        # proto3 JSON encodes int64 as a string; OTLP/JSON readers accept it.
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, (list, tuple)):  # string[] (e.g. gen_ai.response.finish_reasons)
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": str(v)} for v in value]}}}
    return {"key": key, "value": {"stringValue": str(value)}}


class SpanRecorder:
    """Collects the spans of one request; `span()` nests by call order (a stack)."""

    def __init__(self, remote_parent: str | None = None) -> None:
        self.remote_parent = remote_parent  # the caller's span: the root span hangs from it
        self.spans: list[dict] = []
        self._stack: list[dict] = []

    def _new_span_id(self) -> str:
        return os.urandom(8).hex()

    @contextmanager
    def span(self, name: str, kind: str = "internal", **attributes: Any) -> Iterator[dict]:
        """Record a span; the yielded dict's "attributes" may be extended inside the block."""
        parent = self._stack[-1]["spanId"] if self._stack else (self.remote_parent or "")
        record = {
            "spanId": self._new_span_id(),
            "parentSpanId": parent,
            "name": name,
            "kind": SPAN_KIND[kind],
            "start": time.time_ns(),
            "attributes": dict(attributes),
            "error": None,
        }
        self._stack.append(record)
        try:
            yield record
        finally:
            self._stack.pop()
            record["end"] = max(time.time_ns(), record["start"] + 1000)
            self.spans.append(record)

    @property
    def root_span_id(self) -> str | None:
        roots = [s for s in self.spans if s["parentSpanId"] in ("", self.remote_parent)]
        return roots[0]["spanId"] if roots else None


def traces_data(trace_id: str, spans: list[dict], service_name: str = "helpdesk") -> dict:
    """One OTLP TracesData document for the recorded spans, in start order."""
    out = []
    for s in sorted(spans, key=lambda r: r["start"]):
        span = {
            "traceId": trace_id,
            "spanId": s["spanId"],
            "name": s["name"],
            "kind": s["kind"],
            "startTimeUnixNano": str(s["start"]),
            "endTimeUnixNano": str(s["end"]),
            "attributes": [_attr(k, v) for k, v in sorted(s["attributes"].items()) if v is not None],
            "status": {"code": 2, "message": s["error"]} if s["error"] else {"code": 1},
        }
        if s["parentSpanId"]:
            span["parentSpanId"] = s["parentSpanId"]
        out.append(span)
    return {
        "resourceSpans": [{
            "resource": {"attributes": [_attr("service.name", service_name)]},
            "scopeSpans": [{"scope": {"name": "helpdesk.example", "version": "1"}, "spans": out}],
        }]
    }


class OtlpJsonlWriter:
    """Appends one TracesData JSON line per request; thread-safe, flushed and fsync'd per line.

    With `endpoint` (an OTLP/HTTP base URL, as in OTEL_EXPORTER_OTLP_ENDPOINT) it also POSTs
    each TracesData as OTLP/JSON to `<endpoint>/v1/traces`, before the response is sent.
    """

    def __init__(self, path: str | None, endpoint: str | None = None) -> None:
        self.path = path
        self.endpoint = endpoint.rstrip("/") + "/v1/traces" if endpoint else None
        self._lock = threading.Lock()
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            open(path, "a", encoding="utf-8").close()  # a readable (possibly empty) file from the start

    def write(self, trace_id: str, spans: list[dict]) -> None:
        if not spans:
            return
        line = json.dumps(traces_data(trace_id, spans), sort_keys=True, separators=(",", ":")) + "\n"
        if self.endpoint:
            self._post(line.encode("utf-8"))
        if not self.path:
            return
        with self._lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def _post(self, body: bytes) -> None:
        req = urllib.request.Request(self.endpoint, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                resp.read()
        except OSError as exc:  # an exporter never fails the request it traces
            sys.stderr.write(f"helpdesk: OTLP export to {self.endpoint} failed: {exc}\n")
