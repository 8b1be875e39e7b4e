"""Starting the viewer's gate worker process (`gate_worker` is the process's side). Imports
nothing heavy: view.py starts the process before its own imports, so the two import side by side;
`gates.start_worker` then waits until it says it is ready."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

READY = "ready"
PROCESS: list[subprocess.Popen] = []   # the running one, if any


def start() -> subprocess.Popen | None:
    """The worker process, started once (None when it cannot start: the server's thread decides)."""
    if PROCESS and PROCESS[0].poll() is None:
        return PROCESS[0]
    PROCESS.clear()
    root = str(Path(__file__).resolve().parents[2])   # the dir holding this `assay` package
    code = f"import sys; sys.path.insert(0, {root!r}); from assay.view.gate_worker import main; sys.exit(main())"
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    PROCESS.append(proc)
    return proc
