"""A fake OpenAI Chat Completions server for tests: the real wire format, a scripted model.

`FakeModel()` serves `POST /v1/chat/completions` on a loopback port (ThreadingHTTPServer in a
thread); `model.base_url` is `http://127.0.0.1:PORT/v1` (what `openai.OpenAI(base_url=...)`
takes). Non-streaming only. The script, keyed on the conversation:

- last message `role: tool` -> a final answer built from that tool result (`finish_reason: stop`);
- a user turn naming an order id (`ORD-<digits>`) -> one `tool_calls` entry: `issue_refund`
  when the turn says "refund", else `lookup_order`, with `{"order_id": ...}` as the JSON
  `arguments` string (`finish_reason: tool_calls`);
- anything else -> a greeting (`finish_reason: stop`).

Responses carry `id`, `object: chat.completion`, `created`, `model`, `choices[].message`
(`role`, `content`, `tool_calls[{id, type: function, function{name, arguments}}]`),
`finish_reason` and `usage{prompt_tokens, completion_tokens, total_tokens}`.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ORDER_RE = re.compile(r"ORD-\d+")
_ids = itertools.count(1)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def reply_for(messages: list[dict]) -> tuple[dict, str]:
    """(assistant message, finish_reason) for a conversation: the scripted model."""
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        try:
            data = json.loads(_text(last.get("content")))
        except ValueError:
            data = {"raw": _text(last.get("content"))}
        if isinstance(data, dict) and "status" in data:
            text = f"Order {data.get('order_id')} is {data['status']}."
        else:
            text = f"Done: {json.dumps(data, sort_keys=True)}"
        return {"role": "assistant", "content": text}, "stop"
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    found = ORDER_RE.search(user)
    if found:
        name = "issue_refund" if "refund" in user.lower() else "lookup_order"
        call = {"id": f"call_{next(_ids):06d}", "type": "function",
                "function": {"name": name, "arguments": json.dumps({"order_id": found.group(0)})}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {"role": "assistant", "content": "Hello! How can I help with your order?"}, "stop"


def completion(body: dict, script=None) -> dict:
    message, finish = script(body) if script else reply_for(body.get("messages") or [])
    prompt_tokens = sum(len(_text(m.get("content")).split()) + 3 for m in body.get("messages") or [])
    completion_tokens = len(_text(message.get("content")).split()) + 5 * len(message.get("tool_calls") or [])
    message.setdefault("refusal", None)
    return {"id": f"chatcmpl-{next(_ids):08d}", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model") or "fake-model", "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class FakeModel:
    """`script(body) -> (assistant message, finish_reason)` replaces the order script above."""

    def __init__(self, script=None) -> None:
        self.requests: list[dict] = []

        model = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = None
                if not self.path.rstrip("/").endswith("/chat/completions") or not isinstance(body, dict):
                    status, out = 404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                elif body.get("stream"):
                    status, out = 400, {"error": {"message": "streaming is not scripted", "type": "invalid_request_error"}}
                else:
                    model.requests.append(body)
                    status, out = 200, completion(body, script)
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
