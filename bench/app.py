#!/usr/bin/env python3
"""The benchmark app: a real threaded HTTP server on loopback with a fixed latency.

Contract (what bench/suite.py writes the adapter and the cases against):

- ``GET /healthz`` -> 200 ``{"ok": true}``.
- ``POST /ask`` with a JSON body ``{"message": "<user turn>", ...}`` -> 200
  ``{"answer": str, "route": str, "data": {"value": int}}`` after sleeping the
  configured latency. The answer is a pure function of the case number found in
  the message (``expected_for``), so every run of a suite is deterministic and
  every trace-less layer has evidence: http (status), routing
  (``route_from_response: route``), answer (``must_contain`` on ``answer``) and
  execution (``result_from_response: data.value``).
- Anything else: 404 / 400 with a JSON error.

``BenchApp`` counts requests and the time spent inside the handler, so the
benchmark can tell the app's share of a run from the runner's.

Run standalone (for promptfoo or by hand):
    python bench/app.py --latency-ms 50 --port 0
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROUTES = ("billing", "shifts", "accounts", "support")
_CASE_NO = re.compile(r"#(\d+)")


def expected_for(n: int) -> dict:
    """The app's deterministic reply to case number ``n`` (the suite reads the same function)."""
    route = ROUTES[n % len(ROUTES)]
    value = (n * 7919) % 100_000
    answer = f"Case {n}: the {route} total is {value} units. Reference BN-{n:06d}."
    return {"answer": answer, "route": route, "data": {"value": value}}


def question_for(n: int) -> str:
    """The user turn for case ``n``; the app recovers ``n`` from the ``#<n>`` marker."""
    return f"Question #{n}: what is the {ROUTES[n % len(ROUTES)]} total for this account?"


class _Server(ThreadingHTTPServer):
    # The default backlog (5) refuses connections under a burst of 16+ concurrent
    # clients; a refused connect would be retried by the runner and distort timing.
    request_queue_size = 256
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        # A client that vanishes mid-request (the resume benchmark SIGKILLs the runner) is
        # expected; anything else is still reported.
        import sys
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class BenchApp:
    """A threaded loopback app. ``start()`` returns the base URL; ``stop()`` shuts it down."""

    def __init__(self, latency_ms: float = 0.0, host: str = "127.0.0.1", port: int = 0):
        self.latency_s = max(0.0, float(latency_ms)) / 1000.0
        self._lock = threading.Lock()
        self.requests = 0
        self.busy_s = 0.0          # sum of handler time (includes the latency sleep)
        self.errors = 0
        self._inflight = 0
        self._inflight_max = 0
        self._area = 0.0            # integral of in-flight requests over time (for the mean)
        self._first = self._last = None
        # Called (outside the lock) with the running request count after each /ask; the
        # resume benchmark uses it to SIGKILL the runner at a precise point of a run.
        self.on_request = None
        self._server = _Server((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="bench-app", daemon=True)
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def reset_counters(self) -> None:
        with self._lock:
            self.requests, self.busy_s, self.errors = 0, 0.0, 0
            self._inflight_max, self._area, self._first, self._last = self._inflight, 0.0, None, None

    def counters(self) -> dict:
        with self._lock:
            span = (self._last - self._first) if self._first is not None else 0.0
            return {"requests": self.requests, "busy_s": self.busy_s, "errors": self.errors,
                    "inflight_max": self._inflight_max, "first_t": self._first, "last_t": self._last,
                    "inflight_mean": (self._area / span) if span > 0 else 0.0}

    def _inflight_step(self, delta: int) -> None:
        """In-flight /ask requests over time: how much concurrency the client really kept up."""
        now = time.perf_counter()
        with self._lock:
            if self._first is None:
                self._first = now
            elif self._last is not None:
                self._area += self._inflight * (now - self._last)
            self._last = now
            self._inflight += delta
            self._inflight_max = max(self._inflight_max, self._inflight)

    def _record(self, started: float, ok: bool) -> None:
        with self._lock:
            self.requests += 1
            self.busy_s += time.perf_counter() - started
            if not ok:
                self.errors += 1
            count = self.requests
        hook = self.on_request
        if hook is not None:
            hook(count)

    def _handler_class(self):
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"   # keep-alive for clients that pool connections
            # TCP_NODELAY: headers and body go out as two writes; with Nagle on, the body
            # waits for the client's delayed ACK (40 ms on Linux loopback) on every request.
            disable_nagle_algorithm = True
            server_version = "bench-app/1"

            def log_message(self, *args) -> None:  # quiet: thousands of requests
                pass

            def _send(self, status: int, obj: object) -> None:
                body = json.dumps(obj).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.split("?")[0] in ("/healthz", "/"):
                    self._send(200, {"ok": True})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                started = time.perf_counter()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.split("?")[0] != "/ask":
                    self._send(404, {"error": "not found"})
                    app._record(started, False)
                    return
                try:
                    message = json.loads(raw.decode("utf-8")).get("message", "")
                    n = int(_CASE_NO.search(message).group(1))
                except (ValueError, AttributeError, TypeError):
                    self._send(400, {"error": "body must be JSON with a message holding '#<n>'"})
                    app._record(started, False)
                    return
                app._inflight_step(1)
                try:
                    if app.latency_s:
                        time.sleep(app.latency_s)
                    self._send(200, expected_for(n))
                finally:
                    app._inflight_step(-1)
                app._record(started, True)

        return Handler


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the benchmark app on loopback until interrupted.")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    app = BenchApp(args.latency_ms, port=args.port)
    print(app.start(), flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        app.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
