"""A computation in a forked process: `Child(work)` runs `work()` in a child of this process (its
memory shared copy-on-write), and `result()` is the value it returned (pickled back through a
pipe), or None on any failure (killed, an exception, a short answer), so the caller computes it
itself. Used where a reader of a big run splits independent work over two CPUs: the completeness
check (rundir.parallel) and a comparison's pairs (compare.pair_all).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def fork_safe() -> bool:
    """A fork is possible and safe here: no other thread (a lock another thread holds at the fork
    would be held forever in the child)."""
    return hasattr(os, "fork") and threading.active_count() == 1


class Child:
    """A forked process computing `work()` (a picklable value); `result()` is it, or None on any failure."""

    def __init__(self, work: Callable[[], Any]) -> None:
        import pickle   # in the parent, before the fork: only a check big enough to fork pays for it
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:   # the child: compute, send, and leave without running this process's cleanup
            status = 1
            try:
                os.close(read_end)
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                view = memoryview(data)
                while view:
                    view = view[os.write(write_end, view):]
                status = 0
            except BaseException:   # noqa: BLE001 -- any failure is a None answer; the parent re-checks
                pass
            finally:
                os._exit(status)
        os.close(write_end)
        self._fd = read_end

    def result(self) -> Any:
        chunks = []
        try:
            while True:
                chunk = os.read(self._fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        except OSError:
            chunks = []
        finally:
            os.close(self._fd)
            self._fd = -1
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if status != 0 or not chunks:
            return None
        import pickle
        try:
            return pickle.loads(b"".join(chunks))
        except Exception:   # noqa: BLE001 -- a short or garbled answer: None
            return None

    def cancel(self) -> None:
        """Stop and reap the child when its answer is not wanted (an exception in the parent)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if self.pid:
            try:
                os.kill(self.pid, 9)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.pid = 0
