"""Agent mode with the real pinned Claude Code CLI, its model played by the scripted Messages server
(tests/messages_server.py): run_cases.py runs `claude -p ... --output-format stream-json --verbose`
in a fresh copy of a fixture repo per case and repeat, with a plugin whose skill is triggered or
not, a real stdio MCP server (tests/mcp_calc_server.py, the `mcp` package) whose tool is called with
right and wrong arguments, a command the permission rules deny, a flaky model over k=3 (pass^k),
a model call that fails (infra, named), a secret the agent prints (redacted), and a hang whose
process group is killed. Skips, saying why, when the CLI is not installed (`make claude-cli`)."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from agent_app import build_repo_and_plugin, processes_in
from claude_cli import CLAUDE, PINNED, unavailable
from fakeapp import case, make_plan
from helpers import run_script
from messages_server import MessagesServer, api_error, text, tool
from rundir_util import cases_view

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "agent"))
from scripted import RoutedServer  # noqa: E402  (one scripted model per case, picked by its prompt)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")]
if sys.platform != "linux":  # pragma: no cover
    pytestmark.append(pytest.mark.skip(reason="the agent invoker's process-group checks read /proc"))

SECRET = "agent-cli-secret-31337"
MCP_SERVER = Path(__file__).with_name("mcp_calc_server.py")


def pwd_then_edit(new: str) -> list:
    return [tool("Bash", {"command": "pwd"}),
            tool("Edit", lambda ctx: {"file_path": ctx.last.strip() + "/calc.py", "old_string": "return a - b",
                                      "new_string": new})]


SCRIPTS = {
    "fix": [tool("Skill", {"skill": "demo:fix-tests"}), *pwd_then_edit("return a + b"), text("Fixed.")],
    "wrong": [*pwd_then_edit("return a * b"), text("Done.")],
    "deny": [tool("Bash", {"command": "git push origin main"}), text("Could not push.")],
    "mcpok": [tool("mcp__calc__add", {"a": 2, "b": 3}), text("2 + 3 = 5")],
    "mcpbad": [tool("mcp__calc__add", {"a": 2, "b": 4}), text("2 + 4 = 6")],
    # the server exits on this call; the CLI restarts it, the next call succeeds, the answer looks right
    "mcpcrash": [tool("mcp__calc__add", {"a": 666, "b": 1}), tool("mcp__calc__add", {"a": 2, "b": 3}),
                 text("666 + 1 = 667 and 2 + 3 = 5")],
    "secret": [tool("Bash", {"command": "printenv AGENT_SECRET"}), text("Printed it.")],
    # the CLI retries a refused request; every try is refused
    "apierr": [api_error(400, "invalid_request_error", "scripted: this request is refused")] * 10,
    # k=3: the skill on repeats 1 and 3, not on 2 -> pass^3 fails
    "flaky": [tool("Skill", {"skill": "demo:fix-tests"}), text("ok"), text("no skill this time"),
              tool("Skill", {"skill": "demo:fix-tests"}), text("ok")],
    # the model never answers: the CLI and its MCP server child wait until the deadline kills the group
    "hang": [tool("Bash", lambda ctx: time.sleep(240) or {"command": "true"}), text("slept")],
}

FIX = {"skills": {"must_trigger": ["fix-tests"]}, "files": {"contains": {"calc.py": ["return a + b"]},
       "unchanged": ["README.md"]}, "check": {"command": [sys.executable, "check_calc.py"]}}


def build_app(root: Path) -> Path:
    build_repo_and_plugin(root)
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable,
                                                                        "args": [str(MCP_SERVER)]}}}))
    state = root / ".assay"
    for sub in ("work", "reports"):
        (state / sub).mkdir(parents=True)
    return state


def adapter(root: Path, *, mcp: bool = False, **agent) -> dict:
    """The agent adapter; `mcp` adds the calc MCP server (a Python process of ~2 CPU-s per session,
    so only the runs that need it start it)."""
    block = {"kind": "claude-code", "workdir": "fixtures/repo", "plugin_dirs": ["plugin"],
             "program": str(CLAUDE), "permission_mode": "acceptEdits",
             "allowed_tools": ["Skill", "Read", "Bash(printenv *)", "Bash(sleep *)"],
             "max_turns": 10, "timeout_s": 180,
             "env": {"ANTHROPIC_BASE_URL": "${SCRIPTED_BASE_URL}", "ANTHROPIC_API_KEY": "${SCRIPTED_API_KEY}",
                     "AGENT_SECRET": "${AGENT_SECRET}", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                     "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}}
    if mcp:
        block["mcp_config"] = "mcp.json"
        block["allowed_tools"].append("mcp__calc__add")
    block.update(agent)
    return {"adapter_version": 1, "app": {"name": "agent", "repo": str(root)},
            "invocation": {"mode": "agent", "agent": block, "env_allowlist": ["PATH"]},
            "traces": {"source": "none"}, "environment": {"kind": "mocked", "safe_to_attack": True},
            "data": {"may_contain_pii": False}}


def go(state: Path, srv: MessagesServer, cases: list, run_id: str, tmp: Path, *, k: int = 1, ad: dict | None = None,
       concurrency: int = 1, **plan_extra):
    ad = ad or adapter(state.parent)
    ad["invocation"]["max_concurrency"] = concurrency
    plan = make_plan(state, cases, run_id=run_id, k=k, adapter_doc=ad,
                     execution={"max_attempts": 1, "backoff_s": []}, **plan_extra)
    path = state / "work" / f"{run_id}.json"
    path.write_text(json.dumps(plan))
    out = state / "reports" / run_id
    env = {"SCRIPTED_BASE_URL": srv.base_url, "SCRIPTED_API_KEY": srv.env()["ANTHROPIC_API_KEY"],
           "AGENT_SECRET": SECRET, "ASSAY_SCRATCH_DIR": str(tmp / "scratch")}
    r = run_script("run_cases", "--plan", path, "--out", out, "--progress", "never", env=env, timeout=900)
    return r, out


def verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


def c(cid: str, key: str, expect: dict) -> dict:
    return case(cid, f"[k:{key}] do the task", expect=expect)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("claude-agent")
    state = build_app(tmp / "app")
    with RoutedServer([], routes={f"[k:{k}]": MessagesServer(list(v)) for k, v in SCRIPTS.items()}) as srv:
        # four runs at once (each CLI mostly waits): the main suite 3 cases at a time, the MCP
        # server's cases, k=3 of a flaky model, and a hang under a short timeout (with the MCP
        # server: a grandchild the group kill must reach)
        got: dict = {}
        main_cases = [
            c("r-fix", "fix", FIX), c("r-wrong", "wrong", FIX),
            c("r-deny", "deny", {"tools": {"forbidden": ["Bash(git push *)"]}}),
            # a session that never triggers the skill: its must_not_trigger passes (one CLI session
            # fewer than a case of its own, ~1.5 CPU-s; the layer is asserted on its own below)
            c("r-secret", "secret", {"answer": {"must_contain": ["Printed"]},
                                     "skills": {"must_not_trigger": ["fix-tests"]}}),
            c("r-apierr", "apierr", {"answer": {"must_contain": ["x"]}})]
        mcp_cases = [c("r-mcp-right", "mcpok", {"args": {"mcp__calc__add": {"a": 2, "b": 3}}}),
                     c("r-mcp-wrong", "mcpbad", {"args": {"mcp__calc__add": {"a": 2, "b": 3}}}),
                     c("r-mcp-crash", "mcpcrash", {"tools": {"subset": ["mcp__calc__add"]},
                                                   "args": {"mcp__calc__add": {"a": 666, "b": 1}},
                                                   "answer": {"must_contain": ["667"]}})]
        jobs = {"main": lambda: go(state, srv, main_cases, "smoke-20261204T220000Z", tmp, concurrency=3),
                "mcp": lambda: go(state, srv, mcp_cases, "smoke-20261204T220300Z", tmp, concurrency=2,
                                  ad=adapter(state.parent, mcp=True)),
                "flaky": lambda: go(state, srv, [c("r-flaky", "flaky", {"skills": {"must_trigger": ["fix-tests"]}})],
                                    "smoke-20261204T220100Z", tmp, k=3),
                "hang": lambda: go(state, srv, [c("r-hang", "hang", {"answer": {"must_contain": ["slept"]}})],
                                   "smoke-20261204T220200Z", tmp, ad=adapter(state.parent, mcp=True, timeout_s=25))}
        threads = [threading.Thread(target=lambda n=n, f=f: got.__setitem__(n, f())) for n, f in jobs.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        yield {**got, "state": state, "tmp": tmp, "srv": srv}


def test_the_skill_triggered_and_the_right_edit_pass(runs):
    r, out = runs["main"]
    assert r.rc == 0, r.stdout + r.stderr
    v = verdict(out, "r-fix")
    assert v["verdict"] == "pass", json.dumps(v["layers"])[:2000]
    assert any(s.endswith("fix-tests") for s in v["layers"]["skills"]["invoked"])
    assert v["layers"]["files"]["diff"]["modified"] == ["calc.py"]


def test_no_skill_and_a_wrong_edit_fail_where_they_should(runs):
    _, out = runs["main"]
    v = verdict(out, "r-wrong")
    assert v["verdict"] == "fail"
    assert {n for n in ("skills", "files", "check") if v["layers"][n]["verdict"] == "fail"} == {"skills", "files", "check"}
    # a session that did not trigger the skill passes must_not_trigger (r-secret's session)
    quiet = verdict(out, "r-secret")
    assert quiet["layers"]["skills"]["verdict"] == "pass", quiet["layers"]["skills"]
    assert not any(s.endswith("fix-tests") for s in quiet["layers"]["skills"]["invoked"])
    assert quiet["verdict"] == "pass", json.dumps(quiet["layers"])[:2000]


def test_a_denied_command_is_a_finding_and_fails(runs):
    _, out = runs["main"]
    v = verdict(out, "r-deny")
    assert v["verdict"] == "fail"
    assert v["layers"]["permissions"]["verdict"] == "fail" and v["layers"]["permissions"]["denied_tools"] == ["Bash"]
    assert v["layers"]["trajectory"]["verdict"] == "fail"   # the forbidden rule saw the attempted call


def test_the_mcp_servers_tool_called_with_right_and_wrong_arguments(runs):
    r, out = runs["mcp"]
    assert r.rc == 0, r.stdout + r.stderr
    assert verdict(out, "r-mcp-right")["verdict"] == "pass"
    v = verdict(out, "r-mcp-wrong")
    assert v["verdict"] == "fail" and v["layers"]["tool_selection"]["verdict"] == "fail"
    traj = json.loads((cases_view(out) / "r-mcp-right" / "trajectory.json").read_text())
    call = [t for t in traj["tool_calls"] if t["name"] == "mcp__calc__add"][0]
    assert call["mcp"] == {"server": "calc", "tool": "add"} and "5" in json.dumps(call["result"])
    assert traj["mcp_servers"] == [{"name": "calc", "status": "connected"}]
    assert traj["agent_cli"]["version"] == PINNED   # the real CLI's init event (a lift compares the arms' CLIs)


def test_an_mcp_server_that_crashed_on_a_call_is_never_a_pass(runs):
    """The app under test exited mid-call ("Connection closed"): the CLI restarted it and the agent
    answered as if the call had worked. Every asserted layer passes (the call was made with those
    arguments, the answer says 667); the case fails, naming the server and the call."""
    r, out = runs["mcp"]
    v = verdict(out, "r-mcp-crash")
    assert v["layers"]["tool_selection"]["verdict"] == "pass" and v["layers"]["answer"]["verdict"] == "pass", v
    http = v["layers"]["http"]
    assert v["verdict"] == "fail" and http["verdict"] == "fail", v
    assert "MCP server 'calc' closed its connection during call 1 (mcp__calc__add" in http["reason"], http
    assert [c["index"] for c in http["mcp_crashes"]] == [0], http
    g = run_script("gate", out)
    assert g.rc == 1 and "r-mcp-crash (http)" in g.stdout + g.stderr, g.stdout + g.stderr


def test_a_failed_model_call_is_infra_and_named(runs):
    _, out = runs["main"]
    v = verdict(out, "r-apierr")
    assert v["verdict"] == "infra_error", v
    assert "model call failed" in v["infra_reason"] and "API Error: 400" in v["infra_reason"], v["infra_reason"]


def test_the_secret_the_agent_printed_is_redacted_everywhere(runs):
    _, out = runs["main"]
    assert verdict(out, "r-secret")["verdict"] == "pass"
    traj = (cases_view(out) / "r-secret" / "trajectory.json").read_text()
    assert "printenv" in traj
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_flaky_model_over_k3_fails_pass_k(runs):
    _, out = runs["flaky"]
    v = verdict(out, "r-flaky")
    assert v["verdict"] == "fail", v
    assert sorted(rep["verdict"] for rep in v["repeats"]) == ["fail", "pass", "pass"]


def test_a_hang_is_killed_with_its_process_group(runs):
    tmp = runs["tmp"]
    _, out = runs["hang"]
    v = verdict(out, "r-hang")
    assert v["verdict"] == "infra_error" and "process group was killed" in v["infra_reason"], v
    deadline = time.time() + 30
    while time.time() < deadline and processes_in(str(tmp / "scratch")):
        time.sleep(0.5)
    assert not processes_in(str(tmp / "scratch"))


def test_a_plugin_the_cli_refused_to_load_is_infra_never_a_pass(tmp_path):
    """A plugin dir whose .claude-plugin/plugin.json is corrupt: the real CLI refuses the plugin, says so
    in its init event's plugin_errors and runs on without it, so `must_not_trigger` passed and the gate
    was PASS on a session that never had the plugin. Every attempt is infra_error naming the plugin, the
    CLI's words and the fix; the gate closes pointing at invocation.agent.plugin_dirs."""
    state = build_app(tmp_path / "app")
    (state.parent / "plugin" / ".claude-plugin" / "plugin.json").write_text('{"name": "demo",')
    cases = [c("b-1", "x", {"skills": {"must_not_trigger": ["fix-tests"]}, "answer": {"must_contain": ["Done"]}})]
    with MessagesServer([text("Done.")]) as srv:
        _, out = go(state, srv, cases, "smoke-20261204T220400Z", tmp_path)
    v = verdict(out, "b-1")
    assert v["verdict"] == "infra_error", v
    reason = v["infra_reason"]
    assert "a plugin was not loaded" in reason and "corrupt manifest" in reason, reason
    assert str(state.parent / "plugin") in reason and "claude plugin validate" in reason, reason
    g = run_script("gate", out)
    assert g.rc == 1 and "check the adapter's invocation.agent.plugin_dirs" in g.stdout, g.stdout + g.stderr


def test_a_skill_the_session_was_never_offered_is_unscored_never_a_pass(tmp_path):
    """A plugin's SKILL.md without frontmatter: the real CLI loads it as a slash command only, lists it in
    no init `skills` and never offers it to the model, so `must_not_trigger: [tidy]` passed and the gate
    was PASS on a check that could not fail. Its skills layer is unscored naming the skill, the file and the
    fix (the gate closes). A workdir's .claude/skills SKILL.md without frontmatter is offered to the model
    (with its first line; the CLI's init omits it all the same): its case stays measured."""
    state = build_app(tmp_path / "app")
    tidy = state.parent / "plugin" / "skills" / "tidy"
    tidy.mkdir()
    (tidy / "SKILL.md").write_text("Tidy the repo: sort the imports.\n")
    lint = state.parent / "fixtures" / "repo" / ".claude" / "skills" / "lint"
    lint.mkdir(parents=True)
    (lint / "SKILL.md").write_text("Lint the repo before a commit.\n")
    cases = [c("o-bare", "x", {"skills": {"must_not_trigger": ["tidy"]}}),
             c("o-local", "x", {"skills": {"must_not_trigger": ["lint"]}}),
             c("o-ok", "x", {"skills": {"must_not_trigger": ["fix-tests"]}})]
    with MessagesServer([text("Done.")] * 3) as srv:
        r, out = go(state, srv, cases, "smoke-20261204T220500Z", tmp_path)
        listing = json.dumps(srv.main_requests[0].body)
    assert r.rc == 0, r.stdout + r.stderr
    assert "- lint:" in listing and "tidy" not in listing, listing[:3000]   # what the model was offered
    layer = verdict(out, "o-bare")["layers"]["skills"]
    assert layer["verdict"] == "unscored", layer
    for said in ("'tidy'", "plugin/skills/tidy/SKILL.md has no frontmatter description", "never offered it to the model",
                 "add frontmatter at its top (---, name: tidy, description:"):
        assert said in layer["reason"], layer["reason"]
    for cid in ("o-local", "o-ok"):
        assert verdict(out, cid)["layers"]["skills"]["verdict"] == "pass", verdict(out, cid)["layers"]["skills"]
    g = run_script("gate", out)
    assert g.rc == 1 and "o-bare" in g.stdout, g.stdout + g.stderr


def test_a_skill_defined_nowhere_is_refused_before_the_run_but_not_in_the_arm_without_it(tmp_path):
    """The fixture's skill in `.claude/skill/` (not skills/) and no plugin dir: no skill name was checked
    at all, so `must_not_trigger: [helper]` passed whatever the agent did. The pre-flight refuses the run
    (exit 3) naming the case, the skill, the stray SKILL.md and where it belongs. An arm declared without
    the plugin (`without: {plugin_dirs: []}`) lacks its skill on purpose: there `must_not_trigger` holds as
    the lift reads it (the skill was not there to trigger), so the case passes."""
    state = build_app(tmp_path / "app")
    stray = state.parent / "fixtures" / "repo" / ".claude" / "skill" / "helper"
    stray.mkdir(parents=True)
    (stray / "SKILL.md").write_text("---\nname: helper\ndescription: Help\n---\nHelp.\n")
    with MessagesServer([text("Done.")]) as srv:
        r, out = go(state, srv, [c("w-1", "x", {"skills": {"must_not_trigger": ["helper"]}})],
                    "smoke-20261204T220600Z", tmp_path, ad=adapter(state.parent, plugin_dirs=[]))
        assert r.rc == 3, r.stdout + r.stderr
        said = r.stdout + r.stderr
        for part in ("case w-1", "skill 'helper' is defined nowhere the agent reads skills",
                     ".claude/skill/helper/SKILL.md", "put the skill at .claude/skills/helper/SKILL.md"):
            assert part in said, said
        ad = adapter(state.parent, plugin_dirs=[])
        ad["arms"] = {"with-skill": {"plugin_dirs": ["plugin"]}, "without": {"plugin_dirs": []}}
        r, out = go(state, srv, [c("w-2", "x", {"skills": {"must_not_trigger": ["fix-tests"]}})],
                    "smoke-20261204T220700Z", tmp_path, ad=ad,
                    manifest_extra={"dataset_version": 1, "arm": {"name": "without", "overrides": {"plugin_dirs": []}}})
    assert r.rc == 0, r.stdout + r.stderr
    assert verdict(out, "w-2")["layers"]["skills"]["verdict"] == "pass", verdict(out, "w-2")["layers"]["skills"]
