"""No silent green (wave 2 §1): the mistakes a new user makes on a new app fail loudly.

Each test writes a state dir in YAML the way a user does (a small "travel" app that quotes
prices), drives convert_suite -> make_plan -> run_cases -> gate against a real HTTP app on
a loopback port, and checks what the user sees.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakeapp import FakeApp, Reply, run_runner
from fixtures_authoring import run_inproc
from helpers import run_script, write_yaml
from rundir_util import cases_view

ADAPTER = """\
adapter_version: 1
app: {name: travel, repo: .., repo_access: read-only}
access_level: black
data: {may_contain_pii: false}
invocation:
  mode: http
  base_url: ${TRAVEL_BASE_URL}
  auth: {type: none}
  endpoint: POST /api/chat
  request_body: '{"message": "<user turn>", "session_id": "<uuid>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: route
  result_from_response: RESULT_PATH
  timeout_s: 5
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: true}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
route_targets:
  - {name: quotes, description: price quotes}
oos_handling: route:none
capability_matrix:
  answer_quality: {enabled: true, judged: false}
  routing: {enabled: true}
  execution: {enabled: true}
  authz: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
  multi_turn: {enabled: false, blocked_by: not declared}
  cost_latency: {enabled: false, blocked_by: no traces}
  state: {enabled: false, blocked_by: reserved}
judge: {model: null, status: uncalibrated}
"""


def case_yaml(cid: str, *, expect: str | None = "  route: quotes\n  result: {scalar: 120}\n", top: str = "",
              content: str = "How much is a flight to Oslo?") -> str:
    text = (f"id: {cid}\nunit: quotes\nsplit: [smoke, full]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
            f"review: {{status: accepted, by: Dana Reviewer, at: '2026-11-01'}}\n{top}"
            f"input:\n  messages:\n    - role: user\n      content: {json.dumps(content)}\n")
    return text + (f"expect:\n{expect}" if expect is not None else "")


def travel_reply(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"answer": "A flight to Oslo costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})


def write_state(root: Path, cases: dict[str, str], *, result_path: str = "quote.price") -> Path:
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", result_path))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in cases.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", text)
    return state


def plan(state: Path, *extra) -> tuple[int, dict, Path]:
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    out = work / "plan.json"
    r = run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", out,
                   "--run-id", "smoke-20261130T000000Z", *extra)
    assert "Traceback" not in r.stderr
    return r.rc, r.json, out


def refused_plan(state: Path) -> dict:
    """convert_suite.py then make_plan.py, as a user runs them (subprocesses): make_plan refuses the suite
    (exit 2, no plan written); its refusal (`error` names each finding's file, line, case and code;
    `errors` lists them)."""
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json")
    assert r.rc == 2 and not (work / "plan.json").exists(), r.stdout
    return r.json


def run(state: Path, plan_file: Path, app: FakeApp) -> Path:
    out = state / "reports" / "smoke-20261130T000000Z"
    r = run_runner("--plan", plan_file, "--out", out, env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 0, (r.stdout, r.stderr)
    return out


# ---------------------------------------------------------------- 1. hollow layer
def test_wrong_result_path_closes_the_gate_naming_layer_count_reason_and_key(tmp_path):
    cases = {f"c-0000000{i}": case_yaml(f"c-0000000{i}") for i in range(1, 4)}
    state = write_state(tmp_path, cases, result_path="quote.prize")  # the app returns quote.price
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    results = json.loads((run_dir / "results.json").read_text())
    # routing passed, but a check each case asserts never ran: never a pass (unscored, named)
    assert results["summary"]["passes"] == 0 and results["summary"]["unscored"] == 3
    assert results["summary"]["hollow_layers"]["execution"]["cases"] == 3
    g = run_script("gate", run_dir)
    assert g.rc == 1, g.stdout
    closed = [line for line in g.stdout.splitlines() if "layer execution" in line]
    assert closed and closed[0].startswith("  gate closed: layer execution was asserted by 3 case(s) and scored in none")
    assert "'quote.prize' is absent" in closed[0] and "result_from_response" in closed[0]
    assert g.stdout.splitlines()[0].split(" -- closed: ")[0].endswith(": FAIL")


def test_right_result_path_keeps_the_gate_open(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    g = run_script("gate", run_dir, "--no-verify")
    assert g.rc == 0, g.stdout
    assert json.loads((run_dir / "results.json").read_text())["summary"]["hollow_layers"] == {}


# ---------------------------------------------------------------- 2. hollow case
def test_a_case_asserting_only_liveness_is_unscored_not_pass(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", expect="  {}\n"),
                                   "c-00000003": case_yaml("c-00000003", expect="  http: {status: 200}\n")})
    rc, refusal, _ = plan(state)
    assert rc == 2 and "no_graded_layer" in refusal["error"]  # item 3 refuses it first
    rc, summary, plan_file = plan(state, "--allow-invalid")
    assert rc == 0 and summary["validation"]["allow_invalid"] is True
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    for cid in ("c-00000002", "c-00000003"):
        verdict = json.loads((cases_view(run_dir) / cid / "verdict.json").read_text())
        assert verdict["layers"]["http"]["verdict"] == "pass"
        assert (verdict["verdict"], verdict["unscored_reason"]) == ("unscored", "nothing asserted beyond liveness")
    s = json.loads((run_dir / "results.json").read_text())["summary"]
    assert (s["passes"], s["unscored"]) == (1, 2)
    manifest = json.loads((run_dir / "manifest.yaml").read_text())  # JSON bytes
    assert manifest["manifest_extra"]["validation"]["allow_invalid"] is True
    assert manifest["manifest_extra"]["validation"]["error_codes"] == ["no_graded_layer"]


# ---------------------------------------------------------------- 3. make_plan runs the linter
def test_make_plan_refuses_linter_errors_naming_case_file_line_and_code(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001"),
                                   "c-00000002": case_yaml("c-00000002", expect=None),
                                   "c-00000003": case_yaml("c-00000003", expect="  rout: quotes\n")})
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    out = work / "plan.json"
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", out)
    assert r.rc == 2 and not out.exists()
    err = r.json["error"]
    assert "datasets/c-00000003.yaml:13: c-00000003 [unknown_expect_key] expect.rout" in err
    assert "did you mean 'route'?" in err
    assert "datasets/c-00000002.yaml:" in err and "c-00000002 [no_graded_layer] the case has no expect" in err
    assert "--allow-invalid" in err
    assert {(e["case_id"], e["code"]) for e in r.json["errors"]} >= {("c-00000002", "no_graded_layer"),
                                                                    ("c-00000003", "unknown_expect_key")}


# ---------------------------------------------------------------- 4. misspelled top-level keys
@pytest.mark.parametrize("typo, known, line", [("gatng: false\n", "gating", 8), ("catgory: happy\n", "category", 8)])
def test_misspelled_case_key_is_an_error_with_the_closest_key(tmp_path, typo, known, line):
    text = case_yaml("c-00000001", top=typo)
    if typo.startswith("catgory"):
        text = text.replace("category: happy\n", "")
        line -= 1
    state = write_state(tmp_path, {"c-00000001": text})
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    v = run_inproc("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    assert v.rc == 1
    rows = [f for f in v.json["findings"] if f["code"] == "unknown_key"]
    assert rows and rows[0]["severity"] == "ERROR" and f"did you mean {known!r}?" in rows[0]["message"]
    assert rows[0]["source"] == "datasets/c-00000001.yaml"
    rc, refusal, _ = plan(state)
    assert rc == 2
    assert f"datasets/c-00000001.yaml:{line}: c-00000001 [unknown_key] '{typo.split(':')[0]}'" in refusal["error"]


def test_schema_unknown_keys_suggest_the_closest(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    adapter = (state / "adapter.yaml").read_text().replace("  timeout_s: 5\n", "  timeout_sec: 5\n")
    (state / "adapter.yaml").write_text(adapter)
    r = run_inproc("convert_suite", state, "-o", state / "work" / "converted.json")
    assert r.rc == 2
    assert "adapter.yaml:15: invocation" in r.json["error"] and "'timeout_sec'; did you mean 'timeout_s'?" in r.json["error"]


# ---------------------------------------------------------------- 5. a canary failure explains itself
def test_wrong_api_key_is_named_as_authentication_with_what_the_canary_got(tmp_path):
    from fakeapp import adapter, case, make_plan as plan_doc, write_plan, make_state

    def reject(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(401, {"error": "bad api key", "echo": req.headers.get("Authorization", "")})

    state = make_state(tmp_path)
    cases = [case("c-canary1", "ping", split=("smoke", "canary")), case("c-00000001", "hello")]
    with FakeApp(reject) as app:
        doc = adapter("${TRAVEL_BASE_URL}", auth={"type": "bearer", "token_env": "TRAVEL_TOKEN"})
        plan_file = write_plan(state, plan_doc(state, cases, adapter_doc=doc))
        out = state / "reports" / "smoke-20261129T101500Z"
        r = run_runner("--plan", plan_file, "--out", out,
                       env={"TRAVEL_BASE_URL": app.url, "TRAVEL_TOKEN": "sk-wrong-key-1234"})
    assert r.rc == 4, r.stdout
    err = r.json["error"]
    assert "canary c-canary1 failed on http: got HTTP 401 {" in err and '"error":"bad api key"' in err
    assert '"echo":"Bearer <redacted>"' in err
    assert "an authentication problem, not drift" in err and "$TRAVEL_TOKEN" in err
    assert "sk-wrong-key-1234" not in r.stdout + r.stderr
    g = run_script("gate", out, "--no-verify")
    assert g.rc == 1
    assert "  gate closed: canary c-canary1 failed on http: got HTTP 401 {" in g.stdout
    assert "authentication problem" in g.stdout and "sk-wrong-key-1234" not in g.stdout


# ---------------------------------------------------------------- 6. errors show resolved values
def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("value, expected", [
    ("http://127.0.0.1:{port}", "health check GET ${TRAVEL_BASE_URL}/health (resolved: http://127.0.0.1:{port}/health) "
                                "failed"),
    ("127.0.0.1:{port}", "invocation.base_url '${TRAVEL_BASE_URL}' resolved to '127.0.0.1:{port}', which is not an "
                         "http(s) URL with a host; set $TRAVEL_BASE_URL to e.g."),
])
def test_errors_show_the_resolved_url_and_name_the_env_var(tmp_path, value, expected):
    from fakeapp import adapter, case, make_plan as plan_doc, write_plan, make_state

    port = _free_port()  # nothing listens here
    state = make_state(tmp_path)
    doc = adapter("${TRAVEL_BASE_URL}", auth={"type": "bearer", "token_env": "TRAVEL_TOKEN"})
    plan_file = write_plan(state, plan_doc(state, [case("c-00000001")], adapter_doc=doc))
    r = run_runner("--plan", plan_file, "--out", state / "reports" / "smoke-20261129T101500Z",
                   env={"TRAVEL_BASE_URL": value.replace("{port}", str(port)), "TRAVEL_TOKEN": "sk-secret-5678"})
    assert r.rc == 3, r.stdout
    err = r.json["error"]
    assert expected.replace("{port}", str(port)) in err
    if value.startswith("http"):
        assert "fix $TRAVEL_BASE_URL (invocation.base_url) / invocation.health_check" in err
    assert "sk-secret-5678" not in r.stdout + r.stderr


# ---------------------------------------------------------------- 8 + 12: one wording, titles, JUnit, text
def test_every_tool_counts_the_same_way_and_titles_show_beside_ids(tmp_path):
    cases = {"c-00000001": case_yaml("c-00000001", top="title: Oslo flight price\n",
                                     expect="  route: quotes\n  result: {scalar: 99}\n"),
             "c-00000002": case_yaml("c-00000002"),
             "c-canary01": case_yaml("c-canary01").replace("split: [smoke, full]", "split: [smoke, canary]")}
    state = write_state(tmp_path, cases)
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    plan_file = work / "plan.json"
    p = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", plan_file,
                   "--run-id", "smoke-20261130T000000Z")
    assert p.rc == 0 and p.json["counts"] == "2 cases + 1 canary" and "2 cases + 1 canary, k=1" in p.stderr
    out = state / "reports" / "smoke-20261130T000000Z"
    with FakeApp(travel_reply) as app:
        r = run_runner("--plan", plan_file, "--out", out, "--progress", "always", env={"TRAVEL_BASE_URL": app.url})
    assert r.rc == 0 and "assay: 3/3 (2 cases + 1 canary) | pass 2 fail 1" in r.stderr
    junit = tmp_path / "junit.xml"
    g = run_script("gate", out, "--junit", junit)
    assert g.rc == 1
    assert g.stdout.splitlines()[1].startswith("  2 cases + 1 canary: 1 pass, 1 fail (1 gating)")
    assert 'c-00000001 "Oslo flight price" (execution)' in g.stdout
    assert "  soft gate (smoke, k=1): closes on the same reasons as a hard gate" in g.stdout
    xml = junit.read_text(encoding="utf-8")
    assert 'name="c-00000001: Oslo flight price"' in xml
    assert "execution: expected {&quot;scalar&quot;: 99}, actual {&quot;scalar&quot;: 120" in xml
    assert "input: How much is a flight to Oslo?" in xml and "actual: A flight to Oslo costs 120 EUR." in xml
    assert run_script("draft_report", out).rc == 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "**FAIL · gate closed** · 2 cases + 1 canary: 1 pass, 1 fail" in report
    assert "2 cases + 1 canary ran; 1 failed" in report
    assert "### `c-00000001` (Oslo flight price): failed execution" in report   # no case dir to link: the journal


def test_stats_text_prints_a_human_summary(tmp_path):
    base, cand = tmp_path / "base.jsonl", tmp_path / "cand.jsonl"
    base.write_text("".join(json.dumps({"case_id": f"c-{i}", "verdict": "pass" if i % 2 else "fail"}) + "\n"
                            for i in range(20)))
    cand.write_text("".join(json.dumps({"case_id": f"c-{i}", "verdict": "pass"}) + "\n" for i in range(20)))
    r = run_script("stats", base, cand, "--text")
    assert r.rc == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0] == "IMPROVED: pass rate 50.0% -> 100.0% (+50.0 pp) over n=20 paired cases"
    assert lines[1] == "  fixed by the candidate: 10; broken: 0"


def test_validate_names_split_dir_when_its_files_are_missing(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001")})
    work = state / "work"
    assert run_inproc("convert_suite", state, "-o", work / "converted.json").rc == 0  # no --split-dir
    r = run_inproc("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    assert r.rc == 2 and "--split-dir" in r.json["error"] and "suite.json" in r.json["error"]


def test_wait_run_says_it_is_waiting_at_least_every_5_s(tmp_path):
    import fcntl
    import io
    import os

    from assay.report.wait import EXIT_RUNNING, wait_for_run

    run_dir = tmp_path / "reports" / "smoke-20261130T000000Z"
    run_dir.mkdir(parents=True)
    (run_dir / "results.json").write_text(json.dumps({"run_id": run_dir.name, "summary": {
        "status": "running", "n": 3, "canaries": {"n": 1}}}))
    # what finished is counted from the case dirs (results.json lags a batch), out of the manifest's plan
    (run_dir / "manifest.yaml").write_text(json.dumps({"cases": [{"id": f"c-{i}"} for i in range(6)]}))
    for i in range(4):
        (run_dir / "cases" / f"c-{i}").mkdir(parents=True)
        (run_dir / "cases" / f"c-{i}" / "verdict.json").write_text("{}")
    fd = os.open(tmp_path / "reports" / f".{run_dir.name}.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live runner holds its lock
    now = [0.0]
    slept = []
    err = io.StringIO()
    try:
        code, doc = wait_for_run(run_dir, timeout_s=30, interval_s=60, clock=lambda: now[0],
                                 sleep=lambda s: (slept.append(s), now.__setitem__(0, now[0] + s)), stderr=err)
    finally:
        os.close(fd)
    assert code == EXIT_RUNNING and doc["status"] == "running"
    notes = err.getvalue().splitlines()
    assert max(slept) <= 5.0 and len(notes) >= 6
    assert notes[0] == f"wait_run: {run_dir.name} is still running (4 of 6 planned case(s) finished so far); waited 0 s of 30 s"


def test_a_killed_runner_is_reported_as_interrupted_with_what_finished(tmp_path):
    import os
    import signal
    import subprocess
    import time

    from fakeapp import adapter, case, make_plan as plan_doc, write_plan, make_state
    from helpers import SCRIPTS

    state = make_state(tmp_path)
    cases = [case(f"c-{i:08d}", "hello", expect={"answer": {"must_contain": ["hello"]}}) for i in range(12)]
    with FakeApp() as app:
        app.handler = lambda req: Reply(200, {"ok": True}) if req.method == "GET" else \
            Reply(200, {"message": "hello there"}, delay=0.4)
        doc = plan_doc(state, cases, app_url=app.url)
        doc["adapter"]["invocation"]["max_concurrency"] = 1
        out = state / "reports" / doc["run_id"]
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(write_plan(state, doc)),
                                 "--out", str(out), "--progress", "never"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while len(list((cases_view(out)).glob("*/verdict.json"))) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    finished = len(list((cases_view(out)).glob("*/verdict.json")))
    assert 2 <= finished < 12
    g = run_script("gate", out, "--no-verify")
    assert g.rc == 1, g.stdout
    assert g.stdout.splitlines()[1].startswith(f"  {finished} case{'s' if finished != 1 else ''} + 0 canaries: "
                                               f"{finished} pass")
    assert (f"run interrupted: status is still 'running' but no runner holds its lock (killed?); "
            f"{finished} case") in g.stdout and "of 12 cases + 0 canaries planned" in g.stdout
    assert "--resume" in g.stdout
