"""The MCP crash rule (assay.score.agent.mcp_server_crashes): the SDK's ConnectionClosed error in an MCP
call's result is the server under test exiting mid-call; a tool's own error that says "Connection
closed" about its backend is the tool's answer, not a crash."""

from assay.score.agent import mcp_server_crashes


def _traj(error: str) -> dict:
    return {"tool_calls": [{"name": "mcp__calc__add", "mcp": {"server": "calc", "tool": "add"}, "error": error}]}


def test_only_the_sdks_connection_closed_is_a_crash():
    for said in ("Connection closed", "MCP error -32000: Connection closed"):   # the pinned CLI's, the SDK's
        crashed = mcp_server_crashes(_traj(said))
        assert crashed and crashed[0]["server"] == "calc" and crashed[0]["tool"] == "mcp__calc__add", said
    assert mcp_server_crashes(_traj("redis.exceptions.ConnectionError: Connection closed by server.")) == []
    assert mcp_server_crashes({"tool_calls": [{"name": "Bash", "error": "MCP error -32000: Connection closed"}]}) == []
