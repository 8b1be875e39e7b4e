"""App slots: how many requests may be at the app at once, fixed or adaptive (AIMD).

Fixed (`execution.adaptive: false`): exactly `max_concurrency` slots, as a semaphore.

Adaptive (the default): the limit starts at `execution.start_concurrency` (else
`max_concurrency`) and follows the app's answers the way TCP follows a network:

- **multiplicative decrease**: a 429, or a 503, halves the limit (never below 1), at most
  once per round trip: only an answer to a request sent after the last decrease can
  decrease it again, so a burst of 429s from one window counts once;
- **Retry-After**: new sends pause until it has passed (capped), whichever request said it;
- **additive increase**: every other answer raises the limit by 1/limit (about +1 per
  window of answers), never above `max_concurrency`.

The numbers a person needs afterwards (in flight min/median/max, decreases, pauses, the
rate-limited answers) are in `summary()`; every change goes to run.log via `on_change`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, Callable

RATE_LIMIT_STATUSES = (429, 503)
PAUSE_CAP_S = 60.0


class Slot:
    """One held slot: when its request was sent, and how its answer went (set by the holder)."""

    __slots__ = ("sent_at", "status", "retry_after_s", "answered")

    def __init__(self, sent_at: float) -> None:
        self.sent_at = sent_at
        self.status: int | None = None
        self.retry_after_s: float | None = None
        self.answered = False


class AppSlots:
    def __init__(self, max_concurrency: int, *, adaptive: bool = True, start: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 on_change: Callable[[str, dict[str, Any]], None] | None = None) -> None:
        self.max = max(1, int(max_concurrency))
        self.adaptive = bool(adaptive)
        first = self.max if start is None or not self.adaptive else int(start)
        self.limit = float(min(self.max, max(1, first)))
        self.start_limit = self.limit
        self.clock = clock
        self.on_change = on_change
        self.in_flight = 0
        self._cond = threading.Condition()
        self.pause_until = 0.0
        self.last_decrease = float("-inf")
        self.last_progress = clock()
        self.in_flight_seen: Counter = Counter()
        self.limit_min = self.limit
        self.rate_limited = 0
        self.decreases = 0
        self.pauses = 0
        self.paused_s = 0.0

    # ---- holding a slot -----------------------------------------------------------
    def acquire(self) -> Slot:
        with self._cond:
            while True:
                now = self.clock()
                if now < self.pause_until:
                    self._cond.wait(self.pause_until - now)
                    continue
                if self.in_flight < max(1, int(self.limit)):
                    break
                self._cond.wait()
            self.in_flight += 1
            self.in_flight_seen[self.in_flight] += 1
            return Slot(self.clock())

    def release(self, slot: Slot) -> None:
        with self._cond:
            self.in_flight -= 1
            now = self.clock()
            limited = slot.status in RATE_LIMIT_STATUSES
            if slot.answered and not limited:
                self.last_progress = now
            if limited:
                self.rate_limited += 1
            if self.adaptive:
                if limited and slot.sent_at > self.last_decrease:
                    old = self.limit
                    self.limit = max(1.0, self.limit / 2)
                    self.limit_min = min(self.limit_min, self.limit)
                    self.last_decrease = now
                    self.decreases += 1
                    self._emit("decrease", status=slot.status, limit_from=round(old, 2), limit=round(self.limit, 2))
                elif slot.answered and not limited and self.limit < self.max:
                    self.limit = min(float(self.max), self.limit + 1.0 / self.limit)
                if slot.retry_after_s is not None and slot.retry_after_s > 0:
                    until = now + min(slot.retry_after_s, PAUSE_CAP_S)
                    if until > self.pause_until:
                        self.paused_s += until - max(now, self.pause_until)
                        self.pause_until = until
                        self.pauses += 1
                        self._emit("pause", status=slot.status, pause_s=round(until - now, 3))
            self._cond.notify_all()

    def _emit(self, event: str, **fields: Any) -> None:
        if self.on_change is not None:
            self.on_change(event, fields)

    # ---- what the run says afterwards ---------------------------------------------
    def summary(self) -> dict[str, Any]:
        with self._cond:
            seen = sorted(self.in_flight_seen.elements())
        median = seen[(len(seen) - 1) // 2] if seen else None
        return {
            "adaptive": self.adaptive, "max_concurrency": self.max, "start": int(self.start_limit),
            "in_flight": {"min": seen[0] if seen else None, "median": median, "max": seen[-1] if seen else None},
            "limit_min": round(self.limit_min, 2), "limit_end": round(self.limit, 2),
            "rate_limited_answers": self.rate_limited, "decreases": self.decreases,
            "pauses": self.pauses, "paused_s": round(self.paused_s, 3),
        }

    def seconds_since_progress(self) -> float:
        with self._cond:
            return self.clock() - self.last_progress
