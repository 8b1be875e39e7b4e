"""A judge reply holds one verdict: an Anthropic reply with more than one `record_verdict` tool call is a
bad reply (re-asked once, then `unknown`), never its first call read.

Before: the reader took the first `record_verdict` block and ignored the rest, as it never did for
text (two fenced blocks are refused). A judge that answered `pass` then `fail` for a node whose answer
fails it was read as `pass`; with the rubric calibrated the case passed and the gate opened. The
Messages API may return several tool_use blocks in one reply (parallel tool use is on unless
disabled), so this is a shape a real reply can take.

End to end: run_cases.py and gate.py as subprocesses, a fake app and a fake Anthropic judge on real
loopback ports."""

from __future__ import annotations

from fakeapp import FakeApp, Reply, case, make_plan, state  # noqa: F401 (fixtures)
from judgefake import judge_block, is_probe, write_calibration, write_rubric, probe_reply
from helpers import run_script
from trust_fixtures import go, read

ANSWER = "Refund of 20 USD issued."   # no arrival time: states-arrival fails it


def two_verdicts(req):
    """The probe answered; every node call gets two record_verdict calls, pass then fail."""
    if is_probe(req):
        return probe_reply(req.json["model"], input_tokens=5)
    name = req.json["tool_choice"]["name"]
    blocks = [{"type": "tool_use", "id": f"toolu_0{i}", "name": name,
               "input": {"verdict": v, "evidence": ["Refund of 20 USD"] if v == "pass" else [], "reason": v}}
              for i, v in enumerate(("pass", "fail"))]
    return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": req.json["model"],
                       "content": blocks, "stop_reason": "tool_use", "stop_sequence": None,
                       "usage": {"input_tokens": 100, "output_tokens": 40}})


def test_two_verdicts_in_one_reply_are_never_read_as_the_first(state):
    write_rubric(state)
    with FakeApp(lambda req: Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, {"message": ANSWER})) \
            as app, FakeApp(two_verdicts) as judge:
        config = {"provider": "anthropic", "model": "claude-test", "base_url": judge.url}
        only = {"answer": {"rubric": ["refund-eta-v1"]}}
        plan = make_plan(state, [case("c-1", "When does my refund arrive?", expect=only)], app_url=app.url)
        plan["judge"] = judge_block(state, config)
        plan["paths"]["judge_calibration"] = write_calibration(state, {"refund-eta-v1": True}, config=config)
        r, out = go(state, plan)
        assert r.rc == 0, r.stdout + r.stderr
    rubric = read(out, "c-1", "judge.json")["rubrics"][0]
    assert rubric["provisional"] is False
    assert [n["verdict"] for n in rubric["nodes"]] == ["unknown", "unknown"], rubric   # before: pass, pass
    assert "2 record_verdict tool calls" in rubric["nodes"][0]["reason"], rubric["nodes"][0]
    assert read(out, "c-1")["verdict"] == "unscored"
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout                                   # before: 0, "judged (calibrated, gating): 1 pass"
    assert "2 record_verdict tool calls" in g.stdout, g.stdout
