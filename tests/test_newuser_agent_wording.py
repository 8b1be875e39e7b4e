"""A newcomer instruments an agent app (tests/realagent.py: a real OTel library, OTLP/HTTP to the
runner's listener) and meets the words assay says when the trace lacks something. Each test runs
`run_cases.py` / `gate.py` as subprocesses against the real app on real ports, and asserts the
words name the cause the user has to fix: the trace's own convention and its hide setting, the
traceparent the app must continue, the app's instrumentation (not the adapter), and `auto` finding
no convention at all.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assay.score.hollow_hints import hollow_layer_line
from assay.score.tool_args import score_tool_args
from assay.traces.normalize import normalize_trace
from fakeapp import adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script, listen_port
from rundir_util import cases_view

pytestmark = pytest.mark.slow   # a few seconds or more: scheduled first (conftest)

HERE = Path(__file__).resolve().parent
LOOKUP = {"args": {"lookup_order": {"order_id": "ORD-12"}}, "tools": {"subset": ["lookup_order"]}}


def free_port() -> int:
    return listen_port()   # the runner binds it later: below the ephemeral range (helpers.listen_port)


@pytest.fixture
def start_agent():
    """start(flavor, env, *flags) -> (app url, the OTLP port its exporter sends to)."""
    procs = []

    def start(flavor: str, env_extra: dict, *flags: str) -> tuple[str, int]:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
        env.update(env_extra, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_BSP_SCHEDULE_DELAY="100")
        env.pop("PYTHONPATH", None)
        proc = subprocess.Popen([sys.executable, str(HERE / "realagent.py"), "--flavor", flavor, *flags],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                text=True, env=env)
        procs.append(proc)
        line = proc.stdout.readline()
        assert line, "realagent.py did not start"
        return f"http://127.0.0.1:{json.loads(line)['port']}", port

    yield start
    for proc in procs:   # ours, by pid: a graceful exit would retry exports to a listener that is gone
        proc.kill()
        proc.wait(timeout=20)
        proc.stdin.close()
        proc.stdout.close()


def run(tmp_path, app_url: str, otlp_port: int, cases: list[dict], *, convention: str, max_wait_s: float = 90):
    state = make_state(tmp_path)
    doc = adapter(app_url, response_body='{"message": "<answer>"}', max_concurrency=1, timeout_s=90)
    del doc["invocation"]["route_from_response"]
    doc["traces"] = {"source": "otlp-http", "location": f"127.0.0.1:{otlp_port}", "convention": convention,
                     "correlation": "traceparent-echo",
                     "completeness": {"quiescence_ms": 300, "max_wait_s": max_wait_s}}
    doc["tools"] = [{"name": "lookup_order", "side_effects": "safe-live"},
                    {"name": "issue_refund", "side_effects": "needs-mock"}]
    plan = make_plan(state, cases, adapter_doc=doc)
    out = state / "reports" / plan["run_id"]
    return run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never"), out


def verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


def test_hidden_openinference_inputs_name_input_value_and_the_hide_setting(tmp_path, start_agent):
    """Before: "the trace did not capture this call's arguments (gen_ai.tool.call.arguments)" for an
    OpenInference trace (whose arguments are its TOOL span's input.value), and the gate's hint was
    "check the adapter's traces (source, location, correlation)": neither is what the user changes."""
    app_url, port = start_agent("openinference", {"OPENINFERENCE_HIDE_INPUTS": "true"})
    res, out = run(tmp_path, app_url, port, [case("lookup", "where is ORD-12?", expect=LOOKUP)], convention="auto")
    assert res.rc == 0, res.stdout + res.stderr
    v = verdict(out, "lookup")
    assert v["trace"]["status"] == "ok" and v["layers"]["trajectory"]["verdict"] == "pass", v
    reason = v["layers"]["tool_selection"]["reason"]
    assert "did not capture this call's arguments (input.value; OPENINFERENCE_HIDE_INPUTS=true" in reason, reason
    assert "gen_ai.tool.call.arguments" not in reason, reason
    gate = run_script("gate", out)
    assert gate.rc == 1, gate.stdout + gate.stderr
    line = next(x for x in gate.stdout.splitlines() if "layer tool_selection was asserted" in x)
    assert "; check the app's instrumentation: its content capture" in line, line
    assert "check the adapter's traces (source, location, correlation)" not in line, line


def test_an_app_that_drops_the_traceparent_is_told_to_continue_it_and_the_run_stops(tmp_path, start_agent):
    """Before: each case said "received N export(s) for other traces" and nothing about the
    traceparent, and every case waited out max_wait_s. Now the cases name the fix, and once two new
    traces arrived under ids of the app's own (none a case's), the run stops at pre-flight (exit 3)."""
    app_url, port = start_agent("genai-util", {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY",
                                               "OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"},
                                "--no-propagate")
    cases = [case(f"c{i}", "where is ORD-12?", expect=LOOKUP) for i in range(6)]
    res, out = run(tmp_path, app_url, port, cases, convention="gen_ai", max_wait_s=4)
    assert res.rc == 3, res.stdout + res.stderr
    error = json.loads(res.stdout.strip().splitlines()[-1])["error"]
    assert error.startswith("pre-flight (traces): ") and "none of them a case's: the app does not continue the " \
        "runner's traceparent header" in error, error
    assert "opentelemetry.propagate.extract(request headers)" in error, error
    first = verdict(out, "c0")
    assert first["verdict"] == "infra_incomplete", first
    assert "export(s) for other traces: the app does not continue the runner's traceparent header" \
        in first["infra_reason"], first
    done = [c["id"] for c in cases if (cases_view(out) / c["id"] / "verdict.json").exists()]
    assert len(done) < len(cases), done   # stopped, not every case waiting out max_wait_s
    gate = run_script("gate", out)
    assert gate.rc == 1 and "does not continue the runner's traceparent header" in gate.stdout, gate.stdout


def test_a_slow_app_whose_spans_come_late_is_not_told_about_the_traceparent(tmp_path):
    """The stop needs spans under ids no case waited for: a case's own late spans never trigger it."""
    from assay.traces.otlp_http import OtlpHttpSource
    src = OtlpHttpSource("127.0.0.1:0", "gen_ai", quiescence_ms=20, max_wait_s=0.05, correlation="traceparent-echo")
    try:
        asked = ["ab" * 16, "cd" * 16]
        for tid in asked:
            assert src.collect(tid).status == "infra_incomplete"
        for tid in asked + ["ef" * 16]:
            span = {"traceId": tid, "spanId": "12" * 8, "name": "chat", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}
            body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
            assert src.receive(body, "application/json")[0] == 200
        assert src.setup_problem() is None
        src._asked.clear()   # the same exports, none of them under a waited-for id: the stop's words
        assert "does not continue the runner's traceparent" in (src.setup_problem() or "")
    finally:
        src.close()


def _span(tid: str, sid: str, name: str, attrs: dict) -> dict:
    return {"traceId": tid, "spanId": sid, "name": name, "startTimeUnixNano": "1", "endTimeUnixNano": "2",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()]}


def test_auto_with_no_marker_says_no_convention_was_recognized():
    """Before: "no span maps to an LLM or tool call under convention gen_ai" for `auto` with spans that
    carry no convention's marker, as if gen_ai had been recognized."""
    tid = "ab" * 16
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [_span(tid, "12" * 8, "POST /api/chat", {"http.method": "POST"})]}]}]}
    reason = normalize_trace(doc, tid, convention="auto")["trajectory"]["tool_log"]["reason"]
    assert "under convention gen_ai" not in reason, reason
    assert "traces.convention auto recognized no convention" in reason, reason
    for marker in ("gen_ai.operation.name", "openinference.span.kind", "traceloop.span.kind"):
        assert marker in reason, reason
    gate = hollow_layer_line("trajectory", {"cases": 1, "reason": f"the trace cannot show tool calls: {reason}",
                                            "adapter_key": "traces (source, location, correlation)"})
    assert gate.endswith("check the app's instrumentation (are its LLM / agent / tool spans written?) and the "
                         "adapter's traces.convention"), gate


def test_each_convention_names_its_own_argument_attribute_and_an_old_trajectory_keeps_gen_ai():
    tid = "ab" * 16
    for attrs, convention, said in (
            ({"traceloop.span.kind": "tool", "traceloop.entity.name": "lookup_order"}, "openllmetry",
             "(traceloop.entity.input; TRACELOOP_TRACE_CONTENT=false hides them"),
            ({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"}, "gen_ai",
             "(gen_ai.tool.call.arguments; content capture is off: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")):
        doc = {"resourceSpans": [{"scopeSpans": [{"spans": [_span(tid, "12" * 8, "tool", attrs)]}]}]}
        traj = normalize_trace(doc, tid, convention=convention)["trajectory"]
        assert said in score_tool_args(traj, LOOKUP)["reason"], (convention, score_tool_args(traj, LOOKUP))
    traj.pop("convention")
    assert score_tool_args(traj, LOOKUP)["reason"].endswith("arguments (gen_ai.tool.call.arguments)")
