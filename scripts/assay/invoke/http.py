"""The `http` invoker: one keep-alive connection per (thread, host), TLS verified by default.

`prepare()` builds the wire request (secrets resolved) and the recorded request
(`${NAME}` kept literally, secret headers REDACTED); `send()` performs one attempt and
never raises: every transport problem is an Outcome the retry loop classifies.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import ssl
import threading
import time
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..core import writer
from ..core.errors import AssayError
from ..core import secrets
from . import templates
from .outcome import (CONNECTION, DROPPED, MAX_BODY_BYTES, RESPONSE, TIMEOUT, Outcome,
                      decode_body)
from ..core.jsonio import sha256_bytes
from ..core.resources import is_runner_resource
from .http_response import RESPONSE_CLASS, read_body

_DROP_ERRORS = (http.client.RemoteDisconnected, http.client.IncompleteRead, http.client.BadStatusLine,
                ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def user_turn(case: Mapping[str, Any]) -> str | None:
    msgs = ((case.get("input") or {}).get("messages")) or []
    users = [m for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
    return str(users[-1].get("content", "")) if users else None


def placeholder_values(case: Mapping[str, Any], uuid: str, session: Any = templates.UNSET) -> dict[str, Any]:
    """The placeholder values of one request; `<session>` stays UNSET until a server-id app gave one."""
    return {"<user turn>": user_turn(case) or "", "<uuid>": uuid,
            "<persona>": case.get("persona"), "<case id>": case.get("id"), "<session>": session}


def tls_context(insecure: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


class _OneSend:
    """Headers and a bytes body in ONE send: http.client sends them apart (two syscalls and two
    TCP segments per request, with TCP_NODELAY), which the runner pays on every case. The answer's
    header block is read without the `email` package when it is plain lines (invoke.http_response)."""

    response_class = RESPONSE_CLASS

    def _send_output(self, message_body=None, encode_chunked=False):  # noqa: D401 (http.client hook)
        if isinstance(message_body, bytes) and not encode_chunked:
            self._buffer.extend((b"", b""))
            msg = b"\r\n".join(self._buffer) + message_body
            del self._buffer[:]
            self.send(msg)
            return
        super()._send_output(message_body, encode_chunked)


class _HTTPConnection(_OneSend, http.client.HTTPConnection):
    pass


class _HTTPSConnection(_OneSend, http.client.HTTPSConnection):
    pass


class HttpInvoker:
    mode = "http"

    def __init__(self, invocation: Mapping[str, Any], env: Mapping[str, str], *, timeout_s: float,
                 insecure_tls: bool) -> None:
        self.inv = invocation
        self.env = env
        self.timeout_s = float(timeout_s)
        self.insecure_tls = insecure_tls
        self._ctx: ssl.SSLContext | None = None  # built on the first https connection (~15 ms)
        self._ctx_lock = threading.Lock()
        base_raw = str(invocation.get("base_url") or "")
        self.base_recorded = base_raw.rstrip("/")
        self.base_wire = secrets.expand(base_raw, env).rstrip("/")
        self.base_vars = sorted(secrets.ENV_REF.findall(base_raw))
        parts = urlsplit(self.base_wire)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            if self.base_vars:
                raise AssayError(
                    f"pre-flight: invocation.base_url {self.base_recorded!r} resolved to {self.base_wire!r}, "
                    f"which is not an http(s) URL with a host; set {self._vars_named()} to e.g. "
                    f"http://127.0.0.1:8080 (scheme, host and port)", 3, key="invocation.base_url",
                    env=self.base_vars)
            raise AssayError(f"pre-flight: invocation.base_url must be an http(s) URL (got "
                             f"{self.base_recorded!r}); set it in adapter.yaml", 3, key="invocation.base_url")
        endpoint = str(invocation.get("endpoint") or "POST /")
        bits = endpoint.split(None, 1)
        if len(bits) != 2 or not bits[0].isalpha() or not bits[1].startswith(("/", "${")):
            raise AssayError(f"pre-flight: invocation.endpoint must be 'METHOD /path' (got {endpoint!r})",
                             3, key="invocation.endpoint")
        self.method = bits[0].upper()
        self.path_recorded = bits[1]
        self.path_wire = secrets.expand(bits[1], env)
        body = invocation.get("request_body")
        if body is None:
            raise AssayError("pre-flight: invocation.request_body is required for http mode (a JSON string "
                             "template with <user turn>)", 3, key="invocation.request_body")
        self.body_recorded = templates.parse_template(body, "invocation.request_body")
        self.body_wire = secrets.expand_deep(self.body_recorded, env)
        self.static_headers = self._static_headers()
        self.identity_map = invocation.get("identity_map") or {}
        self._local = threading.local()
        # every thread's pool, so close() reaches the case workers' connections too: a pool left to a
        # finished thread is closed by the garbage collector with a ResourceWarning per socket, which
        # `pytest -W error` (filterwarnings = error) reports as an error of the next test item
        self._pools: list[dict] = []
        self._pools_lock = threading.Lock()

    @property
    def ctx(self) -> ssl.SSLContext:
        """The TLS context, built once, on first use: a plain-http app never pays for loading the
        system's CA store."""
        with self._ctx_lock:
            if self._ctx is None:
                self._ctx = tls_context(self.insecure_tls)
            return self._ctx

    # ---- request building -------------------------------------------------
    def _static_headers(self) -> list[tuple[str, str, str]]:
        """(name, wire value, recorded value) for auth and declared headers."""
        out: list[tuple[str, str, str]] = []
        auth = self.inv.get("auth") or {"type": "none"}
        kind = auth.get("type", "none")
        if kind == "bearer":
            out.append(("Authorization", f"Bearer {self.env[auth['token_env']]}", secrets.REDACTED))
        elif kind == "cookie":
            out.append(("Cookie", self.env[auth["cookie_env"]], secrets.REDACTED))
        elif kind == "headers":
            for name, value in (auth.get("headers") or {}).items():
                out.append((str(name), secrets.expand(str(value), self.env), secrets.REDACTED))
        elif kind != "none":
            raise AssayError(f"pre-flight: invocation.auth.type {kind!r} is not one of bearer, headers, "
                             "cookie, none", 3, key="invocation.auth.type")
        for name, value in (self.inv.get("headers") or {}).items():
            value = str(value)
            recorded = secrets.REDACTED if secrets.has_env_ref(value) else value
            out.append((str(name), secrets.expand(value, self.env), recorded))
        return out

    def identity_headers(self, case: Mapping[str, Any]) -> list[tuple[str, str, str]]:
        ident = case.get("identity")
        out: list[tuple[str, str, str]] = []
        if not isinstance(ident, Mapping):
            return out
        for key, value in ident.items():
            if key == "token_env":   # recorded by its name (never its value): replay and rescore key on who asked
                out.append(("Authorization", f"Bearer {self.env[value]}", f"Bearer ${{{value}}}"))
                continue
            header = self.identity_map.get(key)
            if header:
                text = ",".join(map(str, value)) if isinstance(value, list) else (
                    value if isinstance(value, str) else json.dumps(value))
                out.append((str(header), text, text))
        return out

    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None,
                session: Any = templates.UNSET):
        """(wire, recorded) for one request. A `Cookie` in extra_headers (a conversation's jar)
        follows the static auth cookie in one header; it is recorded as sent (the caller redacts)."""
        values = placeholder_values(case, uuid, session)
        wire_body = templates.fill(self.body_wire, values)
        recorded_body = templates.fill(self.body_recorded, values)
        headers = self.static_headers + self.identity_headers(case)
        wire_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        rec_headers = dict(wire_headers)
        for name, wire, rec in headers:
            wire_headers[name] = wire
            rec_headers[name] = rec
        for name, value in (extra_headers or {}).items():
            if name.lower() == "cookie" and "Cookie" in wire_headers:
                wire_headers["Cookie"] = f"{wire_headers['Cookie']}; {value}"
                rec_headers["Cookie"] = secrets.REDACTED
                continue
            wire_headers[name] = value
            rec_headers[name] = value
        wire = {"method": self.method, "url": self.base_wire + self.path_wire, "headers": wire_headers,
                "body": json.dumps(wire_body, ensure_ascii=False).encode("utf-8")}
        recorded = {"mode": "http", "method": self.method, "url": self.base_recorded + self.path_recorded,
                    "headers": rec_headers, "body": recorded_body}
        return wire, recorded

    def retrace(self, wire: dict, recorded: dict, trace_headers: Mapping[str, str]) -> bool:
        """Put a retry's own trace headers (a fresh `traceparent`) on a prepared request, in place."""
        wire["headers"].update(trace_headers)
        recorded["headers"].update(trace_headers)
        return True

    # ---- one attempt ----------------------------------------------------------
    def _vars_named(self) -> str:
        return " and ".join(f"${name}" for name in self.base_vars)

    def base_fix_hint(self) -> str:
        """What to fix when the base URL is wrong: the env var it came from, else the adapter key."""
        return f"{self._vars_named()} (invocation.base_url)" if self.base_vars else "invocation.base_url"

    def shown_resolved(self, url: str) -> str | None:
        """The URL as sent, with its port, when it came from env vars (redacted by the writer if secret)."""
        if not self.base_vars:
            return None
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.scheme}://{parts.hostname}:{port}{parts.path}"

    def _conn(self, scheme: str, host: str, port: int, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
            with self._pools_lock:
                self._pools.append(pool)
        key = (scheme, host, port)
        conn = pool.get(key)
        if conn is not None and not fresh:
            return conn, True
        if conn is not None:
            conn.close()
        if scheme == "https":
            conn = _HTTPSConnection(host, port, timeout=self.timeout_s, context=self.ctx)
        else:
            conn = _HTTPConnection(host, port, timeout=self.timeout_s)
        pool[key] = conn
        return conn, False

    def _drop(self, key: tuple) -> None:
        pool = getattr(self._local, "pool", {})
        conn = pool.pop(key, None)
        if conn is not None:
            conn.close()

    def request(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Outcome:
        parts = urlsplit(url)
        scheme, host = parts.scheme, parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        key = (scheme, host, port)
        start = time.perf_counter()
        conn, reused = self._conn(scheme, host, port, False)
        if reused and _stale(conn):
            # The app closed this keep-alive connection while it sat idle: open a fresh one
            # BEFORE sending, so no request is ever written to a dead socket and resent.
            conn, reused = self._conn(scheme, host, port, True)
        sent = False
        try:
            conn.request(method, path, body=body, headers=dict(headers))
            sent = True
            _quickack(conn)
            resp = conn.getresponse()
            raw = read_body(resp, MAX_BODY_BYTES + writer.read_margin() + 1)
            truncated = len(raw) > MAX_BODY_BYTES
            if truncated:   # redact, then cut: a secret straddling the bound leaves no prefix
                raw = writer.clip_bytes(raw, MAX_BODY_BYTES)
                self._drop(key)
            elif resp.will_close:
                self._drop(key)
            text, doc, ok, notes = decode_body(raw, truncated)
            pairs = resp.getheaders()
            return Outcome(RESPONSE, status=resp.status, headers={k: v for k, v in pairs},
                           body_text=text, body_json=doc, json_ok=ok, notes=notes, body_sha=sha256_bytes(raw),
                           latency_ms=_ms(start), set_cookies=[v for k, v in pairs if k.lower() == "set-cookie"])
        except _DROP_ERRORS as exc:
            self._drop(key)
            if not sent:  # lost while writing the request: a connection failure, still one attempt
                return Outcome(CONNECTION, error=f"connection lost while sending: {type(exc).__name__}",
                               latency_ms=_ms(start))
            # The request was sent and the connection died before a whole answer came back: it may
            # have reached the app, so it is an attempt, and a crash (never resent silently).
            return Outcome(DROPPED, error=f"connection dropped: {type(exc).__name__}", latency_ms=_ms(start))
        except (socket.timeout, TimeoutError):
            self._drop(key)
            return Outcome(TIMEOUT, error=f"no response within {self.timeout_s:g} s", latency_ms=_ms(start))
        except ssl.SSLCertVerificationError as exc:
            self._drop(key)
            return Outcome(CONNECTION, error=f"TLS: CERTIFICATE_VERIFY_FAILED ({exc.verify_message})",
                           latency_ms=_ms(start))
        except (OSError, http.client.HTTPException) as exc:
            self._drop(key)
            if is_runner_resource(exc):   # no descriptor for a socket: the runner's limit, not the app
                raise
            return Outcome(CONNECTION, error=f"{type(exc).__name__}: {exc}", latency_ms=_ms(start))

    def send(self, wire: Mapping[str, Any]) -> Outcome:
        return self.request(wire["method"], wire["url"], wire["headers"], wire["body"])

    def health_url(self, path: str | None) -> str:
        return self.base_wire + (secrets.expand(path, self.env) if path else "")

    def close(self) -> None:
        """Close every thread's connections (called once the case workers are done)."""
        with self._pools_lock:
            pools, self._pools = self._pools, []
        for pool in pools:
            for conn in list(pool.values()):
                conn.close()
            pool.clear()


def _stale(conn: http.client.HTTPConnection) -> bool:
    """True when an idle pooled connection is readable: the peer closed it (EOF) or sent bytes
    nobody asked for. Either way it must not carry the next request."""
    sock = conn.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


_TCP_QUICKACK = getattr(socket, "TCP_QUICKACK", None)


def _quickack(conn: http.client.HTTPConnection) -> None:
    """ACK the answer's first segment at once. A server that writes headers and body apart with
    Nagle on (Python's http.server, dev servers built on it) holds the body until its headers
    are ACKed, and a keep-alive client delays that ACK ~40 ms: every request would wait 40 ms.
    Linux resets quick-ACK mode on its own, so it is set again before each answer is read."""
    sock = conn.sock
    if _TCP_QUICKACK is None or sock is None:
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)
    except (OSError, ValueError):
        pass


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
