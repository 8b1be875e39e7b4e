"""Spans of case A read as case B's: an app that answers with a stored trace id (the previous
request's) under `traces.correlation: response-field:trace`. The second case was scored on the first
case's trace: its own forbidden tool call was never seen, both cases passed and the gate read PASS.
Now a trace id another case of the run was already read with is not this case's evidence: the case is
infra_incomplete naming the other case and the response field, and the gate closes. The pipeline runs
as the README says (subprocesses, a real HTTP app on its own port writing OTLP spans to a file).
"""

from __future__ import annotations

import json
import threading

from fakeapp import Reply, run_as_a_user
from helpers import write_yaml
from otlp_util import agent_spans, new_trace_id, write_spans

ADAPTER = """adapter_version: 1
app: {name: orderbot}
access_level: white
invocation:
  mode: http
  base_url: ${ORDERBOT_URL}
  endpoint: POST /v1/message
  request_body: '{"text": "<user turn>"}'
  response_body: '{"reply": "<answer>", "trace": "<trace id>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  max_concurrency: 1
traces:
  source: otlp-file
  location: SPANS
  convention: gen_ai
  correlation: response-field:trace
  completeness: {quiescence_ms: 200, max_wait_s: 20}
tools:
  - {name: get_order, side_effects: safe-live}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: tool_agent}
capability_matrix:
  answer_quality: {enabled: true}
"""


def case(cid: str, text: str) -> str:
    return (f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
            f"input:\n  messages:\n    - {{role: user, content: '{text}'}}\n"
            "expect:\n  tools: {forbidden: [get_order]}\n  answer: {must_contain: [shipped]}\n")


def bot(spans_path, *, stale: bool):
    """Each request gets a trace of its own; the app looks the order up when asked to. `stale`: the
    response carries the trace id it stored from the previous request (the bug), else its own."""
    lock, last = threading.Lock(), {}

    def handler(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        text = json.loads(req.body)["text"]
        trace_id = new_trace_id()
        tools = [("get_order", {"order_id": "ORD-1"}, {"status": "shipped"})] if "look" in text else []
        with lock:
            write_spans(spans_path, agent_spans(trace_id, "desk", tools))
            answered, last["id"] = (last.get("id", trace_id) if stale else trace_id), trace_id
        return Reply(200, {"reply": "It has shipped.", "trace": answered})
    return handler


def pipeline(tmp_path, *, stale: bool):
    state = tmp_path / "app" / ".assay"
    spans = tmp_path / "spans.jsonl"
    spans.write_text("", encoding="utf-8")
    write_yaml(state / "adapter.yaml", ADAPTER.replace("SPANS", str(spans)))
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-00000001.yaml", case("c-00000001", "hello"))
    write_yaml(state / "datasets" / "c-00000002.yaml", case("c-00000002", "please look my order up"))
    run_dir, g = run_as_a_user(tmp_path, state, bot(spans, stale=stale), "ORDERBOT_URL")
    cases = {c["case_id"]: c for c in json.loads((run_dir / "results.json").read_text())["cases"]}
    return cases, g


def test_a_case_answered_with_another_requests_trace_id_is_not_scored_on_it(tmp_path):
    cases, g = pipeline(tmp_path, stale=True)
    assert cases["c-00000001"]["verdict"] == "pass"
    assert cases["c-00000002"]["verdict"] == "infra_incomplete", cases["c-00000002"]
    assert g.rc == 1, g.stdout
    assert "was already read for case c-00000001" in g.stdout and "response field 'trace'" in g.stdout, g.stdout


def test_each_request_answered_with_its_own_trace_id_is_scored(tmp_path):
    cases, g = pipeline(tmp_path, stale=False)   # the control: the forbidden call is seen and fails
    assert cases["c-00000001"]["verdict"] == "pass"
    assert cases["c-00000002"]["layers"]["trajectory"] == "fail", cases["c-00000002"]
    assert g.rc == 1 and "already read" not in g.stdout, g.stdout
