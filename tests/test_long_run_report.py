"""draft_report.py after a long run's accidents, run as a user runs it (scripts as subprocesses against
a real local app).

- A case that never got an answer (a timeout, a dropped connection) under `--max-infra-rate` leaves the
  gate open by design, and the gate names it beside its PASS. The report's PASS banner used to print
  `20 pass, 0 fail, 0 unscored, 0 skipped` for 21 cases and never name the case that was not measured.
- A killed run (results.json still `running`, no runner on the lock) used to be answered "still
  running; wait with wait_run.py": waiting never ends it; the fix is `--resume`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

from fakeapp import FakeApp, Reply, case, default_handler, make_plan, make_state, write_plan
from helpers import SCRIPTS, run_script

RUN_ID = "smoke-20261203T000000Z"
WAIT_S = 120   # a loaded machine: only a broken runner waits this long


def test_report_banner_counts_and_names_the_case_with_no_answer_beside_a_pass(tmp_path):
    state = make_state(tmp_path)
    out = state / "reports" / RUN_ID

    def handler(req):
        if req.method == "POST" and "lost" in str(req.json):
            return Reply(drop=True)   # the connection dropped on every attempt: no answer, infra_error
        return default_handler(req)

    cases = [case(f"c-{i:02d}", f"hello {i}") for i in range(1, 21)] + [case("c-21", "lost")]
    with FakeApp(handler) as app:
        plan = write_plan(state, make_plan(state, cases, app_url=app.url, run_id=RUN_ID,
                                           execution={"max_attempts": 2, "backoff_s": [0]}))
        r = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never")
        assert r.rc == 0, r.stdout
    gate = run_script("gate", out)
    assert gate.rc == 0 and gate.stdout.startswith(f"{RUN_ID}: PASS"), gate.stdout   # 1/21 is under 5 %
    counts, named = gate.stdout.splitlines()[1].strip(), None
    assert counts.endswith(", 1 infra_error"), gate.stdout
    for line in gate.stdout.splitlines():
        if "under --max-infra-rate" in line:
            named = line.strip()
    assert named and "c-21 (" in named, gate.stdout

    r = run_script("draft_report", out)
    assert r.rc == 0, r.stdout
    text = (out / "report.md").read_text(encoding="utf-8")
    banner = text.split("\n\n")[1].replace("\\_", "_").splitlines()   # the blockquote after the title (unescaped)
    assert banner[0] == f"> **PASS · gate open** · {counts}", banner
    assert any("under --max-infra-rate" in line and "c-21 (" in line for line in banner), banner


@contextlib.contextmanager
def runner_on_a_slow_case(tmp_path):
    """A runner started in the background on two cases, held inside the second (`slow`) until the
    caller sets `release` (or leaves: the runner is then let go, and killed if still there).
    Yields (state, plan, out, proc, release)."""
    state = make_state(tmp_path)
    out = state / "reports" / RUN_ID
    in_case, release = threading.Event(), threading.Event()

    def handler(req):
        if req.method == "POST" and "slow" in str(req.json):
            in_case.set()
            release.wait(WAIT_S)
        return default_handler(req)

    with FakeApp(handler) as app:
        plan = write_plan(state, make_plan(state, [case("c-1", "hello"), case("c-2", "slow")],
                                           app_url=app.url, run_id=RUN_ID))
        proc = subprocess.Popen([sys.executable, str(SCRIPTS / "run_cases.py"), "--plan", str(plan), "--out",
                                 str(out), "--progress", "never", "--order", "plan"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        try:
            assert in_case.wait(WAIT_S), "the runner never sent the slow case"
            yield state, plan, out, proc, release
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
                proc.communicate()


def test_draft_report_on_a_killed_run_names_resume_not_waiting(tmp_path):
    with runner_on_a_slow_case(tmp_path) as (state, plan, out, proc, release):
        r = run_script("draft_report", out)
        assert r.rc == 2 and "the run is still running" in r.json["error"], r.stdout
        c = run_script("compare_runs", out, out)   # compare's side: the live run is waited for
        assert c.rc == 2 and "still running" in c.json["error"] and "wait_run.py" in c.json["error"], c.stdout
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=WAIT_S)
        release.set()   # the app answers the slow case again (the resume below sends it)
        c = run_script("compare_runs", out, out)   # the killed one: never "wait for it", the --resume command
        assert c.rc == 2 and "never finished" in c.json["error"] and "wait_run" not in c.json["error"], c.stdout
        assert "--resume" in c.json["error"], c.stdout
        r = run_script("draft_report", out)
        assert r.rc == 2, r.stdout
        err = r.json["error"]
        assert "the run was interrupted" in err and "wait with" not in err, err
        assert r.json["resume"].endswith(f'--plan "{plan}" --out "{out}" --resume'), r.stdout
        assert not (out / "report.md").exists()
        # the command it names finishes the run, and then the report is drafted
        r = run_script("run_cases", "--plan", plan, "--out", out, "--resume", "--progress", "never")
        assert r.rc == 0, r.stdout
    assert run_script("draft_report", out).rc == 0 and (out / "report.md").is_file()


def test_a_second_runner_on_a_live_run_is_told_to_wait_not_to_resume(tmp_path):
    """The same command typed twice (a second terminal, a retried CI step) while the first runner goes:
    it used to say `already exists and is not empty; pass --resume`, and --resume was then refused."""
    with runner_on_a_slow_case(tmp_path) as (state, plan, out, proc, release):
        again = run_script("run_cases", "--plan", plan, "--out", out, "--progress", "never")
        assert again.rc == 2, again.stdout
        assert "another runner is running run" in again.json["error"], again.stdout
        assert "wait_run.py" in again.json["error"] and "pass --resume" not in again.json["error"]
        resumed = run_script("run_cases", "--plan", plan, "--out", out, "--resume", "--progress", "never")
        assert resumed.rc == 2 and "another runner is running run" in resumed.json["error"], resumed.stdout
        release.set()
        stdout, _ = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 0, stdout
    assert run_script("gate", out).rc == 0   # the first run was left whole by both refusals
