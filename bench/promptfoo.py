"""Drive promptfoo on the same generated suite against the same app, for the side-by-side.

promptfoo is installed bench-locally (never fetched per run):
    npm install --prefix bench/.node promptfoo@<PROMPTFOO_VERSION>
(`bench/run.py --install-promptfoo` does exactly that). No telemetry, update check or
sharing: the environment below turns them off and points promptfoo's config/DB dir at a
fresh temporary directory per run, so runs do not see each other's database.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from measure import ChildRun, timed_child
from suite import promptfoo_config

HERE = Path(__file__).resolve().parent
# The newest promptfoo whose engines field still accepts Node 20 (0.122+ needs Node >= 22.22).
PROMPTFOO_VERSION = "0.121.20"
NODE_PREFIX = HERE / ".node"
PROMPTFOO_BIN = NODE_PREFIX / "node_modules" / ".bin" / "promptfoo"


def node_version() -> str | None:
    node = shutil.which("node")
    if not node:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def availability() -> tuple[bool, str]:
    """(usable, why-not). promptfoo runs only when Node and the bench-local install exist."""
    if not shutil.which("node"):
        return False, "Node.js not found on PATH: promptfoo side-by-side skipped"
    if not PROMPTFOO_BIN.exists():
        return False, (f"promptfoo not installed under bench/.node: run `npm install --prefix bench/.node "
                       f"promptfoo@{PROMPTFOO_VERSION}` (or bench/run.py --install-promptfoo); side-by-side skipped")
    return True, ""


def install(quiet: bool = False) -> int:
    """npm install the pinned promptfoo into bench/.node (gitignored); returns npm's exit code."""
    npm = shutil.which("npm")
    if not npm:
        print("npm not found: cannot install promptfoo", flush=True)
        return 2
    out = subprocess.DEVNULL if quiet else None
    return subprocess.run([npm, "install", "--prefix", str(NODE_PREFIX), "--no-audit", "--no-fund",
                           f"promptfoo@{PROMPTFOO_VERSION}"], stdout=out, stderr=out).returncode


def _env(config_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_CONFIG_DIR": str(config_dir),
        "PROMPTFOO_CACHE_ENABLED": "false",
        "NO_COLOR": "1",
    })
    return env


def startup(work: Path) -> ChildRun:
    """`promptfoo --version`: Node start-up plus loading promptfoo, the fixed cost of any eval."""
    cfg = work / "cfg-version"
    cfg.mkdir(parents=True, exist_ok=True)
    return timed_child([str(PROMPTFOO_BIN), "--version"], env=_env(cfg), cwd=str(work), log_dir=work / "version")


def run_eval(work: Path, n_cases: int, base_url: str, concurrency: int) -> tuple[ChildRun, dict[str, Any]]:
    """One `promptfoo eval` of the n-case suite at `-j concurrency`; returns the timing and its stats.

    promptfoo writes its own sqlite DB (under PROMPTFOO_CONFIG_DIR) and, for parity with
    assay's results.json, one JSON output file (`-o`). It writes no per-case files.
    """
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    config = work / "promptfooconfig.yaml"
    config.write_text(json.dumps(promptfoo_config(n_cases, base_url)), encoding="utf-8")
    out_json = work / "output.json"
    argv = [str(PROMPTFOO_BIN), "eval", "-c", str(config), "-j", str(concurrency), "--no-cache",
            "-o", str(out_json), "--no-table", "--no-progress-bar"]
    run = timed_child(argv, env=_env(work / "cfg"), cwd=str(work), log_dir=work / "logs")
    stats: dict[str, Any] = {}
    try:
        doc = json.loads(out_json.read_text("utf-8"))
        s = doc["results"]["stats"]
        stats = {"successes": s.get("successes"), "failures": s.get("failures"), "errors": s.get("errors"),
                 "results": len(doc["results"].get("results") or [])}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        stats = {"unreadable_output": str(exc)}
    return run, stats
