"""A 2xx with no answer at the adapter's <answer> path, for a case that asks nothing of the answer (a
newcomer's trial): the app failed the user (`{"error": "upstream model timeout", "route": "quotes"}`
sent as 200), the case asserted only its route, and the gate said PASS without a word. Such a case is
decided on its other layers (it asked nothing of the answer), but it is never silent: the http layer
records `answer_absent`, the run counts it (summary.answer_absent, recounted by --verify) and the gate
says it on an info line naming the first case and where to look. The scripts run as subprocesses
against a real app on a real port.
"""

from __future__ import annotations

import json

from fakeapp import FakeApp, Reply
from helpers import run_script
from test_no_silent_green import case_yaml, plan, run, write_state


def desk(req) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    if "Bergen" in ((req.json or {}).get("message") or ""):
        return Reply(200, {"error": "upstream model timeout", "route": "quotes"})   # an error sent as 200
    return Reply(200, {"answer": "A flight to Oslo costs 120 EUR.", "route": "quotes", "quote": {"price": 120}})


def test_a_2xx_without_the_answer_is_said_never_silent(tmp_path):
    cases = {"c-00000001": case_yaml("c-00000001", expect="  route: quotes\n  result: {scalar: 120}\n"),
             "c-00000002": case_yaml("c-00000002", expect="  route: quotes\n", content="A flight to Bergen?"),
             "c-00000003": case_yaml("c-00000003", expect="  route: quotes\n  answer: {must_contain: [120 EUR]}\n")}
    state = write_state(tmp_path, cases)
    rc, summary, plan_file = plan(state)
    assert rc == 0, summary
    with FakeApp(desk) as app:
        out = run(state, plan_file, app)
    rows = {json.loads(x)["case_id"]: json.loads(x) for x in (out / "cases.jsonl").read_text().splitlines()}
    http = rows["c-00000002"]["verdict"]["layers"]["http"]
    assert http["verdict"] == "pass" and "path absent in the response" in http["answer_absent"], http
    assert "answer_absent" not in rows["c-00000001"]["verdict"]["layers"]["http"]
    doc = json.loads((out / "results.json").read_text())
    assert doc["summary"]["answer_absent"] == {"cases": 1, "first_case": "c-00000002"}
    assert run_script("run_cases", "--verify", out).rc == 0
    g = run_script("gate", out)
    assert g.rc == 0, g.stdout   # the case asked only for its route, and the route was right
    line = next(x for x in g.stdout.splitlines() if x.startswith("  answer: "))
    assert "1 gating case(s) got a 2xx with no answer at the adapter's <answer> path (first: c-00000002)" in line
    assert "response_body" in line
