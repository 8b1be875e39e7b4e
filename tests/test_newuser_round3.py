"""A new user's mistakes, third round (a travel-booking app of their own, the README followed
literally): each one used to end in a green gate or a confusing message; each now refuses or
says so, naming the file, key or case and the fix. The small travel state dir is
test_no_silent_green's; the scripts run as subprocesses, as a user runs them.
"""

from __future__ import annotations

from fakeapp import FakeApp
from helpers import run_script
from test_no_silent_green import case_yaml, travel_reply, write_state
import pytest

pytestmark = pytest.mark.slow   # over ~7 s: started first (conftest)


def test_a_case_edited_after_convert_suite_is_never_planned_from_its_old_copy(tmp_path):
    """Edit a case, forget convert_suite.py, plan: the old converted.json held the old expectation,
    so the run passed and the gate opened on a suite the user no longer had."""
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1"), "c-quote2": case_yaml("c-quote2")})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    plan = work / "plan.json"

    def make_plan():
        plan.unlink(missing_ok=True)
        return run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", plan)

    # a comment changes nothing the plan reads: planned as before
    with (state / "datasets" / "c-quote1.yaml").open("a", encoding="utf-8") as f:
        f.write("# checked with the fares team\n")
    assert make_plan().rc == 0 and plan.is_file()

    # the expectation tightened in the YAML, a case added, the old conversion kept
    path = state / "datasets" / "c-quote1.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("scalar: 120", "scalar: 99"), encoding="utf-8")
    (state / "datasets" / "c-quote3.yaml").write_text(case_yaml("c-quote3"), encoding="utf-8")
    r = make_plan()
    assert r.rc == 2, r.stdout
    assert not plan.exists()
    err = r.json
    assert err["key"] == "converted"
    assert err["changed"] == ["datasets/c-quote1.yaml (case c-quote1 edited)",
                              "datasets/c-quote3.yaml (case c-quote3 added)"]
    assert "re-run convert_suite.py" in err["error"] and "older than the state dir" in err["error"]

    # the profile too (a layer switched off after converting)
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    profile = state / "profile.yaml"
    profile.write_text(profile.read_text(encoding="utf-8").replace("execution: {enabled: true}",
                                                                   "execution: {enabled: false, blocked_by: x}"),
                       encoding="utf-8")
    r = make_plan()
    assert r.rc == 2 and r.json["changed"] == ["profile.yaml"], r.stdout

    # converted again: planned
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    assert make_plan().rc == 0


def test_gate_latest_never_gates_an_older_run_in_place_of_one_that_never_started(tmp_path):
    """Yesterday's run passed; today's stopped at pre-flight (the app was down, exit 3) and made no
    run dir. `gate.py reports --latest` (the README's CI line) gated yesterday's run: open, exit 0."""
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    work, reports = state / "work", state / "reports"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0

    def plan(run_id):
        r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                       "-o", work / f"{run_id}.json", "--run-id", run_id)
        assert r.rc == 0, r.stdout
        return work / f"{run_id}.json"

    def run(run_id, url):
        return run_script("run_cases", "--plan", plan(run_id), "--out", reports / run_id, "--progress", "never",
                          env={"TRAVEL_BASE_URL": url})

    with FakeApp() as app:
        app.handler = travel_reply
        assert run("smoke-20261130T000000Z", app.url).rc == 0
        assert run_script("gate", reports, "--latest").rc == 0
        down = run("smoke-20261201T000000Z", "http://127.0.0.1:9")      # nothing listens there
        assert down.rc == 3 and not (reports / "smoke-20261201T000000Z").exists()
        r = run_script("gate", reports, "--latest", "--mode", "smoke")
        assert r.rc == 2, r.stdout
        assert r.json["run_id"] == "smoke-20261201T000000Z" and r.json["not_started"] is True
        assert "never started (run_cases.py exit 3: pre-flight: health check" in r.json["error"]
        assert "will not gate smoke-20261130T000000Z, an older run, in its place" in r.json["error"]
        # the run's own directory, as a user types it: it never started, and why (not just "no results.json")
        r = run_script("gate", reports / "smoke-20261201T000000Z", "--json")
        assert r.rc == 2 and "that run never started (run_cases.py exit 3: pre-flight: health check" in r.json["error"]
        # an older run asked for by its directory is still gated; the app back up, the run starts
        assert run_script("gate", reports / "smoke-20261130T000000Z").rc == 0
        again = run_script("run_cases", "--plan", work / "smoke-20261201T000000Z.json", "--out",
                           reports / "smoke-20261201T000000Z", "--progress", "never", env={"TRAVEL_BASE_URL": app.url})
        assert again.rc == 0, again.stdout
    assert not (reports / ".smoke-20261201T000000Z.not-started.json").exists()
    r = run_script("gate", reports, "--latest")
    assert r.rc == 0 and r.stdout.startswith("smoke-20261201T000000Z: PASS"), r.stdout


def test_a_value_in_the_wrong_form_is_named_in_words_not_as_the_schemas_regex(tmp_path):
    """`base_url: $TRAVEL_BASE_URL` (no braces) was answered with the schema's escaped regex:
    `does not match '^(\\\\$\\\\{[A-Za-z_]...'`."""
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    adapter = state / "adapter.yaml"
    adapter.write_text(adapter.read_text(encoding="utf-8").replace("${TRAVEL_BASE_URL}", "$TRAVEL_BASE_URL"),
                       encoding="utf-8")
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json")
    assert r.rc == 2
    err = r.json["error"]
    assert "adapter.yaml:7: invocation.base_url: '$TRAVEL_BASE_URL' is not in the form this key takes" in err, err
    assert "(write the variable as ${TRAVEL_BASE_URL})" in err and "does not match '" not in err


def test_compare_runs_of_two_unrelated_suites_says_so_first(tmp_path):
    """Two runs of different apps (a wrong path) compared to "6 added, 6 removed" and nothing
    else: no word that nothing could pair."""
    reports = []
    with FakeApp() as app:
        app.handler = travel_reply
        for name, cid in (("travel", "c-quote1"), ("recipes", "c-soup1")):
            state = write_state(tmp_path / name, {cid: case_yaml(cid)})
            adapter = state / "adapter.yaml"
            adapter.write_text(adapter.read_text(encoding="utf-8").replace("name: travel", f"name: {name}"),
                               encoding="utf-8")
            work = state / "work"
            assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
            r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                           "-o", work / "plan.json")
            assert r.rc == 0, r.stdout
            out = state / "reports" / r.json["run_id"]
            assert run_script("run_cases", "--plan", work / "plan.json", "--out", out, "--progress", "never",
                              env={"TRAVEL_BASE_URL": app.url}).rc == 0
            reports.append(out)
    r = run_script("compare_runs", *reports, "-o", tmp_path / "compare.json")
    assert r.rc == 0 and r.json["headline"] == "1 added, 1 removed"
    assert r.json["notes"][:2] == [
        "different apps: base 'travel', candidate 'recipes' (adapter.yaml app.name): were the right two runs given?",
        "the runs share no case id: nothing is paired, every case reads as added or removed (two different "
        "suites, or a state dir's runs against another's?)"]


def test_a_typo_inside_an_expect_block_is_named_at_its_line_with_the_closest_key(tmp_path):
    """`answer: {must_contians: [...]}` was refused at the case's first line with no suggestion
    (a typo of a top-level expect key already had both)."""
    expect = "  route: quotes\n  answer:\n    must_contians: [\"120 EUR\"]\n"
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1", expect=expect)})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert r.rc == 2
    assert ("datasets/c-quote1.yaml:15: c-quote1 [bad_expect_shape] expect.answer has unknown key(s) "
            "['must_contians']; did you mean 'must_contain'?") in r.json["error"], r.json["error"]
    # the same inside an agent's expect.skills (it was named at line 1)
    expect = "  route: quotes\n  skills:\n    must_triger: [\"tidy\"]\n"
    (state / "datasets" / "c-quote1.yaml").write_text(case_yaml("c-quote1", expect=expect), encoding="utf-8")
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert r.rc == 2 and ("datasets/c-quote1.yaml:15: c-quote1 [bad_expect_shape] expect.skills.must_triger is not a "
                          "key of expect.skills; did you mean 'must_trigger'?") in r.json["error"], r.json["error"]


def test_convert_suite_on_the_app_dir_names_its_state_dir(tmp_path):
    """make_plan already pointed at `<app>/.assay`; convert_suite, the first step, did not."""
    write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    r = run_script("convert_suite", tmp_path, "-o", tmp_path / "converted.json")
    assert r.rc == 2 and f"{tmp_path / '.assay'} holds one: pass that" in r.json["error"], r.stdout


def test_an_expectation_on_a_layer_the_profile_switches_off_is_warned_at_its_line(tmp_path):
    """`expect.tools` on a profile whose trajectory is `enabled: false`: no lint finding, then
    the run said "NOT scored this run: trajectory" and the gate could open on the rest."""
    expect = "  route: quotes\n  result: {scalar: 120}\n  tools:\n    forbidden: [cancel_booking]\n"
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1", expect=expect)})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert r.rc == 0, r.stdout   # a WARN: a disabled layer is reported as not measured, never a pass
    assert ("linter WARN x1: datasets/c-quote1.yaml:15: c-quote1 [expectation_not_scored] expect.tools is not "
            "scored: the profile switches trajectory off (capability_matrix.trajectory: enabled: false, "
            "blocked_by: no traces)") in r.stderr, r.stderr
    assert "enable trajectory in profile.yaml, or drop expect.tools" in r.stderr
    v = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    rows = [f for f in v.json["findings"] if f["code"] == "expectation_not_scored"]
    assert v.rc == 0 and [(f["case_id"], f["key"], f["severity"], f.get("line")) for f in rows] == [
        ("c-quote1", "expect.tools", "WARN", 15)], v.stdout   # the line make_plan names, by hand too


def test_a_route_the_profile_does_not_declare_is_named_at_its_line_with_the_closest_route(tmp_path):
    """`route: quote` when profile.yaml's route_targets say `quotes`: nothing said it before the
    run, where every such case failed on routing (a misspelt route_acceptable entry silently
    accepted nothing)."""
    expect = "  route: quote\n  route_acceptable:\n    - none\n    - bokings\n  result: {scalar: 120}\n"
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1", expect=expect)})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert ("datasets/c-quote1.yaml:13: c-quote1 [unknown_route] expect.route 'quote' is not a route profile.yaml "
            "declares (quotes, none); did you mean 'quotes'?") in err, err
    assert "datasets/c-quote1.yaml:16: c-quote1 [unknown_route] expect.route_acceptable[1] 'bokings'" in err, err
    assert "route_acceptable[0]" not in err   # `none`: the profile's oos_handling route:none
    # declared in the profile: planned
    profile = state / "profile.yaml"
    profile.write_text(profile.read_text(encoding="utf-8").replace(
        "  - {name: quotes, description: price quotes}\n",
        "  - {name: quotes, description: price quotes}\nrouting_contract: [quotes, bokings, quote, none]\n"),
        encoding="utf-8")
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state, "-o", work / "plan.json")
    assert r.rc == 0, r.stdout
