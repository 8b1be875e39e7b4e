"""Case ids and run ids: the one definition of what is safe."""

from __future__ import annotations

import re
from datetime import datetime, timezone

CASE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RUN_ID_RE = re.compile(r"([a-z]+)-(\d{8}T\d{6}Z)")
CASE_ID_RULE = "1-128 chars of [A-Za-z0-9._-], first char alphanumeric, no '..'"


def is_safe_case_id(value: object) -> bool:
    return isinstance(value, str) and CASE_ID_RE.fullmatch(value) is not None and ".." not in value


def parse_run_id(value: object) -> tuple[str, str] | None:
    """Return (mode, stamp) for a well-formed run id, else None."""
    if not isinstance(value, str):
        return None
    m = RUN_ID_RE.fullmatch(value)
    return (m.group(1), m.group(2)) if m else None


def utc_stamp(now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    return now.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def new_run_id(mode: str, now: datetime | None = None) -> str:
    return f"{mode}-{utc_stamp(now)}"


def utc_now_iso() -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffffZ`, UTC (strftime's text, formatted directly: it runs for every
    run.log line, and strftime with `%f` costs twice as much)."""
    t = datetime.now(timezone.utc)
    return (f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
            f".{t.microsecond:06d}Z")
