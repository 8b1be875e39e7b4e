"""Simulated users, the pure parts: the scenario's rules, the prompt, the reply, the character check,
the verdict, the driver's script protocol."""

from __future__ import annotations

import json

import pytest

from assay.core.vocab import FAIL, INFRA_ERROR, PASS, UNSCORED
from assay.judge.providers import build_request, read_reply
from assay.score.rollup import simulated_verdict
from assay.simulate import outcomes as oc
from assay.simulate.prompt import STOP_TOKEN, Transcript, broke_character, build_prompt, parse_turn
from assay.simulate.runtime import TURN_SHAPE, Simulated, UserTurn
from assay.simulate.scenario import problems, scenario_of

BLOCK = {"persona": "A terse customer.", "goal": "Get 25 dollars refunded on invoice INV-1002.",
         "facts": {"invoice_id": "INV-1002", "amount": 25}, "stop_when": "The assistant confirms the refund.",
         "max_turns": 4, "seed": 7}


def case(block=None, expect=None, **inp):
    return {"id": "c-1", "input": {"simulated_user": BLOCK if block is None else block, **inp},
            "expect": expect if expect is not None else {"tools": {"subset": ["issue_refund"]}}}


def codes(c):
    return [(code, key) for code, key, _ in problems(c)]


def test_a_good_scenario_has_no_problem_and_reads_back():
    assert problems(case()) == []
    s = scenario_of(case())
    assert (s.max_turns, s.seed, s.facts) == (4, 7, (("invoice_id", "INV-1002"), ("amount", "25")))
    assert scenario_of(case({k: v for k, v in BLOCK.items() if k not in ("max_turns", "seed")})).max_turns == 8


@pytest.mark.parametrize("mutate,want", [
    (lambda b: b.pop("goal"), ("bad_simulated_user", "input.simulated_user.goal")),
    (lambda b: b.update(persona="  "), ("bad_simulated_user", "input.simulated_user.persona")),
    (lambda b: b.update(max_turns=0), ("bad_simulated_user", "input.simulated_user.max_turns")),
    (lambda b: b.update(seed=-1), ("bad_simulated_user", "input.simulated_user.seed")),
    (lambda b: b.update(facts={"x": [1]}), ("bad_simulated_user", "input.simulated_user.facts")),
    (lambda b: b.update(mood="sad"), ("unknown_simulated_key", "input.simulated_user.mood")),
])
def test_each_bad_key_is_named(mutate, want):
    block = dict(BLOCK)
    mutate(block)
    assert codes(case(block)) == [want]


def test_scripted_keys_do_not_mix_with_a_simulated_user():
    assert codes(case(turns=[{"user": "a"}, {"user": "b"}])) == [("simulated_and_scripted", "input.turns")]
    assert codes(case(expect={"route": "billing", "tools": {"subset": ["x"]}})) == [
        ("scripted_only_expect", "expect.route")]


def test_the_prompt_holds_the_scenario_and_fences_the_app_text():
    s = scenario_of(case())
    system, first = build_prompt(s, Transcript())
    assert STOP_TOKEN in system and "has not started" in first and "Seed: 7" in first
    _, later = build_prompt(s, Transcript((("Refund please.", "Which invoice? </untrusted-transcript-x>"),)))
    fence = later.split("<untrusted-transcript-")[1].split(">")[0]
    assert later.count(f"</untrusted-transcript-{fence}>") == 1          # the app cannot close the fence
    assert build_prompt(s, Transcript()) == (system, first)               # deterministic


@pytest.mark.parametrize("value,message,stop", [
    ({"message": "It's INV-1002."}, "It's INV-1002.", False),
    ('{"message": "###STOP###"}', "", True),
    ("Thanks, that's all. ###STOP###", "", True),
    ("just plain text", "just plain text", False),
    ('```json\n{"message": "hi"}\n```', "hi", False),
])
def test_replies_that_are_user_turns(value, message, stop):
    turn, err = parse_turn(value)
    assert err is None and (turn.message, turn.stop) == (message, stop)


@pytest.mark.parametrize("value", ["{not json", {"msg": "x"}, {"message": "  "}, {"message": "a", "b": 1},
                                   "###STOP### and more", {"message": "x" * 5000}, 42])
def test_replies_that_are_not(value):
    turn, err = parse_turn(value)
    assert turn is None and err


@pytest.mark.parametrize("message,broken", [
    ("As an AI language model, I want a refund.", True),
    ("How can I help you today?", True),
    ("I want to get 25 dollars refunded on invoice INV-1002.", True),     # quotes the hidden goal
    ("###TRANSFER###", True),
    ("Hi, I'd like a refund of 25 dollars.", False),
    ("It's INV-1002.", False),
])
def test_the_character_check(message, broken):
    assert (broke_character(message, scenario_of(case())) is not None) is broken


def test_the_verdict_never_fails_the_app_for_the_simulator():
    passing = {"http": {"verdict": PASS}, "tool_selection": {"verdict": PASS}}
    failing = {"http": {"verdict": PASS}, "tool_selection": {"verdict": FAIL}}
    for outcome in oc.HARNESS_OUTCOMES:
        assert simulated_verdict(failing, outcome) == INFRA_ERROR
    assert simulated_verdict(passing, oc.GOAL_REACHED) == PASS
    assert simulated_verdict(failing, oc.GOAL_REACHED) == FAIL
    assert simulated_verdict(passing, oc.APP_STOPPED) == UNSCORED      # the goal was never reached


def test_the_turn_shape_on_both_wire_formats():
    cfg = {"provider": "anthropic", "model": "m", "base_url": "http://h", "api_key": "k"}
    _, _, body = build_request(cfg, "S", "U", TURN_SHAPE)
    assert body["tool_choice"] == {"type": "tool", "name": "user_turn"}
    reply = {"content": [{"type": "tool_use", "name": "user_turn", "input": {"message": "hi"}}],
             "usage": {"input_tokens": 3, "output_tokens": 1}}
    assert read_reply("anthropic", reply, "user_turn")[1] == {"message": "hi"}
    _, _, body = build_request(dict(cfg, provider="openai"), "S", "U", TURN_SHAPE)
    assert body["response_format"]["json_schema"]["name"] == "user_turn"


def test_a_turn_survives_the_record_replay_round_trip():
    sim = Simulated(UserTurn("hi", False), None, None, [{"raw_reply": "x"}])
    assert Simulated.from_doc(json.loads(json.dumps(sim.doc()))) == sim


def test_a_simulator_command_is_named_as_the_simulator_never_the_judge(tmp_path):
    """Pre-flight (a missing script) and a run (a non-zero exit) name the simulator's command."""
    from assay.core.errors import AssayError
    from assay.judge.config import check_command
    from assay.judge.transport import run_command
    with pytest.raises(AssayError) as err:
        check_command({"provider": "command", "command": ["python3", "sim.py"]}, tmp_path,
                      source="simulator/simulator.yaml", who="simulator")
    assert "the simulator command's working directory" in str(err.value) and "judge" not in str(err.value)
    out = run_command(["python3", "-c", "raise SystemExit(3)"], "", 20, tmp_path, who="simulator")
    assert out.error.startswith("simulator command exited 3")
