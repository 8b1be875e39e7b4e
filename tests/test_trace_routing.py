"""The trace-observed route (assay.traces.routing) and the handoff spans each convention reads.

The real frameworks' spans are exercised end to end by tests/test_handoff_frameworks_e2e.py; these
pin each rule on small span trees shaped like theirs, in-process.
"""

from __future__ import annotations

import json

from assay.run.layers import RepeatEvidence, ScoreContext, score_repeat
from assay.traces.otlp_writer import new_span_id, new_trace_id, span, traces_data
from assay.traces.normalize import incomplete_reason, normalize_trace
from assay.traces.routing import arguments_from_requests, handling_agent
from assay.traces.collect import COMPLETE

T = 1_700_000_000_000_000_000


def at(i: int) -> dict:
    return {"start_ns": T + i * 1_000_000, "end_ns": T + i * 1_000_000 + 500_000}


def norm(spans: list[dict], tid: str, convention: str) -> dict:
    return normalize_trace(traces_data(spans), tid, convention=convention)


def oi(tid, name, kind, parent=None, sid=None, i=0, **attrs):
    return span(name, trace_id=tid, span_id=sid, parent_span_id=parent,
                attributes={"openinference.span.kind": kind, **attrs}, **at(i))


def test_the_route_follows_handoffs_and_skips_returns():
    def traj(*hops, llm=()):
        return {"handoffs": [{"from": f, "to": t} for f, t in hops],
                "llm_calls": [{"agent": a, "end_ns": n} for a, n in llm], "agents": [{"name": "triage"}]}
    assert handling_agent(traj(("triage", "billing"))) == ("billing", "handoff")
    assert handling_agent(traj(("triage", "billing"), ("billing", "orders"))) == ("orders", "handoff")
    # a worker handing back to its supervisor is a return: the worker handled it
    assert handling_agent(traj(("supervisor", "orders"), ("orders", "supervisor"),
                               llm=[("supervisor", 9)])) == ("orders", "handoff")
    assert handling_agent(traj(llm=[("triage", 1), ("orders", 5), ("triage", 3)])) == ("orders", "answering agent")
    assert handling_agent(traj()) == ("triage", "first agent")
    assert handling_agent({"agents": [{"name": None}], "llm_calls": [{"agent": None}]}) == (None, None)
    assert handling_agent(None) == (None, None)


def test_gen_ai_agent_handoff_span_is_followed_and_the_workflow_span_is_no_agent():
    tid, wf, tri, bil = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    spans = [span("Agent workflow", trace_id=tid, span_id=wf, operation="invoke_agent", start_ns=T, end_ns=T + 10**9),
             span(trace_id=tid, span_id=tri, parent_span_id=wf, operation="invoke_agent", agent="Triage agent", **at(1)),
             span(trace_id=tid, parent_span_id=tri, operation="chat", model="m", **at(2)),
             span("agent_handoff", trace_id=tid, parent_span_id=tri, operation="agent_handoff", **at(3), attributes={
                 "gen_ai.handoff.from_agent": "Triage agent", "gen_ai.handoff.to_agent": "Billing agent"}),
             span(trace_id=tid, span_id=bil, parent_span_id=wf, operation="invoke_agent", agent="Billing agent", **at(4)),
             span(trace_id=tid, parent_span_id=bil, operation="chat", model="m", **at(5))]
    out = norm(spans, tid, "gen_ai")
    assert out["status"] == "ok"
    traj = out["trajectory"]
    assert [h["to"] for h in traj["handoffs"]] == ["Billing agent"] and traj["tool_calls"] == []
    assert handling_agent(traj) == ("Billing agent", "handoff")


def test_openinference_handoff_tool_span_without_a_name_is_a_handoff_not_a_broken_trace():
    tid, wf, tri, bil = new_trace_id(), new_span_id(), new_span_id(), new_span_id()
    spans = [oi(tid, "Agent workflow", "AGENT", sid=wf),
             oi(tid, "Triage agent", "AGENT", wf, tri, 1, **{"agent.name": "Triage agent"}),
             oi(tid, "generation", "LLM", tri, i=2),
             oi(tid, "handoff to Billing agent", "TOOL", tri, i=3, **{"input.value": "Triage agent",
                                                                     "output.value": "Billing agent"}),
             oi(tid, "Billing agent", "AGENT", wf, bil, 4, **{"agent.name": "Billing agent"}),
             oi(tid, "generation", "LLM", bil, i=5),
             oi(tid, "get_invoice", "TOOL", bil, i=6, **{"tool.name": "get_invoice", "input.value": '{"invoice_id": "INV-7"}'})]
    out = norm(spans, tid, "auto")
    assert out["status"] == "ok" and "unnamed_tool_spans" not in out["checks"], out["checks"]
    traj = out["trajectory"]
    assert [t["name"] for t in traj["tool_calls"]] == ["get_invoice"]
    assert traj["handoffs"][0]["from"] == "Triage agent" and handling_agent(traj) == ("Billing agent", "handoff")
    assert "Agent workflow" not in [a["name"] for a in traj["agents"]]
    # a tool span with no name that is not a handoff still makes the trace incomplete
    broken = norm(spans + [oi(tid, "mystery", "TOOL", bil, i=7)], tid, "auto")
    assert broken["status"] == "incomplete" and broken["checks"]["unnamed_tool_spans"] == 1
    assert incomplete_reason(broken) == "1 tool span(s) without a tool name (tool.name / gen_ai.tool.name)"


def test_a_handoff_to_an_agent_that_calls_no_tool_leaves_an_empty_tool_log_that_is_seen():
    tid, tri, bil = new_trace_id(), new_span_id(), new_span_id()
    asks = {"llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "transfer_to_billing_agent"}
    spans = [oi(tid, "Triage agent", "AGENT", sid=tri, **{"agent.name": "Triage agent"}),
             oi(tid, "generation", "LLM", tri, i=1, **asks),
             oi(tid, "handoff to Billing agent", "TOOL", tri, i=2),
             oi(tid, "Billing agent", "AGENT", sid=bil, i=3, **{"agent.name": "Billing agent"}),
             oi(tid, "generation", "LLM", bil, i=4, **{"llm.output_messages.0.message.role": "assistant"})]
    traj = norm(spans, tid, "openinference")["trajectory"]
    assert traj["tool_calls"] == [] and traj["tool_log"]["seen"] is True, traj["tool_log"]
    # gen_ai: the LLM's request for the handoff tool is the handoff, not a requested tool call
    tid = new_trace_id()
    out_msgs = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "transfer_to_billing_agent",
                                                            "id": "c1", "arguments": {}}]}])
    g = [span(trace_id=tid, span_id=tri, operation="invoke_agent", agent="Triage agent", **at(0)),
         span(trace_id=tid, parent_span_id=tri, operation="chat", model="m", **at(1),
              attributes={"gen_ai.output.messages": out_msgs}),
         span("agent_handoff", trace_id=tid, parent_span_id=tri, operation="agent_handoff", **at(2), attributes={
             "gen_ai.handoff.from_agent": "Triage agent", "gen_ai.handoff.to_agent": "Billing agent"})]
    assert norm(g, tid, "gen_ai")["trajectory"]["tool_calls"] == []


def test_openinference_hidden_inputs_and_outputs_are_not_names_or_arguments():
    """OPENINFERENCE_HIDE_INPUTS / _OUTPUTS write `__REDACTED__`: the handoff target comes from the
    span name, and a redacted tool input is arguments not captured (unscored), never a value."""
    tid, tri, bil = new_trace_id(), new_span_id(), new_span_id()
    hidden = {"input.value": "__REDACTED__", "output.value": "__REDACTED__"}
    spans = [oi(tid, "Triage agent", "AGENT", sid=tri, **{"agent.name": "Triage agent"}),
             oi(tid, "generation", "LLM", tri, i=1),
             oi(tid, "handoff to Billing agent", "TOOL", tri, i=2, **hidden),
             oi(tid, "Billing agent", "AGENT", sid=bil, i=3, **{"agent.name": "Billing agent"}),
             oi(tid, "generation", "LLM", bil, i=4),
             oi(tid, "get_invoice", "TOOL", bil, i=5, **{"tool.name": "get_invoice"}, **hidden)]
    traj = norm(spans, tid, "openinference")["trajectory"]
    assert handling_agent(traj) == ("Billing agent", "handoff") and traj["handoffs"][0]["from"] == "Triage agent"
    [call] = traj["tool_calls"]
    assert not call["arguments_captured"] and not call["result_captured"]


def test_an_openinference_agent_named_by_its_span_that_calls_the_llm_is_an_agent():
    tid, root = new_trace_id(), new_span_id()
    spans = [oi(tid, "support", "AGENT", sid=root), oi(tid, "ChatCompletion", "LLM", root, i=1)]
    assert handling_agent(norm(spans, tid, "openinference")["trajectory"]) == ("support", "answering agent")


def lg_meta(node: str, ns: str | None = None, **extra) -> str:
    meta = {"ls_integration": "langgraph", "langgraph_node": node, **extra}
    if ns:
        meta["checkpoint_ns"] = ns
    return json.dumps(meta)


def test_langgraph_supervisor_names_and_transfer_spans():
    tid, root, sup, sup_agent, orders, call, inner = (new_trace_id(), *(new_span_id() for _ in range(6)))
    llm_call = {"llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup_order",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"order_id": "ORD-12"}'}
    spans = [oi(tid, "LangGraph", "CHAIN", sid=root),
             oi(tid, "supervisor", "CHAIN", root, sup, 1, metadata=lg_meta("supervisor")),
             oi(tid, "agent", "AGENT", sup, sup_agent, 2, metadata=lg_meta("agent", "supervisor:1")),
             oi(tid, "ChatOpenAI", "LLM", sup_agent, i=3, metadata=lg_meta("agent", "supervisor:1")),
             # seen as a TOOL span here; some versions make it an AGENT span: a handoff either way
             oi(tid, "transfer_to_orders", "AGENT", sup, i=4,
                metadata=lg_meta("tools", "supervisor:1", __handoff_destination="orders")),
             oi(tid, "orders", "CHAIN", root, orders, 5, metadata=lg_meta("orders")),
             oi(tid, "call_agent", "AGENT", orders, call, 6, metadata=lg_meta("orders")),
             oi(tid, "agent", "AGENT", call, inner, 7, metadata=lg_meta("agent", "orders:2")),
             oi(tid, "ChatOpenAI", "LLM", inner, i=8, metadata=lg_meta("agent", "orders:2"), **llm_call),
             oi(tid, "lookup_order", "TOOL", call, i=9, metadata=lg_meta("tools", "orders:2"),
                **{"tool.name": "lookup_order", "input.value": "ORD-12", "output.value": json.dumps(
                    {"type": "tool", "data": {"content": '{"status": "shipped"}', "tool_call_id": "c1"}})}),
             oi(tid, "ChatOpenAI", "LLM", sup_agent, i=10, metadata=lg_meta("agent", "supervisor:3"))]
    out = norm(spans, tid, "auto")
    assert out["status"] == "ok"
    traj = out["trajectory"]
    assert {a["name"] for a in traj["agents"]} == {"supervisor", "orders"}
    assert traj["handoffs"][0]["from"] == "supervisor" and traj["handoffs"][0]["to"] == "orders"
    assert handling_agent(traj) == ("orders", "handoff")
    [call_] = traj["tool_calls"]
    assert call_["name"] == "lookup_order" and call_["arguments"] == {"order_id": "ORD-12"}
    assert call_["result"] == {"status": "shipped"}  # the ToolMessage's content, not its envelope
    assert any("bare value" in n for n in out["checks"]["argument_notes"])
    # without a handoff (a greeting) the supervisor answered
    hello = norm(spans[:4], tid, "auto")["trajectory"]
    assert handling_agent(hello) == ("supervisor", "answering agent")


def test_bare_arguments_take_the_request_by_call_id_then_by_order_and_never_guess():
    calls = [{"name": "t", "call_id": "b", "arguments": "2", "arguments_captured": True},
             {"name": "t", "call_id": None, "arguments": "1", "arguments_captured": True},
             {"name": "u", "call_id": None, "arguments": "x", "arguments_captured": True},
             {"name": "t", "call_id": None, "arguments": {"k": 9}, "arguments_captured": True}]
    requested = [{"name": "t", "call_id": "a", "arguments": {"k": 1}, "arguments_captured": True},
                 {"name": "t", "call_id": "b", "arguments": {"k": 2}, "arguments_captured": True}]
    notes = arguments_from_requests(calls, requested)
    assert [c["arguments"] for c in calls] == [{"k": 2}, {"k": 2}, "x", {"k": 9}] and len(notes) == 2


def test_the_routing_layer_says_how_the_route_was_read():
    traj = {"handoffs": [{"from": "triage", "to": "billing"}], "llm_calls": [], "agents": [{"name": "triage"}],
            "tool_calls": [], "tool_log": {"seen": True}}
    ctx = ScoreContext(invocation={}, matrix={}, scoring={}, judged_reason=lambda case: "no judge",
                       traces_collected=True, traceless_reason=None)
    ev = RepeatEvidence(status=200, response_json={"message": "x"}, answer="x", answer_note=None,
                        trace_status=COMPLETE, trajectory=traj)
    got, _ = score_repeat({"id": "c", "expect": {"route": "triage"}}, ctx, ev)
    assert got["routing"]["verdict"] == "fail" and got["routing"]["observed"] == "billing"
    assert got["routing"]["observed_via"] == "handoff" and got["routing"]["handoffs"] == ["triage -> billing"]
    assert got["routing"]["reason"].endswith("(the trace's handoff triage -> billing)"), got["routing"]


def routing_layer(traj, trace_status=COMPLETE, reason=None, expect=None, **inv) -> dict:
    ctx = ScoreContext(invocation=inv, matrix={}, scoring={}, judged_reason=lambda case: "no judge",
                       traces_collected=True, traceless_reason=None)
    ev = RepeatEvidence(status=200, response_json={"message": "x"}, answer="x", answer_note=None,
                        trace_status=trace_status, trajectory=traj, trace_reason=reason)
    got, _ = score_repeat({"id": "c", "expect": expect or {"route": "Billing agent"}}, ctx, ev)
    return got["routing"]


def test_no_route_from_a_trace_read_under_another_convention_or_incomplete():
    """openai-agents under OpenInference with its GenAI semconv on, declared `gen_ai`: the agent names
    are there, but the spans are not read as they were written: unscored, naming the fix."""
    tid, tri = new_trace_id(), new_span_id()
    spans = [span(trace_id=tid, span_id=tri, operation="invoke_agent", agent="Billing agent",
                  attributes={"openinference.span.kind": "AGENT"}, **at(0)),
             span(trace_id=tid, parent_span_id=tri, operation="chat", model="m", **at(1))]
    traj = norm(spans, tid, "gen_ai")["trajectory"]
    assert traj["convention"]["foreign"]
    layer = routing_layer(traj)
    assert layer["verdict"] == "unscored" and "openinference (openinference.span.kind)" in layer["reason"], layer
    assert routing_layer(norm(spans, tid, "auto")["trajectory"])["verdict"] == "pass"
    # an incomplete trace is a declared source that gave no route: unscored, saying why
    layer = routing_layer(None, trace_status="incomplete", reason="1 span(s) whose parent span never arrived")
    assert layer["verdict"] == "unscored" and "the trace is incomplete: 1 span(s)" in layer["reason"], layer
    assert "no route source declared" not in layer["reason"]
    # another declared source still answers
    layer = routing_layer(None, trace_status="incomplete", route_from_status={"200": "Billing agent"})
    assert layer["verdict"] == "pass" and layer["observed_from"] == "status"
