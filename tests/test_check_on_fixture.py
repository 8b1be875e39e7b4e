"""A check the untouched fixture passes (runner contract §5.4): `check: {command: "true"}` let an
agent that did nothing pass with no word at the run. Each distinct check now runs once on a fresh
copy of the fixture before the cases; a case whose check passes there and that asserts nothing an
idle agent fails reads its check `unscored` (the gate closes naming it), while a case with a real
`contains` keeps a fixture-passing check scored. Replay and rescore decide the same from the fact
recorded in workdir.json. Driven as the user meets it: tests/scripted_agent.py through the adapter's
`command:` override, run_cases.py / rescore.py / gate.py as subprocesses, no model, no CLI."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent_state import agent_env, build_agent_state, live_replayed_rescored
from fakeapp import make_plan
from helpers import run_script

pytestmark = pytest.mark.slow   # four run_cases.py / rescore.py processes of a small agent suite
LIVE, REPLAYED, RESCORED = ("smoke-20261206T10000%dZ" % i for i in range(3))
IDLE, KEPT, IDLE_KEPT, REAL = "c-idle-true", "c-fix-true-kept", "c-idle-true-kept", "c-fix-real-check"
HOLLOW_START = "the check passes on the untouched fixture"


def _cases(log: Path) -> dict:
    # a check that passes anywhere, and notes where it ran (its cwd and HOME) in `log`
    note = [sys.executable, "-c", f"import os; open({str(log)!r}, 'a').write(os.getcwd() + ' ' + "
                                  "os.environ['HOME'] + '\\n')"]
    return {
        # the hollow kind: an agent that does nothing, a check that passes on the fixture, nothing else
        # an idle agent fails (skills and unchanged do not count)
        IDLE: ("explain what add() does", {"check": {"command": note}, "files": {"unchanged": ["*"]},
                                           "skills": {"must_not_trigger": ["fix-tests"]}}),
        # the same check beside a text the fixture lacks: a regression guard, scored
        KEPT: ("fix add()", {"check": {"command": note}, "files": {"contains": {"calc.py": ["return a + b"]}}}),
        IDLE_KEPT: ("explain what add() does", {"check": {"command": note},
                                                "files": {"contains": {"calc.py": ["return a + b"]}}}),
        # a check that fails on the fixture: scored as ever
        REAL: ("fix add()", {"check": {"command": [sys.executable, "check_calc.py"]}}),
    }


def _decisions(run_dir: Path) -> dict[str, tuple]:
    out = {}
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)["verdict"]
        out[doc["case_id"]] = (doc["verdict"], {n: (layer["verdict"], layer.get("reason"))
                                                for n, layer in doc["layers"].items()})
    return out


def _workdir(run_dir: Path, cid: str) -> dict:
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        if doc["case_id"] == cid:
            return json.loads(doc["files"]["workdir.json"])
    raise AssertionError(cid)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from assay.suite.convert import convert_state_dir
    root = tmp_path_factory.mktemp("check-on-fixture")
    log = root / "check.log"
    state = build_agent_state(root / "app", _cases(log))
    converted = convert_state_dir(state)
    adapter = converted["adapter"]
    adapter["invocation"]["max_concurrency"] = 1
    plan = make_plan(state, converted["cases"], run_id=LIVE, adapter_doc=adapter, selecting_split="full",
                     execution={"max_attempts": 1, "backoff_s": []})
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    reports = state / "reports"
    env = {**agent_env(dict(os.environ), broken=False), "ASSAY_SCRATCH_DIR": str(root / "scratch")}
    ran: list[str] = []
    quiet = root / "quiet-scratch"   # neither replay nor rescore starts the agent or a check
    live_replayed_rescored(state, plan, reports, env, quiet, (LIVE, REPLAYED, RESCORED),
                           between=lambda: ran.extend(log.read_text(encoding="utf-8").splitlines()))
    assert log.read_text(encoding="utf-8").splitlines() == ran, "a check ran again in replay or rescore"
    assert not list(quiet.rglob("fixture-checks")) and not list(quiet.rglob("cases"))
    return {"log": ran, "runs": {name: reports / name for name in (LIVE, REPLAYED, RESCORED)},
            "fixture": root / "app" / "fixtures" / "repo"}


def test_a_check_the_untouched_fixture_passes_is_unscored_and_closes_the_gate(runs):
    live = _decisions(runs["runs"][LIVE])
    verdict, layers = live[IDLE]
    assert verdict == "unscored", live[IDLE]
    assert layers["check"][0] == "unscored" and layers["check"][1].startswith(HOLLOW_START), layers["check"]
    assert "assert a check that fails before the fix" in layers["check"][1]
    assert layers["files"][0] == "pass" and layers["skills"][0] == "pass"   # what an idle agent passes anyway
    facts = _workdir(runs["runs"][LIVE], IDLE)["check_on_fixture"]
    assert facts["exit_code"] == 0 and facts["fixture_fails"] == {}, facts
    _gate_names_it(runs["runs"][LIVE])


def _gate_names_it(run_dir: Path) -> None:
    g = run_script("gate", run_dir)
    said = g.stdout + g.stderr
    assert g.rc == 1, said
    assert any(IDLE in line and HOLLOW_START in line and "fails before the fix" in line
               for line in said.splitlines()), said


def test_a_fixture_passing_check_beside_a_real_contains_stays_scored(runs):
    live = _decisions(runs["runs"][LIVE])
    assert live[KEPT][0] == "pass" and live[KEPT][1]["check"] == ("pass", None), live[KEPT]
    assert live[IDLE_KEPT][0] == "fail" and live[IDLE_KEPT][1]["files"][0] == "fail", live[IDLE_KEPT]
    assert live[IDLE_KEPT][1]["check"][0] == "pass"   # kept scored: the contains already fails the idle agent
    real = _workdir(runs["runs"][LIVE], REAL)["check_on_fixture"]
    assert real["exit_code"] == 1 and live[REAL][0] == "pass", (real, live[REAL])
    kept = _workdir(runs["runs"][LIVE], KEPT)["check_on_fixture"]
    assert kept["fixture_fails"] == {"contains": {"calc.py": ["return a + b"]}}, kept


def test_each_distinct_check_runs_once_on_a_fresh_copy_with_its_own_home(runs):
    """Three cases share one check: it ran once on the fixture (before the cases), then once per case."""
    lines = [line.split(" ") for line in runs["log"]]
    assert len(lines) == 4, runs["log"]
    cwd, home = lines[0]
    assert "/fixture-checks/" in cwd and cwd.endswith("/work") and home.endswith("/home"), lines[0]
    assert Path(cwd).parent == Path(home).parent and not Path(cwd).exists()   # its own copy, removed after
    assert all("/cases/" in c for c, _ in lines[1:]), lines
    assert not (runs["fixture"] / "check.log").exists()


def test_replay_and_rescore_decide_from_the_recorded_fact(runs):
    live = _decisions(runs["runs"][LIVE])
    for name in (REPLAYED, RESCORED):
        assert _decisions(runs["runs"][name]) == live, name
        r = run_script("run_cases", "--verify", runs["runs"][name])
        assert r.rc == 0 and r.json["complete"], r.stdout
        _gate_names_it(runs["runs"][name])


def test_a_record_without_the_fact_is_decided_as_before():
    """A run dir written before check_on_fixture was kept: its check layer is scored from the exit code."""
    from assay.score.agent import score_check
    got = {"ran": True, "command": ["true"], "exit_code": 0, "timed_out": False}
    expect = {"check": {"command": "true"}}
    assert score_check({"check": got}, expect)["verdict"] == "pass"
    before = {"command": ["true"], "exit_code": 0, "fixture_fails": {}}
    layer = score_check({"check": got, "check_on_fixture": before}, expect)
    assert layer["verdict"] == "unscored" and layer["reason"].startswith(HOLLOW_START)
    # an entry the fixture failed that the case no longer asks (edited since) does not keep it scored
    before["fixture_fails"] = {"exists": ["NEW.md"]}
    assert score_check({"check": got, "check_on_fixture": before}, expect)["verdict"] == "unscored"
    assert score_check({"check": got, "check_on_fixture": before},
                       dict(expect, files={"exists": ["NEW.md"]}))["verdict"] == "pass"
