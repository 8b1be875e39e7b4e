"""A newcomer's planning and gating mistakes, on a YAML state dir and a real loopback app, each
script a subprocess as the README drives them (the small travel app of test_no_silent_green):

- a plan whose every case is `gating: false` (the targeted tag of new, unreviewed cases) planned
  without a word and its gate opened on any failure ("PASS (2 failure(s) on gating:false cases, not
  counted)"): make_plan.py now says it, and the gate closes, naming the split and the fix;
- a split that holds only canaries planned "0 cases + 1 canary" and ran: make_plan.py now refuses it
  as the empty selection it is, naming the canaries and the splits present;
- `gate.py reports --latest` without `--mode` gated a newer green smoke run with a red regression run
  beside it and said nothing of it: it now names the other modes' newest runs and the `--mode` to pass;
- a mode typo (`smok`, `Regression`, `full`) at make_plan.py or gate.py named no mode to use;
- wait_run.py on a plan make_plan.py refused, a plan file or a run's results.json said "pass
  reports/<run-id> as printed by make_plan.py" (the user had); and while the runner was still in
  pre-flight (no run dir yet) it exited 2, "not a run directory", where it is a run in progress (3).
"""

from __future__ import annotations

import fcntl
import os

import pytest

from fakeapp import FakeApp
from helpers import run_script
from test_no_silent_green import case_yaml, travel_reply, write_state

TARGETED, REGRESSION, SMOKE = ("targeted-20261130T000000Z", "regression-20261130T010000Z", "smoke-20261130T020000Z")
REFUSED = "regression-20261129T000000Z"   # older than every run: no --latest gate reads it


def drafts(cid: str) -> str:
    """A new case, not reviewed yet: unit drafts, full split, gating: false."""
    return case_yaml(cid, top="gating: false\n").replace("unit: quotes", "unit: drafts").replace(
        "split: [smoke, full]", "split: [full]")


def make(state, *args):
    work = state / "work"
    return run_script("make_plan", work / "converted.json", "--state-dir", state, "-o", work / "plan.json", *args)


def run(state, app, run_id: str, *plan_args):
    r = make(state, "--run-id", run_id, *plan_args)
    assert r.rc == 0, r.stdout + r.stderr
    ran = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", state / "reports" / run_id,
                     "--progress", "never", env={"TRAVEL_BASE_URL": app.url})
    assert ran.rc == 0, ran.stdout + ran.stderr
    return r


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """c-s1 (smoke + full) passes, c-f1 (full) fails, c-d1/c-d2 (full, unit drafts) are gating: false;
    a canary in every split. Runs: targeted --tag drafts, regression k=1 (red), smoke (green, newest)."""
    state = write_state(tmp_path_factory.mktemp("plangate"), {
        "c-s1": case_yaml("c-s1"),
        "c-f1": case_yaml("c-f1", expect="  route: quotes\n  result: {scalar: 999}\n").replace(
            "split: [smoke, full]", "split: [full]"),
        "c-d1": drafts("c-d1"), "c-d2": drafts("c-d2"),
        "canary-up": case_yaml("canary-up", expect="  route: quotes\n").replace(
            "split: [smoke, full]", "split: [smoke, full, canary]"),
    })
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    with FakeApp(travel_reply) as app:
        targeted = run(state, app, TARGETED, "--mode", "targeted", "--tag", "drafts")
        run(state, app, REGRESSION, "--mode", "regression", "--k", "1")
        run(state, app, SMOKE, "--mode", "smoke")
    return state, targeted


def test_a_plan_that_gates_no_case_is_said_and_its_gate_closes(runs):
    state, planned = runs
    said = ("no case this plan selects gates: all 2 case(s) of split 'full' are gating: false, so gate.py closes "
            "on the run (no failure could close it); drop `gating: false` from the reviewed cases' YAML, or plan a "
            "split that holds gating cases")
    assert said in planned.json["warnings"] and f"make_plan: {said}" in planned.stderr, planned.stdout + planned.stderr
    r = run_script("gate", state / "reports" / TARGETED, "--json")
    assert r.rc == 1, r.stdout
    assert r.json["reasons"] == [
        "no gating case in this run: all 2 case(s) (split 'full') are gating: false, so no failure could close this "
        "gate (an open gate would say nothing of them); let the reviewed cases gate (drop `gating: false` from "
        "their YAML) or plan a split that holds gating cases"], r.json
    from assay.verdict import decide
    assert not decide(state / "reports" / TARGETED).open   # every surface asks the one decision
    # a run with one gating case among gating: false ones is gated as before
    assert run_script("gate", state / "reports" / SMOKE).rc == 0


def test_a_suite_that_gates_nothing_is_said_once(tmp_path):
    """Every case gating: false: the linter's suite-wide nothing_gates and the plan's own warning said the
    same thing twice on make_plan's stderr; the plan's words (split, count, what the gate does) stand alone."""
    state = write_state(tmp_path, {"c-d1": drafts("c-d1"), "c-d2": drafts("c-d2")})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = make(state, "--mode", "regression")
    assert r.rc == 0, r.stdout + r.stderr
    assert "[nothing_gates]" not in r.stderr and r.stderr.count("make_plan: no case this plan selects gates: all 2 "
                                                                "case(s) of split 'full' are gating: false") == 1, r.stderr
    assert [w for w in r.json["warnings"] if "gates" in w] == [r.json["warnings"][-1]], r.json["warnings"]
    assert r.json["validation"]["warnings"] == 1   # the linter's count stands: its finding is said in the plan's words
    val = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                     "--adapter", work / "adapter.json")
    assert "nothing_gates" in val.stdout   # validate_cases.py, which plans nothing, still says it


def test_a_split_of_canaries_only_is_refused_naming_them(tmp_path):
    state = write_state(tmp_path, {
        "c-1": case_yaml("c-1").replace("split: [smoke, full]", "split: [full]"),
        "canary-up": case_yaml("canary-up", expect="  route: quotes\n").replace(
            "split: [smoke, full]", "split: [smoke, full, canary]")})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json").rc == 0
    r = make(state, "--mode", "smoke")
    assert r.rc == 2 and not (work / "plan.json").exists(), r.stdout + r.stderr
    assert r.json["error"].startswith(
        "--mode smoke (split 'smoke') selects only canaries (canary-up): a canary checks that the app is up and "
        "stops the run when it is not; it is no case, so the run would measure nothing"), r.json
    assert "Splits present in the suite: full: 2, smoke: 1, canary: 1. Add 'smoke' to the `split` field" in r.json["error"]
    assert r.json["cases"] == ["canary-up"]


def test_latest_without_mode_names_the_newer_green_runs_other_modes(runs):
    state, _ = runs
    reports = state / "reports"
    r = run_script("gate", reports, "--latest")
    assert r.rc == 0 and r.stdout.startswith(f"{SMOKE}: PASS"), r.stdout   # the newest run, as documented
    assert (f"gate: --latest without --mode gated {SMOKE}, the newest run of any mode (smoke); this reports dir also "
            f"holds runs of other modes, not gated here (newest regression: {REGRESSION}; targeted: {TARGETED}): pass "
            "--mode regression or --mode targeted to gate that series") in r.stderr, r.stderr
    red = run_script("gate", reports, "--latest", "--mode", "regression")
    assert red.rc == 1 and red.stdout.startswith(f"{REGRESSION}: FAIL") and "--latest without" not in red.stderr


def test_a_mode_typo_names_the_mode_to_use(runs):
    state, _ = runs
    r = make(state, "--mode", "smok")
    assert r.rc == 2 and r.json["error"] == ("unknown --mode 'smok'; did you mean 'smoke'?; modes: smoke, regression, "
                                             "targeted, holdout"), r.json
    reports = state / "reports"
    g = run_script("gate", reports, "--latest", "--mode", "Regression")
    assert g.rc == 2 and g.json["error"].startswith("--mode 'Regression' is no run mode; did you mean 'regression'?")
    full = run_script("gate", reports, "--latest", "--mode", "full")
    assert full.rc == 2 and "gate each: --latest --mode regression, then --latest --mode holdout" in full.json["error"]


def test_wait_run_and_gate_name_what_they_were_given_instead_of_a_run(runs, tmp_path):
    state, _ = runs
    reports = state / "reports"
    refused = make(state, "--mode", "regression", "--k", "0", "--run-id", REFUSED)
    assert refused.rc == 2
    w = run_script("wait_run", reports / REFUSED, "--timeout-s", "0")
    assert w.rc == 2 and ("that plan was refused (make_plan.py exit 2: --k 0: k must be between 1 and 100): it never "
                          "became a run") in w.json["error"], w.json
    plan = tmp_path / "plan.json"   # a plan made now, never run
    assert make(state, "--mode", "smoke", "--run-id", "smoke-20261201T000000Z").rc == 0
    plan.write_bytes((state / "work" / "plan.json").read_bytes())
    for script in ("gate", "wait_run"):
        p = run_script(script, plan)
        assert p.rc == 2 and (f"that is a plan (make_plan.py's output), not a run: its run directory is "
                              f"{reports / 'smoke-20261201T000000Z'} (run it first") in p.json["error"], p.json
        res = run_script(script, reports / SMOKE / "results.json")
        assert res.rc == 2 and f"that is a run's results.json: pass its directory, {reports / SMOKE}" in res.json["error"]
    # the runner still in pre-flight holds its lock and has made no run dir yet: a run in progress
    lock = reports / ".smoke-20261201T000000Z.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        live = run_script("wait_run", reports / "smoke-20261201T000000Z", "--timeout-s", "0.5", "--interval-s", "0.1")
        assert live.rc == 3 and live.json["runner_process"] == "alive", live.stdout + live.stderr
        assert live.json["message"].startswith("its runner is still in pre-flight (no run directory yet)")
    finally:
        os.close(fd)
        lock.unlink()
