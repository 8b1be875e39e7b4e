"""`gate.py <reports> --latest` after a sharded run whose shards were never merged (the merge was
forgotten, or refused and the CI script went on): the newest run of the mode is only its shard
dirs, and --latest must refuse naming it, never open on the previous green run in its place.
Driven as subprocesses against a real loopback app (runner-contract §10.4a, §19)."""

from __future__ import annotations

import json

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

from assay.shard.assign import add_shards

pytestmark = pytest.mark.slow

GREEN_ID = "regression-20261205T140000Z"
SHARDED_ID = "regression-20261205T150000Z"


def echo_app():
    """An app of its own (own port, own switch): echoes the message; once `app.broken` is set it
    answers 'other' to msg 2 (the planted failure)."""
    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"]
        return Reply(200, {"message": "other" if app.broken and msg == "msg 2" else f"re: {msg}"})
    app = FakeApp(handler)
    app.broken = False
    return app


def plan_for(state, url, run_id, shards=None):
    cases = [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(4)]
    plan = make_plan(state, cases, adapter_doc=adapter(url, max_concurrency=4), run_id=run_id, mode="regression",
                     selecting_split="full", k=2, execution={"max_attempts": 1, "backoff_s": []})
    return add_shards(plan, shards) if shards else plan


def latest(reports):
    return run_script("gate", reports, "--latest", "--mode", "regression")


def run_shards(state, url, count=2):
    plan_path = write_plan(state, plan_for(state, url, SHARDED_ID, count), "sharded.json")
    dirs = [state / "reports" / f"{SHARDED_ID}.shard-{i}" for i in range(1, count + 1)]
    for i, out in enumerate(dirs, 1):
        assert run_runner("--plan", plan_path, "--shard", i, "--out", out, "--progress", "never").rc == 0
    return plan_path, dirs


def test_latest_refuses_unmerged_shards_instead_of_the_older_green_run(tmp_path):
    with echo_app() as app:
        state = make_state(tmp_path)
        reports = state / "reports"
        green = run_runner("--plan", write_plan(state, plan_for(state, app.url, GREEN_ID)), "--out",
                           reports / GREEN_ID, "--progress", "never")
        assert green.rc == 0, green.stdout
        assert latest(reports).rc == 0
        app.broken = True
        plan_path, dirs = run_shards(state, app.url)
        refused = latest(reports)
        assert refused.rc == 2, refused.stdout
        error = json.loads(refused.stdout)
        assert error["run_id"] == SHARDED_ID and error["unmerged_shards"] == [d.name for d in dirs]
        assert GREEN_ID in error["error"] and "merge_runs.py" in error["error"]
        # a refused merge (a shard left out) writes nothing: --latest still refuses
        assert run_script("merge_runs", "--plan", plan_path, "--out", reports / SHARDED_ID, dirs[0]).rc == 6
        assert latest(reports).rc == 2
        merged = run_script("merge_runs", "--plan", plan_path, "--out", reports / SHARDED_ID, *dirs)
        assert merged.rc == 0, merged.stdout
        gated = latest(reports)
        assert gated.rc == 1 and SHARDED_ID in gated.stdout and "c-2" in gated.stdout, gated.stdout


def test_latest_names_the_unmerged_shards_when_no_run_finished(tmp_path):
    with echo_app() as app:
        state = make_state(tmp_path)
        _, dirs = run_shards(state, app.url)
        refused = latest(state / "reports")
        assert refused.rc == 2, refused.stdout
        error = json.loads(refused.stdout)
        assert error["unmerged_shards"] == [d.name for d in dirs]
        assert "no finished run to gate" in error["error"]


def test_a_merged_run_whose_shard_was_run_again_after_the_merge_does_not_open(tmp_path):
    """The merge was green; the app broke and shard 1 (it holds c-2) was run again into its dir, and the
    merge was not run again (forgotten, or refused while the shard ran and the script went on). Gating
    the old merge (by its dir or --latest) said PASS beside a newer shard run that fails c-2."""
    with echo_app() as app:
        state = make_state(tmp_path)
        reports = state / "reports"
        plan_path, dirs = run_shards(state, app.url)
        assert run_script("merge_runs", "--plan", plan_path, "--out", reports / SHARDED_ID, *dirs).rc == 0
        assert latest(reports).rc == 0                      # a fresh merge, its shard dirs beside it: open
        app.broken = True
        import shutil
        shutil.rmtree(dirs[0])
        assert run_runner("--plan", plan_path, "--shard", 1, "--out", dirs[0], "--progress", "never").rc == 0
        for gated in (latest(reports), run_script("gate", reports / SHARDED_ID)):
            assert gated.rc == 1, gated.stdout
            assert f"shard 1's run dir {dirs[0].name} beside this merged run holds another run of it" in gated.stdout
            assert "merge every shard again" in gated.stdout
        merged = run_script("merge_runs", "--plan", plan_path, "--out", reports / SHARDED_ID, *dirs)
        assert merged.rc == 0, merged.stdout
        gated = latest(reports)
        assert gated.rc == 1 and "c-2" in gated.stdout and "holds another run" not in gated.stdout, gated.stdout
