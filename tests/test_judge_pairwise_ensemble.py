"""Pairwise rubrics judged by an ensemble: every judge of judge.yaml `judges` is asked both orders of
every node (and `repeats` times), and their outcomes combine by `aggregate`, as pointwise nodes do.
run_cases.py and gate.py as subprocesses; the judges are fake Anthropic Messages servers on real
loopback ports."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, case, state  # noqa: F401 (fixtures)
from helpers import run_script
from judgefake import probe_reply, write_rubric
from rundir_util import cases_view
from test_judge_pairwise import PAIRWISE, answers_in, app_handler, fair, is_probe, judged_run


def judge_handler(prefer, seen: list):
    def handler(req):
        body = req.json
        if is_probe(req):
            return probe_reply(body["model"], input_tokens=3)
        seen.append(body)
        a, b = answers_in(body["messages"][0]["content"])
        return Reply(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                           "content": [{"type": "tool_use", "id": "toolu_1", "name": body["tool_choice"]["name"],
                                        "input": {"preferred": prefer(a, b), "reason": "compared"}}],
                           "stop_reason": "tool_use", "stop_sequence": None,
                           "usage": {"input_tokens": 50, "output_tokens": 9}})
    return handler


def contrary(a: str, b: str) -> str:
    """Prefers the answer WITHOUT the arrival time (consistently, in both orders: a stable, wrong judge)."""
    got = fair(a, b)
    return {"A": "B", "B": "A"}.get(got, got)


@pytest.fixture
def judges():
    with FakeApp() as app, FakeApp() as j1, FakeApp() as j2, FakeApp() as j3:
        yield app, (j1, j2, j3)


def run(state, app, cfg, run_id, *args, calibrated=False):
    return judged_run(state, app.url, cfg, [case("c-1", "ask", expect={"answer": {"rubric": ["eta-vs-baseline-v1"]}})],
                      run_id, *args, calibrated=calibrated)


def test_a_pairwise_loss_the_majority_of_the_ensemble_sees_closes_the_gate(state, judges):
    app, (j1, j2, j3) = judges
    app.handler = app_handler
    write_rubric(state, PAIRWISE, "eta-vs-baseline.md")
    seen: list = []
    j1.handler = judge_handler(contrary, seen)          # judge 1 wrongly prefers the worse answer
    j2.handler = judge_handler(fair, seen)
    j3.handler = judge_handler(fair, seen)
    cfg = {"judges": [{"provider": "anthropic", "model": f"claude-j{i}", "base_url": s.url, "api_key": "sk-pw-ens"}
                      for i, s in enumerate((j1, j2, j3), 1)], "aggregate": "majority"}
    app_handler.mode = "full"
    r, base = run(state, app, cfg, "smoke-20261202T100000Z")
    assert r.rc == 0, r.stdout + r.stderr
    app_handler.mode = "no-eta"                          # the candidate lost the arrival time
    r, worse = run(state, app, cfg, "smoke-20261202T100100Z", "--baseline", base, calibrated=True)
    assert r.rc == 0, r.stdout + r.stderr
    models = sorted(b["model"] for b in seen)
    assert models == ["claude-j1"] * 2 + ["claude-j2"] * 2 + ["claude-j3"] * 2   # every judge, both orders
    rub = json.loads((cases_view(worse) / "c-1" / "judge.json").read_text())["rubrics"][0]
    assert rub["outcome"] == "loss" and rub["verdict"] == "fail", rub
    assert "majority of 3 judges" in rub["nodes"][0]["reason"]
    verdict = json.loads((cases_view(worse) / "c-1" / "verdict.json").read_text())
    assert verdict["verdict"] == "fail" and verdict["layers"]["judged"]["verdict"] == "fail"
    g = run_script("gate", worse)
    assert g.rc == 1 and "c-1" in g.stdout, g.stdout + g.stderr


def _ask(judge, n, outcome, reason="r"):
    return {"judge": judge, "ask": n, "verdict": outcome, "orders": {"baseline_first": {"reason": reason}},
            "evidence": [], "reason": f"{outcome} in both orders: {reason}", "infra": False, "calls": [{"judge": judge}]}


def test_pairwise_node_folds_like_a_pointwise_node():
    from assay.core.vocab import JUDGE_UNSTABLE
    from assay.judge.fold import fold_pair_node
    node = {"id": "n", "criterion": "c"}
    two_asks = fold_pair_node(node, [_ask(1, 1, "win"), _ask(1, 2, "loss")], "single", 1)
    assert two_asks["verdict"] == JUDGE_UNSTABLE and "answered" in two_asks["reason"]   # repeats that differ
    unanimous = fold_pair_node(node, [_ask(1, 1, "win"), _ask(2, 1, "loss"), _ask(3, 1, "win")], "unanimous", 3)
    assert unanimous["verdict"] == "unknown" and unanimous["outcome"] == "unknown"      # never pass
    majority = fold_pair_node(node, [_ask(1, 1, "win"), _ask(2, 1, "loss"), _ask(3, 1, "loss")], "majority", 3)
    assert majority["outcome"] == "loss" and majority["verdict"] == "fail" and len(majority["calls"]) == 3
