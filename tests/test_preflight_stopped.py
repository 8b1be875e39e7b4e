"""A run stopped in pre-flight, before its run dir existed, is never replaced by an older run.

The app's health check is slow; the runner waits in pre-flight; the CI step's timeout sends SIGTERM
(or a person presses Ctrl-C, or the shell is killed). No case was sent and no run dir was made, so
`gate.py reports --latest` used to gate the previous run, green, and exit 0. Now Ctrl-C leaves
`.<run-id>.not-started.json` (exit 130) and SIGTERM/SIGKILL leave the runner's lock with no run dir,
which `--latest` reads as the newest run that never started (assay.rundir.not_started): exit 2,
naming it and the command that starts it over; `--resume` then runs it and the gate reads it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

import pytest

from fakeapp import FakeApp, Reply, adapter, case, default_handler, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script

GREEN, STOPPED = "smoke-20261201T000000Z", "smoke-20261202T000000Z"
WAIT_S = 120   # a loaded machine: only a broken runner waits this long


def _signals_as_a_shell_gives_them() -> None:
    """The runner as a terminal starts it: SIGINT and SIGTERM neither blocked nor ignored (a mask or an
    ignored disposition survives fork and exec, and a test worker's could make Ctrl-C do nothing: once
    under make test the runner ran its plan to the end after the SIGINT)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _signal_masks(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as fh:
            return [line for line in fh.read().splitlines() if line.startswith(("SigBlk", "SigIgn", "SigPnd"))]
    except OSError:
        return []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_latest_refuses_a_newer_run_stopped_in_preflight(tmp_path, sig):
    state = make_state(tmp_path)
    reports = state / "reports"
    in_health, release, slow = threading.Event(), threading.Event(), threading.Event()

    def handler(req):
        if req.method == "GET" and slow.is_set():
            in_health.set()
            release.wait(WAIT_S)
        return default_handler(req)

    with FakeApp(handler) as app:
        cases = [case("c-1", "hello"), case("c-2", "world")]
        for run_id in (GREEN, STOPPED):
            # the held health check outlasts the test's own steps on a loaded machine (a gate, a signal):
            # the runner's timeout (60 s by default) must not end pre-flight before the signal does
            write_plan(state, make_plan(state, cases, app_url=app.url, run_id=run_id,
                                        adapter_doc=adapter(app.url, timeout_s=4 * WAIT_S)), f"{run_id}.json")
        r = run_script("run_cases", "--plan", state / "work" / f"{GREEN}.json", "--out", reports / GREEN,
                       "--progress", "never")
        assert r.rc == 0, r.stdout
        assert run_script("gate", reports, "--latest").rc == 0

        sent = len(app.posts())
        slow.set()
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan",
                                 str(state / "work" / f"{STOPPED}.json"), "--out", str(reports / STOPPED),
                                 "--progress", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                                preexec_fn=_signals_as_a_shell_gives_them)
        try:
            assert in_health.wait(WAIT_S), "the runner never reached its health check"
            # still in pre-flight: the newest run is not started yet, and no older run stands in for it
            r = run_script("gate", reports, "--latest", "--mode", "smoke")
            assert r.rc == 2, r.stdout
            assert r.json["run_id"] == STOPPED and r.json["not_started"] is True
            assert "has not started yet" in r.json["error"] and "still in pre-flight" in r.json["error"]
            masks = _signal_masks(proc.pid)   # said if the signal does nothing (a mask the runner inherited)
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=WAIT_S)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == (130 if sig == signal.SIGINT else -sig), (proc.returncode, out, masks)
        assert not (reports / STOPPED).exists()
        assert len(app.posts()) == sent   # no case was sent

        r = run_script("gate", reports, "--latest")
        assert r.rc == 2, r.stdout   # it used to print `smoke-20261201T000000Z: PASS` and exit 0
        err = r.json["error"]
        assert r.json["run_id"] == STOPPED and r.json["not_started"] is True, r.stdout
        assert f"will not gate {GREEN}, an older run, in its place" in err
        if sig == signal.SIGINT:
            assert "never started (run_cases.py exit 130: interrupted (SIGINT) in pre-flight" in err
        else:
            assert "was stopped in pre-flight, before its run directory existed" in err
            assert f'--out "{reports / STOPPED}" --resume' in err and f".{STOPPED}.lock" in err
        # the run's own directory, as a user types it, says the same
        r = run_script("gate", reports / STOPPED)
        assert r.rc == 2 and "that run never started" in r.json["error"], r.stdout
        # an older run asked for by its directory is still gated
        assert run_script("gate", reports / GREEN).rc == 0

        # started over under the same run id (no run dir: --resume is a fresh start), it is gated itself
        slow.clear()
        app.handler = lambda req: default_handler(req) if req.method == "GET" or "hello" in str(req.json) \
            else Reply(200, {"message": "no"})
        r = run_script("run_cases", "--plan", state / "work" / f"{STOPPED}.json", "--out", reports / STOPPED,
                       "--resume", "--progress", "never")
        assert r.rc == 0, r.stdout
    assert sorted(p for p in os.listdir(reports) if STOPPED in p) == [STOPPED]
    r = run_script("gate", reports, "--latest")
    assert r.rc == 1 and r.stdout.startswith(f"{STOPPED}: FAIL"), r.stdout
    assert "c-2 (answer)" in r.stdout
