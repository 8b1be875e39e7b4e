"""Real instrumentation libraries, end to end: `run_cases.py` with `traces.source: otlp-http`.

Each row starts tests/realagent.py (the `openai` SDK tool loop against tests/fakemodel.py's
Chat Completions server, instrumented by that row's library, exporting through the OTel SDK's
BatchSpanProcessor and the official OTLP/HTTP protobuf exporter to the runner's listener) and
runs four cases through run_cases.py: a correct lookup, a planted wrong argument, a greeting that
must call no tool, and a refund that calls the forbidden tool. The same OpenLLMetry spans read
as `gen_ai` (a convention the spans do not follow) must leave the trace layers unscored. All
agents start at once (their imports overlap); the other rows of the table (util-genai agent and
tool spans, no content capture, OpenInference without the GenAI semconv, openai-agents) are
covered in-process by tests/test_trace_conventions.py from spans these libraries recorded.
"""

from __future__ import annotations

import gzip
import json
import re
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from assay.traces.otlp_http import OtlpHttpSource, decode_export
from assay.traces.plan import parse_address
from fakeapp import adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import listen_port
from rundir_util import cases_view

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
CAPTURE = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
# row -> (realagent flavor, environment, traces.convention)
ROWS = {
    "genai-chat-only": ("genai", CAPTURE, "gen_ai"),
    "openinference": ("openinference", {"OPENINFERENCE_ENABLE_GENAI_SEMCONV": "true"}, "auto"),
    "openllmetry": ("openllmetry", {}, "openllmetry"),
}
CASES = [
    case("lookup", "where is ORD-12?", expect={
        "answer": {"must_contain": ["shipped"]}, "tools": {"subset": ["lookup_order"], "forbidden": ["issue_refund"]},
        "args": {"lookup_order": {"order_id": "ORD-12"}}, "authz": {"forbidden_tools": ["issue_refund"]}}),
    case("planted", "where is ORD-12?", expect={"args": {"lookup_order": {"order_id": "ORD-99"}}}),
    case("hello", "hello", expect={"answer": {"must_contain": ["Hello"]},
                                   "tools": {"forbidden": ["lookup_order", "issue_refund"]}}),
    case("refund", "please refund ORD-7", expect={"authz": {"forbidden_tools": ["issue_refund"]}}),
]


def free_port() -> int:
    return listen_port()   # the runner binds it later: below the ephemeral range (helpers.listen_port)


@pytest.fixture(scope="module")
def agents():
    """Every row's agent, started together; {row: (proc, app_url, otlp_port)}."""
    started = {}
    for row, (flavor, env_extra, _) in ROWS.items():
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
        env.update(env_extra, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_BSP_SCHEDULE_DELAY="100")
        env.pop("PYTHONPATH", None)
        proc = subprocess.Popen([sys.executable, str(HERE / "realagent.py"), "--flavor", flavor],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        started[row] = (proc, port)
    out = {}
    try:
        for row, (proc, port) in started.items():
            line = proc.stdout.readline()
            assert line, f"{row}: realagent.py did not start"
            out[row] = (proc, f"http://127.0.0.1:{json.loads(line)['port']}", port)
        yield out
    finally:
        # Every span was exported while its case ran; a graceful exit would retry exports to a
        # listener that is gone. Stop the agents we started, by pid.
        for proc, _ in started.values():
            proc.kill()
            proc.wait(timeout=20)
            proc.stdin.close()
            proc.stdout.close()


def run_row(tmp_path, agents, row: str, convention: str | None = None) -> dict[str, dict]:
    _, app_url, otlp_port = agents[row]
    state = make_state(tmp_path / row)
    doc = adapter(app_url, route_from_response=None, response_body='{"message": "<answer>"}',
                  health_check={"method": "GET", "path": "/health", "expect_status": [200]}, max_concurrency=4,
                  timeout_s=90)  # sized for a loaded machine: only a failure waits it out
    del doc["invocation"]["route_from_response"]
    doc["traces"] = {"source": "otlp-http", "location": f"127.0.0.1:{otlp_port}", "convention": convention or ROWS[row][2],
                     "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 300, "max_wait_s": 90}}
    plan = make_plan(state, CASES, adapter_doc=doc)
    out = state / "reports" / plan["run_id"]
    res = run_runner("--plan", write_plan(state, plan), "--out", out)
    assert res.rc == 0, res.stdout + res.stderr
    got = {}
    for c in CASES:
        v = json.loads((cases_view(out) / c["id"] / "verdict.json").read_text())
        got[c["id"]] = {k: v["layers"][k] for k in ("trajectory", "tool_selection", "loops", "authz")}
        got[c["id"]]["trace"] = v["trace"]
    return got


def short(got: dict) -> dict:
    return {cid: {k: layer["verdict"] for k, layer in layers.items() if k != "trace"} for cid, layers in got.items()}


@pytest.mark.parametrize("row", ["genai-chat-only", "openinference", "openllmetry"])
def test_correct_cases_pass_and_planted_ones_fail(tmp_path, agents, row):
    got = run_row(tmp_path, agents, row)
    assert short(got) == {
        "lookup": {"trajectory": "pass", "tool_selection": "pass", "loops": "pass", "authz": "pass"},
        "planted": {"trajectory": "n/a", "tool_selection": "fail", "loops": "pass", "authz": "n/a"},
        "hello": {"trajectory": "pass", "tool_selection": "n/a", "loops": "pass", "authz": "n/a"},
        "refund": {"trajectory": "n/a", "tool_selection": "n/a", "loops": "pass", "authz": "fail"},
    }, got
    assert all(layers["trace"]["status"] == "ok" for layers in got.values())


def test_a_blind_trace_is_unscored_and_forbidden_never_passes(tmp_path, agents):
    got = run_row(tmp_path, agents, "openllmetry", convention="gen_ai")
    for cid in ("lookup", "planted", "hello", "refund"):
        assert got[cid]["trace"]["status"] == "ok"
        for layer, entry in got[cid].items():
            if layer != "trace" and entry["verdict"] != "n/a":
                assert entry["verdict"] == "unscored", (cid, layer, entry)
                assert "openllmetry (traceloop.span.kind)" in entry["reason"], entry


# ------------------------------------------------------------------ the listener itself

def test_the_listener_takes_protobuf_json_and_gzip_and_refuses_the_rest():
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    tid, sid = "ab" * 16, "cd" * 8
    span = {"traceId": tid, "spanId": sid, "name": "execute_tool t", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                           {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}}]}
    as_json = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    import base64
    pb_span = dict(span, traceId=base64.b64encode(bytes.fromhex(tid)).decode(),
                   spanId=base64.b64encode(bytes.fromhex(sid)).decode())
    pb = ParseDict({"resourceSpans": [{"scopeSpans": [{"spans": [pb_span]}]}]}, ExportTraceServiceRequest()).SerializeToString()
    assert decode_export(pb, "application/x-protobuf")["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] == tid
    assert decode_export(gzip.compress(json.dumps(as_json).encode()), "application/json", "gzip") == as_json
    with pytest.raises(LookupError):
        decode_export(b"x", "text/plain")
    assert parse_address(None) == ("127.0.0.1", 4318) and parse_address("http://0.0.0.0:4318/v1/traces") == ("0.0.0.0", 4318)
    assert parse_address("localhost") is None and parse_address("https://h:1") is None

    src = OtlpHttpSource("127.0.0.1:0", "gen_ai", quiescence_ms=20, max_wait_s=0.3)
    try:
        url = f"http://{src.address}/v1/traces"

        def post(body: bytes, ctype: str, path: str = "/v1/traces") -> int:
            req = urllib.request.Request(f"http://{src.address}{path}", data=body, headers={"Content-Type": ctype})
            try:
                return urllib.request.urlopen(req, timeout=5).status
            except urllib.error.HTTPError as exc:
                return exc.code
        assert post(pb, "application/x-protobuf") == 200
        assert post(b"{not json", "application/json") == 400
        assert post(b"x", "text/plain") == 415
        assert post(b"{}", "application/json", "/v1/logs") == 404
        outcome = src.collect(tid)
        assert outcome.status == "ok" and [c["name"] for c in outcome.trajectory["tool_calls"]] == ["t"]
        missing = src.collect("ef" * 16)
        assert missing.status == "infra_incomplete" and f"over OTLP/HTTP at {src.address}" in missing.reason
        assert "refused" in missing.reason and url
    finally:
        src.close()


def test_preflight_names_a_bad_or_busy_listen_address(tmp_path):
    from assay.core.errors import AssayError
    from assay.traces.plan import trace_plan
    from assay.traces.collect import trace_branch
    block = {"source": "otlp-http", "correlation": "traceparent-echo"}
    assert trace_plan({"traces": block})["location"] == "127.0.0.1:4318"
    bad = trace_plan({"traces": {**block, "location": "localhost"}})
    assert "must be the host:port" in bad["refusal"] and "127.0.0.1:4318" in bad["refusal"]
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        where = f"127.0.0.1:{busy.getsockname()[1]}"
        with pytest.raises(AssayError) as err:
            trace_branch({"traces": {**block, "location": where}}, tmp_path, {})
    assert err.value.code == 3 and where in str(err.value)
    cfg = trace_branch({"traces": {**block, "location": "127.0.0.1:0", "convention": "auto"}}, tmp_path, {})
    try:
        assert cfg.collected and cfg.manifest()["listen"].startswith("127.0.0.1:")
    finally:
        cfg.close()


def test_make_demo_runs_with_otlp_http(tmp_path):
    """`make demo TRACES=otlp-http`: the example app POSTs its spans to the runner's listener."""
    from test_demo_e2e import copy_state, run_demo, run_dir_of
    state = copy_state(tmp_path)
    proc = run_demo(state, "--traces", "otlp-http")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "spans -> OTLP/HTTP 127.0.0.1:" in proc.stdout and ": PASS" in proc.stdout
    run_dir = run_dir_of(state)
    traces = json.loads((run_dir / "manifest.yaml").read_text())["traces"]
    assert traces["source"] == "otlp-http" and traces["collected"] and traces["listen"].startswith("127.0.0.1:")
    assert not (state / "work" / "helpdesk.otlp.jsonl").exists()
    view = cases_view(run_dir)
    assert len(list(view.glob("*/trajectory.json"))) == len(list(view.glob("*")))


def test_protobuf_without_the_package_is_refused_naming_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None)
    with pytest.raises(ImportError, match=re.escape(f"{sys.executable} -m pip install 'opentelemetry-proto>=")):
        decode_export(b"\x0a\x00", "application/x-protobuf")
    src = OtlpHttpSource("127.0.0.1:0", "gen_ai", quiescence_ms=10, max_wait_s=0.1)
    try:
        assert src.receive(b"\x0a\x00", "application/x-protobuf")[0] == 415
        assert f"{sys.executable} -m pip install 'opentelemetry-proto>=" in src.collect("ab" * 16).reason
        assert src.receive(b'{"resourceSpans": []}', "application/json") == (200, None)
    finally:
        src.close()
