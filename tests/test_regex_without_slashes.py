"""A regex written without slashes is refused, and never passes (the newcomer's sweep, trial 14).

A newcomer writes `must_not_contain: ["(?i)sorry"]` (the inline flag, but no slashes) or
`["regex:sorry"]` (another tool's spelling) beside a route check. Read as text it is in no answer,
so the absence held whatever the app said: the app answered "Sorry, ..." on the right route, the
case passed and the gate read PASS. Each test writes the state dir as a user does, plans it with
make_plan.py as a subprocess and runs it against a real HTTP app on its own loopback port.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp
from helpers import run_script
from rundir_util import cases_view
from test_no_silent_green import case_yaml, plan, refused_plan, run, travel_reply, write_state
from test_vacuous_answer_entries import wrong_reply   # the right route, an apology

FLAG_GROUP = "  route: quotes\n  answer:\n    must_not_contain: [\"(?i)sorry\"]\n"
PREFIX = "  route: quotes\n  answer:\n    must_not_contain: [\"regex:sorry|apolog\"]\n"
NEAR_MISS = ("  route: quotes\n  answer:\n    must_contain: [\"EUR\"]\n"
             "    must_not_contain: [\"Re: your booking\", \"why (?i) here\", \"/(?i)sorry/\", \"regexes\"]\n")


def test_a_regex_without_slashes_is_refused_naming_file_line_and_fix(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001", expect=FLAG_GROUP),
                                   "c-00000002": case_yaml("c-00000002", expect=PREFIX)})
    err = refused_plan(state)["error"]
    assert ("datasets/c-00000001.yaml:15: c-00000001 [regex_without_slashes] expect.answer.must_not_contain[0] "
            "'(?i)sorry'") in err and "write it '/(?i)sorry/'" in err, err
    assert ("datasets/c-00000002.yaml:15: c-00000002 [regex_without_slashes] expect.answer.must_not_contain[0] "
            "'regex:sorry|apolog'") in err and "write it '/sorry|apolog/'" in err, err
    # planned anyway, against an app that apologises on the right route: neither case reads pass
    rc, summary, plan_file = plan(state, "--allow-invalid")
    assert rc == 0, summary
    with FakeApp(wrong_reply) as app:
        run_dir = run(state, plan_file, app)
    for cid in ("c-00000001", "c-00000002"):
        verdict = json.loads((cases_view(run_dir) / cid / "verdict.json").read_text())
        assert verdict["verdict"] != "pass", verdict
        assert "written without slashes" in json.dumps(verdict["layers"]["answer"]), verdict["layers"]["answer"]
    g = run_script("gate", run_dir)
    assert g.rc == 1, g.stdout


def test_the_near_misses_plan_and_can_fail(tmp_path):
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001", expect=NEAR_MISS)})
    rc, summary, plan_file = plan(state)
    assert rc == 0 and summary["validation"]["errors"] == 0, summary
    with FakeApp(travel_reply) as app:   # "A flight to Oslo costs 120 EUR."
        run_dir = run(state, plan_file, app)
    assert run_script("gate", run_dir).rc == 0
