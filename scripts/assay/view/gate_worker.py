"""The viewer's gate decisions in a process of their own (`gate_process.start` starts it).

It reads one run dir per line on stdin (a JSON string) and writes one line to stdout per run dir:
`gates.decide(run_dir)` as JSON, which is `assay.verdict.decision_dict` with the viewer's options
(the one verdict: nothing here decides). It says `ready` once its imports are done, and exits at
the end of stdin, so it ends with the server however the server ends. Its own interpreter: a
10,000-case decision never shares one with the requests the server is answering, nor with its
per-case pass; and it runs a little below the server's priority (`NICE`).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
from pathlib import Path

from .gate_process import READY
from .gates import decide

# Below the server's priority: a request that comes while a decision is being made goes first.
NICE = 5
# what the decision imports as it goes: imported before the process says it is ready
WARM = ("assay.report.gate", "assay.report.gate_lines", "assay.report.gate_trust", "assay.report.gate_judge",
        "assay.stats.budgets", "assay.stats.cost", "assay.stats.cost_budget", "assay.stats.counts",
        "assay.stats.pairwise", "assay.rundir.streamed", "assay.judge.binding", "assay.core.strict_yaml",
        "assay.schemas.checked")


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C stops the server; this ends with its stdin
    out = sys.stdout.fileno()
    sys.stdout = sys.stderr   # nothing but the answers ever reaches the server's pipe
    for name in WARM:
        try:
            importlib.import_module(name)
        except ImportError:   # a warm-up only: the decision imports what it needs itself
            pass
    try:
        os.nice(NICE)   # after the imports: the server waits for those before it serves
    except (AttributeError, OSError):   # no nice here: the same decisions, at the server's priority
        pass
    if not _say(out, READY + "\n"):
        return 0
    for line in sys.stdin:
        try:
            run_dir = json.loads(line)
        except ValueError:
            return 2
        if not isinstance(run_dir, str):
            return 2
        if not _say(out, json.dumps(decide(Path(run_dir)), default=str) + "\n"):
            return 0
    return 0


def _say(fd: int, text: str) -> bool:
    """Write a whole line to the server; False when it is gone."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        return False
    return True
