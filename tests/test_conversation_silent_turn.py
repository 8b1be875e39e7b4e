"""A conversation whose middle turn gets no answer (an empty reply, an error sent as 200) stops
there, unscored, never a pass: run_cases.py and gate.py as subprocesses against a real app on a
loopback port, plus the pure rule (`assay.invoke.conversation.unanswered`)."""

from __future__ import annotations

import sys

import pytest

from assay.invoke.conversation import unanswered
from fakeapp import FakeApp, Reply, state  # noqa: F401 (fixture)
from helpers import run_script
from rundir_util import cases_view
from test_run_conversation import convo, rd, run


def silent_on(turn_text: str, reply: Reply):
    def handle(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        text = str((req.json or {}).get("message") or "")
        return reply if text == turn_text else Reply(200, {"message": f"ok: {text}"})
    return handle


@pytest.mark.parametrize("reply, why", [
    (Reply(200, {"message": "  "}), "turn 2: an empty answer at the adapter's <answer> path; turn 3 not sent"),
    (Reply(200, {"error": "upstream model timeout"}),
     "turn 2: no answer at the adapter's <answer> path (path absent in the response); turn 3 not sent"),
], ids=["empty", "error-as-200"])
def test_a_middle_turn_without_an_answer_stops_the_conversation_unscored(state, reply, why):
    case = convo("c-three", "hello", "second", "third", expect={"answer": {"must_contain": ["ok"]}})
    with FakeApp(silent_on("second", reply)) as app:
        r, out = run(state, app.url, [case], conversation={"style": "client-id"})
        sent = [p.json["message"] for p in app.posts()]
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-three" / "verdict.json")
    assert (v["verdict"], v["turns_sent"], v["failed_turn"], v["stop_reason"]) == ("unscored", 2, None, why), v
    assert v["unscored_reason"] == why
    assert sent == ["hello", "second"]
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout
    assert run_script("run_cases", "--verify", out).rc == 0


def scored(text, http):
    return {"answer_text": text, "layers": {"http": http}}


def test_unanswered_asks_an_answer_only_of_a_turn_that_got_through():
    ok = {"verdict": "pass", "expected_status": None, "status": 200}
    assert unanswered(scored("INV-2 is open", ok)) is None
    assert unanswered(scored("", ok)) == "an empty answer at the adapter's <answer> path"
    assert unanswered(scored(None, dict(ok, answer_absent="no answer here (x)"))) == "no answer here (x)"
    assert unanswered(scored(None, dict(ok, expected_status=204, status=204))) is None   # asked for no body
    assert unanswered(scored(None, dict(ok, verdict="fail"))) is None                   # its own stop rule


# a simulated user that asks "second" once the app has answered "hello", then says its goal is reached
SIM_SECOND_THEN_STOP = r'''
import json, sys
text = sys.stdin.read()
print(json.dumps({"message": "###STOP###" if "second" in text else "second" if "hello" in text else "hello"}))
'''


def test_a_simulated_turn_without_an_answer_stops_the_conversation_unscored(state, tmp_path):
    """A simulated user's turn that got through with no answer went on: the simulator was asked about an
    answer the app never gave, said its goal was reached, and a green end state passed the case. It
    stops there, unscored, as a scripted conversation's middle turn does."""
    from fakeapp import adapter, make_plan
    from test_run_conversation import run_plan
    sim = tmp_path / "sim.py"
    sim.write_text(SIM_SECOND_THEN_STOP, encoding="utf-8")
    case = {"id": "c-sim", "split": ["smoke"], "category": "multistep", "test_type": "MFT", "template_id": None,
            "input": {"simulated_user": {"persona": "A customer.", "goal": "get an answer twice",
                                         "stop_when": "the assistant answered twice", "max_turns": 3}},
            "expect": {"answer": {"must_not_contain": ["error"]}}}
    with FakeApp(silent_on("second", Reply(200, {"message": ""}))) as app:
        plan = make_plan(state, [case], app_url=app.url,
                         adapter_doc=adapter(app.url, conversation={"style": "client-id"}),
                         simulator={"enabled": True, "config": {"provider": "command",
                                                                "command": [sys.executable, str(sim)],
                                                                "timeout_s": 60}})
        r, out = run_plan(state, plan)
        sent = [p.json["message"] for p in app.posts()]
    assert r.rc == 0, r.stdout + r.stderr
    v = rd(cases_view(out) / "c-sim" / "verdict.json")
    why = "turn 2: an empty answer at the adapter's <answer> path; the simulated user was not asked to go on"
    assert (v["verdict"], v["turns_sent"], v["stop_reason"]) == ("unscored", 2, why), v
    assert sent == ["hello", "second"]
    assert run_script("gate", out).rc == 1
    assert run_script("run_cases", "--verify", out).rc == 0
