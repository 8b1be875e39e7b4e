"""Issue 24 D5: gate.py and wait_run.py on a run that is still in progress say so.

Before: "0 cases + 0 canaries: 0 pass, 0 fail", "gate closed: nothing was measured" and a
--verify list of every case "missing", about a run whose runner was busy sending cases."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script

pytestmark = pytest.mark.slow


def slow(req):
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"message": "hello there"}, delay=2)


def test_gate_and_wait_run_on_a_run_in_progress(tmp_path):
    state = make_state(tmp_path)
    with FakeApp(slow) as app:
        plan = make_plan(state, [case(f"c-{i:08d}", "hello") for i in range(6)], app_url=app.url,
                         execution={"max_attempts": 1, "backoff_s": []})
        plan["adapter"]["invocation"]["max_concurrency"] = 1
        out = state / "reports" / plan["run_id"]
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(write_plan(state, plan)),
                                 "--out", str(out), "--progress", "never"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not (out / "results.json").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            g = run_script("gate", out)
            w = run_script("wait_run", out, "--timeout-s", "0.2", "--interval-s", "0.1")
        finally:
            proc.wait(timeout=60)
    assert g.rc == 1, g.stdout
    assert g.stdout.startswith(f"{plan['run_id']}: IN PROGRESS"), g.stdout
    assert re.search(r"\n  [0-5] of 6 planned case\(s\) finished so far", g.stdout), g.stdout
    for stale in ("nothing was measured", "0 pass, 0 fail", "--verify", "never finished", "canaries 0/0"):
        assert stale not in g.stdout, g.stdout
    assert "wait_run.py" in g.stdout
    assert "(from the committed lines of cases.jsonl;" in g.stdout and "cases/*/" not in g.stdout   # where it counts
    assert w.rc == 3, w.stdout
    assert w.json["planned"] == 6 and 0 <= w.json["finished"] < 6
    assert re.search(r"still running \([0-5] of 6 planned case\(s\) finished so far[;)]", w.stderr), w.stderr
    # once finished, the gate is the ordinary one
    done = run_script("gate", out)
    assert "IN PROGRESS" not in done.stdout and "6 cases" in done.stdout
