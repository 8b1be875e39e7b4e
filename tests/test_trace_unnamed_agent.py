"""A multi-agent app names one agent and forgets the other's name: its desk agent (`gen_ai.agent.name
= desk`) speaks first, then a second agent, whose `invoke_agent` span carries no `gen_ai.agent.name`,
writes the answer. The route from the trace is the agent whose LLM call ended last; the unnamed
agent's call was skipped and the desk agent's earlier call read as the answer, so a case expecting
the desk agent to answer passed while another agent had answered (a misroute, gate PASS). Now the
answer's call in an unnamed agent span leaves the route unread: routing is `unscored`, the reason
names the span and the attribute, and the gate stays closed. Same pipeline as
tests/test_trace_unread_tool_spans.py (subprocesses, a real HTTP app writing OTLP spans to a file).

An app whose answer carries a route field (`route_from_response`) that says another agent than the
trace's: the response's route is scored (it comes first, §5.2), and that used to be all: nothing
said the trace disagreed. Now the routing layer keeps the trace's route (`trace_route`) and a note,
`results.json` counts them and the gate says so.
"""

from __future__ import annotations

import json

from rundir_util import cases_view
from otlp_util import agent_spans, span_app
from test_trace_unread_tool_spans import ADAPTER, CASE_HEAD, pipeline

CASE = CASE_HEAD + """    - {role: user, content: 'hello there'}
expect:
  route: desk
  answer: {must_contain: [hello]}
"""


def two_agents(second: str | None, route: str | None = None):
    """The desk agent's turn (named), then the refunds agent's answers; `second` is the name its
    invoke_agent span carries (None: forgotten); `route`, a route field the answer carries."""
    def app(spans_path):
        def spans_of(trace_id, parent):
            t0 = 1_700_000_000_000_000_000
            desk = agent_spans(trace_id, "desk", parent_span_id=parent, t0=t0)
            refunds = agent_spans(trace_id, second, parent_span_id=parent, t0=t0 + 10_000_000)
            refunds[0]["name"] = "invoke_agent refunds"
            return desk + refunds
        return span_app(spans_path, spans_of, {"reply": "hello, refunds here", **({"route": route} if route else {})})
    return app


def test_an_answer_from_an_agent_without_a_name_is_no_route(tmp_path):
    routing, g = pipeline(tmp_path, "gen_ai", two_agents(None), CASE, layer="routing")
    assert routing == "unscored", g.stdout
    assert g.rc == 1 and "PASS" not in g.stdout.splitlines()[0], g.stdout
    assert "ran in agent span 'invoke_agent refunds', which has no agent name (gen_ai.agent.name)" in g.stdout, g.stdout
    assert "c-00000001" in g.stdout, g.stdout


def test_with_both_agents_named_the_misroute_fails(tmp_path):
    routing, g = pipeline(tmp_path, "gen_ai", two_agents("refunds"), CASE, layer="routing")
    assert routing == "fail", g.stdout
    assert g.rc == 1 and "gating failure" in g.stdout, g.stdout


def test_a_route_field_the_trace_contradicts_is_said(tmp_path):
    adapter = ADAPTER.replace("""  response_body: '{"reply": "<answer>"}'\n""",
                              """  response_body: '{"reply": "<answer>"}'\n  route_from_response: route\n""")
    routing, g = pipeline(tmp_path, "gen_ai", two_agents("refunds", route="desk"), CASE, layer="routing", adapter=adapter)
    assert routing == "pass", g.stdout   # the response's route is the one scored, as documented
    run_dir = next(p for p in (tmp_path / "app" / ".assay" / "reports").iterdir() if (p / "results.json").exists())
    verdict = json.loads((cases_view(run_dir) / "c-00000001" / "verdict.json").read_text())["layers"]["routing"]
    assert verdict["trace_route"] == {"observed": "refunds", "observed_via": "answering agent"}, verdict
    assert "route_from_response 'route' says 'desk', the trace (answering agent) says 'refunds'" in verdict["note"], verdict
    summary = json.loads((run_dir / "results.json").read_text())["summary"]["route_from_response"]
    assert summary["trace_disagrees"] == 1, summary
    assert "the trace named another agent than route_from_response 'route' in 1 of 1 answer(s)" in g.stdout, g.stdout
