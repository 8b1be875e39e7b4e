"""A scriptable fake HTTP app for tests: a real server on a real loopback port, in a thread.

Usage:

    from fakeapp import FakeApp, Reply

    with FakeApp() as app:                       # 127.0.0.1:<free port>, ThreadingHTTPServer
        app.url                                  # "http://127.0.0.1:PORT"
        app.handler = lambda req: Reply(200, {"message": "hi"})   # every request, unless queued
        app.queue(Reply(503, "busy", retry_after=0), Reply(200, {"message": "ok"}))  # next requests, in order
        ... run something against app.url ...
        app.requests                             # every request seen: Request(method, path, headers, body, json)
        app.count(path="/api/chat")              # how many requests hit that path

FakeApp(tls=(certfile, keyfile)) serves HTTPS instead (see self_signed_cert()).

Reply(status=200, body=None, headers=None, delay=0.0, drop=False, retry_after=None, raw=None, cut=None)
  body: dict/list -> JSON; str -> UTF-8 text; bytes -> as-is. `raw` (bytes) wins over body.
  delay: seconds to sleep before answering (a hang: delay > the runner's timeout).
  drop: close the socket without any response (a dropped connection / crash).
  retry_after: adds a Retry-After header.
  cut: send the headers (the whole body's Content-Length) and only the body's first `cut` bytes,
       then close the connection (an app or proxy that dies mid-body).

The default handler answers GET with 200 {"ok": true} (a health check) and POST with
200 {"message": "echo: <message>", "route": <json "route" or None>, "echo_headers": {...}}
where echo_headers echoes request headers only when the request JSON has "echo_headers": true.
Handlers run on the server's threads; `app.requests` is guarded by a lock.

Also here, for driving run_cases.py against a FakeApp (see the bottom of the file):
make_state(tmp) -> a state dir; case(id, message, expect=..., **fields); adapter(url, **invocation);
make_plan(state, cases, app_url=...) -> a valid plan; write_plan(state, plan) -> its path;
run_runner(*argv) -> helpers.Result: run_cases.py as a subprocess (ASSAY_TESTS_INPROCESS=1: in this process);
self_signed_cert(dir) -> (certfile, keyfile) for FakeApp(tls=...).
"""

from __future__ import annotations

import pytest

import json
import socket
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any = None


@dataclass
class Reply:
    status: int = 200
    body: Any = None
    headers: dict[str, str] | None = None
    delay: float = 0.0
    drop: bool = False
    retry_after: Any = None
    raw: bytes | None = None
    cut: int | None = None


def default_handler(req: Request) -> Reply:
    if req.method == "GET":
        return Reply(200, {"ok": True})
    doc = req.json if isinstance(req.json, dict) else {}
    out = {"message": f"echo: {doc.get('message')}", "route": doc.get("route")}
    if doc.get("echo_headers"):
        out["echo_headers"] = req.headers
    return Reply(200, out)


class FakeApp:
    def __init__(self, handler: Callable[[Request], Reply] | None = None, *, tls: tuple[str, str] | None = None) -> None:
        self.handler = handler or default_handler
        self.requests: list[Request] = []
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        app = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True   # headers and body go out as separate writes: no 40 ms delayed-ACK stall

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    doc = json.loads(body.decode("utf-8")) if body else None
                except ValueError:
                    doc = None
                req = Request(self.command, self.path, {k: v for k, v in self.headers.items()}, body, doc)
                with app._lock:
                    app.requests.append(req)
                    reply = app._queue.pop(0) if app._queue and self.command != "GET" else None
                if reply is None:
                    reply = app.handler(req)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                if reply.raw is not None:
                    data, ctype = reply.raw, "application/octet-stream"
                elif isinstance(reply.body, (dict, list)):
                    data, ctype = json.dumps(reply.body).encode("utf-8"), "application/json"
                elif isinstance(reply.body, bytes):
                    data, ctype = reply.body, "application/octet-stream"
                elif reply.body is None:
                    data, ctype = b"", "text/plain"
                else:
                    data, ctype = str(reply.body).encode("utf-8"), "text/plain; charset=utf-8"
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    if reply.retry_after is not None:
                        self.send_header("Retry-After", str(reply.retry_after))
                    for k, v in (reply.headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    if reply.cut is not None:   # the body stops short of its Content-Length
                        self.wfile.write(data[:reply.cut])
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        if tls:  # (certfile, keyfile): serve HTTPS with that (e.g. self-signed) certificate
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.url = f"https://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def queue(self, *replies: Reply) -> None:
        """Answer the next non-GET requests with these replies, in order, before the handler."""
        with self._lock:
            self._queue.extend(replies)

    def posts(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.method != "GET"]

    def count(self, path: str | None = None, method: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if (path is None or r.path == path)
                       and (method is None or r.method == method))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> "FakeApp":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def self_signed_cert(directory) -> tuple[str, str] | None:
    """(certfile, keyfile) for 127.0.0.1 made with the openssl CLI, or None when it is absent."""
    import shutil
    import subprocess
    from pathlib import Path
    if not shutil.which("openssl"):
        return None
    cert, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
    proc = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True)
    return (str(cert), str(key)) if proc.returncode == 0 else None


# ---------------------------------------------------------------------------- plan builders
# A minimal valid state dir + plan for driving run_cases.py against a FakeApp:
#
#     state = make_state(tmp_path)                     # <tmp>/app/.assay with reports/ and datasets/
#     plan = make_plan(state, [case("c-1", "hello", expect={"answer": {"must_contain": ["hello"]}})],
#                      app_url=app.url)
#     plan_path = write_plan(state, plan)             # <state>/work/plan.json
#     out = state / "reports" / plan["run_id"]

RUN_ID = "smoke-20261129T101500Z"


def make_state(root) -> "Any":
    from pathlib import Path
    state = Path(root) / "app" / ".assay"
    (state / "reports").mkdir(parents=True, exist_ok=True)
    (state / "datasets").mkdir(parents=True, exist_ok=True)
    (state / "work").mkdir(parents=True, exist_ok=True)
    return state


def case(cid: str, message: str = "hello", *, split=("smoke",), expect: dict | None = None, **fields: Any) -> dict:
    doc = {"id": cid, "split": list(split), "category": "happy", "test_type": "MFT", "template_id": None,
           "input": {"messages": [{"role": "user", "content": message}]},
           "expect": expect if expect is not None else {"answer": {"must_contain": [message]}}}
    doc.update(fields)
    return doc


def adapter(app_url: str, **invocation: Any) -> dict:
    inv = {"mode": "http", "base_url": app_url, "endpoint": "POST /api/chat", "auth": {"type": "none"},
           "request_body": '{"message": "<user turn>", "session_id": "<uuid>"}',
           "response_body": '{"message": "<answer>"}', "route_from_response": "route",
           "health_check": {"method": "GET", "path": "/health", "expect_status": [200]},
           # sized for a loaded machine (CI shares its cores): only an app that never answers waits
           # it out; a test of a hang sets its own short execution.timeout_s
           "timeout_s": 60}
    inv.update(invocation)
    return {"adapter_version": 1, "app": {"name": "fake"}, "invocation": inv,
            "traces": {"source": "none"}, "environment": {"kind": "mocked", "safe_to_attack": True},
            "data": {"may_contain_pii": False}, "tools": []}


def run_as_a_user(tmp_path, state, handler: Callable, url_var: str):
    """The README's pipeline on a written state dir, each script a subprocess started from another
    directory (as a user in their own shell): convert_suite, make_plan --mode smoke, run_cases against
    `handler` on a real port (its URL in `url_var`), then gate. Returns (the run dir, gate's Result)."""
    from helpers import run_script
    work, elsewhere = state / "work", tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work, cwd=elsewhere)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("make_plan", work / "converted.json", "--mode", "smoke", "--state-dir", state,
                   "-o", work / "plan.json", cwd=elsewhere)
    assert r.rc == 0, r.stdout + r.stderr
    out = state / "reports" / r.json["run_id"]
    with FakeApp(handler) as app:
        ran = run_script("run_cases", "--plan", work / "plan.json", "--out", out, cwd=elsewhere, env={url_var: app.url})
    assert ran.rc == 0, ran.stdout + ran.stderr
    return out, run_script("gate", out, cwd=elsewhere)


def make_plan(state, cases: list[dict], *, app_url: str = "http://127.0.0.1:9", run_id: str = RUN_ID,
              mode: str = "smoke", k: int = 1, selecting_split: str = "smoke", adapter_doc: dict | None = None,
              matrix: dict | None = None, execution: dict | None = None, scoring: dict | None = None,
              **extra: Any) -> dict:
    plan = {"plan_version": 1, "run_id": run_id, "mode": mode, "k": k,
            "gate": {"smoke": "soft", "regression": "hard", "targeted": "soft", "holdout": "decision"}[mode],
            "selecting_split": selecting_split,
            "paths": {"scripts_dir": None, "state_dir": str(state), "holdout_ledger": None, "judge_calibration": None},
            "adapter": adapter_doc or adapter(app_url), "capability_matrix": matrix or {},
            "cases": cases, "execution": execution or {"max_attempts": 3, "backoff_s": [0, 0]},
            "manifest_extra": {"dataset_version": 1}}
    if scoring is not None:
        plan["scoring"] = scoring
    if mode == "holdout":
        plan["paths"]["holdout_ledger"] = "datasets/holdout-looks.jsonl"
    plan.update(extra)
    return plan


def write_plan(state, plan: dict, name: str = "plan.json"):
    path = state / "work" / name
    path.write_text(json.dumps(plan, indent=2), encoding="utf-8")
    return path


def run_runner(*args: Any, env: dict[str, str] | None = None):
    """run_cases.py with these argv, as a real subprocess (argv in, stdout JSON + exit code out).

    Returns helpers.Result(rc, stdout, stderr). For quick local iteration only,
    ASSAY_TESTS_INPROCESS=1 runs the same parser and command layer in this process
    instead (no interpreter start-up); CI never sets it, so every runner test meets the
    script the way a user does.
    """
    import os as _os

    if _os.environ.get("ASSAY_TESTS_INPROCESS") != "1":
        from helpers import run_script

        return run_script("run_cases", *args, env=env)
    return _run_runner_in_process(*args, env=env)


def run_runner_mixed_split(monkeypatch, *args: Any, env: dict[str, str] | None = None):
    """run_cases.py (in-process) on a plan holding a case split [smoke, holdout]: a plan refuses one
    now (holdout_not_sealed: its run would read a holdout result with no look on the ledger), but
    run dirs written before it did exist, and every reader and progress line must still seal it."""
    monkeypatch.setattr("assay.plan.validate.holdout_unsealed", lambda split: False)
    return _run_runner_in_process(*args, env=env)


def _run_runner_in_process(*args: Any, env: dict[str, str] | None = None):
    import contextlib
    import io
    import os

    from helpers import Result

    from assay.core.cli import make_parser, run_command
    from assay.run.command import EXAMPLE, add_arguments, run

    def build_parser():
        parser = make_parser("run_cases.py", "run_cases (in-process)", EXAMPLE)
        add_arguments(parser)
        return parser

    saved = {k: os.environ.get(k) for k in (env or {})}
    out, err = io.StringIO(), io.StringIO()
    try:
        os.environ.update(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = run_command(build_parser, run, argv=[str(a) for a in args], script="run_cases.py")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Result(rc, out.getvalue(), err.getvalue())


# Fixtures the runner tests share (import them by name: `from fakeapp import app, state`).
@pytest.fixture
def app():
    """A FakeApp on a loopback port for one test."""
    with FakeApp() as a:
        yield a


@pytest.fixture
def state(tmp_path):
    """A fresh state dir (`<tmp>/app/.assay`) for one test."""
    return make_state(tmp_path)


def run_series(state, run_ids: list[str], cases_of: Callable[[str], list[dict]],
               wrong: Callable[[str, str, int], bool], k_of: Callable[[str], int] = lambda run_id: 1) -> None:
    """A history's runs, in turn, against one FakeApp (run_cases.py as a subprocess each): the app
    answers `wrong(run_id, message, n)` wrongly, n counting that message's calls in that run (1, 2, ...:
    its repeats at k > 1); `cases_of(run_id)` and `k_of(run_id)` are the run's cases and k."""
    from helpers import run_script
    now, calls, lock = [""], {}, threading.Lock()

    def app(req: Request) -> Reply:
        if req.method == "GET":
            return Reply(200, {"ok": True})
        msg = str((req.json or {}).get("message"))
        with lock:
            calls[(now[0], msg)] = n = calls.get((now[0], msg), 0) + 1
        return Reply(200, {"message": "sorry, no" if wrong(now[0], msg, n) else f"echo: {msg}"})

    with FakeApp(app) as fake:
        for run_id in run_ids:
            now[0] = run_id
            plan = write_plan(state, make_plan(state, cases_of(run_id), app_url=fake.url, run_id=run_id,
                                               k=k_of(run_id)), f"{run_id}.json")
            r = run_script("run_cases", "--plan", plan, "--out", state / "reports" / run_id, "--progress", "never")
            assert r.rc == 0, r.stdout + r.stderr
