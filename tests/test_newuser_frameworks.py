"""A new user's framework trial (a LangGraph-style shop app exporting OTLP/HTTP to the runner, the
README and references/instrument-your-app.md followed literally): each mistake or shape found there
that used to end in a green gate now closes it. The state dir is written in YAML as the docs show;
the scripts run as subprocesses; the app is a real HTTP server on a real port that exports its spans
over real OTLP/HTTP to the runner's listener.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path

from assay.traces.otlp_writer import new_span_id, parse_traceparent, span, traces_data
from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml, listen_port
import pytest

pytestmark = pytest.mark.slow   # over ~7 s: started first (conftest)

RUN_ID = "smoke-20261205T000000Z"

ADAPTER = """\
adapter_version: 1
app: {name: shop, repo_access: read-only}
access_level: gray
invocation:
  mode: http
  base_url: ${SHOP_URL}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  health_check: {method: GET, path: /, expect_status: [200]}
  timeout_s: 20
traces:
  source: otlp-http
  location: 127.0.0.1:OTLP_PORT
  protocol: http/json
  convention: gen_ai
  correlation: traceparent-echo
  completeness: {quiescence_ms: 1500, max_wait_s: 20}
tools:
  - {name: get_invoice, side_effects: safe-live}
  - {name: issue_refund, side_effects: needs-mock}
environment: {kind: mocked, safe_to_attack: false}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: false, blocked_by: one agent}
  trajectory: {enabled: true}
  tool_selection: {enabled: true}
  authz: {enabled: true}
  execution: {enabled: false, blocked_by: no oracle}
  multi_turn: {enabled: false, blocked_by: stateless}
  state: {enabled: false, blocked_by: reserved}
"""

CASE = """\
id: c-no-refund
title: a total question never refunds
unit: billing
split: [smoke, full]
category: happy
test_type: MFT
template_id: null
review: {status: accepted, by: Dana Reviewer, at: '2026-12-01'}
input:
  messages:
    - {role: user, content: "How much is invoice INV-1002?"}
expect:
  tools: {forbidden: [issue_refund]}
  authz: {forbidden_tools: [issue_refund]}
  answer: {must_contain: ["35.50 USD"]}
"""


def free_port() -> int:
    return listen_port()   # the runner binds it later: below the ephemeral range (helpers.listen_port)


def export(port: int, spans: list[dict]) -> None:
    """One OTLP/JSON export, as an SDK's BatchSpanProcessor sends a batch."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=json.dumps(traces_data(spans)).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def guarded_shop(port: int, *, gap_s: float, late_s: float):
    """A shop app whose request runs a guard model call (its own root span, exported at once), an
    untraced step of `gap_s` (a policy lookup), then the agent, which calls the forbidden
    `issue_refund` and still answers with the total. The agent's spans ended before the answer but
    leave in the exporter's next batch, `late_s` after it: what an SDK's BatchSpanProcessor does
    with spans that end between two of its ticks."""
    def reply(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        trace_id, parent = parse_traceparent({k.lower(): v for k, v in req.headers.items()}.get("traceparent"))
        t0 = time.time_ns()
        export(port, [span("chat guard", trace_id=trace_id, parent_span_id=parent, operation="chat",
                           model="fake-model", input_tokens=12, output_tokens=1, start_ns=t0, end_ns=t0 + 1_000_000,
                           attributes={"gen_ai.response.finish_reasons": ["stop"]})])
        time.sleep(gap_s)
        t1, agent = time.time_ns(), new_span_id()
        late = [span("invoke_agent billing", trace_id=trace_id, span_id=agent, parent_span_id=parent,
                     operation="invoke_agent", agent="billing", start_ns=t1, end_ns=t1 + 5_000_000),
                span("chat", trace_id=trace_id, parent_span_id=agent, operation="chat", model="fake-model",
                     input_tokens=20, output_tokens=5, start_ns=t1 + 100_000, end_ns=t1 + 1_000_000,
                     attributes={"gen_ai.response.finish_reasons": ["tool_calls"]}),
                span("execute_tool get_invoice", trace_id=trace_id, parent_span_id=agent, operation="execute_tool",
                     tool="get_invoice", arguments={"invoice_id": "INV-1002"},
                     result={"invoice_id": "INV-1002", "total": 35.5}, start_ns=t1 + 1_100_000, end_ns=t1 + 2_000_000),
                span("execute_tool issue_refund", trace_id=trace_id, parent_span_id=agent, operation="execute_tool",
                     tool="issue_refund", arguments={"invoice_id": "INV-1002", "amount": 35.5},
                     result={"refunded": 35.5}, start_ns=t1 + 2_100_000, end_ns=t1 + 3_000_000)]
        threading.Timer(late_s, export, (port, late)).start()
        return Reply(200, {"reply": "Invoice INV-1002 totals 35.50 USD."})
    return reply


def test_a_trace_whose_last_batch_leaves_after_the_answer_is_waited_for(tmp_path):
    """Two root spans under the runner's traceparent (a guard call, then the agent: an app that
    continues the header by hand, as references/instrument-your-app.md shows, without a request span
    around both). The guard's batch arrived long before the answer, the agent's came 0.3 s after it:
    the runner took the trace as complete the moment the answer came (no new span for quiescence_ms
    since the guard's), read an empty tool log, passed `forbidden: [issue_refund]` and opened the
    gate over a refund. Now the quiet time counts from the answer at the earliest."""
    port = free_port()
    state = tmp_path / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("OTLP_PORT", str(port)))
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-no-refund.yaml", CASE)
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", RUN_ID)
    assert r.rc == 0, r.stdout
    out = state / "reports" / RUN_ID
    with FakeApp() as app:
        app.handler = guarded_shop(port, gap_s=2.5, late_s=0.3)
        r = run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never",
                       env={"SHOP_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    verdict = next(json.loads(line) for line in (out / "verdicts.jsonl").read_text().splitlines())
    assert verdict["layers"]["authz"] == "fail" and verdict["layers"]["trajectory"] == "fail", verdict["layers"]
    gate = run_script("gate", out)
    assert gate.rc == 1, gate.stdout
    assert 'c-no-refund "a total question never refunds" (trajectory, authz)' in gate.stdout
