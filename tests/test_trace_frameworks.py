"""LlamaIndex AgentWorkflow, AutoGen AgentChat, smolagents, CrewAI and Google ADK spans, as the real
packages write them.

The fixtures in tests/fixtures/handoffspans/ were recorded by tests/record_handoffspans.py from
tests/handoffapp.py (a triage agent handing off to a billing and an orders agent; "where is
ORD-12?", "please send invoice INV-7", "hello there"; for CrewAI and ADK every case of the
end-to-end matrix); `packages` in each file names the versions. AutoGen AgentChat (OpenInference),
smolagents, CrewAI and ADK (its own spans) also run live in tests/test_handoff_frameworks_e2e.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.run.layers import RepeatEvidence, ScoreContext, score_repeat
from assay.traces.collect import COMPLETE
from assay.traces.normalize import normalize_trace
from assay.traces.otlp_writer import new_span_id, new_trace_id, span, traces_data
from assay.traces.routing import handling_agent
from test_handoff_frameworks_e2e import EXPECTED, OBSERVED_ROLE, ROWS, all_cases

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "handoffspans"


def recorded(flavor: str) -> dict[str, dict]:
    doc = json.loads((FIXTURES / f"{flavor}.json").read_text())
    return {key: normalize_trace(doc["exports"], tid, convention="auto") for key, tid in doc["traces"].items()}


def layers(traj: dict, expect: dict, declared: frozenset = frozenset()) -> dict:
    ctx = ScoreContext(invocation={}, matrix={}, scoring={}, judged_reason=lambda case: "no judge",
                       traces_collected=True, traceless_reason=None, declared_tools=declared)
    ev = RepeatEvidence(status=200, response_json={"message": "x"}, answer="x", answer_note=None,
                        trace_status=COMPLETE, trajectory=traj)
    got, _ = score_repeat({"id": "c", "expect": expect}, ctx, ev)
    return got


def calls(traj: dict) -> list[tuple]:
    return [(c["name"], c["arguments"], c["result"]) for c in traj["tool_calls"]]


def test_llamaindex_tool_arguments_results_handoffs_and_model_calls():
    got = recorded("llamaindex")
    orders, billing, hello = (got[k]["trajectory"] for k in ("orders", "billing", "hello"))
    # the TOOL span's input.value is {"kwargs": {...}}; its output.value a ToolOutput
    assert calls(orders) == [("lookup_order", {"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"})]
    assert calls(billing) == [("get_invoice", {"invoice_id": "INV-7"}, {"invoice_id": "INV-7", "total": 42.5})]
    # the `handoff` tool (its ctx dump is no argument) is the handoff, not a tool call
    assert [h["to"] for h in orders["handoffs"]] == ["orders_agent"]
    assert handling_agent(orders) == ("orders_agent", "handoff")
    # _prepare_chat_with_tools spans are typed LLM but send nothing: three model calls, each counted once
    assert len(orders["llm_calls"]) == 3 and orders["usage"]["total"] == {"input_tokens": 111, "output_tokens": 14}
    scored = layers(orders, {"route": "orders_agent", "args": {"lookup_order": {"order_id": "ORD-12"}},
                             "tools": {"subset": ["lookup_order"]}})
    assert [scored[k]["verdict"] for k in ("routing", "tool_selection", "trajectory")] == ["pass"] * 3, scored


def test_llamaindex_without_a_handoff_sees_the_tool_log_and_names_why_there_is_no_route():
    hello = recorded("llamaindex")["hello"]["trajectory"]
    assert hello["tool_log"]["seen"] and hello["tool_calls"] == [], hello["tool_log"]
    scored = layers(hello, {"route": "triage_agent", "tools": {"forbidden": ["lookup_order"]}})
    assert scored["trajectory"]["verdict"] == "pass", scored["trajectory"]
    assert scored["routing"]["verdict"] == "unscored", scored["routing"]
    assert "LlamaIndex's AgentWorkflow writes no AGENT span" in scored["routing"]["reason"]


def test_autogen_openinference_agents_handoffs_and_one_count_per_model_call():
    got = recorded("autogen-oi")
    orders, hello = got["orders"]["trajectory"], got["hello"]["trajectory"]
    # the agent is graph.node.id, not the span name `orders_agent.on_messages_stream`
    assert [a["name"] for a in orders["agents"]] == ["triage_agent", "orders_agent"]
    assert [(h["from"], h["to"]) for h in orders["handoffs"]] == [("triage_agent", "orders_agent")]
    assert handling_agent(orders) == ("orders_agent", "handoff")
    assert handling_agent(hello) == ("triage_agent", "answering agent")
    # AutoGen's OpenAIChatCompletionClient.create over openinference-openai's ChatCompletion: one call
    assert got["orders"]["checks"]["nested_llm_spans"] == 3
    assert [(c["agent"], c["input_tokens"], c["output_tokens"]) for c in orders["llm_calls"]] == [
        ("triage_agent", 21, 5), ("orders_agent", 25, 5), ("orders_agent", 35, 4)]
    assert orders["usage"]["total"] == {"input_tokens": 81, "output_tokens": 14}
    assert calls(orders) == [("lookup_order", {"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"})]


@pytest.mark.parametrize("flavor", ["autogen-genai", "autogen-own"])
def test_autogen_own_tracing_reads_transfer_tools_as_handoffs(flavor):
    got = recorded(flavor)
    billing = got["billing"]["trajectory"]
    assert [(h["from"], h["to"]) for h in billing["handoffs"]] == [("triage_agent", "billing_agent")]
    assert handling_agent(billing) == ("billing_agent", "handoff")
    assert [c["name"] for c in billing["tool_calls"]] == ["get_invoice"]
    if flavor == "autogen-genai":
        # execute_tool spans carry no arguments: the chat span's tool call (by call id) and the
        # result the next chat span was given
        assert calls(billing) == [("get_invoice", {"invoice_id": "INV-7"}, {"invoice_id": "INV-7", "total": 42.5})]
        assert layers(billing, {"args": {"get_invoice": {"invoice_id": "INV-7"}}})["tool_selection"]["verdict"] == "pass"


def autogen_spans(tid: str, *agents_and_tools: tuple[str, list[str]]) -> list[dict]:
    """AutoGen's own tracing: an invoke_agent span per agent, its execute_tool spans below it."""
    out, t = [], 1_700_000_000_000_000_000
    for i, (agent, tools) in enumerate(agents_and_tools):
        aid = new_span_id()
        out.append(span(f"invoke_agent {agent}", trace_id=tid, span_id=aid, start_ns=t + i * 10, end_ns=t + i * 10 + 9,
                        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.system": "autogen",
                                    "gen_ai.agent.name": agent}))
        for j, tool in enumerate(tools):
            out.append(span(f"execute_tool {tool}", trace_id=tid, parent_span_id=aid, start_ns=t + i * 10 + j + 1,
                            end_ns=t + i * 10 + j + 2, attributes={
                                "gen_ai.operation.name": "execute_tool", "gen_ai.system": "autogen",
                                "gen_ai.tool.name": tool, "gen_ai.tool.call.id": f"call_{i}{j}"}))
    return out


def test_a_handoff_span_that_names_no_agent_makes_routing_unscored_never_the_first_agent():
    tid = new_trace_id()
    doc = traces_data(autogen_spans(tid, ("triage_agent", ["transfer_to_billing_agent"]), ("billing", [])))
    traj = normalize_trace(doc, tid, convention="gen_ai")["trajectory"]
    assert traj["handoffs"] == [] and [c["name"] for c in traj["tool_calls"]] == ["transfer_to_billing_agent"]
    assert handling_agent(traj) == (None, None)
    layer = layers(traj, {"route": "triage_agent"})["routing"]
    assert layer["verdict"] == "unscored" and "'execute_tool transfer_to_billing_agent'" in layer["reason"], layer
    # AutoGen lower-cases the target in the tool's name: matched to the agent's own spelling
    tid = new_trace_id()
    doc = traces_data(autogen_spans(tid, ("Triage", ["transfer_to_billingagent"]), ("BillingAgent", [])))
    assert handling_agent(normalize_trace(doc, tid, convention="gen_ai")["trajectory"]) == ("BillingAgent", "handoff")


def test_several_agents_and_nothing_saying_which_answered_is_no_route():
    tid = new_trace_id()
    traj = normalize_trace(traces_data(autogen_spans(tid, ("triage_agent", []), ("billing_agent", []))), tid,
                           convention="gen_ai")["trajectory"]
    layer = layers(traj, {"route": "triage_agent"})["routing"]
    assert layer["verdict"] == "unscored" and "2 agents (billing_agent, triage_agent)" in layer["reason"], layer


def test_smolagents_managed_agents_names_arguments_and_final_answer():
    got = recorded("smolagents")
    orders, hello = got["orders"]["trajectory"], got["hello"]["trajectory"]
    # agents are `<name>.run` spans; a managed agent's run inside its manager's is a handoff to it
    assert [a["name"] for a in orders["agents"]] == ["triage_agent", "orders_agent"]
    assert handling_agent(orders) == ("orders_agent", "handoff")
    assert handling_agent(hello) == ("triage_agent", "answering agent")
    # tool input.value {"args", "sanitize_inputs_outputs", "kwargs"}; final_answer is no tool call
    assert calls(orders) == [("lookup_order", {"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"})]
    assert hello["tool_calls"] == [] and hello["tool_log"]["seen"], hello


def test_nested_llm_spans_are_one_call_the_wrappers_usage_filling_what_the_inner_lacks():
    tid, outer, middle = new_trace_id(), new_span_id(), new_span_id()
    t = 1_700_000_000_000_000_000

    def llm(name, sid=None, parent=None, **attrs):
        return span(name, trace_id=tid, span_id=sid, parent_span_id=parent, start_ns=t, end_ns=t + 9,
                    attributes={"openinference.span.kind": "LLM", **attrs})
    spans = [llm("Framework.chat", outer, None, **{"llm.model_name": "m", "llm.token_count.prompt": 30,
                                                    "llm.token_count.completion": 7}),
             llm("Client.create", middle, outer, **{"llm.token_count.prompt": 30}),
             llm("ChatCompletion", None, middle),
             llm("Other._prepare_chat_with_tools")]
    out = normalize_trace(traces_data(spans), tid, convention="openinference")
    assert out["checks"]["nested_llm_spans"] == 2
    assert [(c["model"], c.get("input_tokens"), c.get("output_tokens")) for c in out["trajectory"]["llm_calls"]] == [
        ("m", 30, 7)]
    assert out["trajectory"]["usage"]["total"] == {"input_tokens": 30, "output_tokens": 7}


# ---------------------------------------------------------------------------- CrewAI, Google ADK

DOMAIN_TOOLS = frozenset({"lookup_order", "get_invoice"})  # what the user declares: no handoff tool
NAMES = {"crewai": ROWS["crewai"][1], "adk-own": ROWS["adk-own"][1], "adk-oi": ROWS["adk-own"][1]}


def rescored(flavor: str, traces: dict[str, dict] | None = None) -> dict[str, dict]:
    """Every recorded case scored with the end-to-end matrix's expectations, the domain tools declared."""
    traces = traces or recorded(flavor)
    return {c["id"]: layers(traces[c["id"]]["trajectory"], c["expect"], DOMAIN_TOOLS) for c in all_cases(NAMES[flavor])}


@pytest.mark.parametrize("flavor", ["crewai", "adk-own", "adk-oi"])
def test_crewai_and_adk_verdicts_match_the_matrix_on_every_case(flavor):
    got = recorded(flavor)
    assert all(g["status"] == "ok" for g in got.values()), {k: g["checks"] for k, g in got.items()}
    scored = rescored(flavor, got)
    keep = ("routing", "trajectory", "tool_selection")
    assert {cid: {k: v[k]["verdict"] for k in keep} for cid, v in scored.items()} == {
        cid: {k: want[k] for k in keep} for cid, want in EXPECTED.items()}, scored
    names = NAMES[flavor]
    assert {cid: v["routing"]["observed"] for cid, v in scored.items()} == {
        cid: names[role] for cid, role in OBSERVED_ROLE.items()}
    # the handoff tools are no tool calls; the tools' own arguments and results, unwrapped
    orders, billing = got["orders"]["trajectory"], got["billing"]["trajectory"]
    assert calls(orders) == [("lookup_order", {"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"})]
    assert calls(billing) == [("get_invoice", {"invoice_id": "INV-7"}, {"invoice_id": "INV-7", "total": 42.5})]
    assert got["no-tool"]["trajectory"]["tool_calls"] == [] and got["no-tool"]["trajectory"]["tool_log"]["seen"]
    assert [(h["from"], h["to"]) for h in orders["handoffs"]] == [(names["triage"], names["orders"])]
    assert scored["misroute"]["routing"]["observed_via"] == "handoff"


def test_crewai_coworker_runs_under_the_delegation_tool_span():
    orders = recorded("crewai")["orders"]["trajectory"]
    # no AGENT span of its own: the `Delegate work to coworker` span is the Orders agent's run
    assert [(a["name"], a["parent_agent"]) for a in orders["agents"]] == [("Crew Manager", None), ("Orders agent", "Crew Manager")]
    assert [c["agent"] for c in orders["llm_calls"]] == ["Crew Manager", "Orders agent", "Orders agent", "Crew Manager"]
    assert [c["agent"] for c in orders["tool_calls"]] == ["Orders agent"]


def _edit(doc: dict, span_name: str, key: str, value) -> int:
    """Set attribute `key` of every span named `span_name` in a recorded export list; how many."""
    n = 0
    for export in doc["exports"]:
        for rs in export["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    if sp["name"] == span_name:
                        sp["attributes"] = [a for a in sp["attributes"] if a["key"] != key] + (
                            [{"key": key, "value": {"stringValue": value}}] if value is not None else [])
                        n += 1
    return n


def test_crewai_coworker_is_matched_as_crewai_matches_it_and_an_unknown_one_names_no_route():
    doc = json.loads((FIXTURES / "crewai.json").read_text())
    tid = doc["traces"]["orders"]
    args = {"task": "where is ORD-12?", "context": "", "coworker": '"orders   AGENT"'}
    assert _edit(doc, "Delegate work to coworker.run", "input.value", json.dumps(args)) == 5
    traj = normalize_trace(doc["exports"], tid, convention="auto")["trajectory"]
    assert handling_agent(traj) == ("Orders agent", "handoff")
    # a coworker the crew does not have, and no model call ran below it: CrewAI ran no agent
    tid = new_trace_id()
    crew = span("Crew_1.kickoff", trace_id=tid, span_id=(root := new_span_id()), start_ns=1, end_ns=9, attributes={
        "openinference.span.kind": "CHAIN", "crew_agents": json.dumps([{"role": "Billing agent"}, {"role": "Orders agent"}])})
    manager = span("Crew Manager._execute_core", trace_id=tid, span_id=(mid := new_span_id()), parent_span_id=root,
                   start_ns=2, end_ns=8, attributes={"openinference.span.kind": "AGENT", "graph.node.id": "Crew Manager"})
    tool = span("Delegate work to coworker.run", trace_id=tid, parent_span_id=mid, start_ns=3, end_ns=4, attributes={
        "openinference.span.kind": "TOOL", "tool.name": "Delegate work to coworker",
        "input.value": json.dumps({"task": "t", "context": "c", "coworker": "Refunds agent"}),
        "output.value": "Error executing tool. coworker mentioned not found"})
    traj = normalize_trace(traces_data([crew, manager, tool]), tid, convention="auto")["trajectory"]
    assert traj["handoffs"] == [] and traj["unread_handoffs"][0]["to"] == "Refunds agent"
    layer = layers(traj, {"route": "Crew Manager"})["routing"]
    assert layer["verdict"] == "unscored" and "'Delegate work to coworker.run'" in layer["reason"], layer


def test_adk_openinference_model_calls_merged_on_one_span_are_counted_as_seen_and_said():
    got = recorded("adk-oi")
    # three model calls were made (triage, then orders twice); the instrumentation wrote two spans
    assert [c["agent"] for c in got["orders"]["trajectory"]["llm_calls"]] == ["triage_agent", "orders_agent"]
    assert got["orders"]["checks"]["merged_llm_spans"] == 2
    assert "merged_llm_spans" not in recorded("adk-own")["orders"]["checks"]
    assert [c["agent"] for c in recorded("adk-own")["orders"]["trajectory"]["llm_calls"]] == [
        "triage_agent", "orders_agent", "orders_agent"]


def test_adk_without_content_capture_routes_by_the_answering_agent_and_says_arguments_are_unseen():
    doc = json.loads((FIXTURES / "adk-own.json").read_text())
    for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "gen_ai.input.messages", "gen_ai.output.messages"):
        for name in ("execute_tool transfer_to_agent", "execute_tool lookup_order", "execute_tool get_invoice",
                     "generate_content openai/fake-model"):
            _edit(doc, name, key, None)
    got = {k: normalize_trace(doc["exports"], tid, convention="gen_ai") for k, tid in doc["traces"].items()}
    orders = got["orders"]["trajectory"]
    # the transfer is a handoff whose target was not captured: the agent that answered is the route
    assert [(h["from"], h["to"]) for h in orders["handoffs"]] == [("triage_agent", None)]
    assert handling_agent(orders) == ("orders_agent", "answering agent")
    assert [c["name"] for c in orders["tool_calls"]] == ["lookup_order"]
    scored = rescored("adk-own", got)
    assert {cid: v["routing"]["verdict"] for cid, v in scored.items()} == {
        cid: want["routing"] for cid, want in EXPECTED.items()}
    assert scored["orders"]["trajectory"]["verdict"] == "pass"
    assert scored["orders"]["tool_selection"]["verdict"] == "unscored", scored["orders"]["tool_selection"]


def test_adk_transfer_to_an_agent_not_in_the_trace_names_no_route():
    doc = json.loads((FIXTURES / "adk-own.json").read_text())
    assert _edit(doc, "execute_tool transfer_to_agent", "gen_ai.tool.call.arguments",
                 json.dumps({"agent_name": "refunds_agent"})) == 5
    traj = normalize_trace(doc["exports"], doc["traces"]["orders"], convention="gen_ai")["trajectory"]
    assert handling_agent(traj) == (None, None)
    layer = layers(traj, {"route": "orders_agent"})["routing"]
    assert layer["verdict"] == "unscored" and "'execute_tool transfer_to_agent'" in layer["reason"], layer


def test_a_wrong_traces_convention_names_the_convention_fix_on_the_routing_layer_too():
    """Google ADK's own gen_ai spans read with `traces.convention: openinference` (a newcomer's slip):
    nothing maps to an agent, LLM or tool call. The trace layers said "set traces.convention to gen_ai
    or auto"; the routing layer said only "no agent span in the trace has a name; declare
    route_from_response", sending the user to the wrong fix. It now names the same cause and fix."""
    doc = json.loads((FIXTURES / "adk-own.json").read_text())
    traj = normalize_trace(doc["exports"], doc["traces"]["orders"], convention="openinference")["trajectory"]
    scored = layers(traj, {"route": "orders_agent", "tools": {"subset": ["lookup_order"]}})
    assert scored["routing"]["verdict"] == "unscored" and scored["trajectory"]["verdict"] == "unscored", scored
    assert "set traces.convention to gen_ai or auto" in scored["routing"]["reason"], scored["routing"]
    assert scored["routing"]["reason"].endswith("; or declare route_from_response"), scored["routing"]
    # read as written, the route is there: the hint is not a guess
    right = normalize_trace(doc["exports"], doc["traces"]["orders"], convention="gen_ai")["trajectory"]
    assert handling_agent(right) == ("orders_agent", "handoff")
