"""Issue 24 D2: a trace setup that can never deliver a span is caught before every case waits.

- otlp-http while the runner's interpreter cannot decode protobuf (opentelemetry-proto missing):
  pre-flight exit 3 naming the full fix and the interpreter (before: exit 5 "app not healthy").
- a span file that does not exist after the first traced case: the run stops, exit 3, naming the
  file (before: every case waited, then exit 5 "re-run when the app is healthy").
- the gate's infra line counts incomplete traces (before: "infra 0.0%" over 7/7 incomplete).
"""

from __future__ import annotations

import json
import sys

from helpers import run_script
from test_run_traces import CASES, AgentApp, write_plan


def shadow_protobuf(tmp_path):
    pkg = tmp_path / "shadow" / "google"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text('raise ImportError("No module named google.protobuf (simulated)")\n')
    return str(tmp_path / "shadow")


def run(tmp_path, app, env=None, **kw):
    plan, out = write_plan(tmp_path, app, **kw)
    res = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never",
                     env={"TRACE_APP_URL": app.url, "TRACE_FILE": str(app.span_file), **(env or {})})
    return res, out


def test_otlp_http_without_the_protobuf_package_is_exit_3_naming_the_interpreter(tmp_path):
    app = AgentApp(tmp_path / "unused.jsonl")
    try:
        res, out = run(tmp_path, app, source="otlp-http", traces_extra={"location": "127.0.0.1:0"},
                       env={"PYTHONPATH": shadow_protobuf(tmp_path)})
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert f"{sys.executable} -m pip install 'opentelemetry-proto" in err
    assert "traces.protocol: http/json" in err
    assert app.requests == 0  # nothing was sent


def test_otlp_http_json_protocol_needs_no_protobuf_package(tmp_path):
    app = AgentApp(tmp_path / "unused.jsonl")
    try:
        res, out = run(tmp_path, app, source="otlp-http", cases=CASES[:1],
                       traces_extra={"location": "127.0.0.1:0", "protocol": "http/json"},
                       env={"PYTHONPATH": shadow_protobuf(tmp_path)})
    finally:
        app.stop()
    assert res.rc != 3, res.stdout  # pre-flight passed; the app exports to a file, so no span arrives
    assert "opentelemetry-proto" not in res.stdout


def test_a_span_file_that_does_not_exist_stops_the_run_with_exit_3(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    many = [dict(CASES[0], id=f"c-many{i:04d}") for i in range(30)]
    try:
        plan, out = write_plan(tmp_path, app, cases=many)
        res = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never",
                         env={"TRACE_APP_URL": app.url, "TRACE_FILE": str(tmp_path / "spanz.jsonl")})  # a typo
    finally:
        app.stop()
    assert res.rc == 3, (res.stdout, res.stderr[-2000:])
    err = json.loads(res.stdout)["error"]
    assert f"the span file {tmp_path / 'spanz.jsonl'} does not exist" in err
    assert "healthy" not in err
    assert app.requests < len(many)  # it stopped instead of sending every case to wait


def test_the_gate_infra_line_counts_incomplete_traces(tmp_path):
    app = AgentApp(tmp_path / "spans.jsonl")
    notrace = next(c for c in CASES if c["id"] == "c-notrace")  # the app writes no span for it
    try:
        (tmp_path / "spans.jsonl").write_text("")
        plan, out = write_plan(tmp_path, app, cases=[CASES[0]] + [dict(notrace, id=f"c-nospan{i}") for i in range(2)])
        res = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never",
                         env={"TRACE_APP_URL": app.url, "TRACE_FILE": str(tmp_path / "spans.jsonl")})
    finally:
        app.stop()
    g = run_script("gate", out, "--no-verify")
    infra = next(line for line in g.stdout.splitlines() if line.strip().startswith("infra "))
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["infra_incomplete"] == 2 and summary["infra_errors"] == 0
    assert "2 of 3 traces incomplete (66.7%)" in infra, infra
