#!/usr/bin/env python3
"""A scripted model behind the Anthropic Messages API: drive any `claude -p` session without one.

The server speaks the real wire format on a loopback port (a ThreadingHTTPServer in a thread):

- `POST /v1/messages` streaming (server-sent events: `message_start`, `ping`,
  `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
  `content_block_stop`, `message_delta` with `stop_reason` and `usage`, `message_stop`)
  and non-streaming (one `message` object);
- `POST /v1/messages/count_tokens` -> `{"input_tokens": N}`;
- anything else -> a 404 in the API's error shape (`{"type": "error", "error": {...}}`).

A **script** is a list of steps. Each request that offers tools (the agent loop) takes the
next step; a request without tools (a title, a summary, a quota check: whatever the client
sends on the side) is answered with a short text and takes none. A step is:

- `text("Done.")`                          -> a text block, `stop_reason: end_turn`;
- `tool("Bash", {"command": "ls"})`        -> a `tool_use` block (id `toolu_...`, unique),
  `stop_reason: tool_use`; the input may be a function of a `Context` (the tool results of
  the conversation so far): `tool("Bash", lambda ctx: {"command": f"cat {ctx.json()['path']}"})`;
- `turn(text("Two at once"), tool(...), tool(...))` -> several blocks in one message;
- `api_error(529, "overloaded_error", "Overloaded")` -> that HTTP error, once.

When the script has run out, a tool-bearing request gets `text(FINISHED)` (and is counted in
`server.overrun`), so a client that keeps going ends instead of hanging. A computed input that
raises ends the session the same way, with a text naming the step (kept in `server.failures`).

The steps and the script file live in tests/messages_script.py (re-exported here).

Every request is logged (`server.requests`: path, kind `main` / `side` / `count_tokens` /
`other`, the step it took, the parsed body) for assertions. Usage numbers are rough
(characters / 4), never zero.

From a test::

    from messages_server import MessagesServer, text, tool
    with MessagesServer([tool("Bash", {"command": "echo hi"}), text("Done.")]) as srv:
        subprocess.run([claude, "-p", "say hi", ...], env={**os.environ, **srv.env()})
    assert srv.steps_taken == 2 and srv.tool_results()[0].text.strip() == "hi"

By hand (a script file is JSON, or YAML when it ends in .yaml/.yml: a list of steps, each
`{"text": ...}`, `{"tool": NAME, "input": {...}}`, `{"tool": NAME, "input_template": {...}}`
whose strings are `str.format`-ed with `last` (the last tool result's text), `results` (all of
them) and `last_json` (the first JSON object in the last result), `{"blocks": [...]}` for
several blocks in one turn, or `{"error": 529, "type": ..., "message": ...}`)::

    python3 tests/messages_server.py --script tests/fixtures/messages/hello.json -- \
        .venv/claude-code/node_modules/.bin/claude -p "hello" --bare \
        --permission-mode acceptEdits --output-format stream-json --verbose

runs the command with ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY pointing at the server, then
prints one JSON line about the requests it served to stderr and exits with the command's
code. Without a command it serves until Ctrl-C and prints the variables to export.
`--log FILE` writes every request as a JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from messages_script import (ApiError, Context, Text, Tool, ToolResult, Turn, api_error, conversation_results,  # noqa: F401
                             first_json, load_script, step_from_json, text, tool, turn)

FINISHED = "(the scripted model has no more steps)"
SIDE_REPLY = "OK"
FAKE_KEY = "sk-ant-api03-scripted-model-not-a-real-key"
MODEL = "claude-scripted-model"
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def new_id(prefix: str) -> str:
    """An id shaped like the API's: `toolu_01` / `msg_01` + 22 base62 characters."""
    return prefix + "_01" + "".join(secrets.choice(_B62) for _ in range(22))


# ---------------------------------------------------------------- the wire format


def _tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, ensure_ascii=False)) // 4)


def _blocks(step: Text | Tool | Turn, ctx: Context) -> list[dict]:
    parts = step.blocks if isinstance(step, Turn) else (step,)
    out = []
    for b in parts:
        if isinstance(b, Text):
            out.append({"type": "text", "text": b.text})
        elif isinstance(b, Tool):
            value = b.input(ctx) if callable(b.input) else b.input
            out.append({"type": "tool_use", "id": new_id("toolu"), "name": b.name, "input": value})
        else:
            raise TypeError(f"a turn holds text and tool blocks, not {b!r}")
    return out


def message(blocks: list[dict], body: dict) -> dict:
    """The non-streaming response: a whole `message` object."""
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    return {"id": new_id("msg"), "type": "message", "role": "assistant", "model": body.get("model") or MODEL,
            "content": blocks, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": _tokens(body.get("messages")), "output_tokens": _tokens(blocks),
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def _chunks(s: str, n: int) -> list[str]:
    return [s[i:i + n] for i in range(0, len(s), n)] or [""]


def sse_events(msg: dict) -> list[tuple[str, dict]]:
    """The streaming form of `msg`: (event name, data) pairs in the API's order."""
    start = dict(msg, content=[], stop_reason=None, stop_sequence=None,
                 usage=dict(msg["usage"], output_tokens=1))
    events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start}),
                                      ("ping", {"type": "ping"})]
    for i, b in enumerate(msg["content"]):
        if b["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            deltas = [{"type": "text_delta", "text": c} for c in _chunks(b["text"], 40)]
        else:
            events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": dict(b, input={})}))
            deltas = [{"type": "input_json_delta", "partial_json": c}
                      for c in [""] + _chunks(json.dumps(b["input"]), 40)]
        events += [("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": msg["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


# ---------------------------------------------------------------- the server


@dataclass
class Logged:
    method: str
    path: str
    kind: str              # main | side | count_tokens | other
    body: Any
    step: int | None = None  # index of the script step a main request took (None: overrun or not main)
    status: int = 200
    response: Any = None   # the message (or error) sent back


@dataclass
class MessagesServer:
    """A scripted Messages-API server on 127.0.0.1 (a free port); a context manager."""
    script: list
    side_reply: str | Callable[[dict], str] = SIDE_REPLY
    is_main: Callable[[dict], bool] = field(default=lambda body: bool(body.get("tools")))
    port: int = 0
    requests: list[Logged] = field(default_factory=list)
    overrun: int = 0
    failures: list[str] = field(default_factory=list)  # steps whose computed input raised
    log_file: Any = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0
        self._httpd: ThreadingHTTPServer | None = None

    # lifecycle
    def start(self) -> "MessagesServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, name="messages-server", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "MessagesServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # what a client needs
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Environment for a client: this server, a fake key, no traffic elsewhere."""
        return {"ANTHROPIC_BASE_URL": self.base_url, "ANTHROPIC_API_KEY": FAKE_KEY,
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1"}

    # what a test asserts on
    @property
    def steps_taken(self) -> int:
        return self._next

    @property
    def main_requests(self) -> list[Logged]:
        return [r for r in self.requests if r.kind == "main"]

    def tool_results(self) -> list[ToolResult]:
        """The tool results of the last main request's conversation (what the client sent back)."""
        mains = self.main_requests
        return conversation_results(mains[-1].body) if mains else []

    def summary(self) -> dict:
        kinds: dict[str, int] = {}
        for r in self.requests:
            kinds[r.kind] = kinds.get(r.kind, 0) + 1
        return {"requests": len(self.requests), "by_kind": kinds, "steps_taken": self._next,
                "steps": len(self.script), "overrun": self.overrun, "failures": self.failures}

    # the model
    def answer(self, path: str, body: Any) -> Logged:
        """Log one request and decide its response (the handler only writes it out)."""
        if path.endswith("/v1/messages/count_tokens"):
            entry = Logged("POST", path, "count_tokens", body,
                           response={"input_tokens": _tokens([body.get("system"), body.get("messages"),
                                                              body.get("tools")]) if isinstance(body, dict) else 1})
        elif path.endswith("/v1/messages") and isinstance(body, dict):
            if not self.is_main(body):
                reply = self.side_reply(body) if callable(self.side_reply) else self.side_reply
                entry = Logged("POST", path, "side", body, response=message([{"type": "text", "text": reply}], body))
            else:
                with self._lock:
                    index = self._next if self._next < len(self.script) else None
                    if index is None:
                        self.overrun += 1
                    else:
                        self._next += 1
                step = self.script[index] if index is not None else Text(FINISHED)
                if isinstance(step, ApiError):
                    entry = Logged("POST", path, "main", body, index, step.status,
                                   {"type": "error", "error": {"type": step.type, "message": step.message}})
                else:
                    try:
                        blocks = _blocks(step, Context(body, conversation_results(body)))
                    except Exception as exc:  # a computed input failed: end the session, say why
                        why = f"scripted model: step {index} failed: {type(exc).__name__}: {exc}"
                        self.failures.append(why)
                        blocks = [{"type": "text", "text": why}]
                    entry = Logged("POST", path, "main", body, index, response=message(blocks, body))
        else:
            entry = Logged("POST", path, "other", body, status=404, response={
                "type": "error", "error": {"type": "not_found_error", "message": f"the scripted model serves "
                                           f"/v1/messages and /v1/messages/count_tokens, not {path}"}})
        with self._lock:
            self.requests.append(entry)
            if self.log_file:
                self.log_file.write(json.dumps({"path": entry.path, "kind": entry.kind, "step": entry.step,
                                                "status": entry.status, "request": entry.body,
                                                "response": entry.response}) + "\n")
                self.log_file.flush()
        return entry


class _Handler(BaseHTTPRequestHandler):
    owner: MessagesServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet: the log is `owner.requests`
        pass

    def _send_json(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", new_id("req"))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802
        entry = self.owner.answer(self.path.split("?")[0], None)
        entry.method = "GET"
        self._send_json(entry.status, entry.response)

    def do_POST(self) -> None:  # noqa: N802
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            self._send_json(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                              "message": "the body is not JSON"}})
            return
        entry = self.owner.answer(self.path.split("?")[0], body)
        if entry.status != 200 or entry.kind not in ("main", "side") or not body.get("stream"):
            self._send_json(entry.status, entry.response)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", new_id("req"))
        self.end_headers()
        for name, data in sse_events(entry.response):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in argv:
        command, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    p = argparse.ArgumentParser(description="A scripted Messages-API server (see this file's docstring).")
    p.add_argument("--script", required=True, help="a JSON or YAML list of steps")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--log", help="write every request and response as a JSON line here")
    args = p.parse_args(argv)
    try:
        script = load_script(args.script)
    except (OSError, ValueError) as exc:
        print(json.dumps({"error": f"{args.script}: {exc}"}), file=sys.stderr)
        return 2
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    srv = MessagesServer(script, port=args.port, log_file=log).start()
    try:
        if command:
            rc = subprocess.run(command, env={**os.environ, **srv.env()}).returncode
            print(json.dumps(srv.summary()), file=sys.stderr)
            return rc
        print("\n".join(f"export {k}={v}" for k, v in srv.env().items()), flush=True)
        print(f"# serving {len(script)} steps on {srv.base_url}; Ctrl-C stops", file=sys.stderr, flush=True)
        threading.Event().wait()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        srv.stop()
        if log:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
