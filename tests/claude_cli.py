"""The pinned Claude Code CLI for tests: where `make claude-cli` put it, why it is missing, and a
clean environment for one session (its own HOME and config dir, nothing of the caller's CLAUDE_* or
ANTHROPIC_* variables, the scripted model's variables when given)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from helpers import ROOT

CLI_DIR = ROOT / ".venv" / "claude-code"
CLAUDE = Path(os.environ.get("ASSAY_CLAUDE_BIN") or CLI_DIR / "node_modules" / ".bin" / "claude")
PINNED = re.search(r"^CLAUDE_CODE_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M).group(1)


def unavailable() -> str | None:
    """None when the CLI is installed, else why not (what `make claude-cli` recorded)."""
    if CLAUDE.exists():
        return None
    why = CLI_DIR / "UNAVAILABLE"
    reason = why.read_text().strip() if why.exists() else "not installed (run `make claude-cli`)"
    return f"Claude Code CLI {PINNED} unavailable: {reason}"


def session_env(home: Path, extra: dict[str, str] | None = None, python: str | None = None) -> dict[str, str]:
    """Environment for one CLI session in `home` (created, with `bin/python3` -> `python` first on PATH)."""
    (home / "bin").mkdir(parents=True, exist_ok=True)
    shim = home / "bin" / "python3"
    shim.write_text(f'#!/bin/sh\nexec "{python or sys.executable}" "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAUDE", "ANTHROPIC", "PYTEST_")) and k != "PYTHONPATH"}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               PATH=f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    env.update(extra or {})
    return env
