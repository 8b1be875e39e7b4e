"""Trace ingestion: OTLP shapes, normalization, the growing span file, correlation, trace_plan."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from assay.core.vocab import TRACE_DEPENDENT_LAYERS
from assay.traces import otlp_file as traces
from assay.traces.otlp_file import OtlpFileSource, first_agent_name, normalize_trace
from assay.traces.plan import make_traceparent, trace_id_from_response, trace_plan
from otlp_util import MISSING, agent_spans, new_span_id, new_trace_id, parse_traceparent, span, traces_data, write_spans

T0 = 1_700_000_000_000_000_000


def sample(trace_id, parent=None):
    return agent_spans(trace_id, "billing", [
        ("lookup", {"customer": "Ada"}, {"invoice_ids": ["INV-1", "INV-2"]}),
        ("get_invoice", '{"id": "INV-1"}', "plain text, not JSON"),
        ("refund", {"id": "INV-1"}, MISSING, "PermissionDenied"),
    ], parent_span_id=parent, t0=T0)


# ---------------------------------------------------------------- normalization

def test_normalize_traces_data_maps_genai_attributes():
    tid = new_trace_id()
    doc = traces_data(list(reversed(sample(tid))))  # file order must not matter: start time does
    out = normalize_trace(doc, tid)
    assert out["status"] == "ok"
    traj = out["trajectory"]
    assert traj["trace_id"] == tid
    assert [a["name"] for a in traj["agents"]] == ["billing"]
    calls = traj["tool_calls"]
    assert [c["name"] for c in calls] == ["lookup", "get_invoice", "refund"]
    assert calls[0]["arguments"] == {"customer": "Ada"}
    assert calls[0]["result"] == {"invoice_ids": ["INV-1", "INV-2"]}
    assert calls[1]["arguments"] == {"id": "INV-1"}          # JSON string parsed
    assert calls[1]["result"] == "plain text, not JSON"       # non-JSON string kept
    assert calls[2]["error"] == "PermissionDenied" and calls[2]["result_captured"] is False
    assert all(c["agent"] == "billing" for c in calls)
    assert calls[0]["duration_ms"] == 0.5
    assert traj["llm_calls"][0]["model"] == "test-model"
    assert traj["usage"]["by_agent"] == {"billing": {"input_tokens": 10, "output_tokens": 5}}
    assert traj["usage"]["total"] == {"input_tokens": 10, "output_tokens": 5}
    c = out["checks"]
    assert c["spans_for_trace"] == 5 and c["spans_in_file"] == 5 and c["orphaned_parents"] == 0
    assert c["tool_calls_errored"] == 1 and c["tool_calls_without_result"] == 1
    assert c["arg_capture_seen"] and c["result_capture_seen"] and c["spans_missing_duration"] == 0
    assert first_agent_name(traj) == "billing"


def test_three_shapes_give_the_same_trajectory():
    tid, other = new_trace_id(), new_trace_id()
    spans, noise = sample(tid), agent_spans(other, "shifts", [("x", {}, {})])
    one = normalize_trace(traces_data(spans + noise), tid)
    many = normalize_trace([traces_data(spans[:2]), traces_data(noise), traces_data(spans[2:])], tid)
    raw = normalize_trace(spans + noise, tid)
    assert one["trajectory"] == many["trajectory"] == raw["trajectory"]
    assert one["checks"]["spans_in_file"] == 8 and one["checks"]["spans_for_trace"] == 5


def test_snake_case_span_list_with_plain_attributes_and_string_status():
    tid, root = new_trace_id(), new_span_id()
    spans = [
        {"trace_id": tid, "span_id": root, "name": "a", "start_time_unix_nano": T0, "end_time_unix_nano": T0 + 10,
         "attributes": {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "router"}},
        {"trace_id": tid, "span_id": new_span_id(), "parent_span_id": root, "name": "t",
         "start_time_unix_nano": T0 + 1, "end_time_unix_nano": T0 + 2,
         "status": {"code": "STATUS_CODE_ERROR", "message": "boom"},
         "attributes": {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search"}},
    ]
    out = normalize_trace(spans, tid)
    assert out["status"] == "ok"
    assert out["trajectory"]["tool_calls"][0]["error"] == "boom"
    assert out["trajectory"]["tool_calls"][0]["agent"] == "router"


def test_base64_ids_are_converted_and_noted():
    tid = new_trace_id()
    spans = sample(tid)
    b64 = lambda h: base64.b64encode(bytes.fromhex(h)).decode()  # noqa: E731
    for s in spans:
        s["traceId"], s["spanId"] = b64(s["traceId"]), b64(s["spanId"])
        if s.get("parentSpanId"):
            s["parentSpanId"] = b64(s["parentSpanId"])
    out = normalize_trace(traces_data(spans), tid)
    assert out["status"] == "ok" and len(out["trajectory"]["tool_calls"]) == 3
    assert "base64" in out["checks"]["trace_id_note"]


def test_all_zero_parent_means_root():
    tid = new_trace_id()
    spans = sample(tid)
    spans[0]["parentSpanId"] = "0" * 16
    assert normalize_trace(spans, tid)["status"] == "ok"


def test_orphans_make_the_trace_incomplete():
    tid = new_trace_id()
    spans = sample(tid)
    child = span(trace_id=tid, parent_span_id=new_span_id(), operation="execute_tool", tool="late",
                 start_ns=T0 + 50, end_ns=T0 + 60)
    out = normalize_trace(spans + [child], tid)
    assert out["status"] == "incomplete" and out["checks"]["orphaned_parents"] == 1
    assert "parent span never arrived" in traces.incomplete_reason(out)


def test_caller_parent_is_not_an_orphan_but_a_missing_root_is():
    tid, caller = new_trace_id(), new_span_id()
    spans = sample(tid, parent=caller)   # traceparent-echo: the root hangs off the runner's span
    assert normalize_trace(spans, tid)["status"] == "ok"
    assert normalize_trace(spans, tid, parent_span_id=caller)["status"] == "ok"
    children_only = spans[1:]            # the root span has not arrived yet
    out = normalize_trace(children_only, tid, parent_span_id=caller)
    assert out["status"] == "incomplete" and out["checks"]["orphaned_parents"] == 4


def test_no_spans_unnamed_tool_and_bad_document():
    tid = new_trace_id()
    assert normalize_trace(sample(new_trace_id()), tid)["status"] == "incomplete"
    spans = sample(tid) + [span(trace_id=tid, operation="execute_tool", start_ns=T0, end_ns=T0 + 1)]
    out = normalize_trace(spans, tid)
    assert out["status"] == "incomplete" and out["checks"]["unnamed_tool_spans"] == 1
    bad = normalize_trace({"spans": []}, tid)
    assert bad["status"] == "error" and bad["trajectory"] is None and "span document" in bad["error"]


def test_usage_from_agent_span_when_llm_spans_carry_none():
    tid = new_trace_id()
    spans = agent_spans(tid, "solo", [], llm_tokens=None)
    spans[0]["attributes"].append({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "7"}})
    traj = normalize_trace(spans, tid)["trajectory"]
    assert traj["usage"]["by_agent"] == {"solo": {"input_tokens": 7, "output_tokens": 0}}


def test_first_agent_name_is_the_earliest_invoke_agent():
    tid = new_trace_id()
    late = agent_spans(tid, "billing", [], t0=T0 + 10_000_000)
    early = agent_spans(tid, "router", [], t0=T0)
    traj = normalize_trace(late + early, tid)["trajectory"]
    assert first_agent_name(traj) == "router"
    assert first_agent_name({"agents": []}) is None and first_agent_name(None) is None
    # A nameless first agent span (a workflow wrapper) does not hide the named agent it runs.
    assert first_agent_name({"agents": [{"name": None}, {"name": "x"}]}) == "x"


# ---------------------------------------------------------------- correlation

def test_traceparent_round_trip():
    header, tid = make_traceparent()
    parts = header.split("-")
    assert len(parts) == 4 and parts[0] == "00" and parts[1] == tid and len(parts[2]) == 16 and parts[3] == "01"
    assert parse_traceparent(header) == (tid, parts[2])
    assert make_traceparent()[1] != tid
    for bad in (None, "", "00-xyz-abc-01", f"00-{'0' * 32}-{'1' * 16}-01", f"00-{tid}-{'0' * 16}-01"):
        assert parse_traceparent(bad) is None


def test_trace_id_from_response_field():
    tid = new_trace_id()
    assert trace_id_from_response({"meta": {"trace": tid.upper()}}, "meta.trace") == (tid, None)
    assert trace_id_from_response({"items": [{"t": tid}]}, "items.0.t") == (tid, None)
    none, why = trace_id_from_response({"meta": {}}, "meta.trace")
    assert none is None and "no field" in why
    none, why = trace_id_from_response({"t": "abc"}, "t")
    assert none is None and "not a 32-hex trace id" in why


# ---------------------------------------------------------------- the growing file

def source(path, q_ms=20, max_wait=5.0):
    return OtlpFileSource(path, "gen_ai", quiescence_ms=q_ms, max_wait_s=max_wait)


def test_partial_last_line_waits_for_its_newline(tmp_path):
    path = tmp_path / "spans.jsonl"
    tid = new_trace_id()
    line = json.dumps(traces_data(sample(tid))) + "\n"
    path.write_text(line[:40])
    src = source(path)
    assert src.poll() == 0 and src.malformed_lines == 0
    with open(path, "a") as fh:
        fh.write(line[40:])
    assert src.poll() == 5 and src.spans_in_file == 5


def test_poll_reads_only_new_bytes(tmp_path):
    path = tmp_path / "spans.jsonl"
    t1, t2 = new_trace_id(), new_trace_id()
    write_spans(path, sample(t1))
    src = source(path)
    assert src.poll() == 5
    # Corrupt the bytes already read, in place: a re-read would count a malformed line.
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.write(b"#" * (size - 1))
    write_spans(path, sample(t2))
    assert src.poll() == 5
    assert src.malformed_lines == 0 and src.spans_in_file == 10


def test_collect_ok_and_trace_doc_round_trips(tmp_path):
    path = tmp_path / "spans.jsonl"
    header, tid = make_traceparent()
    _, caller = parse_traceparent(header)
    for i in range(3):
        write_spans(path, agent_spans(new_trace_id(), f"other{i}", [("x", {}, {})]))
    write_spans(path, sample(tid, parent=caller))
    out = source(path).collect(tid, parent_span_id=caller)
    status, traj, doc = out
    assert status == "ok" and out.reason is None
    assert [c["name"] for c in traj["tool_calls"]] == ["lookup", "get_invoice", "refund"]
    assert out.checks["spans_in_file"] == 14 and out.checks["spans_for_trace"] == 5
    again = normalize_trace(json.loads(json.dumps(doc)), tid, parent_span_id=caller)
    assert again["trajectory"] == traj
    block = out.trace_block(tid, "traceparent-echo")
    assert block["collected"] is True and block["status"] == "ok" and block["trace_id"] == tid


def test_concurrent_readers_on_a_growing_file(tmp_path):
    path = tmp_path / "spans.jsonl"
    src = source(path, q_ms=30, max_wait=20)
    ids = [make_traceparent() for _ in range(12)]
    results: dict[str, tuple] = {}

    def case(i, header, tid):
        _, caller = parse_traceparent(header)
        results[tid] = src.collect(tid, parent_span_id=caller)

    threads = [threading.Thread(target=case, args=(i, h, t)) for i, (h, t) in enumerate(ids)]
    for th in threads:
        th.start()
    for i, (header, tid) in enumerate(ids):   # the app writes while the cases wait
        _, caller = parse_traceparent(header)
        spans = agent_spans(tid, f"agent{i}", [("tool", {"n": i}, {"ok": i})], parent_span_id=caller)
        write_spans(path, spans[1:])           # children first ...
        write_spans(path, spans[:1] + agent_spans(new_trace_id(), "noise", []))  # ... root later
    for th in threads:
        th.join(30)
    assert len(results) == 12
    for i, (_, tid) in enumerate(ids):
        status, traj, _ = results[tid]
        assert status == "ok", results[tid].reason
        assert first_agent_name(traj) == f"agent{i}"
        assert traj["tool_calls"][0]["arguments"] == {"n": i}


def test_missing_root_waits_then_completes(tmp_path):
    path = tmp_path / "spans.jsonl"
    header, tid = make_traceparent()
    _, caller = parse_traceparent(header)
    spans = sample(tid, parent=caller)
    write_spans(path, spans[1:])
    src = source(path, q_ms=10, max_wait=20)
    box = {}
    th = threading.Thread(target=lambda: box.update(out=src.collect(tid, parent_span_id=caller)))
    th.start()
    # The children alone are orphans: collect keeps waiting (max_wait is long) until the root lands.
    while src._snapshot(tid)[0] < 4:
        time.sleep(0.005)
    time.sleep(0.05)
    assert th.is_alive()
    write_spans(path, spans[:1])
    th.join(20)
    assert box["out"].status == "ok" and box["out"].checks["spans_for_trace"] == 5


def test_never_arrived_is_infra_incomplete(tmp_path):
    path = tmp_path / "spans.jsonl"
    write_spans(path, sample(new_trace_id()))
    tid = new_trace_id()
    out = source(path, max_wait=0.1).collect(tid)
    status, traj, doc = out
    assert status == "infra_incomplete" and traj is None and doc is None
    assert "no span with trace id" in out.reason and tid in out.reason
    assert out.trace_block(tid, "traceparent-echo")["collected"] is False


def test_missing_file_is_infra_incomplete(tmp_path):
    out = source(tmp_path / "absent.jsonl", max_wait=0.05).collect(new_trace_id())
    assert out.status == "infra_incomplete" and "no span" in out.reason


def test_orphans_past_max_wait_are_infra_incomplete(tmp_path):
    path = tmp_path / "spans.jsonl"
    header, tid = make_traceparent()
    _, caller = parse_traceparent(header)
    write_spans(path, sample(tid, parent=caller)[1:])
    out = source(path, q_ms=5, max_wait=0.2).collect(tid, parent_span_id=caller)
    assert out.status == "infra_incomplete" and out.trajectory is None
    assert "parent span never arrived" in out.reason and out.checks["orphaned_parents"] == 4


def test_unended_root_is_infra_incomplete(tmp_path):
    path = tmp_path / "spans.jsonl"
    tid = new_trace_id()
    spans = sample(tid)
    spans[0]["endTimeUnixNano"] = "0"
    write_spans(path, spans)
    out = source(path, q_ms=5, max_wait=0.2).collect(tid)
    assert out.status == "infra_incomplete" and "root span had not ended" in out.reason


def test_pretty_printed_single_document(tmp_path):
    path = tmp_path / "spans.json"
    tid = new_trace_id()
    path.write_text(json.dumps(traces_data(sample(tid) + sample(new_trace_id())), indent=2))
    out = source(path, q_ms=5).collect(tid)
    assert out.status == "ok" and len(out.trajectory["tool_calls"]) == 3
    path.write_text(json.dumps(sample(tid), indent=1))  # a raw span list, rewritten smaller
    src = source(path, q_ms=5)
    assert src.collect(tid).status == "ok" and src.spans_in_file == 5


def test_malformed_lines_are_skipped_and_rotation_restarts(tmp_path):
    path = tmp_path / "spans.jsonl"
    t1, t2 = new_trace_id(), new_trace_id()
    write_spans(path, sample(t1))
    with open(path, "a") as fh:
        fh.write("not json\n")
    src = source(path, q_ms=5)
    assert src.collect(t1).status == "ok" and src.malformed_lines == 1
    path.write_text("")
    write_spans(path, sample(t2))          # smaller than before: rotated
    assert src.collect(t2).status == "ok" and src.spans_in_file == 5


def test_an_unknown_convention_is_refused_by_the_source(tmp_path):
    with pytest.raises(ValueError):
        OtlpFileSource(tmp_path / "x", "openllmetry-legacy", 10, 1)
    assert OtlpFileSource(tmp_path / "x", "openinference", 10, 1).convention == "openinference"


# ---------------------------------------------------------------- pre-flight decision

def adapter(**traces_block):
    return {"traces": traces_block} if traces_block else {}


@pytest.mark.parametrize("block, why", [
    ({}, "absent"),
    ({"source": "none"}, "none"),
    ({"source": "view-only", "correlation": "traceparent-echo"}, "view-only"),
    ({"source": "otlp-file", "location": "x.jsonl"}, "correlation"),
    ({"source": "otlp-file", "location": "x.jsonl", "correlation": "none"}, "correlation"),
])
def test_trace_less_runs(tmp_path, block, why):
    plan = trace_plan(adapter(**block), state_dir=tmp_path)
    assert plan["queryable"] is False and plan["refusal"] is None
    assert plan["disabled_layers"] == list(TRACE_DEPENDENT_LAYERS)
    assert why in plan["reason"]


@pytest.mark.parametrize("block, needle", [
    ({"source": "jaeger", "correlation": "traceparent-echo"}, "'jaeger'"),
    ({"source": "tempo"}, "'tempo'"),
    ({"source": "clickhouse"}, "'clickhouse'"),
    ({"source": "zipkin"}, "unknown"),
    ({"source": "otlp-file", "location": "x", "correlation": "guess-by-time"}, "heuristic"),
    ({"source": "otlp-file", "location": "x", "correlation": "traceparent-echo",
      "convention": "openinference", "mapping_shim": "shim.py"}, "mapping_shim"),
    ({"source": "otlp-file", "location": "x", "correlation": "traceparent-echo",
      "convention": "openllmetry-legacy"}, "now openllmetry"),
    ({"source": "otlp-file", "location": "no/such/dir/x.jsonl", "correlation": "traceparent-echo"}, "not a readable"),
    ({"source": "otlp-file", "correlation": "traceparent-echo"}, "location"),
    ({"source": "otlp-file", "location": "x", "correlation": "traceparent-echo",
      "completeness": {"max_wait_s": "soon"}}, "max_wait_s"),
])
def test_refusals_are_exit_3_material(tmp_path, block, needle):
    plan = trace_plan(adapter(**block), state_dir=tmp_path)
    assert plan["queryable"] is False and plan["refusal"] and needle in plan["refusal"]


def test_queryable_plan(tmp_path):
    plan = trace_plan(adapter(source="otlp-file", location="spans.jsonl", correlation="response-field:meta.trace",
                              completeness={"quiescence_ms": 50, "max_wait_s": 2}), state_dir=tmp_path)
    assert plan["queryable"] is True and plan["refusal"] is None and plan["disabled_layers"] == []
    assert plan["location"] == str(tmp_path / "spans.jsonl") and plan["response_field"] == "meta.trace"
    assert (plan["quiescence_ms"], plan["max_wait_s"]) == (50, 2)
    plan = trace_plan(adapter(source="otlp-file", location=str(tmp_path / "s.jsonl"), correlation="traceparent-echo"))
    assert plan["queryable"] and plan["response_field"] is None and plan["quiescence_ms"] == 3000


def test_small_read_chunks_and_lines_longer_than_a_chunk(tmp_path, monkeypatch):
    monkeypatch.setattr(traces, "_CHUNK", 64)   # every line here is far longer than 64 bytes
    path = tmp_path / "spans.jsonl"
    ids = [new_trace_id() for _ in range(5)]
    for tid in ids:
        write_spans(path, sample(tid))
    src = source(path, q_ms=5)
    assert src.poll() == 25 and src.malformed_lines == 0
    assert all(src.collect(tid).status == "ok" for tid in ids)


def test_a_replaced_file_is_read_from_its_start(tmp_path):
    path, fresh = tmp_path / "spans.jsonl", tmp_path / "next.jsonl"
    t1, t2 = new_trace_id(), new_trace_id()
    write_spans(path, sample(t1))
    src = source(path, q_ms=5)
    assert src.collect(t1).status == "ok"
    for _ in range(3):
        write_spans(fresh, sample(new_trace_id()))
    write_spans(fresh, sample(t2))          # larger than the old file: only the inode tells
    fresh.replace(path)
    assert src.collect(t2).status == "ok" and src.spans_in_file == 20 and src.malformed_lines == 0


def test_hostile_span_lines_are_not_a_crash(tmp_path):
    path = tmp_path / "spans.jsonl"
    tid, bad_tid = new_trace_id(), new_trace_id()
    with open(path, "w") as fh:
        fh.write("[" * 10_000 + "]" * 10_000 + "\n")                         # nested 10,000 deep
        fh.write(json.dumps({"resourceSpans": [{"scopeSpans": [5]}]}) + "\n")  # off-shape scopeSpans
        fh.write(json.dumps([{"traceId": bad_tid, "spanId": new_span_id(), "attributes": 5}]) + "\n")
    spans = sample(tid)
    spans[1]["attributes"].append({"key": "gen_ai.tool.call.arguments",
                                   "value": {"stringValue": "[" * 10_000 + "]" * 10_000}})
    write_spans(path, spans)
    src = source(path, q_ms=5, max_wait=0.2)
    assert src.collect(tid).status == "ok"
    assert src.malformed_lines == 2
    bad = src.collect(bad_tid)
    assert bad.status == "infra_incomplete" and bad.reason
    assert normalize_trace([{"traceId": tid, "attributes": 5}], tid)["status"] == "error"
