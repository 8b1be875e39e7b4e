"""Simulated users meeting a simulator that misbehaves (the newcomer trial of simulated users): the
example helpdesk app on a real port, the simulator a command, the pipeline's scripts as subprocesses
(convert_suite, make_plan, run_cases, gate), each test in its own temp dir."""

from __future__ import annotations

import json

import pytest

from helpdesk_util import copy_state, helpdesk
from helpers import run_script
from test_simulated_users import SIM_COMMAND, run, sim_case, simulator_yaml, verdict

pytestmark = pytest.mark.slow

# the test's simulator: SIM_COMMAND, and a user that sends the stop token before saying anything
STOPPER = SIM_COMMAND.replace('if "outage" in goal:',
                              'if "at once" in goal:\n    print(json.dumps({"message": "###STOP###"})); sys.exit(0)\n'
                              'if "outage" in goal:', 1)


def test_a_user_that_stops_before_its_first_message_closes_the_gate(tmp_path):
    """A simulator that answers the stop token on turn 1 (a model that misread stop_when) sent nothing
    to the app: the runner crashed on the empty conversation (IndexError; the run left unfinished).
    Its end state was never scored: unscored with the reason, and a gating one closes the gate."""
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(STOPPER, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 20\n")
    sim_case(state, "c-0000stop", "stop at once")
    with helpdesk(state) as env:
        out, gate = run(state, env, "c-0000stop", "c-003bd57c", added=True)
    v = verdict(out, "c-0000stop")
    assert (v["verdict"], v["simulator"]["outcome"], v["turns_sent"]) == ("unscored", "goal_reached", 0)
    assert v["unscored_reason"].startswith("the simulated user sent the stop token before its first message")
    assert verdict(out, "c-003bd57c")["verdict"] == "pass"
    assert gate["rc"] == 1, gate["text"]
    assert "c-0000stop (the simulated user sent the stop token before its first message: nothing was sent" \
        in gate["text"]
    assert run_script("run_cases", "--verify", out).rc == 0


def test_the_infra_under_the_bar_line_never_names_a_case_that_closes_the_gate(tmp_path):
    """A user out of character (infra, under the bar) beside one that never reached its goal (closes
    the gate): the line of infra cases "not closing the gate" named both, the second also named as
    closing it two lines below. It names only the one that does not close it."""
    state = copy_state(tmp_path)
    (tmp_path / "sim.py").write_text(SIM_COMMAND, encoding="utf-8")
    simulator_yaml(state, "provider: command\ncommand: [python3, ../sim.py]\ntimeout_s: 20\n")
    sim_case(state, "c-0000robo", "robot talk")
    sim_case(state, "c-0000long", "list forever")
    with helpdesk(state) as env:
        out, _ = run(state, env, "c-0000robo", "c-0000long", "c-003bd57c", added=True)
        gate = run_script("gate", out, "--max-infra-rate", "0.9", "--json", env=env)
        text = run_script("gate", out, "--max-infra-rate", "0.9", env=env).stdout
    assert gate.rc == 1
    reasons = json.loads(gate.stdout)["reasons"]
    assert any(r.startswith("1 gating simulated user(s) never reached the goal") and "c-0000long" in r
               for r in reasons), reasons
    under = [line for line in text.splitlines() if "under --max-infra-rate" in line]
    assert len(under) == 1, text
    assert under[0].strip().startswith("1 infra_error case(s) under --max-infra-rate (not closing the gate")
    assert "c-0000robo (simulator_broke_character" in under[0] and "c-0000long" not in under[0]


def test_a_misspelt_simulated_user_key_is_named_with_the_key_it_meant(tmp_path):
    """`simulated_users:` (a typo) under input: the linter said the input had "neither messages nor
    turns", as if simulated_user were not a way to write it. Both findings now name it."""
    state = copy_state(tmp_path)
    sim_case(state, "c-0000typo", "list forever")
    case = state / "datasets" / "c-0000typo.yaml"
    case.write_text(case.read_text(encoding="utf-8").replace("simulated_user:", "simulated_users:"), encoding="utf-8")
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    found = {f["code"]: f["message"] for f in json.loads(r.stdout)["findings"] if f["case_id"] == "c-0000typo"}
    assert r.rc != 0
    assert "did you mean 'simulated_user'?" in found["bad_messages"]
    assert found["missing_input"] == "input has none of messages, turns or simulated_user"


def test_an_expect_that_only_repeats_a_fact_the_simulated_user_tells_is_an_echo(tmp_path):
    """facts: {invoice_id: INV-1002} and expect.answer.must_contain [INV-1002]: the user tells the app
    the id, so an app that repeats it passes whatever else it does (one that forgot the conversation
    too). The linter's echo check read scripted turns only and said nothing; it reads the facts now.
    A must_contain the user never says is not an echo."""
    state = copy_state(tmp_path)
    for cid, entry in (("c-0000echo", "inv-1002"), ("c-0000real", "refund issued")):
        sim_case(state, cid, "a refund")
        case = state / "datasets" / f"{cid}.yaml"
        case.write_text(case.read_text(encoding="utf-8").replace(
            "    max_turns: 2\n", "    max_turns: 2\n    facts: {invoice_id: INV-1002, amount: 40}\n").replace(
            "  tools:\n    forbidden: [issue_refund]\n", f"  answer: {{must_contain: [{entry}, '40']}}\n"), encoding="utf-8")
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json")
    echoes = {(f["case_id"], f["key"]): f for f in json.loads(r.stdout)["findings"] if f["code"] == "echo_assertion"}
    assert set(echoes) == {("c-0000echo", "expect.answer.must_contain.0"), ("c-0000echo", "expect.answer.must_contain.1"),
                           ("c-0000real", "expect.answer.must_contain.1")}, echoes
    first = echoes[("c-0000echo", "expect.answer.must_contain.0")]
    assert (first["source"], first["line"]) == ("datasets/c-0000echo.yaml", 16), first
    assert "'inv-1002' is already in the user's input" in first["message"]
