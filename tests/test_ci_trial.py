"""A new-user trial of assay in CI: a tiny unit-converter app, its suite, and the mistakes CI
scripts make (no `set -e`, the reports dir without --latest, a pytest selection that leaves no
case). Each test walks the mistake the way a CI job does and checks that the step cannot read
green while the suite's own news is red, and that the error names what to fix.
"""

from __future__ import annotations

import json
from pathlib import Path

from fakeapp import FakeApp, Reply, _run_runner_in_process
from fixtures_authoring import run_inproc
from helpers import write_yaml

ADAPTER = """\
adapter_version: 1
app: {name: units, repo_access: read-only}
access_level: black
invocation:
  mode: http
  base_url: ${UNITS_URL}
  auth: {type: none}
  endpoint: POST /ask
  request_body: '{"q": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /health, expect_status: [200]}
  route_from_response: route
  timeout_s: 5
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: false}
"""

PROFILE = """\
profile_version: 1
stage: stable
architecture: {kind: router_executor}
oos_handling: route:other
routing_contract: [distance, other]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  multi_turn: {enabled: false, blocked_by: none}
  trajectory: {enabled: false, blocked_by: no traces}
  tool_selection: {enabled: false, blocked_by: no traces}
  execution: {enabled: false, blocked_by: no oracle}
  authz: {enabled: false, blocked_by: no identities}
  state: {enabled: false, blocked_by: reserved}
"""

CASE = """\
id: c-dist0001
unit: distance
split: [smoke, full]
category: happy
test_type: MFT
template_id: null
review: {status: accepted, by: Ana Reviewer}
input:
  messages:
    - {role: user, content: "How many miles is 10 km?"}
expect:
  route: distance
  answer: {must_contain: ["6.21 miles"]}
"""


def units_app() -> FakeApp:
    return FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET"
                   else Reply(200, {"answer": "10 km is 6.21 miles.", "route": "distance"}))


def write_state(root: Path) -> Path:
    state = root / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-dist0001.yaml", CASE)
    return state


def plan(state: Path, run_id: str):
    work = state / "work"
    r = run_inproc("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    return run_inproc("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "-o", work / "plan.json", "--run-id", run_id)


def test_a_refused_plan_is_never_gated_by_latest_as_the_previous_green_run(tmp_path):
    """CI without `set -e`: make_plan.py refuses today's suite (a typo'd key), the runner then has
    nothing to run, and `gate.py reports --latest` used to gate yesterday's green run: exit 0, a
    green CI step over a suite that was never run. The refusal is now recorded beside the runs
    (as a pre-flight refusal is) and --latest exits 2 naming it."""
    state = write_state(tmp_path)
    green = "smoke-20261201T000000Z"
    assert plan(state, green).rc == 0
    with units_app() as app:
        r = _run_runner_in_process("--plan", state / "work" / "plan.json", "--out", state / "reports" / green,
                                   "--progress", "never", env={"UNITS_URL": app.url})
    assert r.rc == 0, r.stdout
    assert run_inproc("gate", state / "reports", "--latest", "--mode", "smoke").rc == 0

    case = state / "datasets" / "c-dist0001.yaml"
    case.write_text(CASE.replace("unit: distance\n", "unit: distance\ngatng: true\n"), encoding="utf-8")
    refused = plan(state, "smoke-20261202T000000Z")
    assert refused.rc == 2 and "unknown_key" in refused.stdout, refused.stdout

    gated = run_inproc("gate", state / "reports", "--latest", "--mode", "smoke", "--json")
    doc = json.loads(gated.stdout)
    assert gated.rc == 2, gated.stdout
    assert doc["not_started"] is True and doc["run_id"] == "smoke-20261202T000000Z", doc
    assert "make_plan.py exit 2" in doc["error"] and "gatng" in doc["error"], doc["error"]
    assert f"will not gate {green}" in doc["error"], doc["error"]
    # the run dir given by its path is gated as always
    assert run_inproc("gate", state / "reports" / green).rc == 0


def test_latest_after_a_refused_plan_says_the_plan_was_refused_and_names_the_command_to_plan_again(tmp_path):
    """convert_suite.py, then make_plan.py given the state dir where the converted suite goes (a first
    mistake), then `gate.py --latest`: the gate used to say "the newest run, <id>, never started", a
    run the user never started, with no command. The refusal is still recorded (the CI step without
    `set -e` must not gate an older run), and the gate now says the plan was refused, that it never
    became a run, and the make_plan.py command that plans it again (which works as given)."""
    import shlex
    import subprocess
    import sys

    from helpers import run_script
    state = write_state(tmp_path)
    (state / "reports").mkdir()   # runs were made here before
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    refused = run_script("make_plan", state, "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert refused.rc == 2 and "run convert_suite.py first" in refused.json["error"], refused.stdout

    gated = run_script("gate", state / "reports", "--latest", "--json")
    assert gated.rc == 2, gated.stdout
    doc = gated.json
    assert doc["not_started"] is True and doc["refused_plan"] is True, doc
    error = doc["error"]
    assert f"the newest plan, {doc['run_id']}, was refused (make_plan.py exit 2: cannot read {state}" in error, error
    assert "it never became a run" in error and "never started" not in error, error
    command = error.split("plan again: ", 1)[1].split("; then run the plan it writes", 1)[0]
    argv = shlex.split(command)
    assert argv[0] == "python3" and argv[1].endswith("make_plan.py"), command
    assert argv[2:] == [str(work / "converted.json"), "--mode", "smoke", "--state-dir", str(state),
                        "-o", str(work / "plan.json")], command
    again = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and (work / "plan.json").is_file(), again.stdout + again.stderr


def test_pytest_session_no_case_ran_a_missing_baseline_and_skips_named_by_case(tmp_path):
    """`pytest --assay .assay -m unit` (or a -k that matches no case): every case deselected, no run,
    no gate. The terminal section used to read `assay gate: open` over a suite that never ran.
    `--assay-baseline` naming a run dir that is not there used to fail with the runner's own flag
    (`--baseline-verdicts ...`), a flag the user never typed."""
    import os
    import subprocess
    import sys
    state = write_state(tmp_path)
    (tmp_path / "test_unit.py").write_text("def test_unit():\n    assert True\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    pytest_cmd = [sys.executable, "-m", "pytest", "-p", "no:langsmith_plugin", "-p", "no:cacheprovider",
                  "--assay", str(state), "--assay-mode", "smoke"]
    none = subprocess.run([*pytest_cmd, "-k", "test_unit"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert none.returncode == 0 and "1 passed, 1 deselected" in none.stdout, none.stdout + none.stderr
    assert "assay gate: not gated (no case ran)" in none.stdout and "assay gate: open" not in none.stdout
    assert "every case was deselected (by -k 'test_unit' (command line)): nothing run, no gate" in none.stdout
    missing = subprocess.run([*pytest_cmd, "--assay-baseline", str(tmp_path / "nope")], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 4, missing.stdout + missing.stderr
    assert f"--assay-baseline {tmp_path / 'nope'}: not a finished run directory" in missing.stderr
    assert "--baseline-verdicts" not in missing.stderr and not (state / "reports").exists()
    # a failed canary stops the run: `-rs` lists each case not run under its own node id (it used to
    # be the plugin's items.py:<line>, one folded line naming no case)
    write_yaml(state / "datasets" / "c-ping0001.yaml",
               CASE.replace("c-dist0001", "c-ping0001").replace("[smoke, full]", "[smoke, canary]"))
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET"
                 else Reply(200, {"answer": "nope", "route": "distance"})) as app:
        stopped = subprocess.run([*pytest_cmd, "-rs"], cwd=tmp_path, env={**env, "UNITS_URL": app.url},
                                 capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 1 and "assay gate: CLOSED" in stopped.stdout, stopped.stdout + stopped.stderr
    assert "SKIPPED [1] .assay::c-dist0001: not run: run_cases.py exit 4" in stopped.stdout, stopped.stdout
    assert "items.py" not in stopped.stdout


def test_gate_on_the_reports_dir_suggests_the_newest_run_not_the_last_by_name(tmp_path):
    """`gate.py .assay/reports` (no --latest) is refused with an example run dir to pass. It used to
    be the last name in sort order: `targeted-...` sorts after `smoke-...`, so a user copying it
    gated last week's green targeted run instead of today's red smoke run."""
    reports = tmp_path / ".assay" / "reports"
    for name in ("targeted-20261101T000000Z", "smoke-20261202T000000Z", "smoke-20261201T000000Z"):
        write_yaml(reports / name / "results.json", "{}")
    r = run_inproc("gate", reports)
    error = json.loads(r.stdout)["error"]
    assert r.rc == 2 and f"e.g. the newest, {reports / 'smoke-20261202T000000Z'} " in error, error
