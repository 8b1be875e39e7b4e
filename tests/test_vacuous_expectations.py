"""Expectations that read as checks and pass whatever the app says (the vacuous-expectation sweep).

A user writes a check that cannot fail, or hardly can, beside real ones: an empty list
(`must_not_contain: []`), a tolerance that makes an expected 0 a range (`scalar: 0,
float_tolerance: 1.0e+9`), a `must_not_contain` word in one case when the answer writes it in
another (`oslo` against "Oslo": matching is case-sensitive, and stays so). Before, each planned
without a word and the case passed. The first two are refused (make_plan names file, line, case and
code); the third is a WARN naming both ways to say what was meant. The state dir is written as a
user does; make_plan and run_cases run against a real HTTP app on its own loopback port.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp
from helpers import run_script
from rundir_util import cases_view
from test_no_silent_green import case_yaml, plan, run, travel_reply, write_state


def _verdicts(run_dir) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in cases_view(run_dir).glob("*/verdict.json")}


def test_an_empty_check_list_beside_real_checks_is_refused(tmp_path):
    state = write_state(tmp_path, {
        "c-00000001": case_yaml("c-00000001", expect=(
            "  route: quotes\n  answer:\n    must_contain: [EUR]\n    must_not_contain: []\n")),
        "c-00000002": case_yaml("c-00000002", expect="  route: quotes\n  authz: {forbidden_tools: []}\n"),
        "c-00000003": case_yaml("c-00000003", expect="  route: quotes\n  answer: {}\n"),
    })
    rc, out, plan_file = plan(state)
    assert rc == 2 and not plan_file.exists(), out
    err = out["error"]
    assert ("datasets/c-00000001.yaml:16: c-00000001 [empty_check] expect.answer.must_not_contain is an empty "
            "list: it checks nothing") in err, err
    assert "datasets/c-00000002.yaml:14: c-00000002 [empty_check] expect.authz.forbidden_tools is an empty list" in err
    assert "datasets/c-00000003.yaml:14: c-00000003 [empty_check] expect.answer is empty" in err
    # planned anyway, the first case passes on its other checks: what the ERROR is about
    rc, out, plan_file = plan(state, "--allow-invalid")
    assert rc == 0, out
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    assert _verdicts(run_dir)["c-00000001"]["verdict"] == "pass"
    assert run_script("gate", run_dir).rc == 1


def test_a_tolerance_that_makes_an_expected_zero_a_range_is_refused(tmp_path):
    # the app returns 120; `1.0e+9` where `1.0e-9` was meant
    wide = "  route: quotes\n  result: {scalar: 0, float_tolerance: 1.0e+9}\n"
    state = write_state(tmp_path, {"c-00000001": case_yaml("c-00000001", expect=wide)})
    rc, out, plan_file = plan(state)
    assert rc == 2 and not plan_file.exists(), out
    assert ("datasets/c-00000001.yaml:14: c-00000001 [tolerance_swallows_zero] expect.result: float_tolerance "
            "1e+09 around the expected 0 (scalar) passes any result from -1e+09 to 1e+09") in out["error"], out
    assert "did you mean 1e-09?" in out["error"]
    rc, out, plan_file = plan(state, "--allow-invalid")
    assert rc == 0, out
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    assert _verdicts(run_dir)["c-00000001"]["layers"]["execution"]["verdict"] == "pass"   # 120 "equals" 0
    # the control: a rounding tolerance around 0 plans, and 120 fails it
    state = write_state(tmp_path / "tight", {"c-00000001": case_yaml("c-00000001", expect=(
        "  route: quotes\n  result: {scalar: 0, float_tolerance: 0.01}\n"))})
    rc, out, plan_file = plan(state)
    assert rc == 0, out
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    assert _verdicts(run_dir)["c-00000001"]["verdict"] == "fail"


def test_a_must_not_contain_word_is_case_sensitive_and_the_linter_says_so(tmp_path):
    # the app answers "A flight to Oslo costs 120 EUR."
    state = write_state(tmp_path, {
        "c-00000001": case_yaml("c-00000001", expect=(
            "  route: quotes\n  answer:\n    must_contain: [EUR]\n    must_not_contain: [oslo, INV-1003]\n")),
        "c-00000002": case_yaml("c-00000002", expect=(
            "  route: quotes\n  answer:\n    must_contain: [EUR]\n    must_not_contain: ['/(?i)oslo/']\n")),
        "c-00000003": case_yaml("c-00000003", expect=(
            "  route: quotes\n  answer:\n    must_contain: [EUR]\n    must_not_contain: ['/oslo/']\n")),
    })
    rc, out, plan_file = plan(state)
    assert rc == 0, out
    warned = [w for w in out["warnings"] if "[case_sensitive_absence]" in w]
    assert len(warned) == 1 and out["validation"]["warnings"] == 1, out["warnings"]   # not INV-1003, not /re/
    assert warned[0].endswith(
        "datasets/c-00000001.yaml:16: c-00000001 [case_sensitive_absence] expect.answer.must_not_contain[0] 'oslo' "
        "is compared case-sensitively: an answer saying 'Oslo' or 'OSLO' does not contain it, so the check passes; "
        "write '/(?i)oslo/' to forbid it in any case, or '/oslo/' to forbid only this spelling"), warned
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
    verdicts = _verdicts(run_dir)
    # matching is unchanged (recorded runs rescore as they were scored): the plain word passes, the
    # case-insensitive regex catches "Oslo"
    assert {cid: v["verdict"] for cid, v in verdicts.items()} == {
        "c-00000001": "pass", "c-00000002": "fail", "c-00000003": "pass"}
