"""A new user's mistakes, third round (a travel-booking app of their own, the README followed
literally): each one used to end in a green gate or a confusing message; each now refuses or
says so, naming the file, key or case and the fix. The small travel state dir is
test_no_silent_green's; the scripts run as subprocesses, as a user runs them.
"""

from __future__ import annotations

from helpers import run_script
from test_no_silent_green import case_yaml, write_state


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

