"""report.md's PASS/FAIL banner is gate.py's decision with the gate's own flags (the one verdict), and says
which flags it reflects. Found in a trial of the written reports: a CI gating with `--require-canaries`,
a budget flag or `--max-infra-rate 0` closed while report.md and report.html said "PASS · gate open"
(draft_report.py took no gate flag at all); a run dir that failed the completeness check read PASS in
the report; `draft_report.py --baseline` left the newly failing reason out of its banner; a provisional
judge's fail, on gate.py's first screen, was missing from the PASS banner. Driven as a user drives it:
the README's pipeline as subprocesses against a real HTTP app on its own loopback port.
"""

from __future__ import annotations

import json
import time

import pytest

from fakeapp import FakeApp, Reply
from helpers import run_script, write_yaml

pytestmark = pytest.mark.slow   # a few seconds or more: scheduled first (conftest)

ADAPTER = """adapter_version: 1
app: {name: desk}
access_level: black
data: {may_contain_pii: false}
invocation:
  mode: http
  base_url: ${DESK_URL}
  endpoint: POST /api/chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  route_from_response: route
  timeout_s: 60
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: pre-stability
architecture: {kind: router_executor}
routing_contract: [billing, out_of_scope]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
"""
RUBRIC = """---
rubric_id: refund-eta
version: 1
nodes:
  - id: states-arrival
    criterion: The reply says when the refund will arrive.
---
# refund-eta
"""
# a command judge that finds no arrival date in any reply: the provisional rubric says fail
JUDGE = 'import json, sys\nsys.stdin.read()\nprint(json.dumps({"verdict": "fail", "evidence": [], "reason": "no date"}))\n'


def case(cid: str, message: str, expect: str) -> str:
    return (f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
            f"input:\n  messages:\n    - {{role: user, content: '{message}'}}\nexpect:\n{expect}")


def desk(broken: set[str]):
    def handler(req) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = (req.json or {}).get("message", "")
        return Reply(200, {"answer": "sorry" if msg in broken else f"Invoice total for {msg}: 12.00 USD",
                           "route": "billing"})
    return handler


def state_dir(tmp_path, *, judge: bool = False):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    for i, msg in enumerate(("acme", "globex", "initech"), 1):
        write_yaml(state / "datasets" / f"c-0000000{i}.yaml",
                   case(f"c-0000000{i}", msg, "  route: billing\n  answer: {must_contain: ['12.00 USD']}\n"))
    if judge:
        write_yaml(state / "datasets" / "c-00000009.yaml", case("c-00000009", "refund", "  answer: {rubric: [refund-eta-v1]}\n"))
        write_yaml(state / "rubrics" / "refund-eta.md", RUBRIC)
        write_yaml(state / "judge" / "judge.py", JUDGE)
        write_yaml(state / "judge" / "judge.yaml", "provider: command\ncommand: [python3, -S, judge/judge.py]\n"
                                                   "model: fail-judge\ntimeout_s: 60\n")
    return state


def one_run(state, broken: set[str] = frozenset(), *plan_flags: str):
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json",
                   *plan_flags)
    assert r.rc == 0, r.stdout + r.stderr
    out = state / "reports" / r.json["run_id"]
    with FakeApp(desk(set(broken))) as app:
        ran = run_script("run_cases", "--plan", work / "plan.json", "--out", out, env={"DESK_URL": app.url})
    assert ran.rc == 0, ran.stdout + ran.stderr
    return out


def banner(run_dir, *flags: str) -> str:
    r = run_script("draft_report", run_dir, "-o", "-", *flags)
    assert r.rc == 0, r.stdout + r.stderr
    return "\n".join(line for line in r.stdout.splitlines() if line.startswith(">")).replace("\\", "")


def test_the_banner_decides_with_the_ci_gates_flags_and_names_them(tmp_path):
    run_dir = one_run(state_dir(tmp_path))   # every case passes, no canary, no budget in the profile
    assert run_script("gate", run_dir).rc == 0
    plain = banner(run_dir)
    assert "**PASS · gate open**" in plain and "`gate.py <run dir>` decides (its default flags)" in plain
    ci = ("--require-canaries", "--max-p95-latency-s", "0.000001")
    g = run_script("gate", run_dir, "--json", *ci)
    assert g.rc == 1 and len(g.json["reasons"]) == 2, g.json
    said = banner(run_dir, *ci)
    assert "**FAIL · gate closed**" in said and "PASS" not in said, said
    for reason in g.json["reasons"]:
        assert f"> - {reason}" in said, (reason, said)
    assert "`gate.py <run dir> --require-canaries --max-p95-latency-s 1e-06` decides" in said
    # report.html, the page a manager opens, carries the same words
    r = run_script("draft_report", run_dir, "--force", *ci)
    assert r.rc == 0, r.stdout + r.stderr
    assert run_script("md_to_html", run_dir / "report.md", run_dir / "report.html").rc == 0
    page = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "FAIL · gate closed" in page and "PASS · gate open" not in page
    # a bad flag is the gate's own error, naming it
    r = run_script("draft_report", run_dir, "-o", "-", "--max-infra-rate", "5")
    assert r.rc == 2 and "--max-infra-rate 5 is out of range" in r.json["error"], r.stdout


def test_a_run_dir_that_fails_the_completeness_check_never_reads_pass(tmp_path):
    run_dir = one_run(state_dir(tmp_path))
    journal = run_dir / "cases.jsonl"
    journal.write_text("".join(journal.read_text(encoding="utf-8").splitlines(True)[:-1]), encoding="utf-8")
    g = run_script("gate", run_dir, "--json")
    assert g.rc == 1 and any("--verify" in x for x in g.json["reasons"]), g.json
    said = banner(run_dir)
    assert "**FAIL · gate closed**" in said and "run_cases.py --verify" in said, said
    skipped = banner(run_dir, "--no-verify")   # the gate's own flag: said, never silent
    assert "--no-verify` decides, without the completeness re-check" in skipped, skipped


def test_the_baseline_banner_names_the_newly_failing_case_first(tmp_path):
    state = state_dir(tmp_path)
    base = one_run(state)
    time.sleep(1.1)   # run ids are per second
    run_dir = one_run(state, {"globex"})
    g = run_script("gate", run_dir, "--baseline", base, "--json")
    assert g.rc == 1 and g.json["reasons"][0].startswith("1 gating case(s) newly failing against"), g.json
    said = banner(run_dir, "--baseline", base)
    first = [line for line in said.splitlines() if line.startswith("> - ")][0]
    assert first == f"> - {g.json['reasons'][0]}", (first, g.json["reasons"])
    assert f"--baseline {base}` decides" in said


def test_a_provisional_judges_fail_is_on_the_pass_banner(tmp_path):
    state = state_dir(tmp_path, judge=True)
    run_dir = one_run(state, set(), "--judge")
    g = run_script("gate", run_dir)
    assert g.rc == 0, g.stdout
    (line,) = [x.strip() for x in g.stdout.splitlines() if "would have failed" in x]
    said = banner(run_dir)
    assert "**PASS · gate open**" in said and f"> - {line}" in said, said
