"""Values JSON cannot hold in what an app sends are data, never a wedged run (docs/runner-contract.md,
"Security", "Hostile input"): NaN, ±Infinity, 1e400 and lone UTF-16 surrogates in an answer body or
in a span are recorded as text, the check that reads one is unscored with the reason, every other
check scores, the run finishes with exit 0, and --resume and --verify work on it.

A fuzz over answer bodies (each hostile token at each place a check reads, and seeded random
documents) and over span attributes (tool arguments, results, attributes, agent names), through
run_cases.py as a subprocess against a real HTTP app.
"""

from __future__ import annotations

import json
import random

from assay.core import hostile, jsonio
from assay.traces.otlp_writer import new_span_id, new_trace_id, parse_traceparent, span, traces_data
from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from rundir_util import cases_view, drop_case, run_files

TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-2.5e999", '"\\ud800"', '"tail \\udfff"', '"\\udc00\\ud800"']
PLACES = {   # where the token goes -> which layer reads it
    "answer": '{"message": %s, "route": "billing"}',
    "route": '{"message": "hi there", "route": %s}',
    "elsewhere": '{"message": "hi there", "route": "billing", "meta": {"score": %s}}',
    "in a list": '{"message": "hi there", "route": "billing", "xs": [1, {"y": [%s]}]}',
}
EXPECT = {"route": "billing", "answer": {"must_contain": ["hi"]}}


def _random_body(rng: random.Random) -> str:
    """A random JSON document holding the answer and route, with hostile tokens at random leaves."""
    marker = "__H__"

    def node(depth: int):
        kind = rng.random()
        if depth > 3 or kind < 0.4:
            return marker if rng.random() < 0.5 else rng.choice([1, "s", None, True, 2.5])
        if kind < 0.7:
            return [node(depth + 1) for _ in range(rng.randint(1, 3))]
        return {f"k{i}": node(depth + 1) for i in range(rng.randint(1, 3))}
    doc = {"message": "hi there", "route": "billing", "extra": node(0), "last": marker}
    text = json.dumps(doc)
    while json.dumps(marker) in text:
        text = text.replace(json.dumps(marker), rng.choice(TOKENS), 1)
    return text


def _strict_files(out) -> int:
    """Every JSON file the run wrote, and every JSON artifact inside each case record of its
    journal, parses with assay's strict reader (no NaN, no lone surrogate)."""
    n = 0
    for line in (out / "cases.jsonl").read_bytes().decode("utf-8").splitlines():
        jsonio.loads(line)   # the journal's lines themselves are strict JSON
    for rel, text in run_files(out).items():   # valid UTF-8: no surrogate was written raw
        if rel.endswith((".json", ".jsonl", ".log")):
            if rel.endswith(".json"):
                jsonio.loads(text)
            else:
                for line in text.splitlines():
                    if line.strip():
                        jsonio.loads(line)
            n += 1
    return n


def test_hostile_answer_bodies_are_data(tmp_path):
    bodies, expected = {}, {}
    for place, tmpl in PLACES.items():
        for i, tok in enumerate(TOKENS):
            cid = f"c-{place.replace(' ', '-')}-{i}"
            bodies[cid], expected[cid] = tmpl % tok, place
    rng = random.Random(20261201)
    for i in range(20):
        bodies[f"c-random-{i}"], expected[f"c-random-{i}"] = _random_body(rng), "elsewhere"
    bodies["c-key"], expected["c-key"] = '{"message": "hi there", "route": "billing", "\\ud800": {"NaN": NaN}}', "elsewhere"

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        text = bodies[req.json["message"]]
        return Reply(200, raw=text.encode("utf-8"), headers={"Content-Type": "application/json"})

    state = make_state(tmp_path)
    with FakeApp(handler) as app:
        plan = make_plan(state, [case(cid, cid, expect=EXPECT) for cid in bodies], app_url=app.url)
        plan["adapter"]["invocation"]["request_body"] = '{"message": "<user turn>"}'
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
        assert res.rc == 0 and "Traceback" not in res.stderr, (res.stdout, res.stderr[-3000:])
        assert _strict_files(out) > len(bodies)
        for cid, place in expected.items():
            v = json.loads((cases_view(out) / cid / "verdict.json").read_text())
            answer, routing = v["layers"]["answer"], v["layers"]["routing"]
            if place == "answer":
                assert answer["verdict"] == "unscored" and "JSON cannot carry" in answer["reason"], (cid, answer)
                assert routing["verdict"] == "pass", (cid, routing)
            elif place == "route":
                assert routing["verdict"] == "unscored" and "JSON cannot carry" in routing["reason"], (cid, routing)
                assert answer["verdict"] == "pass", (cid, answer)
            else:
                assert answer["verdict"] == "pass" and routing["verdict"] == "pass", (cid, v["layers"])
            response = json.loads((cases_view(out) / cid / "response.json").read_text())
            assert any("recorded as text" in n for n in response["notes"]), (cid, response["notes"])
        # recorded as text: the NaN the app sent is the string "NaN" in response.json
        assert json.loads((cases_view(out) / "c-answer-0" / "response.json").read_text())["body"]["message"] == "NaN"

        verify = run_runner("--verify", out)
        assert verify.rc == 0, verify.stdout
        # a case killed before its verdict was written is re-run by --resume
        drop_case(out, "c-answer-0")
        resumed = run_runner("--plan", write_plan(state, plan), "--out", out, "--resume", "--progress", "never")
        assert resumed.rc == 0 and "Traceback" not in resumed.stderr, (resumed.stdout, resumed.stderr[-3000:])
        assert (cases_view(out) / "c-answer-0" / "verdict.json").exists()
    gate = run_script("gate", out, "--json")
    assert gate.rc in (0, 1) and "Traceback" not in gate.stderr, gate.stderr[-2000:]


# ---------------------------------------------------------------------------- spans
SPAN_CASES = {   # message -> (where the token goes, the token)
    "args": ("args", "NaN"), "args-inf": ("args", "1e400"), "args-sur": ("args", '"\\ud800"'),
    "result": ("result", "Infinity"), "attr": ("attr", "NaN"), "attr-sur": ("attr", '"\\udfff"'),
    "double": ("double", "-Infinity"), "agent": ("agent", '"bill\\ud800"'),
}


def _span_line(trace_id: str, caller: str | None, where: str, token: str) -> bytes:
    marker = "__H__"
    root_id, t = new_span_id(), 1_700_000_000_000_000_000
    args = '{"invoice_id": %s}' % (token if where == "args" else '"INV-1"')
    result = '{"total": %s}' % (token if where == "result" else "3")
    tool = span(trace_id=trace_id, parent_span_id=root_id, operation="execute_tool", tool="lookup_invoice",
                arguments=args, result=result, start_ns=t + 10, end_ns=t + 20,
                attributes={"app.note": marker} if where == "attr" else None)
    chat = span(trace_id=trace_id, parent_span_id=root_id, operation="chat", model="m", input_tokens=3,
                output_tokens=1, start_ns=t + 1, end_ns=t + 5)
    if where == "double":
        chat["attributes"].append({"key": "app.score", "value": {"doubleValue": marker}})
    root = span(trace_id=trace_id, span_id=root_id, parent_span_id=caller, operation="invoke_agent",
                agent=marker if where == "agent" else "billing", start_ns=t, end_ns=t + 100)
    text = json.dumps(traces_data([chat, tool, root]))
    return (text.replace(json.dumps(marker), token) + "\n").encode("utf-8")


def test_hostile_span_attributes_are_data(tmp_path):
    span_file = tmp_path / "spans.jsonl"

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        where, token = SPAN_CASES[req.json["message"]]
        trace_id, caller = parse_traceparent(req.headers.get("traceparent")) or (new_trace_id(), None)
        with open(span_file, "ab") as fh:
            fh.write(_span_line(trace_id, caller, where, token))
        return Reply(200, {"message": "Invoice INV-1 totals 3.", "route": "billing"})

    state = make_state(tmp_path)
    expect = {"route": "billing", "tools": {"subset": ["lookup_invoice"]},
              "args": {"lookup_invoice": {"invoice_id": "INV-1"}}, "answer": {"must_contain": ["INV-1"]}}
    with FakeApp(handler) as app:
        plan = make_plan(state, [case(f"s-{m}", m, expect=expect) for m in SPAN_CASES], app_url=app.url)
        inv = plan["adapter"]["invocation"]
        inv["request_body"] = '{"message": "<user turn>"}'
        inv.pop("route_from_response")
        plan["adapter"]["traces"] = {"source": "otlp-file", "location": str(span_file), "convention": "gen_ai",
                                     "correlation": "traceparent-echo",
                                     "completeness": {"quiescence_ms": 30, "max_wait_s": 2}}
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0 and "Traceback" not in res.stderr, (res.stdout, res.stderr[-3000:])
    _strict_files(out)
    for message, (where, _) in SPAN_CASES.items():
        layers = json.loads((cases_view(out) / f"s-{message}" / "verdict.json").read_text())["layers"]
        assert layers["answer"]["verdict"] == "pass", (message, layers["answer"])
        if where in ("args", "result"):   # the tool call holds it: every check that reads tool calls is unscored
            for name in ("trajectory", "tool_selection"):
                assert layers[name]["verdict"] == "unscored", (message, name, layers[name])
                assert "JSON cannot carry" in layers[name]["reason"], (message, name, layers[name])
        elif where == "agent":            # the route read from the trace
            assert layers["routing"]["verdict"] == "unscored", (message, layers["routing"])
            assert layers["tool_selection"]["verdict"] == "pass", (message, layers["tool_selection"])
        else:                             # an attribute no check reads: everything scores
            for name in ("routing", "trajectory", "tool_selection"):
                assert layers[name]["verdict"] == "pass", (message, name, layers[name])
    assert run_runner("--verify", out).rc == 0


def test_hostile_loads_and_clean_units():
    doc, found = hostile.loads('{"a": NaN, "b": [1e400, "\\ud800x"], "\\udc00": -Infinity, "ok": "\\ud83d\\ude00"}')
    assert doc == {"a": "NaN", "b": ["1e400", "\\ud800x"], "\\udc00": "-Infinity", "ok": "\U0001F600"}
    assert found == ["(root): a key holding a lone UTF-16 surrogate", "\\udc00: -Infinity",
                     "a: NaN", "b[0]: 1e400 (beyond a double)", "b[1]: a lone UTF-16 surrogate"]
    jsonio.dumps(doc).encode("utf-8")     # writable as strict JSON
    assert hostile.holds(doc["b"][:1]).what == "1e400 (beyond a double)" and hostile.holds({"x": [1, "s"]}) is None
    assert hostile.loads('{"a": 1.5, "b": "\\ud83d\\ude00"}') == ({"a": 1.5, "b": "\U0001F600"}, [])
    cleaned, found = hostile.clean({"x": float("nan"), "y": (float("inf"), "\udfff")})
    assert cleaned == {"x": "NaN", "y": ["Infinity", "\\udfff"]} and len(found) == 3


def test_a_span_line_too_deep_to_parse_is_named_not_missing(tmp_path):
    span_file = tmp_path / "spans.jsonl"

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        trace_id, _ = parse_traceparent(req.headers.get("traceparent"))
        deep = "[" * 200_000 + "]" * 200_000
        line = ('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "%s", "spanId": "%s", "name": "x", '
                '"attributes": %s}]}]}]}\n') % (trace_id, new_span_id(), deep)
        with open(span_file, "a") as fh:
            fh.write(line)
        return Reply(200, {"message": "Invoice INV-1 totals 3.", "route": "billing"})

    state = make_state(tmp_path)
    with FakeApp(handler) as app:
        plan = make_plan(state, [case("s-deep", "hi", expect={"tools": {"subset": ["lookup_invoice"]}})],
                         app_url=app.url)
        plan["adapter"]["invocation"]["request_body"] = '{"message": "<user turn>"}'
        plan["adapter"]["traces"] = {"source": "otlp-file", "location": str(span_file), "convention": "gen_ai",
                                     "correlation": "traceparent-echo",
                                     "completeness": {"quiescence_ms": 30, "max_wait_s": 0.5}}
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 0 and "Traceback" not in res.stderr, (res.stdout, res.stderr[-3000:])
    v = json.loads((cases_view(out) / "s-deep" / "verdict.json").read_text())
    reason = v["layers"]["trajectory"]["reason"]
    assert v["layers"]["trajectory"]["verdict"] == "infra_incomplete", v["layers"]["trajectory"]
    assert "nested too deeply to parse" in reason and "no span with trace id" not in reason, reason
