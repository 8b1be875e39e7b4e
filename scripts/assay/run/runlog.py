"""run.log: JSONL events `{"ts", "event", ...}` (docs/runner-contract.md §10.5), appended line by line.

Events: preflight, case_start, case_done, retry, abort, finalize. Holdout cases are
logged by index, never by id. A line is written whole with one os.write on an
O_APPEND descriptor, so a kill leaves at most one torn last line (repaired by --resume).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Mapping

from ..core.jsonio import loads
from ..core.vocab import is_holdout
from ..core import writer
from ..core.ids import utc_now_iso

# json.dumps(row, sort_keys=True, ensure_ascii=False, default=str), its encoder built once (two events a case)
_ROW = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)

EVENTS = ("preflight", "order", "case_start", "case_done", "retry", "concurrency", "throughput", "abort", "late_spans", "finalize")


def case_ref(case: Mapping[str, Any], index: int) -> dict[str, Any]:
    """How run.log and progress name a case: holdout cases by plan index only."""
    if is_holdout(case):
        return {"holdout": True, "index": index}
    return {"case_id": case.get("id")}


class RunLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.fd = writer.open_append(path)  # never through a symlink

    def event(self, event: str, **fields: Any) -> None:
        assert event in EVENTS, event
        row = {"ts": utc_now_iso(), "event": event}
        row.update(fields)
        line = _ROW.encode(writer.redact_value(row)) + "\n"
        with self._lock:
            writer.append_all(self.fd, writer.encode(line), self.path)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None  # type: ignore[assignment]


def repair(path: Path) -> None:
    """Drop a torn (unterminated or unparseable) last line left by a killed runner."""
    if not path.exists() and not path.is_symlink():
        return
    data = writer.read_bytes(path)
    if not data:
        return
    lines = data.split(b"\n")
    keep = []
    for raw in lines:
        if not raw.strip():
            continue
        try:
            loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        keep.append(raw)
    fixed = b"".join(line + b"\n" for line in keep)
    if fixed != data:
        from ..core.jsonio import atomic_write_bytes
        atomic_write_bytes(path, fixed)
