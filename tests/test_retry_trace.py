"""A retried request is its own trace: the spans of an attempt that failed after the app did work
are never read as the answered attempt's.

Found on an openai-agents app (a Router agent handing off to Billing and Shipping, traced with
opentelemetry-instrumentation-openai-agents-v2, served over HTTP, exporting OTLP/HTTP to the
runner): the first attempt routed to Billing, which called get_invoice, and then the model's last
call failed (HTTP 500 from the app); the runner retried, and the second attempt's Router answered
by itself, no handoff, no tool. The runner sent the retry with the same traceparent, so both
attempts' spans were one trace: the first attempt's handoff gave the route (Billing: pass), its
get_invoice call the tool and argument checks (pass), and the gate opened on an answer no tool
produced. The app here writes the spans that instrumentation writes (gen_ai `invoke_agent`,
`agent_handoff`, `execute_tool`, `chat`), exported over real OTLP/HTTP to the runner's listener.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from assay.traces.otlp_writer import new_span_id, parse_traceparent, span, traces_data
from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import listen_port
from rundir_util import cases_view


def export(port: int, spans: list[dict]) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/traces", data=json.dumps(traces_data(spans)).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(req, timeout=10).read()


def agent_run(trace_id: str, parent: str, *, handed_off: bool) -> list[dict]:
    """One `Runner.run(router, ...)` as openai-agents-v2 traces it: the Router's chat call, then
    either a handoff to Billing (its get_invoice call, and its last chat call failing) or the
    Router's answer of its own."""
    t, root, router = time.time_ns(), new_span_id(), new_span_id()
    ms = 1_000_000
    spans = [span("Agent workflow", trace_id=trace_id, span_id=root, parent_span_id=parent,
                  operation="invoke_agent", start_ns=t, end_ns=t + 20 * ms),
             span("invoke_agent Router", trace_id=trace_id, span_id=router, parent_span_id=root,
                  operation="invoke_agent", agent="Router", start_ns=t + ms, end_ns=t + 4 * ms),
             span("chat fake-model", trace_id=trace_id, parent_span_id=router, operation="chat", model="fake-model",
                  input_tokens=13, output_tokens=5, start_ns=t + 2 * ms, end_ns=t + 3 * ms,
                  attributes={"gen_ai.response.finish_reasons": ["tool_calls" if handed_off else "stop"]})]
    if not handed_off:
        return spans
    billing = new_span_id()
    spans += [
        span("agent_handoff Router -> Billing", trace_id=trace_id, parent_span_id=router, operation="agent_handoff",
             start_ns=t + 3 * ms, end_ns=t + 3 * ms + 1000,
             attributes={"gen_ai.handoff.from_agent": "Router", "gen_ai.handoff.to_agent": "Billing"}),
        span("invoke_agent Billing", trace_id=trace_id, span_id=billing, parent_span_id=root,
             operation="invoke_agent", agent="Billing", start_ns=t + 5 * ms, end_ns=t + 15 * ms),
        span("chat fake-model", trace_id=trace_id, parent_span_id=billing, operation="chat", model="fake-model",
             input_tokens=23, output_tokens=5, start_ns=t + 6 * ms, end_ns=t + 7 * ms,
             attributes={"gen_ai.response.finish_reasons": ["tool_calls"]}),
        span("execute_tool get_invoice", trace_id=trace_id, parent_span_id=billing, operation="execute_tool",
             tool="get_invoice", arguments={"invoice_id": "INV-7"}, result={"invoice_id": "INV-7", "total": 42.5},
             start_ns=t + 8 * ms, end_ns=t + 9 * ms),
        span("chat fake-model", trace_id=trace_id, parent_span_id=billing, operation="chat", model="fake-model",
             error="InternalServerError", start_ns=t + 10 * ms, end_ns=t + 11 * ms)]
    return spans


def test_a_retried_request_is_scored_on_its_own_trace_not_the_failed_attempts(tmp_path):
    otlp = listen_port()
    sent: list[str] = []
    lock = threading.Lock()

    def shop(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        traceparent = {k.lower(): v for k, v in req.headers.items()}.get("traceparent")
        trace_id, parent = parse_traceparent(traceparent)
        with lock:
            sent.append(traceparent)
            first = len(sent) == 1
        export(otlp, agent_run(trace_id, parent, handed_off=first))
        if first:   # Billing's last model call failed: the app's 500, after the handoff and the tool call
            return Reply(500, {"error": "InternalServerError: Error code: 500 - overloaded"})
        return Reply(200, {"message": "Invoice INV-7 totals 42.5."})   # the Router's own words

    state = make_state(tmp_path)
    with FakeApp(shop) as app:
        doc = adapter(app.url, timeout_s=30)
        del doc["invocation"]["route_from_response"]
        doc["tools"] = [{"name": "get_invoice", "side_effects": "safe-live"}]
        doc["traces"] = {"source": "otlp-http", "location": f"127.0.0.1:{otlp}", "protocol": "http/json",
                         "convention": "gen_ai", "correlation": "traceparent-echo",
                         "completeness": {"quiescence_ms": 300, "max_wait_s": 30}}
        plan = make_plan(state, [case("c-flaky", "how much is invoice INV-7?", expect={
            "route": "Billing", "tools": {"subset": ["get_invoice"]}, "args": {"get_invoice": {"invoice_id": "INV-7"}},
            "answer": {"must_contain": ["42.5"]}})], adapter_doc=doc,
            execution={"max_attempts": 2, "backoff_s": [0]})
        out = state / "reports" / plan["run_id"]
        res = run_runner("--plan", write_plan(state, plan), "--out", out)
    assert res.rc == 0, res.stdout + res.stderr
    assert len(sent) == 2 and sent[0] != sent[1], sent   # each attempt its own traceparent
    v = json.loads((cases_view(out) / "c-flaky" / "verdict.json").read_text())
    layers = {k: v["layers"][k]["verdict"] for k in ("http", "answer", "routing", "trajectory", "tool_selection")}
    assert layers == {"http": "pass", "answer": "pass", "routing": "fail", "trajectory": "fail",
                      "tool_selection": "fail"}, v["layers"]
    assert v["layers"]["routing"]["observed"] == "Router", v["layers"]["routing"]
    assert v["trace"]["trace_id"] == parse_traceparent(sent[1])[0], v["trace"]
    # request.json records the request that was answered: the retry's traceparent
    request = json.loads((cases_view(out) / "c-flaky" / "request.json").read_text())
    assert request["headers"]["traceparent"] == sent[1], request
    assert v["verdict"] == "fail"
