"""How a judge call reaches its judge: one HTTP POST (anthropic/openai) or one command run.

Both return an `Outcome` (assay.invoke.outcome), so a judge outage is classified by the same
rules as an app outage: infra, never a fail. Used by the runtime (assay.judge.runtime) and the
pre-flight probe (assay.judge.probe).
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit

from ..core import writer
from ..invoke.http_response import read_body
from ..invoke.outcome import CONNECTION, DROPPED, EXCEPTION, MAX_BODY_BYTES, RESPONSE, TIMEOUT, Outcome, decode_body

KILL_GRACE_S = 2.0


def post(url: str, headers: dict[str, str], body: bytes, timeout_s: float, insecure_tls: bool) -> Outcome:
    parts = urlsplit(url)
    start = time.perf_counter()
    try:
        if parts.scheme == "https":
            import ssl
            ctx = ssl.create_default_context()
            if insecure_tls:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout_s,
                                                                           context=ctx)
        else:
            conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        try:
            conn.request("POST", path, body=body, headers=dict(headers, **{"content-length": str(len(body))}))
            resp = conn.getresponse()
            raw = read_body(resp, MAX_BODY_BYTES + writer.read_margin() + 1)   # redact, then cut at the bound
            cut = len(raw) > MAX_BODY_BYTES
            text, value, ok, notes = decode_body(writer.clip_bytes(raw, MAX_BODY_BYTES) if cut else raw, cut)
            return Outcome(RESPONSE, status=resp.status, headers={k: v for k, v in resp.getheaders()},
                           body_text=text, body_json=value, json_ok=ok, notes=notes, latency_ms=elapsed_ms(start))
        finally:
            conn.close()
    except (TimeoutError, OSError) as exc:  # socket.timeout is TimeoutError
        if isinstance(exc, TimeoutError):
            return Outcome(TIMEOUT, error=f"no answer within {timeout_s} s", latency_ms=elapsed_ms(start))
        if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
            return Outcome(DROPPED, error=str(exc), latency_ms=elapsed_ms(start))
        return Outcome(CONNECTION, error=f"{type(exc).__name__}: {exc}", latency_ms=elapsed_ms(start))
    except http.client.HTTPException as exc:
        return Outcome(DROPPED, error=f"{type(exc).__name__}: {exc}", latency_ms=elapsed_ms(start))


def run_command(argv: list[str], stdin_text: str, timeout_s: float, cwd: Path,
                 env: Mapping[str, str] | None = None, who: str = "judge") -> Outcome:
    """One run of a command provider's argv; `who` names it in every error (the judge, the simulator)."""
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=str(cwd), start_new_session=True, env=dict(env) if env is not None else None)
    except OSError as exc:
        return Outcome(EXCEPTION, error=f"cannot start {who} command {argv[0]!r}: {exc.strerror or exc}",
                       latency_ms=elapsed_ms(start))
    try:
        out, err = proc.communicate(stdin_text.encode("utf-8"), timeout=timeout_s)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return Outcome(TIMEOUT, error=f"{who} command ran past {timeout_s} s", latency_ms=elapsed_ms(start))
    if proc.returncode != 0:
        tail = writer.clip(err.decode("utf-8", "replace").strip(), 300, tail=True)
        return Outcome(EXCEPTION, error=f"{who} command exited {proc.returncode}: {tail or 'no stderr'}",
                       latency_ms=elapsed_ms(start))
    text = (writer.clip_bytes(out, MAX_BODY_BYTES) if len(out) > MAX_BODY_BYTES else out).decode("utf-8", "replace")
    return Outcome(RESPONSE, status=200, body_text=text, latency_ms=elapsed_ms(start))


def kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=KILL_GRACE_S)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        proc.communicate(timeout=KILL_GRACE_S)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def elapsed_ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
