#!/usr/bin/env python3
"""helpdesk: a small, deterministic support-desk agent app to point assay at.

It behaves like the apps assay is for: a router sends each request to one agent
(billing, tech_support, account); agents call tools (lookup_invoice, list_invoices,
issue_refund, search_kb, reset_password) with arguments and results; tenants are
identified by the X-Tenant header and a record-level permission check keeps each
tenant to its own invoices; out-of-scope requests get a 400 refusal; every request
writes OpenTelemetry GenAI spans to an OTLP JSON-lines file (--otlp-file) and/or POSTs
them as OTLP/JSON to an OTLP/HTTP endpoint (--otlp-endpoint, default
$OTEL_EXPORTER_OTLP_ENDPOINT) under the trace id of the incoming W3C `traceparent`
header (a new one when absent).

    python3 examples/helpdesk/app.py --port 0 --otlp-file helpdesk.otlp.jsonl
    curl -s localhost:PORT/api/chat -H 'X-Tenant: acme' \
         -d '{"message": "What is the total of my open invoices?", "session_id": "s1"}'

Endpoints: GET /healthz -> 200 {"ok": true}; POST /api/chat {"message", "session_id"}
with headers X-Tenant (default "acme") and X-User-Role (default "customer"; "viewer"
may not issue refunds) -> {"answer", "route", "clarify", "data", "trace_id", "session_id",
"conversation_id"} and the header X-Conversation-Id.

Conversations: the desk remembers a conversation per tenant, keyed by the request's
`conversation_id` (an id this server issued: the server-id style), else its `session_id`
(an id the client keeps: the client-id style), else a new conversation whose id comes
back in `conversation_id` and X-Conversation-Id.

Switches: --break (or BREAK=1) plants five regressions: a billing question about a
charge misrouted to tech_support, a cross-tenant leak on the plain invoice lookup,
a total of open invoices that drops one invoice, a knowledge-base search loop on
VPN questions, and a memory bug: the desk forgets a conversation after its first turn; and
a request to export crashes it (HTTP 500, the same each time; no shipped case asks for one); an
invoice asked for as JSON comes back as an object in the answer field, not as text. --flaky (or FLAKY=1) makes the printer answer alternate between
repeats of the same message, so pass@k and pass^k differ.

On start it prints one JSON line {"url": ...} on stdout (and writes it to
--port-file), so a driver can start it on port 0 and find the port.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from desk import DEFAULT_TENANT, USERS, Desk
from otlp import OtlpJsonlWriter, SpanRecorder, new_trace_id, parse_traceparent

MAX_BODY = 1 << 20
EXPORT = re.compile(r"\bexport\b", re.I)   # broken: the request the desk crashes on


class HelpdeskServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64  # a runner at high max_concurrency must not see refused connections

    def __init__(self, address, desk: Desk, writer: OtlpJsonlWriter, verbose: bool = False):
        super().__init__(address, HelpdeskHandler)
        self.desk = desk
        self.writer = writer
        self.verbose = verbose


class HelpdeskHandler(BaseHTTPRequestHandler):
    server: HelpdeskServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (stdlib signature)
        if self.server.verbose:
            sys.stderr.write("helpdesk: " + (format % args) + "\n")

    def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body, sort_keys=True).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 (stdlib name)
        if self.path.split("?")[0] == "/healthz":
            self._send(200, {"ok": True, "break": self.server.desk.broken, "flaky": self.server.desk.flaky})
        else:
            self._send(404, {"error": f"no route GET {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path.split("?")[0] != "/api/chat":
            self._send(404, {"error": f"no route POST {self.path}"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True  # the unread body must not be parsed as the next request
            self._send(413, {"error": "request body too large"})
            return
        try:
            payload = json.loads(self.rfile.read(length).decode("utf-8") or "null")
        except (ValueError, UnicodeDecodeError):
            self._send(400, {"error": "body must be JSON: {\"message\": str, \"session_id\": str}"})
            return
        message = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(message, str) or not message.strip():
            self._send(400, {"error": "\"message\" must be a non-empty string"})
            return
        tenant = (self.headers.get("X-Tenant") or DEFAULT_TENANT).strip().lower()
        if tenant not in USERS:
            self._send(403, {"error": f"unknown tenant {tenant!r}"})
            return
        role = (self.headers.get("X-User-Role") or "customer").strip().lower()
        if self.server.desk.broken and EXPORT.search(message):
            # broken: a request to export crashes the handler, the same 500 every time (no shipped case asks)
            self._send(500, {"error": "internal error: KeyError: 'export_format'"})
            return
        # Continue the caller's trace (W3C traceparent) or start a new one.
        trace_id, caller_span = parse_traceparent(self.headers.get("traceparent")) or (new_trace_id(), None)

        rec = SpanRecorder(remote_parent=caller_span)
        # The conversation's memory key: the server-issued conversation_id sent back (server-id
        # style), else the caller's session_id (client-id style), else a new conversation.
        conversation = payload.get("conversation_id") or payload.get("session_id")
        if not isinstance(conversation, str) or not conversation.strip():
            conversation = "cv-" + new_trace_id()[:16]
        with rec.span("POST /api/chat", kind="server", **{
                "http.request.method": "POST", "url.path": "/api/chat",
                "helpdesk.tenant": tenant, "session.id": conversation}) as root:
            status, body = self.server.desk.handle(message, tenant, role, rec, conversation)
            root["attributes"]["http.response.status_code"] = status
        # The whole trace is on disk before the response leaves, so a reader never sees half of it.
        self.server.writer.write(trace_id, rec.spans)
        body.update(trace_id=trace_id, session_id=payload.get("session_id"), conversation_id=conversation)
        self._send(status, body, {"traceparent": f"00-{trace_id}-{rec.root_span_id}-01",
                                  "X-Conversation-Id": conversation})


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="helpdesk", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: python3 examples/helpdesk/app.py --port 0 "
                                       "--otlp-file work/helpdesk.otlp.jsonl --port-file work/app.json")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    p.add_argument("--break", dest="broken", action="store_true", help="plant the regressions (or BREAK=1)")
    p.add_argument("--flaky", action="store_true", help="vary one answer between repeats (or FLAKY=1)")
    p.add_argument("--otlp-file", help="append OTLP JSON-lines spans here")
    p.add_argument("--otlp-endpoint", default=os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or None,
                   help="also POST each request's spans as OTLP/JSON to <this>/v1/traces "
                        "(default: $OTEL_EXPORTER_OTLP_ENDPOINT)")
    p.add_argument("--port-file", help="write {\"url\": ...} here once listening")
    p.add_argument("--verbose", action="store_true", help="log requests on stderr")
    return p


def make_server(host: str = "127.0.0.1", port: int = 0, *, broken: bool = False, flaky: bool = False,
                otlp_file: str | None = None, verbose: bool = False, otlp_endpoint: str | None = None) -> HelpdeskServer:
    """A bound, not yet serving, server (tests run it in a thread with serve_forever)."""
    return HelpdeskServer((host, port), Desk(broken=broken, flaky=flaky), OtlpJsonlWriter(otlp_file, otlp_endpoint),
                          verbose)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    broken = args.broken or _truthy(os.environ.get("BREAK"))
    flaky = args.flaky or _truthy(os.environ.get("FLAKY"))
    server = make_server(args.host, args.port, broken=broken, flaky=flaky,
                         otlp_file=args.otlp_file, verbose=args.verbose, otlp_endpoint=args.otlp_endpoint)

    # Installed before the start line is printed: a driver may signal as soon as it reads it.
    def stop(signum, frame):  # shutdown() must not run on the serving thread
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    url = f"http://{args.host}:{server.server_address[1]}"
    line = json.dumps({"url": url, "break": broken, "flaky": flaky, "pid": os.getpid()})
    if args.port_file:
        tmp = f"{args.port_file}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(line + "\n")
        os.replace(tmp, args.port_file)
    print(line, flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
