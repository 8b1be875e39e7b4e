"""Spans real instrumentation libraries wrote (tests/fixtures/realspans, made by
tests/record_realspans.py), read under each convention and scored layer by layer in-process.

Every row of the "real-world traces" table: the correct expectation passes, a planted wrong one
fails, and a trace that cannot show tool calls is `unscored` (never fail, never a forbidden pass).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.run.layers import RepeatEvidence, ScoreContext, score_repeat
from assay.traces.conventions import CONVENTION_NAMES, OPENINFERENCE, capture_info, looks_like_json_schema, pick
from assay.traces.normalize import first_agent_name, normalize_trace
from assay.traces.collect import COMPLETE

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "realspans"
CTX = ScoreContext(invocation={}, matrix={}, scoring={}, judged_reason=lambda case: "no judge",
                   traces_collected=True, traceless_reason=None)

LOOKUP_OK = {"tools": {"subset": ["lookup_order"], "forbidden": ["issue_refund"]},
             "args": {"lookup_order": {"order_id": "ORD-12"}},
             "authz": {"forbidden_tools": ["issue_refund"]}}
LOOKUP_PLANTED = {"args": {"lookup_order": {"order_id": "ORD-99"}}}
HELLO_OK = {"tools": {"forbidden": ["lookup_order", "issue_refund"]}, "authz": {"forbidden_tools": ["issue_refund"]}}
REFUND_CAUGHT = {"tools": {"forbidden": ["issue_refund"]}, "authz": {"forbidden_tools": ["issue_refund"]}}


def load(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def trajectory(name: str, trace: str, convention: str) -> dict:
    doc = load(name)
    out = normalize_trace(doc["exports"], doc["traces"][trace], convention=convention)
    assert out["status"] == "ok", out
    return out["trajectory"]


def layers(traj: dict, expect: dict) -> dict[str, dict]:
    case = {"id": "c", "expect": expect}
    ev = RepeatEvidence(status=200, response_json={"message": "x"}, answer="x", answer_note=None,
                        trace_status=COMPLETE, trajectory=traj)
    got, _ = score_repeat(case, CTX, ev)
    return got


def verdicts(traj: dict, expect: dict) -> dict[str, str]:
    got = layers(traj, expect)
    return {k: got[k]["verdict"] for k in ("trajectory", "tool_selection", "loops", "authz")}


# (fixture, convention to declare, the route the trace shows, origin of its tool calls)
READABLE = [
    ("genai-util", "gen_ai", "support", "executed"),
    ("genai", "gen_ai", None, "requested"),
    ("openinference", "openinference", "support", "executed"),
    ("openinference-genai-semconv", "openinference", "support", "executed"),
    ("openllmetry", "openllmetry", "support", "executed"),
    ("agents", "gen_ai", "support", "executed"),
]


@pytest.mark.parametrize("name, convention, route, origin", READABLE)
@pytest.mark.parametrize("declared", ["declared", "auto"])
def test_every_row_passes_correct_and_fails_planted(name, convention, route, origin, declared):
    conv = convention if declared == "declared" else "auto"
    lookup = trajectory(name, "lookup", conv)
    assert lookup["convention"]["used"] == convention
    assert [(c["name"], c["arguments"], c["origin"]) for c in lookup["tool_calls"]] == [
        ("lookup_order", {"order_id": "ORD-12"}, origin)]
    assert lookup["tool_calls"][0]["result"] == {"order_id": "ORD-12", "status": "shipped"}
    assert first_agent_name(lookup) == route
    assert lookup["usage"]["total"] == {"input_tokens": 38, "output_tokens": 9}
    assert verdicts(lookup, LOOKUP_OK) == {"trajectory": "pass", "tool_selection": "pass", "loops": "pass",
                                           "authz": "pass"}
    planted = layers(lookup, LOOKUP_PLANTED)["tool_selection"]
    assert planted["verdict"] == "fail" and "ORD-99" in json.dumps(planted["checks"])
    assert verdicts(trajectory(name, "hello", conv), HELLO_OK) == {
        "trajectory": "pass", "tool_selection": "n/a", "loops": "pass", "authz": "pass"}
    assert verdicts(trajectory(name, "refund", conv), REFUND_CAUGHT) == {
        "trajectory": "fail", "tool_selection": "n/a", "loops": "pass", "authz": "fail"}


def test_auto_says_what_it_picked():
    info = trajectory("openinference", "lookup", "auto")["convention"]
    assert info == {"declared": "auto", "used": "openinference", "by": "marker openinference.span.kind", "foreign": {},
                    "capture": capture_info(OPENINFERENCE)}
    assert info["capture"]["arguments"].startswith("input.value; OPENINFERENCE_HIDE_INPUTS=true")
    assert trajectory("openllmetry", "lookup", "auto")["convention"]["by"] == "marker traceloop.span.kind"
    assert trajectory("genai-util", "lookup", "auto")["convention"]["by"] == "marker gen_ai.operation.name"
    assert pick("auto", [])[1]["used"] == "gen_ai"
    assert set(CONVENTION_NAMES) == {"gen_ai", "openinference", "openllmetry", "auto"}


def test_default_content_capture_leaves_arguments_unscored_not_failed():
    traj = trajectory("genai-util-nocontent", "lookup", "gen_ai")
    got = verdicts(traj, LOOKUP_OK)
    assert got["trajectory"] == "pass" and got["authz"] == "pass"
    assert got["tool_selection"] == "unscored"


@pytest.mark.parametrize("name, declared, needle", [
    # chat spans only, no content capture: the model asked for a tool assay cannot see
    ("genai-nocontent", "gen_ai", "without captured output messages"),
    # another convention's spans read as gen_ai
    ("openinference", "gen_ai", "openinference (openinference.span.kind)"),
    ("openinference-genai-semconv", "gen_ai", "openinference (openinference.span.kind)"),
    ("openllmetry", "gen_ai", "openllmetry (traceloop.span.kind)"),
    # gen_ai spans read as openinference: nothing maps
    ("genai-util", "openinference", "no span maps to an LLM or tool call"),
])
def test_a_blind_trace_is_unscored_never_fail_and_forbidden_never_passes(name, declared, needle):
    for trace, expect in (("lookup", LOOKUP_OK), ("refund", REFUND_CAUGHT), ("lookup", LOOKUP_PLANTED)):
        got = layers(trajectory(name, trace, declared), expect)
        for layer in ("trajectory", "tool_selection", "loops"):
            if got[layer]["verdict"] != "n/a":
                assert got[layer]["verdict"] == "unscored" and needle in got[layer]["reason"], (layer, got[layer])
        if got["authz"]["verdict"] != "n/a":
            assert got["authz"]["verdict"] == "unscored" and needle in got["authz"]["reason"]


def test_a_json_schema_is_not_arguments():
    schema = {"type": "object", "title": "lookup_order", "properties": {"order_id": {}}, "required": ["order_id"]}
    assert looks_like_json_schema(schema) and looks_like_json_schema(json.dumps(schema))
    assert not looks_like_json_schema({"order_id": "ORD-12"}) and not looks_like_json_schema({"type": "object"})
    traj = trajectory("openinference-genai-semconv", "lookup", "openinference")
    assert traj["tool_calls"][0]["arguments"] == {"order_id": "ORD-12"}


@pytest.mark.parametrize("name, convention", [("openinference", "openinference"), ("openllmetry", "openllmetry")])
def test_without_tool_spans_the_llm_messages_are_the_tool_log(name, convention):
    """The same real spans with the TOOL spans dropped: calls come from the LLM output messages."""
    doc = load(name)
    tid = doc["traces"]["lookup"]
    kept = []
    for export in doc["exports"]:
        for rs in export["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    kinds = {a["key"]: a["value"].get("stringValue") for a in sp.get("attributes", [])}
                    if kinds.get("openinference.span.kind") != "TOOL" and kinds.get("traceloop.span.kind") != "tool":
                        kept.append(sp)
    traj = normalize_trace(kept, tid, convention=convention)["trajectory"]
    assert [(c["name"], c["arguments"], c["result"], c["origin"]) for c in traj["tool_calls"]] == [
        ("lookup_order", {"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"}, "requested")]
    assert traj["tool_log"] == {"seen": True, "source": "llm_messages", "reason": None}


def test_traceloop_legacy_completion_attributes():
    from assay.traces.conventions import OPENLLMETRY, given_tool_results, requested_tool_calls
    asked = {"llm.request.type": "chat", "gen_ai.completion.0.role": "assistant",
             "gen_ai.completion.0.tool_calls.0.name": "lookup_order", "gen_ai.completion.0.tool_calls.0.id": "c1",
             "gen_ai.completion.0.tool_calls.0.arguments": '{"order_id": "ORD-1"}'}
    assert OPENLLMETRY.kind_of(asked) == "llm"
    assert requested_tool_calls(OPENLLMETRY, asked) == (True, [
        {"name": "lookup_order", "arguments": {"order_id": "ORD-1"}, "call_id": "c1", "arguments_captured": True}])
    given = {"gen_ai.prompt.1.role": "tool", "gen_ai.prompt.1.tool_call_id": "c1", "gen_ai.prompt.1.content": '{"ok": 1}'}
    assert given_tool_results(OPENLLMETRY, given) == {"c1": {"ok": 1}}


def test_a_json_schema_in_the_first_argument_source_is_skipped_for_the_next():
    """Mutation round 3: with the JSON Schema check gone the schema itself read as the call's arguments."""
    schema = {"type": "object", "title": "lookup_order", "properties": {"order_id": {}}, "required": ["order_id"]}
    got = OPENINFERENCE.arguments({"input.value": json.dumps(schema),
                                   "tool_call.function.arguments": json.dumps({"order_id": "ORD-12"})})
    assert got[:2] == (True, {"order_id": "ORD-12"}) and "JSON Schema" in got[2]
    assert OPENINFERENCE.arguments({"input.value": json.dumps(schema)})[:2] == (False, None)
