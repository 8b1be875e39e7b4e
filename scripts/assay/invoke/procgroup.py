"""A command in its own session: bounded capture, a wall-clock deadline, and a kill that
reaches every process the command started.

`run_in_session()` starts argv as the leader of a new session (so its process group id is
its pid), feeds stdin, reads stdout and stderr up to a cap each (the rest is read and
counted, never kept, so the child never blocks on a full pipe), and ends the case with no
process of the group left: at the deadline the group gets SIGTERM, then SIGKILL after a
grace; when the command exits on its own, whatever it left running in its group gets the
same treatment. `orphans.GroupRegistry` records each live group on disk so that a later runner
(`--resume` after the runner itself was killed) can kill the orphans of the earlier one.

A process that leaves the session (`setsid`, a double-forking daemon) leaves the group
too: no process-group kill reaches it. That is the limit of this mechanism.
"""

from __future__ import annotations

import errno
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import writer
from ..core.resources import is_runner_resource

if TYPE_CHECKING:
    from .orphans import GroupRegistry

OUTPUT_CAP_BYTES = 1 << 20          # per stream (stdout, stderr)
GRACE_S = 2.0                       # SIGTERM -> SIGKILL, shortened for short timeouts (grace_for)
DRAIN_S = 1.0                       # after the group is gone, how long a held pipe is waited for
_READ = 65536
PROC = Path("/proc")


def grace_for(timeout_s: float) -> float:
    """The SIGTERM -> SIGKILL grace: 2 s, or half the timeout when that is shorter (min 0.1 s)."""
    return max(0.1, min(GRACE_S, float(timeout_s) / 2.0))


@dataclass
class Stream:
    cap: int
    margin: int = 0   # kept past the cap so that a secret straddling it is redacted whole, then cut
    data: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap + self.margin - len(self.data)
        if room > 0:
            self.data += chunk[:room]

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def kept(self) -> bytes:
        """At most `cap` bytes: redacted, then cut (core.writer.clip_bytes)."""
        return writer.clip_bytes(bytes(self.data), self.cap) if self.truncated else bytes(self.data)


@dataclass
class ChildResult:
    """What one run of the command produced. `returncode` is None when it never started."""
    returncode: int | None = None
    timed_out: bool = False
    spawn_error: str | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    group_killed: bool = False      # processes of the group were still running and were killed
    pipe_held: bool = False         # a process outside the group kept stdout/stderr open
    latency_ms: float = 0.0

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


# ---------------------------------------------------------------- the group's members
def _stat_fields(pid: str) -> list[str] | None:
    """/proc/<pid>/stat split after the command name: [state, ppid, pgrp, session, ...]."""
    try:
        raw = (PROC / pid / "stat").read_bytes()
    except OSError:
        return None
    end = raw.rfind(b")")
    return raw[end + 2:].decode("ascii", "replace").split() if end > 0 else None


def group_members(pgid: int) -> list[int] | None:
    """Live (non-zombie) pids in process group `pgid`; None when /proc is not available."""
    if not PROC.is_dir():
        return None
    found = []
    try:
        names = os.listdir(PROC)
    except OSError:
        return None
    for name in names:
        if not name.isdigit():
            continue
        f = _stat_fields(name)
        if f and len(f) > 2 and f[2] == str(pgid) and f[0] not in ("Z", "X"):
            found.append(int(name))
    return found


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is still in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = group_members(pgid)
    return True if members is None else bool(members)


def signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def start_ticks(pid: int) -> int | None:
    f = _stat_fields(str(pid))
    try:
        return int(f[19]) if f and len(f) > 19 else None  # field 22 of stat: starttime
    except ValueError:
        return None


def boot_id() -> str | None:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


# ---------------------------------------------------------------- one run
def run_in_session(argv: list[str], *, env: dict[str, str], cwd: str | None, stdin_bytes: bytes | None,
                   timeout_s: float, cap: int = OUTPUT_CAP_BYTES, grace_s: float | None = None,
                   registry: GroupRegistry | None = None) -> ChildResult:
    """Run argv to completion or to the deadline; no process of its group outlives the call."""
    start = time.perf_counter()
    grace = grace_for(timeout_s) if grace_s is None else grace_s
    if registry is not None:   # recorded before the command exists: no window for a kill to lose it
        env = {**env, **registry.arm()}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, env=env,
                                start_new_session=True, close_fds=True)
    except OSError as exc:
        if is_runner_resource(exc):   # no descriptor for the pipes (or no disk): the runner's, not the app's
            raise
        return ChildResult(spawn_error=f"{type(exc).__name__}: {exc.strerror or exc}",
                           latency_ms=_ms(start))
    pgid = proc.pid  # start_new_session: the leader of its own session and process group
    try:
        if registry is not None:
            registry.add(pgid)
        result = _supervise(proc, pgid, stdin_bytes, start + float(timeout_s), cap, grace)
    except BaseException:
        signal_group(pgid, signal.SIGKILL)
        proc.kill()
        proc.wait()
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass
        if registry is not None:
            registry.remove(pgid)
    result.latency_ms = _ms(start)
    return result


def _supervise(proc: subprocess.Popen, pgid: int, stdin_bytes: bytes | None, deadline: float,
               cap: int, grace: float) -> ChildResult:
    out, err = Stream(cap, writer.read_margin()), Stream(cap, writer.read_margin())
    sel = selectors.DefaultSelector()
    streams = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    for fd in streams:
        sel.register(fd, selectors.EVENT_READ)
    pending = memoryview(stdin_bytes or b"")
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        if pending:
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
    pidfd = _pidfd(proc.pid)
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ)
    res = ChildResult()
    phase, phase_at, killed = "running", 0.0, False
    poll_wait = 0.001
    try:
        while True:
            now = time.perf_counter()
            if proc.returncode is None:
                proc.poll()
            if phase == "running":
                if proc.returncode is not None:
                    # The command is done; anything it left behind in its group is ended now.
                    if group_alive(pgid):
                        res.group_killed = True
                        signal_group(pgid, signal.SIGTERM)
                        phase, phase_at = "stopping", now
                    else:
                        phase, phase_at = "draining", now
                elif now >= deadline:
                    res.timed_out = True
                    signal_group(pgid, signal.SIGTERM)
                    phase, phase_at = "stopping", now
            if phase == "stopping":
                if proc.returncode is not None and not group_alive(pgid):
                    phase, phase_at = "draining", now
                elif not killed and now - phase_at >= grace:
                    signal_group(pgid, signal.SIGKILL)
                    killed, phase_at = True, now
                elif killed and now - phase_at >= DRAIN_S:
                    phase, phase_at = "draining", now  # only zombies or unkillable processes remain
            if phase == "draining" and (not streams or now - phase_at >= DRAIN_S):
                res.pipe_held = bool(streams)
                break
            if phase == "running":
                wait = deadline - now
                if pidfd is None:
                    wait = min(wait, poll_wait)
                    poll_wait = min(poll_wait * 2, 0.05)
            elif phase == "stopping":
                wait = 0.01
            else:
                wait = max(0.0, DRAIN_S - (now - phase_at))
            for key, _ in sel.select(timeout=max(wait, 0.0)):
                fd = key.fd
                if fd == pidfd:
                    sel.unregister(fd)
                    os.close(fd)
                    pidfd = None
                    proc.poll()
                elif fd in streams:
                    try:
                        chunk = os.read(fd, _READ)
                    except OSError as exc:
                        if exc.errno in (errno.EAGAIN, errno.EINTR):
                            continue
                        chunk = b""
                    if chunk:
                        streams[fd].add(chunk)
                    else:
                        sel.unregister(fd)
                        del streams[fd]
                else:  # stdin
                    try:
                        n = os.write(fd, pending[:_READ])
                        pending = pending[n:]
                    except BlockingIOError:
                        continue
                    except OSError:  # the child closed its stdin (or died): the rest is not wanted
                        pending = memoryview(b"")
                    if not pending:
                        sel.unregister(fd)
                        proc.stdin.close()
    finally:
        if pidfd is not None:
            os.close(pidfd)
        sel.close()
    if proc.returncode is None:
        proc.wait()
    res.returncode = proc.returncode
    res.stdout, res.stdout_bytes, res.stdout_truncated = out.kept(), out.total, out.truncated
    res.stderr, res.stderr_bytes, res.stderr_truncated = err.kept(), err.total, err.truncated
    return res


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when the child exits (Linux 5.3+), else None (polling)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
