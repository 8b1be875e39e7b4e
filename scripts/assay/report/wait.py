"""wait_run: wait, read-only, for a run to leave `running`, in slices a Bash call can afford.

Liveness comes from the runner's lock (runner-contract §10.4), never from `ps`: the runner
holds an exclusive flock on `<reports>/.<run-id>.lock`; if we can take a shared one
(non-blocking), no runner is alive. An absent lock file while results.json still says
`running` also means the runner is gone (it removes the file only when it exits).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from ..core.errors import AssayError
from ..rundir.runlock import lock_path, rescore_restart, resume_command, runner_state
from .rundir import last_log_event, progress_phrase, since_last_case, since_phrase, try_json

EXIT_FINAL, EXIT_RUNNING, EXIT_GONE, EXIT_STALLED = 0, 3, 4, 5
STALL_FLOOR_S = 1800.0   # --stall-s auto never stops sooner than this


def _status(results: dict | None) -> tuple[str | None, object]:
    if not isinstance(results, dict):
        return None, None
    summary = results.get("summary")
    status = summary.get("status") if isinstance(summary, dict) else None
    return status, results.get("exit_code")


NOTICE_EVERY_S = 5.0


def _progress(run_dir: Path, lock: Path) -> tuple[str, int, int | None, tuple[float, bool] | None]:
    """(`N of M planned case(s) finished so far; the last one finished 3 min ago`, N, M, since_last_case)."""
    phrase, finished, planned = progress_phrase(run_dir)
    since = since_last_case(run_dir, lock)
    return (f"{phrase}; {since_phrase(since)}" if since is not None else phrase), finished, planned, since


def _notice(stream, run_id: str, phrase: str, waited: float, timeout_s: float) -> None:
    """One stderr line saying we are waiting, and how far the run got, counted from the case dirs
    (results.json lags a batch: at the start it says 0 of everything)."""
    stream.write(f"wait_run: {run_id} is still running ({phrase}); waited {waited:.0f} s of {timeout_s:g} s\n")
    stream.flush()


def case_bound_s(run_dir: Path) -> float:
    """`--stall-s auto`: the longest one case may take by the run's own limits (manifest.yaml's
    execution and k): k x (max_attempts x timeout_s x turns + the backoffs + one rate-limit wait),
    turns being execution.max_turns for a conversation adapter (else 1), timeout_s an agent's own
    when set; never under STALL_FLOOR_S. With concurrency, some case finishes at least that often."""
    manifest = try_json(Path(run_dir) / "manifest.yaml")
    manifest = manifest if isinstance(manifest, dict) else {}
    ex = manifest.get("execution") if isinstance(manifest.get("execution"), dict) else {}
    inv = manifest.get("invocation") if isinstance(manifest.get("invocation"), dict) else {}
    agent = inv.get("agent") if isinstance(inv.get("agent"), dict) else {}

    def num(value: object, default: float) -> float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else default
    timeout = num(agent.get("timeout_s"), num(ex.get("timeout_s"), 60))
    turns = num(ex.get("max_turns"), 12) if manifest.get("conversation") else 1
    waits = ex.get("backoff_s") if isinstance(ex.get("backoff_s"), list) else []
    backoff = sum(num(b, 0) for b in waits)
    one = num(ex.get("max_attempts"), 3) * timeout * turns + backoff + num(ex.get("rate_limit_wait_s"), 300)
    return max(STALL_FLOOR_S, num(manifest.get("k"), 1) * one)


def _stalled(run_dir: Path, run_id: str, status: str | None, lock_doc: object, since: tuple[float, bool],
             bound: float, how: str, waited: float) -> dict:
    doc = lock_doc if isinstance(lock_doc, dict) else None
    command, note = resume_command(run_dir, doc)
    pid = doc.get("pid") if doc else None
    out = {"run_id": run_id, "status": status or "running", "exit_code": None, "runner_process": "alive",
           "stalled": True, "since_last_case_s": round(since[0], 3), "case_finished_since_start": since[1],
           "stall_s": bound, "stall_bound": how, "pid": pid, "last_event": last_log_event(run_dir),
           "waited_s": round(waited, 3), "resume": command,
           "message": f"stalled: its runner{f' (pid {pid})' if pid else ''} still holds the lock, but no case has "
                      f"finished for {round(since[0])} s ({since_phrase(since)}), past the bound of {bound:g} s "
                      f"({how}). Look at last_event (run.log) and the app. If a case can take this long, call "
                      "wait_run.py again with a larger --stall-s (0: never); otherwise stop the runner"
                      f"{f' (kill {pid})' if pid else ''} and resume it with the `resume` command (same run id: the "
                      "finished cases are kept)"}
    if note:
        out["resume_note"] = note
    return out


def wait_for_run(run_dir: Path, *, timeout_s: float = 540, interval_s: float = 5, stall_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep, stderr=None) -> tuple[int, dict]:
    """Poll until final (0), timeout (3), runner gone (4) or stalled (5: the runner is alive but no
    case has finished for `stall_s` seconds; None: `case_bound_s`, 0: never). Returns (exit code, JSON object).

    While it waits it says so on stderr at least every NOTICE_EVERY_S seconds (stdout stays one
    JSON object), so a person or an agent never stares at a silent command."""
    import sys
    stream = stderr or sys.stderr
    last_notice: float | None = None
    run_dir = Path(run_dir)
    start = clock()
    while not run_dir.exists() and runner_state(lock_path(run_dir, run_dir.name)) == "alive":
        # its runner holds the lock and is still in pre-flight (the health check waits on a slow app): the
        # run dir is made when pre-flight ends, so this is a run in progress, never a wrong path
        waited = clock() - start
        if waited >= timeout_s:
            return EXIT_RUNNING, {"run_id": run_dir.name, "status": "running", "exit_code": None,
                                  "runner_process": "alive", "last_event": None, "waited_s": round(waited, 3),
                                  "finished": 0, "planned": None,
                                  "message": "its runner is still in pre-flight (no run directory yet); call "
                                             "wait_run.py again"}
        sleep(min(interval_s, NOTICE_EVERY_S, max(0.0, timeout_s - waited)))
    if not run_dir.is_dir() or not ((run_dir / "results.json").exists() or (run_dir / "manifest.yaml").exists()):
        from .rundir import not_a_run_hint
        raise AssayError(f"{run_dir}: not a run directory (no results.json or manifest.yaml); "
                         f"{not_a_run_hint(run_dir)}", 2, path=str(run_dir))
    while True:
        results = try_json(run_dir / "results.json")
        status, exit_code = _status(results)
        run_id = (results or {}).get("run_id") if isinstance(results, dict) else None
        run_id = run_id if isinstance(run_id, str) else run_dir.name
        if status is not None and status != "running":
            return EXIT_FINAL, _final(run_dir, run_id, status, exit_code, clock() - start)
        lock = lock_path(run_dir, run_id)
        lock_doc = try_json(lock)
        state = runner_state(lock)
        if state == "gone":
            # The runner may have finalized between our read and the lock check: read once more.
            results = try_json(run_dir / "results.json")
            status, exit_code = _status(results)
            if status is not None and status != "running":
                return EXIT_FINAL, _final(run_dir, run_id, status, exit_code, clock() - start)
            command, note = resume_command(run_dir, lock_doc if isinstance(lock_doc, dict) else None)
            out = {"run_id": run_id, "status": status or "running", "exit_code": None,
                   "runner_process": "gone", "last_event": last_log_event(run_dir),
                   "waited_s": round(clock() - start, 3), "resume": command,
                   "message": "the run is still `running` but no runner holds its lock: it was killed. "
                              + ("It is a rescore, which has no --resume: the `resume` command rescores its "
                                 "source again into a new run dir (resume_note)."
                                 if rescore_restart(run_dir, lock_doc if isinstance(lock_doc, dict) else None)
                                 else "Resume it under the same run id with the `resume` command.")}
            if note:
                out["resume_note"] = note
            return EXIT_GONE, out
        waited = clock() - start
        now = clock()
        notice_due = last_notice is None or now - last_notice >= NOTICE_EVERY_S
        if waited >= timeout_s or notice_due:
            phrase, finished, planned, since = _progress(run_dir, lock)
            if state == "alive" and since is not None and stall_s != 0:
                bound, how = ((stall_s, "--stall-s") if stall_s is not None else
                              (case_bound_s(run_dir), "--stall-s auto: the longest one case may take by this run's "
                               f"limits, at least {STALL_FLOOR_S:g} s"))
                if since[0] >= bound:
                    return EXIT_STALLED, _stalled(run_dir, run_id, status, lock_doc, since, bound, how, waited)
        if waited >= timeout_s:
            out = {"run_id": run_id, "status": status or "running", "exit_code": None,
                   "runner_process": state, "last_event": last_log_event(run_dir),
                   "waited_s": round(waited, 3), "finished": finished, "planned": planned,
                   "message": f"still running: {phrase}; call wait_run.py again"}
            if since is not None:
                out.update(since_last_case_s=round(since[0], 3), case_finished_since_start=since[1])
            return EXIT_RUNNING, out
        if notice_due:
            _notice(stream, run_id, phrase, waited, timeout_s)
            last_notice = now
        sleep(min(interval_s, NOTICE_EVERY_S, max(0.0, timeout_s - waited)))


def _final(run_dir: Path, run_id: str, status: str, exit_code: object, waited: float) -> dict:
    return {"run_id": run_id, "status": status, "exit_code": exit_code,
            "last_event": last_log_event(run_dir), "waited_s": round(waited, 3)}
