"""What every scorer shares: the input-rejection error, the check fold, text rules.

A scorer is a pure function: plain data in, a layer dict out
(`{"verdict": "pass"|"fail"|"unscored", ...detail}`; `unscored` carries `reason`).
Deciding `n/a` and `unscorable` (matrix-disabled) is the engine's job, not a scorer's.

Check statuses inside a layer are `pass`, `fail` and `unscorable` (the check could
not be evaluated: a bad regex, a timed-out regex, an entry of the wrong type).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, Iterable, Mapping

from ..core.writer import clip

PASS, FAIL, UNSCORED, UNSCORABLE = "pass", "fail", "unscored", "unscorable"


class ScorerInputError(ValueError):
    """The expectation handed to a scorer is malformed (present but off-shape).

    The engine turns it into layer `{"verdict": "error", "reason": str(err)}`; the case
    rolls up `unscored` and the run exits 7. Never raised for bad *app output*: that is
    a `fail` or an `unscored`, not an error.
    """


def fold_checks(checks: Iterable[Mapping[str, Any] | str]) -> str:
    """Fold check statuses into a layer verdict.

    `fail` if any check fails; else `pass` if at least one passes; else `unscored`
    (no checks, or every check `unscorable`). Accepts check dicts (their `status`) or
    bare status strings.
    """
    saw_pass = False
    for check in checks:
        status = check if isinstance(check, str) else check.get("status")
        if status == FAIL:
            return FAIL
        if status == PASS:
            saw_pass = True
    return PASS if saw_pass else UNSCORED


def blind_tool_log(trajectory: Mapping[str, Any] | None) -> str | None:
    """Why the trajectory's tool-call log cannot be trusted to be complete, or None when it can.

    The trace normalizer records `tool_log: {seen, reason}`; a trajectory without that block
    (built by hand, or by an older normalizer) is taken as seen.
    """
    log = (trajectory or {}).get("tool_log")
    if isinstance(log, Mapping) and log.get("seen") is False:
        return str(log.get("reason") or "the trace could not show tool calls")
    return None


def nfc(text: str) -> str:
    """Unicode NFC: every text comparison in assay runs after it (no case folding)."""
    return unicodedata.normalize("NFC", text)


def unscored(reason: str, **detail: Any) -> dict[str, Any]:
    """An `unscored` layer dict with its reason."""
    out: dict[str, Any] = {"verdict": UNSCORED, "reason": reason}
    out.update(detail)
    return out


# An id matches only as a whole token: `INV-1` must not match inside `INV-10` or `XINV-1`.
# Word characters, `.` and `-` are token characters (so the neighbours must not be one).
_TOKEN_CHARS = r"[\w.\-]"


def token_pattern(token: str) -> re.Pattern[str]:
    """A compiled regex matching `token` literally, as a whole token (NFC on both sides)."""
    # Trailing sentence punctuation ("... INV-1." / "INV-1-") still ends the token, as in
    # authz.tokens_of: a '.'/'-' only continues a token when a word character follows it.
    return re.compile(rf"(?<!{_TOKEN_CHARS}){re.escape(nfc(token))}(?!\w)(?![.\-]{_TOKEN_CHARS}*\w)")


def contains_token(text: str, token: str) -> bool:
    """True when `token` occurs in `text` as a whole token (literal, NFC, no case folding).

    Safe without a time bound: the pattern is an escaped literal with fixed-width
    lookarounds, so matching is linear.
    """
    return token_pattern(token).search(nfc(text)) is not None


def is_number(value: Any) -> bool:
    """int or float, never bool (a bool is not a number anywhere in assay)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def short(value: Any, limit: int = 200) -> str:
    """A value as text, clipped for a `reason` string (secrets redacted before the cut)."""
    return clip(value if isinstance(value, str) else repr(value), limit, ellipsis="…")
