"""A new user instruments a real agent (tests/realagent.py: the openai SDK + opentelemetry-util-genai,
exporting over OTLP/HTTP through the SDK's BatchSpanProcessor) and points its exporter at the runner
the way people get wrong: the standard variable set to the full traces URL. The run is
`run_cases.py` as a subprocess against the real app on real ports.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapp import adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script, listen_port

pytestmark = pytest.mark.slow   # a few seconds or more: scheduled first (conftest)

HERE = Path(__file__).resolve().parent


def free_port() -> int:
    return listen_port()   # the runner binds it later: below the ephemeral range (helpers.listen_port)


@pytest.fixture
def misrouted_agent():
    """The agent with OTEL_EXPORTER_OTLP_ENDPOINT=http://host:port/v1/traces: the SDK appends
    /v1/traces to that variable, so every export goes to /v1/traces/v1/traces on the right port."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}/v1/traces", OTEL_BSP_SCHEDULE_DELAY="100")
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([sys.executable, str(HERE / "realagent.py"), "--flavor", "genai-util"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert line, "realagent.py did not start"
        yield f"http://127.0.0.1:{json.loads(line)['port']}", port
    finally:
        proc.kill()   # ours, by pid: its exporter would keep retrying to a listener that is gone
        proc.wait(timeout=20)
        proc.stdin.close()
        proc.stdout.close()


def test_an_endpoint_that_already_ends_in_v1_traces_is_named_with_its_path_and_fix(tmp_path, misrouted_agent):
    """Before: "no OTLP export at all reached http://127.0.0.1:N/v1/traces ... set the app's
    OTEL_EXPORTER_OTLP_ENDPOINT to http://127.0.0.1:N" -- while the app's exports were reaching
    that very listener (at the doubled path, answered 404), and the user had set the variable to
    nearly that value. Now the pre-flight names the path the exports came to and both fixes."""
    app_url, otlp_port = misrouted_agent
    state = make_state(tmp_path)
    doc = adapter(app_url, response_body='{"message": "<answer>"}', timeout_s=90)
    del doc["invocation"]["route_from_response"]
    doc["traces"] = {"source": "otlp-http", "location": f"127.0.0.1:{otlp_port}", "convention": "gen_ai",
                     "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 300, "max_wait_s": 4}}
    doc["tools"] = [{"name": "lookup_order", "side_effects": "safe-live"}, {"name": "issue_refund", "side_effects": "needs-mock"}]
    cases = [case("refund", "please refund ORD-7", expect={"authz": {"forbidden_tools": ["issue_refund"]}}),
             case("hello", "hello", expect={"tools": {"forbidden": ["issue_refund"]}})]
    plan = make_plan(state, cases, adapter_doc=doc)
    out = state / "reports" / plan["run_id"]
    res = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert res.rc == 3, res.stdout + res.stderr
    error = json.loads(res.stdout.strip().splitlines()[-1])["error"]
    assert error.startswith("pre-flight (traces): ") and "no OTLP export at all" not in error, error
    assert "reached this listener at POST /v1/traces/v1/traces, not /v1/traces" in error, error
    assert f"set it to http://127.0.0.1:{otlp_port}, or set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT to " \
           f"http://127.0.0.1:{otlp_port}/v1/traces" in error, error
    gate = run_script("gate", out)
    assert gate.rc == 1 and "reached this listener at POST /v1/traces/v1/traces" in gate.stdout, gate.stdout
