"""The gate's decision per run, for the viewer: the one decision (`assay.verdict.decide`, with
gate.py's defaults — profile.yaml's budgets included — except the completeness re-check, which
`gate.py` runs: the page shows the answer a gate kept for the run's exact bytes (rundir.checked,
`verified: true`), and says when there is none, `verified: false`), computed once per results.json
version, kept answer and runner (alive or gone), never on the request that first asks. Until it is
known a page says "checking…": the viewer never shows a verdict it has not computed.

A server evaluates in its own worker process (`start_worker`, `gate_worker`: this `decide`, in
an interpreter that is not answering requests nor running the per-case pass); view.py starts it
before its own imports and the server waits until it is ready, so its imports are done before
the first page asks. Without one (a bundle, a caller in process), or when it has gone, the
worker thread evaluates here. Either way each evaluation starts once no request is being
answered (`quiet`: the page's rows are painted first), and the worker takes the newest request
first (a LIFO queue), so the run a person just opened is evaluated before a backlog of the runs
list; the run page's case index asks for its run's decision with its first request (`ask`), and
its per-case pass waits for that decision before it starts (`settled`): the decision comes right
after the rows, before the pass.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path

from ..report.gate import KEPT
from ..rundir.runlock import lock_path, runner_state
from ..rundir.checked import entry_stats, memo_path
from ..verdict import GateOptions, check_failed, decision_dict, outside_inputs
from . import gate_process
from .quiet import wait_quiet, waiting

CHECKING = "checking"
# a 100,000-case run re-checks in ~30 s: gate.py's job. The page shows the check's answer when a reader
# (gate.py, compare, the history) kept it for these same bytes (rundir.checked), and says when it has none
VIEW_OPTIONS = GateOptions(verify=KEPT)
WAIT_MAX_S = 5.0
_FUTURES: dict[tuple[str, float], Future] = {}
_LOCK = threading.Lock()
_JOBS: queue.LifoQueue = queue.LifoQueue()
_WORKER: list[threading.Thread] = []
_PROCESS: list[subprocess.Popen] = []


def decide(run_dir: Path) -> dict:
    """The gate's decision: open or closed with its reasons (an unreadable run is closed)."""
    return decision_dict(run_dir, VIEW_OPTIONS)


def start_worker() -> bool:
    """Start the worker process (once; view.py may have started it already) and wait until its
    imports are done; False when it cannot start or failed (the thread evaluates then)."""
    with _LOCK:
        if _PROCESS and _PROCESS[0].poll() is None:
            return True
        _PROCESS.clear()
    proc = gate_process.start()
    if proc is None:
        return False
    try:
        ready = proc.stdout.readline().strip() == gate_process.READY
    except (OSError, ValueError):
        ready = False
    if not ready:
        _end(proc)
        return False
    with _LOCK:
        _PROCESS[:] = [proc]
    return True


def stop_worker() -> None:
    """End the worker process: its stdin closed, it exits (a decision in flight is cut after 1 s:
    it writes nothing)."""
    with _LOCK:
        procs = list(_PROCESS)
        _PROCESS.clear()
    for proc in procs:
        _end(proc)


def _end(proc: subprocess.Popen) -> None:
    gate_process.PROCESS[:] = [p for p in gate_process.PROCESS if p is not proc]
    try:
        proc.stdin.close()
        proc.wait(1)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


def _from_worker(run_dir: Path) -> dict | None:
    """The worker process's decision for `run_dir`, None when there is no worker or it failed (it
    is then stopped: the thread decides from here on). Only the worker thread calls this."""
    proc = _PROCESS[0] if _PROCESS else None
    if proc is None:
        return None
    try:
        proc.stdin.write(json.dumps(os.fspath(run_dir)) + "\n")
        proc.stdin.flush()
        doc = json.loads(proc.stdout.readline())
    except (OSError, ValueError):
        doc = None
    if isinstance(doc, dict) and doc.get("gate") in ("open", "closed") and isinstance(doc.get("reasons"), list):
        return doc
    stop_worker()
    return None


def _work() -> None:
    while True:
        run_dir, fut = _JOBS.get()
        if not fut.set_running_or_notify_cancel():
            continue
        wait_quiet()   # the requests being answered first (the page's rows; measured: bench/RESULTS.md)
        doc = _from_worker(run_dir)
        if doc is None:
            doc = decide(run_dir)   # decision_dict never raises: an unreadable run is closed
        fut.set_result(doc)


def _key(run_dir: Path, mtime: float) -> tuple:
    """A decision stands for results.json's version and every entry of the run dir as it is (name,
    inode, size, modification and change times: rundir.checked's rule; a verdicts.jsonl or cases.jsonl
    edited since, results.json untouched, is decided again, as gate.py would re-check it), the check
    kept for it (kept since: decided again, with it) and whether a runner holds the run's lock (a
    runner killed since leaves results.json as it was: decided again, interrupted rather than "still
    running"), and every file outside the run dir the decision reads
    (`assay.verdict.decide.outside_inputs`: profile.yaml's budgets, prices.yaml, the holdout ledger, a
    shard dir beside a merged run) as it is now: a budget tightened while the viewer serves is decided
    again, as gate.py decides it."""
    entries = entry_stats(Path(run_dir))
    return (str(run_dir), mtime, tuple(entries) if entries is not None else None, _kept_mtime(run_dir),
            runner_alive(run_dir), tuple(_file_stat(p) for p in outside_inputs(run_dir, VIEW_OPTIONS)))


def _file_stat(path: Path) -> tuple:
    """(path, inode, size, mtime_ns, ctime_ns), or (path, None) when it is absent or unreadable."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return (str(path), None)
    return (str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def runner_alive(run_dir: Path) -> bool:
    """A runner holds the run's lock now (assay.rundir.runlock's rule, the gate's)."""
    return runner_state(lock_path(run_dir, Path(run_dir).name)) == "alive"


def _future(run_dir: Path, mtime: float) -> Future:
    key = _key(run_dir, mtime)
    with _LOCK:
        fut = _FUTURES.get(key)
        if fut is None:
            for stale in [k for k, f in _FUTURES.items() if k[0] == key[0] and f.done()]:
                del _FUTURES[stale]   # a run dir written to (a run going) leaves no trail of old decisions
            fut = _FUTURES[key] = Future()
            _JOBS.put((run_dir, fut))
            if not _WORKER:
                _WORKER.append(threading.Thread(target=_work, name="assay-view-gate", daemon=True))
                _WORKER[0].start()
        return fut


def _kept_mtime(run_dir: Path) -> float | None:
    try:
        return os.stat(memo_path(Path(run_dir)), follow_symlinks=False).st_mtime
    except OSError:
        return None


def _mtime(run_dir: Path) -> float | None:
    try:
        return os.stat(Path(run_dir) / "results.json", follow_symlinks=False).st_mtime
    except OSError:
        return None


def gate(run_dir: Path, mtime: float, wait: float | None = 0.0) -> dict:
    """The decision if known within `wait` seconds (None: wait for it), else {"gate": "checking"}."""
    fut = _future(run_dir, mtime)
    if fut.done() or wait == 0:
        return fut.result() if fut.done() else {"gate": CHECKING, "reasons": [], "verified": False}
    with waiting():
        try:
            return fut.result(timeout=None if wait is None else min(max(wait, 0.0), WAIT_MAX_S))
        except TimeoutError:
            return {"gate": CHECKING, "reasons": [], "verified": False}


def ask(run_dir: Path) -> None:
    """Queue the run's decision now (once per results.json version), without waiting for it."""
    mtime = _mtime(run_dir)
    if mtime is not None:
        _future(Path(run_dir), mtime)


def settled(run_dir: Path, timeout: float) -> None:
    """Return once the decision asked for the run's current results.json is known (or after
    `timeout` s; at once when none was asked): a per-case pass waits here so the decision comes first."""
    mtime = _mtime(run_dir)
    with _LOCK:
        fut = _FUTURES.get(_key(run_dir, mtime)) if mtime is not None else None
    if fut is not None:
        try:
            fut.result(timeout=timeout)
        except TimeoutError:
            pass


def gate_of(run_dir: Path) -> dict:
    """The decision for a run dir, waited for (the history page: one per run it draws)."""
    mtime = _mtime(run_dir)
    if mtime is None:
        return decide(run_dir)   # no results.json: the decision says why it is closed
    return gate(Path(run_dir), mtime, wait=None)


def current(run_dir: Path, wait: float | None = 0.0) -> dict | None:
    """The decision for the run dir as it is now if known within `wait` s (else "checking"; the
    decision is asked if it was not), None when it has no results.json."""
    mtime = _mtime(run_dir)
    return None if mtime is None else gate(Path(run_dir), mtime, wait)


def check_state(decision: dict | None) -> dict:
    """What the decision says of the run's completeness check (`run_cases.py --verify`), for the
    pages that show the run's files (its rows, a comparison): "checking" (not decided yet),
    "failed" (with the check's words: the gate is closed on it), "clean", or "unchecked" (a run too
    big to check here with no answer kept for its files, or one still running)."""
    if not isinstance(decision, dict):   # no results.json: nothing was decided, nor checked
        return {"state": "unchecked", "detail": None}
    if decision.get("gate") == CHECKING:
        return {"state": CHECKING, "detail": None}
    failed = check_failed(decision)
    if failed:
        return {"state": "failed", "detail": failed}
    return {"state": "clean" if decision.get("verified") else "unchecked", "detail": None}
