"""A small agent app's state dir, for tests that walk agent mode through assay's paths without the
Claude Code CLI: the fixture repo and plugin of agent_app.py, and an adapter whose `command:`
override runs tests/scripted_agent.py (argv in, a stream-json transcript out, files edited in the
case's fresh workdir). SCRIPTED_AGENT_BROKEN=1 in the environment plants its regressions."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agent_app import build_repo_and_plugin

AGENT = Path(__file__).with_name("scripted_agent.py")
SKILL_CASE, EDIT_CASE, EXPLAIN_CASE = "c-agent-skill", "c-agent-edit", "c-agent-explain"
MCP_CASE = "c-agent-mcp"
# the MCP server under test answers a lookup (the green-path hunt's agent walk adds it: broken, the
# server closes its connection mid-call and the agent answers all the same)
MCP_LOOKUP = ("lookup: what is 2 + 3? use the calc tool", {"answer": {"must_contain": ["= 5"]},
                                                          "files": {"unchanged": ["*"]}})

_HEAD = """split: [smoke, full]
category: happy
test_type: MFT
template_id: null
origin: synthetic
review: {status: accepted, by: Dana Whitfield, at: '2026-12-04'}
"""
CASES = {
    SKILL_CASE: ("skill: the add test fails; fix calc.py", {
        "skills": {"must_trigger": ["fix-tests"]}, "files": {"contains": {"calc.py": ["return a + b"]}}}),
    EDIT_CASE: ("fix add() so that check_calc.py passes", {
        "files": {"contains": {"calc.py": ["return a + b"]}, "unchanged": ["README.md"]},
        "check": {"command": [sys.executable, "check_calc.py"]}}),
    EXPLAIN_CASE: ("explain what add() does", {
        "answer": {"must_contain": ["subtracts"]}, "files": {"unchanged": ["*"]},
        "skills": {"must_not_trigger": ["fix-tests"]}}),
}


def adapter_doc(root: Path) -> dict:
    return {"adapter_version": 1, "app": {"name": "scripted-agent", "repo": ".."},
            "invocation": {"mode": "agent", "max_concurrency": 3, "env_allowlist": ["PATH", "SCRIPTED_AGENT_BROKEN"],
                           "agent": {"kind": "claude-code", "workdir": "fixtures/repo", "plugin_dirs": ["plugin"],
                                     "command": [sys.executable, str(AGENT), "{input}"], "timeout_s": 120,
                                     "env": {"SCRIPTED_AGENT_TOKEN": "${SCRIPTED_AGENT_TOKEN}"}}},
            "traces": {"source": "none"}, "environment": {"kind": "mocked", "safe_to_attack": False},
            "data": {"may_contain_pii": False}}


def build_agent_state(root: Path, cases: dict | None = None) -> Path:
    """<root>/.assay: adapter.yaml (JSON is YAML), profile.yaml, prices.yaml and one dataset file a
    case; the app (fixtures/repo, plugin) beside it. Returns the state dir."""
    build_repo_and_plugin(root)
    state = root / ".assay"
    (state / "datasets").mkdir(parents=True)
    (state / "work").mkdir()
    (state / "adapter.yaml").write_text(json.dumps(adapter_doc(root), indent=1), encoding="utf-8")
    (state / "profile.yaml").write_text("profile_version: 1\ncapability_matrix: {}\n", encoding="utf-8")
    (state / "prices.yaml").write_text("currency: USD\nper: 1000000\nmodels:\n  scripted-agent-1: {input: 1.0, "
                                       "output: 2.0}\n", encoding="utf-8")
    for cid, (said, expect) in (cases or CASES).items():
        body = {"input": {"messages": [{"role": "user", "content": said}]}, "expect": expect}
        (state / "datasets" / f"{cid}.yaml").write_text(f"id: {cid}\n{_HEAD}" + "\n".join(
            f"{k}: {json.dumps(v)}" for k, v in body.items()) + "\n", encoding="utf-8")
    return state


TOKEN = "scripted-agent-token-5521-qv"   # a secret the agent is given (by ${VAR}); never on disk


def agent_env(environ: dict, *, broken: bool) -> dict:
    env = {k: v for k, v in environ.items() if not k.startswith("PYTEST_") and k != "PYTHONPATH"}
    env["SCRIPTED_AGENT_BROKEN"] = "1" if broken else "0"
    env["SCRIPTED_AGENT_TOKEN"] = TOKEN
    return env


def live_replayed_rescored(state: Path, plan: dict, reports: Path, env: dict, quiet: Path,
                           names: tuple[str, str, str], *, between=None) -> None:
    """One live --record run of the plan, then its --replay and its rescore (both with ASSAY_SCRATCH_DIR
    at the empty `quiet`: neither may start the agent), each run_cases / rescore.py as a subprocess;
    `between()` runs after the live run. `names`: the live, replayed and rescored run ids."""
    from helpers import run_script
    live, replayed, rescored = names
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", reports / live, "--record",
                   "--progress", "never", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    if between is not None:
        between()
    env["ASSAY_SCRATCH_DIR"] = str(quiet)
    plan["run_id"] = replayed
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", reports / replayed,
                   "--replay", reports / live, "--progress", "never", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    r = run_script("rescore", reports / live, "--out", reports / rescored, env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
