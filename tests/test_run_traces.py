"""The runner against an app that exports real GenAI spans: the four trace-fed layers end to end.

A small agent app on a loopback port continues the W3C `traceparent` it receives (or starts
its own trace and returns its id), and appends its spans as OTLP JSON lines through
`assay.traces.otlp_writer`. `run_cases.py` runs as a subprocess; the tests read the run dir.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from assay.traces.otlp_writer import new_span_id, new_trace_id, parse_traceparent, span, write_spans
from helpers import run_script
from rundir_util import cases_view

RUN_ID = "smoke-20261129T101500Z"


class AgentApp:
    """Routes a message to an agent that calls tools; every request's spans go to `span_file`."""

    def __init__(self, span_file: Path) -> None:
        self.span_file = span_file
        self.requests = 0
        app = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                self._send(200, {"ok": True})

            def do_POST(self):
                app.requests += 1
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                status, payload = app.handle(body.get("message", ""), self.headers.get("traceparent"))
                self._send(status, payload)

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, message: str, traceparent: str | None) -> tuple[int, dict]:
        parsed = parse_traceparent(traceparent)
        trace_id, caller = parsed if parsed else (new_trace_id(), None)
        # (agent, [(tool, arguments, result, error)], status, answer) per scripted message
        script = {
            "show invoice INV-1": ("billing", [("lookup_invoice", {"invoice_id": "INV-1"}, {"id": "INV-1", "total": 120}, None)],
                                   200, "Invoice INV-1 totals 120."),
            "when is my shift": ("shifts", [("list_shifts", {"week": 48}, {"shifts": ["Mon"]}, None)], 200, "Monday."),
            "delete invoice INV-1": ("billing", [("delete_invoice", {"invoice_id": "INV-1"}, {"deleted": True}, None)],
                                     200, "Deleted."),
            "refund my last invoice": ("billing", [("list_invoices", {"status": "paid"}, {"invoices": ["INV-7"]}, None),
                                                   ("issue_refund", {"invoice_id": "INV-7", "amount": 10}, {"ok": True}, None)],
                                       200, "Refunded INV-7."),
            "refund something": ("billing", [("issue_refund", {"invoice_id": "INV-404", "amount": 10}, {"ok": True}, None)],
                                 200, "Refunded."),
            "search the kb": ("support", [("search_kb", {"q": "vpn"}, {"hits": []}, None)] * 4, 200, "Nothing found."),
            "list my invoices": ("billing", [("list_invoices", {"status": "any"}, {"invoices": ["INV-1", "INV-99"]}, None)],
                                 200, "You have INV-1 and INV-99."),
            "list my open invoices": ("billing", [("list_invoices", {"status": "open"}, {"invoices": ["INV-1"]}, None)],
                                      200, "You have INV-1."),
            "show invoice INV-99": ("billing", [("lookup_invoice", {"invoice_id": "INV-99"}, None, "PermissionDenied")],
                                    403, "You may not see that invoice."),
            "total of my invoices": ("billing", [("sum_invoices", {}, {"total": 240}, None)], 200, "240 in total."),
        }
        script["lose the root"] = script["show invoice INV-1"]
        script["quiet tools"] = ("billing", [("lookup_invoice", None, None, None)], 200, "Done.")
        if message not in script:
            return 200, {"answer": "no trace for this one", "trace_id": trace_id}   # writes no spans
        agent, calls, status, answer = script[message]
        root_id, t = new_span_id(), 1_700_000_000_000_000_000
        spans = [span(trace_id=trace_id, parent_span_id=root_id, operation="chat", model="m",
                      input_tokens=12, output_tokens=4, start_ns=t + 1000, end_ns=t + 2000)]
        for i, (tool, args, result, error) in enumerate(calls):
            start = t + 10_000 * (i + 1)
            spans.append(span(trace_id=trace_id, parent_span_id=root_id, operation="execute_tool", tool=tool,
                              arguments=args, result=result, error=error, start_ns=start, end_ns=start + 5000))
        root = span(trace_id=trace_id, span_id=root_id, parent_span_id=caller, operation="invoke_agent",
                    agent=agent, start_ns=t, end_ns=t + 10_000 * (len(calls) + 2))
        write_spans(self.span_file, spans)   # children first, root in a later line: as batch exporters do
        if message != "lose the root":
            write_spans(self.span_file, [root])
        return status, {"answer": answer, "trace_id": trace_id}


def case(cid: str, message: str, expect: dict) -> dict:
    return {"id": cid, "split": ["full", "smoke"], "category": "happy", "test_type": "MFT", "template_id": None,
            "input": {"messages": [{"role": "user", "content": message}]}, "expect": expect}


CASES = [
    case("c-route-ok", "show invoice INV-1", {"route": "billing", "tools": {"subset": ["lookup_invoice"]},
                                              "args": {"lookup_invoice": {"invoice_id": "INV-1"}}}),
    case("c-route-fail", "when is my shift", {"route": "billing"}),
    case("c-traj-fail", "show invoice INV-1", {"tools": {"order": ["lookup_invoice", "issue_refund"], "order_mode": "exact"}}),
    case("c-forbidden", "delete invoice INV-1", {"tools": {"forbidden": ["delete_invoice"]}}),
    case("c-args-ok", "refund my last invoice", {"args": {"issue_refund": {"invoice_id": "from_tool_result", "amount": "present"}}}),
    case("c-args-fail", "refund something", {"args": {"issue_refund": {"invoice_id": "from_tool_result"}}}),
    case("c-loop", "search the kb", {"answer": {"must_contain": ["Nothing"]}}),
    case("c-leak", "list my invoices", {"authz": {"allowed_record_ids": ["INV-1"]}}),
    case("c-authz-ok", "list my open invoices", {"authz": {"allowed_record_ids": ["INV-1"], "forbidden_tools": ["delete_invoice"]}}),
    case("c-refusal", "show invoice INV-99", {"http": {"status": 403},
                                              "authz": {"expect_refusal": True, "forbidden_record_ids": ["INV-99"]}}),
    case("c-result", "total of my invoices", {"result": {"scalar": 240}}),
    case("c-notrace", "say hi", {"answer": {"must_contain": ["trace"]}}),
    case("c-lost-root", "lose the root", {"tools": {"subset": ["lookup_invoice"]}}),
    case("c-uncaptured", "quiet tools", {"args": {"lookup_invoice": {"invoice_id": "INV-1"}},
                                         "authz": {"forbidden_tools": ["delete_invoice"], "forbidden_record_ids": ["INV-9"]}}),
]


def write_plan(tmp: Path, app: AgentApp, *, correlation="traceparent-echo", source="otlp-file", cases=CASES,
               max_wait_s=0.5, matrix=None, traces_extra=None) -> tuple[Path, Path]:
    state = tmp / ".assay"
    (state / "reports").mkdir(parents=True, exist_ok=True)
    adapter = {
        "adapter_version": 1,
        "invocation": {
            "mode": "http", "base_url": "${TRACE_APP_URL}", "auth": {"type": "none"}, "endpoint": "POST /chat",
            "request_body": '{"message": "<user turn>", "session": "<uuid>"}',
            "response_body": '{"answer": "<answer>"}',
            "health_check": {"method": "GET", "path": "/healthz", "expect_status": [200]},
            "result_from_tool": {"tool": "sum_invoices", "field": "total"},
            "timeout_s": 10, "max_concurrency": 4,
        },
        "traces": {"source": source, "location": "${TRACE_FILE}", "convention": "gen_ai", "correlation": correlation,
                   "completeness": {"quiescence_ms": 30, "max_wait_s": max_wait_s}, **(traces_extra or {})},
    }
    plan = {"plan_version": 1, "run_id": RUN_ID, "mode": "smoke", "k": 1, "gate": "soft", "selecting_split": "smoke",
            "paths": {"state_dir": str(state)}, "adapter": adapter, "capability_matrix": matrix or {}, "cases": cases,
            "execution": {"max_attempts": 1, "backoff_s": []}}
    path = tmp / "plan.json"
    path.write_text(json.dumps(plan))
    return path, state / "reports" / RUN_ID


def run(tmp_path: Path, app: AgentApp, **kw):
    plan, out = write_plan(tmp_path, app, **kw)
    res = run_script("run_cases", "--plan", plan, "--out", out,
                     env={"TRACE_APP_URL": app.url, "TRACE_FILE": str(app.span_file)})
    return res, out


def verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


pytestmark = pytest.mark.skipif(not (Path(__file__).resolve().parent.parent / "scripts" / "run_cases.py").exists(),
                                reason="run_cases.py is not built yet")


@pytest.fixture(scope="module")
def traced_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("traced")
    app = AgentApp(tmp / "spans.jsonl")
    try:
        res, out = run(tmp, app)
    finally:
        app.stop()
    assert res.rc == 0, (res.stdout, res.stderr[-3000:])
    return out


def layer(out, cid, name):
    return verdict(out, cid)["layers"][name]


def test_routing_from_the_first_invoke_agent_span(traced_run):
    ok, bad = layer(traced_run, "c-route-ok", "routing"), layer(traced_run, "c-route-fail", "routing")
    assert ok["verdict"] == "pass" and ok["observed"] == "billing" and ok["observed_from"] == "trace"
    assert bad["verdict"] == "fail" and bad["observed"] == "shifts" and bad["observed_from"] == "trace"


def test_trajectory_pass_and_fail(traced_run):
    assert layer(traced_run, "c-route-ok", "trajectory")["verdict"] == "pass"
    exact = layer(traced_run, "c-traj-fail", "trajectory")
    assert exact["verdict"] == "fail" and exact["mode"] == "exact"
    forb = layer(traced_run, "c-forbidden", "trajectory")
    assert forb["verdict"] == "fail" and forb["forbidden_violations"] == [{"tool": "delete_invoice", "calls": 1}]
    assert verdict(traced_run, "c-traj-fail")["verdict"] == "fail"


def test_tool_selection_pass_and_fail(traced_run):
    assert layer(traced_run, "c-route-ok", "tool_selection")["verdict"] == "pass"
    assert layer(traced_run, "c-args-ok", "tool_selection")["verdict"] == "pass"
    bad = layer(traced_run, "c-args-fail", "tool_selection")
    assert bad["verdict"] == "fail" and "first tool call" in bad["checks"][0]["reason"]


def test_loops(traced_run):
    loop = layer(traced_run, "c-loop", "loops")
    assert loop["verdict"] == "fail" and loop["findings"][0]["kind"] == "identical-repeat-loop"
    assert verdict(traced_run, "c-loop")["verdict"] == "fail"
    assert layer(traced_run, "c-route-ok", "loops")["verdict"] == "pass"


def test_authz(traced_run):
    leak = layer(traced_run, "c-leak", "authz")
    assert leak["verdict"] == "fail" and leak["leaked_ids"] == ["INV-99"]
    assert layer(traced_run, "c-authz-ok", "authz")["verdict"] == "pass"
    refusal = layer(traced_run, "c-refusal", "authz")
    assert refusal["verdict"] == "pass", refusal
    assert {"check": "expect_refusal", "status": "pass", "refused_by": "HTTP 403"} in refusal["checks"]
    assert verdict(traced_run, "c-refusal")["verdict"] == "pass"


def test_execution_from_the_tool_result(traced_run):
    ex = layer(traced_run, "c-result", "execution")
    assert ex["verdict"] == "pass"
    actual = json.loads((cases_view(traced_run) / "c-result" / "actual.json").read_text())
    assert actual.get("scalar") == 240 and actual.get("source") == "result_from_tool"


def test_trace_files_only_when_collected(traced_run):
    d = cases_view(traced_run) / "c-route-ok"
    traj = json.loads((d / "trajectory.json").read_text())
    assert [c["name"] for c in traj["tool_calls"]] == ["lookup_invoice"]
    assert "resourceSpans" in json.loads((d / "trace.json").read_text())
    missing = cases_view(traced_run) / "c-notrace"
    assert not (missing / "trajectory.json").exists() and not (missing / "trace.json").exists()


def test_trace_block_of_a_collected_case(traced_run):
    v = verdict(traced_run, "c-route-ok")
    traj = json.loads((cases_view(traced_run) / "c-route-ok" / "trajectory.json").read_text())
    assert v["trace"] == {"collected": True, "status": "ok", "trace_id": traj["trace_id"],
                          "correlation": "traceparent-echo", "reason": None}
    assert len(v["trace"]["trace_id"]) == 32 and v["infra_reason"] is None


def test_every_sent_verdict_matches_the_schema(traced_run):
    from assay.schemas import validate
    for cdir in sorted((cases_view(traced_run)).iterdir()):
        v = verdict(traced_run, cdir.name)
        validate(v, "verdict", source=cdir / "verdict.json")
        assert v["sent"] is True and v["trace"]["collected"] is (v["trace_status"] == "complete")
    assert run_script("run_cases", "--verify", traced_run).rc == 0


def test_missing_trace_is_infra_incomplete_never_fail(traced_run):
    v = verdict(traced_run, "c-notrace")
    assert v["verdict"] == "infra_incomplete"
    assert v["trace"]["status"] == "infra_incomplete" and v["trace"]["collected"] is False
    assert v["trace"]["correlation"] == "traceparent-echo" and len(v["trace"]["trace_id"]) == 32
    assert "no span with trace id" in v["trace"]["reason"]
    assert v["infra_reason"] == v["trace"]["reason"]
    assert v["layers"]["answer"]["verdict"] == "pass"          # the answer was fine; the trace is what is missing
    assert v["layers"]["loops"]["verdict"] == "infra_incomplete"
    assert "no span with trace id" in json.dumps(v)
    results = json.loads((traced_run / "results.json").read_text())
    assert results["summary"]["infra_incomplete"] >= 1


def test_response_field_correlation(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    try:
        res, out = run(tmp_path, app, correlation="response-field:trace_id", cases=CASES[:1])
    finally:
        app.stop()
    assert res.rc == 0, (res.stdout, res.stderr[-3000:])
    routing = layer(out, "c-route-ok", "routing")
    assert routing["verdict"] == "pass" and routing["observed_from"] == "trace"
    assert (cases_view(out) / "c-route-ok" / "trajectory.json").exists()
    block = verdict(out, "c-route-ok")["trace"]
    assert block["correlation"] == "response-field:trace_id" and block["status"] == "ok"


def test_response_field_absent_is_infra_incomplete_with_the_reason(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    try:
        res, out = run(tmp_path, app, correlation="response-field:meta.trace", cases=CASES[:1])
    finally:
        app.stop()
    assert res.rc == 0, (res.stdout, res.stderr[-3000:])
    v = verdict(out, "c-route-ok")
    assert v["verdict"] == "infra_incomplete"
    assert v["trace"] == {"collected": False, "status": "infra_incomplete", "trace_id": None,
                          "correlation": "response-field:meta.trace", "reason": v["infra_reason"]}
    assert "meta.trace" in v["infra_reason"]


def test_unsupported_store_is_exit_3_with_no_app_call(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    try:
        res, out = run(tmp_path, app, source="jaeger", cases=CASES[:1])
    finally:
        app.stop()
    assert res.rc == 3 and "jaeger" in res.json["error"]
    assert app.requests == 0


def test_a_declared_mapping_shim_is_exit_3_with_no_app_call(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    try:
        res, out = run(tmp_path, app, cases=CASES[:1],
                       traces_extra={"convention": "openinference", "mapping_shim": "shim.py"})
    finally:
        app.stop()
    assert res.rc == 3 and "mapping_shim" in res.json["error"]
    assert app.requests == 0


def test_trace_less_run_disables_the_trace_layers(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    try:
        res, out = run(tmp_path, app, source="none", cases=CASES[:1])
    finally:
        app.stop()
    assert res.rc == 0, (res.stdout, res.stderr[-3000:])
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["traces"]["collected"] is False
    assert manifest["traces"]["disabled_layers"] == ["trajectory", "tool_selection", "loops", "cost_latency"]
    v = verdict(out, "c-route-ok")
    assert v["layers"]["trajectory"]["verdict"] == "unscored" and v["layers"]["loops"]["verdict"] == "n/a"
    assert v["layers"]["trajectory"]["reason"] == f"traces not collected: {manifest['traces']['reason']}"
    assert v["layers"]["tool_selection"]["verdict"] == "unscored"
    assert not (cases_view(out) / "c-route-ok" / "trajectory.json").exists()
    assert v["trace"] == {"collected": False, "status": "not_collected", "trace_id": None,
                          "correlation": "traceparent-echo", "reason": manifest["traces"]["reason"]}
    assert v["verdict"] != "infra_incomplete" and v["infra_reason"] is None


def test_orphaned_spans_past_max_wait_are_infra_incomplete(traced_run):
    v = verdict(traced_run, "c-lost-root")
    assert v["verdict"] == "infra_incomplete"
    assert v["layers"]["trajectory"]["verdict"] == "infra_incomplete"
    assert "parent span never arrived" in v["layers"]["trajectory"]["reason"]
    assert "parent span never arrived" in v["infra_reason"] and v["infra_reason"] == v["trace"]["reason"]
    assert not (cases_view(traced_run) / "c-lost-root" / "trajectory.json").exists()


def test_uncaptured_arguments_are_unscored_not_failed(traced_run):
    v = verdict(traced_run, "c-uncaptured")
    sel = v["layers"]["tool_selection"]
    assert sel["verdict"] == "unscored" and "did not capture" in sel["reason"]
    authz = v["layers"]["authz"]
    assert authz["verdict"] == "pass" and authz["unscorable"] == []      # forbidden_tools from the log; ids in the answer
    # the argument check never ran: never a pass (runner contract §16), the reason names it
    assert v["verdict"] == "unscored" and v["unscored_reason"].startswith("tool_selection: ")


def test_matrix_disabled_layer_is_unscorable_and_a_bad_expectation_is_an_error(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    cases = [case("c-disabled", "show invoice INV-1", {"args": {"lookup_invoice": {"invoice_id": "INV-1"}},
                                                        "tools": {"subset": ["lookup_invoice"]}}),
             case("c-bad", "show invoice INV-1", {"tools": {"order": ["lookup_invoice"], "order_mode": "sometimes"}})]
    try:
        res, out = run(tmp_path, app, cases=cases,
                       matrix={"tool_selection": {"enabled": False, "blocked_by": "tool args are not captured"}})
    finally:
        app.stop()
    assert res.rc == 7, (res.stdout, res.stderr[-3000:])
    v = verdict(out, "c-disabled")
    assert v["layers"]["tool_selection"] == {"verdict": "unscorable", "blocked_by": "tool args are not captured"}
    assert v["layers"]["trajectory"]["verdict"] == "pass" and v["verdict"] == "pass"
    bad = verdict(out, "c-bad")
    assert bad["layers"]["trajectory"]["verdict"] == "error" and "order_mode" in bad["layers"]["trajectory"]["reason"]
    assert bad["verdict"] == "unscored"


def test_trace_block_mapping_is_pure():
    from assay.traces.collect import CaseTrace, TraceConfig, collect_case_trace, not_sent_block, trace_block
    assert trace_block("complete", "a" * 32, "traceparent-echo", "ignored")["reason"] is None
    for status in ("incomplete", "missing"):
        assert trace_block(status, None, "x", "why") == {"collected": False, "status": "infra_incomplete",
                                                         "trace_id": None, "correlation": "x", "reason": "why"}
    off = TraceConfig(False, "traces.source is none: run is trace-less", correlation="traceparent-echo")
    got = collect_case_trace(off, {})
    assert isinstance(got, CaseTrace) and tuple(got) == ("not_collected", None, None, off.reason)
    assert got.block()["status"] == "not_collected" and got.block()["reason"] == off.reason
    assert not_sent_block(off, "no answer")["reason"] == off.reason
    on = TraceConfig(True, None, correlation="traceparent-echo")
    assert not_sent_block(on, "no answer")["reason"] == "no answer"
    missing = collect_case_trace(TraceConfig(True, None, correlation="traceparent-echo"), {})
    assert missing.block()["status"] == "infra_incomplete" and "no trace id" in missing.block()["reason"]
