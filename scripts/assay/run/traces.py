"""Traces: OTLP JSON spans in, a normalized GenAI trajectory out (adapter `traces.source: otlp-file`).

Three pieces, one concept (getting the trace of one case):

- `normalize_trace(spans_doc, trace_id)`: pure. OTel GenAI semconv spans -> trajectory + checks.
- `OtlpFileSource`: the growing span file, read incrementally and shared by concurrent cases.
- `trace_plan(adapter)`: the pre-flight decision (queryable / trace-less / exit-3 refusal).

Accepted span documents: one OTLP `TracesData` object (`{"resourceSpans": ...}`), a list of
them, or a raw span list; in a file, one such document per line (the Collector's file
exporter) or the whole file as one document. Ids are lower-case hex; base64 ids (protobuf
JSON) are converted and noted in `checks.trace_id_note`. An all-zero parent id means no parent.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from assay.core.vocab import TRACE_DEPENDENT_LAYERS

from .otlp_writer import parse_traceparent  # noqa: F401  (re-exported for the engine)

AGENT_OP, TOOL_OP = "invoke_agent", "execute_tool"
LLM_OPS = ("chat", "text_completion", "generate_content")
QUERYABLE_SOURCES = ("otlp-file",)
RESERVED_STORES = ("jaeger", "tempo", "clickhouse")
TRACELESS_SOURCES = ("none", "view-only")
OK, INCOMPLETE, ERROR = "ok", "incomplete", "error"
INFRA_INCOMPLETE = "infra_incomplete"
_CHUNK = 4 << 20  # bytes read per step of a poll
# What a hostile or half-written span document can raise while being read: never a crash.
_BAD_DOC = (ValueError, TypeError, AttributeError, KeyError, RecursionError)


# ---------------------------------------------------------------------------- ids & correlation

def make_traceparent() -> tuple[str, str]:
    """A fresh W3C traceparent header value (sampled) and the trace id it carries."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id


def _norm_id(value: Any, nbytes: int) -> tuple[str | None, bool]:
    """(lower-case hex id or None for absent/all-zero, converted_from_base64)."""
    if not isinstance(value, str) or not value:
        return None, False
    text = value.strip().lower()
    if len(text) == 2 * nbytes and all(c in "0123456789abcdef" for c in text):
        return (None if set(text) == {"0"} else text), False
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return text, False
    if len(raw) != nbytes:
        return text, False
    return (None if not any(raw) else raw.hex()), True


def trace_id_from_response(response_json: Any, field: str) -> tuple[str | None, str | None]:
    """(trace_id, None) from the dotted `field` of the response JSON, or (None, why not)."""
    node = response_json
    for part in field.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None, f"response has no field {field!r} (correlation response-field:{field})"
    tid, _ = _norm_id(node, 16)
    if not tid or len(tid) != 32:
        return None, f"response field {field!r} is not a 32-hex trace id: {str(node)[:80]!r}"
    return tid, None


# ---------------------------------------------------------------------------- OTLP decoding

def _any(value: Any) -> Any:
    """An OTLP JSON AnyValue as a Python value; plain JSON values pass through."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "arrayValue" in value:
        return [_any(v) for v in (value["arrayValue"] or {}).get("values") or []]
    if "kvlistValue" in value:
        return {kv.get("key"): _any(kv.get("value")) for kv in (value["kvlistValue"] or {}).get("values") or []}
    return None


def _attrs(raw: Any) -> dict:
    if isinstance(raw, dict):
        return dict(raw)
    out = {}
    for kv in raw or []:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = _any(kv.get("value"))
    return out


def _is_span(obj: Any) -> bool:
    return isinstance(obj, dict) and ("traceId" in obj or "trace_id" in obj)


def iter_raw_spans(doc: Any) -> Iterator[tuple[dict, dict, dict]]:
    """(raw span, raw resource, raw scope) for every span in a TracesData / list / span list.

    Raises ValueError for anything that is not one of the accepted shapes.
    """
    if isinstance(doc, dict) and "resourceSpans" in doc:
        for rs in doc.get("resourceSpans") or []:
            if not isinstance(rs, dict):
                raise ValueError("resourceSpans entry is not an object")
            resource = rs.get("resource") or {}
            for ss in (rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
                scope = (ss or {}).get("scope") or (ss or {}).get("instrumentationLibrary") or {}
                for sp in (ss or {}).get("spans") or []:
                    if not _is_span(sp):
                        raise ValueError("a span has no traceId")
                    yield sp, resource, scope
    elif _is_span(doc):
        yield doc, {}, {}
    elif isinstance(doc, list):
        for item in doc:
            yield from iter_raw_spans(item)
    else:
        raise ValueError("not an OTLP TracesData object, a list of them, or a span list")


def _status_code(status: Any) -> int:
    code = (status or {}).get("code") if isinstance(status, dict) else None
    if isinstance(code, str):
        return {"STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}.get(code.upper(), 0)
    return code if isinstance(code, int) else 0


def _ns(value: Any) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def flatten_span(sp: dict) -> dict:
    """A raw span as {trace_id, span_id, parent_span_id, name, start_ns, end_ns, attributes, status_code, ...}."""
    trace_id, b64_t = _norm_id(sp.get("traceId", sp.get("trace_id")), 16)
    span_id, b64_s = _norm_id(sp.get("spanId", sp.get("span_id")), 8)
    parent, b64_p = _norm_id(sp.get("parentSpanId", sp.get("parent_span_id")), 8)
    status = sp.get("status") if isinstance(sp.get("status"), dict) else {}
    return {
        "trace_id": trace_id, "span_id": span_id, "parent_span_id": parent,
        "name": sp.get("name"),
        "start_ns": _ns(sp.get("startTimeUnixNano", sp.get("start_time_unix_nano"))),
        "end_ns": _ns(sp.get("endTimeUnixNano", sp.get("end_time_unix_nano"))),
        "attributes": _attrs(sp.get("attributes")),
        "status_code": _status_code(status), "status_message": status.get("message"),
        "base64_ids": b64_t or b64_s or b64_p,
    }


# ---------------------------------------------------------------------------- normalization

def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _external_parent(spans: list[dict], by_id: dict, given: str | None) -> str | None:
    """The caller's span id the trace hangs from (the runner's traceparent), if knowable."""
    if given:
        return given.lower()
    missing = {s["parent_span_id"] for s in spans if s["parent_span_id"] and s["parent_span_id"] not in by_id}
    has_true_root = any(s["parent_span_id"] is None for s in spans)
    # One distinct missing parent and no span without a parent: that parent is the caller's.
    return next(iter(missing)) if len(missing) == 1 and not has_true_root else None


def root_spans(spans: list[dict], *, parent_span_id: str | None = None) -> list[dict]:
    """Spans with no parent, or whose parent is the caller's (external) span."""
    by_id = {s["span_id"]: s for s in spans}
    ext = _external_parent(spans, by_id, parent_span_id)
    return [s for s in spans if s["parent_span_id"] is None or (ext and s["parent_span_id"] == ext)]


def normalize_trace(spans_doc: Any, trace_id: str, *, parent_span_id: str | None = None) -> dict:
    """Normalize the spans of `trace_id` found in `spans_doc` into a trajectory.

    Returns `{status: ok|incomplete|error, trajectory{trace_id, agents, llm_calls, tool_calls,
    usage}, checks{...}}`. `incomplete`: no span for the trace, orphaned parents (a parent
    that is neither in the trace nor the caller's span `parent_span_id`), or execute_tool
    spans without `gen_ai.tool.name`. A missing tool result alone is not incomplete.
    `error`: the document is not an accepted shape (`error` says why; trajectory is None).
    """
    try:
        flat = [flatten_span(sp) for sp, _, _ in iter_raw_spans(spans_doc)]
    except _BAD_DOC as exc:
        return {"status": ERROR, "error": f"span document: {exc}", "trajectory": None, "checks": {}}
    wanted, _ = _norm_id(trace_id, 16)
    mine = [s for s in flat if s["trace_id"] == wanted]
    return normalize_flat(mine, wanted or str(trace_id), spans_in_file=len(flat), parent_span_id=parent_span_id)


def normalize_flat(spans: list[dict], trace_id: str, *, spans_in_file: int | None = None,
                   parent_span_id: str | None = None) -> dict:
    """`normalize_trace` over already-flattened spans of one trace (see `flatten_span`)."""
    order = {id(s): i for i, s in enumerate(spans)}
    spans = sorted(spans, key=lambda s: (s["start_ns"] or 0, order[id(s)]))
    by_id = {s["span_id"]: s for s in spans if s["span_id"]}
    ext = _external_parent(spans, by_id, parent_span_id)
    orphans = [s for s in spans if s["parent_span_id"] and s["parent_span_id"] not in by_id
               and s["parent_span_id"] != ext]

    def agent_of(s: dict) -> str | None:
        seen, cur = set(), by_id.get(s["parent_span_id"])
        while cur is not None and cur["span_id"] not in seen:
            if cur["attributes"].get("gen_ai.operation.name") == AGENT_OP:
                return cur["attributes"].get("gen_ai.agent.name")
            seen.add(cur["span_id"])
            cur = by_id.get(cur["parent_span_id"])
        return None

    def error_of(s: dict) -> str | None:
        etype = s["attributes"].get("error.type")
        if etype not in (None, ""):
            return str(etype)
        return (s["status_message"] or "error") if s["status_code"] == 2 else None

    def duration_ms(s: dict) -> float | None:
        if s["start_ns"] and s["end_ns"] and s["end_ns"] >= s["start_ns"]:
            return round((s["end_ns"] - s["start_ns"]) / 1e6, 3)
        return None

    agents, llm_calls, tool_calls, unnamed_tools = [], [], [], 0
    usage: dict[str, dict[str, int]] = {}
    agent_span_usage: dict[str, dict[str, int]] = {}
    for s in spans:
        a, op = s["attributes"], s["attributes"].get("gen_ai.operation.name")
        tokens = {k: a.get(f"gen_ai.usage.{k}") for k in ("input_tokens", "output_tokens")}
        tokens = {k: v for k, v in tokens.items() if isinstance(v, int) and not isinstance(v, bool)}
        common = {"span_id": s["span_id"], "start_ns": s["start_ns"], "end_ns": s["end_ns"],
                  "duration_ms": duration_ms(s), "error": error_of(s)}
        if op == AGENT_OP:
            name = a.get("gen_ai.agent.name")
            agents.append({"name": name, "parent_agent": agent_of(s), **common})
            if tokens:
                agent_span_usage.setdefault(name or "(unattributed)", {}).update(tokens)
        elif op in LLM_OPS:
            agent = agent_of(s)
            llm_calls.append({"operation": op, "agent": agent,
                              "model": a.get("gen_ai.response.model") or a.get("gen_ai.request.model"),
                              **tokens, **common})
            bucket = usage.setdefault(agent or "(unattributed)", {"input_tokens": 0, "output_tokens": 0})
            for k, v in tokens.items():
                bucket[k] += v
        elif op == TOOL_OP:
            name = a.get("gen_ai.tool.name")
            if not name:
                unnamed_tools += 1
            tool_calls.append({
                "name": name, "agent": agent_of(s), "call_id": a.get("gen_ai.tool.call.id"),
                "arguments": _maybe_json(a.get("gen_ai.tool.call.arguments")),
                "arguments_captured": "gen_ai.tool.call.arguments" in a,
                "result": _maybe_json(a.get("gen_ai.tool.call.result")),
                "result_captured": "gen_ai.tool.call.result" in a, **common})
    # An agent whose LLM calls carry no usage may report it on its own span: count it once.
    for name, tokens in agent_span_usage.items():
        if name not in usage:
            usage[name] = {"input_tokens": tokens.get("input_tokens", 0), "output_tokens": tokens.get("output_tokens", 0)}
    total = {k: sum(u[k] for u in usage.values()) for k in ("input_tokens", "output_tokens")}

    checks: dict[str, Any] = {
        "spans_for_trace": len(spans),
        "spans_in_file": len(spans) if spans_in_file is None else spans_in_file,
        "orphaned_parents": len(orphans),
        "tool_calls_errored": sum(1 for t in tool_calls if t["error"]),
        "tool_calls_without_result": sum(1 for t in tool_calls if not t["result_captured"]),
        "arg_capture_seen": any(t["arguments_captured"] for t in tool_calls),
        "result_capture_seen": any(t["result_captured"] for t in tool_calls),
        "spans_missing_duration": sum(1 for s in spans if duration_ms(s) is None),
    }
    if unnamed_tools:
        checks["unnamed_tool_spans"] = unnamed_tools
    if any(s["base64_ids"] for s in spans):
        checks["trace_id_note"] = "ids were base64 (protobuf JSON); converted to hex"
    status = INCOMPLETE if (not spans or orphans or unnamed_tools) else OK
    return {"status": status, "checks": checks, "trajectory": {
        "trace_id": trace_id, "agents": agents, "llm_calls": llm_calls, "tool_calls": tool_calls,
        "usage": {"by_agent": usage, "total": total}}}


def first_agent_name(trajectory: dict | None) -> str | None:
    """`gen_ai.agent.name` of the first invoke_agent span (by start time): the trace-observed route."""
    agents = (trajectory or {}).get("agents") or []
    name = agents[0].get("name") if agents else None
    return name if isinstance(name, str) and name else None


def incomplete_reason(normalized: dict) -> str:
    c = normalized.get("checks") or {}
    if normalized.get("status") == ERROR:
        return normalized.get("error") or "span document could not be read"
    parts = []
    if not c.get("spans_for_trace"):
        parts.append("no span for the trace")
    if c.get("orphaned_parents"):
        parts.append(f"{c['orphaned_parents']} span(s) whose parent span never arrived")
    if c.get("unnamed_tool_spans"):
        parts.append(f"{c['unnamed_tool_spans']} execute_tool span(s) without gen_ai.tool.name")
    return "; ".join(parts) or "trace incomplete"


# ---------------------------------------------------------------------------- the growing span file

class TraceOutcome(tuple):
    """`(status, trajectory | None, trace_doc | None)` plus `.reason`, `.checks`, `.waited_ms`.

    `status` is `ok` (trajectory usable) or `infra_incomplete` (trajectory None, `.reason` says
    why). `trace_doc` is an OTLP TracesData holding only this trace's spans (trace.json); it
    is kept on infra_incomplete too, for diagnosis, but the engine writes trace files only on ok.
    """

    def __new__(cls, status: str, trajectory: dict | None, trace_doc: dict | None, *,
                reason: str | None = None, checks: dict | None = None, waited_ms: float = 0.0):
        self = super().__new__(cls, (status, trajectory, trace_doc))
        self.status, self.trajectory, self.trace_doc = status, trajectory, trace_doc
        self.reason, self.checks, self.waited_ms = reason, checks or {}, waited_ms
        return self

    def trace_block(self, trace_id: str, correlation: str) -> dict:
        """The `trace` block of verdict.json."""
        return {"collected": self.status == OK, "trace_id": trace_id, "correlation": correlation,
                "status": self.status, "reason": self.reason, "checks": self.checks,
                "waited_ms": round(self.waited_ms, 1)}


class _Entry:
    __slots__ = ("refs", "docs", "count", "last_seen")

    def __init__(self) -> None:
        self.refs: list[tuple[int, int]] = []   # (offset, length) of the lines holding its spans
        self.docs: list[tuple[dict, dict, dict]] = []  # whole-document mode: the spans themselves
        self.count = 0
        self.last_seen = 0.0


class OtlpFileSource:
    """The `otlp-file` trace store: one instance per run, shared by every concurrent case.

    `poll()` reads only the bytes appended since the last poll, parses complete lines only
    (a half-written last line waits for its newline) and indexes, per trace id, the byte
    ranges of the lines that hold its spans: O(new bytes) per poll and O(lines of one trace)
    per collect, however large the file grows. A file that is one pretty-printed document
    (first line not JSON, whole file JSON) is read whole whenever its size or mtime changes. A
    file that shrinks or is replaced (new inode) was rotated: the index starts over. Thread-safe.
    """

    def __init__(self, path: str | os.PathLike[str], convention: str = "gen_ai",
                 quiescence_ms: float = 3000, max_wait_s: float = 30, *,
                 poll_interval_s: float | None = None) -> None:
        if convention != "gen_ai":
            raise ValueError(f"convention {convention!r} has no mapping here; only gen_ai is read")
        self.path = Path(path)
        self.quiescence_s = max(0.0, float(quiescence_ms) / 1000.0)
        self.max_wait_s = max(0.0, float(max_wait_s))
        self.poll_interval_s = poll_interval_s or max(0.005, min(0.1, self.quiescence_s / 4 or 0.01))
        self._lock = threading.Lock()
        self._reset()

    def _reset(self) -> None:
        self._offset = 0
        self._doc_mode = False
        self._doc_sig: tuple[int, int] | None = None
        self._inode: tuple[int, int] | None = None
        self._index: dict[str, _Entry] = {}
        self.spans_in_file = 0
        self.malformed_lines = 0

    def _add(self, entry_key: str | None, now: float) -> _Entry | None:
        if not entry_key:
            return None
        entry = self._index.get(entry_key)
        if entry is None:
            entry = self._index[entry_key] = _Entry()
        entry.count += 1
        entry.last_seen = now
        return entry

    def poll(self) -> int:
        """Ingest what was appended since the last poll; returns the number of new spans."""
        with self._lock:
            try:
                st = self.path.stat()
            except OSError:
                return 0
            size, inode = st.st_size, (st.st_dev, st.st_ino)
            if size < self._offset or (self._inode is not None and inode != self._inode):
                self._reset()  # truncated or replaced: rotated
            self._inode = inode
            if self._doc_mode:
                return self._poll_document((size, st.st_mtime_ns))
            if size == self._offset:
                return 0
            now, new, pos, buf = time.monotonic(), 0, self._offset, b""
            with open(self.path, "rb") as fh:
                fh.seek(pos)
                # Bounded chunks keep memory flat however much arrived since the last poll.
                while pos + len(buf) < size:
                    data = fh.read(min(_CHUNK, size - pos - len(buf)))
                    if not data:
                        break
                    buf += data
                    end = buf.rfind(b"\n")
                    if end < 0:
                        continue  # one line longer than a chunk: keep reading
                    got = self._ingest_lines(buf[: end + 1], pos, now, (size, st.st_mtime_ns))
                    if got is None:  # the file turned out to be one whole document
                        return self.spans_in_file
                    new, pos, buf = new + got, pos + end + 1, buf[end + 1:]
            self._offset = pos
            self.spans_in_file += new
            return new

    def _ingest_lines(self, block: bytes, base: int, now: float, sig: tuple[int, int]) -> int | None:
        new, pos = 0, 0
        for line in block.split(b"\n")[:-1]:
            start, pos = base + pos, pos + len(line) + 1
            if not line.strip():
                continue
            try:
                spans = list(iter_raw_spans(json.loads(line)))
            except _BAD_DOC:
                if start == 0 and self._try_document(sig):
                    return None
                self.malformed_lines += 1
                continue
            seen: set[str] = set()
            for sp, _, _ in spans:
                tid, _ = _norm_id(sp.get("traceId", sp.get("trace_id")), 16)
                entry = self._add(tid, now)
                if entry is not None and tid not in seen:
                    entry.refs.append((start, len(line)))
                    seen.add(tid)
            new += len(spans)
        return new

    def _try_document(self, sig: tuple[int, int]) -> bool:
        try:
            doc = json.loads(self.path.read_bytes())
            list(iter_raw_spans(doc))
        except (OSError, *_BAD_DOC):
            return False
        self._doc_mode = True
        self._poll_document(sig)
        return True

    def _poll_document(self, sig: tuple[int, int]) -> int:
        """Whole-document mode: re-read the file whenever its (size, mtime) changes."""
        if sig == self._doc_sig:
            return 0
        try:
            triples = list(iter_raw_spans(json.loads(self.path.read_bytes())))
        except (OSError, *_BAD_DOC):
            return 0  # being rewritten; try again on the next poll
        old = self.spans_in_file
        self._index, self._doc_sig, now = {}, sig, time.monotonic()
        for triple in triples:
            tid, _ = _norm_id(triple[0].get("traceId", triple[0].get("trace_id")), 16)
            entry = self._add(tid, now)
            if entry is not None:
                entry.docs.append(triple)
        self.spans_in_file = len(triples)
        return max(0, self.spans_in_file - old)

    def _snapshot(self, trace_id: str) -> tuple[int, float, list[tuple[int, int]], list]:
        with self._lock:
            e = self._index.get(trace_id)
            return (0, 0.0, [], []) if e is None else (e.count, e.last_seen, list(e.refs), list(e.docs))

    def _load(self, trace_id: str, refs: list[tuple[int, int]], docs: list) -> list[tuple[dict, dict, dict]]:
        triples = list(docs)
        if refs:
            with open(self.path, "rb") as fh:
                for offset, length in refs:
                    fh.seek(offset)
                    for triple in iter_raw_spans(json.loads(fh.read(length))):
                        if _norm_id(triple[0].get("traceId", triple[0].get("trace_id")), 16)[0] == trace_id:
                            triples.append(triple)
        return triples

    def collect(self, trace_id: str, *, parent_span_id: str | None = None) -> TraceOutcome:
        """Wait for the trace to complete, then normalize it.

        Complete = no new span for `quiescence_ms`, every root span (no parent, or the caller's
        `parent_span_id`) has ended, and the trace normalizes `ok` (no orphans). Until then keep
        polling; past `max_wait_s` the outcome is `infra_incomplete` with the reason.
        """
        wanted, _ = _norm_id(trace_id, 16)
        wanted = wanted or str(trace_id).lower()
        started = time.monotonic()
        deadline = started + self.max_wait_s
        normalized, triples = None, []
        while True:
            self.poll()
            count, last_seen, refs, docs = self._snapshot(wanted)
            now = time.monotonic()
            if count and now - last_seen >= self.quiescence_s:
                try:
                    triples = self._load(wanted, refs, docs)
                    flat = [flatten_span(t[0]) for t in triples]
                except (OSError, *_BAD_DOC):  # rotated under us, or a hostile span: retry, then give up
                    triples, flat = [], []
                roots = root_spans(flat, parent_span_id=parent_span_id)
                normalized = normalize_flat(flat, wanted, spans_in_file=self.spans_in_file,
                                            parent_span_id=parent_span_id)
                if roots and all(r["end_ns"] for r in roots) and normalized["status"] == OK:
                    return TraceOutcome(OK, normalized["trajectory"], trace_doc(triples),
                                        checks=normalized["checks"], waited_ms=(now - started) * 1000)
            if now >= deadline:
                waited = (now - started) * 1000
                if not count:
                    return TraceOutcome(INFRA_INCOMPLETE, None, None, waited_ms=waited, checks={
                        "spans_for_trace": 0, "spans_in_file": self.spans_in_file},
                        reason=f"no span with trace id {wanted} arrived in the span file within "
                               f"max_wait_s={self.max_wait_s:g}")
                if normalized is None:
                    why = f"spans were still arriving after max_wait_s={self.max_wait_s:g}"
                elif normalized["status"] != OK:
                    why = f"trace incomplete after max_wait_s={self.max_wait_s:g}: {incomplete_reason(normalized)}"
                else:
                    why = f"root span had not ended after max_wait_s={self.max_wait_s:g}"
                return TraceOutcome(INFRA_INCOMPLETE, None, trace_doc(triples) if triples else None,
                                    reason=why, checks=(normalized or {}).get("checks") or {
                                        "spans_for_trace": count, "spans_in_file": self.spans_in_file},
                                    waited_ms=waited)
            time.sleep(min(self.poll_interval_s, max(0.0, deadline - now)))


def trace_doc(triples: list[tuple[dict, dict, dict]]) -> dict:
    """An OTLP TracesData of the given spans, grouped by resource and scope (trace.json)."""
    groups: dict[str, dict] = {}
    for sp, resource, scope in triples:
        key = json.dumps([resource, scope], sort_keys=True)
        g = groups.setdefault(key, {"resource": resource, "scope": scope, "spans": []})
        g["spans"].append(sp)
    return {"resourceSpans": [{"resource": g["resource"], "scopeSpans": [{"scope": g["scope"], "spans": g["spans"]}]}
                              for g in groups.values()]}


# ---------------------------------------------------------------------------- pre-flight decision

def trace_plan(adapter: dict | None, *, state_dir: str | os.PathLike[str] | None = None) -> dict:
    """Decide, from adapter.yaml's `traces` block (env refs already resolved), how traces are read.

    Returns `{queryable, reason, disabled_layers, refusal, source, location, correlation,
    response_field, convention, quiescence_ms, max_wait_s}`. `refusal` (a message) means
    pre-flight must exit 3 naming it: a reserved store (jaeger/tempo/clickhouse), an unknown
    source or correlation, a convention with a mapping_shim (shims are not executed by this
    runner), a bad completeness value, or an otlp-file location that cannot be read. Else
    trace-less (`queryable: false`, `disabled_layers` = the trace-dependent layers) when the
    source is none/view-only/absent, the correlation is missing/none, or the convention is not
    gen_ai with no shim (adapter-profile §1.4).
    """
    t = (adapter or {}).get("traces")
    t = t if isinstance(t, dict) else {}
    comp = t.get("completeness") if isinstance(t.get("completeness"), dict) else {}
    out: dict[str, Any] = {
        "queryable": False, "reason": None, "disabled_layers": list(TRACE_DEPENDENT_LAYERS), "refusal": None,
        "source": t.get("source"), "location": t.get("location"), "correlation": t.get("correlation"),
        "response_field": None, "convention": t.get("convention") or "gen_ai",
        "quiescence_ms": comp.get("quiescence_ms", 3000), "max_wait_s": comp.get("max_wait_s", 30)}

    def refuse(msg: str) -> dict:
        out["refusal"] = msg
        out["reason"] = msg
        return out

    source, corr = t.get("source"), t.get("correlation")
    if source in RESERVED_STORES:
        return refuse(f"traces.source {source!r} is reserved and not queryable by this runner; "
                      "only otlp-file is (export spans to a file with the Collector's file exporter), "
                      "or set traces.source: none to run trace-less")
    if source not in (None, "otlp-file", *TRACELESS_SOURCES):
        return refuse(f"traces.source {source!r} is unknown; use otlp-file, view-only or none")
    if corr not in (None, "none", "traceparent-echo") and not (
            isinstance(corr, str) and corr.startswith("response-field:") and corr.split(":", 1)[1].strip()):
        return refuse(f"traces.correlation {corr!r} is unknown; use traceparent-echo or "
                      "response-field:<dotted path> (heuristic joins are not allowed)")
    if source in (None, *TRACELESS_SOURCES):
        out["reason"] = f"traces.source is {source or 'absent'}: run is trace-less"
        return out
    if corr in (None, "none"):
        out["reason"] = "traces.correlation is missing or none: spans cannot be joined to cases"
        return out
    if out["convention"] != "gen_ai":
        if t.get("mapping_shim"):
            return refuse(f"traces.mapping_shim for convention {out['convention']!r} is not supported "
                          "by this runner; emit OTel gen_ai spans or remove mapping_shim to run trace-less")
        out["reason"] = f"traces.convention {out['convention']!r} is not gen_ai and no mapping_shim is declared"
        return out
    for key, val in (("quiescence_ms", out["quiescence_ms"]), ("max_wait_s", out["max_wait_s"])):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
            return refuse(f"traces.completeness.{key} must be a number >= 0, got {val!r}")
    loc = t.get("location")
    if not isinstance(loc, str) or not loc.strip() or "${" in loc:
        return refuse(f"traces.location {loc!r} must be the path of the OTLP JSON span file")
    path = Path(loc)
    if not path.is_absolute() and state_dir is not None:
        path = Path(state_dir) / path
    if path.is_dir() or not path.parent.is_dir() or (path.exists() and not os.access(path, os.R_OK)):
        return refuse(f"traces.location {loc!r} is not a readable file (nor creatable in an existing directory)")
    out.update(queryable=True, location=str(path), disabled_layers=[],
               reason=f"otlp-file {path.name}, correlation {corr}")
    if corr.startswith("response-field:"):
        out["response_field"] = corr.split(":", 1)[1].strip()
    return out
