#!/usr/bin/env python3
"""helpdesk-cli: the same help desk as app.py, behind a command line instead of HTTP.

One question per run: the message is the argument (or stdin when there is none), the
answer is one JSON line on stdout, and the exit code says how it went:

    examples/helpdesk/cli.py "What is the total of my open invoices?"
    echo "Why does my VPN keep disconnecting?" | examples/helpdesk/cli.py --tenant globex

stdout: {"answer", "route", "clarify", "data", "trace_id"}. Exit 0: answered; 2: refused
(out of scope, or a request the desk will not do); 3: unknown tenant; 64: no message.

The tenant and role come from --tenant/--role, else HELPDESK_TENANT / HELPDESK_ROLE
(default acme / customer). Spans (OpenTelemetry GenAI, OTLP JSON lines) are appended to
--otlp-file (else $HELPDESK_OTLP_FILE, else nowhere) under the trace of $TRACEPARENT when
it is set (a new trace otherwise). BREAK=1 (or --break) plants the same regressions as
the HTTP app. This is the app a cli adapter runs: examples/helpdesk/.assay-cli/.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys

from desk import DEFAULT_TENANT, USERS, Desk
from otlp import SpanRecorder, new_trace_id, parse_traceparent, traces_data

EXIT_FOR_STATUS = {200: 0, 400: 2, 403: 2}
EXIT_UNKNOWN_TENANT = 3
EXIT_USAGE = 64


def append_spans(path: str, trace_id: str, spans: list[dict]) -> None:
    """One OTLP line per run, appended in one write under an exclusive lock: several runs of
    this command may write to the same file at once."""
    line = (json.dumps(traces_data(trace_id, spans), sort_keys=True, separators=(",", ":")) + "\n").encode()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cli.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="example: examples/helpdesk/cli.py --tenant acme \"Show invoice INV-1001\"")
    p.add_argument("message", nargs="*", help="the question (read from stdin when absent)")
    p.add_argument("--tenant", help="the tenant account (default $HELPDESK_TENANT or acme)")
    p.add_argument("--role", help="customer or viewer (default $HELPDESK_ROLE or customer)")
    p.add_argument("--otlp-file", help="append OTLP JSON-lines spans here (default $HELPDESK_OTLP_FILE)")
    p.add_argument("--break", dest="broken", action="store_true", help="plant the regressions (or BREAK=1)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    message = " ".join(args.message) if args.message else sys.stdin.read()
    message = message.strip()
    if not message:
        print(json.dumps({"error": "no message: give it as an argument or on stdin"}))
        return EXIT_USAGE
    tenant = (args.tenant or os.environ.get("HELPDESK_TENANT") or DEFAULT_TENANT).strip().lower()
    role = (args.role or os.environ.get("HELPDESK_ROLE") or "customer").strip().lower()
    if tenant not in USERS:
        print(json.dumps({"error": f"unknown tenant {tenant!r}"}))
        return EXIT_UNKNOWN_TENANT
    broken = args.broken or os.environ.get("BREAK", "").strip().lower() in ("1", "true", "yes", "on")
    trace_id, caller_span = parse_traceparent(os.environ.get("TRACEPARENT")) or (new_trace_id(), None)
    rec = SpanRecorder(remote_parent=caller_span)
    with rec.span("helpdesk-cli", kind="server", **{"helpdesk.tenant": tenant, "process.command": "cli.py"}) as root:
        status, body = Desk(broken=broken).handle(message, tenant, role, rec)
        root["attributes"]["helpdesk.status"] = status
    otlp_file = args.otlp_file or os.environ.get("HELPDESK_OTLP_FILE")
    if otlp_file:  # the whole trace is on disk before the answer is printed
        append_spans(otlp_file, trace_id, rec.spans)
    body["trace_id"] = trace_id
    print(json.dumps(body, sort_keys=True))
    return EXIT_FOR_STATUS.get(status, 1)


if __name__ == "__main__":
    sys.exit(main())
