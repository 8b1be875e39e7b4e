"""One case's file of a run dir, whichever layout it has (the journal or an older run's case
dirs): its text, or its JSON (None when absent or not JSON); the verdicts of many cases."""

from __future__ import annotations

import json
import os
from typing import Any

from . import writer
from .casestore import JOURNAL, has_journal, head_of, open_store
from .ids import is_safe_case_id
from .lines import iter_lines


def read_case_text(run_dir: Any, case_id: str, name: str) -> str | None:
    data = open_store(run_dir).read(case_id, name)
    return data.decode("utf-8", "replace") if data is not None else None


def read_case_json(run_dir: Any, case_id: str, name: str) -> Any:
    data = open_store(run_dir).read(case_id, name)
    if data is None:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def case_verdicts(run_dir: Any, ids: list[str], *, from_start: bool = False) -> dict[str, dict]:
    """{case id: its verdict record} for these cases, as `open_store(run_dir).verdict(id)` answers
    (an unsafe id, a case not finished or a verdict that is no object is left out). A journal is
    opened once for them all; with `from_start` its first lines are read first, and the cases
    found there (a run page's first rows) need no index of the whole journal."""
    wanted = [cid for cid in dict.fromkeys(ids) if is_safe_case_id(cid)]
    out: dict[str, dict] = {}
    if not has_journal(run_dir):
        store = open_store(run_dir)
        for cid in wanted:
            rec = store.verdict(cid)
            if isinstance(rec, dict):
                out[cid] = rec
        return out
    left = set(wanted)
    if from_start and left:
        seen: set[str] = set()
        for n, (_offset, line) in enumerate(iter_lines(os.path.join(run_dir, JOURNAL))):
            if n >= 2 * len(wanted) + 16 or not left:
                break
            cid, rec = head_of(line, verdict=True)
            if cid is None or cid in seen:
                continue   # not a case record; a case's later line (its first one counts)
            seen.add(cid)
            if cid in left:
                left.discard(cid)
                if isinstance(rec, dict):
                    out[cid] = rec
    if left:
        store = open_store(run_dir)
        fd = writer.open_file(os.path.join(run_dir, JOURNAL), os.O_RDONLY)
        try:
            for cid in wanted:
                raw = store.line(cid, fd) if cid in left else None
                got, rec = head_of(raw, verdict=True) if raw is not None else (None, None)
                if got == cid and isinstance(rec, dict):
                    out[cid] = rec
        finally:
            os.close(fd)
    return out
