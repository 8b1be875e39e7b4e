"""No secret in any artifact (docs/runner-contract.md, "Security"): an app that echoes the resolved
`${VAR}` token into every place a value can come from (the route field, data.value, the
answer, a response header, a 5xx body, trace span attributes, an exception message) leaves
no trace of it in the run dir, run.log, the reports, JUnit, the GitHub summary or stdout.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from assay.core import writer
from assay.traces.otlp_writer import new_span_id, new_trace_id, parse_traceparent, span, write_spans
from helpers import run_script
from rundir_util import cases_view

RUN_ID = "smoke-20261129T101500Z"
TOKEN = "tok-SeCrEt-4f9a1c77e0"   # what $ECHO_API_KEY holds


class EchoApp:
    """Puts the bearer token it receives wherever the message asks."""

    def __init__(self, span_file: Path) -> None:
        self.span_file = span_file
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self._send(200, {"ok": True}, {})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                status, payload, headers = app.handle(body.get("message", ""), token, self.headers.get("traceparent"))
                self._send(status, payload, headers)

            def _send(self, status, payload, headers):
                data = json.dumps(payload).encode() if not isinstance(payload, str) else payload.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def handle(self, message: str, token: str, traceparent: str | None):
        parsed = parse_traceparent(traceparent)
        trace_id, caller = parsed if parsed else (new_trace_id(), None)
        agent = "billing"
        tools = [("lookup", {"q": "x"}, {"ok": True})]
        doc: dict = {"answer": "fine", "route": "billing"}
        headers: dict = {}
        if message == "route":
            doc["route"] = f"billing {token}"
        elif message == "value":
            doc["data"] = {"value": token}
        elif message == "number":
            doc["data"] = {"value": {"nested": [token, {token: 1}]}}
        elif message == "answer":
            doc["answer"] = f"your key is {token}!"
        elif message == "header":
            headers = {"X-Echo": token, "Set-Cookie": f"k={token}"}
        elif message == "trace":
            doc.pop("route")
            agent = f"agent-{token}"
            tools = [("lookup", {"key": token}, {"secret": token}), ("lookup", {"key": token}, {"secret": token})]
        elif message == "fail":
            return 500, f'{{"error": "bad key {token}"}}', {"X-Why": token}
        root_id, t = new_span_id(), 1_700_000_000_000_000_000
        spans = [span(trace_id=trace_id, parent_span_id=root_id, operation="execute_tool", tool=name, arguments=a,
                      result=r, start_ns=t + 10_000 * (i + 1), end_ns=t + 10_000 * (i + 1) + 5000,
                      attributes={"app.note": f"saw {token}"})
                 for i, (name, a, r) in enumerate(tools)]
        spans.append(span(trace_id=trace_id, span_id=root_id, parent_span_id=caller, operation="invoke_agent",
                          agent=agent, start_ns=t, end_ns=t + 100_000))
        write_spans(self.span_file, spans)
        return 200, doc, headers

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def _case(cid, message, expect, **extra):
    doc = {"id": cid, "split": ["smoke"], "category": "happy", "test_type": "MFT", "template_id": None,
           "input": {"messages": [{"role": "user", "content": message}]}, "expect": expect}
    doc.update(extra)
    return doc


CASES = [
    _case("c-route", "route", {"route": "billing"}),
    _case("c-value", "value", {"result": {"scalar": 42}}),
    _case("c-object", "number", {"result": {"scalar": 42}}),
    _case("c-answer", "answer", {"answer": {"must_contain": ["nothing like it"]}}),
    _case("c-header", "header", {"answer": {"must_contain": ["fine"]}}),
    _case("c-trace", "trace", {"route": "billing", "tools": {"order": ["search"], "order_mode": "exact"},
                               "args": {"lookup": {"key": "other"}}}),
    _case("c-fail", "fail", {"answer": {"must_contain": ["fine"]}}),
]


def _where(root: Path, needle: bytes) -> list[str]:
    hits = []
    for p in sorted(root.rglob("*")):
        if p.is_file() and needle in p.read_bytes():
            hits.append(str(p.relative_to(root)))
    return hits


@pytest.fixture(scope="module")
def echoed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("secrets")
    span_file = tmp / "spans.jsonl"
    span_file.touch()
    app = EchoApp(span_file)
    state = tmp / "app" / ".assay"
    (state / "reports").mkdir(parents=True)
    adapter = {
        "adapter_version": 1,
        "invocation": {
            "mode": "http", "base_url": app.url, "endpoint": "POST /chat",
            "auth": {"type": "bearer", "token_env": "ECHO_API_KEY"},
            "request_body": '{"message": "<user turn>", "session": "<uuid>"}',
            "response_body": '{"answer": "<answer>"}', "route_from_response": "route",
            "result_from_response": "data.value",
            "health_check": {"method": "GET", "path": "/healthz", "expect_status": [200]},
            "timeout_s": 10, "max_concurrency": 2,
        },
        "traces": {"source": "otlp-file", "location": str(span_file), "convention": "gen_ai",
                   "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 30, "max_wait_s": 2}},
        "data": {"may_contain_pii": False},
    }
    plan = {"plan_version": 1, "run_id": RUN_ID, "mode": "smoke", "k": 2, "gate": "soft",
            "selecting_split": "smoke", "paths": {"state_dir": str(state)}, "adapter": adapter,
            "capability_matrix": {}, "cases": CASES, "execution": {"max_attempts": 2, "backoff_s": [0]}}
    plan_path = tmp / "plan.json"
    plan_path.write_text(json.dumps(plan))
    out = state / "reports" / RUN_ID
    env = {"ECHO_API_KEY": TOKEN, "GITHUB_STEP_SUMMARY": str(tmp / "summary.md")}
    outputs = {}
    try:
        outputs["run"] = run_script("run_cases", "--plan", plan_path, "--out", out, "--progress", "always", env=env)
    finally:
        app.stop()
    outputs["verify"] = run_script("run_cases", "--verify", out, env=env)
    outputs["gate_json"] = run_script("gate", out, "--json", "--junit", tmp / "junit.xml", "--github-summary", env=env)
    outputs["draft"] = run_script("draft_report", out, env=env)
    outputs["html"] = run_script("md_to_html", out / "report.md", out / "report.html", env=env)
    return tmp, out, outputs


def test_the_app_really_echoed_the_token(echoed):
    """The test would prove nothing if the token never came back: the run saw it and redacted it."""
    tmp, out, outputs = echoed
    assert outputs["run"].rc == 0, outputs["run"].stdout
    route = json.loads((cases_view(out) / "c-route" / "verdict.json").read_text())["layers"]["routing"]
    assert route["observed"] == "billing <redacted>"
    assert (cases_view(out) / "c-answer" / "answer.txt").read_text() == "your key is <redacted>!"
    actual = json.loads((cases_view(out) / "c-value" / "actual.json").read_text())
    assert "<redacted>" in json.dumps(actual)
    traj = (cases_view(out) / "c-trace" / "trajectory.json").read_text()
    assert "<redacted>" in traj
    assert outputs["verify"].rc == 0, outputs["verify"].stdout


def test_no_byte_of_the_token_anywhere(echoed):
    tmp, out, outputs = echoed
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert (tmp / "junit.xml").is_file() and (tmp / "summary.md").is_file()
    hits = [h for h in _where(tmp, TOKEN.encode()) if h != "spans.jsonl"]   # the app's own span file
    assert hits == [], f"the token reached: {hits}"
    for name, res in outputs.items():
        assert TOKEN not in res.stdout and TOKEN not in res.stderr, name


def test_outputs_are_well_formed_after_redaction(echoed):
    tmp, out, outputs = echoed
    assert outputs["gate_json"].rc in (0, 1)
    assert outputs["draft"].rc == 0 and outputs["html"].rc == 0, outputs["draft"].stdout + outputs["html"].stdout
    json.loads(outputs["gate_json"].stdout)
    for line in (out / "run.log").read_text().splitlines():
        json.loads(line)


# ---------------------------------------------------------------- the writer, in-process
def test_redact_value_is_structural():
    writer.register_secrets(["s3cr3t-value", "12345678", "ab"])
    try:
        doc = {"k s3cr3t-value": ["x s3cr3t-value y", 1234567890, 12.5, True, None],
               "n": {"deep": "s3cr3t-value"}}
        red = writer.redact_value(doc)
        text = json.dumps(red)
        assert "s3cr3t-value" not in text and "12345678" not in text
        assert red["n"]["deep"] == "<redacted>" and red["k <redacted>"][2] == 12.5
        assert writer.redact_text("ab ab") == "ab ab"   # shorter than MIN_SECRET_LEN: not a secret
        clean = {"a": 1}
        assert writer.redact_value(clean) is clean       # the fast path returns the value itself
    finally:
        writer.register_secrets([])


def test_json_escaped_forms_are_redacted(tmp_path):
    secret = 'q"uote\\and-ünï'
    writer.register_secrets([secret])
    try:
        writer.write_bytes(tmp_path / "a.txt", json.dumps({"x": secret}).encode())
        writer.write_bytes(tmp_path / "b.txt", json.dumps({"x": secret}, ensure_ascii=False).encode())
        for name in ("a.txt", "b.txt"):
            data = (tmp_path / name).read_text()
            assert json.loads(data)["x"] == "<redacted>", data
    finally:
        writer.register_secrets([])


FN_APP = '''
def handle(body):
    key = body["key"]
    if body["message"] == "boom":
        raise ValueError(f"bad key {key}")
    return {"text": f"hello, your key is {key}", "status": 200}
'''


def test_function_mode_exceptions_and_answers_are_redacted(tmp_path):
    """An exception message (infra_reason, attempt_log, run.log `retry`) and an answer that echo
    the secret a function-mode body carried."""
    state = tmp_path / "fnapp" / ".assay"
    (state / "reports").mkdir(parents=True)
    (tmp_path / "fnapp" / "assay_echo_fn.py").write_text(FN_APP)
    adapter = {"adapter_version": 1, "invocation": {
        "mode": "function", "entrypoint": "assay_echo_fn:handle",
        "request_body": '{"message": "<user turn>", "key": "${ECHO_FN_KEY}"}'},
        "traces": {"source": "none"}, "data": {"may_contain_pii": False}}
    cases = [_case("c-boom", "boom", {"answer": {"must_contain": ["x"]}}),
             _case("c-hello", "hello", {"answer": {"must_contain": ["nope"]}})]
    plan = {"plan_version": 1, "run_id": RUN_ID, "mode": "smoke", "k": 1, "gate": "soft",
            "selecting_split": "smoke", "paths": {"state_dir": str(state)}, "adapter": adapter,
            "capability_matrix": {}, "cases": cases, "execution": {"max_attempts": 2, "backoff_s": [0]}}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    out = state / "reports" / RUN_ID
    env = {"ECHO_FN_KEY": TOKEN}
    res = run_script("run_cases", "--plan", tmp_path / "plan.json", "--out", out, env=env)
    assert res.rc == 0, res.stdout
    boom = json.loads((cases_view(out) / "c-boom" / "verdict.json").read_text())
    assert boom["verdict"] == "infra_error" and "bad key <redacted>" in boom["infra_reason"]
    assert "bad key <redacted>" in (out / "run.log").read_text()
    assert (cases_view(out) / "c-hello" / "answer.txt").read_text() == "hello, your key is <redacted>"
    gate = run_script("gate", out, "--json", env=env)
    hits = _where(tmp_path, TOKEN.encode())
    assert hits == [] and TOKEN not in res.stdout + res.stderr + gate.stdout + gate.stderr, hits
