"""A newcomer's key in the wrong place: each is refused (as before) with words that say where the key
belongs and the move, at its file:line, instead of a spelling guess that points elsewhere; a typo'd
`<answer>` placeholder in the adapter's response_body is refused by convert_suite.py, the first step
that reads adapter.yaml, at its line, not first by the run's pre-flight. Scripts run as subprocesses,
the way the README drives them (same small travel app and state dir as test_no_silent_green).
"""

from __future__ import annotations

import json

from helpers import run_script, write_yaml
from test_no_silent_green import ADAPTER, case_yaml, write_state


def _plan_error(state):
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json")
    assert r.rc == 2, r.stdout
    return r.json


def _findings(state, cid):
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json")
    assert r.rc == 1, r.stdout
    return [f for f in r.json["findings"] if f["case_id"] == cid]


def test_route_under_expect_answer_is_named_as_an_expect_key_with_the_move(tmp_path):
    """It said `expect.answer has unknown key(s) ['route']; did you mean 'rules'?`: a spelling guess
    that sends the author to the wrong key."""
    expect = "  answer:\n    route: quotes\n    must_contain: [\"120 EUR\"]\n"
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1", expect=expect)})
    out = _plan_error(state)
    assert ("datasets/c-quote1.yaml:14: c-quote1 [bad_expect_shape] expect.answer.route: `route` is an expect key, "
            "not an expect.answer key: move it out of expect.answer to expect.route;") in out["error"], out["error"]
    assert "did you mean" not in out["error"]
    [finding] = _findings(state, "c-quote1")
    assert (finding["key"], finding["line"]) == ("expect.answer.route", 14)
    assert finding["message"].startswith("expect.answer.route: `route` is an expect key")


def test_a_misplaced_key_in_a_checkpoint_or_another_block_names_its_own_home(tmp_path):
    """The same table for every expect block (a checkpoint's, expect.tools) and the
    case's top level; a plain typo keeps its spelling hint."""
    turns = ("input:\n  turns:\n    - user: How much is a flight to Oslo?\n      expect:\n        answer:\n"
             "          route: quotes\n    - user: And back?\n")
    text = case_yaml("c-quote1", expect="  route: quotes\n  tools:\n    must_contain: [quote]\n"
                     "  answer:\n    must_contian: [\"EUR\"]\n", top="notes: fine\nroute: quotes\n")
    text = text.replace("input:\n  messages:\n    - role: user\n      content: \"How much is a flight to Oslo?\"\n",
                        turns)
    state = write_state(tmp_path, {"c-quote1": text})
    found = _findings(state, "c-quote1")
    messages = {f["key"]: (f["line"], f["message"]) for f in found if f["severity"] == "ERROR"}
    assert messages["route"] == (9, "`route` is an expect key, not a case key: move it in under expect "
                                    "(expect.route); written here it is never read, so it checks nothing")
    assert messages["input.turns[0].expect.answer.route"][0] == 15 and messages["expect.tools.must_contain"][0] == 20
    assert messages["input.turns[0].expect.answer.route"][1].startswith(
        "input.turns[0].expect.answer.route: `route` is an expect key, not an expect.answer key: move it out of "
        "input.turns[0].expect.answer to input.turns[0].expect.route;")
    assert messages["expect.tools.must_contain"][1].startswith(
        "expect.tools.must_contain: `must_contain` is an expect.answer key, not an expect.tools key: move it out "
        "of expect.tools to expect.answer.must_contain;")
    assert "did you mean 'must_contain'?" in messages["expect.answer.must_contian"][1]


def test_must_not_contain_directly_under_expect_belongs_under_expect_answer(tmp_path):
    """It said `expect.must_not_contain is not an expect key (a typo asserts nothing)` with no hint."""
    expect = "  route: quotes\n  must_not_contain: [\"sorry\"]\n"
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1", expect=expect)})
    out = _plan_error(state)
    assert ("datasets/c-quote1.yaml:14: c-quote1 [unknown_expect_key] expect.must_not_contain: `must_not_contain` "
            "is an expect.answer key, not an expect key: move it in under expect.answer "
            "(expect.answer.must_not_contain);") in out["error"], out["error"]


def test_expect_indented_under_input_is_one_error_naming_the_move(tmp_path):
    """It said `input.expect is not an input key` and, for the same mistake, `the case has no expect`."""
    text = case_yaml("c-quote1", expect=None) + "  expect:\n    route: quotes\n    result: {scalar: 120}\n"
    state = write_state(tmp_path, {"c-quote1": text})
    out = _plan_error(state)
    assert [(e["code"], e["where"]) for e in out["errors"]] == [("bad_messages", "datasets/c-quote1.yaml:12")]
    assert ("input.expect: `expect` is a case key, not an input key: it is indented under input: move it out to "
            "the case's top level (`expect:` at the left margin)") in out["error"], out["error"]
    assert "no expect" not in out["error"]
    assert [f["code"] for f in _findings(state, "c-quote1")] == ["bad_messages"]


def test_a_typod_answer_placeholder_is_refused_by_convert_suite_at_its_line(tmp_path):
    """It passed convert_suite, validate_cases and make_plan, and was first stopped by run_cases'
    pre-flight: `invocation.response_body must mark the answer leaf with "<answer>"`, no file, no line,
    not what it found."""
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    write_yaml(state / "adapter.yaml", (state / "adapter.yaml").read_text().replace('"<answer>"', '"<anwser>"'))
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 2, r.stdout
    assert (r.json["file"], r.json["line"], r.json["key"]) == ("adapter.yaml", 11, "invocation.response_body")
    assert r.json["error"] == (
        "adapter.yaml:11: invocation.response_body has \"<anwser>\", an unknown placeholder (did you mean "
        "\"<answer>\"?), and no \"<answer>\", so no answer can be read (its placeholders: <answer>, <trace id>); "
        "write response_body: '{\"answer\": \"<answer>\"}'")
    assert not work.exists()
    # the answer mark inside a longer text, and no mark at all, are refused too, each saying what it found
    for body, said in (("Answer: <answer>", "has \"<answer>\" inside the text 'Answer: <answer>'"),
                       ("answer", "marks no field with \"<answer>\"")):
        write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", "quote.price").replace("<answer>", body))
        r = run_script("convert_suite", state, "-o", work / "converted.json")
        assert r.rc == 2 and r.json["error"].startswith(f"adapter.yaml:11: invocation.response_body {said}"), r.stdout


def test_the_run_pre_flight_names_the_same_problem(tmp_path):
    """A plan whose adapter was not converted from this adapter.yaml (made by hand, or by an older
    convert_suite.py) is still stopped before any case runs, now in the same words."""
    state = write_state(tmp_path, {"c-quote1": case_yaml("c-quote1")})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", "--run-id", "smoke-20261130T000000Z")
    assert r.rc == 0, r.stdout
    plan = json.loads((work / "plan.json").read_text())
    plan["adapter"]["invocation"]["response_body"] = '{"answer": "<anwser>"}'
    (work / "plan.json").write_text(json.dumps(plan))
    r = run_script("run_cases", "--plan", work / "plan.json", "--out", state / "reports" / "smoke-20261130T000000Z",
                   env={"TRAVEL_BASE_URL": "http://127.0.0.1:9"})
    assert r.rc == 3, r.stdout
    assert r.json["key"] == "invocation.response_body"
    assert r.json["error"].startswith(
        "pre-flight: the plan's adapter (adapter.yaml): invocation.response_body has \"<anwser>\", an unknown "
        "placeholder (did you mean \"<answer>\"?)"), r.json["error"]
