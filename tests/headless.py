"""One headless Claude Code session of the plugin, played by the scripted model: the recipe's flags
(skills/run/references/run-modes.md, "Headless/CI gate"), the plugin loaded from this checkout, the
session's own HOME, config dir and server port, and its stream-json events parsed."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from claude_cli import CLAUDE, session_env
from helpers import ROOT
from messages_server import MessagesServer

# the recipe's flags; as root (CI containers) acceptEdits, never bypassPermissions
RECIPE = ("--bare", "--plugin-dir", str(ROOT), "--permission-mode", "acceptEdits", "--permission-prompts", "none",
          "--output-format", "stream-json", "--verbose")


@dataclass
class Session:
    rc: int
    events: list[dict]
    stderr: str
    server: MessagesServer

    @property
    def result(self) -> dict:
        results = [e for e in self.events if e.get("type") == "result"]
        assert results, f"no result event (rc {self.rc}): {self.stderr[-1500:]}"
        return results[-1]

    @property
    def init(self) -> dict:
        return next(e for e in self.events if e.get("type") == "system" and e.get("subtype") == "init")

    def denied_commands(self) -> list[str]:
        return [d["tool_input"].get("command", "") for d in self.result["permission_denials"]]

    def tool_results(self) -> list[tuple[str, str, bool]]:
        """(command, output, is_error) of every Bash call, in order."""
        calls = {b["id"]: b["input"].get("command", "") for e in self.events if e.get("type") == "assistant"
                 for b in e["message"]["content"] if b.get("type") == "tool_use"}
        return [(calls.get(b["tool_use_id"], ""), b["content"] if isinstance(b["content"], str) else
                 "\n".join(c.get("text", "") for c in b["content"]), bool(b.get("is_error")))
                for e in self.events if e.get("type") == "user" and isinstance(e["message"]["content"], list)
                for b in e["message"]["content"] if b.get("type") == "tool_result"]

    def why(self) -> str:
        """Everything a failed assertion should show."""
        return json.dumps({"rc": self.rc, "result": self.result.get("result"), "denials": self.denied_commands(),
                           "served": self.server.summary(),
                           "results": [(c[-120:], o[-400:]) for c, o, _ in self.tool_results()][-6:],
                           "stderr": self.stderr[-800:]}, indent=1)


def run_session(prompt: str, script: list, cwd: Path, home: Path, env: dict[str, str] | None = None,
                python: str | None = None, timeout: float = 600) -> Session:
    """`claude -p PROMPT` with the recipe's flags in `cwd`, the model played by `script`."""
    with MessagesServer(script) as srv:
        full = session_env(home, {**(env or {}), **srv.env()}, python=python)
        p = subprocess.run([str(CLAUDE), "-p", prompt, *RECIPE], capture_output=True, text=True, env=full,
                           cwd=cwd, stdin=subprocess.DEVNULL, timeout=timeout)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return Session(p.returncode, events, p.stderr, srv)
