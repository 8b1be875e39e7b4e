"""run.log's part of the completeness check: every line JSON, read one line at a time."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core import casestore
from ..core.jsonio import loads


def why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)[:120]


# what jsonio.loads refuses and json.loads takes: NaN / Infinity, a number too big for a double
# (an exponent, or 300+ digits), an escaped surrogate; a line holding none of them needs no hooks
_LOADS_ONLY = re.compile(rb"NaN|Infinity|[0-9][eE]|[0-9]{300}|\\u[dD][89a-fA-F]")


def _json_line(line: str, raw: bytes) -> None:
    """`jsonio.loads(line)` (ValueError when it is not JSON), the plain C parse for a line that holds
    nothing the two could disagree on (run.log: 100,000+ lines at 100,000 cases)."""
    if _LOADS_ONLY.search(raw):
        loads(line)
        return
    try:
        json.loads(line)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def check_runlog(path: Path, problems: list[str]) -> None:
    if not path.is_file():
        return
    try:
        for _offset, raw in casestore.iter_lines(path):   # streamed: one line held at a time
            line = raw.decode("utf-8")
            if line.strip():
                _json_line(line, raw)
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
