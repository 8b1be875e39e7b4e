"""Real agent frameworks' handoff patterns, end to end: routing is the agent that handled the request.

Each row starts tests/handoffapp.py (a triage agent handing off to a billing and an orders agent,
built as that framework documents it, every model call answered by tests/handoffmodel.py's
script over the real Chat Completions wire format) exporting its spans over OTLP/HTTP to the
runner's listener, and runs five cases through run_cases.py with routing read from the trace:
an orders question, an invoice question, a greeting the triage agent answers itself, and two
planted bugs that must fail: a misroute (the app sends "charged twice for ORD-12" to orders;
the case expects billing) and a wrong tool argument. CrewAI and Google ADK cannot share the test
extra's pins: their apps run on the interpreters `make frameworks` builds (tests/framework_venvs.py;
a missing one skips on a developer's machine and fails under CI), on LIVE_CASES only, from
tests/test_handoff_venv_frameworks_e2e.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakeapp import adapter, case, make_plan, make_state, run_runner, write_plan
from framework_venvs import environment, framework_python
from test_real_traces_e2e import free_port
from rundir_util import cases_view

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
LOADED_TIMEOUT_S = 90  # the app's answer and its spans' arrival, on a machine at load ~30
CAPTURE = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental",
           "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"}
# row -> (traces.convention, {role: agent name as the framework names it})
ROWS = {
    "agents-v2": ("gen_ai", {"triage": "Triage agent", "billing": "Billing agent", "orders": "Orders agent"}),
    "agents-oi": ("auto", {"triage": "Triage agent", "billing": "Billing agent", "orders": "Orders agent"}),
    "langgraph": ("auto", {"triage": "supervisor", "billing": "billing", "orders": "orders"}),
    "pydantic-ai": ("gen_ai", {"triage": "triage", "billing": "billing", "orders": "orders"}),
    "pydantic-ai-programmatic": ("gen_ai", {"triage": "triage", "billing": "billing", "orders": "orders"}),
    # AutoGen AgentChat Swarm + openinference-instrumentation-autogen-agentchat and -openai (its own
    # GenAI spans are on too); LlamaIndex and AutoGen's own tracing: tests/test_trace_frameworks.py
    "autogen-oi": ("auto", {"triage": "triage_agent", "billing": "billing_agent", "orders": "orders_agent"}),
    # smolagents ToolCallingAgent(managed_agents=[...]) + openinference-instrumentation-smolagents
    "smolagents": ("auto", {"triage": "triage_agent", "billing": "billing_agent", "orders": "orders_agent"}),
    # CrewAI's hierarchical crew (its "Crew Manager" delegates) + openinference-instrumentation-crewai
    # and -openai, and Google ADK's sub_agents with ADK's own spans: each app on the interpreter of
    # its own venv (tests/framework_venvs.py); ADK with OpenInference: tests/test_trace_frameworks.py
    "crewai": ("auto", {"triage": "Crew Manager", "billing": "Billing agent", "orders": "Orders agent"}),
    "adk-own": ("gen_ai", {"triage": "triage_agent", "billing": "billing_agent", "orders": "orders_agent"}),
}
# row -> its venv (.venv/frameworks-<name>)
VENV_ROWS = {"crewai": "crewai", "adk-own": "adk"}
# their apps cost ~10 CPU-s each to start (importing CrewAI; LiteLLM on ADK's first model call), so
# they run live (tests/test_handoff_venv_frameworks_e2e.py) on a correct route and the planted
# misroute only; every case of their spans is held to EXPECTED on recordings (test_trace_frameworks.py)
LIVE_CASES = ("orders", "misroute")
# the verdicts every row must give, case by case (tests/test_trace_frameworks.py holds recorded
# spans of the venv rows to the same table)
EXPECTED = {
    "orders": {"routing": "pass", "trajectory": "pass", "tool_selection": "pass", "answer": "pass"},
    "billing": {"routing": "pass", "trajectory": "pass", "tool_selection": "pass", "answer": "pass"},
    "no-tool": {"routing": "pass", "trajectory": "pass", "tool_selection": "n/a", "answer": "n/a"},
    "hello": {"routing": "pass", "trajectory": "pass", "tool_selection": "n/a", "answer": "n/a"},
    "misroute": {"routing": "fail", "trajectory": "n/a", "tool_selection": "n/a", "answer": "n/a"},
    "wrong-arg": {"routing": "pass", "trajectory": "n/a", "tool_selection": "fail", "answer": "n/a"},
}
OBSERVED_ROLE = {"orders": "orders", "billing": "billing", "no-tool": "billing", "hello": "triage",
                 "misroute": "orders", "wrong-arg": "orders"}


def cases(names: dict, only: tuple[str, ...] | None = None) -> list[dict]:
    return [c for c in all_cases(names) if only is None or c["id"] in only]


def all_cases(names: dict) -> list[dict]:
    return [
        case("orders", "where is ORD-12?", expect={
            "route": names["orders"], "answer": {"must_contain": ["shipped"]},
            "tools": {"subset": ["lookup_order"], "forbidden": ["get_invoice"]},
            "args": {"lookup_order": {"order_id": "ORD-12"}}}),
        case("billing", "please send invoice INV-7", expect={
            "route": names["billing"], "answer": {"must_contain": ["42.5"]},
            "tools": {"subset": ["get_invoice"], "forbidden": ["lookup_order"]},
            "args": {"get_invoice": {"invoice_id": "INV-7"}}}),
        case("no-tool", "a question about my invoice", expect={
            "route": names["billing"], "tools": {"forbidden": ["lookup_order", "get_invoice"]}}),
        case("hello", "hello there", expect={"route": names["triage"], "tools": {"forbidden": ["lookup_order", "get_invoice"]}}),
        case("misroute", "I was charged twice for ORD-12, invoice INV-3", expect={"route": names["billing"]}),
        case("wrong-arg", "where is ORD-7?", expect={"route": names["orders"], "args": {"lookup_order": {"order_id": "ORD-99"}}}),
    ]


def start_app(row: str, home: Path, **env_extra: str) -> tuple[subprocess.Popen, str, int]:
    python = framework_python(VENV_ROWS[row]) if row in VENV_ROWS else sys.executable
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENINFERENCE_"))}
    env.update(CAPTURE, **env_extra)
    env.update(OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_BSP_SCHEDULE_DELAY="100",
               OPENAI_AGENTS_DISABLE_TRACING="0", PYTHONWARNINGS="ignore")
    if row in VENV_ROWS:
        env.update(environment(home))
    env.pop("PYTHONPATH", None)
    proc = subprocess.Popen([python, str(HERE / "handoffapp.py"), "--flavor", row],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    line = proc.stdout.readline()
    assert line, f"{row}: handoffapp.py did not start"
    return proc, f"http://127.0.0.1:{json.loads(line)['port']}", port


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    """{row: (app_url, otlp_port)}, each row's app started on first use (a worker starts only its rows')."""
    started: dict[str, tuple] = {}

    class Apps(dict):
        def __missing__(self, row):
            proc, url, port = started[row] = start_app(row, tmp_path_factory.mktemp(f"home-{row}"))
            self[row] = (url, port)
            return self[row]
    try:
        yield Apps()
    finally:
        for proc, _, _ in started.values():  # stop the apps we started, by pid
            proc.kill()
            proc.wait(timeout=20)
            proc.stdin.close()
            proc.stdout.close()


def run_row(tmp_path, apps, row: str) -> dict[str, dict]:
    app_url, otlp_port = apps[row]
    convention, names = ROWS[row]
    chosen = cases(names, LIVE_CASES if row in VENV_ROWS else None)
    state = make_state(tmp_path / row)
    # sized for a loaded machine (CI shares its cores): a framework app's answer (several model calls
    # through the framework) can take far longer than fakeapp's 5 s; the waits only cost on a failure
    doc = adapter(app_url, response_body='{"message": "<answer>"}', max_concurrency=4, timeout_s=LOADED_TIMEOUT_S)
    del doc["invocation"]["route_from_response"]
    # the tools a user declares: the domain tools; openai-agents' and langgraph's handoff tools are
    # handoffs (never in the tool log), pydantic-ai's output functions are the user's own tools
    tools = ["lookup_order", "get_invoice"] + (["transfer_to_billing", "transfer_to_orders"]
                                               if row.startswith("pydantic-ai") else [])
    doc["tools"] = [{"name": t, "side_effects": "safe-live"} for t in tools]
    doc["traces"] = {"source": "otlp-http", "location": f"127.0.0.1:{otlp_port}", "convention": convention,
                     "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 300, "max_wait_s": LOADED_TIMEOUT_S}}
    plan = make_plan(state, chosen, adapter_doc=doc)
    out = state / "reports" / plan["run_id"]
    res = run_runner("--plan", write_plan(state, plan), "--out", out)
    assert res.rc == 0, res.stdout + res.stderr
    got = {}
    for c in chosen:
        v = json.loads((cases_view(out) / c["id"] / "verdict.json").read_text())
        traj = cases_view(out) / c["id"] / "trajectory.json"
        assert not v.get("undeclared_tools"), (c["id"], v["undeclared_tools"])
        doc = json.loads(traj.read_text()) if traj.exists() else {}
        got[c["id"]] = {"layers": v["layers"], "trace": v["trace"], "verdict": v["verdict"],
                        "tool_calls": doc.get("tool_calls"), "llm_calls": len(doc.get("llm_calls") or [])}
    return got


def table(got: dict) -> dict:
    keep = ("routing", "trajectory", "tool_selection", "answer")
    return {cid: {k: g["layers"][k]["verdict"] for k in keep} for cid, g in got.items()}


@pytest.mark.parametrize("row", [r for r in ROWS if r not in VENV_ROWS])
def test_routing_is_the_agent_that_handled_the_request(tmp_path, apps, row):
    check_row(tmp_path, apps, row)


def check_row(tmp_path, apps, row: str) -> None:
    """The row's verdicts, routes, handoffs and tool calls (tests/test_handoff_venv_frameworks_e2e.py
    runs the venv rows through it, in a file of their own so that they run beside the others)."""
    got = run_row(tmp_path, apps, row)
    names = ROWS[row][1]
    assert all(g["trace"]["status"] == "ok" for g in got.values()), {c: g["trace"] for c, g in got.items()}
    assert table(got) == {cid: want for cid, want in EXPECTED.items() if cid in got}, {c: {k: g["layers"][k] for k in ("routing", "trajectory", "tool_selection")}
                                    for c, g in got.items()}
    observed = {cid: g["layers"]["routing"]["observed"] for cid, g in got.items()}
    assert observed == {cid: names[role] for cid, role in OBSERVED_ROLE.items() if cid in got}
    assert set(got) == set(LIVE_CASES if row in VENV_ROWS else EXPECTED)
    assert all(g["layers"]["routing"]["observed_from"] == "trace" for g in got.values())
    assert got["misroute"]["verdict"] == "fail" and got.get("wrong-arg", {"verdict": "fail"})["verdict"] == "fail"
    assert got["misroute"]["layers"]["routing"]["observed_via"] == ("answering agent" if row.startswith("pydantic-ai") else "handoff")
    # a handoff is not a tool call: the agent handed to called no tool, and the tool log says so
    assert "no-tool" not in got or got["no-tool"]["tool_calls"] == [] or row.startswith("pydantic-ai"), got["no-tool"]
    # the tool's own arguments and result, whatever envelope the framework records them in
    lookups = [t for t in got["orders"]["tool_calls"] if t["name"] == "lookup_order"]
    assert [(t["arguments"], t["result"]) for t in lookups] == [
        ({"order_id": "ORD-12"}, {"order_id": "ORD-12", "status": "shipped"})], got["orders"]["tool_calls"]
    if row == "autogen-oi":  # AutoGen's LLM span over openinference-openai's: each model call counted once
        assert got["orders"]["llm_calls"] == 3, got["orders"]
