"""One headless Claude Code session of the plugin, played by the scripted model: the recipe's flags
(skills/run/references/run-modes.md, "Headless/CI gate"), the plugin loaded from this checkout, the
session's own HOME, config dir and server port, and its stream-json events parsed."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from claude_cli import CLAUDE, session_env
from helpers import ROOT
from messages_server import MessagesServer, first_json, tool

# the recipe's flags; as root (CI containers) acceptEdits, never bypassPermissions
RECIPE = ("--bare", "--plugin-dir", str(ROOT), "--permission-mode", "acceptEdits", "--permission-prompts", "none",
          "--output-format", "stream-json", "--verbose")


S = f'python3 "{ROOT}/scripts/'   # + 'name.py" args': a script call as the skills spell it
LONG = 600000   # the run skill: the runner in the foreground of one Bash call, timeout at its maximum


def bash(cmd: str, desc: str, **extra) -> dict:
    return {"command": cmd, "description": desc, **extra}


def plan_of(ctx) -> dict:
    """What make_plan.py printed earlier in the conversation (run_id, out, the runner command `run`)."""
    return next(r for r in map(first_json, (x.text for x in ctx.results)) if isinstance(r, dict) and "run" in r)


def prepare_steps(mode: str, manifest: bool = True) -> list:
    """The run skill's §1 (convert, validate, make_plan) on `.assay`, each its own Bash call."""
    validate = (S + 'validate_cases.py" --cases .assay/work/suite.json --capabilities .assay/work/capabilities.json'
                ' --adapter .assay/work/adapter.json' + (" --manifest .assay/work/manifest.json" if manifest else ""))
    return [tool("Bash", bash(S + 'convert_suite.py" .assay -o .assay/work/converted.json --split-dir .assay/work',
                              "convert")),
            tool("Bash", bash(validate, "validate")),
            tool("Bash", bash(S + f'make_plan.py" .assay/work/converted.json --mode {mode} --state-dir .assay'
                              ' -o .assay/work/plan.json', "plan"))]


def git_checkout(app: Path) -> None:
    """Make `app` a git checkout with one commit (what candidate.py and a clean-file check expect)."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "app"]):
        subprocess.run(git + argv, cwd=app, check=True, capture_output=True)


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


def run_parallel(jobs: dict, workers: int = 3) -> dict:
    """{name: fn()} run on `workers` threads; a job that raised keeps its exception (see `take`), so one
    broken session fails its own test, with its own traceback, not every test of the module."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {name: pool.submit(fn) for name, fn in jobs.items()}
        return {name: (f.exception() or f.result()) for name, f in futures.items()}


def take(results: dict, name: str):
    got = results[name]
    if isinstance(got, BaseException):
        raise got
    return got


def run_session(prompt: str, script: list, cwd: Path, home: Path, env: dict[str, str] | None = None,
                python: str | None = None, timeout: float = 600) -> Session:
    """`claude -p PROMPT` with the recipe's flags in `cwd`, the model played by `script`."""
    with MessagesServer(script) as srv:
        # a loaded machine: a first call that bootstraps the packages may outlast the Bash tool's 2-minute default
        slow = {"BASH_DEFAULT_TIMEOUT_MS": "600000", "BASH_MAX_TIMEOUT_MS": "600000"}
        full = session_env(home, {**slow, **(env or {}), **srv.env()}, python=python)
        p = subprocess.run([str(CLAUDE), "-p", prompt, *RECIPE], capture_output=True, text=True, env=full,
                           cwd=cwd, stdin=subprocess.DEVNULL, timeout=timeout)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    return Session(p.returncode, events, p.stderr, srv)
