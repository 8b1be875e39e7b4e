"""Readers of a finished red run whose files were edited, deleted or copied by hand (a partial copy or
sync, a careless clean-up, someone turning it green without fixing the app): each refuses naming the
file, never a green or a silently different count. Driven as subprocesses against a real loopback app.

- `gate.py <reports> --latest` when the newest run dir has no results.json, or is a green run's dir
  copied to a newer run id: refused naming that dir, never the previous green run in its place
  (runner-contract §10.4a's rule, for a run dir that exists);
- `compare_runs.py BASE CAND` when the candidate's verdicts.jsonl was edited: refused as the base is
  (§20), never "no verdict changed" for a run whose gate closes."""

from __future__ import annotations

import json
import shutil

import pytest

from fakeapp import FakeApp, Reply, adapter, case, make_plan, make_state, run_runner, write_plan
from helpers import run_script

pytestmark = pytest.mark.slow

GREEN_ID = "regression-20261205T140000Z"
RED_ID = "regression-20261205T150000Z"


def runs(tmp_path):
    """(reports dir) holding a green run and a newer red one of the same suite."""
    state = make_state(tmp_path)
    broken = {"on": False}

    def handler(req):
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = req.json["message"]
        return Reply(200, {"message": "other" if broken["on"] and msg == "msg 2" else f"re: {msg}"})
    with FakeApp(handler) as app:
        for run_id in (GREEN_ID, RED_ID):
            broken["on"] = run_id == RED_ID
            plan = make_plan(state, [case(f"c-{i}", f"msg {i}", split=["full"]) for i in range(3)],
                             adapter_doc=adapter(app.url), run_id=run_id, mode="regression", selecting_split="full",
                             execution={"max_attempts": 1, "backoff_s": []})
            r = run_runner("--plan", write_plan(state, plan, f"{run_id}.json"), "--out", state / "reports" / run_id,
                           "--progress", "never")
            assert r.rc == 0, r.stdout
    return state / "reports"


def latest(reports):
    return run_script("gate", reports, "--latest", "--mode", "regression")


def test_latest_refuses_a_newest_run_dir_without_results_json_and_one_that_is_a_copy(tmp_path):
    reports = runs(tmp_path)
    gated = latest(reports)
    assert gated.rc == 1 and RED_ID in gated.stdout, gated.stdout
    # the red run's results.json deleted (or a sync that left it behind): not the green run in its place
    saved = (reports / RED_ID / "results.json").read_bytes()
    (reports / RED_ID / "results.json").unlink()
    refused = latest(reports)
    assert refused.rc == 2, refused.stdout
    error = json.loads(refused.stdout)
    assert error["run_id"] == RED_ID and "has no results.json" in error["error"], error
    assert f"will not gate {GREEN_ID}, an older run, in its place" in error["error"], error
    assert f"run_cases.py --verify {reports / RED_ID}" in error["error"], error
    (reports / RED_ID / "results.json").write_bytes(saved)
    assert latest(reports).rc == 1
    # the green run's dir copied under a newer run id: it is the green run, not the newest result
    copy_id = "regression-20261205T160000Z"
    shutil.copytree(reports / GREEN_ID, reports / copy_id)
    refused = latest(reports)
    assert refused.rc == 2, refused.stdout
    error = json.loads(refused.stdout)
    assert error["run_id"] == copy_id and f"holds run {GREEN_ID}" in error["error"], error
    assert "a copy or rename of another run" in error["error"], error


def test_compare_refuses_a_candidate_whose_verdict_files_were_edited(tmp_path):
    reports = runs(tmp_path)
    assert json.loads(run_script("compare_runs", reports / GREEN_ID, reports / RED_ID).stdout)["counts"]["newly_failing"] == 1
    verdicts = reports / RED_ID / "verdicts.jsonl"
    verdicts.write_text(verdicts.read_text(encoding="utf-8").replace('"fail"', '"pass"'), encoding="utf-8")
    r = run_script("compare_runs", reports / GREEN_ID, reports / RED_ID)
    assert r.rc == 2, r.stdout
    error = r.json["error"]
    assert error.startswith(f"candidate {reports / RED_ID}: fails run_cases.py --verify (verdicts.jsonl"), error
    assert run_script("gate", reports / RED_ID).rc == 1   # the gate says closed on the same bytes
