"""run_cases.py --order history|plan, the FAIL lines of the progress, and --fail-fast N.

Real runs against a FakeApp on its own port (max_concurrency 1, so the app sees the cases in
the order they were sent); the order, the stop and the gate are read from the app's request
log, run_cases' stderr, the run dir and gate.py's output."""

from __future__ import annotations

import json

from fakeapp import Reply, adapter, app, case, make_plan, run_runner, run_runner_mixed_split, state  # noqa: F401 (fixtures)
from helpers import run_script

import pytest

from assay.core.errors import AssayError
from assay.run.order import check_fail_fast, history_order, rank

FAILING = {"msg 2", "msg 4"}


def handler(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    msg = req.json["message"]
    return Reply(200, {"message": "nope" if msg in FAILING else f"re: {msg}"})


def cases(n=6, holdout=()):
    return [case(f"c-{i}", f"msg {i}", split=("smoke", "holdout") if f"c-{i}" in holdout else ("smoke",))
            for i in range(n)]


def go(state, app, run_id, *args, mode="smoke", cs=None, runner=run_runner):
    plan = make_plan(state, cs or cases(), app_url=app.url, run_id=run_id, mode=mode,
                     selecting_split="full" if mode == "regression" else mode,
                     adapter_doc=adapter(app.url, max_concurrency=1))
    path = state / "work" / f"{run_id}.json"
    path.write_text(json.dumps(plan))
    out = state / "reports" / run_id
    return runner("--plan", path, "--out", out, *args), out


def sent(app):
    return [r.json["message"] for r in app.posts()]


def test_rank_and_order_are_pure_and_keep_holdout_unranked():
    assert [rank(s) for s in (["pass", "fail"], ["fail", "pass"], None, ["pass", "pass"])] == [0, 1, 2, 3]
    cs = cases(5, holdout=("c-0",))
    order, counts = history_order(cs, [0, 1, 2, 3, 4], {"c-3": ["fail"], "c-1": ["fail", "pass"], "c-2": ["pass"]})
    assert order == [3, 1, 4, 2, 0]
    assert counts["failed last time"] == 1 and counts["holdout (plan order, not ranked)"] == 1


def test_fail_fast_refused_on_a_shard():
    with pytest.raises(AssayError, match="one shard"):
        check_fail_fast(1, {"mode": "smoke", "selecting_split": "smoke"}, shard=1)
    check_fail_fast(None, {"mode": "regression"}, shard=1)   # not asked: nothing to refuse


def test_history_order_sends_last_failures_first_and_reports_stay_in_plan_order(app, state):
    app.handler = handler
    first, out1 = go(state, app, "smoke-20261129T101500Z", "--progress", "always")
    assert first.rc == 0, first.stdout + first.stderr
    assert sent(app) == [f"msg {i}" for i in range(6)]        # no history: plan order
    assert json.loads((out1 / "manifest.yaml").read_text())["order"]["used"] == "plan"
    assert "assay: FAIL c-2 (answer)" in first.stderr and "assay: FAIL c-4 (answer)" in first.stderr
    app.requests.clear()
    second, out2 = go(state, app, "smoke-20261129T111500Z", "--progress", "always")
    assert second.rc == 0 and second.json["order"] == "history"
    assert sent(app)[:2] == ["msg 2", "msg 4"]                 # the two that failed last time, first
    manifest = json.loads((out2 / "manifest.yaml").read_text())
    assert manifest["order"]["used"] == "history" and manifest["order"]["runs_read"] == 1
    assert (out1 / "verdicts.jsonl").read_text() == (out2 / "verdicts.jsonl").read_text()  # plan order, by id
    assert run_runner("--verify", out2).rc == 0
    app.requests.clear()
    third, _ = go(state, app, "smoke-20261129T121500Z", "--order", "plan", "--progress", "never")
    assert third.rc == 0 and sent(app) == [f"msg {i}" for i in range(6)] and third.stderr.count("FAIL") == 0


def test_fail_fast_stops_marks_the_rest_not_run_and_the_gate_says_so(app, state):
    app.handler = handler
    r, out = go(state, app, "smoke-20261129T101500Z", "--fail-fast", "1", "--progress", "always")
    assert r.rc == 0, r.stdout + r.stderr
    # stopped at the first gating failure: at most the one case already queued behind it still ran
    got = sent(app)
    assert got[:3] == ["msg 0", "msg 1", "msg 2"] and len(got) <= 4, got
    not_run = 6 - len(got)
    results = json.loads((out / "results.json").read_text())
    assert results["summary"]["status"] == "stopped_fail_fast" and results["summary"]["passes"] == len(got) - 1
    assert results["stopped_early"] == {"fail_fast": 1, "gating_failures": 1, "not_run": not_run}
    assert run_runner("--verify", out).rc == 0
    # a not_run edited either way is named: the plan's cases never finished are recounted (mutation hunt, round 3)
    original = (out / "results.json").read_text(encoding="utf-8")
    for wrong in (not_run + 1, not_run - 1):
        doc = json.loads(original)
        doc["stopped_early"]["not_run"] = wrong
        (out / "results.json").write_text(json.dumps(doc, indent=2), encoding="utf-8")
        edited = run_runner("--verify", out)
        assert edited.rc == 6 and edited.json["missing_artifacts"] == [
            "results.json (stopped_early.not_run disagrees with the plan's cases never finished)"], edited.stdout
    (out / "results.json").write_text(original, encoding="utf-8")
    gate = run_script("gate", out)
    assert gate.rc != 0
    lines = (gate.stdout + gate.stderr).splitlines()
    assert any(line.strip() == "gate closed: the run stopped early after 1 gating failure(s) (--fail-fast 1); "
               f"{not_run} case(s) not run, never counted as passed" for line in lines), gate.stdout
    # report.md says the run stopped early, never that it is complete (the runner's exit is 0 all the same)
    drafted = run_script("draft_report", out)
    assert drafted.rc == 0, drafted.stdout + drafted.stderr
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "says nothing about pass/fail" not in report and "complete;" not in report, report
    assert "(runner exit 0: stopped early by --fail-fast 1; not a whole run)" in report, report
    done = run_runner("--plan", state / "work" / "smoke-20261129T101500Z.json", "--out", out, "--resume",
                      "--progress", "never")
    assert done.rc == 0 and "stopped_early" not in json.loads((out / "results.json").read_text())
    assert json.loads((out / "results.json").read_text())["summary"]["status"] == "ok"


def test_fail_fast_refused_outside_smoke_and_targeted_and_on_a_shard(app, state):
    app.handler = handler
    reg, _ = go(state, app, "regression-20261129T101500Z", "--fail-fast", "2", mode="regression",
                cs=[case("c-0", "msg 0", split=("full",))])
    assert reg.rc == 2 and "smoke and targeted" in reg.json["error"]
    zero, _ = go(state, app, "smoke-20261129T101500Z", "--fail-fast", "0")
    assert zero.rc == 2 and "1 or more" in zero.json["error"]
    assert app.posts() == []


def test_a_holdout_failure_is_counted_never_named(app, state, monkeypatch):
    """A run of a plan with a case split [smoke, holdout] (refused now; such runs exist)."""
    app.handler = handler
    r, out = go(state, app, "smoke-20261129T101500Z", "--progress", "always", cs=cases(holdout=("c-2",)),
                runner=lambda *a: run_runner_mixed_split(monkeypatch, *a))
    assert r.rc == 0, r.stderr
    assert "FAIL c-4" in r.stderr and "c-2" not in r.stderr and "fail 2" in r.stderr
