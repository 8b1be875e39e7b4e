"""Timing one child process honestly, and summarizing repetitions.

``timed_child`` starts a command, waits for it with ``os.wait4`` (so the CPU time
and peak RSS belong to that child alone, not to every child this process ever
had, which is what ``RUSAGE_CHILDREN`` would give), and returns wall seconds,
user/sys CPU seconds and ``ru_maxrss`` in MB (Linux reports KiB).

The peak RSS needs one more step. Linux's ``ru_maxrss`` of a child is the larger of its own
peak and the resident size of the address space it replaced at ``exec``: a child started
(fork, vfork or posix_spawn) straight from this process reports at least THIS process's size,
which grows with the plan a benchmark builds (a 30,000-case bench process is ~110 MB, so the
runner "peaked" at 110 MB while its own high-water mark was 77 MB). So, unless the caller needs
the child's pid itself (``on_start``: a bench that kills the run mid-way), the command is started
by a small launcher (``LAUNCHER``: a fresh ``python -S``) that forks it from its own small
address space and reports the command's wall time and rusage.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence


@dataclass
class ChildRun:
    argv: list[str]
    rc: int
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_mb: float
    stdout: str
    stderr: str
    tree_pss_mb: float | None = None   # the launcher's sampled peak of the whole process tree's Pss (see LAUNCHER)

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    def brief(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("stdout")
        d.pop("stderr")
        d["cpu_s"] = self.cpu_s
        return d


# argv: report-file command...; forks the command (inheriting stdio, env, cwd), waits, writes
# [exit status, wall s, user s, sys s, maxrss KiB, tree peak KiB], exits 0. Killed with its process group.
# maxrss is the largest single process of the command's tree (Linux's ru_maxrss of a waited child);
# a command that forks workers (the completeness check on two processes) holds memory in several at
# once, so every 50 ms the launcher also sums the proportional set size (Pss: a page shared by n
# processes counts 1/n in each, so a fork's shared pages are counted once) of the command and its
# descendants (/proc/<pid>/task/*/children, /proc/<pid>/smaps_rollup; VmRSS where that is missing,
# an upper bound). Its peak is what the tree held at once, to the sampling interval.
LAUNCHER = (
    "import json, os, sys, time\n"
    "def size(p):\n"
    "    for name, key in (('smaps_rollup', 'Pss:'), ('status', 'VmRSS:')):\n"
    "        try:\n"
    "            with open(f'/proc/{p}/{name}') as f:\n"
    "                return next((int(l.split()[1]) for l in f if l.startswith(key)), 0)\n"
    "        except (OSError, ValueError):\n"
    "            pass\n"
    "    return 0\n"
    "def tree(pid):\n"
    "    total, todo = 0, [pid]\n"
    "    while todo:\n"
    "        p = todo.pop()\n"
    "        total += size(p)\n"
    "        try:\n"
    "            for t in os.listdir(f'/proc/{p}/task'):\n"
    "                with open(f'/proc/{p}/task/{t}/children') as f:\n"
    "                    todo.extend(int(c) for c in f.read().split())\n"
    "        except (OSError, ValueError):\n"
    "            pass\n"
    "    return total\n"
    "t = time.perf_counter()\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execvp(sys.argv[2], sys.argv[2:])\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "peak = 0\n"
    "while True:\n"
    "    done, st, ru = os.wait4(pid, os.WNOHANG)\n"
    "    if done:\n"
    "        break\n"
    "    peak = max(peak, tree(pid))\n"
    "    time.sleep(0.05)\n"
    "w = time.perf_counter() - t\n"
    "with open(sys.argv[1], 'w') as f:\n"
    "    json.dump([st, w, ru.ru_utime, ru.ru_stime, ru.ru_maxrss, peak], f)\n"
)


def timed_child(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                log_dir: Path | None = None, timeout_s: float = 1800,
                on_start: Callable[[subprocess.Popen], None] | None = None) -> ChildRun:
    """Run ``argv`` to completion; stdout/stderr go to files (no pipe can fill and stall it).
    Through the launcher (a clean peak RSS, see above) unless ``on_start`` is given."""
    log_dir = Path(log_dir) if log_dir else None
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    out_path = (log_dir / "stdout.txt") if log_dir else None
    err_path = (log_dir / "stderr.txt") if log_dir else None
    out_f = open(out_path, "w+b") if out_path else subprocess.DEVNULL
    err_f = open(err_path, "w+b") if err_path else subprocess.DEVNULL
    import tempfile
    fd, report = tempfile.mkstemp(prefix="assay-bench-launch-", suffix=".json")
    os.close(fd)
    launched = on_start is None
    cmd = [sys.executable, "-S", "-c", LAUNCHER, report, *map(str, argv)] if launched else list(argv)
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd, start_new_session=launched)
        if on_start is not None:
            on_start(proc)
        # A blocking wait4 releases the GIL (the app's threads in this process keep serving);
        # a timer kills a runaway child (and the launcher's) so a hung run cannot stall the benchmark.
        killer = threading.Timer(timeout_s, (lambda: os.killpg(proc.pid, 9)) if launched else proc.kill)
        killer.daemon = True
        killer.start()
        try:
            _pid, status, ru = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        user, system, maxrss = ru.ru_utime, ru.ru_stime, ru.ru_maxrss
        tree_mb = None
        if launched:
            import json
            try:
                with open(report) as f:
                    st, wall, user, system, maxrss, tree_kib = json.load(f)
                tree_mb = tree_kib / 1024.0 if tree_kib else None   # None: over before the first sample
                proc.returncode = os.waitstatus_to_exitcode(st)
            except (OSError, ValueError):   # the launcher was killed (the timeout): no report
                proc.returncode = proc.returncode or -9
    finally:
        try:
            os.unlink(report)
        except OSError:
            pass
        for f in (out_f, err_f):
            if hasattr(f, "close"):
                f.close()
    stdout = out_path.read_text("utf-8", "replace") if out_path else ""
    stderr = err_path.read_text("utf-8", "replace") if err_path else ""
    return ChildRun(list(map(str, argv)), proc.returncode, wall, user, system, maxrss / 1024.0, stdout, stderr,
                    tree_mb)


def summarize(values: Sequence[float]) -> dict[str, Any]:
    """Median and spread of repetitions (min, max, and the relative spread (max-min)/median)."""
    vals = [float(v) for v in values]
    if not vals:
        return {"n": 0, "median": None, "min": None, "max": None, "spread_pct": None, "values": []}
    med = statistics.median(vals)
    return {
        "n": len(vals),
        "median": med,
        "min": min(vals),
        "max": max(vals),
        "spread_pct": (100.0 * (max(vals) - min(vals)) / med) if med else None,
        "values": vals,
    }


def machine_info(node_version: str | None) -> dict[str, Any]:
    mem_mb = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem_mb = int(line.split()[1]) // 1024
    except OSError:
        pass
    cpu_model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu_model": cpu_model,
        "memory_mb": mem_mb,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "python_executable_is_venv": sys.prefix != sys.base_prefix,
        "node": node_version,
    }


def emit_json(doc: dict[str, Any], path: "Path | str | None") -> None:
    """A bench's result: printed on stdout, and written to `path` (its --json) when given."""
    import json
    text = json.dumps(doc, indent=2)
    print(text)
    if path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
