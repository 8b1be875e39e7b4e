"""A decision depends on files outside the run dir too; the viewer decides again when they change.

A team leaves one viewer running. A run's gate read open; someone then tightened the budget in
profile.yaml (the run dir untouched). gate.py closed the run on it ("p95 latency ... is over the
budget"), while the viewer kept the decision it had made for the run dir's bytes and went on
showing it open and green, on the run's gate, the runs list and the history, until restarted.
The same for a merged run whose shard was run again after the merge (gate.py: "shard 2's run dir
... holds another run of it"). `assay.verdict.decide.outside_inputs` names those files; the viewer keys
its decisions on them as on the run dir's entries.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request

from assay.shard.assign import add_shards
from fakeapp import FakeApp, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script
from test_no_silent_green import PROFILE


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read().decode("utf-8"))


def _decided(url: str, run_id: str) -> dict:
    """The run's gate as the viewer's API answers it, once it is not "checking" (a loaded machine)."""
    deadline = time.monotonic() + 120
    while True:
        doc = _get(f"{url}api/run/{run_id}/gate?wait=5")
        if doc["gate"] != "checking" or time.monotonic() > deadline:
            return doc


def _served(state):
    viewer = subprocess.Popen([sys.executable, str(SCRIPTS / "view.py"), str(state), "--serve-seconds", "900"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return viewer, json.loads(viewer.stdout.readline())["url"]


def test_a_budget_tightened_while_the_viewer_serves_closes_the_run_there_as_gate_py_does(tmp_path):
    state = make_state(tmp_path)
    (state / "profile.yaml").write_text(PROFILE + "budgets:\n  max_p95_latency_s: 30\n", encoding="utf-8")
    with FakeApp() as app:
        plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(3)], app_url=app.url)
        out = state / "reports" / plan["run_id"]
        r = run_script("run_cases", "--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stderr
    run_id = plan["run_id"]
    viewer, url = _served(state)
    try:
        before = _decided(url, run_id)
        assert before["gate"] == "open" and before["green"] is True, before
        # the budget tightened by hand; not one byte of the run dir changes
        (state / "profile.yaml").write_text(PROFILE + "budgets:\n  max_p95_latency_s: 0.000001\n", encoding="utf-8")
        gate = run_script("gate", out, "--json")
        assert gate.rc == 1, gate.stdout
        over = [x for x in gate.json["reasons"] if "p95 latency" in x]
        assert over, gate.json["reasons"]
        after = _decided(url, run_id)
        assert after["gate"] == "closed" and after["green"] is False, after
        assert after["reasons"] == gate.json["reasons"], (after["reasons"], gate.json["reasons"])
        row = next(x for x in _get(url + "api/runs")["runs"] if x["run_id"] == run_id)
        assert row["gate"] == "closed" and row["green"] is False, row
        history = [x for s in _get(url + "api/history")["series"] for x in s["runs"] if x["run_id"] == run_id]
        assert history and history[0]["gate"] == "closed", history
    finally:
        viewer.terminate()
        viewer.wait(30)


def test_a_shard_run_again_after_the_merge_closes_the_merged_run_in_the_viewer_as_gate_py_does(tmp_path):
    state = make_state(tmp_path)
    with FakeApp() as app:
        plan = add_shards(make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(4)], app_url=app.url), 2)
        plan_file = write_plan(state, plan)
        run_id = plan["run_id"]
        shards = [state / "reports" / f"{run_id}.shard-{i}" for i in (1, 2)]
        for i, d in enumerate(shards, 1):
            r = run_script("run_cases", "--plan", plan_file, "--shard", i, "--out", d, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
        out = state / "reports" / run_id
        r = run_script("merge_runs", "--plan", plan_file, "--out", out, *shards)
        assert r.rc == 0, r.stdout + r.stderr
        assert run_script("gate", out).rc == 0
        viewer, url = _served(state)
        try:
            assert _decided(url, run_id)["gate"] == "open"
            # shard 2 run again after the merge, in its own dir; the merged run dir untouched
            shutil.rmtree(shards[1])
            r = run_script("run_cases", "--plan", plan_file, "--shard", 2, "--out", shards[1], "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
            gate = run_script("gate", out, "--json")
            assert gate.rc == 1 and any("run again after the merge" in x for x in gate.json["reasons"]), gate.stdout
            after = _decided(url, run_id)
            assert after["gate"] == "closed" and after["reasons"] == gate.json["reasons"], after
        finally:
            viewer.terminate()
            viewer.wait(30)
