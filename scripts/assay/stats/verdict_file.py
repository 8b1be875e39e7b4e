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
        text = raw.decode("utf-8-sig")   # a file saved with a UTF-8 BOM (as some Windows editors do) is UTF-8
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


def holdout_beside(path: str, which: str = "holdout") -> list[str]:
    """The holdout case ids of the run a verdicts_for_stats.jsonl file sits in, in plan order: from the
    run's verdicts.jsonl (each row's `holdout`), else its manifest.yaml (`set: holdout`); [] when the
    file is not in a run dir. A run dir whose files cannot say is an error: its ids may be sealed.
    `which="canary"`: its canary ids the same way (a canary is no pair of the paired statistics)."""
    what = "sealed holdout cases" if which == "holdout" else f"{which} cases"
    run = os.path.dirname(os.path.abspath(path))
    verdicts, manifest = os.path.join(run, "verdicts.jsonl"), os.path.join(run, "manifest.yaml")
    if os.path.isfile(verdicts):   # streamed, each row dropped once read: 100,000 rows are never held
        return [cid for cid in _holdout_rows(verdicts, which, what)]
    if not os.path.isfile(manifest):
        return []
    try:
        with open(manifest, "rb") as fh:
            doc = loads(fh.read().decode("utf-8"))
        cases = doc.get("cases") or []
        return [c["id"] for c in cases if isinstance(c, dict) and c.get("set") == which and isinstance(c.get("id"), str)]
    except (OSError, ValueError, AttributeError, TypeError) as err:
        raise AssayError(f"{manifest}: unreadable ({err}), so which of {path}'s cases are {what} "
                         "cannot be told; restore the run's manifest.yaml or verdicts.jsonl", 2, file=manifest) from None


def _holdout_rows(path: str, which: str = "holdout", what: str = "sealed holdout cases"):
    """The case ids of a verdicts.jsonl's rows marked `which` (holdout, canary), one line at a time;
    AssayError(2) naming the file and line of a line that is not a JSON object."""
    key = f'"{which}"'.encode()
    try:
        fh = open(path, "rb")
    except OSError as err:
        raise AssayError(f"cannot read {path}: {err.strerror or err}", 2, file=str(path)) from None
    with fh:
        for number, raw in enumerate(fh, 1):
            if not raw.strip() or (raw.count(key) == 1 and key + b': false' in raw):
                continue   # the runner's row of a case that is not one: its one key says so
            try:
                row = loads(raw.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as err:
                raise AssayError(f"{path}:{number}: not valid JSON ({err}), so which cases are {what} "
                                 "cannot be told; restore the run's verdicts.jsonl", 2, file=str(path),
                                 line=number) from None
            if isinstance(row, dict) and row.get(which) is True and isinstance(row.get("case_id"), str):
                yield row["case_id"]
