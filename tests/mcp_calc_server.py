"""A real stdio MCP server with one tool, `add(a, b)`, built with the `mcp` package: the app under
test of an MCP server author (tests/test_agent_claude.py calls it through the pinned Claude Code
CLI). Each call is appended to $CALC_LOG when set, so a test sees what the server was given.
`add(666, b)` is its planted bug: the server exits mid-call (an app under test that crashes)."""

from __future__ import annotations

import json
import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    log = os.environ.get("CALC_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"a": a, "b": b}) + "\n")
    if a == 666:
        os._exit(3)
    return str(a + b)


if __name__ == "__main__":
    server.run()
