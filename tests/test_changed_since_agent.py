"""An agent case's `case_sha256` covers the repo it starts from (runner contract §20.2): the fixture's
path (its `input.fixture`, else `invocation.agent.workdir`) and its files. Before, only the case
YAML was hashed: a fixture whose files were edited (a bug planted differently, its check script
changed) left the case "the same", so `make_plan.py --changed-since RUN` replayed its old answer
(PASS [REPLAYED], the gate open) while the case fails live, and `compare_runs.py` read the flip as
the agent's (newly_failing). Each script runs as a subprocess, as a user's CI runs them."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from agent_state import EDIT_CASE, EXPLAIN_CASE, CASES, agent_env, build_agent_state
from helpers import run_script

pytestmark = pytest.mark.slow   # three runs of a 2-case scripted agent suite


def test_an_edited_agent_fixture_is_a_changed_case_for_changed_since_and_compare(tmp_path):
    root = tmp_path / "app"
    state = build_agent_state(root, {EDIT_CASE: CASES[EDIT_CASE], EXPLAIN_CASE: CASES[EXPLAIN_CASE]})
    # the edit case runs in its own fixture; the explain case in the adapter's workdir (fixtures/repo)
    shutil.copytree(root / "fixtures" / "repo", root / "fixtures" / "own")
    case_file = state / "datasets" / f"{EDIT_CASE}.yaml"
    case_file.write_text(case_file.read_text(encoding="utf-8").replace(
        'input: {"messages"', 'input: {"fixture": "fixtures/own", "messages"'), encoding="utf-8")
    env = agent_env(dict(os.environ), broken=False)
    env["ASSAY_SCRATCH_DIR"] = str(tmp_path / "scratch")
    conv, reports = state / "work" / "converted.json", state / "reports"

    def plan(run_id, *flags):
        r = run_script("convert_suite", state, "-o", conv)
        assert r.rc == 0, (r.stdout, r.stderr)
        r = run_script("make_plan", conv, "--state-dir", state, "--mode", "smoke", "--run-id", run_id,
                       "-o", state / "work" / f"{run_id}.json", *flags)
        assert r.rc == 0, (r.stdout, r.stderr)
        return json.loads((state / "work" / f"{run_id}.json").read_text(encoding="utf-8"))

    def run(run_id, *flags):
        r = run_script("run_cases", "--plan", state / "work" / f"{run_id}.json", "--out", reports / run_id,
                       "--progress", "never", *flags, env=env)
        assert r.rc in (0, 1), (r.stdout, r.stderr)
        return {json.loads(line)["case_id"]: json.loads(line)["verdict"]["verdict"]
                for line in (reports / run_id / "cases.jsonl").read_text(encoding="utf-8").splitlines()}

    main = "smoke-20261211T100000Z"
    plan(main)
    assert run(main, "--record")[EDIT_CASE] == "pass"
    # the pull request: the edit case's fixture now holds another bug, which the agent's fix does not mend
    calc = root / "fixtures" / "own" / "calc.py"
    before = calc.read_text(encoding="utf-8")
    calc.write_text("def add(a, b):\n    return a / b\n", encoding="utf-8")
    pr = "smoke-20261211T110000Z"
    assert plan(pr, "--changed-since", reports / main)["replay"]["live"] == [EDIT_CASE]
    assert run(pr, "--replay", reports / main)[EDIT_CASE] == "fail"     # run live, never the old PASS
    gate = run_script("gate", reports / pr)
    assert gate.rc == 1 and "except 1 case(s) changed since it, sent live" in gate.stdout, gate.stdout
    out = tmp_path / "compare.json"
    r = run_script("compare_runs", reports / main, reports / pr, "-o", out)
    assert r.rc == 0, (r.stdout, r.stderr)
    buckets = {p["case_id"]: name for name, pairs in json.loads(out.read_text())["buckets"].items() for p in pairs}
    assert buckets[EDIT_CASE] == "expectation_changed", buckets   # the edit's, not the agent's regression

    # the same files again (a fresh write: other times, same content): the case is as it was recorded
    calc.write_text(before, encoding="utf-8")
    # the adapter's workdir pointed at another repo: the case that starts there changed, the case
    # with its own fixture did not
    shutil.copytree(root / "fixtures" / "repo", root / "fixtures" / "other")
    (root / "fixtures" / "other" / "README.md").write_text("another repo\n", encoding="utf-8")
    adapter = state / "adapter.yaml"
    adapter.write_text(adapter.read_text(encoding="utf-8").replace('"workdir": "fixtures/repo"',
                                                                   '"workdir": "fixtures/other"'), encoding="utf-8")
    assert plan("smoke-20261211T120000Z", "--changed-since", reports / main)["replay"]["live"] == [EXPLAIN_CASE]


def test_a_non_agent_cases_hash_is_the_one_runs_already_recorded():
    """Only an agent case's hash takes its fixture: an http, cli or function case's case_sha256 is
    byte for byte the one recorded by runs made before (compare and --changed-since against them
    read those cases as unchanged)."""
    from test_compare_units import plan
    from assay.suite.version import suite_version
    http = suite_version(plan())
    assert http["cases"] == {"c-1": "884208664468f20c49037f6803400b00434d0a8e401d00b235c9d2f3daf3f930",
                             "c-2": "355a8d9710383afd90aaf2c6940dbede4accca8bbccdb17e492baf11fa3c7731"}
    assert http["suite_sha256"] == "7946fbcdc3e5d421f6cf4962b13a57628817b6b3ba8a496448421d9d17c23bd6"
    cli = plan(**{"adapter.invocation": {"mode": "cli", "command": ["python3", "app.py", "{input}"], "stdin": "none"}})
    assert suite_version(cli)["cases"] == {"c-1": "c4f87ea565c3d65d99291e325e1b9b7f83b0c4df42007d761c56bace7ab8c775",
                                           "c-2": "50ec98b382bd01d01b6ebac13ec14e21d667d34b5098cab82de97585b1efb1d9"}
    fn = plan(**{"adapter.invocation": {"mode": "function", "entrypoint": "app:handle"}})
    assert suite_version(fn)["cases"] == {"c-1": "b11be884e8e230b3657646e77e16687f2e07b465f080afadfc13d78269188738",
                                          "c-2": "4021be5de2a641e37b6b67b8aee9c8ee31b987e792e06d69746a743a4deedcb0"}


def test_an_agent_cases_hash_takes_its_fixture_and_not_the_app_under_test(tmp_path):
    """The fixture's path and files decide an agent case's hash; its files' times do not, nor the
    keys of invocation.agent that are the app under test (plugins, MCP config, env, permissions):
    the arms of a lift are two runs of one suite."""
    from test_compare_units import plan
    from assay.suite.version import suite_version
    app = tmp_path / "app"
    for name in ("repo", "own"):
        (app / "fixtures" / name).mkdir(parents=True)
        (app / "fixtures" / name / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (app / ".assay").mkdir()

    def hashes(**agent):
        doc = plan(**{"adapter.invocation": {"mode": "agent", "agent": {"kind": "claude-code",
                                                                        "workdir": "fixtures/repo", **agent}}})
        doc["paths"] = {"state_dir": str(app / ".assay")}
        doc["cases"][1]["input"]["fixture"] = "fixtures/own"
        return suite_version(doc)["cases"]

    base = hashes()
    for same in ({"plugin_dirs": ["plugin"]}, {"env": {"ANTHROPIC_MODEL": "other"}}, {"mcp_config": "mcp.json"},
                 {"permission_mode": "acceptEdits", "allowed_tools": ["Read"], "max_turns": 3}):
        assert hashes(**same) == base, same
    (app / "fixtures" / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    os.utime(app / "fixtures" / "repo" / "calc.py", (1, 1))
    assert hashes() == base                         # only the times changed
    (app / "fixtures" / "repo" / "check.py").write_text("import sys\nsys.exit(1)\n", encoding="utf-8")
    edited = hashes()
    assert edited["c-1"] != base["c-1"] and edited["c-2"] == base["c-2"]   # c-2 starts from its own fixture
    os.chmod(app / "fixtures" / "repo" / "check.py", 0o755)
    assert hashes()["c-1"] != edited["c-1"]         # an executable bit is part of what the check runs
    moved = hashes(workdir="fixtures/own")
    assert moved["c-1"] != edited["c-1"] and moved["c-2"] == base["c-2"]


def test_a_merged_agent_run_keeps_the_case_hashes_its_shards_took(tmp_path):
    """merge_runs.py may run where the fixtures are not (a pod's shards merged from object storage):
    an agent case's hash is the one the shard that ran it took, never one of a missing fixture."""
    from types import SimpleNamespace

    from test_compare_units import plan
    from assay.shard.manifest import merged_manifest
    doc = plan(**{"adapter.invocation": {"mode": "agent", "agent": {"kind": "claude-code", "workdir": "fixtures/repo"}}})
    doc["paths"] = {"state_dir": str(tmp_path / "gone" / ".assay")}
    shards = [SimpleNamespace(index=i, path=tmp_path / f"shard-{i + 1}-of-2", manifest={
        "run_id": "r", "started_at": f"2026-12-11T10:0{i}:00Z", "shard": {"index": i + 1, "count": 2},
        "cases": [{"id": cid, "set": "main", "sha256": "x", "case_sha256": sha}]})
        for i, (cid, sha) in enumerate((("c-1", "a" * 64), ("c-2", "b" * 64)))]
    merged = merged_manifest(doc, shards, None)
    assert {row["id"]: row["case_sha256"] for row in merged["cases"]} == {"c-1": "a" * 64, "c-2": "b" * 64}


def test_a_runs_case_hashes_and_its_agent_requests_read_each_fixture_once(tmp_path, monkeypatch):
    """An agent request names its fixture's digest (replay keys it, rescore compares it: §22) and the
    manifest's case hashes take the same digest: one FixtureDigests is shared, each distinct fixture
    (two spellings of one included) read once, however many cases start from it."""
    from test_compare_units import plan
    from assay.invoke import fixture_digest
    from assay.suite.version import suite_version
    app = tmp_path / "app"
    (app / "fixtures" / "repo").mkdir(parents=True)
    (app / "fixtures" / "repo" / "calc.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (app / ".assay").mkdir()
    reads = []
    real = fixture_digest.fixture_sha256
    monkeypatch.setattr(fixture_digest, "fixture_sha256", lambda p: reads.append(p) or real(p))
    doc = plan(**{"adapter.invocation": {"mode": "agent", "agent": {"kind": "claude-code", "workdir": "fixtures/repo"}}})
    doc["paths"] = {"state_dir": str(app / ".assay")}
    doc["cases"][1]["input"]["fixture"] = "./fixtures/../fixtures/repo"
    memo = fixture_digest.FixtureDigests()
    hashes = suite_version(doc, digests=memo)["cases"]
    assert memo(app / "fixtures" / "repo") == real(app / "fixtures" / "repo")
    assert len(reads) == 1 and hashes == suite_version(doc)["cases"], reads
