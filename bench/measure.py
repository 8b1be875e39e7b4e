"""Timing one child process honestly, and summarizing repetitions.

``timed_child`` starts a command, waits for it with ``os.wait4`` (so the CPU time
and peak RSS belong to that child alone, not to every child this process ever
had, which is what ``RUSAGE_CHILDREN`` would give), and returns wall seconds,
user/sys CPU seconds and ``ru_maxrss`` in MB (Linux reports KiB).
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

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    def brief(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("stdout")
        d.pop("stderr")
        d["cpu_s"] = self.cpu_s
        return d


def timed_child(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                log_dir: Path | None = None, timeout_s: float = 1800,
                on_start: Callable[[subprocess.Popen], None] | None = None) -> ChildRun:
    """Run ``argv`` to completion; stdout/stderr go to files (no pipe can fill and stall it)."""
    log_dir = Path(log_dir) if log_dir else None
    if log_dir:
        log_dir.mkdir(parents=True, exist_ok=True)
    out_path = (log_dir / "stdout.txt") if log_dir else None
    err_path = (log_dir / "stderr.txt") if log_dir else None
    out_f = open(out_path, "w+b") if out_path else subprocess.DEVNULL
    err_f = open(err_path, "w+b") if err_path else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out_f, stderr=err_f, stdin=subprocess.DEVNULL,
                                env=env, cwd=cwd)
        if on_start is not None:
            on_start(proc)
        # A blocking wait4 releases the GIL (the app's threads in this process keep serving);
        # a timer kills a runaway child so a hung run cannot stall the whole benchmark.
        killer = threading.Timer(timeout_s, proc.kill)
        killer.daemon = True
        killer.start()
        try:
            _pid, status, ru = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        for f in (out_f, err_f):
            if hasattr(f, "close"):
                f.close()
    stdout = out_path.read_text("utf-8", "replace") if out_path else ""
    stderr = err_path.read_text("utf-8", "replace") if err_path else ""
    return ChildRun(list(map(str, argv)), proc.returncode, wall, ru.ru_utime, ru.ru_stime,
                    ru.ru_maxrss / 1024.0, stdout, stderr)


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
