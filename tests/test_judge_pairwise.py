"""Pairwise rubrics (issue 30 item 4): the candidate's answer against the baseline run's, judged in both
orders by a fake Anthropic Messages server on a real loopback port; run_cases.py as a subprocess. A
judge biased to the first position flips with the order and is caught (judge_unstable, never pass); a
case the baseline has no answer for is unscored with the reason; a calibrated pairwise loss gates."""

from __future__ import annotations

import json
import re

from fakeapp import Reply, app, case, make_plan, run_runner, state  # noqa: F401 (fixtures)
from judgefake import is_probe, judge_block, write_calibration, write_rubric, probe_reply
from test_judge_run import judge_server as judge  # noqa: F401 (fixture)

from assay.core.vocab import JUDGE_UNSTABLE
from assay.judge.pairwise import candidate_outcome, fold_rubric
from assay.judge.verdict import agree
from rundir_util import cases_view, edit_case

PAIRWISE = """---
rubric_id: eta-vs-baseline
version: 1
kind: pairwise
nodes:
  - id: clearer-eta
    criterion: Which reply tells the customer more clearly when the refund arrives?
---
# eta-vs-baseline
For people.
"""
ANSWERS = {"full": "Refund of 20 USD issued; it arrives within 5 business days.",
           "no-eta": "Refund of 20 USD issued."}
CONFIG = {"provider": "anthropic", "model": "claude-x", "base_url": None, "api_key": "sk-pairwise-1"}


def app_handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": ANSWERS[app_handler.mode if req.json["message"] == "ask" else "no-eta"]})


def answers_in(prompt: str) -> tuple[str, str]:
    a = re.search(r"<untrusted-answer-A-[0-9a-f]+>\n(.*?)\n</untrusted-answer-A-", prompt, re.S).group(1)
    b = re.search(r"<untrusted-answer-B-[0-9a-f]+>\n(.*?)\n</untrusted-answer-B-", prompt, re.S).group(1)
    return a, b


def fair(a: str, b: str) -> str:
    ka, kb = "business days" in a, "business days" in b
    return "tie" if ka == kb else ("A" if ka else "B")


def judge_handler(prefer, seen: list):
    """Anthropic Messages: the forced tool's input is {preferred, reason}."""
    def handler(req):
        if is_probe(req):
            return probe_reply("claude-x", input_tokens=3)
        body = req.json
        seen.append(body)
        a, b = answers_in(body["messages"][0]["content"])
        tool = body["tool_choice"]["name"]
        return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                           "content": [{"type": "tool_use", "id": "toolu_1", "name": tool,
                                        "input": {"preferred": prefer(a, b), "reason": "compared"}}],
                           "stop_reason": "tool_use", "stop_sequence": None,
                           "usage": {"input_tokens": 50, "output_tokens": 9}})
    return handler


def judged_run(state, app_url, cfg, cases, run_id, *args, calibrated=False):
    """run_cases.py on a plan of `cases` judged by `cfg` (calibrated: a sidecar that says so): (result, run dir)."""
    plan = make_plan(state, cases, app_url=app_url, run_id=run_id)
    if calibrated:
        plan["paths"]["judge_calibration"] = write_calibration(state, {"eta-vs-baseline-v1": True}, config=cfg)
    plan["judge"] = judge_block(state, cfg)
    path = state / "work" / f"{run_id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / run_id
    return run_runner("--plan", path, "--out", out, "--progress", "never", *args), out


def run(state, app, judge, run_id, *args, calibrated=False):
    write_rubric(state, PAIRWISE, "eta-vs-baseline.md")
    cfg = dict(CONFIG, base_url=judge.url)
    r, out = judged_run(state, app.url, cfg, [case("c-1", "ask", expect={"answer": {"rubric": ["eta-vs-baseline-v1"]}}),
                                              case("c-2", "other", expect={"answer": {"rubric": ["eta-vs-baseline-v1"]}})],
                        run_id, *args, calibrated=calibrated)
    assert r.rc == 0, r.stdout + r.stderr
    return out


def doc(out, cid):
    return json.loads((cases_view(out) / cid / "judge.json").read_text())["rubrics"][0]


def test_outcomes_fold_and_agree():
    assert candidate_outcome("B", "B") == "win" and candidate_outcome("A", "B") == "loss"
    assert candidate_outcome("tie", "A") == "tie"
    assert agree(["win", "win"]) == "win" and agree(["loss", "win"]) == JUDGE_UNSTABLE
    assert fold_rubric([{"outcome": "win"}, {"outcome": "tie"}])["verdict"] == "pass"
    assert fold_rubric([{"outcome": "win"}, {"outcome": "loss"}])["outcome"] == "loss"
    unstable = fold_rubric([{"node_id": "n", "outcome": JUDGE_UNSTABLE, "reason": "flips"}, {"outcome": "win"}])
    assert unstable["verdict"] == JUDGE_UNSTABLE and "flips" in unstable["reason"]


def test_pairwise_in_both_orders_a_first_position_bias_is_caught(app, state, judge):
    app.handler = app_handler
    seen: list = []
    app_handler.mode = "no-eta"
    judge.handler = judge_handler(fair, seen)
    base = run(state, app, judge, "smoke-20261201T100000Z")
    # the baseline itself has no baseline: pairwise pins unscored with the reason, never pass
    b1 = doc(base, "c-1")
    assert b1["verdict"] == "unscored" and "no baseline run" in b1["reason"] and b1["nodes"] == []
    assert seen == []
    app_handler.mode = "full"
    fair_run = run(state, app, judge, "smoke-20261201T100100Z", "--baseline", base)
    c1 = doc(fair_run, "c-1")
    assert c1["outcome"] == "win" and c1["verdict"] == "pass" and c1["baseline_run_id"] == base.name
    node = c1["nodes"][0]
    assert [c["order"] for c in node["calls"]] == ["baseline_first", "candidate_first"]
    assert node["orders"]["baseline_first"]["preferred"] == "B" and node["orders"]["candidate_first"]["preferred"] == "A"
    assert doc(fair_run, "c-2")["outcome"] == "tie"         # same answer both runs
    # the forced reply is the pairwise schema, not the node verdict's
    assert seen[0]["tool_choice"]["name"] == "record_preference"
    assert seen[0]["tools"][0]["input_schema"]["required"] == ["preferred", "reason"]
    results = json.loads((fair_run / "results.json").read_text())
    pw = results["summary"]["judged"]["pairwise"]["eta-vs-baseline-v1"]
    assert (pw["win"], pw["tie"], pw["loss"], pw[JUDGE_UNSTABLE]) == (1, 1, 0, 0)
    assert pw["baseline_run_ids"] == [base.name] and pw["paired"]["sign_test_p"] == 0.5

    # a judge that always prefers the first answer: loss one way, win the other -> judge_unstable
    judge.handler = judge_handler(lambda a, b: "A", seen)
    biased = run(state, app, judge, "smoke-20261201T100200Z", "--baseline", base, calibrated=True)
    for cid in ("c-1", "c-2"):
        got = doc(biased, cid)
        assert got["verdict"] == JUDGE_UNSTABLE and "flips with the order" in got["reason"]
        assert len(got["nodes"][0]["calls"]) == 2                    # both calls kept
        verdict = json.loads((cases_view(biased) / cid / "verdict.json").read_text())
        assert verdict["verdict"] != "pass" and verdict["layers"]["judged"]["verdict"] == "unscored"
        assert "judge_unstable: the verdict flips with the order" in verdict["layers"]["judged"]["reason"]
    pw = json.loads((biased / "results.json").read_text())["summary"]["judged"]["pairwise"]["eta-vs-baseline-v1"]
    assert pw[JUDGE_UNSTABLE] == 2 and pw["win"] == pw["loss"] == 0


def test_a_calibrated_pairwise_loss_gates_and_a_missing_baseline_answer_is_unscored(app, state, judge):
    app.handler = app_handler
    seen: list = []
    app_handler.mode = "full"
    judge.handler = judge_handler(fair, seen)
    base = run(state, app, judge, "smoke-20261201T110000Z")
    edit_case(base, "c-2", "answer.txt", None)                       # the baseline has no answer for c-2
    app_handler.mode = "no-eta"
    worse = run(state, app, judge, "smoke-20261201T110100Z", "--baseline", base, calibrated=True)
    c1 = doc(worse, "c-1")
    assert c1["outcome"] == "loss" and c1["provisional"] is False
    c2 = doc(worse, "c-2")
    assert c2["verdict"] == "unscored" and "has no answer for c-2" in c2["reason"]
    v1 = json.loads((cases_view(worse) / "c-1" / "verdict.json").read_text())
    assert v1["verdict"] == "fail" and v1["layers"]["judged"]["verdict"] == "fail"
    from helpers import run_script
    g = run_script("gate", worse)
    assert g.rc == 1 and "c-1" in g.stdout
    assert "pairwise eta-vs-baseline-v1 vs " + base.name + ": 0 win, 0 tie, 1 loss" in g.stdout
    plan = json.loads((state / "work" / "smoke-20261201T110100Z.json").read_text())
    (state / "work" / "p3.json").write_text(json.dumps(dict(plan, run_id="smoke-20261201T110200Z")))
    bad = run_runner("--plan", state / "work" / "p3.json", "--out", state / "reports" / "smoke-20261201T110200Z",
                     "--baseline", state / "nope")
    assert bad.rc == 2 and "--baseline" in bad.json["error"]
