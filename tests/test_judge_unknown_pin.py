"""A rubric pin that names no rubric file at that version is a check that never ran, not a provisional pin.

The linter refuses such a pin (`unknown_rubric`, `rubric_version_mismatch`), but `make_plan.py
--allow-invalid` plans it anyway. Before: the runner recorded it as a provisional rubric ("never
gating"), so a case that pinned `refund-eat-v1` (a typo of the calibrated refund-eta-v1), or still
pinned refund-eta-v2 after the file went back to version 1, passed on its substring check alone and
the gate opened: the calibrated rubric that fails the answer never ran. Now its judged layer reads
`unscored` naming the pin, and the gate closes on a check that never ran.

End to end: score_agreement.py --write, run_cases.py and gate.py as subprocesses, a fake app and a fake
OpenAI judge on real loopback ports."""

from __future__ import annotations

import pytest

from fakeapp import case, make_plan, state  # noqa: F401 (fixtures)
from judgefake import judge_block
from helpers import run_script
from trust_fixtures import go, read
from test_calibration_hand_edit import labelled_judge   # the app, a judge that passes all, agreeing labels



@pytest.mark.parametrize("pin", ["refund-eat-v1", "refund-eta-v2"])
def test_a_pin_with_no_rubric_file_never_lets_the_case_pass(state, pin):
    with labelled_judge(state) as (app, config, ann):
        w = run_script("score_agreement", ann, "--write", state / "judge" / "calibration.json",
                       "--min-pairs", "12", "--min-per-class", "6")
        assert w.rc == 0 and w.json["status"] == "calibrated", w.stdout + w.stderr

        expect = {"answer": {"must_contain": ["20 USD"], "rubric": [pin]}}
        plan = make_plan(state, [case("c-1", "When does my refund arrive?", expect=expect)], app_url=app.url)
        plan["judge"] = judge_block(state, config)
        plan["paths"]["judge_calibration"] = "judge/calibration.json"
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout + r.stderr

    verdict = read(out, "c-1")
    assert verdict["verdict"] == "unscored", verdict                  # before: pass
    rubric = read(out, "c-1", "judge.json")["rubrics"][0]
    assert rubric["pin"] == pin and rubric["provisional"] is False and rubric["verdict"] == "unscored"
    assert rubric["reason"].startswith(f"never judged: rubric pin '{pin}'"), rubric
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout                                        # before: 0, PASS
    assert f"{pin}: never judged" in g.stdout and "fix the pin in the case" in g.stdout, g.stdout
    assert run_script("run_cases", "--verify", out).rc == 0
