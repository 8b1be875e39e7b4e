"""A new user names the wrong `traces.convention`: the app writes gen_ai spans (opentelemetry-util-genai's
`execute_tool`), the adapter says `openllmetry`. Its code calls `start_return`
before the model answers, so the chat span's finish reasons say `stop`. Read as declared, the tool
span was no span at all, the finish reasons showed an empty tool log, `expect.tools.forbidden:
[start_return]` passed and the gate read PASS over a forbidden call. Now a gen_ai tool span the
declared convention does not read makes the trace blind: the layer reads `unscored` naming the span
and `traces.convention`, and the gate stays closed. The pipeline runs as the README says (subprocesses,
a real HTTP app on its own port writing OTLP spans to a file).
"""

from __future__ import annotations

import json

from fakeapp import run_as_a_user
from helpers import write_yaml
from otlp_util import agent_spans, span_app

ADAPTER = """adapter_version: 1
app: {name: orderbot}
access_level: white
invocation:
  mode: http
  base_url: ${ORDERBOT_URL}
  endpoint: POST /v1/message
  request_body: '{"text": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
traces:
  source: otlp-file
  location: SPANS
  convention: CONVENTION
  correlation: traceparent-echo
  completeness: {quiescence_ms: 200, max_wait_s: 20}
tools:
  - {name: get_order, side_effects: safe-live}
  - {name: start_return, side_effects: needs-mock}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: tool_agent}
capability_matrix:
  answer_quality: {enabled: true}
"""
CASE_HEAD = """id: c-00000001
split: [full, smoke]
category: happy
test_type: MFT
template_id: null
input:
  messages:
"""   # one case, its first message and expect below
CASE = CASE_HEAD + """    - {role: user, content: 'where is my order'}
expect:
  tools: {forbidden: [start_return]}
  answer: {must_contain: [shipped]}
"""


def bot(spans_path):
    """Its code starts a return (a gen_ai execute_tool span), then the model answers (finish: stop)."""
    def spans_of(trace_id, parent):
        spans = agent_spans(trace_id, "desk", [("start_return", {"order_id": "ORD-1001"}, {"ok": True})],
                            parent_span_id=parent)
        for s in spans:
            for attr in s["attributes"]:
                if attr["key"] == "gen_ai.response.finish_reasons":
                    attr["value"] = {"arrayValue": {"values": [{"stringValue": "stop"}]}}
        return spans
    return span_app(spans_path, spans_of, {"reply": "Your order has shipped."})


def bot_tracing_one_tool_of_two(spans_path):
    """Its model asks for get_order and start_return in one turn (the chat span's output messages hold
    both calls: content capture on); its code wraps get_order in an execute_tool span and forgets
    start_return's, which runs untraced."""
    def spans_of(trace_id, parent):
        spans = agent_spans(trace_id, "desk", [("get_order", {"order_id": "ORD-1001"}, {"status": "shipped"})],
                            parent_span_id=parent)
        _, chat, tool = spans
        asked = [{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "call_1", "name": "get_order", "arguments": {"order_id": "ORD-1001"}},
            {"type": "tool_call", "id": "call_2", "name": "start_return", "arguments": {"order_id": "ORD-1001"}}]}]
        chat["attributes"].append({"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(asked)}})
        tool["attributes"].append({"key": "gen_ai.tool.call.id", "value": {"stringValue": "call_1"}})
        return spans
    return span_app(spans_path, spans_of, {"reply": "Your order has shipped."})


def pipeline(tmp_path, convention: str, app=bot, case: str = CASE, layer: str = "trajectory", adapter: str = ADAPTER):
    state = tmp_path / "app" / ".assay"
    spans = tmp_path / "spans.jsonl"
    spans.write_text("", encoding="utf-8")
    write_yaml(state / "adapter.yaml", adapter.replace("SPANS", str(spans)).replace("CONVENTION", convention))
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-00000001.yaml", case)
    run_dir, g = run_as_a_user(tmp_path, state, app(spans), "ORDERBOT_URL")
    (row,) = json.loads((run_dir / "results.json").read_text())["cases"]
    return row["layers"][layer], g


def test_a_forbidden_tool_in_a_gen_ai_span_read_as_openllmetry_is_not_a_pass(tmp_path):
    trajectory, g = pipeline(tmp_path, "openllmetry")
    assert trajectory == "unscored", g.stdout
    assert g.rc == 1, g.stdout
    assert "PASS" not in g.stdout.splitlines()[0], g.stdout
    assert "'execute_tool start_return'" in g.stdout and "convention openllmetry does not read" in g.stdout, g.stdout
    assert "set traces.convention to gen_ai" in g.stdout, g.stdout


def test_the_right_convention_fails_the_forbidden_call(tmp_path):
    trajectory, g = pipeline(tmp_path, "gen_ai")
    assert trajectory == "fail", g.stdout
    assert g.rc == 1 and "gating failure" in g.stdout, g.stdout


def test_a_forbidden_tool_the_app_forgot_to_trace_is_not_a_pass(tmp_path):
    """The app traces get_order's execution but not start_return's; the model's request for
    start_return is in the chat span's output messages. The tool spans were taken as the whole tool
    log: the forbidden call was missing and the gate read PASS. Now a request no tool span shows
    makes the tool log blind: `unscored` naming the call, and the gate stays closed."""
    trajectory, g = pipeline(tmp_path, "gen_ai", bot_tracing_one_tool_of_two)
    assert trajectory == "unscored", g.stdout
    assert g.rc == 1 and "PASS" not in g.stdout.splitlines()[0], g.stdout
    assert "('start_return' (call call_2)) have no execute_tool span (gen_ai.tool.name)" in g.stdout, g.stdout
    assert "c-00000001" in g.stdout, g.stdout
