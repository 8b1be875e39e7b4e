"""The agent's MCP config, checked before the first case (`invocation.agent.mcp_config`): a file the
CLI refuses (not JSON, no `mcpServers` mapping) makes every attempt end without a transcript, and a
stdio server whose program is not found makes every attempt `infra_error` after a paid model session
(the CLI goes on without the server). Each is exit 3 naming the key, the server and the fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Mapping

KEY = "invocation.agent.mcp_config"


def mcp_config_shape_problems(config: Path) -> list[str]:
    """What makes the CLI refuse the file itself (unreadable, not JSON, no `mcpServers` mapping), one
    message each: the part of the check that needs no PATH, so the linter asks it too."""
    return _servers(config)[1]


def _servers(config: Path) -> tuple[Mapping | None, list[str]]:
    try:
        doc = json.loads(config.read_text(encoding="utf-8"))
    except OSError as exc:
        return None, [f"{config} cannot be read ({exc.strerror})"]
    except ValueError as exc:
        return None, [f"{config} is not JSON ({exc}): the agent refuses it and writes no transcript"]
    servers = doc.get("mcpServers") if isinstance(doc, Mapping) else None
    if not isinstance(servers, Mapping):
        found = ", ".join(sorted(str(k) for k in doc)) if isinstance(doc, Mapping) else type(doc).__name__
        return None, [f"{config} has no \"mcpServers\" mapping (found: {found or 'nothing'}): Claude Code reads "
                      "its servers only from {\"mcpServers\": {\"<name>\": {\"command\": ..., \"args\": [...]}}}"]
    return servers, []


def mcp_config_problems(config: Path, fixtures: list[Path], path_env: str | None) -> list[str]:
    """What makes the agent's MCP config give it no server, one message each."""
    from .workdir import resolve_program
    servers, problems = _servers(config)
    if servers is None:
        return problems
    out = []
    for name, server in servers.items():
        cmd = server.get("command") if isinstance(server, Mapping) else None
        if not isinstance(cmd, str) or not cmd or "$" in cmd:   # a remote server, or a ${VAR} the CLI expands
            continue
        if not any(resolve_program(cmd, f, path_env) for f in fixtures):
            out.append(f"server {name!r} in {config}: its command {cmd!r} is not found on the agent's PATH (the "
                       "PATH of invocation.env_allowlist) nor relative to the fixture's copy, where the agent starts "
                       "it: give the program's absolute path (or ${VAR} with VAR in invocation.env_allowlist)")
    return out
