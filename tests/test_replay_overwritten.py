"""--replay RUN_DIR answers with THAT run's recordings, never with whatever recorded the same request
last (the replay trial). The cache is keyed by request and shared by every run of a state dir, so
a later --record (another build of the app) wrote over run A's answers: `--replay <run A>`, and a
`--changed-since <run A>` plan, then scored run B's answers under a gate line "REPLAYED from run A"
and opened although run A's own answers fail. Now such an entry is a replay miss naming the run
that recorded it, and the gate closes on the cases not measured."""

from __future__ import annotations

import json

import pytest

import fixtures_authoring as fa
from fakeapp import FakeApp, Reply, run_runner
from helpers import run_script
from rundir_util import cases_view
from test_replay import guarded

pytestmark = pytest.mark.slow

CASES = {cid: fa.CASES[cid] for cid in ("c-00000001", "c-00000002", "c-00000004")}


class Desk:
    """The helpdesk answer; `broken` is the build that answers nothing useful."""

    def __init__(self):
        self.broken = True

    def __call__(self, req):
        if req.method != "POST":
            return Reply(200, {"ok": True})
        if self.broken:
            return Reply(200, {"message": "sorry, no idea", "domain": "invoices"})
        shifts = "works" in req.json["message"]
        return Reply(200, {"message": "alex works, 120.00", "domain": "shifts" if shifts else "invoices"})


def plan_and_run(state, run_id, *runner, plan_flags=(), env, rc=0):
    conv = state / "work" / "converted.json"
    path = state / "work" / f"{run_id}.json"
    made = run_script("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--run-id", run_id, "-o", path,
                      *plan_flags)
    assert made.rc == 0, made.stdout + made.stderr
    out = state / "reports" / run_id
    ran = run_runner("--plan", path, "--out", out, "--progress", "never", *runner, env=env)
    assert ran.rc == rc, ran.stdout + ran.stderr
    return ran if rc else out


def verdicts(out) -> dict[str, dict]:
    return {d.name: json.loads((d / "verdict.json").read_text()) for d in cases_view(out).iterdir()}


def test_a_replay_of_run_a_never_scores_the_answers_a_later_recording_wrote_over_it(tmp_path):
    state = fa.make_state(tmp_path / "app", cases=CASES, dataset=None)
    fa.convert(state)
    desk = Desk()
    guard, log = guarded(tmp_path)
    with FakeApp(desk) as app:   # a replay still needs the app's variables set (it never connects)
        live = {"HELPDESK_TOKEN": "tok-replay-trial-0001", "HELPDESK_BASE_URL": app.url}
        run_a = plan_and_run(state, "smoke-20261129T101500Z", "--record", env=live)   # the broken build
        desk.broken = False
        run_b = plan_and_run(state, "smoke-20261129T111500Z", "--record", env=live)   # a later, fixed build
        assert run_script("gate", run_a).rc == 1 and run_script("gate", run_b).rc == 0

        # replaying run A (the suite unchanged): a live run of run A's app closes, so must this
        rep = plan_and_run(state, "smoke-20261129T121500Z", "--replay", str(run_a), env=dict(guard, **live))
        assert log.read_text() == ""
        gate = run_script("gate", rep)
        assert gate.rc == 1, gate.stdout
        assert gate.stdout.startswith("smoke-20261129T121500Z: FAIL [REPLAYED from run smoke-20261129T101500Z")
        assert "gating case(s) were not measured" in gate.stdout
        rows = verdicts(rep)
        assert {c: r["verdict"] for c, r in rows.items()} == dict.fromkeys(CASES, "infra_error")
        reason = rows["c-00000001"]["infra_reason"]
        assert reason.startswith("replay miss: case c-00000001: request 1: the cache's answer was recorded by run "
                                 "smoke-20261129T111500Z "), reason
        assert "not by run smoke-20261129T101500Z" in reason
        # a replayed run is no SOURCE: the error names what it replayed
        again = plan_and_run(state, "smoke-20261129T121700Z", "--replay", str(rep), env=dict(guard, **live), rc=2)
        assert (f"was itself a replay of run smoke-20261129T101500Z ({run_a}), not a recording"
                                  in again.stdout), again.stdout
        # run B's own recordings replay as before
        again = plan_and_run(state, "smoke-20261129T121600Z", "--replay", str(run_b), env=dict(guard, **live))
        gate = run_script("gate", again)
        assert gate.rc == 0 and "REPLAYED from run smoke-20261129T111500Z" in gate.stdout.splitlines()[0], gate.stdout

        # the pull-request recipe against run A: one expectation edited (sent live), the rest from A
        sent = len(app.posts())
        path = state / "datasets" / "c-00000004.yaml"
        path.write_text(path.read_text().replace("alex|sam", "alex|sam|kim"))
        fa.convert(state)
        pr = plan_and_run(state, "smoke-20261129T131500Z", "--replay", plan_flags=("--changed-since", run_a),
                          env=live)
        assert [p.json["message"] for p in app.posts()[sent:]] == ["Who works Friday night?"]
        rows = verdicts(pr)
        assert {c: r["verdict"] for c, r in rows.items()} == {"c-00000001": "infra_error",
                                                             "c-00000002": "infra_error", "c-00000004": "pass"}
        assert "recorded by run smoke-20261129T111500Z" in rows["c-00000002"]["infra_reason"]
        assert run_script("gate", pr).rc == 1

        # that live case was recorded by the pull request's run: a replay of run B no longer takes it
        # for B's answer; the cache (the latest recording of each request) still replays whole
        b_now = plan_and_run(state, "smoke-20261129T141500Z", "--replay", str(run_b), env=dict(guard, **live))
        assert verdicts(b_now)["c-00000004"]["infra_reason"].startswith(
            "replay miss: case c-00000004: request 1: the cache's answer was recorded by run smoke-20261129T131500Z")
        cached = plan_and_run(state, "smoke-20261129T151500Z", "--replay", str(state / "cache"),
                              env=dict(guard, **live))
        gate = run_script("gate", cached)
        assert gate.rc == 0 and "REPLAYED from the cache" in gate.stdout.splitlines()[0], gate.stdout
    assert log.read_text() == ""
