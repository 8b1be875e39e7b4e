#!/usr/bin/env python3
"""`make demo APP=agent`: the example agent app (Claude Code + the calc-helper plugin + an MCP
server, in a fresh copy of repo/ per case) through the whole pipeline, offline.

The model is SCRIPTED (examples/agent/scripted.py on tests/messages_server.py): the real pinned
Claude Code CLI (`make claude-cli`) does everything else for real (loads the plugin, runs the
skill, the MCP server, the permission rules, the edits), but what it is told to do is a script.
The numbers below show the harness working, not a model's skill. With ANTHROPIC_API_KEY set and
--real, the same suite runs against the real model (it costs what 24 `claude -p` sessions cost).

    convert_suite -> make_plan --arm without / --arm with-skill -> run_cases (x2) -> gate -> compare_runs

Prints the gate's summary for the with-skill run and the lift block, and exits with the gate's
code (0 open, 1 closed); 2 when a step cannot run (named)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SCRIPTS = ROOT / "scripts"
STATE = HERE / ".assay"
CLI_BIN = ROOT / ".venv" / "claude-code" / "node_modules" / ".bin"
ARMS = ("without", "with-skill")


def step(name: str, *args, env: dict | None = None, ok=(0,)) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), *map(str, args)], capture_output=True,
                       text=True, env={**os.environ, **(env or {})})
    if r.returncode not in ok:
        sys.exit(f"demo: {name}.py exited {r.returncode}: {(r.stdout + r.stderr).strip()[-1500:]}")
    return r


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--real", action="store_true", help="use the real model (ANTHROPIC_API_KEY), not the script")
    args = p.parse_args()
    if not (CLI_BIN / "claude").exists() and not args.real:
        sys.exit(f"demo: the pinned Claude Code CLI is not installed ({CLI_BIN / 'claude'}); run `make claude-cli`")
    if args.real and not os.environ.get("ANTHROPIC_API_KEY"):
        sys.exit("demo: --real needs ANTHROPIC_API_KEY (each case is one claude -p session, billed to it)")
    (STATE / "work").mkdir(exist_ok=True)
    step("convert_suite", STATE, "-o", STATE / "work" / "converted.json")
    env = {"PATH": f"{CLI_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "CALC_MCP_SERVER": str(HERE / "mcp_server.py")}
    label = "REAL MODEL" if args.real else "SCRIPTED MODEL (a test fixture playing the model; not a model's result)"
    print(f"assay agent demo: {label}")
    outs = {}
    from datetime import datetime, timedelta, timezone
    now = datetime.now(timezone.utc)
    for i, arm in enumerate(ARMS):
        run_id = f"smoke-{(now + timedelta(seconds=i)).strftime('%Y%m%dT%H%M%SZ')}"
        plan = STATE / "work" / f"plan-{arm}.json"
        step("make_plan", STATE / "work" / "converted.json", "--state-dir", STATE, "--mode", "smoke", "--arm", arm,
             "--run-id", run_id, "--max-attempts", "1", "-o", plan)
        outs[arm] = STATE / "reports" / run_id
        if args.real:
            step("run_cases", "--plan", plan, "--out", outs[arm], "--progress", "never", env=env, ok=(0, 4, 5, 6, 7))
        else:
            sys.path.insert(0, str(HERE))
            from scripted import server
            with server() as srv:
                step("run_cases", "--plan", plan, "--out", outs[arm], "--progress", "never", ok=(0, 4, 5, 6, 7),
                     env={**env, "ANTHROPIC_BASE_URL": srv.base_url, "ANTHROPIC_API_KEY": srv.env()["ANTHROPIC_API_KEY"]})
        print(f"  arm {arm}: {outs[arm].relative_to(ROOT)}")
    gate = step("gate", outs["with-skill"], ok=(0, 1))
    print(gate.stderr.strip() or gate.stdout.strip()[:2000])
    lift = json.loads(step("compare_runs", outs["without"], outs["with-skill"]).stdout)["lift"]
    print(f"{lift['reading']} [{label}]")
    print(f"  pass^k: without {lift['pass_rate']['base']}, with-skill {lift['pass_rate']['candidate']} "
          f"(lift {lift['pass_rate']['lift']} over {lift['pass_rate']['cases']} cases)")
    ta = lift["trigger_accuracy"]
    print(f"  trigger accuracy: without {ta['base']['accuracy']}, with-skill {ta['candidate']['accuracy']}")
    if lift.get("sentence"):
        print(f"  {lift['sentence']}")
    return gate.returncode


if __name__ == "__main__":
    sys.exit(main())
