"""A plan run after its suite changed (a newcomer's mistake, found in a trial): the case's
expectation tightened in the YAML, convert_suite.py and make_plan.py skipped, the old plan.json
run again. The plan carries its cases, so the run passed on the old expectation and the gate
opened on a suite the user no longer had. run_cases.py now refuses such a plan (exit 2, nothing
written) naming the case and the fix; a comment changes nothing; --stale-plan runs it as made.
The scripts run as subprocesses against a real app on a real port.
"""

from __future__ import annotations

import shutil

from fakeapp import FakeApp, run_runner
from helpers import run_script
from test_no_silent_green import case_yaml, travel_reply, write_state

RUN_ID = "smoke-20261205T000000Z"


def _plan(state):
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    plan = work / "plan.json"
    plan.unlink(missing_ok=True)
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", plan,
                   "--run-id", RUN_ID)
    assert r.rc == 0, r.stdout
    return plan


def test_a_plan_made_before_its_case_was_edited_is_refused_not_run_green(tmp_path):
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1"), "c-quote2": case_yaml("c-quote2")})
    plan = _plan(state)
    out = state / "reports" / RUN_ID
    with FakeApp(travel_reply) as app:
        env = {"TRAVEL_BASE_URL": app.url}
        case = state / "datasets" / "c-quote1.yaml"
        case.write_text(case.read_text(encoding="utf-8") + "# checked with the fares team\n", encoding="utf-8")
        r = run_runner("--plan", plan, "--out", out, env=env)   # a comment: nothing the plan holds changed
        assert r.rc == 0, (r.stdout, r.stderr)
        assert "older than its state dir" not in r.stderr

        # the expectation tightened (the app answers 120): the old plan would pass it
        case.write_text(case.read_text(encoding="utf-8").replace("scalar: 120", "scalar: 99"), encoding="utf-8")
        shutil.rmtree(out)
        r = run_runner("--plan", plan, "--out", out, env=env)
        assert r.rc == 2, (r.stdout, r.stderr)
        assert not out.exists()
        err = r.json
        assert err["key"] == "--plan"
        assert err["changed"] == ["datasets/c-quote1.yaml (case c-quote1 edited)"]
        assert "re-run convert_suite.py" in err["error"] and "--stale-plan" in err["error"]

        # a case added (not in the plan): a plan made now would run it
        (state / "datasets" / "c-quote3.yaml").write_text(case_yaml("c-quote3"), encoding="utf-8")
        case.write_text(case.read_text(encoding="utf-8").replace("scalar: 99", "scalar: 120"), encoding="utf-8")
        r = run_runner("--plan", plan, "--out", out, env=env)
        assert r.rc == 2 and "+1 case(s): the suite has 3, this plan 2" in r.json["error"], r.stdout

        # --stale-plan: run as made, said on stderr
        r = run_runner("--plan", plan, "--out", out, "--stale-plan", env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        assert "older than its state dir" in r.stderr and "--stale-plan: run as planned" in r.stderr
        # and recorded: every gate of the run says it (a CI log keeps the gate's lines, not the runner's stderr)
        said = run_script("gate", out)
        line = next(x for x in said.stdout.splitlines() if x.startswith("  plan: run with --stale-plan"))
        assert "c-quote3" in line or "+1 case(s)" in line, line
        assert run_script("run_cases", "--verify", out).rc == 0

        # the plan made again from the suite as it is: the tightened expectation gates red
        case.write_text(case.read_text(encoding="utf-8").replace("scalar: 120", "scalar: 99"), encoding="utf-8")
        plan = _plan(state)
        shutil.rmtree(out)
        r = run_runner("--plan", plan, "--out", out, env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
    g = run_script("gate", out, "--json")
    assert g.rc == 1, g.stdout


def test_a_case_a_plan_made_now_would_not_select_is_no_reason_to_refuse_the_plan(tmp_path):
    # a smoke plan; the user works on a full-only case meanwhile: a smoke plan made now holds the
    # same cases, so the old one is not stale (it was refused: "a plan made now may select it")
    full_only = case_yaml("c-full1").replace("split: [smoke, full]", "split: [full]")
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1"), "c-full1": full_only})
    plan = _plan(state)
    out = state / "reports" / RUN_ID
    edited = state / "datasets" / "c-full1.yaml"
    edited.write_text(full_only.replace("scalar: 120", "scalar: 99"), encoding="utf-8")
    (state / "datasets" / "c-full2.yaml").write_text(full_only.replace("c-full1", "c-full2"), encoding="utf-8")
    with FakeApp(travel_reply) as app:
        env = {"TRAVEL_BASE_URL": app.url}
        r = run_runner("--plan", plan, "--out", out, env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        assert "older than its state dir" not in r.stderr

        # a smoke case added: a smoke plan made now would run it
        shutil.rmtree(out)
        (state / "datasets" / "c-quote2.yaml").write_text(case_yaml("c-quote2"), encoding="utf-8")
        r = run_runner("--plan", plan, "--out", out, env=env)
        assert r.rc == 2 and "+2 case(s): the suite has 4, this plan 1" in r.json["error"], r.stdout
        assert not out.exists()

        # a case moved out of the smoke split is one of the plan's own, edited
        (state / "datasets" / "c-quote2.yaml").unlink()
        case = state / "datasets" / "c-quote1.yaml"
        case.write_text(case_yaml("c-quote1").replace("split: [smoke, full]", "split: [full]"), encoding="utf-8")
        r = run_runner("--plan", plan, "--dry-run", env=env)
        assert r.rc == 2 and r.json["changed"] == ["datasets/c-quote1.yaml (case c-quote1 edited)"], r.stdout


def test_the_python_api_refuses_a_stale_plan_and_runs_it_when_told(tmp_path, monkeypatch):
    """assay.api.run: the same refusal (CommandError, exit 2, naming the case), and stale_plan=True."""
    from assay import api
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    plan = _plan(state)
    case = state / "datasets" / "c-quote1.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("scalar: 120", "scalar: 99"), encoding="utf-8")
    with FakeApp(travel_reply) as app:
        monkeypatch.setenv("TRAVEL_BASE_URL", app.url)
        try:
            api.run(plan)
            raise AssertionError("a stale plan ran")
        except api.CommandError as err:
            assert err.code == 2 and err.doc["changed"] == ["datasets/c-quote1.yaml (case c-quote1 edited)"]
        assert api.run(plan, stale_plan=True)["exit_code"] == 0
