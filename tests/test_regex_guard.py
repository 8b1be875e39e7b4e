"""assay.core.regex_guard: bounded regex search in worker processes, safe under threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from helpers import SCRIPTS
from assay.core import regex_guard
from assay.core.regex_guard import (
    RegexInvalid, RegexProblem, RegexTimeout, bounded_group, bounded_search,
)

CATASTROPHIC = r"(a+)+$"
CATASTROPHIC_TEXT = "a" * 40 + "b"


def test_search_matches_like_re_search():
    assert bounded_search(r"\d+ EUR", "refund of 42 EUR") is True
    assert bounded_search(r"^EUR", "refund of 42 EUR") is False
    assert bounded_search(r"(?i)REFUND", "refund") is True
    assert bounded_search("", "") is True


def test_group_one():
    assert bounded_group(r"total: (\d+)", "the total: 42.") == "42"
    assert bounded_group(r"total: (\d+)", "no total here") is None
    assert bounded_group(r"a(b)?", "a") is None  # group 1 did not participate


def test_group_without_capture_group_is_invalid():
    with pytest.raises(RegexInvalid, match="no capture group 1"):
        bounded_group(r"total", "total")


def test_invalid_pattern_raises_regex_invalid():
    with pytest.raises(RegexInvalid) as info:
        bounded_search("(", "x")
    assert isinstance(info.value, RegexProblem)
    assert "missing )" in str(info.value)


def test_text_is_not_limited_to_ascii_or_small_sizes():
    assert bounded_search("é", "caf\u00e9") is True
    assert bounded_search("x$", "\ud800" + "a" * 200_000 + "x") is True  # lone surrogate, > pipe buffer


def test_non_string_arguments_are_rejected():
    with pytest.raises(TypeError):
        bounded_search(b"a", "a")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        bounded_search("a", "a", timeout_s=0)


def test_catastrophic_pattern_times_out_and_the_pool_recovers():
    with pytest.raises(RegexTimeout) as info:
        bounded_search(CATASTROPHIC, CATASTROPHIC_TEXT, timeout_s=0.5)
    assert isinstance(info.value, RegexProblem)
    assert "timed out after 0.5 s" in str(info.value)
    # The killed worker was replaced: the next search works.
    assert bounded_search("b$", CATASTROPHIC_TEXT) is True


def test_catastrophic_search_does_not_stall_other_threads():
    started = threading.Event()
    finished = threading.Event()
    outcome: dict[str, object] = {}

    def catastrophic() -> None:
        started.set()
        try:
            bounded_search(CATASTROPHIC, CATASTROPHIC_TEXT)  # default 2 s bound
        except RegexTimeout as err:
            outcome["error"] = err
        finally:
            finished.set()

    thread = threading.Thread(target=catastrophic)
    thread.start()
    started.wait()
    # Wait until the catastrophic search holds a worker, then search from other threads.
    pool = regex_guard._get_pool()
    for _ in range(400):
        if pool._busy:
            break
        time.sleep(0.005)
    results: list[bool] = []

    def quick() -> None:
        for i in range(20):
            results.append(bounded_search(rf"case-{i}\b", f"this is case-{i} here"))

    others = [threading.Thread(target=quick) for _ in range(4)]
    for t in others:
        t.start()
    for t in others:
        t.join()
    # Every other search finished, correctly, while the catastrophic one was still running:
    # had they waited on its worker, they could only have returned after its 2 s bound.
    still_running = not finished.is_set()
    thread.join()
    assert results == [True] * 80
    assert still_running
    assert isinstance(outcome.get("error"), RegexTimeout)


def test_workers_are_closed_at_interpreter_exit(tmp_path):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from assay.core import regex_guard as g\n"
        "assert g.bounded_search('a', 'a')\n"
        "print(' '.join(str(w.proc.pid) for w in g._get_pool()._idle), flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(SCRIPTS)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    pids = [int(p) for p in proc.stdout.split()]
    assert pids, "expected one idle worker to have been started"
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        if alive:
            time.sleep(0.05)
    assert alive == [], f"regex workers outlived their interpreter: {alive}"


def test_worker_orphaned_mid_search_by_kill_9_still_dies(tmp_path):
    # The child runs a catastrophic search in a thread, prints the busy worker's pid and
    # waits; we kill -9 the child. The worker's own timer (bound + grace, grace 0 here)
    # must end it: nothing is left burning CPU after a killed runner.
    code = (
        "import sys, threading, time; sys.path.insert(0, sys.argv[1])\n"
        "from assay.core import regex_guard as g\n"
        "g._ORPHAN_GRACE_S = 0.0\n"
        "t = threading.Thread(target=lambda: g.bounded_search(r'(a+)+$', 'a' * 40 + 'b', timeout_s=1.0), daemon=True)\n"
        "t.start()\n"
        "pool = g._get_pool()\n"
        "while not pool._busy: time.sleep(0.01)\n"
        "print(next(iter(pool._busy)).proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code, str(SCRIPTS)], stdout=subprocess.PIPE, text=True)
    try:
        worker_pid = int(child.stdout.readline())
        assert _alive(worker_pid)
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    deadline = time.monotonic() + 15
    while _alive(worker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker_pid), "an orphaned regex worker kept running"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); treat it as gone (it no longer runs).
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def test_shutdown_then_reuse():
    assert bounded_search("a", "a") is True
    regex_guard.shutdown()
    assert bounded_search("b", "abc") is True


def test_the_bound_is_the_searchs_cpu_time_not_the_machines_load():
    """On a loaded machine a worker waits for a core far longer than it searches: 5 s of wall clock
    with no CPU used is not a timeout; 2.5 s of CPU is, whatever the wall clock says."""
    from assay.core import regex_guard as rg

    class Starved:
        cpu = 1.0

        def cpu_seconds(self):
            return self.cpu

    worker = Starved()
    bound = rg._Bound(worker, 2.0)
    bound.start -= 5.0                     # 5 s of wall clock have passed, the worker never ran
    assert bound.remaining() > 0
    worker.cpu = 3.5                       # 2.5 s of CPU: a catastrophic search
    assert bound.remaining() == 0
    worker.cpu = 1.0
    bound.wall_cap = bound.start           # past the wall-clock cap (15 x the bound): stopped anyway
    assert bound.remaining() == 0
