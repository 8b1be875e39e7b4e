"""The `otlp-http` trace source: the runner receives the app's standard OTLP/HTTP span exports.

`OtlpHttpSource(address, convention, quiescence_ms, max_wait_s)` listens on `address`
(`host:port`, default 127.0.0.1:4318, the OTLP/HTTP port) for `POST /v1/traces`, in a daemon
thread, and keeps every received span in the same per-trace index `OtlpFileSource` keeps for a
file, so `collect(trace_id)` (quiescence, completeness, normalization) is the file source's own.
Spans are held in memory for the run; only a collected case's spans are written (trace.json).

Bodies: `application/x-protobuf` (an ExportTraceServiceRequest, decoded with the official
`opentelemetry-proto` package: `pip install 'assay[otlp]'`; pre-flight exits 3 naming the
interpreter when it is missing, unless `traces.protocol: http/json` says the app exports
OTLP/JSON) or `application/json` (OTLP/JSON, no extra dependency); `Content-Encoding: gzip` is accepted. Replies follow OTLP/HTTP: 200 with
an empty ExportTraceServiceResponse in the request's encoding; 400 for an unreadable body, 415
for an unsupported content type or protobuf without the package (the reply and every trace
that then never arrives name the fix), 404 for another path.
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .normalize import BAD_DOC, norm_id, iter_raw_spans
from .otlp_file import (  # noqa: F401  (TRACEPARENT_FIX, TRACE_SETUP_NEW_TRACES: re-exported)
    INFRA_INCOMPLETE, TRACE_SETUP_NEW_TRACES, TRACEPARENT_FIX, OtlpFileSource, TraceOutcome)
from .plan import DEFAULT_ADDRESS, parse_address  # noqa: F401  (the listener's address rules)

TRACES_PATH = "/v1/traces"
MAX_BODY = 64 << 20
PROTO_REQUIREMENT = "opentelemetry-proto>=1.20"  # pyproject's `otlp` extra


def proto_install() -> str:
    """The fix for a runner that cannot decode protobuf, naming the interpreter the runner runs in."""
    return (f"decoding OTLP protobuf needs the opentelemetry-proto package in the interpreter the runner uses "
            f"({sys.executable}): run `{sys.executable} -m pip install '{PROTO_REQUIREMENT}'` (the `otlp` extra); "
            "or, if the app exports OTLP/JSON (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json), set "
            "traces.protocol: http/json in adapter.yaml")


def protobuf_available() -> bool:
    try:
        from google.protobuf.json_format import MessageToDict  # noqa: F401
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: F401
    except ImportError:
        return False
    return True


def _hex_ids(doc: dict) -> dict:
    """Protobuf JSON carries ids as base64; OTLP/JSON wants hex. Rewrite them in place."""
    for rs in doc.get("resourceSpans") or []:
        for ss in rs.get("scopeSpans") or []:
            for sp in ss.get("spans") or []:
                for key, n in (("traceId", 16), ("spanId", 8), ("parentSpanId", 8)):
                    if isinstance(sp.get(key), str) and sp[key]:
                        try:
                            raw = base64.b64decode(sp[key], validate=True)
                        except (binascii.Error, ValueError):
                            continue
                        if len(raw) == n:
                            sp[key] = raw.hex()
                for link in sp.get("links") or []:
                    for key, n in (("traceId", 16), ("spanId", 8)):
                        try:
                            raw = base64.b64decode(link.get(key) or "", validate=True)
                        except (binascii.Error, ValueError):
                            continue
                        if len(raw) == n:
                            link[key] = raw.hex()
    return doc


def decode_protobuf(body: bytes) -> dict:
    """An ExportTraceServiceRequest as an OTLP/JSON TracesData dict (hex ids).

    Raises ImportError (with proto_install()) when opentelemetry-proto is missing, ValueError
    when the bytes are not a request.
    """
    try:
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    except ImportError as exc:
        raise ImportError(proto_install()) from exc
    req = ExportTraceServiceRequest()
    try:
        req.ParseFromString(body)
    except DecodeError as exc:
        raise ValueError(f"not an ExportTraceServiceRequest: {exc}") from None
    return _hex_ids(MessageToDict(req))


class TooLarge(ValueError):
    """An export body (after decompression) over MAX_BODY: a 413."""


def gunzip_bounded(body: bytes, limit: int) -> bytes:
    """The gzip members in `body`, decompressed, never holding more than `limit` bytes of output:
    a bomb is refused while it inflates (TooLarge), not after. ValueError when it is not gzip."""
    out: list[bytes] = []
    total, data = 0, body
    try:
        while data:
            inflater = zlib.decompressobj(wbits=31)
            while data and not inflater.eof:
                chunk = inflater.decompress(data, limit - total + 1)
                total += len(chunk)
                if total > limit:
                    raise TooLarge(f"export body inflates past {limit} bytes (Content-Encoding gzip)")
                out.append(chunk)
                data = inflater.unconsumed_tail
            if not inflater.eof:
                raise ValueError("Content-Encoding gzip but the body is a cut-off gzip stream")
            data = inflater.unused_data.lstrip(b"\0")   # another member (or gzip's zero padding)
    except zlib.error as exc:
        raise ValueError(f"Content-Encoding gzip but the body is not gzip: {exc}") from None
    return b"".join(out)


def content_length(value: str | None) -> int | None:
    """The Content-Length as a byte count; None when it is negative or not a plain decimal number."""
    if value is None:
        return 0
    text = value.strip()
    return int(text) if text.isascii() and text.isdigit() else None


def decode_export(body: bytes, content_type: str | None, content_encoding: str | None = None) -> dict:
    """One OTLP/HTTP export body -> TracesData dict. Raises ValueError / ImportError / LookupError."""
    if (content_encoding or "").strip().lower() == "gzip":
        body = gunzip_bounded(body, MAX_BODY)
    elif (content_encoding or "identity").strip().lower() != "identity":
        raise LookupError(f"Content-Encoding {content_encoding!r} is not supported (use gzip or none)")
    ctype = (content_type or "").split(";", 1)[0].strip().lower()
    if ctype == "application/json":
        doc = json.loads(body.decode("utf-8"))
        if not isinstance(doc, dict):
            raise ValueError("OTLP/JSON body is not an object")
        return doc
    if ctype in ("application/x-protobuf", "application/protobuf"):
        return decode_protobuf(body)
    raise LookupError(f"Content-Type {content_type!r} is not OTLP/HTTP (application/x-protobuf or application/json)")


class _QuietServer(ThreadingHTTPServer):
    """A client that disconnects mid-exchange is the client's business: no traceback on the
    runner's stderr (socketserver prints one by default); anything else is one line."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        print(f"assay otlp-http: an export from {client_address[0]} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)


class OtlpHttpSource(OtlpFileSource):
    """The `otlp-http` store: `OtlpFileSource`'s index and `collect`, fed by an HTTP listener."""

    def __init__(self, address: str | None, convention: str = "gen_ai", quiescence_ms: float = 3000,
                 max_wait_s: float = 30, *, poll_interval_s: float | None = None,
                 correlation: str | None = None) -> None:
        super().__init__("/nonexistent/otlp-http", convention, quiescence_ms, max_wait_s,
                         poll_interval_s=poll_interval_s, correlation=correlation)
        parsed = parse_address(address)
        if parsed is None:
            raise ValueError(f"traces.location {address!r} is not a host:port to listen on")
        self.exports = self.refused = self.misrouted = 0
        self.refusal: str | None = None
        self.misrouted_path: str | None = None   # the last path an export was POSTed to instead of /v1/traces
        source = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            timeout = 60   # a client that sends less than it announced cannot hold a thread for ever

            def log_message(self, *args: Any) -> None:
                pass

            def _refuse_now(self, status: int, message: str) -> None:
                """Reply without reading the body, and close: what follows is not a request."""
                self.close_connection = True
                self._reply(status, json.dumps({"message": message}).encode(), "application/json")

            def _reply(self, status: int, body: bytes, ctype: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                length = content_length(self.headers.get("Content-Length"))
                if length is None:
                    self._refuse_now(400, "Content-Length must be a byte count (digits only)")
                    return
                if self.path.split("?", 1)[0].rstrip("/") != TRACES_PATH:
                    with source._lock:
                        source.misrouted += 1
                        source.misrouted_path = self.path.split("?", 1)[0][:200]
                    self._refuse_now(404, f"OTLP traces go to POST {TRACES_PATH}")
                    return
                if length > MAX_BODY:
                    self._refuse_now(413, f"export body too large (over {MAX_BODY} bytes)")
                    return
                body = self.rfile.read(length)
                if len(body) < length:   # the client went away mid-body: nobody to answer
                    self.close_connection = True
                    return
                ctype = self.headers.get("Content-Type")
                status, message = source.receive(body, ctype, self.headers.get("Content-Encoding"))
                as_proto = "protobuf" in (ctype or "")
                if status == 200:
                    self._reply(200, b"" if as_proto else b"{}", "application/x-protobuf" if as_proto else "application/json")
                else:
                    self._reply(status, json.dumps({"message": message}).encode(), "application/json")

        try:
            self.server = _QuietServer(parsed, _Handler)
        except OSError as exc:
            raise OSError(f"cannot listen on {parsed[0]}:{parsed[1]} for OTLP/HTTP: {exc.strerror or exc}") from None
        self.server.daemon_threads = True
        self.address = f"{parsed[0]}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name="assay-otlp-http")
        self._thread.start()

    def poll(self) -> int:
        return 0  # spans arrive by receive(); nothing to read

    def receive(self, body: bytes, content_type: str | None, content_encoding: str | None = None) -> tuple[int, str | None]:
        """Ingest one export body; (HTTP status, message for a refusal)."""
        try:
            doc = decode_export(body, content_type, content_encoding)
            triples = list(iter_raw_spans(doc))
        except ImportError as exc:
            return self._refuse(415, str(exc))
        except LookupError as exc:
            return self._refuse(415, str(exc))
        except TooLarge as exc:
            return self._refuse(413, str(exc))
        except (UnicodeDecodeError, *BAD_DOC) as exc:
            return self._refuse(400, f"unreadable OTLP export: {exc}")
        now = time.monotonic()
        with self._lock:
            for triple in triples:
                tid, _ = norm_id(triple[0].get("traceId", triple[0].get("trace_id")), 16)
                entry = self._add(tid, now)
                if entry is not None:
                    entry.docs.append(triple)
            self.spans_in_file += len(triples)
            self.exports += 1
        return 200, None

    def _refuse(self, status: int, message: str) -> tuple[int, str]:
        with self._lock:
            self.refused += 1
            self.refusal = message
        return status, message

    def setup_problem(self) -> str | None:
        """After a trace never arrived: protobuf exports refused for the missing package (no export
        can ever be read), or no export received at all (the app exports elsewhere)."""
        with self._lock:
            refusal, exports, refused = self.refusal, self.exports, self.refused
        if refused and not exports and refusal and "opentelemetry-proto" in refusal:
            return f"the app's OTLP exports to http://{self.address}{TRACES_PATH} were refused: {refusal}"
        if not exports and not refused and self.misrouted:
            return self._misrouted_fix()
        if self._unjoined():
            return (f"{exports} OTLP export(s) reached http://{self.address}{TRACES_PATH}, for "
                    f"{len(self._new_since_asked)} new trace(s) while cases waited, none of them a case's: "
                    f"{TRACEPARENT_FIX}; no case can get its trace")
        if not exports and not refused:
            return (f"no OTLP export at all reached http://{self.address}{TRACES_PATH} while a traced case waited "
                    "for its trace: set the app's OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) to "
                    f"http://{self.address} (traces.location), or check that its exporter is installed and on")
        return None

    def _misrouted_fix(self) -> str:
        """Exports POSTed to another path of this listener (an endpoint that already ends in
        /v1/traces gets it appended again by the SDK): the path they used and the two fixes."""
        return (f"{self.misrouted} OTLP export(s) reached this listener at POST {self.misrouted_path}, not "
                f"{TRACES_PATH} (refused, 404): OTEL_EXPORTER_OTLP_ENDPOINT is the base address, the SDK appends "
                f"{TRACES_PATH}: set it to http://{self.address}, or set OTEL_EXPORTER_OTLP_TRACES_ENDPOINT to "
                f"http://{self.address}{TRACES_PATH} (used as is)")

    def _missing_file_note(self) -> str:
        """No span file here: say what the listener received (none at all: the app exports elsewhere)."""
        if self.exports or self.refused:
            fix = f": {TRACEPARENT_FIX}" if self.exports and self.correlation == "traceparent-echo" else ""
            return f"; this listener received {self.exports} export(s) for other traces{fix}"
        if self.misrouted:
            return f"; {self._misrouted_fix()}"
        return (f"; this listener received no export at all: is the app's OTEL_EXPORTER_OTLP_ENDPOINT "
                f"http://{self.address} (traces.location)?")

    def collect(self, trace_id: str, *, parent_span_id: str | None = None) -> TraceOutcome:
        outcome = super().collect(trace_id, parent_span_id=parent_span_id)
        if outcome.status == INFRA_INCOMPLETE and outcome.reason:
            reason = outcome.reason.replace("in the span file", f"over OTLP/HTTP at {self.address}{TRACES_PATH}")
            if self.refusal:
                reason += f"; {self.refused} export(s) were refused, the last: {self.refusal}"
            outcome.reason = reason
        return outcome

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
