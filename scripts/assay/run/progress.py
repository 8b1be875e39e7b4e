"""Progress on stderr only: done/total, pass/fail/infra, elapsed, ETA.

`auto`: a live line (carriage return) on a TTY, a plain line every ~10 s otherwise.
`always`: plain lines at start, every ~10 s and at the end, whatever stderr is.
`never`: silent. Holdout runs show counts only (never ids).
"""

from __future__ import annotations

import sys
import threading
import time

INTERVAL_S = 10.0


def _fmt(seconds: float) -> str:
    seconds = int(max(0, seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    def __init__(self, total: int, mode: str = "auto", stream=None) -> None:
        self.total = total
        self.stream = stream or sys.stderr
        self.mode = mode
        self.live = mode == "auto" and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.monotonic()
        self.last = 0.0 if mode == "always" else self.start
        self.done = self.passes = self.fails = self.infra = 0
        self._lock = threading.Lock()
        if mode == "always":
            self._write(final=False)

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        eta = (elapsed / self.done * (self.total - self.done)) if self.done else None
        return (f"assay: {self.done}/{self.total} cases | pass {self.passes} fail {self.fails} "
                f"infra {self.infra} | elapsed {_fmt(elapsed)} | ETA {_fmt(eta) if eta is not None else '?'}")

    def _write(self, final: bool) -> None:
        if self.live:
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()

    def update(self, verdict: str) -> None:
        if self.mode == "never":
            return
        with self._lock:
            self.done += 1
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

    def finish(self) -> None:
        if self.mode == "never":
            return
        with self._lock:
            if self.live or self.mode == "always" or self.done:
                self._write(final=True)
