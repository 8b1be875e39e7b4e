"""The viewer's HTTP server: stdlib ThreadingHTTPServer, GET/HEAD only, read-only, strict CSP.

Serves its own assets (assay/view/static), the JSON API (api.route) and raw files under
reports/ (/raw/<run>/<path>, never a symlink, never a holdout case's files). Answers only a
request whose Host header names the address it bound (DNS rebinding): anything else is 421. Every
answer, errors and refusals included, carries the CSP headers.
"""

from __future__ import annotations

import json
import mimetypes
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from . import gates
from .api import route
from .case import case_record
from .paths import NotFound, read_raw, run_dir
from .quiet import busy

STATIC = Path(__file__).parent / "static"
ASSETS = {"/": "index.html", "/index.html": "index.html", "/app.js": "app.js", "/app.css": "app.css"}
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def raw_bytes(reports: Path, rel: str) -> bytes:
    """/raw/<run>/<file>, or /raw/<run>/cases/<id>/<artifact> from the case's record (either
    layout); never a holdout case's artifact, never a file that names holdout ids."""
    parts = [p for p in unquote(rel).split("/") if p]
    if len(parts) < 2 or any(p in (".", "..") for p in parts):
        raise NotFound(rel)
    d = run_dir(reports, parts[0])
    if len(parts) >= 4 and parts[1] == "cases":
        data = case_record(reports, parts[0], parts[2]).read("/".join(parts[3:]))
        if data is None:
            raise NotFound(rel)
        return data
    if len(parts) != 2 or parts[1] in ("verdicts.jsonl", "verdicts_for_stats.jsonl", "repeats.jsonl", "cases.jsonl"):
        raise NotFound(rel)  # these name holdout ids (the journal holds holdout cases whole)
    data = read_raw(d / parts[1], reports)
    sealed = _run_holdout_ids(reports, d)
    if sealed is None or any(cid.encode("utf-8", "surrogateescape") in data for cid in sealed):
        raise NotFound(rel)  # manifest.yaml lists every case of the plan, a holdout run's by id
    return data


def _run_holdout_ids(reports: Path, d: Path) -> set[str] | None:
    """The run's holdout case ids (verdicts.jsonl's holdout rows, manifest.yaml's holdout set), or
    None when its manifest cannot be read (what it names is then unknown: nothing is served raw)."""
    from .paths import read_json, read_jsonl
    ids = {r["case_id"] for r in read_jsonl(d / "verdicts.jsonl", reports)
           if r.get("holdout") and isinstance(r.get("case_id"), str) and r["case_id"]}
    manifest = read_json(d / "manifest.yaml", reports)
    if not isinstance(manifest, dict):
        return None
    cases = manifest.get("cases") if isinstance(manifest.get("cases"), list) else []
    return ids | {c["id"] for c in cases if isinstance(c, dict) and c.get("set") == "holdout"
                  and isinstance(c.get("id"), str) and c["id"]}


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARD = ("0.0.0.0", "::", "")


def allowed_hosts(bind: str, port: int, names: list[str] | None = None) -> frozenset[tuple[str, int]]:
    """The (host, port) pairs a request's Host header may name: the bound address, the loopback
    names when it is loopback or a wildcard, and each name given (`--host-name`)."""
    hosts = {bind.lower().strip("[]")} - set(WILDCARD)
    if not hosts or hosts & set(LOOPBACK_NAMES):
        hosts |= set(LOOPBACK_NAMES)
    hosts |= {n.lower().strip("[]") for n in names or ()}
    return frozenset((h, port) for h in hosts)


def parse_host(value: str | None) -> tuple[str, int] | None:
    """A Host header as (name, port) (port 80 when absent), None when it is missing or malformed."""
    if not value or any(c.isspace() or c in "/@?#" for c in value):
        return None
    value = value.lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else (None if rest else "80")
    else:
        name, sep, port = value.rpartition(":") if ":" in value else (value, "", "80")
    if not name or port is None or not port.isdigit() or len(port) > 5:
        return None
    return name.rstrip("."), int(port)


class Handler(BaseHTTPRequestHandler):
    reports: Path
    hosts: frozenset = frozenset()
    server_version = "assay-view"
    sys_version = ""

    def log_message(self, fmt, *args):  # quiet: the URL was printed once
        pass

    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        if code in (204, 405):
            self.send_header("Allow", "GET, HEAD, OPTIONS")
        self.end_headers()
        if self.command != "HEAD" and code != 204:
            self.wfile.write(body)

    def send_error(self, code, message=None, explain=None):
        """Every refusal of http.server's own (unknown method, bad request line) as JSON with the
        CSP headers, never its HTML error page."""
        self.close_connection = True
        body = json.dumps({"error": message or self.responses.get(code, ("error",))[0]}).encode()
        self._send(code, body, "application/json")

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        host = parse_host(self.headers.get("Host"))
        if host not in self.hosts:
            shown = (self.headers.get("Host") or "")[:80].encode("ascii", "backslashreplace").decode()
            self.close_connection = True
            self._send(421, json.dumps({"error": f"Host {shown!r} is not an address this viewer serves (DNS "
                                        "rebinding is refused); open the URL view.py printed, or name the "
                                        "host with --host-name"}).encode(), "application/json")
            return False
        return True

    def do_GET(self):  # noqa: N802
        self.server.last_request = time.monotonic()
        url = urlsplit(self.path)
        try:
            if url.path in ASSETS:
                name = ASSETS[url.path]
                ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
                return self._send(200, (STATIC / name).read_bytes(), ctype + "; charset=utf-8")
            if url.path.startswith("/api/"):
                with busy():
                    doc = route(self.reports, url.path, parse_qs(url.query))
                return self._send(200, json.dumps(doc, default=str).encode(), "application/json")
            if url.path.startswith("/raw/"):
                data = raw_bytes(self.reports, url.path[len("/raw/"):])
                return self._send(200, data, "text/plain; charset=utf-8")
        except NotFound:
            pass
        except Exception as exc:  # noqa: BLE001 - a page must get an answer, never a dropped connection
            body = json.dumps({"error": f"the viewer could not read this ({type(exc).__name__})"}).encode()
            return self._send(500, body, "application/json")
        self._send(404, b'{"error": "not found"}', "application/json")

    do_HEAD = do_GET

    def do_OPTIONS(self):  # noqa: N802
        self._send(204, b"", "application/json")

    def do_POST(self):  # noqa: N802
        self._send(405, b'{"error": "read-only"}', "application/json")

    do_PUT = do_DELETE = do_PATCH = do_POST


def make_server(reports: Path, bind: str, port: int, host_names: list[str] | None = None) -> ThreadingHTTPServer:
    handler = type("BoundHandler", (Handler,), {"reports": reports})
    srv = ThreadingHTTPServer((bind, port), handler)
    handler.hosts = allowed_hosts(bind, srv.server_address[1], host_names)
    srv.daemon_threads = True
    srv.last_request = None
    gates.start_worker()   # the gate decisions' own process, its imports done before the first page asks
    return srv


def serve(srv: ThreadingHTTPServer, *, seconds: float | None = None, until_request: bool = False) -> None:
    """Serve until interrupted, or for `seconds`, or until the first request has been answered."""
    if seconds is None and not until_request:
        try:
            srv.serve_forever()
        finally:
            gates.stop_worker()
        return
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    start = time.monotonic()
    try:
        while True:
            time.sleep(0.05)
            if seconds is not None and time.monotonic() - start >= seconds:
                break
            if until_request and srv.last_request is not None and time.monotonic() - srv.last_request > 0.5:
                break
    finally:
        srv.shutdown()
        srv.server_close()
        gates.stop_worker()
