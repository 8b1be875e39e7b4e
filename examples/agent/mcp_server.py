"""The example's MCP server: one tool, `add(a, b)`, over stdio JSON-RPC (no dependency, so the
example runs offline). An MCP server author's app under test, called by the agent."""

import json
import sys

TOOLS = [{"name": "add", "description": "Add two integers.",
          "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                          "required": ["a", "b"]}}]


def reply(mid, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, mid = msg.get("method"), msg.get("id")
    if mid is None:      # a notification
        continue
    if method == "initialize":
        reply(mid, {"protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
                    "capabilities": {"tools": {"listChanged": False}}, "serverInfo": {"name": "calc", "version": "1"}})
    elif method == "tools/list":
        reply(mid, {"tools": TOOLS})
    elif method == "tools/call":
        args = msg.get("params", {}).get("arguments") or {}
        total = int(args.get("a", 0)) + int(args.get("b", 0))
        reply(mid, {"content": [{"type": "text", "text": str(total)}], "isError": False})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown"}}) + "\n")
        sys.stdout.flush()
