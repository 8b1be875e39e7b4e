"""The gate's decision per run, for the viewer: the one decision (`assay.verdict.decide`, with
gate.py's defaults — profile.yaml's budgets included — except the completeness re-check, which
`gate.py` runs and the page says it did not: `verified: false`), computed once per results.json
version on one worker thread, never on the request that first asks. Until it is known a page says
"checking…": the viewer never shows a verdict it has not computed.

The worker takes the newest request first (a LIFO queue), so the run a person just opened is
evaluated before a backlog of the runs list, and starts each evaluation only once no request is
being answered (`quiet`).
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future
from pathlib import Path

from ..verdict import GateOptions, decision_dict
from .quiet import wait_quiet, waiting

CHECKING = "checking"
VIEW_OPTIONS = GateOptions(verify=False)   # a 100,000-case run re-checks in ~30 s: gate.py's job, said on the page
WAIT_MAX_S = 5.0
_FUTURES: dict[tuple[str, float], Future] = {}
_LOCK = threading.Lock()
_JOBS: queue.LifoQueue = queue.LifoQueue()
_WORKER: list[threading.Thread] = []


def decide(run_dir: Path) -> dict:
    """The gate's decision: open or closed with its reasons (an unreadable run is closed)."""
    return decision_dict(run_dir, VIEW_OPTIONS)


def _work() -> None:
    while True:
        run_dir, fut = _JOBS.get()
        wait_quiet()
        if fut.set_running_or_notify_cancel():
            fut.set_result(decide(run_dir))   # decision_dict never raises: an unreadable run is closed


def _future(run_dir: Path, mtime: float) -> Future:
    key = (str(run_dir), mtime)
    with _LOCK:
        fut = _FUTURES.get(key)
        if fut is None:
            fut = _FUTURES[key] = Future()
            _JOBS.put((run_dir, fut))
            if not _WORKER:
                _WORKER.append(threading.Thread(target=_work, name="assay-view-gate", daemon=True))
                _WORKER[0].start()
        return fut


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


def gate_of(run_dir: Path) -> dict:
    """The decision for a run dir, waited for (the history page: one per run it draws)."""
    try:
        mtime = os.stat(Path(run_dir) / "results.json", follow_symlinks=False).st_mtime
    except OSError:
        return decide(run_dir)   # no results.json: the decision says why it is closed
    return gate(Path(run_dir), mtime, wait=None)
