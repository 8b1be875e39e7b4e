"""Spans that arrive after their case was scored: the gate closes instead of passing on half a trace.

An app whose request is two root spans (a guard model call, then the agent) can have the agent's
batch exported after the trace was read as complete (its quiet time had passed): the forbidden tool
the agent called was never seen, and the case passed. The runner looks again at the end of the run;
the gate names those cases. The app here is a real HTTP server on its own port that writes its
spans to a span file: the guard's at once, the agent's (with the forbidden `issue_refund`) only when
the next request arrives, i.e. after the runner (one case at a time) scored the first case.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from assay.traces.otlp_writer import new_span_id, parse_traceparent, span, write_spans
from fakeapp import FakeApp, Reply
from helpers import run_script

RUN_ID = "smoke-20261205T120000Z"


class TwoRootApp:
    """POST {"message"} -> its spans in `span_file`: a guard chat span, then an agent calling issue_refund.
    With `late`, the agent's spans of one request are written when the next request arrives."""

    def __init__(self, span_file: Path, late: bool) -> None:
        self.span_file, self.late = span_file, late
        self.pending: list[list[dict]] = []
        self.lock = threading.Lock()

    def __call__(self, req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        with self.lock:
            for spans in self.pending:      # the previous request's agent batch, exported late
                write_spans(self.span_file, spans)
            self.pending = []
            trace_id, caller = parse_traceparent(req.headers.get("traceparent") or req.headers.get("Traceparent"))
            t = 1_700_000_000_000_000_000
            said = [{"role": "assistant", "parts": [{"type": "text", "content": "ok"}], "finish_reason": "stop"}]
            guard = span(trace_id=trace_id, parent_span_id=caller, operation="chat", model="guard",
                         start_ns=t, end_ns=t + 1000, attributes={"gen_ai.output.messages": json.dumps(said),
                                                                  "gen_ai.response.finish_reasons": ["stop"]})
            agent_id = new_span_id()
            agent = [span(trace_id=trace_id, parent_span_id=agent_id, operation="execute_tool", tool="issue_refund",
                          arguments={"invoice_id": "INV-1001", "amount": 20}, result={"ok": True},
                          start_ns=t + 3000, end_ns=t + 4000),
                     span(trace_id=trace_id, span_id=agent_id, parent_span_id=caller, operation="invoke_agent",
                          agent="billing", start_ns=t + 2000, end_ns=t + 5000)]
            write_spans(self.span_file, [guard])
            if self.late:
                self.pending.append(agent)
            else:
                write_spans(self.span_file, agent)
        return Reply(200, {"answer": "Refunded INV-1001."})


def case(cid: str, expect: dict) -> dict:
    return {"id": cid, "split": ["smoke"], "category": "happy", "test_type": "MFT", "template_id": None,
            "input": {"messages": [{"role": "user", "content": f"refund INV-1001 ({cid})"}]}, "expect": expect}


def write_plan(tmp: Path, cases: list[dict], shards: int = 0) -> tuple[Path, Path, Path]:
    """(plan.json, the state dir, the span file) for a one-at-a-time run against a TwoRootApp."""
    state = tmp / ".assay"
    (state / "reports").mkdir(parents=True)
    spans = tmp / "spans.jsonl"
    spans.touch()
    adapter = {
        "adapter_version": 1,
        "invocation": {"mode": "http", "base_url": "${LATE_APP_URL}", "auth": {"type": "none"},
                       "endpoint": "POST /chat", "request_body": '{"message": "<user turn>"}',
                       "response_body": '{"answer": "<answer>"}', "timeout_s": 10, "max_concurrency": 1},
        "traces": {"source": "otlp-file", "location": "${LATE_SPANS}", "convention": "gen_ai",
                   "correlation": "traceparent-echo", "completeness": {"quiescence_ms": 100, "max_wait_s": 20}},
        "tools": [{"name": "lookup_invoice", "side_effects": "safe-live"},
                  {"name": "issue_refund", "side_effects": "needs-mock"}],
    }
    plan = {"plan_version": 1, "run_id": RUN_ID, "mode": "smoke", "k": 1, "gate": "soft", "selecting_split": "smoke",
            "paths": {"state_dir": str(state)}, "adapter": adapter, "capability_matrix": {}, "cases": cases,
            "execution": {"max_attempts": 1, "backoff_s": []}}
    if shards:
        from assay.shard.assign import add_shards
        plan = add_shards(plan, shards)
    (tmp / "plan.json").write_text(json.dumps(plan))
    return tmp / "plan.json", state, spans


def run_and_gate(tmp: Path, late: bool):
    cases = [case("c-forbid", {"tools": {"forbidden": ["issue_refund"]}}),
             case("c-authz", {"authz": {"forbidden_tools": ["issue_refund"]}}),
             case("c-last", {"answer": {"must_contain": ["Refunded"]}})]
    plan, state, spans = write_plan(tmp, cases)
    out = state / "reports" / RUN_ID
    with FakeApp(TwoRootApp(spans, late)) as app:
        ran = run_script("run_cases", "--plan", plan, "--out", out,
                         env={"LATE_APP_URL": app.url, "LATE_SPANS": str(spans)})
    assert ran.rc == 0, (ran.stdout, ran.stderr[-3000:])
    return out, run_script("gate.py", out)


def test_spans_arriving_after_the_case_was_scored_close_the_gate(tmp_path):
    out, gate = run_and_gate(tmp_path, late=True)
    # the forbidden tool came after the trace was read: both checks saw only the guard's chat span
    rows = {json.loads(line)["case_id"]: json.loads(line)["verdict"] for line in (out / "cases.jsonl").open()}
    assert rows["c-forbid"]["verdict"] == "pass" and rows["c-authz"]["verdict"] == "pass"
    late = json.loads((out / "results.json").read_text())["late_spans"]
    named = {r["case_id"]: (r["spans_scored"], r["spans_seen"]) for r in late["cases"]}
    assert named["c-forbid"] == (1, 3) and named["c-authz"] == (1, 3), late
    assert gate.rc == 1, gate.stdout
    assert "were scored on part of their trace" in gate.stdout and "c-forbid (1 of 3 spans)" in gate.stdout
    assert "quiescence_ms" in gate.stdout


def test_spans_on_time_keep_the_forbidden_tool_and_record_no_late_spans(tmp_path):
    out, gate = run_and_gate(tmp_path, late=False)
    rows = {json.loads(line)["case_id"]: json.loads(line)["verdict"] for line in (out / "cases.jsonl").open()}
    assert rows["c-forbid"]["verdict"] == "fail" and rows["c-authz"]["verdict"] == "fail"
    assert "late_spans" not in json.loads((out / "results.json").read_text())
    assert gate.rc == 1 and "part of their trace" not in gate.stdout


def test_a_merged_run_keeps_its_shards_late_spans(tmp_path):
    cases = [case(f"c-{i}", {"tools": {"forbidden": ["issue_refund"]}}) for i in range(6)]
    plan, state, spans = write_plan(tmp_path, cases, shards=2)
    dirs, late = [], {}
    with FakeApp(TwoRootApp(spans, True)) as app:
        for i in (1, 2):
            out = state / "reports" / f"{RUN_ID}.shard-{i}"
            ran = run_script("run_cases", "--plan", plan, "--shard", i, "--out", out,
                             env={"LATE_APP_URL": app.url, "LATE_SPANS": str(spans)})
            assert ran.rc == 0, (ran.stdout, ran.stderr[-3000:])
            late[i] = json.loads((out / "results.json").read_text()).get("late_spans", {}).get("cases", [])
            dirs.append(out)
    assert late[1] and late[2], late   # every shard had a case before its last one, whose batch came late
    merged = run_script("merge_runs", "--plan", plan, "--out", state / "reports" / RUN_ID, *dirs)
    assert merged.rc == 0, (merged.stdout, merged.stderr[-3000:])
    got = json.loads((state / "reports" / RUN_ID / "results.json").read_text())["late_spans"]["cases"]
    assert sorted(r["case_id"] for r in got) == sorted(r["case_id"] for r in late[1] + late[2])
    gate = run_script("gate.py", state / "reports" / RUN_ID)
    assert gate.rc == 1 and "were scored on part of their trace" in gate.stdout, gate.stdout
