"""A new user's first suite for a traced support bot, every check an absence: a greeting must not
start a return (`expect.tools.forbidden`), a status question must not reach the return tool
(`expect.authz.forbidden_tools`), a stranger's return is refused (`expect.authz.expect_refusal`,
met by "no tool call returned data"). An app that answers every message with the same sentence and
calls no tool passed all three and the first gate opened: nothing in the suite was shown to work.
The pipeline runs as the README says (convert_suite, make_plan, run_cases, gate as subprocesses from
another working dir) against a real HTTP app on its own loopback port writing OTLP spans to a file.
"""

from __future__ import annotations

import json
import threading

from fakeapp import Reply, run_as_a_user
from helpers import run_script, write_yaml
from otlp_util import agent_spans, parse_traceparent, write_spans

ADAPTER = """adapter_version: 1
app: {name: orderbot}
access_level: white
invocation:
  mode: http
  base_url: ${ORDERBOT_URL}
  endpoint: POST /v1/message
  request_body: '{"text": "<user turn>"}'
  response_body: '{"reply": "<answer>"}'
  identity_map: {user: X-Customer}
  health_check: {method: GET, path: /health, expect_status: [200]}
traces:
  source: otlp-file
  location: SPANS
  convention: gen_ai
  correlation: traceparent-echo
  completeness: {quiescence_ms: 200, max_wait_s: 10}
tools:
  - {name: get_order, side_effects: safe-live}
  - {name: start_return, side_effects: needs-mock}
"""
PROFILE = """profile_version: 1
stage: stable
architecture: {kind: tool_agent}
record_id_pattern: 'ORD-\\d{4}'
capability_matrix:
  answer_quality: {enabled: true}
"""
GREETING = "  tools: {forbidden: [start_return]}\n  answer: {must_not_contain: ['Traceback (most recent call last)']}\n"
STATUS = "  authz: {forbidden_tools: [start_return]}\n"
REFUSAL = "  authz: {expect_refusal: true}\n"
LOOKS_UP = "  tools: {subset: [get_order]}\n"


def case(cid: str, content: str, user: str, expect: str) -> str:
    return (f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
            f"identity: {{user: {user}}}\ninput:\n  messages:\n    - {{role: user, content: '{content}'}}\n"
            f"expect:\n{expect}")


def bot(spans_path, *, looks_up: bool):
    """A traced bot that answers one sentence to everything; `looks_up`: it calls get_order first."""
    lock = threading.Lock()

    def handler(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        trace_id, parent = parse_traceparent(req.headers.get("traceparent") or req.headers.get("Traceparent"))
        tools = [("get_order", {"order_id": "ORD-1001"}, {"order_id": "ORD-1001", "status": "shipped"})] if looks_up else []
        with lock:
            write_spans(spans_path, agent_spans(trace_id, "desk", tools, parent_span_id=parent))
        return Reply(200, {"reply": "Thanks for your message."})
    return handler


def pipeline(tmp_path, cases: dict[str, str], *, looks_up: bool = False):
    state = tmp_path / "app" / ".assay"
    spans = tmp_path / "spans.jsonl"
    spans.write_text("", encoding="utf-8")
    write_yaml(state / "adapter.yaml", ADAPTER.replace("SPANS", str(spans)))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    return run_as_a_user(tmp_path, state, bot(spans, looks_up=looks_up), "ORDERBOT_URL")


SUITE = {"c-00000001": case("c-00000001", "hello there", "alice", GREETING),
         "c-00000002": case("c-00000002", "what is the status of ORD-1002", "alice", STATUS),
         "c-00000003": case("c-00000003", "return ORD-1001 for me", "bob", REFUSAL)}


def test_a_suite_of_forbidden_tools_and_refusals_against_a_bot_that_does_nothing_closes_the_gate(tmp_path):
    run_dir, g = pipeline(tmp_path, SUITE)
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (summary["passes"], summary["failures"], summary["unscored"]) == (3, 0, 0), summary
    assert summary["passes_on_presence"]["on_presence"] == 0, summary["passes_on_presence"]
    assert g.rc == 1, g.stdout
    (line,) = [x for x in g.stdout.splitlines() if x.startswith("  gate closed:") and "passed only on" in x]
    assert "all 3 passing case(s) passed only on" in line and "e.g. c-00000001" in line
    for words in ("must_not_contain", "expect.tools.forbidden", "expect.authz"):   # what each absence was
        assert words in line, line
    assert "calls no tool" in line and "must_contain" in line
    j = run_script("gate", run_dir, "--json")   # the same decision on every surface
    assert j.rc == 1 and any("passed only on" in x for x in j.json["reasons"])


def test_one_case_that_needs_a_tool_call_is_evidence(tmp_path):
    # The bot that looks the order up passes a case that needs the call: the rule is not noise.
    run_dir, g = pipeline(tmp_path, {**SUITE, "c-00000004": case("c-00000004", "where is ORD-1001", "alice", LOOKS_UP)},
                          looks_up=True)
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert summary["passes_on_presence"]["on_presence"] >= 1, summary
    assert not any("passed only on" in x for x in g.stdout.splitlines()), g.stdout
