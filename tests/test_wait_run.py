"""wait_run.py: final (0), still running (3), runner gone (4) with the exact --resume command.

Liveness is the runner's flock on <reports>/.<run-id>.lock: a real child process holds it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from helpers import SCRIPTS, run_script
from rundir_util import DEFAULT_RUN_ID, basic_cases, make_run, set_status


def _lock_holder(lock, plan, out):
    """A child that writes the lock doc, takes LOCK_EX, says 'locked', and sleeps."""
    code = textwrap.dedent(f"""
        import fcntl, json, os, sys, time
        fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps({{"pid": os.getpid(), "run_id": {DEFAULT_RUN_ID!r}, "plan": {str(plan)!r},
                                  "out": {str(out)!r}, "started_at": "x"}}).encode())
        print("locked", flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def test_final_run_exits_0_with_status_exit_code_and_last_event(tmp_path):
    run_dir = make_run(tmp_path / "reports", basic_cases())
    r = run_script("wait_run", run_dir, "--timeout-s", "0")
    assert r.rc == 0, r.stdout
    out = r.json
    assert out["status"] == "ok" and out["exit_code"] == 0
    assert out["last_event"]["event"] == "finalize"
    assert out["run_id"] == DEFAULT_RUN_ID and "waited_s" in out


def test_alive_runner_exits_3_then_killed_runner_exits_4_with_resume(tmp_path):
    reports = tmp_path / "state" / "reports"
    run_dir = make_run(reports, basic_cases(), status="running")
    plan = tmp_path / "state" / "work" / "plan.json"
    proc = _lock_holder(reports / f".{DEFAULT_RUN_ID}.lock", plan, run_dir)
    try:
        r = run_script("wait_run", run_dir, "--timeout-s", "0.3", "--interval-s", "0.1")
        assert r.rc == 3, r.stdout
        assert r.json["runner_process"] == "alive" and r.json["exit_code"] is None
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        r = run_script("wait_run", run_dir, "--timeout-s", "5", "--interval-s", "0.1")
        assert r.rc == 4, r.stdout
        out = r.json
        assert out["runner_process"] == "gone"
        assert out["resume"] == (f'python3 "{SCRIPTS / "run_cases.py"}" --plan "{plan}" '
                                 f'--out "{run_dir}" --resume')
        assert "resume_note" not in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_lock_released_but_run_finalized_meanwhile_is_final(tmp_path):
    reports = tmp_path / "reports"
    run_dir = make_run(reports, basic_cases(), status="running")
    (reports / f".{DEFAULT_RUN_ID}.lock").write_text("{}")  # stale file, nobody holds it
    set_status(run_dir, "ok", 0)
    r = run_script("wait_run", run_dir, "--timeout-s", "0")
    assert r.rc == 0 and r.json["status"] == "ok"


def test_absent_lock_while_running_is_gone_with_plan_fallback_wording(tmp_path):
    run_dir = make_run(tmp_path / "state" / "reports", basic_cases(), status="running")
    r = run_script("wait_run", run_dir, "--timeout-s", "0")
    assert r.rc == 4
    out = r.json
    assert "work/plan.json" in out["resume"].replace(os.sep, "/")
    assert "<state>/work/plan.json" in out["resume_note"]


def test_absent_lock_names_the_plan_whose_run_id_is_the_runs(tmp_path):
    """A pytest session keeps its run's plan as <state>/work/pytest/<run-id>.plan.json: the resume
    command names that one (its run_id says so), not the run skill's work/plan.json of another run."""
    state = tmp_path / "state"
    run_dir = make_run(state / "reports", basic_cases(), status="running")
    (state / "work" / "pytest").mkdir(parents=True)
    (state / "work" / "plan.json").write_text(json.dumps({"run_id": "smoke-20200101T000000Z", "cases": []}))
    kept = state / "work" / "pytest" / f"{run_dir.name}.plan.json"
    kept.write_text(json.dumps({"cases": [], "run_id": run_dir.name}))
    out = run_script("wait_run", run_dir, "--timeout-s", "0").json
    assert f'--plan "{kept.resolve()}"' in out["resume"] or f'--plan "{kept}"' in out["resume"], out["resume"]
    assert "is this run's plan" in out["resume_note"]
    kept.unlink()   # the skill's plan.json of this very run: named, and said to be this run's
    (state / "work" / "plan.json").write_text(json.dumps({"run_id": run_dir.name, "cases": []}))
    out = run_script("wait_run", run_dir, "--timeout-s", "0").json
    assert "work/plan.json" in out["resume"].replace(os.sep, "/") and "is this run's plan" in out["resume_note"]


def test_waits_until_the_runner_finalizes(tmp_path):
    reports = tmp_path / "reports"
    run_dir = make_run(reports, basic_cases(), status="running")
    proc = _lock_holder(reports / f".{DEFAULT_RUN_ID}.lock", tmp_path / "plan.json", run_dir)
    try:
        waiter = subprocess.Popen([sys.executable, str(SCRIPTS / "wait_run.py"), str(run_dir),
                                   "--timeout-s", "60", "--interval-s", "0.1"],
                                  stdout=subprocess.PIPE, text=True)
        set_status(run_dir, "ok", 0)
        out, _ = waiter.communicate(timeout=60)
        assert waiter.returncode == 0, out
        assert json.loads(out)["status"] == "ok"
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("flag,value", [("--timeout-s", "601"), ("--timeout-s", "-1"),
                                        ("--interval-s", "0.05"), ("--interval-s", "61")])
def test_out_of_range_flags_are_exit_2_json(tmp_path, flag, value):
    run_dir = make_run(tmp_path / "reports", basic_cases())
    r = run_script("wait_run", run_dir, flag, value)
    assert r.rc == 2 and flag in r.json["error"]


def test_not_a_run_dir_is_exit_2(tmp_path):
    r = run_script("wait_run", tmp_path)
    assert r.rc == 2 and "not a run directory" in r.json["error"]


def test_manifest_only_counts_as_running(tmp_path):
    """Pre-flight wrote manifest.yaml but not yet results.json: not final; no lock means gone."""
    run_dir = make_run(tmp_path / "reports", basic_cases(), status="running")
    (run_dir / "results.json").unlink()
    r = run_script("wait_run", run_dir, "--timeout-s", "0")
    assert r.rc == 4 and r.json["status"] == "running" and r.json["runner_process"] == "gone"


def test_a_hung_runner_says_how_long_since_a_case_finished_and_past_stall_s_exits_5(tmp_path):
    """A runner that hangs (alive, holding its lock, no case finishing) kept wait_run.py at exit 3
    ("call again") forever with nothing saying no case had finished for a long time. Now exit 3 and
    its notice say how long since the last case finished (gate.py's IN PROGRESS line too), and past
    --stall-s it is exit 5 naming the runner's pid, the time and the --resume command."""
    import threading
    import time

    from fakeapp import FakeApp, Reply, case, make_plan, make_state, write_plan

    release = threading.Event()

    def hangs_on_c2(req):
        if req.method == "POST" and req.json["message"] == "two":
            release.wait(60)
        return Reply(200, {"message": f"echo: {req.json['message']}"} if req.method == "POST" else {"ok": True})

    state = make_state(tmp_path)
    with FakeApp(hangs_on_c2) as app:
        plan = make_plan(state, [case("c-1", "one"), case("c-2", "two")], app_url=app.url)
        path, out = write_plan(state, plan), state / "reports" / plan["run_id"]
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        runner = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(path), "--out",
                                   str(out), "--progress", "never", "--order", "plan"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not (out / "cases.jsonl").is_file():
                time.sleep(0.05)
            time.sleep(1.2)   # c-1 finished over a second ago; c-2 hangs at the app
            r = run_script("wait_run", out, "--timeout-s", "0")
            assert r.rc == 3 and r.json["since_last_case_s"] >= 1 and r.json["case_finished_since_start"], r.stdout
            assert "1 of 2 planned case(s) finished so far; the last one finished 1 s ago" in r.json["message"], r.stdout
            gated = run_script("gate", out)
            assert "IN PROGRESS" in gated.stdout and "the last one finished 1 s ago" in gated.stdout, gated.stdout
            r = run_script("wait_run", out, "--timeout-s", "5", "--interval-s", "0.1", "--stall-s", "1")
            assert r.rc == 5, r.stdout + r.stderr
            doc = r.json
            assert doc["stalled"] and doc["pid"] == runner.pid and doc["stall_s"] == 1 and doc["since_last_case_s"] >= 1
            assert "no case has finished for" in doc["message"] and f"kill {runner.pid}" in doc["message"]
            assert doc["resume"].endswith(f'--out "{out}" --resume'), doc["resume"]
            # a resumed run whose journal is old is not stalled: its time counts from its runner's start
            hours_ago = time.time() - 7200
            os.utime(out / "cases.jsonl", (hours_ago, hours_ago))
            r = run_script("wait_run", out, "--timeout-s", "0", "--stall-s", "60")
            assert r.rc == 3 and not r.json["case_finished_since_start"], r.stdout
            assert "finished so far; none since its runner started" in r.json["message"], r.stdout
            assert run_script("wait_run", out, "--timeout-s", "0", "--stall-s", "soon").rc == 2
        finally:
            release.set()
        r = run_script("wait_run", out, "--timeout-s", "60", "--interval-s", "0.1", "--stall-s", "1")
        runner.communicate(timeout=60)
    assert r.rc == 0 and r.json["status"] == "ok", r.stdout
