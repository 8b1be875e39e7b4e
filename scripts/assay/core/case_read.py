"""One case's file of a run dir, whichever layout it has (the journal or an older run's case
dirs): its text, or its JSON (None when absent or not JSON)."""

from __future__ import annotations

import json
from typing import Any

from .casestore import open_store


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
