"""Reading a verdicts_for_stats.jsonl file for stats.py: each unreadable thing named by file and line."""

from __future__ import annotations

import os

from ..core.errors import AssayError
from ..core.jsonio import loads


def read_verdicts_jsonl(path: str) -> list[dict]:
    """Rows of a verdicts_for_stats.jsonl file. Raises AssayError(2) naming the file and line
    of anything unreadable (missing file, not UTF-8, a line that is not a JSON object)."""

    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as err:
        if os.path.isdir(path):
            inside = os.path.join(path, "verdicts_for_stats.jsonl")
            hint = (f"pass a run's verdicts file, {inside}" if os.path.isfile(inside) else
                    "pass a run's verdicts file, <reports>/<run-id>/verdicts_for_stats.jsonl (or compare two run "
                    "directories with compare_runs.py)")
            raise AssayError(f"{path} is a directory: {hint}", 2, file=str(path)) from None
        raise AssayError(f"cannot read {path}: {err.strerror or err}", 2, file=str(path)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AssayError(f"{path}: not UTF-8 (byte {err.start})", 2, file=str(path)) from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads(line)
        except ValueError as err:
            raise AssayError(f"{path}:{number}: not valid JSON ({err}); each line must be "
                             '{"case_id": ..., "verdict": "pass"|"fail"}', 2, file=str(path), line=number) from None
        if not isinstance(row, dict):
            raise AssayError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}", 2,
                             file=str(path), line=number)
        rows.append(row)
    return rows
