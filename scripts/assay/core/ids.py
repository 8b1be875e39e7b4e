"""Case ids and run ids: the one definition of what is safe."""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone

CASE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
RUN_ID_RE = re.compile(r"([a-z]+)-(\d{8}T\d{6}Z)")
CASE_ID_RULE = "1-128 chars of [A-Za-z0-9._-], first char alphanumeric, no '..'"
# A run as a file someone else wrote may name it (results.json's run_id, a run dir's name, a baseline
# run id) before assay joins it to a path: one component under reports/, never '..' or a '/'.
RUN_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
RUN_NAME_RULE = "1-200 chars of [A-Za-z0-9._-], first char alphanumeric, no '..'"


def is_safe_case_id(value: object) -> bool:
    return isinstance(value, str) and CASE_ID_RE.fullmatch(value) is not None and ".." not in value


def is_safe_run_name(value: object) -> bool:
    return isinstance(value, str) and RUN_NAME_RE.fullmatch(value) is not None and ".." not in value


# What makes runs one series (results.json keys): a baseline (--baseline auto) and the history's trend
# lines are drawn within one; a run of another mode, dataset version, harness version or k is another series.
SERIES_KEYS = ("mode", "dataset_version", "harness_version", "k")


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


def parse_utc(value: object) -> datetime | None:
    """An ISO UTC stamp ("2026-12-05T15:08:12Z", with or without fractions; no zone: UTC) or None."""
    if not isinstance(value, str):
        return None
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def new_uuid4() -> str:
    """A random (version 4) UUID in its usual 36-character form, as `str(uuid.uuid4())` gives it:
    16 bytes of os.urandom with the version and variant bits set (the uuid module, which imports
    `platform`, costs every run's start more than the one call it would serve)."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# An MCP tool's name as Claude Code gives it: mcp__<server>__<tool>
MCP_PREFIX = "mcp__"


def split_mcp(name: str) -> tuple[str, str] | None:
    """`mcp__<server>__<tool>` -> (server, tool); None for any other name."""
    if not name.startswith(MCP_PREFIX):
        return None
    server, sep, tool = name[len(MCP_PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None
