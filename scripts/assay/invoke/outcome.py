"""What one attempt produced, how it is classified, and how long to wait before the next.

Retried (contracts §5.6): connection errors, timeouts, dropped connections, 429, 5xx
(and, in function mode, an exception). Not retried: any other status (a 4xx is an answer).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..core import hostile
from ..core.patterns import lazy_pattern

MAX_BODY_BYTES = 20 * 1024 * 1024   # bodies are read up to this bound, never beyond
RETRY_AFTER_CAP_S = 60.0

# Outcome kinds
RESPONSE = "response"        # the app answered with a status
TIMEOUT = "timeout"          # no answer within timeout_s
CONNECTION = "connection"    # could not connect / refused
DROPPED = "dropped"          # the connection was dropped mid-exchange: a crash
EXCEPTION = "exception"      # function mode: the callable raised
EXIT = "exit"                # cli mode: a non-zero exit code the case did not expect (like a 5xx)


@dataclass
class Outcome:
    kind: str
    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body_text: str | None = None
    body_json: Any = None
    json_ok: bool = False
    error: str | None = None
    latency_ms: float = 0.0
    trace_id: str | None = None
    notes: list[str] = field(default_factory=list)
    body_sha: str | None = None
    cli: dict[str, Any] | None = None          # cli mode: exit code, signal, stderr, caps, scratch
    answer_withheld: str | None = None         # why the body must not be scored (e.g. cut at a cap)
    set_cookies: list[str] = field(default_factory=list)   # every Set-Cookie (headers keeps one)
    agent: dict[str, Any] | None = None        # agent mode: the transcript's trajectory, the workdir's facts
    repeated_5xx: dict[str, Any] | None = None  # rescore: the source run's mark for the final answer it stored

    @property
    def retriable(self) -> bool:
        if self.kind != RESPONSE:
            return True
        return self.status == 429 or (self.status is not None and self.status >= 500)

    @property
    def crashed(self) -> bool:
        return self.kind == DROPPED

    def describe(self) -> str:
        if self.kind == RESPONSE:
            return f"HTTP {self.status}"
        return f"{self.kind}: {self.error}" if self.error else self.kind

    def header(self, name: str) -> str | None:
        low = name.lower()
        for k, v in self.headers.items():
            if k.lower() == low:
                return v
        return None


def decode_body(raw: bytes, truncated: bool) -> tuple[str, Any, bool, list[str]]:
    """(text, json_value, json_ok, notes). Never raises: non-UTF-8 and absurd nesting are notes."""
    notes: list[str] = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        notes.append("response body is not valid UTF-8 (decoded with replacement characters)")
        return text, None, False, notes
    if truncated:
        notes.append(f"response body exceeded {MAX_BODY_BYTES} bytes; read up to the bound and not parsed")
        return text, None, False, notes
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[\"-0123456789tfn":
        return text, None, False, notes
    try:
        doc, found = hostile.loads(text)
    except RecursionError:
        notes.append("response JSON is nested too deeply to parse; treated as text")
        return text, None, False, notes
    except ValueError:
        return text, None, False, notes
    if found:
        notes.append(hostile.note(found))
    return text, doc, True, notes


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        secs = float(value)
        return max(0.0, secs) if secs == secs else None
    except ValueError:
        pass
    when = http_date(value)
    if when is None:
        return None
    now = time.time() if now is None else now
    return max(0.0, when - now)


def http_date(value: str) -> float | None:
    """Epoch seconds of an HTTP date (Retry-After, a cookie's Expires), or None when it is not one."""
    when = _imf_fixdate(value.strip())
    if when is not None:
        return when
    try:   # the obsolete forms (RFC 850, asctime), which only the email package parses
        import email.utils
        dt = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return None if dt is None else dt.timestamp()


_FIXDATE = lazy_pattern(r"[A-Z][a-z]{2}, (\d{2})([ -])([A-Z][a-z]{2})\2(\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _imf_fixdate(value: str) -> float | None:
    """Epoch seconds of an HTTP date in the preferred IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`,
    RFC 9110 5.6.7) or a cookie's `Sun, 06-Nov-1994 08:49:37 GMT`, else None: parsed here, so a case
    worker never imports the email package for the usual forms."""
    m = _FIXDATE().fullmatch(value)
    if m is None or m.group(3) not in _MONTHS:
        return None
    import datetime   # (already loaded: core.ids)
    try:
        dt = datetime.datetime(int(m.group(4)), _MONTHS.index(m.group(3)) + 1, int(m.group(1)), int(m.group(5)),
                               int(m.group(6)), int(m.group(7)), tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return dt.timestamp()


def retry_wait(backoff_s: list[float], attempt_index: int, retry_after: str | None,
               now: float | None = None) -> float:
    """Wait before attempt `attempt_index + 1`: Retry-After (capped at 60 s) when given, else backoff."""
    base = float(backoff_s[attempt_index]) if attempt_index < len(backoff_s) else float(backoff_s[-1] if backoff_s else 0)
    ra = parse_retry_after(retry_after, now)
    if ra is not None:
        return min(max(ra, 0.0), RETRY_AFTER_CAP_S)
    return base


def attempts_reason(outcomes: list[Outcome], turns: list[int] | None = None, noun: str = "attempt") -> str:
    """What every attempt of an exhausted request got, honestly: `X on all N attempt(s)` only
    when all were X; else the last outcome plus each earlier one (a crash stays visible). With
    `turns` (a conversation: the turn each attempt ended on), each outcome is named with its turn."""
    said = [(f"turn {turns[i]}: " if turns else "") + o.describe() for i, o in enumerate(outcomes)]
    if len(set(said)) == 1:
        return f"{said[-1]} on all {len(said)} {noun}(s)"
    earlier = "; ".join(f"attempt {i}: {d}" for i, d in enumerate(said[:-1], 1))
    return f"{said[-1]} on {noun} {len(said)} of {len(said)} ({earlier})"


# How an infra_reason starts when a case ran out of its rate-limit waiting budget (the engine
# reads it: such a case does not count toward the infra abort while the run makes progress).
RATE_LIMITED_PREFIX = "rate limited"


def is_rate_limited(out: Outcome) -> bool:
    """A 429, or a 503 that says when to come back (Retry-After): the app is busy, not broken."""
    return out.kind == RESPONSE and (out.status == 429 or (out.status == 503 and out.header("Retry-After") is not None))


# The least a rate-limited retry waits (and spends of execution.rate_limit_wait_s).
RATE_LIMIT_MIN_WAIT_S = 0.1

# What `RetryBudget.spend` says when an outcome is final: the attempts or the rate-limit waits ran out.
ATTEMPTS_SPENT = "attempts"
RATE_LIMIT_SPENT = "rate_limit"


@dataclass
class RetryBudget:
    """The one retry policy, for a single request and a whole conversation alike.

    `max_attempts` bounds the attempts that failed for any reason but rate limiting. With
    `rate_limit_wait_s` set (adaptive runs), a rate-limited answer (`is_rate_limited`) spends that
    budget of waiting seconds instead: it is retried after its Retry-After (else the backoff)
    until the waits would pass the budget; then it is final."""
    max_attempts: int
    backoff_s: list[float]
    rate_limit_wait_s: float | None = None
    failed: int = 0
    limited: int = 0
    waited: float = 0.0

    def spend(self, out: Outcome) -> tuple[float, str | None]:
        """For a retriable outcome: (seconds to wait before the next attempt, None), or
        (wait, ATTEMPTS_SPENT | RATE_LIMIT_SPENT) when it is final. A spent rate-limit budget
        leaves `waited` at what was actually waited."""
        if self.rate_limit_wait_s is not None and is_rate_limited(out):
            # at least RATE_LIMIT_MIN_WAIT_S: `Retry-After: 0` on every answer would spend none of the budget (a
            # request retried forever, a run that never ends)
            wait = max(retry_wait(self.backoff_s, self.limited, out.header("Retry-After")), RATE_LIMIT_MIN_WAIT_S)
            if self.waited + wait > self.rate_limit_wait_s:
                return wait, RATE_LIMIT_SPENT
            self.limited += 1
            self.waited += wait
            return wait, None
        self.failed += 1
        if self.failed >= self.max_attempts:
            return 0.0, ATTEMPTS_SPENT
        return retry_wait(self.backoff_s, self.failed - 1, out.header("Retry-After")), None


def expected_status_of(expect: Any) -> int | None:
    """The status a case (or a conversation's turn) expects (`expect.http.status`), or None."""
    http = expect.get("http") if isinstance(expect, Mapping) else None
    status = http.get("status") if isinstance(http, Mapping) else None
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def is_expected(out: Outcome, expected_status: int | None) -> bool:
    """A response with the status the case expects (expect.http.status): its answer, even a 5xx or 429."""
    return expected_status is not None and out.kind == RESPONSE and out.status == expected_status


def attempt_with_retries(send: Callable[[], Outcome], *, max_attempts: int, backoff_s: list[float],
                         on_retry: Callable[[int, Outcome, float], None] | None = None,
                         sleep: Callable[[float], None] = time.sleep,
                         rate_limit_wait_s: float | None = None, expected_status: int | None = None) -> list[Outcome]:
    """Send until an answer that is not retried, or the retries are spent (`RetryBudget`); returns
    every attempt's outcome (the last one is final). A rate-limited final outcome notes the spent
    budget. `expected_status` (the case's expect.http.status): that status is the answer the case
    asks for, never retried (a case about the app's error handling expects its 500)."""
    outcomes: list[Outcome] = []
    budget = RetryBudget(max_attempts, list(backoff_s), rate_limit_wait_s)
    while True:
        out = send()
        outcomes.append(out)
        if not out.retriable or is_expected(out, expected_status):
            break
        wait, spent = budget.spend(out)
        if spent == RATE_LIMIT_SPENT:
            out.notes.append(f"rate-limit budget spent: waited {budget.waited:g} s of execution.rate_limit_wait_s "
                             f"{rate_limit_wait_s:g} s")
        if spent is not None:
            break
        if on_retry:
            on_retry(len(outcomes), out, wait)
        if wait > 0:
            sleep(wait)
    return outcomes


# "The same body" for repeated_5xx: the body text with what differs per request masked, so an
# error page that carries a request id, a trace id or a timestamp is still the same error.
_PER_REQUEST = lazy_pattern(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"   # a UUID
    r"|\b[0-9a-fA-F]{16,}\b"                                                       # trace / span / request ids
    r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"   # an ISO-8601 time
    r"|\b\d{10,}\b")                                                                # epoch seconds / ms, counters


def same_body_key(out: "Outcome") -> str | None:
    """What two 5xx bodies must share to be "the same body": the text with UUIDs, hex ids of 16+
    characters, ISO-8601 timestamps and runs of 10+ digits masked; the raw sha when there is no text."""
    if out.body_text is None:
        return out.body_sha
    return _PER_REQUEST().sub("<id>", out.body_text)
