"""run.log's part of the completeness check: every line JSON, read one line at a time."""

from __future__ import annotations

from pathlib import Path

from ..core import casestore
from ..core.jsonio import loads, loads_line


def why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)[:120]


def check_runlog(path: Path, problems: list[str]) -> None:
    if not path.is_file():
        return
    try:
        for _offset, raw in casestore.iter_lines(path):   # streamed: one line held at a time
            line = raw.decode("utf-8")
            if line.strip():
                loads_line(line)
        size = path.stat().st_size
        with open(path, "rb") as fh:   # a last line without its newline is a line too
            fh.seek(max(0, size - 1))
            if size and fh.read(1) != b"\n":
                fh.seek(0)
                tail = fh.read().rsplit(b"\n", 1)[-1].decode("utf-8")
                if tail.strip():
                    loads(tail)
    except (UnicodeDecodeError, ValueError):
        problems.append("run.log (a line is not JSON)")
    except OSError as exc:
        problems.append(f"run.log (unreadable: {why(exc)})")
