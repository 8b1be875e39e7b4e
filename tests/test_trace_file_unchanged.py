"""A span file that can deliver no case's trace stops the run (exit 3) naming why, as a missing one does.

- `traces.location` names a file that exists but the app never writes (empty, or spans of an earlier
  run left in it): before, cases waited max_wait_s for nothing until the infra rate stopped the run,
  exit 5 "re-run when the app is healthy", the file never named.
- the app writes its spans to the file under trace ids of its own (it does not continue the runner's
  traceparent): before, exit 5 "re-run when the app is healthy" over a healthy app; the otlp-http
  source already said the fix, the file source now says the same.
- the file holds binary protobuf (the Collector's file exporter with `format: proto`): before, every
  case "no span ... arrived in the span file", then exit 5; now exit 3 naming the format and the fix.
"""

from __future__ import annotations

import json

import pytest

from helpers import run_script
from otlp_util import agent_spans, new_trace_id, traces_data
from test_run_traces import CASES, AgentApp, write_plan

MANY = [dict(CASES[0], id=f"c-many{i:04d}") for i in range(30)]


def run(tmp_path, app, span_file):
    plan, out = write_plan(tmp_path, app, cases=MANY)
    res = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never",
                     env={"TRACE_APP_URL": app.url, "TRACE_FILE": str(span_file)})
    return res


def test_an_empty_span_file_the_app_never_writes_stops_the_run_with_exit_3(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")   # the app exports here...
    (tmp_path / "spanz.jsonl").write_text("")    # ...the adapter names another, empty file
    try:
        res = run(tmp_path, app, tmp_path / "spanz.jsonl")
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert f"the span file {tmp_path / 'spanz.jsonl'} has not changed since the run started (it is empty)" in err
    assert "healthy" not in err
    assert app.requests < len(MANY)


def test_a_span_file_holding_only_an_earlier_runs_spans_stops_the_run_with_exit_3(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    stale = tmp_path / "old-spans.jsonl"
    stale.write_text(json.dumps(traces_data(agent_spans(new_trace_id(), "billing"))) + "\n")
    try:
        res = run(tmp_path, app, stale)
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert "has not changed since the run started (it holds 2 span(s) from before this run)" in err, err
    assert app.requests < len(MANY)


class NoEchoApp(AgentApp):
    """Writes every request's spans under a trace id of its own: the runner's traceparent is dropped."""

    def handle(self, message, traceparent):
        return super().handle(message, None)


def test_spans_under_the_apps_own_trace_ids_stop_the_run_naming_the_traceparent_fix(tmp_path):
    app = NoEchoApp(tmp_path / "spans.jsonl")
    (tmp_path / "spans.jsonl").write_text("")
    try:
        res = run(tmp_path, app, tmp_path / "spans.jsonl")
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert "were written to the span file" in err and "none of them a case's" in err, err
    assert "does not continue the runner's traceparent header" in err and "healthy" not in err, err
    assert app.requests < len(MANY)


class ProtobufFileApp(AgentApp):
    """Exports each request's spans as binary protobuf (length-prefixed, as the Collector's file exporter
    writes with `format: proto`) to `binary`; `newlines`: the bytes happen to hold newline characters."""

    def __init__(self, binary, *, newlines: bool):
        super().__init__(binary.with_name("unused-json-spans.jsonl"))
        self.binary, self.newlines = binary, newlines

    def handle(self, message, traceparent):
        out = super().handle(message, traceparent)
        blob = bytes(range(11, 120)) + (b"\n\x12\x08\n" if self.newlines else b"")
        with open(self.binary, "ab") as fh:
            fh.write(len(blob).to_bytes(4, "big") + blob)
        return out


@pytest.mark.parametrize("newlines", [False, True])
def test_a_binary_protobuf_span_file_stops_the_run_naming_the_format(tmp_path, newlines):
    binary = tmp_path / "spans.pb"
    app = ProtobufFileApp(binary, newlines=newlines)
    try:
        res = run(tmp_path, app, binary)
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert f"the span file {binary} holds" in err and "not OTLP JSON" in err, err
    assert "format: json" in err and "healthy" not in err, err
    assert app.requests < len(MANY)
