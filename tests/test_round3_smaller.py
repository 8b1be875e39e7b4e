"""Issue 24 D8, the smaller misleading messages: each pinned as a user meets it."""

from __future__ import annotations

import json

from helpers import run_script
from rundir_util import make_run

from assay.rundir.routing_files import routing_report_doc
from rundir_util import cases_view


def _route(expected, observed, verdict):
    return {"verdict": verdict, "expected": expected, "observed": observed, "observed_from": "trace"}


def test_the_routing_report_says_it_leaves_conversations_out(tmp_path):
    records = [{"case_id": "c-1", "verdict": "pass", "layers": {"routing": _route("billing", "billing", "pass")}},
               {"case_id": "c-conv", "verdict": "fail", "multi_turn": True,
                "layers": {"routing": _route("billing", "tech", "fail")}}]
    doc = routing_report_doc(records, None)
    assert doc["n"] == 1 and doc["conversations_left_out"] == 1
    assert "1 conversation(s) left out" in doc["conversations_note"]
    run = make_run(tmp_path / "reports", [{"id": "c-1"}, {"id": "c-conv", "verdict": "fail"}],
                   extra_files={"routing_report.json": doc})
    for cid, layer, extra in (("c-1", _route("billing", "billing", "pass"), {}),
                              ("c-conv", _route("billing", "tech", "fail"), {"multi_turn": True})):
        path = cases_view(run) / cid / "verdict.json"
        v = json.loads(path.read_text())
        v["layers"]["routing"] = layer
        v.update(extra)
        path.write_text(json.dumps(v))
    r = run_script("draft_report", run, "-o", tmp_path / "r.md")
    assert r.rc == 0, r.stdout + r.stderr
    routing = (tmp_path / "r.md").read_text().split("## Routing", 1)[1].split("\n## ", 1)[0]
    assert "1 conversation(s) left out" in routing, routing


def test_prices_unknown_key_names_the_line_and_the_closest_key(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: USD\nper_tokens: 1000\nmodels:\n  m: {input: 1, output: 2}\n")
    run = make_run(tmp_path / "reports", [{"id": "c-1"}])
    r = run_script("score_cost", run, "--prices", prices)
    assert r.rc == 2, r.stdout
    err = r.json["error"]
    assert f"{prices}:2: unknown key 'per_tokens'; did you mean 'per'?" in err, err
    assert "per defaults to 1000000" in err


def test_repeated_5xx_fires_when_the_body_differs_only_by_a_request_id(tmp_path):
    import uuid
    from itertools import count

    from fakeapp import FakeApp, Reply, case, make_plan, make_state, run_runner, write_plan
    tick = count()

    def broken(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        n = next(tick)
        return Reply(500, {"error": "database is down", "request_id": str(uuid.uuid4()),
                           "trace": f"{n:032x}", "at": f"2026-12-01T10:00:0{n % 10}.123Z"})

    def flaky(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        return Reply(500, {"error": f"attempt {next(tick)} failed differently"})

    for handler, fires in ((broken, True), (flaky, False)):
        state = make_state(tmp_path / handler.__name__)
        with FakeApp(handler) as app:
            plan = make_plan(state, [case("c-00000001", "hello")], app_url=app.url,
                             execution={"max_attempts": 3, "backoff_s": [0, 0]})
            out = state / "reports" / plan["run_id"]
            run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
        v = json.loads((cases_view(out) / "c-00000001" / "verdict.json").read_text())
        assert v["verdict"] == "infra_error"
        if fires:
            assert v["repeated_5xx"] == {"status": 500, "attempts": 3}, v["repeated_5xx"]
        else:
            assert v["repeated_5xx"] is None  # the message itself changed: not "the same body"
