"""The MCP crash rule (assay.score.agent.mcp_server_crashes): the SDK's ConnectionClosed error in an MCP
call's result is the server under test exiting mid-call; a tool's own error that says "Connection
closed" about its backend is the tool's answer, not a crash. And the gate's hint when an agent never
answered: the agent key the reason points at (assay.score.hollow_hints.hollow_layer_line)."""

from assay.score.agent import mcp_server_crashes


def _traj(error: str) -> dict:
    return {"tool_calls": [{"name": "mcp__calc__add", "mcp": {"server": "calc", "tool": "add"}, "error": error}]}


def test_only_the_sdks_connection_closed_is_a_crash():
    for said in ("Connection closed", "MCP error -32000: Connection closed"):   # the pinned CLI's, the SDK's
        crashed = mcp_server_crashes(_traj(said))
        assert crashed and crashed[0]["server"] == "calc" and crashed[0]["tool"] == "mcp__calc__add", said
    assert mcp_server_crashes(_traj("redis.exceptions.ConnectionError: Connection closed by server.")) == []
    assert mcp_server_crashes({"tool_calls": [{"name": "Bash", "error": "MCP error -32000: Connection closed"}]}) == []


def test_the_gates_hint_for_an_agent_that_never_answered_names_the_agent_key():
    """The pinned CLI refuses an mcp_config whose servers sit under "servers" (VS Code's key) and writes
    no transcript: the gate named a cli app's invocation.command and cwd, keys an agent adapter has not."""
    from assay.score.hollow_hints import hollow_layer_line
    refused = ("exit: transcript incomplete: the agent wrote no transcript (no stream-json line on stdout) (exit "
               "code 1; stderr: Error: Invalid MCP configuration: mcpServers: Missing \"mcpServers\" — found "
               "\"servers\" instead.) on all 1 attempt(s)")
    line = hollow_layer_line("http", {"cases": 1, "reason": refused}, "agent")
    assert "check the adapter's invocation.agent.mcp_config (the file the agent refused" in line, line
    line = hollow_layer_line("http", {"cases": 2, "reason": "exit: the agent exited 1"}, "agent")
    assert line.endswith("check the adapter's invocation.agent (program, or command: the agent CLI it starts; "
                         "mcp_config: each server's command, started by the agent in the fixture's copy; timeout_s)"), line
    assert "invocation.cwd" in hollow_layer_line("http", {"cases": 1, "reason": "exit: 127"}, "cli")
    # the pinned CLI without a key in its env block (its HOME is fresh: no login is read)
    unset = "exit: the agent's model call failed: Not logged in · Please run /login on all 1 attempt(s)"
    assert "check the adapter's invocation.agent.env (the model's key" in hollow_layer_line(
        "http", {"cases": 1, "reason": unset}, "agent")
