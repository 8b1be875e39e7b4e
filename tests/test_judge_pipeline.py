"""The judge through the whole pipeline as a user drives it (scripts as subprocesses): rubric
files and judge.yaml in a state dir -> convert_suite -> validate_cases (pin codes) -> make_plan
(--judge) -> run_cases against a fake app with a `command` judge -> rescore.py (equal when
nothing changed; picks up an edited expectation; reuses judge verdicts; passes --verify)."""

from __future__ import annotations

import json
import sys

import pytest

from fakeapp import Reply, app  # noqa: F401 (fixture)
from fixtures_authoring import PROFILE, _case
from helpers import run_script, write_yaml
from judgefake import RUBRIC
from test_judge_run import ANSWERS, JUDGE_CMD, app_handler
from rundir_util import cases_view

pytestmark = pytest.mark.slow

ADAPTER = """\
adapter_version: 1
app: {name: refunds}
data: {may_contain_pii: false}
invocation:
  mode: http
  base_url: ${REFUNDS_URL}
  auth: {type: none}
  endpoint: POST /api/chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"message": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  timeout_s: 10
  max_concurrency: 2
traces: {source: none}
tools: []
environment: {kind: mocked, safe_to_attack: true}
oracle: {kind: none}
"""


def rubric_case(cid, message, pin="refund-eta-v1", must="Refund"):
    return _case(cid, content=message, expect=f"  answer: {{must_contain: [{must}], rubric: [{pin}]}}\n")


def make_state(tmp_path, judge_yaml=None):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER)
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-00000001.yaml", rubric_case("c-00000001", "full"))
    write_yaml(state / "datasets" / "c-00000002.yaml", rubric_case("c-00000002", "no-eta"))
    (state / "rubrics").mkdir(parents=True)
    (state / "rubrics" / "refund-eta.md").write_text(RUBRIC)
    (state / "judge").mkdir()
    (state / "judge" / "fake_judge.py").write_text(JUDGE_CMD)
    write_yaml(state / "judge" / "judge.yaml", judge_yaml or
               f"provider: command\ncommand: [{json.dumps(sys.executable)}, judge/fake_judge.py]\nmax_concurrency: 2\n")
    return state


def pipeline(state, env, *plan_args, run_id="smoke-20261130T000000Z"):
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout
    lint = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    p = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", run_id, *plan_args)
    return lint, p


def verdicts(out):
    return {json.loads(x)["case_id"]: json.loads(x) for x in (out / "verdicts.jsonl").read_text().splitlines()}


def test_pins_are_linted(tmp_path):
    state = make_state(tmp_path)
    write_yaml(state / "datasets" / "c-00000003.yaml", rubric_case("c-00000003", "full", pin="refund-eta-v2"))
    write_yaml(state / "datasets" / "c-00000004.yaml", rubric_case("c-00000004", "full", pin="tone-v1"))
    write_yaml(state / "datasets" / "c-00000005.yaml", rubric_case("c-00000005", "full", pin="refund_eta"))
    lint, _ = pipeline(state, {})
    assert lint.rc == 1
    codes = {(f["case_id"], f["code"]) for f in lint.json["findings"] if f["severity"] == "ERROR"}
    assert codes == {("c-00000003", "rubric_version_mismatch"), ("c-00000004", "unknown_rubric"),
                     ("c-00000005", "bad_rubric_pin")}
    # make_plan refuses the same pins (it runs the linter in-process)
    _, plan = pipeline(state, {})
    assert plan.rc == 2 and "rubric_version_mismatch" in plan.json["error"], plan.stdout
    msg = next(f["message"] for f in lint.json["findings"] if f["code"] == "rubric_version_mismatch")
    assert "rubrics/refund-eta.md is version 1" in msg and "pin refund-eta-v1" in msg
    # a bad rubric file names file, line and key
    (state / "rubrics" / "refund-eta.md").write_text(RUBRIC.replace("criterion: The reply states", "critrion: x"))
    r = run_script("convert_suite", state, "-o", state / "work" / "c.json")
    assert r.rc == 2 and "rubrics/refund-eta.md:5" in r.json["error"], r.stdout


def test_smoke_judges_only_with_flag_and_rescore(tmp_path, app):
    app.handler = lambda req: (Reply(200, {"ok": True}) if req.method == "GET"
                               else Reply(200, {"message": ANSWERS[req.json["message"]]}))
    state = make_state(tmp_path)
    env = {"REFUNDS_URL": app.url}
    lint, p = pipeline(state, env)
    assert lint.rc == 0, lint.stdout
    assert p.rc == 0, p.stdout
    plan = json.loads((state / "work" / "plan.json").read_text())
    assert plan["judge"]["enabled"] is False and "--judge" in plan["judge"]["reason"]
    lint, p = pipeline(state, env, "--judge")
    plan = json.loads((state / "work" / "plan.json").read_text())
    assert plan["judge"]["enabled"] is True and list(plan["judge"]["rubrics"]) == ["refund-eta-v1"]
    out = state / "reports" / "smoke-20261130T000000Z"
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", out, env=env)
    assert r.rc == 0, r.stdout
    assert json.loads((cases_view(out) / "c-00000002" / "judge.json").read_text())["rubrics"][0]["verdict"] == "fail"
    calls_before = json.loads((out / "results.json").read_text())["summary"]["judged"]["usage"]["calls"]
    assert calls_before == 4

    # rescore with nothing changed: the same verdicts and layers, no app call, judge verdicts reused
    posts = len(app.posts())
    new = state / "reports" / "smoke-20261130T010000Z"
    rs = run_script("rescore", out, "--out", new, "--judge")
    assert rs.rc == 0, rs.stdout
    assert rs.json["rescored_from"] == "smoke-20261130T000000Z"
    assert len(app.posts()) == posts
    assert verdicts(new) == verdicts(out)
    for cid in ("c-00000001", "c-00000002"):
        a = json.loads((cases_view(out) / cid / "verdict.json").read_text())
        b = json.loads((cases_view(new) / cid / "verdict.json").read_text())
        assert {k: v for k, v in a["layers"].items() if k != "judged"} == \
            {k: v for k, v in b["layers"].items() if k != "judged"}
        assert b["layers"]["judged"]["provisional_verdict"] == a["layers"]["judged"]["provisional_verdict"]
        assert (cases_view(new) / cid / "answer.txt").read_text() == (cases_view(out) / cid / "answer.txt").read_text()
    doc = json.loads((cases_view(new) / "c-00000002" / "judge.json").read_text())
    assert doc["rubrics"][0]["reused_from"] == "smoke-20261130T000000Z" and doc["usage"]["calls"] == 0
    manifest = json.loads((new / "manifest.yaml").read_text())
    assert manifest["manifest_extra"]["rescored_from"]["run_id"] == "smoke-20261130T000000Z"
    assert run_script("run_cases", "--verify", new).rc == 0

    # an edited expectation is picked up without calling the app
    write_yaml(state / "datasets" / "c-00000001.yaml", rubric_case("c-00000001", "full", must="EUR"))
    new2 = state / "reports" / "smoke-20261130T020000Z"
    rs2 = run_script("rescore", out, "--out", new2, "--judge")
    assert rs2.rc == 0, rs2.stdout
    assert len(app.posts()) == posts
    v = verdicts(new2)
    assert v["c-00000001"]["verdict"] == "fail" and v["c-00000001"]["layers"]["answer"] == "fail"
    assert v["c-00000002"] == verdicts(out)["c-00000002"]
    assert run_script("run_cases", "--verify", new2).rc == 0

    # a calibrated sidecar written after the run turns the reused verdicts into gating ones
    from assay.judge.config import load_judge_config
    from judgefake import write_calibration
    write_calibration(state, {"refund-eta-v1": True}, config=load_judge_config(state))
    new3 = state / "reports" / "smoke-20261130T030000Z"
    assert run_script("rescore", out, "--out", new3, "--judge").rc == 0
    v3 = verdicts(new3)
    assert v3["c-00000002"]["verdict"] == "fail" and v3["c-00000002"]["layers"]["judged"] == "fail"
    g = run_script("gate", new3)
    assert g.rc == 1 and "c-00000002 (judged)" in g.stdout

    # an edited rubric text under the same version is judged again, never reused (#30 item 5)
    (state / "rubrics" / "refund-eta.md").write_text(RUBRIC.replace("with its currency", "and its currency"))
    new4 = state / "reports" / "smoke-20261130T040000Z"
    assert run_script("rescore", out, "--out", new4, "--judge").rc == 0
    doc4 = json.loads((cases_view(new4) / "c-00000002" / "judge.json").read_text())
    assert "reused_from" not in doc4["rubrics"][0] and doc4["usage"]["calls"] == 2


def test_rescore_refusals(tmp_path, app):
    app.handler = app_handler
    state = make_state(tmp_path)
    out = state / "reports" / "smoke-20261130T000000Z"
    r = run_script("rescore", out, "--out", state / "reports" / "smoke-20261130T010000Z")
    assert r.rc == 2 and "not a run directory" in r.json["error"]


def test_rescore_reuses_the_calls_of_a_judge_that_asks_more_than_once(tmp_path, app):
    """judge.json's `repeats` is the judge's asks (a number) when judge.yaml sets it, not a list of
    case repeats: a rescore with the same judge reads it as such and reuses every call."""
    app.handler = lambda req: (Reply(200, {"ok": True}) if req.method == "GET"
                               else Reply(200, {"message": ANSWERS[req.json["message"]]}))
    state = make_state(tmp_path, judge_yaml=f"provider: command\ncommand: [{json.dumps(sys.executable)}, "
                                            "judge/fake_judge.py]\nrepeats: 2\n")
    env = {"REFUNDS_URL": app.url}
    _, p = pipeline(state, env, "--judge")
    assert p.rc == 0, p.stdout
    out = state / "reports" / "smoke-20261130T000000Z"
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", out, env=env)
    assert r.rc == 0, r.stdout
    assert json.loads((cases_view(out) / "c-00000002" / "judge.json").read_text())["repeats"] == 2
    new = state / "reports" / "smoke-20261130T010000Z"
    rs = run_script("rescore", out, "--out", new, "--judge")
    assert rs.rc == 0, rs.stdout + rs.stderr
    assert verdicts(new) == verdicts(out)
    for cid in ("c-00000001", "c-00000002"):
        doc = json.loads((cases_view(new) / cid / "judge.json").read_text())
        assert doc["usage"]["calls"] == 0 and doc["rubrics"][0]["reused_from"] == "smoke-20261130T000000Z"


def test_rescore_lints_the_current_suite_and_judges_what_the_source_judged(tmp_path, app):
    """Two green rescores the green-path hunt found. Before: rescore never linted the current suite, so
    a case edited into a hollow one (`no_graded_layer`, which make_plan.py refuses) rescored `unscored`,
    left out of every close rule, and the gate stayed open; and it judged by the mode table alone, so a
    smoke run made with --judge was rescored unjudged and a calibrated rubric's fail read as a pass."""
    app.handler = lambda req: (Reply(200, {"ok": True}) if req.method == "GET"
                               else Reply(200, {"message": ANSWERS[req.json["message"]]}))
    state = make_state(tmp_path)
    env = {"REFUNDS_URL": app.url}
    _, p = pipeline(state, env, "--judge")
    assert p.rc == 0, p.stdout
    out = state / "reports" / "smoke-20261130T000000Z"
    assert run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", out, env=env).rc == 0
    assert run_script("gate", out).rc == 0   # the judge is provisional: its fail does not gate
    write_yaml(state / "datasets" / "c-00000001.yaml",
               _case("c-00000001", content="full", expect="  http: {status: 200}\n"))   # hollow now
    new = state / "reports" / "smoke-20261130T010000Z"
    r = run_script("rescore", out, "--out", new)
    assert r.rc == 2 and "c-00000001 [no_graded_layer]" in r.json["error"] and not new.exists(), r.stdout
    r = run_script("rescore", out, "--out", new, "--allow-invalid")
    assert r.rc == 0, r.stdout
    assert verdicts(new)["c-00000001"]["verdict"] == "unscored"
    g = run_script("gate", new, "--json")
    assert g.rc == 1 and any(x.startswith("the plan was made with --allow-invalid over 1 linter ERROR(s) "
                                          "(no_graded_layer): c-00000001 [no_graded_layer]; fix them")
                             for x in g.json["reasons"]), g.stdout

    write_yaml(state / "datasets" / "c-00000001.yaml", rubric_case("c-00000001", "full"))
    from assay.judge.config import load_judge_config
    from judgefake import write_calibration
    write_calibration(state, {"refund-eta-v1": True}, config=load_judge_config(state))
    new2 = state / "reports" / "smoke-20261130T020000Z"
    r = run_script("rescore", out, "--out", new2)   # no --judge: the source run was judged, so is its rescore
    assert r.rc == 0, r.stdout
    v = verdicts(new2)["c-00000002"]
    assert (v["verdict"], v["layers"]["judged"]) == ("fail", "fail"), v
    g = run_script("gate", new2)
    assert g.rc == 1 and "c-00000002 (judged)" in g.stdout, g.stdout
