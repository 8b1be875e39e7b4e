"""A conversation's session state: the cookie jar of one attempt (style cookie) and the session id
a server-id app returns on turn 1 (`read_session`)."""

from __future__ import annotations

import time
from typing import Any

from . import templates
from .outcome import Outcome, http_date


class CookieJar:
    """One jar per conversation attempt: every Set-Cookie kept in order; Max-Age<=0 or a past
    Expires deletes. Sent after the adapter's static auth cookie (the invoker joins them)."""

    def __init__(self) -> None:
        self.cookies: dict[str, str] = {}

    def update(self, set_cookies: list[str], now: float | None = None) -> None:
        for raw in set_cookies:
            first, _, attrs = raw.partition(";")
            name, eq, value = first.partition("=")
            name = name.strip()
            if not eq or not name:
                continue
            if _expired(attrs, time.time() if now is None else now):
                self.cookies.pop(name, None)
            else:
                self.cookies.pop(name, None)
                self.cookies[name] = value.strip()

    def header(self) -> str | None:
        return "; ".join(f"{k}={v}" for k, v in self.cookies.items()) or None


def _expired(attrs: str, now: float) -> bool:
    for part in attrs.split(";"):
        key, _, val = part.partition("=")
        key, val = key.strip().lower(), val.strip()
        if key == "max-age":
            try:
                return int(val) <= 0
            except ValueError:
                continue
        if key == "expires":
            when = http_date(val)
            if when is not None and when <= now:
                return True
    return False


def read_session(conv: Any, out: Outcome) -> tuple[Any, str]:
    """(session id or None, where it was looked for). An int or a non-empty string counts."""
    source = conv.session_from or {}
    if "header" in source:
        where = f"header {source['header']}"
        value: Any = out.header(source["header"])
    else:
        where = f"body path {source.get('body')}"
        found, value = templates.lookup(out.body_json, str(source.get("body")))
        if not found:
            value = None
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and value.strip())):
        return None, where
    return value, where
