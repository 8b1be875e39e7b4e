"""The lift block of compare_runs.py (assay.compare.lift) read by a skill author who made the usual
mistakes: every way the two runs differ by more than the arm is said in the lift's own words
(`lift.caveats`, and the `sentence` then starts "Not the arm's lift alone"), naming the runs and the
fix. The agent is tests/fakeclaude.py (a session per case, a second each), set up as
test_agent_mode.py's lift test does: "task ..." is fixed through the skill only with --plugin-dir,
"fix ..." invokes the skill whatever the arm (a skill that reached the agent another way)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fakeapp import case
from fixtures_authoring import run_inproc
from helpers import run_script
from rundir_util import cases_view
from test_agent_mode import FAKE, FIX_EXPECT, SECRET, agent_adapter, setup_state

pytestmark = pytest.mark.slow   # several run_cases.py runs of agent subprocesses

ARMS = {"with-skill": {"plugin_dirs": ["plugin"]}, "without": {"plugin_dirs": []}}


class Lift:
    """A state dir with the plugin, the fixture repo, cases and arms; `run(arm, ...)` plans and runs one arm."""

    def __init__(self, tmp_path: Path, inputs: list[str], arms: dict = ARMS, **agent) -> None:
        self.tmp, self.state, self.n = tmp_path, setup_state(tmp_path), 0
        self.adapter(arms, **agent)
        (self.state / "profile.yaml").write_text('{"capability_matrix": {}}')
        for i, text in enumerate(inputs):
            self.case(f"c-l{i}", text)

    def adapter(self, arms: dict, **agent) -> None:
        ad = agent_adapter(self.state.parent, **agent)
        ad["arms"] = arms
        (self.state / "adapter.yaml").write_text(json.dumps(ad))   # JSON is YAML

    def case(self, cid: str, text: str, split: tuple = ("smoke", "full")) -> None:
        doc = {**case(cid, text, expect=FIX_EXPECT, split=split),
               "review": {"status": "accepted", "by": "t", "at": "2026-12-04"}, "origin": "synthetic"}
        (self.state / "datasets" / f"{cid}.yaml").write_text(json.dumps(doc))

    def cli_version(self, version: str) -> None:
        cli_version(self.state.parent, version)

    def run(self, arm: str, k: int = 1, *, record: bool = False, replay: Path | None = None, rc: int = 0,
            mode: str = "regression", extra: tuple = ()) -> Path:
        # the setup steps in this process (the same parsers and commands); the run is a real run_cases.py
        r = run_inproc("convert_suite", self.state, "-o", self.state / "work" / "converted.json")
        assert r.rc == 0, r.stdout + r.stderr
        run_id = f"{mode}-20261204T2320{self.n:02d}Z"
        self.n += 1
        plan = self.state / "work" / f"{run_id}.json"
        r = run_inproc("make_plan", self.state / "work" / "converted.json", "--mode", mode,
                       *(("--k", str(k)) if mode != "smoke" else ()), "--state-dir", self.state, "--arm", arm, "--run-id", run_id, "-o", plan, "--max-attempts", "1")
        assert r.rc == 0, r.stdout + r.stderr
        out = self.state / "reports" / run_id
        how = ["--record"] if record else ["--replay", replay] if replay else []
        r = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never", *how, *extra,
                       env={"ASSAY_SCRATCH_DIR": str(self.tmp / "scratch"), "FAKE_SECRET": SECRET})
        assert r.rc == rc, r.stdout + r.stderr
        return out


def cli_version(root: Path, version: str, model: str = "claude-scripted-1") -> None:
    """The stand-in CLI under `root` (test_agent_mode.fixture_repo's bin/claude) upgraded in place (the
    same `program`, as `npm i -g` does): its init event's claude_code_version ("none": it names none)
    and model."""
    prog = root / "bin" / "claude"
    prog.write_text(f'#!/bin/sh\nFAKE_CLAUDE_VERSION={version} FAKE_CLAUDE_MODEL={model} '
                    f'exec "{sys.executable}" "{FAKE}" "$@"\n')


def lift(base: Path, cand: Path) -> dict:
    r = run_script("compare_runs", base, cand)
    assert r.rc == 0, r.stdout + r.stderr
    return r.json["lift"]


def test_one_arm_twice_keeps_both_runs_verdicts_and_reads_as_a_rerun(tmp_path):
    """Both runs planned under `without`: each case row had one key for the two sides (the second run's
    verdict over the first's) and the reading was "lift of arm without over arm without"."""
    t = Lift(tmp_path, ["task fix calc", "task fix calc"])
    first, second = t.run("without"), t.run("without")
    got = lift(first, second)
    assert got["reading"] == "a re-run of arm without, not a lift", got["reading"]
    assert got["cases"][0] == {"case_id": "c-l0", f"without ({first.name})": "fail", f"without ({second.name})": "fail"}
    assert len(got["caveats"]) == 1 and first.name in got["caveats"][0] and "--arm <the other arm>" in got["caveats"][0]
    assert got["sentence"].startswith("Not the arm's lift alone (1 caveat(s): both runs"), got["sentence"]


def test_two_arms_that_ran_one_agent_are_said_to_measure_nothing(tmp_path):
    """The base block keeps plugin_dirs and `without: {}` overrides nothing: make_plan.py warns, the
    runs go ahead, and the lift read 0 ("no effect") with nothing said."""
    t = Lift(tmp_path, ["task fix calc", "task fix calc"], arms={"with-skill": {"plugin_dirs": ["plugin"]}, "without": {}})
    got = lift(t.run("without"), t.run("with-skill"))
    assert got["pass_rate"]["lift"] == 0.0
    assert any("ran the same agent" in c and "the lift measures nothing" in c for c in got["caveats"]), got["caveats"]
    assert got["sentence"].startswith("Not the arm's lift alone"), got["sentence"]


def test_another_k_an_edited_case_and_a_changed_agent_key_are_caveats_and_the_edited_case_is_not_counted(tmp_path):
    """Between the arms' runs the author edited a case, raised max_turns and planned another --k: the
    pass rates counted the edited case (a different case under each arm) and the lift said none of it."""
    t = Lift(tmp_path, ["task fix calc", "task fix calc", "task fix calc"])
    without = t.run("without", k=1)
    t.case("c-l2", "task fix calc please")
    t.adapter(ARMS, max_turns=9)
    got = lift(without, t.run("with-skill", k=2))
    assert got["pass_rate"] == {"base": 0.0, "candidate": 1.0, "lift": 1.0, "cases": 2}, got["pass_rate"]
    said = " | ".join(got["caveats"])
    assert "k differs (arm without k=1, arm with-skill k=2)" in said, said
    assert "1 case(s) changed between the runs (case_sha256 differs: c-l2)" in said, said
    assert "differ in invocation.agent max_turns, which neither arm sets" in said, said


def test_a_skill_the_arm_without_its_plugin_still_invoked_says_the_arms_are_not_isolated(tmp_path):
    """`without: {plugin_dirs: []}` while the skill reaches the agent another way (here the stand-in CLI
    invokes it on "fix ..." in every arm; a real one through the fixture's .claude/ or a user config):
    both arms pass, the lift read 0 as if the skill added nothing."""
    t = Lift(tmp_path, ["fix the add function", "task fix calc"])
    without, with_skill = t.run("without"), t.run("with-skill")
    got = lift(without, with_skill)
    leaks = [c for c in got["caveats"] if "not isolated" in c]
    assert len(leaks) == 1, got["caveats"]
    assert leaks[0].startswith(f"arm without (run {without.name}) invoked fix-tests in 1 case(s) (c-l0)"), leaks[0]
    assert got["trigger_accuracy"]["base"] == {"cases": 2, "correct": 1, "accuracy": 0.5}


def test_an_arm_replayed_from_its_earlier_recording_is_a_caveat(tmp_path):
    """The with-skill arm paid for once (--record) and then replayed beside a live without run: the
    lift read 1.0 as if the agent had run under the arm today."""
    t = Lift(tmp_path, ["task fix calc"])
    without = t.run("without")
    recorded = t.run("with-skill", record=True)
    got = lift(without, t.run("with-skill", replay=recorded))
    assert got["pass_rate"]["lift"] == 1.0
    said = [c for c in got["caveats"] if "replayed from" in c]
    assert len(said) == 1 and f"replayed from run {recorded.name}" in said[0] and "run the arm live" in said[0], said


@pytest.fixture(scope="module")
def canary_stopped(tmp_path_factory) -> tuple[Path, Path]:
    """Two cases and a canary, all "task ..." (fixed only through the skill): the without arm's run, stopped
    by its failing canary (exit 4), and the with-skill arm's run after it. Made once; two tests read them."""
    t = Lift(tmp_path_factory.mktemp("canary-stopped"), ["task fix calc", "task fix calc"])
    t.case("c-canary", "task fix calc", split=("smoke", "full", "canary"))
    without = t.run("without", rc=4)
    return without, t.run("with-skill")


def test_a_lift_over_a_run_a_canary_stopped_is_withheld_naming_the_run_and_the_fix(canary_stopped):
    """The without arm's canary ("task ...", fixed only through the skill) failed: the run stopped
    (exit 4, status aborted_canary) with nothing but the canary scored. The lift read pass^k 0.0 vs 1.0,
    lift 1.0 "over 1 case(s)" -- the canary, which no statistic counts -- and the status was a note."""
    without, with_skill = canary_stopped
    got = lift(without, with_skill)
    assert got["pass_rate"]["lift"] is None and got["pass_rate"]["cases"] == 0, got["pass_rate"]
    assert got["withheld"].startswith(f"no lift: the run {without.name} of arm without ended with status "
                                      "'aborted_canary'"), got["withheld"]
    assert "run the arm again" in got["withheld"] and f"gate.py {without}" in got["withheld"], got["withheld"]
    assert got["sentence"] == got["withheld"]


def test_a_run_stopped_by_fail_fast_withholds_the_lift(tmp_path):
    """The with-skill arm run with --fail-fast 1 stopped after its first failure: the lift was drawn over
    the cases it reached, as if the arm had run the suite."""
    t = Lift(tmp_path, ["task fix calc", "wrong edit", "task fix calc", "task fix calc"])
    without = t.run("without", mode="smoke")
    with_skill = t.run("with-skill", mode="smoke", extra=("--fail-fast", "1", "--order", "plan"))
    got = lift(without, with_skill)
    assert got["pass_rate"]["lift"] is None, got["pass_rate"]
    assert f"the run {with_skill.name} of arm with-skill ended with status 'stopped_fail_fast'" in got["withheld"]
    assert "without --fail-fast" in got["withheld"], got["withheld"]


def test_arms_run_on_two_cli_versions_are_a_caveat_and_each_version_is_recorded(tmp_path):
    """The CLI was upgraded between the arms' runs (the same `program`): the lift read as the skill's
    effect what may be the CLI's; neither run said which CLI it ran."""
    t = Lift(tmp_path, ["task fix calc", "task fix calc"])
    t.cli_version("2.0.1")
    without = t.run("without")
    t.cli_version("2.1.0")
    with_skill = t.run("with-skill")
    traj = json.loads((cases_view(with_skill) / "c-l0" / "trajectory.json").read_text())
    assert traj["agent_cli"] == {"version": "2.1.0", "model": "claude-scripted-1"}, traj.get("agent_cli")
    got = lift(without, with_skill)
    assert got["agent_cli"] == {"base": {"versions": ["2.0.1"], "models": ["claude-scripted-1"]},
                                "candidate": {"versions": ["2.1.0"], "models": ["claude-scripted-1"]}}
    said = [c for c in got["caveats"] if "Claude Code CLI" in c]
    assert len(said) == 1 and "arm without 2.0.1, arm with-skill 2.1.0" in said[0], got["caveats"]
    assert got["sentence"].startswith("Not the arm's lift alone"), got["sentence"]
    t.cli_version("2.1.0")
    again = lift(t.run("without"), with_skill)   # one CLI on both sides: nothing said
    assert not [c for c in again["caveats"] if "CLI" in c], again["caveats"]


def test_the_with_arm_run_first_is_no_swap_warning_and_arms_given_backwards_are(tmp_path):
    """The author ran the with-skill arm first and compared WITHOUT WITH as the docs say: the headline
    asked "are the arguments swapped?" because the base run started later -- the arms, not the clock,
    say which side is which. Given backwards (WITH WITHOUT), nothing asked."""
    t = Lift(tmp_path, ["task fix calc", "task fix calc"])
    with_skill = t.run("with-skill")
    without = t.run("without")
    r = run_script("compare_runs", without, with_skill)
    assert r.rc == 0, r.stdout + r.stderr
    assert "swapped" not in r.json["headline"] and not [n for n in r.json["notes"] if "swapped" in n], r.json
    back = run_script("compare_runs", with_skill, without)
    assert back.rc == 0, back.stdout + back.stderr
    assert "the base arm with-skill has plugin dir(s) the candidate arm without lacks" in back.json["headline"]
    assert back.json["lift"]["pass_rate"]["lift"] == -1.0


def test_a_canary_both_arms_pass_is_left_out_of_the_pass_rates(tmp_path):
    """A canary (passing under every arm: "fix ..." invokes the skill whatever the arm) counted in the
    lift's pass rates, as in no paired statistic: pass^k 1.0 vs 0.5 "over 2 case(s)", a lift of 0.5
    for what is 1.0 on the one case the arm was measured on."""
    t = Lift(tmp_path, ["task fix calc"])
    t.case("c-canary", "fix the add function", split=("smoke", "full", "canary"))
    got = lift(t.run("without"), t.run("with-skill"))
    assert got["pass_rate"] == {"base": 0.0, "candidate": 1.0, "lift": 1.0, "cases": 1}, got["pass_rate"]
    assert got["stats"]["n"] == 1
    # the trigger accuracy too: it counted the canary's skills layer, 0.5 vs 1.0 "over 2 cases"
    assert got["trigger_accuracy"] == {"base": {"cases": 1, "correct": 0, "accuracy": 0.0},
                                       "candidate": {"cases": 1, "correct": 1, "accuracy": 1.0}}, got["trigger_accuracy"]


def test_two_finished_arms_with_no_case_scored_on_both_sides_say_why_there_is_no_lift(tmp_path):
    """Every case was edited between the arms' runs (both finished, status ok): no case pairs, so the
    lift had rates null and no `sentence` at all -- a reader of the lift saw nothing, not why."""
    t = Lift(tmp_path, ["task fix calc"])
    t.case("c-canary", "fix the add function", split=("smoke", "full", "canary"))
    without = t.run("without")
    t.case("c-l0", "task fix calc please")
    got = lift(without, t.run("with-skill"))
    assert got["pass_rate"]["lift"] is None and got["pass_rate"]["cases"] == 0, got["pass_rate"]
    assert "withheld" not in got
    assert got["sentence"].startswith("Not the arm's lift alone (2 caveat(s): 1 case(s) changed"), got.get("sentence")
    assert ("No lift: no case was scored pass/fail under both arms on an unchanged case (1 case(s): 1 edited "
            "between the runs), so there is no pass rate to compare; run both arms on one suite") in got["sentence"]


def test_gate_with_the_other_arm_as_baseline_says_an_unfinished_arm_run_and_a_swapped_order(canary_stopped):
    """evaluate-agents.md step 6 (`gate.py WITH --baseline WITHOUT`) with the without arm's run stopped by
    its canary: the gate opened on the with-skill run's own decision, saying only that the baseline was red
    and to "compare with a run whose gate was open (--baseline auto chooses one)" -- a run of another arm
    or none -- never that the arm's run did not finish (compare_runs.py's lift.withheld). Given swapped,
    the note's fix named compare_runs.py alone."""
    without, with_skill = canary_stopped
    own = run_script("gate", with_skill, "--json")
    r = run_script("gate", with_skill, "--baseline", without, "--json")
    assert (r.rc, own.rc) == (0, 0), r.stdout + r.stderr
    assert r.json["gate"] == own.json["gate"] == "open" and r.json["reasons"] == own.json["reasons"] == []
    notes = r.json["comparison"]["notes"]
    withheld = [n for n in notes if n.startswith(f"no lift: the run {without.name} of arm without ended with "
                                                 "status 'aborted_canary'")]
    assert len(withheld) == 1 and "run the arm again" in withheld[0], notes
    assert "the decision is the run's own" in withheld[0], withheld
    red = r.json["comparison"]["red_baseline"]
    assert red and "expected of arm without's run" in red and "--baseline auto" not in red, red
    text = run_script("gate", with_skill, "--baseline", without)
    assert text.rc == 0 and "note: no lift: the run" in text.stdout, text.stdout
    back = run_script("gate", without, "--baseline", with_skill)
    assert back.rc == 1, back.stdout + back.stderr
    assert "are the arguments swapped? (compare_runs.py WITHOUT WITH; gate.py WITH --baseline WITHOUT)" in back.stdout, \
        back.stdout
