"""Agent cases replayed and rescored reach the live run's verdicts (runner contract §5.4): a live
k=2 run of a scripted agent (tests/scripted_agent.py through the adapter's `command:` override; its
planted regressions on: a skill not triggered, a wrong edit the check catches) recorded, then
`run_cases.py --replay` of that run and `rescore.py` of it, the agent never started again; every
case, repeat and layer (verdict and reason) the same, from the stored transcript and workdir.json.
An expectation edited since the recording asks what was not measured: unscored, naming it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent_state import EDIT_CASE, EXPLAIN_CASE, SKILL_CASE, agent_env, build_agent_state, live_replayed_rescored
from fakeapp import make_plan
from helpers import run_script

pytestmark = pytest.mark.slow   # four run_cases.py / rescore.py processes of a 3-case agent suite
LIVE, REPLAYED, RESCORED, EDITED = ("regression-20261205T10000%dZ" % i for i in range(4))


def _records(run_dir: Path) -> dict[str, dict]:
    out = {}
    for line in (run_dir / "cases.jsonl").read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        out[doc["case_id"]] = doc
    return out


def _decisions(run_dir: Path) -> dict[str, tuple]:
    """Per case: its verdict, each repeat's and each scored layer's verdict and reason."""
    return {cid: (doc["verdict"]["verdict"], [r["verdict"] for r in doc["verdict"]["repeats"]],
                  {name: (layer["verdict"], layer.get("reason")) for name, layer in doc["verdict"]["layers"].items()})
            for cid, doc in _records(run_dir).items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    from assay.suite.convert import convert_state_dir
    root = tmp_path_factory.mktemp("agent-replay")
    state = build_agent_state(root)
    converted = convert_state_dir(state)
    plan = make_plan(state, converted["cases"], run_id=LIVE, mode="regression", selecting_split="full", k=2,
                     adapter_doc=converted["adapter"], execution={"max_attempts": 1, "backoff_s": []})
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    reports = state / "reports"
    env = agent_env(dict(os.environ), broken=True)
    env["ASSAY_SCRATCH_DIR"] = str(tmp_path_factory.mktemp("agent-replay-scratch"))
    # neither the replay nor the rescore starts the agent: it would make its workdir under this (empty) area
    quiet = tmp_path_factory.mktemp("agent-replay-no-agent")
    live_replayed_rescored(state, plan, reports, env, quiet, (LIVE, REPLAYED, RESCORED))
    # the wrong edit's case now also asks for a text and a path nobody measured
    case_file = state / "datasets" / f"{EDIT_CASE}.yaml"
    text = case_file.read_text(encoding="utf-8")
    case_file.write_text(text.replace('"contains": {"calc.py": ["return a + b"]}',
                                      '"contains": {"calc.py": ["return a + b", "def add"]}'), encoding="utf-8")
    r = run_script("rescore", reports / LIVE, "--out", reports / EDITED, env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    assert not list(quiet.rglob("cases")), "the agent was started: " + str(list(quiet.rglob("*"))[:5])
    return {name: reports / name for name in (LIVE, REPLAYED, RESCORED, EDITED)}


def test_replayed_and_rescored_agent_cases_reach_the_live_verdicts(runs):
    live = _decisions(runs[LIVE])
    # the live run is what it should be: the plants caught, the control passing
    assert live[SKILL_CASE][0] == "fail" and live[SKILL_CASE][2]["skills"][0] == "fail"
    assert live[EDIT_CASE][0] == "fail" and live[EDIT_CASE][2]["files"][0] == "fail"
    assert live[EDIT_CASE][2]["check"][0] == "fail"
    assert live[EDIT_CASE][2]["check"][1].endswith(" check_calc.py` exited 1 (expected 0)"), live[EDIT_CASE]
    assert live[EXPLAIN_CASE][0] == "pass" and live[EXPLAIN_CASE][2]["files"][0] == "pass"
    assert _decisions(runs[REPLAYED]) == live
    assert _decisions(runs[RESCORED]) == live
    for name in (REPLAYED, RESCORED):   # each repeat's workdir kept, and the runs are whole
        records = _records(runs[name])
        assert all(f"repeats/{n}/workdir.json" in doc["files"] for doc in records.values() for n in (1, 2))
        r = run_script("run_cases", "--verify", runs[name])
        assert r.rc == 0 and r.json["complete"], r.stdout


def test_an_expectation_edited_since_is_unscored_naming_what_was_not_measured(runs):
    edited = _decisions(runs[EDITED])
    verdict, _, layers = edited[EDIT_CASE]
    assert layers["files"][0] == "unscored" and "'def add'" in layers["files"][1], layers["files"]
    assert "run the case live" in layers["files"][1]
    assert layers["check"][0] == "fail"     # the check did not change: decided from its recorded exit code
    assert verdict == "fail"
    assert edited[SKILL_CASE] == _decisions(runs[LIVE])[SKILL_CASE]


def _edit_only_app(tmp_path_factory, name: str, agent_env_block: dict | None = None):
    """One case (the edit the check verifies) of the scripted agent, a second fixture `fixtures/divide`
    where that edit does not apply, and `run(run_id, fixture, *flags, env=...)`: a run of the case (its
    `input.fixture` set when given) returning its verdict record."""
    import shutil
    from assay.suite.convert import convert_state_dir
    root = tmp_path_factory.mktemp(name)
    state = build_agent_state(root, {EDIT_CASE: ("fix add() so that check_calc.py passes", {
        "files": {"contains": {"calc.py": ["return a + b"]}}, "check": {"command": [sys.executable, "check_calc.py"]}})})
    if agent_env_block:
        doc = json.loads((state / "adapter.yaml").read_text(encoding="utf-8"))
        doc["invocation"]["agent"]["env"].update(agent_env_block)
        (state / "adapter.yaml").write_text(json.dumps(doc, indent=1), encoding="utf-8")
    shutil.copytree(root / "fixtures" / "repo", root / "fixtures" / "divide")
    (root / "fixtures" / "divide" / "calc.py").write_text("def add(a, b):\n    return a / b\n", encoding="utf-8")
    base_env = agent_env(dict(os.environ), broken=False)
    base_env["ASSAY_SCRATCH_DIR"] = str(tmp_path_factory.mktemp(name + "-scratch"))

    def run(run_id, fixture, *flags, env=None):
        converted = convert_state_dir(state)
        cases = [dict(c, input=dict(c["input"], fixture=fixture)) if fixture else c for c in converted["cases"]]
        plan = make_plan(state, cases, run_id=run_id, adapter_doc=converted["adapter"],
                         execution={"max_attempts": 1, "backoff_s": []})
        path = state / "work" / f"plan-{run_id}.json"
        path.write_text(json.dumps(plan), encoding="utf-8")
        r = run_script("run_cases", "--plan", path, "--out", state / "reports" / run_id, "--progress", "never",
                       *flags, env=dict(base_env, **(env or {})))
        assert r.rc == 0, (r.stdout, r.stderr)
        return _records(state / "reports" / run_id)[EDIT_CASE]["verdict"]
    return state, base_env, run


def test_a_case_pointed_at_another_fixture_is_a_replay_miss_never_the_old_fixtures_answer(tmp_path_factory):
    """The recorded request of an agent attempt is its argv: a case whose `input.fixture` was edited to
    another repo (where the agent's fix does not apply) keyed alike and replayed the old fixture's
    PASS; a live run fails it. The fixture, relative to the app repo, is now part of the key."""
    _, _, run = _edit_only_app(tmp_path_factory, "agent-fixture")
    assert run("smoke-20261206T100000Z", None, "--record")["verdict"] == "pass"
    assert run("smoke-20261206T100100Z", "fixtures/divide")["verdict"] == "fail"
    replayed = run("smoke-20261206T100200Z", "fixtures/divide", "--replay")
    assert replayed["verdict"] == "infra_error", replayed
    assert replayed["infra_reason"] == (f"replay miss: case {EDIT_CASE}: request 1 differs from the recording at "
                                        'fixture: recorded "fixtures/repo", now "fixtures/divide"'), replayed
    assert run("smoke-20261206T100300Z", "fixtures/repo", "--replay")["verdict"] == "pass"   # the same fixture


def test_a_rescore_of_a_case_pointed_at_another_fixture_since_is_a_miss(tmp_path_factory):
    """rescore.py compares the request it would send now with the stored request.json, which named no
    fixture: a case whose `input.fixture` was edited since (to a repo where the agent's fix does not
    apply) had the old fixture's workdir.json re-scored as this fixture's, PASS. Now request.json names
    the fixture (relative to the app repo) and the edited case is a replay miss naming it."""
    state, env, run = _edit_only_app(tmp_path_factory, "agent-fixture-rescore")
    reports = state / "reports"
    assert run("smoke-20261206T110000Z", None)["verdict"] == "pass"
    case_file = state / "datasets" / f"{EDIT_CASE}.yaml"
    text = case_file.read_text(encoding="utf-8")
    case_file.write_text(text.replace('"input": {"messages"', '"input": {"fixture": "fixtures/divide", "messages"')
                         .replace('input: {"messages"', 'input: {"fixture": "fixtures/divide", "messages"'),
                         encoding="utf-8")
    assert "fixtures/divide" in case_file.read_text(encoding="utf-8")
    r = run_script("rescore", reports / "smoke-20261206T110000Z", "--out", reports / "smoke-20261206T110100Z", env=env)
    assert r.rc in (0, 1), (r.stdout, r.stderr)
    got = _records(reports / "smoke-20261206T110100Z")[EDIT_CASE]["verdict"]
    assert got["verdict"] == "infra_error", got
    assert got["infra_reason"] == (f"replay miss: case {EDIT_CASE}: request 1 differs from the source run "
                                   'smoke-20261206T110000Z\'s at fixture: recorded "fixtures/repo", now '
                                   '"fixtures/divide"; rescore re-scores stored answers only: run the case live '
                                   "(run_cases.py)"), got
    case_file.write_text(text, encoding="utf-8")   # the fixture it ran in: the stored answer is re-scored
    r = run_script("rescore", reports / "smoke-20261206T110000Z", "--out", reports / "smoke-20261206T110200Z", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    assert _records(reports / "smoke-20261206T110200Z")[EDIT_CASE]["verdict"]["verdict"] == "pass"
    # a run dir written before request.json named the fixture: which fixture its workdir is of is unknown
    journal = reports / "smoke-20261206T110000Z" / "cases.jsonl"
    doc = json.loads(journal.read_text(encoding="utf-8"))
    request = json.loads(doc["files"]["request.json"])
    assert request["fixture"] == "fixtures/repo", request
    doc["files"]["request.json"] = json.dumps({k: v for k, v in request.items() if k not in ("fixture", "agent_env")})
    journal.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    r = run_script("rescore", reports / "smoke-20261206T110000Z", "--out", reports / "smoke-20261206T110300Z", env=env)
    assert r.rc in (0, 1), (r.stdout, r.stderr)
    got = _records(reports / "smoke-20261206T110300Z")[EDIT_CASE]["verdict"]
    assert got["verdict"] == "infra_error" and "request.json names no fixture (a run dir written before" in \
        got["infra_reason"] and "run the case live" in got["infra_reason"], got


MODEL_A, MODEL_B = "agent-model-alpha-7731", "agent-model-beta-2208"


def test_another_value_of_an_agent_env_variable_is_a_replay_miss_never_the_old_models_answer(tmp_path_factory):
    """`invocation.agent.env: {ANTHROPIC_MODEL: ${AGENT_MODEL}}`: the recorded request held only the
    child's variable names, so AGENT_MODEL=other with --replay served the old model's answers as this
    run's (PASS [REPLAYED]), and a rescore re-scored them. Now the values of the `${NAME}`s the agent's
    env names are bound by digest (never the value on disk), as a header's are; the env block's literal
    values are in the recorded request as written; a credential-shaped entry is never bound."""
    state, env, run = _edit_only_app(tmp_path_factory, "agent-env-values",
                                     {"ANTHROPIC_MODEL": "${AGENT_MODEL}", "AGENT_EFFORT": "low"})
    reports = state / "reports"
    assert run("smoke-20261207T100000Z", None, "--record", env={"AGENT_MODEL": MODEL_A})["verdict"] == "pass"
    replayed = run("smoke-20261207T100100Z", None, "--replay", env={"AGENT_MODEL": MODEL_B})
    assert replayed["verdict"] == "infra_error", replayed
    assert replayed["infra_reason"].startswith(f"replay miss: case {EDIT_CASE}: request 1 differs from the "
                                               "recording at values.sha256: recorded "), replayed
    # the same value replays, with no credential exported (SCRIPTED_AGENT_TOKEN is never bound)
    assert run("smoke-20261207T100200Z", None, "--replay", env={"AGENT_MODEL": MODEL_A,
                                                                 "SCRIPTED_AGENT_TOKEN": ""})["verdict"] == "pass"
    r = run_script("rescore", reports / "smoke-20261207T100000Z", "--out", reports / "smoke-20261207T100300Z",
                   env=dict(env, AGENT_MODEL=MODEL_B))
    assert r.rc in (0, 1), (r.stdout, r.stderr)
    got = _records(reports / "smoke-20261207T100300Z")[EDIT_CASE]["verdict"]
    # the agent's allowlisted SCRIPTED_AGENT_BROKEN (agent_state) is bound too: one digest over both
    assert got["verdict"] == "infra_error" and ("the values of ${AGENT_MODEL}, SCRIPTED_AGENT_BROKEN "
                                                "(invocation.env_allowlist) differ (at least one) from the source "
                                                "run") in got["infra_reason"], got
    for path in (state / "cache").rglob("*.json"):   # a digest, never the value
        assert MODEL_A not in path.read_text(encoding="utf-8"), path
    # a literal value of the env block edited since is another request too
    adapter = state / "adapter.yaml"
    adapter.write_text(adapter.read_text(encoding="utf-8").replace('"low"', '"high"'), encoding="utf-8")
    replayed = run("smoke-20261207T100400Z", None, "--replay", env={"AGENT_MODEL": MODEL_A})
    assert replayed["infra_reason"] == (f"replay miss: case {EDIT_CASE}: request 1 differs from the recording at "
                                        'agent_env.AGENT_EFFORT: recorded "low", now "high"'), replayed


def test_a_full_agent_replay_needs_no_claude_sandbox_check_or_mcp_program_but_a_live_case_does(tmp_path):
    """The CI replay of an agent app stopped at pre-flight (exit 3) on a machine without the `claude`
    CLI, bubblewrap, the check's program or the MCP server's program, though every case is answered
    from the recording and none of them is run. A full replay now looks none of them up (the adapter's
    paths, the MCP config's shape, the fixtures and skills are still checked, and the verdicts are the
    recording's); a --changed-since plan whose changed case goes live still needs the CLI (exit 3).
    The CI checkout is at another path: the recorded argv named the plugin dir and MCP config by their
    absolute paths, so every case was a replay miss there; they are recorded as the adapter writes them."""
    import shutil
    from fakeapp import case
    from test_agent_mode import FIX_EXPECT, agent_adapter, setup_state
    state = setup_state(tmp_path / "dev")
    root, bin_dir = state.parent, state.parent / "bin"   # bin/claude: the stand-in CLI (tests/fakeclaude.py)
    for name, line in (("calc-check", f'exec "{sys.executable}" check_calc.py "$@"'), ("calc-mcp", "exit 0")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{line}\n")
        (bin_dir / name).chmod(0o755)
    (root / "mcp.json").write_text(json.dumps({"mcpServers": {"calc": {"command": "calc-mcp", "args": []}}}))
    sandbox = {"sandbox": "bwrap"} if shutil.which("bwrap") else {}
    doc = agent_adapter(root, mcp_config="mcp.json", **sandbox)
    doc["app"]["repo"] = ".."                   # the app repo: the state dir's parent, wherever it is checked out
    del doc["invocation"]["agent"]["program"]   # the default: `claude` on PATH
    cases = [case("a-fix", "fix the add function", expect=dict(FIX_EXPECT, check={"command": ["calc-check"]})),
             case("a-explain", "explain add", expect={"files": {"unchanged": ["*"]}})]
    bare = tmp_path / "bare-bin"   # the CI machine's PATH: none of those programs on it
    bare.mkdir()

    def go(state, run_id, *flags, path, cases=cases, **extra):
        plan = make_plan(state, cases, run_id=run_id, adapter_doc=doc, execution={"max_attempts": 1, "backoff_s": []},
                         **extra)
        (state / "work" / f"{run_id}.json").write_text(json.dumps(plan), encoding="utf-8")
        env = {"FAKE_SECRET": "agent-secret-value-90210", "ASSAY_SCRATCH_DIR": str(tmp_path / "scratch"),
               "PATH": path}
        return run_script("run_cases", "--plan", state / "work" / f"{run_id}.json", "--out",
                          state / "reports" / run_id, "--progress", "never", *flags, env=env)

    def layers(run_dir):
        return {cid: (doc["verdict"]["verdict"], {n: lay["verdict"] for n, lay in doc["verdict"]["layers"].items()})
                for cid, doc in _records(run_dir).items()}

    rec = go(state, "smoke-20261208T100000Z", "--record",
             path=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    assert rec.rc == 0, (rec.stdout, rec.stderr)
    live = layers(state / "reports" / "smoke-20261208T100000Z")
    assert live["a-fix"][0] == "pass" and [live["a-fix"][1][n] for n in ("skills", "files", "check")] == ["pass"] * 3
    shutil.copytree(tmp_path / "dev", tmp_path / "ci", symlinks=True)   # the CI job's checkout and cache
    shutil.rmtree(tmp_path / "ci" / "app" / "bin")
    ci = tmp_path / "ci" / "app" / ".assay"
    rep = go(ci, "smoke-20261208T100100Z", "--replay", path=str(bare))
    assert rep.rc == 0, (rep.stdout, rep.stderr)
    out = ci / "reports" / "smoke-20261208T100100Z"
    assert layers(out) == live
    manifest = json.loads((out / "manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["health_check"]["skipped"] is True and manifest["invocation"]["agent"]["sandbox"] == \
        sandbox.get("sandbox")
    assert "--plugin-dir" in manifest["invocation"]["command"] and "plugin" in manifest["invocation"]["command"]
    # a --changed-since plan: a-explain changed, so it goes live and the CLI must be there
    block = {"changed_since": "smoke-20261208T100000Z", "source": str(ci / "reports" / "smoke-20261208T100000Z"),
             "live": ["a-explain"], "replayed": 1}
    edited = [cases[0], case("a-explain", "explain add now", expect=cases[1]["expect"])]
    r = go(ci, "smoke-20261208T100200Z", "--replay", path=str(bare), cases=edited, replay=block)
    assert r.rc == 3 and r.json["key"] == "invocation.agent.program", r.stdout
    assert "'claude' is not found on the child's PATH" in r.json["error"], r.stdout


def _assert_closed(run_dir: Path, banner: str) -> None:
    gate = run_script("gate", run_dir)
    assert gate.rc == 1 and banner in gate.stdout.splitlines()[0] and "FAIL" in gate.stdout, gate.stdout


def test_a_fixture_whose_files_were_edited_since_is_a_replay_and_rescore_miss(tmp_path_factory):
    """The case hash takes the fixture's files (--changed-since sends such a case live), but a bare
    `--replay` and `rescore.py` were keyed on the fixture's path alone: a bug planted in the fixture,
    or its check program edited, since the recording replayed the old PASS ([REPLAYED], the gate
    open) and rescore re-scored the old workdir, while a live run fails. An agent's request now
    names its fixture's content digest beside its path (`fixture_sha256`): a named miss."""
    state, env, run = _edit_only_app(tmp_path_factory, "agent-fixture-files")
    reports, repo = state / "reports", state.parent / "fixtures" / "repo"
    rec = "smoke-20261209T100000Z"
    assert run(rec, None, "--record")["verdict"] == "pass"
    recorded = json.loads(json.loads((reports / rec / "cases.jsonl").read_text(encoding="utf-8"))
                          ["files"]["request.json"])
    from assay.invoke.fixture_digest import fixture_sha256
    assert recorded["fixture"] == "fixtures/repo" and recorded["fixture_sha256"] == fixture_sha256(repo), recorded
    calc, check = repo / "calc.py", repo / "check_calc.py"
    originals = {calc: calc.read_text(encoding="utf-8"), check: check.read_text(encoding="utf-8")}
    edits = {calc: "def add(a, b):\n    return a / b\n",   # another bug, which the agent's fix does not mend
             check: originals[check] + "assert hasattr(calc, 'sub'), 'no sub()'\n"}   # the check asks more
    for n, (path, text) in enumerate(edits.items()):
        path.write_text(text, encoding="utf-8")
        stamp = f"smoke-20261209T1{n + 1}0%d00Z"
        assert run(stamp % 0, None)["verdict"] == "fail"   # live: the green path was real
        for n_run, flag in ((1, "--replay"), (2, f"--replay={reports / rec}")):
            got = run(stamp % n_run, None, flag)
            assert got["verdict"] == "infra_error", (path.name, flag, got)
            assert got["infra_reason"].startswith(f"replay miss: case {EDIT_CASE}: request 1 differs from the "
                                                  "recording at fixture_sha256: recorded "), got
            _assert_closed(reports / (stamp % n_run), "[REPLAYED")
        r = run_script("rescore", reports / rec, "--out", reports / (stamp % 3), env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        _assert_closed(reports / (stamp % 3), "[RESCORED")
        got = _records(reports / (stamp % 3))[EDIT_CASE]["verdict"]
        assert got["verdict"] == "infra_error", got
        assert got["infra_reason"].startswith(f"replay miss: case {EDIT_CASE}: request 1 differs from the source "
                                              f"run {rec}'s at fixture_sha256: recorded "), got
        assert "run the case live" in got["infra_reason"], got
        path.write_text(originals[path], encoding="utf-8")   # the same files again (other times): as recorded
    assert run("smoke-20261209T130000Z", None, "--replay")["verdict"] == "pass"
    r = run_script("rescore", reports / rec, "--out", reports / "smoke-20261209T130100Z", env=env)
    assert r.rc == 0 and _records(reports / "smoke-20261209T130100Z")[EDIT_CASE]["verdict"]["verdict"] == "pass"
    # a run dir written before request.json named the fixture's digest: its workdir may be of other files
    journal = reports / rec / "cases.jsonl"
    doc = json.loads(journal.read_text(encoding="utf-8"))
    doc["files"]["request.json"] = json.dumps({k: v for k, v in recorded.items() if k != "fixture_sha256"})
    journal.write_text(json.dumps(doc) + "\n", encoding="utf-8")
    r = run_script("rescore", reports / rec, "--out", reports / "smoke-20261209T130200Z", env=env)
    assert r.rc == 0, (r.stdout, r.stderr)
    got = _records(reports / "smoke-20261209T130200Z")[EDIT_CASE]["verdict"]
    assert got["verdict"] == "infra_error" and "request.json names no digest of the fixture's files" in \
        got["infra_reason"] and "run the case live" in got["infra_reason"], got


def test_an_edited_check_is_never_scored_from_the_old_checks_result(tmp_path_factory):
    """`expect.check` runs after the agent and only its result is recorded: a case whose check was
    edited since is not scored from the old check's result on replay or rescore. Another command (a
    stricter flag) was already unscored naming both commands; a `timeout_s` cut below the time the
    recorded check took (a live run stops it without an exit code: unscored) was scored from the old
    exit code, PASS. Now the check keeps its timeout and the cut one is unscored; each closes the gate
    as a check that never ran. (Its program inside the fixture edited: the fixture digest's miss.)"""
    state, env, run = _edit_only_app(tmp_path_factory, "agent-check-edited")
    reports = state / "reports"
    rec = "smoke-20261210T100000Z"
    assert run(rec, None, "--record")["verdict"] == "pass"
    kept = json.loads(json.loads((reports / rec / "cases.jsonl").read_text(encoding="utf-8"))["files"]["workdir.json"])
    assert kept["check"]["timeout_s"] == 300 and kept["check"]["duration_ms"] > 1, kept["check"]
    case_file = state / "datasets" / f"{EDIT_CASE}.yaml"
    original = case_file.read_text(encoding="utf-8")
    edits = {"'-x'": original.replace('"check_calc.py"]', '"check_calc.py", "-x"]'),
             "longer than its timeout_s now (0.001 s)": original.replace('"check_calc.py"]}', '"check_calc.py"], '
                                                                         '"timeout_s": 0.001}')}
    for n, (named, text) in enumerate(edits.items()):
        assert text != original
        case_file.write_text(text, encoding="utf-8")
        replayed, rescored = f"smoke-20261210T1{n + 1}0100Z", f"smoke-20261210T1{n + 1}0200Z"
        got_replayed = run(replayed, None, "--replay")
        r = run_script("rescore", reports / rec, "--out", reports / rescored, env=env)
        assert r.rc == 0, (r.stdout, r.stderr)
        for got in (got_replayed, _records(reports / rescored)[EDIT_CASE]["verdict"]):
            check = got["layers"]["check"]
            assert got["verdict"] != "pass" and check["verdict"] == "unscored", got
            assert named in check["reason"] and "run the case live" in check["reason"], check
        _assert_closed(reports / replayed, "[REPLAYED")
        _assert_closed(reports / rescored, "[RESCORED")
    case_file.write_text(original.replace('"check_calc.py"]}', '"check_calc.py"], "timeout_s": 60}'), encoding="utf-8")
    assert run("smoke-20261210T130000Z", None, "--replay")["verdict"] == "pass"   # a timeout it finished within
