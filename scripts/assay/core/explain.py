"""Say what an app answered, in one line a person can act on (wave 2 §1: canary failure explains itself).

Pure functions over a case's `response.json` (already secret-redacted by the one writer)
and the adapter's auth block. Used by the runner's exit-4 message, the gate and the report.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from .writer import clip

EXCERPT_CHARS = 200
AUTH_STATUSES = (401, 403)


def body_excerpt(body: Any, limit: int = EXCERPT_CHARS) -> str:
    """The first `limit` characters of a response body as the app sent it (JSON compact), one line."""
    if body is None:
        return "(no body)"
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return clip(" ".join(text.split()), limit + 1, ellipsis="…")


def auth_hint(auth: Mapping[str, Any] | None) -> str:
    """Where the credentials come from, naming the env var (never its value)."""
    auth = auth if isinstance(auth, Mapping) else {}
    kind = auth.get("type") or "none"
    if kind == "none":
        return ("invocation.auth is {type: none}: the app wants credentials the adapter does not send; "
                "declare them in invocation.auth")
    for key in ("token_env", "cookie_env"):
        if isinstance(auth.get(key), str) and auth[key]:
            return f"check invocation.auth ({kind}) and the value of ${auth[key]} in this environment"
    names = sorted({part.split("}")[0] for value in (auth.get("headers") or {}).values()
                    if isinstance(value, str) for part in value.split("${")[1:]})
    if names:
        return f"check invocation.auth ({kind}) and the value of " + ", ".join(f"${n}" for n in names)
    return f"check invocation.auth ({kind})"


def describe_response(response: Mapping[str, Any] | None, auth: Mapping[str, Any] | None = None) -> str:
    """`HTTP 401 {"error":"bad api key"}: an authentication problem (...)` from a response.json record."""
    if not isinstance(response, Mapping):
        return "no response recorded"
    status = response.get("status")
    if status is None:
        what = response.get("outcome") or "no answer"
        err = response.get("error")
        return f"no HTTP answer ({what}{': ' + str(err) if err else ''})"
    text = f"HTTP {status} {body_excerpt(response.get('body'))}"
    if status in AUTH_STATUSES:
        text += f": an authentication problem, not drift ({auth_hint(auth)})"
    return text
