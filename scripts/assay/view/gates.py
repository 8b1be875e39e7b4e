"""The gate's decision per run, for the viewer: `assay.report.gate.evaluate` (the gate's own
function, without the `run_cases.py --verify` subprocess), computed once per results.json version
on one worker thread, never on the request that first asks. Until it is known a page says
"checking…": the viewer never shows a verdict it has not computed.

The worker takes the newest request first (a LIFO queue), so the run a person just opened is
evaluated before a backlog of the runs list, and starts each evaluation only once no request is
being answered (`quiet`).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from pathlib import Path

from ..core.errors import AssayError
from ..report.gate import evaluate
from .quiet import wait_quiet, waiting

CHECKING = "checking"
WAIT_MAX_S = 5.0
_FUTURES: dict[tuple[str, float], Future] = {}
_LOCK = threading.Lock()
_JOBS: queue.LifoQueue = queue.LifoQueue()
_WORKER: list[threading.Thread] = []


def decide(run_dir: Path) -> dict:
    """The gate's decision: open or closed with its reasons (an unreadable run is closed)."""
    try:
        res = evaluate(run_dir, verify=False)
    except AssayError as exc:
        return {"gate": "closed", "reasons": [str(exc)], "verified": False}
    except (OSError, ValueError, RecursionError) as exc:
        return {"gate": "closed", "reasons": [f"unreadable run files ({type(exc).__name__})"], "verified": False}
    return {"gate": "open" if res.open else "closed", "reasons": list(res.reasons), "verified": False,
            "in_progress": getattr(res, "in_progress", None)}


def _work() -> None:
    while True:
        run_dir, fut = _JOBS.get()
        wait_quiet()
        if fut.set_running_or_notify_cancel():
            try:
                fut.set_result(decide(run_dir))
            except BaseException as exc:  # noqa: BLE001 - a failed evaluation is a closed gate, said
                fut.set_result({"gate": "closed", "reasons": [f"the gate could not be evaluated ({type(exc).__name__})"],
                                "verified": False})


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
