"""run.log's part of the completeness check: every line JSON, read one line at a time, and the first
event the runner's `preflight` (it writes that before anything else, on a start and on a --resume; a
merged run's log begins with its first shard's): an emptied or cut log is named, never a complete run."""

from __future__ import annotations

from pathlib import Path

from ..core import casestore
from ..core.jsonio import loads, loads_line

EMPTY = ("run.log (empty: the runner writes its preflight event before any case; restore the run's log from a "
         "copy, or run the cases again under a new run id)")
NOT_PREFLIGHT = ("run.log (its first event is not preflight, which the runner writes before any case: the log was cut "
                 "or replaced; restore it from a copy, or run the cases again under a new run id)")


def why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)[:120]


def check_runlog(path: Path, problems: list[str]) -> None:
    if not path.is_file():
        return
    first = None   # the first event, once a line held one
    seen = False
    try:
        for _offset, raw in casestore.iter_lines(path):   # streamed: one line held at a time
            line = raw.decode("utf-8")
            if line.strip():
                event = loads_line(line)
                if not seen:
                    first, seen = event, True
        size = path.stat().st_size
        with open(path, "rb") as fh:   # a last line without its newline is a line too
            fh.seek(max(0, size - 1))
            if size and fh.read(1) != b"\n":
                fh.seek(0)
                tail = fh.read().rsplit(b"\n", 1)[-1].decode("utf-8")
                if tail.strip():
                    event = loads(tail)
                    if not seen:
                        first, seen = event, True
    except (UnicodeDecodeError, ValueError):
        problems.append("run.log (a line is not JSON)")
        return
    except OSError as exc:
        problems.append(f"run.log (unreadable: {why(exc)})")
        return
    if not seen:
        problems.append(EMPTY)
    elif not (isinstance(first, dict) and first.get("event") == "preflight"):
        problems.append(NOT_PREFLIGHT)
