"""run_cases.py with `invocation.mode: agent` against a stand-in Claude Code CLI (tests/fakeclaude.py:
the CLI's argv in, its stream-json transcript out), as a user meets it: a fresh workdir per case,
the transcript as the trace (skills, MCP tools, subagents, denials, tokens), the new expectations
(skills, files, check, permissions) failing when they should, a cut-off or malformed transcript
as infra (never a pass), secrets redacted, a hang killed with its process group, the newcomer's
mistakes named before any case runs. The real CLI with a scripted model: test_agent_claude.py."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from agent_app import build_repo_and_plugin, processes_in
from fakeapp import case, make_plan
from helpers import ROOT, run_script
from rundir_util import cases_view

pytestmark = pytest.mark.slow   # a dozen run_cases.py runs of agent subprocesses

FAKE = ROOT / "tests" / "fakeclaude.py"
SECRET = "agent-secret-value-90210"


def fixture_repo(root: Path) -> Path:
    repo = build_repo_and_plugin(root)
    prog = root / "bin" / "claude"
    prog.parent.mkdir()
    prog.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" "$@"\n')
    prog.chmod(0o755)
    return repo


def agent_adapter(root: Path, **agent) -> dict:
    block = {"kind": "claude-code", "workdir": "fixtures/repo", "plugin_dirs": ["plugin"], "program": str(root / "bin" / "claude"),
             "permission_mode": "acceptEdits", "allowed_tools": ["Read", "Edit", "Bash(pytest *)"], "max_turns": 5,
             "env": {"FAKE_SECRET": "${FAKE_SECRET}"}, "timeout_s": 120}
    block.update(agent)
    return {"adapter_version": 1, "app": {"name": "agent", "repo": str(root)},
            "invocation": {"mode": "agent", "agent": block, "env_allowlist": ["PATH", "FLAKY_DIR", "ESCAPE_TARGET"]},
            "traces": {"source": "none"}, "environment": {"kind": "mocked", "safe_to_attack": True},
            "data": {"may_contain_pii": False}}


def setup_state(tmp_path: Path) -> Path:
    state = tmp_path / "app" / ".assay"
    for sub in ("work", "reports", "datasets"):
        (state / sub).mkdir(parents=True)
    fixture_repo(tmp_path / "app")
    return state


def run(state: Path, cases: list[dict], tmp_path: Path, *, run_id: str, k: int = 1, adapter: dict | None = None,
        extra_env: dict | None = None):
    plan = make_plan(state, cases, run_id=run_id, k=k, adapter_doc=adapter or agent_adapter(state.parent),
                     execution={"max_attempts": 1, "backoff_s": []})
    path = state / "work" / f"{run_id}.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    out = state / "reports" / run_id
    env = {"FAKE_SECRET": SECRET, "ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"), "FLAKY_DIR": str(tmp_path),
           **(extra_env or {})}
    r = run_script("run_cases", "--plan", path, "--out", out, "--progress", "never", env=env)
    return r, out


def verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text())


FIX_EXPECT = {"skills": {"must_trigger": ["fix-tests"]}, "files": {"contains": {"calc.py": ["a + b"]},
              "unchanged": ["README.md"], "exists": ["check_calc.py"]},
              "check": {"command": [sys.executable, "check_calc.py"]}}
CASES = [
    case("a-fix", "fix the add function", expect=FIX_EXPECT),
    case("a-wrong", "wrong edit", expect=FIX_EXPECT),
    case("a-not-triggered", "wrong edit", expect={"skills": {"must_not_trigger": ["fix-tests"]}}),
    case("a-deny", "deny please", expect={"answer": {"must_contain": ["could not clean"]}}),
    case("a-deny-allowed", "deny please", expect={"permissions": {"max_denied": 1},
                                                  "tools": {"forbidden": ["Bash(git push *)"]}}),
    case("a-forbidden", "deny please", expect={"tools": {"forbidden": ["Bash(rm -rf *)"]}, "permissions": {"max_denied": 1}}),
    case("a-mcp", "mcp 3", expect={"args": {"mcp__calc__add": {"a": 2, "b": 3}}, "tools": {"subset": ["mcp__calc__add"]}}),
    case("a-mcp-wrong", "mcp 4", expect={"args": {"mcp__calc__add": {"a": 2, "b": 3}}}),
    case("a-forbid-typo", "mcp 3", expect={"tools": {"forbidden": ["mcp__calc__ad"]}}),
    case("a-cut", "cut short", expect={"answer": {"must_contain": ["x"]}}),
    case("a-garbage", "garbage out", expect={"answer": {"must_contain": ["x"]}}),
    case("a-secret", "secret please", expect={"answer": {"must_contain": ["the token is"]}}),
    case("a-nousage", "nousage", expect={"answer": {"must_contain": ["no usage"]}}),
    {**case("a-turns", "x", expect={"answer": {"must_contain": ["resume=sess-"]}}),
     "input": {"turns": [{"user": "turns one"}, {"user": "turns two"}]}},
]


@pytest.fixture(scope="module")
def main_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agent")
    state = setup_state(tmp)
    r, out = run(state, CASES, tmp, run_id="smoke-20261204T230000Z")
    return r, out, tmp, state


def test_skill_files_and_check_pass_on_the_right_edit(main_run):
    _, out, _, _ = main_run
    v = verdict(out, "a-fix")
    assert v["verdict"] == "pass", v["layers"]
    assert v["layers"]["skills"]["invoked"] == ["demo:fix-tests"]
    assert v["layers"]["check"]["exit_code"] == 0 and "ok" in v["layers"]["check"]["output"]
    assert v["layers"]["files"]["diff"]["modified"] == ["calc.py"]
    assert v["layers"]["permissions"]["verdict"] == "n/a"


def test_a_wrong_edit_fails_skills_files_and_check(main_run):
    _, out, _, _ = main_run
    v = verdict(out, "a-wrong")
    assert v["verdict"] == "fail"
    layers = v["layers"]
    assert layers["skills"]["verdict"] == "fail" and layers["skills"]["missing"] == ["fix-tests"]
    assert layers["files"]["verdict"] == "fail"
    assert any("README.md changed" in f for f in layers["files"]["failures"])
    assert layers["check"]["verdict"] == "fail" and layers["check"]["exit_code"] == 1
    assert "AssertionError" in layers["check"]["output"]
    assert verdict(out, "a-not-triggered")["verdict"] == "pass"


def test_a_denied_call_fails_by_default_and_passes_under_its_allowance(main_run):
    _, out, _, _ = main_run
    v = verdict(out, "a-deny")
    assert v["verdict"] == "fail"
    assert v["layers"]["permissions"]["verdict"] == "fail" and v["layers"]["permissions"]["denied_tools"] == ["Bash"]
    assert verdict(out, "a-deny-allowed")["verdict"] == "pass"
    f = verdict(out, "a-forbidden")
    assert f["verdict"] == "fail" and f["layers"]["trajectory"]["forbidden_violations"][0]["tool"] == "Bash(rm -rf *)"


def test_mcp_tool_arguments_right_and_wrong(main_run):
    _, out, _, _ = main_run
    assert verdict(out, "a-mcp")["verdict"] == "pass"
    v = verdict(out, "a-mcp-wrong")
    assert v["verdict"] == "fail" and v["layers"]["tool_selection"]["verdict"] == "fail"
    traj = json.loads((cases_view(out) / "a-mcp" / "trajectory.json").read_text())
    assert [a["name"] for a in traj["agents"]] == ["claude-code", "explorer"]
    read = [c for c in traj["tool_calls"] if c["name"] == "Read"][0]
    assert read["agent"] == "explorer"


def test_a_forbidden_tool_the_session_did_not_have_is_unscored_never_a_pass(main_run):
    _, out, _, _ = main_run
    v = verdict(out, "a-forbid-typo")
    assert v["verdict"] == "unscored" and v["layers"]["trajectory"]["verdict"] == "unscored", v
    assert "did you mean 'mcp__calc__add'" in v["layers"]["trajectory"]["reason"]


def test_a_tool_name_the_session_did_not_have_sends_the_user_to_the_case_not_to_traces(tmp_path):
    """Every case names a tool the agent never had (a typo): the trajectory layer is hollow and the gate's
    hint said "check the adapter's traces (source, location, correlation)", a block an agent adapter does
    not read; the fix is the case's tool name, which the reason's did-you-mean gives."""
    state = setup_state(tmp_path)
    typo = case("a-typo", "mcp 3", expect={"tools": {"forbidden": ["mcp__calc__ad"]}, "answer": {"must_contain": ["5"]}})
    _, out = run(state, [typo], tmp_path, run_id="smoke-20261204T234100Z")
    g = run_script("gate", out)
    text = g.stdout + g.stderr
    assert g.rc == 1 and "layer trajectory was asserted by 1 case(s) and scored in none" in text, text
    assert "check the case's expect.tools / expect.args tool name" in text, text
    assert "check the adapter's traces" not in text, text


def test_cut_off_and_malformed_transcripts_are_infra_never_a_pass(main_run):
    _, out, _, _ = main_run
    cut, bad = verdict(out, "a-cut"), verdict(out, "a-garbage")
    assert cut["verdict"] == "infra_error" and "without a result event" in cut["infra_reason"]
    assert bad["verdict"] == "infra_error" and "is not JSON" in bad["infra_reason"]


def test_an_mcp_server_that_did_not_connect_is_infra_never_a_pass(tmp_path):
    """The app under test (the MCP server) never started: a scripted call of its tool, refused as "No
    such tool available", must not read as the tool called with the right arguments."""
    state = setup_state(tmp_path)
    down = case("a-mcp-down", "mcpdown 3", expect={"args": {"mcp__calc__add": {"a": 2, "b": 3}},
                                                   "tools": {"subset": ["mcp__calc__add"]}, "answer": {"must_contain": ["5"]}})
    r, out = run(state, [down], tmp_path, run_id="smoke-20261204T234000Z")
    v = verdict(out, "a-mcp-down")
    assert v["verdict"] == "infra_error", v
    assert "MCP server 'calc' (failed) did not connect" in v["infra_reason"], v["infra_reason"]
    assert "invocation.agent.mcp_config" in v["infra_reason"]
    # the gate's hint names the agent's key, not a cli app's invocation.command / cwd (keys it has not)
    g = run_script("gate", out)
    text = g.stdout + g.stderr
    assert g.rc == 1 and "check the adapter's invocation.agent.mcp_config (run each server's command" in text, text
    assert "invocation.cwd" not in text and "invocation.command" not in text, text


def test_secrets_never_reach_disk(main_run):
    _, out, _, _ = main_run
    assert verdict(out, "a-secret")["verdict"] == "pass"
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_tokens_are_priced_and_missing_usage_is_incomplete_cost(main_run):
    _, out, _, state = main_run
    (state / "prices.yaml").write_text("currency: USD\nper: 1000000\nmodels:\n  claude-scripted-1: {input: 3, output: 15}\n")
    r = run_script("score_cost", out)
    doc = r.json
    rows = {c["case_id"]: c for c in doc["cases"]}
    assert rows["a-fix"]["input_tokens"] == 105 and rows["a-fix"]["cost"] > 0
    assert rows["a-nousage"]["calls_without_usage"] == 1 and rows["a-nousage"]["cost"] is None
    assert "reported no token usage" in doc["totals"]["incomplete_reason"]
    assert doc["totals"]["complete"] is False


def test_a_conversation_resumes_the_first_turns_session_in_the_same_workdir(main_run):
    _, out, _, _ = main_run
    v = verdict(out, "a-turns")
    assert v["verdict"] == "pass", v
    final = json.loads((cases_view(out) / "a-turns" / "response.json").read_text())
    assert "resume=sess-" in json.dumps(final)


def test_the_run_exits_like_any_run_with_failures(main_run):
    r, out, _, _ = main_run
    assert r.rc == 0, r.stderr   # a smoke run's gate is soft: the failures are the gate's to judge
    manifest = json.loads((out / "manifest.yaml").read_text())
    assert manifest["invocation"]["mode"] == "agent"
    assert manifest["invocation"]["agent"]["plugin_dirs"][0].endswith("plugin")


def test_newcomer_mistakes_are_named_before_any_case_runs(tmp_path):
    state = setup_state(tmp_path)
    for bad_case, needle in (
            (case("n-1", "fix", expect={"skills": {"must_trigger": ["fix-test"]}}), "did you mean 'fix-tests'"),
            ({**case("n-2", "fix", expect={"check": {"command": "pytest -q"}}), "input": {
                "messages": [{"role": "user", "content": "fix"}], "fixture": "fixtures/nope"}}, "fixtures/nope"),
            (case("n-3", "fix", expect={"check": {"command": "no-such-checker --x"}}), "no-such-checker")):
        r, out = run(state, [bad_case], tmp_path, run_id=f"smoke-20261204T23000{bad_case['id'][-1]}Z")
        assert r.rc == 3, r.stderr
        assert needle in r.stdout and bad_case["id"] in r.stdout, r.stdout
        assert not (out / "cases").exists() or not any((out / "cases").iterdir())
    # the CLI missing: named by the key the user wrote (program), not the cli invoker's command[0]
    r, _ = run(state, [case("n-4", "fix", expect={"answer": {"must_contain": ["x"]}})], tmp_path,
               run_id="smoke-20261204T230004Z", adapter=agent_adapter(state.parent, program="claud"))
    assert r.rc == 3 and "invocation.agent.program 'claud' is not found" in r.stdout, r.stdout
    assert r.json["key"] == "invocation.agent.program"
    # an MCP server whose program is not on the agent's PATH: the CLI goes on without it, so every case
    # paid a model session to read infra_error; a config under VS Code's "servers" key: the CLI refuses it
    for i, (doc, needle) in enumerate((
            ({"mcpServers": {"calc": {"command": "calc-server", "args": ["--stdio"]}}},
             "command 'calc-server' is not found on the agent's PATH"),
            ({"servers": {"calc": {"command": sys.executable}}}, "found: servers"))):
        (state.parent / f"mcp{i}.json").write_text(json.dumps(doc))
        r, out = run(state, [case("n-5", "mcp 3", expect={"tools": {"subset": ["mcp__calc__add"]}})], tmp_path,
                     run_id=f"smoke-20261204T23001{i}Z", adapter=agent_adapter(state.parent, mcp_config=f"mcp{i}.json"))
        assert r.rc == 3 and r.json["key"] == "invocation.agent.mcp_config", r.stdout
        assert needle in r.json["error"] and f"mcp{i}.json" in r.json["error"], r.json["error"]
        assert not (out / "cases").exists() or not any((out / "cases").iterdir())


def test_a_hang_is_a_timeout_and_its_process_group_is_killed(tmp_path):
    state = setup_state(tmp_path)
    ad = agent_adapter(state.parent, timeout_s=3)
    r, out = run(state, [case("h-1", "hang now", expect={"answer": {"must_contain": ["x"]}})], tmp_path,
                 run_id="smoke-20261204T231000Z", adapter=ad)
    v = verdict(out, "h-1")
    assert v["verdict"] == "infra_error" and "process group was killed" in v["infra_reason"]
    g = run_script("gate", out)
    assert g.rc == 1 and "check the adapter's invocation.agent.timeout_s" in g.stdout + g.stderr, g.stdout + g.stderr
    deadline = time.time() + 30
    while time.time() < deadline and processes_in(str(tmp_path), b"fakeclaude-grandchild"):
        time.sleep(0.2)
    assert not processes_in(str(tmp_path), b"fakeclaude-grandchild")


def test_the_linter_names_the_same_mistakes_with_did_you_mean(tmp_path):
    state = setup_state(tmp_path)
    (state / "work" / "adapter.json").write_text(json.dumps(agent_adapter(state.parent)))
    cases = [case("l-1", "fix", expect={"skills": {"must_trigger": ["fix-test"]}}),
             case("l-2", "fix", expect={"check": {"command": "no-such-checker"}}),
             {**case("l-3", "fix", expect={"files": {"exist": ["a"]}}),
              "input": {"messages": [{"role": "user", "content": "x"}], "fixture": "fixtures/nope"}},
             case("l-4", "fix", expect={"skils": {"must_trigger": ["fix-tests"]}}),
             case("l-5", "fix", expect={"files": {"unchanged": ["README.mdx", "docs/*"]}})]
    (state / "work" / "cases.json").write_text(json.dumps(cases))
    r = run_script("validate_cases", "--cases", state / "work" / "cases.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    assert r.rc == 1, r.stderr
    found = {(f["case_id"], f["code"]): f["message"] for f in r.json["findings"]}
    assert "did you mean 'fix-tests'" in found[("l-1", "unknown_skill")]
    assert "no-such-checker" in found[("l-2", "check_not_found")]
    assert "fixtures/nope" in found[("l-3", "missing_fixture")]
    assert "did you mean 'exists'" in found[("l-3", "bad_expect_shape")]
    assert "did you mean 'skills'" in found[("l-4", "unknown_expect_key")]
    # a plain unchanged path the fixture lacks passes whatever the agent does; a glob may name what is not there yet
    assert "did you mean 'README.md'" in found[("l-5", "unchanged_not_in_fixture")]
    assert "docs/*" not in found[("l-5", "unchanged_not_in_fixture")]


def test_the_linter_warns_of_a_skill_without_a_frontmatter_description(tmp_path):
    """Claude Code loads a plugin's SKILL.md without a frontmatter description as a slash command only and
    never offers it to the model (a case naming it reads `unscored`): validate_cases.py --adapter warns,
    naming the file and the frontmatter to add; a described skill draws no warning."""
    state = setup_state(tmp_path)
    (state / "work" / "adapter.json").write_text(json.dumps(agent_adapter(state.parent)))
    bare = state.parent / "plugin" / "skills" / "tidy" / "SKILL.md"
    bare.parent.mkdir(parents=True)
    bare.write_text("Tidy the repo.\n")
    cases = [case("w-1", "fix", expect={"skills": {"must_trigger": ["fix-tests"]}})]
    (state / "work" / "cases.json").write_text(json.dumps(cases))
    r = run_script("validate_cases", "--cases", state / "work" / "cases.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    warned = [f for f in r.json["findings"] if f["code"] == "skill_without_description"]
    assert [f["severity"] for f in warned] == ["WARN"], r.stdout
    assert "plugin/skills/tidy/SKILL.md" in warned[0]["message"] and "description:" in warned[0]["message"]


def test_the_linter_names_an_mcp_config_the_agent_refuses(tmp_path):
    """validate_cases.py --adapter said nothing of an mcp_config under VS Code's "servers" key or not JSON
    at all: the run's pre-flight refused it (exit 3), the linter a user runs first was clean. It names the
    key and the file now (the pre-flight's own check); a server's command on PATH is left to the run."""
    state = setup_state(tmp_path)
    cases = [case("m-1", "mcp 3", expect={"answer": {"must_contain": ["3"]}})]
    (state / "work" / "cases.json").write_text(json.dumps(cases))
    docs = {"servers.json": json.dumps({"servers": {"calc": {"command": sys.executable}}}),
            "broken.json": '{"mcpServers": {',
            "unfound.json": json.dumps({"mcpServers": {"calc": {"command": "calc-server-not-on-path"}}})}
    for name, text in docs.items():
        (state.parent / name).write_text(text)
        (state / "work" / "adapter.json").write_text(json.dumps(agent_adapter(state.parent, mcp_config=name)))
        r = run_script("validate_cases", "--cases", state / "work" / "cases.json", "--no-capabilities",
                       "--adapter", state / "work" / "adapter.json")
        found = [f for f in r.json["findings"] if f["code"] == "bad_mcp_config"]
        if name == "unfound.json":
            assert r.rc == 0 and not found, r.stdout
            continue
        assert r.rc == 1 and len(found) == 1, r.stdout + r.stderr
        f = found[0]
        assert f["severity"] == "ERROR" and f["key"] == "invocation.agent.mcp_config", f
        assert f["message"].startswith("invocation.agent.mcp_config: ") and name in f["message"], f
        assert ("found: servers" if name == "servers.json" else "is not JSON") in f["message"], f


def test_the_linter_names_an_arms_mcp_config_the_agent_refuses(tmp_path):
    """An arm's own mcp_config (`arms: {with-server: {mcp_config: servers.json}}`, what make_plan.py --arm
    runs the agent with) was never looked at by validate_cases.py --adapter: clean, while the run under
    that arm ended at the pre-flight (exit 3, under invocation.agent's name). The same check names the
    arm's key and file now; an arm's key the agent block does not have is named under the arm too."""
    state = setup_state(tmp_path)
    cases = [case("m-1", "mcp 3", expect={"answer": {"must_contain": ["3"]}})]
    (state / "work" / "cases.json").write_text(json.dumps(cases))
    (state.parent / "servers.json").write_text(json.dumps({"servers": {"calc": {"command": sys.executable}}}))
    (state.parent / "broken.json").write_text('{"mcpServers": {')
    (state.parent / "good.json").write_text(json.dumps({"mcpServers": {"calc": {"command": sys.executable}}}))
    ad = agent_adapter(state.parent)
    ad["arms"] = {"with-server": {"mcp_config": "servers.json"}, "broken": {"mcp_config": "broken.json"},
                  "good": {"mcp_config": "good.json"}, "without": {}, "typo": {"mcp_conifg": "good.json"}}
    (state / "work" / "adapter.json").write_text(json.dumps(ad))
    r = run_script("validate_cases", "--cases", state / "work" / "cases.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    assert r.rc == 1, r.stdout + r.stderr
    found = {f["key"]: f for f in r.json["findings"] if f["code"] in ("bad_mcp_config", "bad_agent_case")}
    assert set(found) == {"arms.with-server.mcp_config", "arms.broken.mcp_config", "arms.typo.mcp_conifg"}, found
    served = found["arms.with-server.mcp_config"]
    assert served["code"] == "bad_mcp_config" and served["severity"] == "ERROR", served
    assert served["message"].startswith("arms.with-server.mcp_config: ") and "servers.json" in served["message"]
    assert "found: servers" in served["message"], served
    assert "broken.json" in found["arms.broken.mcp_config"]["message"] and "is not JSON" in found["arms.broken.mcp_config"]["message"]
    typo = found["arms.typo.mcp_conifg"]
    assert typo["code"] == "bad_agent_case" and "did you mean 'mcp_config'" in typo["message"], typo
    assert typo["message"].startswith("arms.typo.mcp_conifg: "), typo


def test_two_arms_compare_as_lift(tmp_path):
    """make_plan.py --arm plans the same suite under two arms; compare_runs.py reads the pair as lift."""
    state = setup_state(tmp_path)
    ad = agent_adapter(state.parent)
    ad["arms"] = {"with-skill": {"plugin_dirs": ["plugin"]}, "without": {"plugin_dirs": []}}
    (state / "adapter.yaml").write_text(json.dumps(ad))   # JSON is YAML
    (state / "profile.yaml").write_text('{"capability_matrix": {}}')
    for i in range(3):
        doc = {**case(f"c-l{i}", "task fix calc", expect=FIX_EXPECT, split=("smoke", "full")),
               "review": {"status": "accepted", "by": "t", "at": "2026-12-04"}, "origin": "synthetic"}
        (state / "datasets" / f"c-l{i}.yaml").write_text(json.dumps(doc))
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json")
    assert r.rc == 0, r.stdout + r.stderr
    env = {"ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"), "FAKE_SECRET": SECRET}
    outs = {}
    for arm in ("without", "with-skill"):
        run_id = f"smoke-20261204T2320{'00' if arm == 'without' else '01'}Z"
        plan_path = state / "work" / f"{arm}.json"
        r = run_script("make_plan", state / "work" / "converted.json", "--mode", "smoke", "--state-dir", state,
                       "--arm", arm, "--run-id", run_id, "-o", plan_path, "--max-attempts", "1")
        assert r.rc == 0, r.stdout + r.stderr
        assert "measures nothing" not in r.stderr   # two arms that differ: nothing to say
        assert json.loads(plan_path.read_text())["manifest_extra"]["arm"]["name"] == arm
        outs[arm] = state / "reports" / run_id
        r = run_script("run_cases", "--plan", plan_path, "--out", outs[arm], "--progress", "never", env=env)
        assert r.rc == 0, r.stdout + r.stderr
    r = run_script("compare_runs", outs["without"], outs["with-skill"])
    lift = r.json["lift"]
    assert lift["reading"] == "lift of arm with-skill over arm without"
    assert lift["pass_rate"] == {"base": 0.0, "candidate": 1.0, "lift": 1.0, "cases": 3}
    assert lift["trigger_accuracy"]["base"]["accuracy"] == 0.0 and lift["trigger_accuracy"]["candidate"]["accuracy"] == 1.0
    assert lift["stats"]["fixed_by_candidate"] == 3 and "mde_sentence" in lift["stats"]
    assert lift["cases"][0] == {"case_id": "c-l0", "without": "fail", "with-skill": "pass"}
    bad = run_script("make_plan", state / "work" / "converted.json", "--mode", "smoke", "--state-dir", state,
                     "--arm", "with-skil")
    assert bad.rc == 2 and "did you mean 'with-skill'" in bad.stdout
    # the docs' MCP example read literally: the base block already gives the server, so `without: {}` is
    # the same agent as `with-server` (a trial's lift of 0 that measured nothing): said at planning
    ad["invocation"]["agent"]["plugin_dirs"] = ["plugin"]
    ad["arms"] = {"with-skill": {"plugin_dirs": ["plugin"]}, "without": {}}
    (state / "adapter.yaml").write_text(json.dumps(ad))
    assert run_script("convert_suite", state, "-o", state / "work" / "converted.json").rc == 0
    same = run_script("make_plan", state / "work" / "converted.json", "--mode", "smoke", "--state-dir", state,
                      "--arm", "without", "-o", state / "work" / "same.json")
    assert same.rc == 0 and "--arm without runs the agent exactly as arm(s) with-skill do" in same.stderr, same.stderr


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed (apt-get install "
                    "bubblewrap; .ci/run installs it)")
def test_under_bwrap_a_write_outside_the_workdir_fails_and_the_case_says_why(tmp_path):
    state = setup_state(tmp_path)
    target = tmp_path / "outside.txt"
    cases = [case("s-escape", "escape now", expect={"answer": {"must_contain": ["wrote outside"]}}),
             case("s-inside", "fix it", expect=FIX_EXPECT)]
    r, out = run(state, cases, tmp_path, run_id="smoke-20261204T233000Z",
                 adapter=agent_adapter(state.parent, sandbox="bwrap"), extra_env={"ESCAPE_TARGET": str(target)})
    assert r.rc == 0, r.stdout + r.stderr
    v = verdict(out, "s-escape")
    assert v["verdict"] == "fail" and not target.exists()
    answer = (cases_view(out) / "s-escape" / "answer.txt").read_text()
    assert "Read-only file system" in answer
    assert verdict(out, "s-inside")["verdict"] == "pass"     # the workdir itself is writable
    r, out = run(state, cases[:1], tmp_path, run_id="smoke-20261204T233100Z", extra_env={"ESCAPE_TARGET": str(target)})
    assert verdict(out, "s-escape")["verdict"] == "pass" and target.exists()   # unsandboxed: it can


def test_the_run_dir_verifies_and_the_gate_names_the_failing_layers(main_run):
    _, out, _, _ = main_run
    v = run_script("run_cases", "--verify", out)
    assert v.rc == 0, v.stdout + v.stderr
    g = run_script("gate", out)
    text = g.stdout + g.stderr
    assert g.rc == 1 and "--verify" not in text, text
    assert "a-wrong (skills, files, check)" in text or "a-wrong" in text, text


def test_a_plugin_dir_that_defines_no_skill_is_named_not_a_vacuous_skill_check(tmp_path):
    """plugin_dirs one level too high (the app repo, not its plugin): no skill was known, so skill names
    went unchecked and `must_not_trigger: [a typo]` passed whatever the agent did. The linter and the
    pre-flight name the dir, the dir below it that defines skills, and the key to fix."""
    state = setup_state(tmp_path)
    ad = agent_adapter(state.parent, plugin_dirs=["."])
    (state / "work" / "adapter.json").write_text(json.dumps(ad))
    typo = case("p-1", "fix", expect={"skills": {"must_not_trigger": ["fix-testz"]},
                                      "answer": {"must_contain": ["x"]}})
    (state / "work" / "cases.json").write_text(json.dumps([typo]))
    r = run_script("validate_cases", "--cases", state / "work" / "cases.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    assert r.rc == 1, r.stdout + r.stderr
    (msg,) = [f["message"] for f in r.json["findings"] if f["code"] == "plugin_dir_defines_no_skill"]
    assert "'fix-testz'" in msg and "defines no skill" in msg and "invocation.agent.plugin_dirs" in msg, msg
    assert str(state.parent / "plugin") + " defines skills" in msg, msg
    r, _ = run(state, [typo], tmp_path, run_id="smoke-20261204T232000Z", adapter=ad)
    assert r.rc == 3 and "defines no skill" in r.stdout and "p-1" in r.stdout, r.stdout
