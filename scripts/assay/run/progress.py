"""Progress on stderr only: done/total, pass/fail/infra, elapsed, ETA.

`auto`: a live line (carriage return) on a TTY, a plain line every ~10 s otherwise.
`always`: plain lines at start, every ~10 s and at the end, whatever stderr is.
`never`: silent. Holdout runs show counts only (never ids).
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque

INTERVAL_S = 10.0


def _fmt(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    def __init__(self, total: int, mode: str = "auto", stream=None, canaries: int = 0) -> None:
        self.total = total
        self.canaries = canaries
        self.stream = stream or sys.stderr
        self.mode = mode
        self.live = mode == "auto" and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0 if mode == "always" else self.start
        self.done = self.passes = self.fails = self.infra = 0
        self._lock = threading.Lock()
        self._recent: deque = deque(maxlen=64)      # finish times of the last cases (throughput now)
        self._latencies: deque = deque(maxlen=512)  # observed case latencies, seconds
        if mode == "always":
            self._write(final=False)

    def eta(self, now: float) -> float | None:
        """Remaining cases at the recent finishing rate (a rate limit or a slow spell shows at
        once), and never less than the slowest tenth of observed case latencies while cases
        remain: the last case sent still has to come back."""
        remaining = self.total - self.done
        if not self.done:
            return None
        if remaining <= 0:
            return 0.0
        if len(self._recent) >= 2 and self._recent[-1] > self._recent[0]:
            rate = (len(self._recent) - 1) / (self._recent[-1] - self._recent[0])
        else:
            rate = self.done / max(now - self.start, 1e-9)
        eta = remaining / rate
        if self._latencies:
            lat = sorted(self._latencies)
            eta = max(eta, lat[min(len(lat) - 1, int(0.9 * len(lat)))])
        return eta

    def line(self) -> str:
        now = time.monotonic()
        elapsed = now - self.start
        eta = self.eta(now)
        from ..stats.counts import cases_phrase
        what = cases_phrase(self.total - self.canaries, self.canaries)
        return (f"assay: {self.done}/{self.total} ({what}) | pass {self.passes} fail {self.fails} "
                f"infra {self.infra} | elapsed {_fmt(elapsed)} | ETA {_fmt(eta) if eta is not None else '?'}")

    def _write(self, final: bool) -> None:
        if self.live:
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def update(self, verdict: str, latency_ms: float | None = None) -> None:
        if self.mode == "never":
            return
        with self._lock:
            self.done += 1
            self._recent.append(time.monotonic())
            if isinstance(latency_ms, (int, float)):
                self._latencies.append(latency_ms / 1000.0)
            if verdict == "pass":
                self.passes += 1
            elif verdict == "fail":
                self.fails += 1
            elif verdict.startswith("infra"):
                self.infra += 1
            now = time.monotonic()
            if self.live or now - self.last >= INTERVAL_S:
                self.last = now
                self._write(final=False)

    def failed(self, record: dict) -> None:
        """`assay: FAIL c-12 (routing, answer)` the moment a case's confirmed verdict is fail (after
        its retries and repeats). A holdout failure is never named: the counts line shows it."""
        if self.mode == "never" or record.get("holdout"):
            return
        layers = [name for name, entry in (record.get("layers") or {}).items()
                  if isinstance(entry, dict) and entry.get("verdict") == "fail"]
        tags = (" canary" if record.get("canary") else "") + \
            (" (not gating)" if record.get("gating", True) is False else "")
        text = f"assay: FAIL {record.get('case_id')} ({', '.join(layers) or 'no failed layer named'}){tags}"
        with self._lock:
            self.stream.write(("\r\x1b[K" if self.live else "") + text + "\n")
            self.stream.flush()

    def finish(self) -> None:
        if self.mode == "never":
            return
        with self._lock:
            if self.live or self.mode == "always" or self.done:
                self._write(final=True)
