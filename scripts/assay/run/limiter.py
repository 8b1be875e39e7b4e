"""App slots: how many requests may be at the app at once, fixed or adaptive (AIMD).

Fixed (`execution.adaptive: false`): exactly `max_concurrency` slots, as a semaphore.

Adaptive (the default): the limit starts at `execution.start_concurrency` (else
`max_concurrency`) and follows the app's answers the way TCP follows a network:

- **multiplicative decrease**: a 429, or a 503, lowers the limit at most once per round
  trip (only an answer to a request sent after the last decrease can lower it again, so a
  burst of 429s from one window counts once). It falls to what the app was seen to
  sustain: the answers of the last two seconds per second, times their mean latency
  (Little's law); never above 0.9x nor below 0.5x the current limit, never below 1.
  With too few answers to measure, it halves.
- **Retry-After**: new sends pause until it has passed (capped), whichever request said it;
- **additive increase**: every other answer raises the limit by 1/limit (about +1 per
  window of answers) up to the level the app was last seen to sustain, and a quarter as
  fast beyond it (a slow probe: each probe that trips the limit costs a Retry-After
  pause), never above `max_concurrency`.

The numbers a person needs afterwards (in flight min/median/max, decreases, pauses, the
rate-limited answers) are in `summary()`; every change goes to run.log via `on_change`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any, Callable

RATE_LIMIT_STATUSES = (429, 503)
PAUSE_CAP_S = 60.0
RATE_WINDOW_S = 2.0      # the delivery rate is measured over the answers of this window
MIN_RATE_SAMPLES = 8     # fewer answers than this: no estimate, halve instead
PROBE_SLOWDOWN = 4.0     # above the sustained level the limit grows this many times slower


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
        self.sustained: float | None = None     # in-flight level the app was last seen to sustain
        self._ok_times: deque = deque()         # when recent non-rate-limited answers came back
        self._latency_ewma: float | None = None
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
                self._ok_times.append(now)
                latency = max(0.0, now - slot.sent_at)
                self._latency_ewma = latency if self._latency_ewma is None else 0.8 * self._latency_ewma + 0.2 * latency
            while self._ok_times and self._ok_times[0] < now - RATE_WINDOW_S:
                self._ok_times.popleft()
            if limited:
                self.rate_limited += 1
            if self.adaptive:
                if limited and slot.sent_at > self.last_decrease:
                    self._decrease(now, slot.status)
                elif slot.answered and not limited and self.limit < self.max:
                    step = 1.0 / self.limit
                    if self.sustained is not None and self.limit >= self.sustained:
                        step /= PROBE_SLOWDOWN
                    self.limit = min(float(self.max), self.limit + step)
                if slot.retry_after_s is not None and slot.retry_after_s > 0:
                    until = now + min(slot.retry_after_s, PAUSE_CAP_S)
                    if until > self.pause_until:
                        self.paused_s += until - max(now, self.pause_until)
                        self.pause_until = until
                        self.pauses += 1
                        self._emit("pause", status=slot.status, pause_s=round(until - now, 3))
            self._cond.notify_all()

    def sustained_estimate(self, now: float) -> float | None:
        """In flight the app sustained lately: answers per second x mean latency (Little's law)."""
        if len(self._ok_times) < MIN_RATE_SAMPLES or not self._latency_ewma:
            return None
        span = max(now - self._ok_times[0], RATE_WINDOW_S / 4)
        return (len(self._ok_times) - 1) / span * self._latency_ewma

    def _decrease(self, now: float, status: int | None) -> None:
        old = self.limit
        est = self.sustained_estimate(now)
        if est is None:
            new = old / 2
        else:
            new = min(old * 0.9, max(old * 0.5, est))
            self.sustained = new
        self.limit = max(1.0, new)
        self.limit_min = min(self.limit_min, self.limit)
        self.last_decrease = now
        self.decreases += 1
        self._emit("decrease", status=status, limit_from=round(old, 2), limit=round(self.limit, 2),
                   sustained_estimate=None if est is None else round(est, 2))

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
