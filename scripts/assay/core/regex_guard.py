"""Regex search with a time bound that holds under concurrency and under load.

Case authors write regexes (`/re/` in `must_contain`, `result_pattern`, `id_pattern`),
and a catastrophic one (`(a+)+$` against `"a"*40 + "b"`) can run for hours. Python
cannot interrupt a running `re` match from another thread, and `signal.alarm` only
works on the main thread, so every search runs in a separate worker *process* that the
caller can kill.

Design:
- A small pool of long-lived worker processes (`python -S -I -c <stdlib-only loop>`,
  started with `subprocess`, so nothing of the caller's `__main__` is re-imported and
  it is safe to start from any thread). Each worker caches compiled patterns.
- A call checks out an idle worker (or starts one: a busy worker never delays another
  thread), sends `(op, pattern, text)` over its stdin as one length-prefixed JSON
  frame, and waits on its stdout with `select` while the search has used less than
  `timeout_s` of the worker's CPU time (read from /proc; at most 15 times `timeout_s` of
  wall clock; wall clock alone where /proc is absent): a catastrophic pattern burns CPU,
  while a trivial one on a machine at load 30 only waits for a core.
- On timeout the worker is killed and discarded (`RegexTimeout`); the next call starts
  a fresh one. Other threads hold other workers and are unaffected.
- A worker also arms `setitimer(ITIMER_PROF)` for `timeout_s + 5 s` of CPU time around
  each search with the default SIGPROF action (terminate), so a worker orphaned by a
  `kill -9` of its parent mid-search still dies; an idle orphan exits on stdin EOF.
- Workers are closed at interpreter exit (`atexit`), and a forked child never touches
  its parent's workers (the pool is keyed by pid).

Nothing is ever evaluated in-process: there is no "looks safe" fast path.
Cost: one pipe round trip per call (~0.07 ms on a warm worker, single thread; ~0.15 ms
wall per call from 8 threads on 2 cores); the first call in a process, and the first
after a timeout, also pays a worker start (~25 ms). Workers are created only as many as
were ever busy at once (about 10 MB each) and kept warm up to _MAX_IDLE.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import struct
import sys
import threading
import time
from typing import Any

DEFAULT_TIMEOUT_S = 2.0
_MAX_IDLE = 16  # workers kept warm between calls (only as many as were ever busy at once exist)
_MAX_WORKERS = 32  # hard cap; a caller waits for a free worker beyond it (wait is not search time)
_ORPHAN_GRACE_S = 5.0


class RegexProblem(Exception):
    """A regex could not be evaluated. `str(err)` is a reason fit for a check."""


class RegexTimeout(RegexProblem):
    """The search did not finish within its bound (a catastrophic pattern)."""


class RegexInvalid(RegexProblem):
    """The pattern does not compile (or names a group it does not have)."""


# The worker: stdlib only, run with -S -I so it starts fast and imports nothing of ours.
_WORKER_CODE = r"""
import json, re, signal, struct, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGALRM, signal.SIG_DFL)
rd, wr = sys.stdin.buffer, sys.stdout.buffer
cache = {}
def read_exact(n):
    buf = b""
    while len(buf) < n:
        chunk = rd.read(n - len(buf))
        if not chunk:
            sys.exit(0)
        buf += chunk
    return buf
while True:
    (size,) = struct.unpack(">I", read_exact(4))
    op, pattern, text, budget = json.loads(read_exact(size).decode("utf-8"))
    try:
        rx = cache.get(pattern)
        if rx is None:
            rx = re.compile(pattern)
            if len(cache) > 256:
                cache.clear()
            cache[pattern] = rx
        if op == "group" and rx.groups < 1:
            raise IndexError("the pattern has no capture group 1")
        signal.setitimer(signal.ITIMER_PROF, budget)
        try:
            m = rx.search(text)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        if op == "search":
            out = ["ok", m is not None]
        else:
            out = ["ok", None if m is None else m.group(1)]
    except (re.error, IndexError) as exc:
        out = ["invalid", str(exc)]
    except Exception as exc:
        out = ["error", type(exc).__name__ + ": " + str(exc)]
    body = json.dumps(out).encode("utf-8")
    wr.write(struct.pack(">I", len(body)) + body)
    wr.flush()
"""


try:
    _CLK_TCK = os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _CLK_TCK = 100
# On a loaded machine a worker may wait for a core far longer than it searches: the bound is the
# search's CPU time (where /proc tells it), and wall time only up to this many times the bound.
_WALL_FACTOR = 15.0


class _Bound:
    """How long a search may still take: `timeout_s` of the worker's CPU time, measured from the
    request, and at most `_WALL_FACTOR` times it of wall clock (where CPU time cannot be read, the
    bound is wall clock alone). A catastrophic pattern burns CPU and is stopped after `timeout_s` of
    it; a trivial one on a machine at load 30 is not called catastrophic for waiting its turn."""

    def __init__(self, worker: "_Worker", timeout_s: float) -> None:
        self.worker, self.timeout_s = worker, timeout_s
        self.start = time.monotonic()
        self.cpu0 = worker.cpu_seconds()
        self.wall_cap = self.start + timeout_s * (_WALL_FACTOR if self.cpu0 is not None else 1.0)

    def remaining(self) -> float:
        now = time.monotonic()
        if now >= self.wall_cap:
            return 0.0
        if self.cpu0 is None:
            return self.wall_cap - now
        cpu = self.worker.cpu_seconds()
        if cpu is None:
            return max(0.0, self.start + self.timeout_s - now)
        left = self.timeout_s - (cpu - self.cpu0)
        return 0.0 if left <= 0 else min(left, self.wall_cap - now, 0.25)


class _Worker:
    def __init__(self) -> None:
        import subprocess   # here: a run whose cases hold no pattern never starts a worker (bench/startup.py)
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-I", "-c", _WORKER_CODE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, bufsize=0,
        )
        self.out_fd = self.proc.stdout.fileno()  # type: ignore[union-attr]

    def send(self, frame: bytes) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        view = memoryview(frame)
        while view:
            written = stdin.write(view)
            view = view[written or 0:]

    def cpu_seconds(self) -> float | None:
        """The worker's CPU time so far (user + system), or None where /proc cannot say."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / _CLK_TCK
        except (OSError, ValueError, IndexError):
            return None

    def receive(self, bound: "_Bound") -> Any:
        header = self._read(4, bound)
        (size,) = struct.unpack(">I", header)
        return json.loads(self._read(size, bound).decode("utf-8"))

    def _read(self, n: int, bound: "_Bound") -> bytes:
        buf = bytearray()
        while len(buf) < n:
            remaining = bound.remaining()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([self.out_fd], [], [], remaining)
            if not ready:
                continue   # bound.remaining() decides: the search's CPU time, not the machine's load
            chunk = os.read(self.out_fd, n - len(buf))
            if not chunk:
                raise BrokenPipeError("regex worker exited")
            buf += chunk
        return bytes(buf)

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        self._reap()

    def eof(self) -> None:
        """Close the worker's stdin: it exits (close() then waits for it)."""
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass

    def close(self) -> None:
        import subprocess   # loaded by __init__ already
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]  # EOF: the worker exits (again: a no-op)
            self.proc.wait(timeout=0.5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
            return
        self._reap()

    def _reap(self) -> None:
        import subprocess
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass


class _Pool:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self._cond = threading.Condition()
        self._idle: list[_Worker] = []
        self._live = 0  # workers alive or starting, idle or busy
        self._busy: set[_Worker] = set()

    def acquire(self) -> _Worker:
        with self._cond:
            while True:
                if self._idle:
                    worker = self._idle.pop()
                    self._busy.add(worker)
                    return worker
                if self._live < _MAX_WORKERS:
                    self._live += 1
                    break
                self._cond.wait()
        try:
            worker = _Worker()
        except BaseException:
            with self._cond:
                self._live -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._busy.add(worker)
        return worker

    def release(self, worker: _Worker, healthy: bool) -> None:
        close = not healthy
        with self._cond:
            self._busy.discard(worker)
            if healthy and len(self._idle) < _MAX_IDLE:
                self._idle.append(worker)
            else:
                close = True
                self._live -= 1
            self._cond.notify()
        if close:
            worker.kill() if not healthy else worker.close()

    def shutdown(self) -> None:
        with self._cond:
            idle, busy = self._idle, list(self._busy)
            self._idle, self._busy = [], set()
            self._live = 0
        # EOF to every idle worker first, then wait: they exit in parallel (one by one, 10+
        # workers cost a run ~25 ms at its end)
        for worker in idle:
            worker.eof()
        for worker in idle:
            worker.close()
        for worker in busy:
            worker.kill()


_pool: _Pool | None = None
_pool_lock = threading.Lock()
_atexit_registered = False


def _get_pool() -> _Pool:
    global _pool, _atexit_registered
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            _pool = _Pool()  # a forked child starts its own; it never touches the parent's workers
            if not _atexit_registered:
                atexit.register(shutdown)
                _atexit_registered = True
        return _pool


def shutdown() -> None:
    """Close every worker of this process's pool (also runs at interpreter exit)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None and pool.pid == os.getpid():
        pool.shutdown()


def _call(op: str, pattern: str, text: str, timeout_s: float) -> Any:
    if not isinstance(pattern, str) or not isinstance(text, str):
        raise TypeError("pattern and text must be str")
    if not timeout_s > 0:
        raise ValueError("timeout_s must be > 0")
    frame_body = json.dumps([op, pattern, text, timeout_s + _ORPHAN_GRACE_S]).encode("utf-8")
    frame = struct.pack(">I", len(frame_body)) + frame_body
    pool = _get_pool()
    for attempt in (1, 2):  # a worker that died while idle is replaced once
        worker = pool.acquire()
        healthy = False
        try:
            worker.send(frame)
            status, value = worker.receive(_Bound(worker, timeout_s))  # the bound counts search time only
            healthy = True
        except TimeoutError:
            raise RegexTimeout(f"regex timed out after {timeout_s:g} s: {pattern!r}") from None
        except (BrokenPipeError, ConnectionError, OSError, ValueError, struct.error):
            if attempt == 2:
                raise RegexProblem(f"regex worker failed on {pattern!r}") from None
            continue
        finally:
            pool.release(worker, healthy)
        if status == "ok":
            return value
        if status == "invalid":
            raise RegexInvalid(f"invalid regex {pattern!r}: {value}")
        raise RegexProblem(f"regex {pattern!r} could not be evaluated: {value}")
    raise AssertionError("unreachable")


def bounded_search(pattern: str, text: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> bool:
    """`re.search(pattern, text) is not None`, bounded to `timeout_s` of wall clock.

    Raises RegexTimeout past the bound, RegexInvalid when the pattern does not compile.
    Thread-safe: a catastrophic search in one thread never delays another's.
    """
    return bool(_call("search", pattern, text, timeout_s))


def bounded_group(pattern: str, text: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> str | None:
    """Group 1 of the first `re.search` match (None when there is no match or group 1 did
    not participate), with the same bound and errors as `bounded_search`. A pattern
    without a group 1 is RegexInvalid."""
    return _call("group", pattern, text, timeout_s)
