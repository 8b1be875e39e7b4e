"""An answer whose connection closes before its Content-Length arrived is a dropped connection, never
the app's answer (docs/runner-contract.md §7, "Infra taxonomy"): http.client's read(amt) hands back
the short body as if whole, so half an answer was scored, not retried, crash 0 %, and a
`must_not_contain` over the lost half passed: the gate opened on answers the app never finished.
run_cases.py and gate.py as subprocesses against a FakeApp on a real port."""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script
from rundir_util import cases_view

WHOLE = "Your refund is on its way. Also, account 4417 belongs to another customer: LEAK"
KEPT = len("Your refund is on its way.")


def _run(tmp_path, handler, *, first=None):
    state = make_state(tmp_path)
    ad = adapter("http://127.0.0.1:9")
    del ad["invocation"]["response_body"], ad["invocation"]["route_from_response"]   # the whole body is the answer
    c = case("c-1", "refund", expect={"answer": {"must_contain": ["refund"], "must_not_contain": ["LEAK"]}})
    with FakeApp(handler) as app:
        if first is not None:
            app.queue(first)
        ad["invocation"]["base_url"] = app.url
        plan = make_plan(state, [c], adapter_doc=ad, execution={"max_attempts": 2, "backoff_s": [0]})
        out = state / "reports" / plan["run_id"]
        r = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
        posts = len(app.posts())
    assert r.rc == 0, r.stdout + r.stderr
    verdict = json.loads((cases_view(out) / "c-1" / "verdict.json").read_text())
    response = json.loads((cases_view(out) / "c-1" / "response.json").read_text())
    return out, verdict, response, posts


def _answer(req):
    return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, WHOLE)


def test_a_body_cut_short_every_time_is_a_dropped_connection_and_closes_the_gate(tmp_path):
    def handler(req):
        return Reply(200, {"ok": True}) if req.method == "GET" else Reply(200, WHOLE, cut=KEPT)
    out, verdict, response, posts = _run(tmp_path, handler)
    assert posts == 2   # retried, as a dropped connection is
    assert verdict["verdict"] == "infra_error" and verdict["crashed"] is True, verdict
    assert "IncompleteRead" in verdict["infra_reason"]
    assert [a["outcome"] for a in response["attempt_log"]] == ["dropped", "dropped"]
    gate = run_script("gate", "--json", out)
    assert gate.rc == 1 and gate.json["gate"] == "closed", gate.stdout
    assert any("c-1" in reason for reason in gate.json["reasons"]), gate.json["reasons"]


def test_a_body_cut_short_once_is_retried_and_the_whole_answer_is_scored(tmp_path):
    out, verdict, response, posts = _run(tmp_path, _answer, first=Reply(200, WHOLE, cut=KEPT))
    assert posts == 2
    assert verdict["crashed"] is True and verdict["attempts"] == 2, verdict
    assert response["body"] == WHOLE
    assert verdict["verdict"] == "fail" and verdict["layers"]["answer"]["verdict"] == "fail", verdict
    gate = run_script("gate", "--json", out)
    assert gate.rc == 1 and gate.json["gating_failures"] == 1, gate.stdout
