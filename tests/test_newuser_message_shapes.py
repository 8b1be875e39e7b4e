"""A new user writes a case in the chat-API shape they know (a system message before the user's, or
a whole exchange in input.messages): the linter only warns, the runner skips the case ("unsupported
input"), and the gate opened over a gating case that never ran. It closes now, naming the case and the
fix. The travel state dir is test_no_silent_green's; the runner and the gate run as subprocesses
against an app on a real port."""

from __future__ import annotations

import json

from fakeapp import FakeApp
from helpers import run_script
from test_no_silent_green import case_yaml, plan, run, travel_reply, write_state

SYSTEM_FIRST = ("input:\n  messages:\n    - role: system\n      content: You are a travel agent.\n"
                "    - role: user\n      content: How much is a flight to Oslo?\n")
A_WHOLE_EXCHANGE = ("input:\n  messages:\n    - role: user\n      content: I want to fly to Oslo.\n"
                    "    - role: assistant\n      content: When?\n"
                    "    - role: user\n      content: How much is a flight there on Monday?\n")


def _with_input(cid: str, text: str, top: str = "") -> str:
    base = case_yaml(cid, top=top)
    head, _, tail = base.partition("input:\n")
    return head + text + tail[tail.index("expect:"):]


def test_a_gating_case_the_runner_cannot_send_closes_the_gate(tmp_path):
    state = write_state(tmp_path, {"c-quote001": case_yaml("c-quote001"),
                                   "c-system01": _with_input("c-system01", SYSTEM_FIRST),
                                   "c-chat0001": _with_input("c-chat0001", A_WHOLE_EXCHANGE),
                                   "c-ungated1": _with_input("c-ungated1", SYSTEM_FIRST, top="gating: false\n")})
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary                       # WARNs only: planned
    # each WARN is in the JSON as a located line, not only counted (a reader of stdout alone saw "warnings": 2)
    assert any("c-system01" in w and "[" in w for w in summary["warnings"]), summary["warnings"]
    with FakeApp(travel_reply) as app:
        run_dir = run(state, plan_file, app)
        sent = [r.json["message"] for r in app.posts()]
    assert sent == ["How much is a flight to Oslo?"]   # only the well-formed case reached the app
    g = run_script("gate", run_dir, "--json")
    assert g.rc == 1, g.stdout
    reasons = json.loads(g.stdout)["reasons"]
    closing = [r for r in reasons if "were not sent because" in r]
    assert len(closing) == 1, reasons
    line = closing[0]
    assert line.startswith("2 gating case(s) were not sent because the case's input is not one the runner can "
                           "send (skipped, not a pass; "), line
    assert "c-system01 (unsupported input: input.messages must hold exactly one user message)" in line
    assert "c-chat0001 (unsupported input: input.messages must hold exactly one user message)" in line
    assert "c-ungated1" not in line               # gating: false leaves the gate alone
    assert "input.turns" in line                  # the fix for a conversation written as messages


CHAT_TURNS = ("input:\n  turns:\n    - role: user\n      content: I want to fly to Oslo.\n"
              "    - usr: How much is it on Monday?\n")


def test_a_turn_written_as_a_chat_message_or_misspelt_says_what_to_write(tmp_path):
    """`turns` written as chat messages ({role, content}) or with `usr:`: the error said only that the turn
    "must be a mapping with a non-empty `user` string", which a {role: user, content} mapping seems to be."""
    state = write_state(tmp_path, {"c-conv0001": _with_input("c-conv0001", CHAT_TURNS)})
    work = state / "work"
    assert run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work).rc == 0
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json")
    assert r.rc == 2, r.stdout
    error = r.json["error"]
    assert ("datasets/c-conv0001.yaml:10: c-conv0001 [bad_turn] input.turns[0] must be a mapping with a non-empty "
            "`user` string (got a chat message {") in error, error
    assert "write `- user: ...` with its content" in error
    assert ("datasets/c-conv0001.yaml:12: c-conv0001 [bad_turn] input.turns[1] must be a mapping with a non-empty "
            "`user` string (got usr; did you mean 'user'?)") in error, error
