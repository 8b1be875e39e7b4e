"""Trace normalization: OTLP JSON spans in, a normalized GenAI trajectory out. Pure.

`normalize_trace(spans_doc, trace_id)` reads one span document; `normalize_flat(spans, trace_id)`
works on spans already flattened by `flatten_span` (what the file source holds). Which spans are
agents, LLM calls and tool calls, and which attributes hold names, arguments and results, is the
convention's table (`assay.traces.conventions`: gen_ai, openinference, openllmetry, auto).
Without tool spans, the tool calls an LLM span's output messages asked for are the tool log
(`origin: requested`; tool spans give `origin: executed`). `trajectory.tool_log` says whether
the tool log could be seen at all: trace-fed layers never pass or fail on a blind one.
Handoff spans go to `trajectory.handoffs` (`assay.traces.routing` reads the route from them); a span
that looks like a model call and is read as none, to `trajectory.unread_model_spans` (model_spans).

Accepted span documents: one OTLP `TracesData` object (`{"resourceSpans": ...}`), a list of them, or a raw
span list. Ids are lower-case hex; base64 ids (protobuf JSON) are converted, noted in `checks.trace_id_note`.
An all-zero parent id means no parent. No I/O here: file source, correlation, quiescence: `traces.otlp_file`.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Iterator

from . import conventions, frameworks, model_spans
from .routing import arguments_from_requests, first_agent_name  # noqa: F401  (traces re-exports it)
from .toollog import tool_log as read_tool_log, unread_gen_ai_tools, untraced_requests

AGENT_OP, TOOL_OP = "invoke_agent", "execute_tool"
AGENT_KIND, LLM_KIND, TOOL_KIND = conventions.AGENT, conventions.LLM, conventions.TOOL
LLM_OPS = ("chat", "text_completion", "generate_content")
OK, INCOMPLETE, ERROR = "ok", "incomplete", "error"
# What a hostile or half-written span document can raise while being read: never a crash.
BAD_DOC = (ValueError, TypeError, AttributeError, KeyError, RecursionError)


# ---------------------------------------------------------------------------- ids

def norm_id(value: Any, nbytes: int) -> tuple[str | None, bool]:
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
    trace_id, b64_t = norm_id(sp.get("traceId", sp.get("trace_id")), 16)
    span_id, b64_s = norm_id(sp.get("spanId", sp.get("span_id")), 8)
    parent, b64_p = norm_id(sp.get("parentSpanId", sp.get("parent_span_id")), 8)
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


def normalize_trace(spans_doc: Any, trace_id: str, *, parent_span_id: str | None = None,
                    convention: str = "gen_ai") -> dict:
    """Normalize the spans of `trace_id` found in `spans_doc` into a trajectory.

    Returns `{status: ok|incomplete|error, trajectory{trace_id, agents, llm_calls, tool_calls,
    usage, convention, tool_log}, checks{...}}`. `incomplete`: no span for the trace, orphaned
    parents (a parent that is neither in the trace nor the caller's span `parent_span_id`), or
    tool spans without a tool name. A missing tool result alone is not incomplete.
    `error`: the document is not an accepted shape (`error` says why; trajectory is None).
    `convention` is `traces.convention` (`gen_ai`, `openinference`, `openllmetry`, `auto`).
    """
    try:
        flat = [flatten_span(sp) for sp, _, _ in iter_raw_spans(spans_doc)]
    except BAD_DOC as exc:
        return {"status": ERROR, "error": f"span document: {exc}", "trajectory": None, "checks": {}}
    wanted, _ = norm_id(trace_id, 16)
    mine = [s for s in flat if s["trace_id"] == wanted]
    return normalize_flat(mine, wanted or str(trace_id), spans_in_file=len(flat), parent_span_id=parent_span_id,
                          convention=convention)


def normalize_flat(spans: list[dict], trace_id: str, *, spans_in_file: int | None = None,
                   parent_span_id: str | None = None, convention: str = "gen_ai") -> dict:
    """`normalize_trace` over already-flattened spans of one trace (see `flatten_span`)."""
    order = {id(s): i for i, s in enumerate(spans)}
    spans = sorted(spans, key=lambda s: (s["start_ns"] or 0, order[id(s)]))
    by_id = {s["span_id"]: s for s in spans if s["span_id"]}
    ext = _external_parent(spans, by_id, parent_span_id)
    orphans = [s for s in spans if s["parent_span_id"] and s["parent_span_id"] not in by_id
               and s["parent_span_id"] != ext]
    conv, conv_info = conventions.pick(convention, spans)
    kind = {id(s): conv.kind_of(s["attributes"]) for s in spans}
    for s in spans:  # typed LLM, sends no request (LlamaIndex's _prepare_chat_with_tools)
        if kind[id(s)] == LLM_KIND and not frameworks.is_model_call_span(s["name"]):
            kind[id(s)] = None
    # one model call traced twice (a framework's LLM span over the SDK instrumentation's): the
    # innermost span is the call, the wrapper's model and tokens fill what it lacks
    wrappers = frameworks.nested_llm_wrappers([s for s in spans if kind[id(s)] == LLM_KIND],
                                              lambda s: by_id.get(s["parent_span_id"]))
    filled: dict[int, dict] = {}
    for s in spans:  # outer wrappers first (start order): a nearer wrapper's value wins
        if (inner := wrappers.get(id(s))) is not None:
            filled.setdefault(id(inner), {}).update(s["attributes"])
    for s in spans:
        if id(s) in wrappers:
            kind[id(s)] = None

    # smolagents' final_answer: how an agent answers, a traced tool span that is no tool call
    answers = sum(1 for s in spans if kind[id(s)] == TOOL_KIND and frameworks.is_answer_tool(s["name"], s["attributes"]))
    for s in spans:
        if kind[id(s)] == TOOL_KIND and frameworks.is_answer_tool(s["name"], s["attributes"]):
            kind[id(s)] = None
    # CrewAI: a delegation tool span runs the coworker it names (its model and tool calls are below
    # it): the coworker's agent span, and a handoff to it (assay.traces.frameworks)
    delegated, crew_unread = frameworks.crewai_delegations(
        spans, lambda s: kind[id(s)] == TOOL_KIND, lambda s: kind[id(s)] == LLM_KIND, lambda s: by_id.get(s["parent_span_id"]))
    for s in spans:
        if id(s) in delegated:
            kind[id(s)] = AGENT_KIND
    handoff_of = {id(s): conv.handoff(s["name"], s["attributes"]) for s in spans}
    handoff_kind = {id(s): kind[id(s)] for s in spans if handoff_of[id(s)] is not None}
    for s in spans:
        if handoff_of[id(s)] is not None:
            kind[id(s)] = None

    def agent_span_of(s: dict) -> dict | None:
        seen, cur = set(), by_id.get(s["parent_span_id"])
        while cur is not None and cur["span_id"] not in seen:
            if kind[id(cur)] == AGENT_KIND:
                return cur
            seen.add(cur["span_id"])
            cur = by_id.get(cur["parent_span_id"])
        return None

    owner = {id(s): agent_span_of(s) for s in spans}
    # A wrapper runs agents and is none itself (openai-agents' "Agent workflow" under OpenInference):
    # an agent span named only by its span name, with agent spans and no LLM call of its own below it.
    runs_agents = {id(o) for s in spans if kind[id(s)] == AGENT_KIND and (o := owner[id(s)]) is not None}
    calls_llm = {id(o) for s in spans if kind[id(s)] == LLM_KIND and (o := owner[id(s)]) is not None}

    def agent_name(s: dict) -> str | None:
        if id(s) in delegated:
            return delegated[id(s)]
        name = conv.framework_agent_name(s["name"], s["attributes"]) or conv.first(s["attributes"], conv.agent_name)
        if name is None and conv.agent_name_from_span_name and not (id(s) in runs_agents and id(s) not in calls_llm):
            name = s["name"]
        return name if isinstance(name, str) and name else None

    def agent_of(s: dict) -> str | None:
        cur = owner[id(s)]
        return agent_name(cur) if cur is not None else None

    # a handoff candidate that must name an agent of the trace (AutoGen's transfer_to_<x>) and
    # does not stays a tool call, and the trace then names no route (routing.handling_agent)
    settled, unread = frameworks.settle_handoffs(
        [{**h, "span": s} for s in spans if (h := handoff_of[id(s)]) is not None],
        {n for s in spans if kind[id(s)] == AGENT_KIND and (n := agent_name(s))})
    for h in unread:
        kind[id(h["span"])], handoff_of[id(h["span"])] = handoff_kind[id(h["span"])], None
    for h in settled:
        handoff_of[id(h["span"])] = h
    unread += crew_unread
    # a handoff is neither an agent nor a tool call; one traced as a tool span still shows that
    # this instrumentation traces tool execution (the tool spans, even none, are the tool log)
    handoff_tool_spans = answers + len(delegated) + sum(1 for s in spans if handoff_of[id(s)] is not None
                                                        and handoff_kind[id(s)] == TOOL_KIND)

    def error_of(s: dict) -> str | None:
        etype = s["attributes"].get("error.type")
        if etype not in (None, ""):
            return str(etype)
        return (s["status_message"] or "error") if s["status_code"] == 2 else None

    def duration_ms(s: dict) -> float | None:
        if s["start_ns"] and s["end_ns"] and s["end_ns"] >= s["start_ns"]:
            return round((s["end_ns"] - s["start_ns"]) / 1e6, 3)
        return None

    agents, llm_calls, tool_calls, unnamed_tools, notes = [], [], [], 0, []
    requested: list[dict] = []
    given: dict[str, Any] = {}
    llm_seen: list[tuple[bool, list[str] | None]] = []
    usage: dict[str, dict[str, int]] = {}
    agent_span_usage: dict[str, dict[str, int]] = {}
    handoffs = [{"from": h.get("from") or agent_of(s), "to": h.get("to"), "span_id": s["span_id"],
                 "start_ns": s["start_ns"]} for s in spans if (h := handoff_of[id(s)]) is not None]
    handoffs += [{"from": agent_of(s), "to": agent_name(s), "span_id": s["span_id"], "start_ns": s["start_ns"]}
                 for s in spans if kind[id(s)] == AGENT_KIND and (id(s) in delegated
                 or frameworks.smolagents_managed_call(s["attributes"], owner[id(s)] is not None))]
    handoffs.sort(key=lambda h: h["start_ns"] or 0)
    for s in spans:
        a, k = s["attributes"], kind[id(s)]
        tokens = {**conv.tokens(filled.get(id(s)) or {}), **conv.tokens(a)}
        common = {"span_id": s["span_id"], "start_ns": s["start_ns"], "end_ns": s["end_ns"],
                  "duration_ms": duration_ms(s), "error": error_of(s)}
        if k == AGENT_KIND:
            name = agent_name(s)
            agents.append({"name": name, "parent_agent": agent_of(s), **common})
            if tokens:
                agent_span_usage.setdefault(name or "(unattributed)", {}).update(tokens)
        elif k == LLM_KIND:
            agent = agent_of(s)
            op = a.get("gen_ai.operation.name") if a.get("gen_ai.operation.name") in LLM_OPS else "chat"
            model = conv.first(a, conv.model) or conv.first(filled.get(id(s)) or {}, conv.model)
            llm_calls.append({"operation": op, "agent": agent, "model": model, **tokens, **common, **(  # routing.py
                {"agent_span": o["name"]} if agent is None and (o := owner[id(s)]) is not None else {})})
            bucket = usage.setdefault(agent or "(unattributed)", {"input_tokens": 0, "output_tokens": 0})
            for key, v in tokens.items():
                bucket[key] += v
            captured, asked = conventions.requested_tool_calls(conv, a)
            llm_seen.append((captured, conv.finish(a)))
            for call in asked:
                requested.append({**call, "agent": agent, "span_id": s["span_id"], "start_ns": s["start_ns"],
                                  "end_ns": s["end_ns"], "duration_ms": None, "error": None})
            given.update(conventions.given_tool_results(conv, a))
        elif k == TOOL_KIND:
            name = conv.first(a, conv.tool_name)
            if not name:
                unnamed_tools += 1
            args_captured, args, note = conv.arguments(a)
            if note:
                notes.append(note)
            result_captured, result = conv.result(a)
            result = frameworks.adk_tool_result(result, a) if result_captured else result
            tool_calls.append({
                "name": name, "agent": agent_of(s), "call_id": conv.first(a, conv.tool_call_id),
                "arguments": args, "arguments_captured": args_captured,
                "result": result, "result_captured": result_captured, "origin": "executed", **common})
    notes.extend(arguments_from_requests(tool_calls, requested, given))
    if handoffs:  # the LLM's request for a handoff tool is the handoff, not a tool call
        targets = {h["to"] for h in handoffs}
        requested = [r for r in requested if not str(r.get("name") or "").startswith(conventions.TRANSFER_PREFIXES)
                     and r.get("name") not in targets and r.get("name") not in frameworks.HANDOFF_REQUESTS]
    untraced = untraced_requests(tool_calls, requested, answers) if tool_calls else []  # asked for, no tool span
    if not tool_calls and requested and not handoff_tool_spans:
        # No tool spans: the calls the LLM asked for (its output messages) are the tool log,
        # with the results the next LLM call was given (its input messages), by call id.
        for call in requested:
            cid = str(call.get("call_id")) if call.get("call_id") is not None else None
            tool_calls.append({**call, "result": given.get(cid) if cid else None,
                               "result_captured": bool(cid) and cid in given, "origin": "requested"})
    # An agent whose LLM calls carry no usage may report it on its own span: count it once.
    for name, tokens in agent_span_usage.items():
        if name not in usage:
            usage[name] = {"input_tokens": tokens.get("input_tokens", 0), "output_tokens": tokens.get("output_tokens", 0)}
    total = {k: sum(u[k] for u in usage.values()) for k in ("input_tokens", "output_tokens")}
    kinds = {TOOL_KIND: sum(1 for s in spans if kind[id(s)] == TOOL_KIND) + handoff_tool_spans,
             LLM_KIND: sum(1 for s in spans if kind[id(s)] == LLM_KIND)}
    tool_log = read_tool_log(conv_info, kinds, llm_seen, [s["name"] for s in spans], conventions.markers_seen(spans),
                             unread_gen_ai_tools(conv, spans, kind, tool_calls, handoffs), untraced)

    checks: dict[str, Any] = {
        "spans_for_trace": len(spans),
        "spans_in_file": len(spans) if spans_in_file is None else spans_in_file,
        "orphaned_parents": len(orphans),
        "tool_calls_errored": sum(1 for t in tool_calls if t["error"]),
        "tool_calls_without_result": sum(1 for t in tool_calls if not t["result_captured"]),
        "arg_capture_seen": any(t["arguments_captured"] for t in tool_calls),
        "result_capture_seen": any(t["result_captured"] for t in tool_calls),
        "spans_missing_duration": sum(1 for s in spans if duration_ms(s) is None),
        "convention": conv_info["used"], "tool_log_seen": tool_log["seen"],
    }
    if notes:
        checks["argument_notes"] = sorted(set(notes))
    if wrappers:
        checks["nested_llm_spans"] = len(wrappers)
    if merged := sum(1 for s in spans if kind[id(s)] == LLM_KIND and frameworks.adk_merged_llm_span(s["name"], s["attributes"])):
        checks["merged_llm_spans"] = merged
    if unnamed_tools:
        checks["unnamed_tool_spans"] = unnamed_tools
    if any(s["base64_ids"] for s in spans):
        checks["trace_id_note"] = "ids were base64 (protobuf JSON); converted to hex"
    status = INCOMPLETE if (not spans or orphans or unnamed_tools) else OK
    return {"status": status, "checks": checks, "trajectory": {
        "trace_id": trace_id, "agents": agents, "llm_calls": llm_calls, "tool_calls": tool_calls,
        "handoffs": handoffs, **({"no_agent_note": note} if not agents and (note := frameworks.no_agent_note(
            [s["name"] for s in spans])) else {}), **({"unread_handoffs": [{"span": s["name"], "span_id": s["span_id"], "to": h["to"]}
                                                      for h in unread for s in [h["span"]]]} if unread else {}),
        **({"unread_model_spans": u} if (u := model_spans.unread_model_spans(spans, conv, kind, handoff_of)) else {}),
        "usage": {"by_agent": usage, "total": total}, "convention": conv_info,
        "tool_log": tool_log}}


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
        conv = conventions.CONVENTIONS.get(c.get("convention") or "", conventions.GEN_AI)
        parts.append(f"{c['unnamed_tool_spans']} tool span(s) without a tool name ({' / '.join(conv.tool_name)})")
    return "; ".join(parts) or "trace incomplete"
