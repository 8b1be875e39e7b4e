"""Agent mode under a newcomer's mistakes and an agent's accidents, driven as the user meets them
(tests/scripted_agent.py through the adapter's `command:` override, run_cases.py and gate.py as
subprocesses, each test its own state dir and scratch area)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from agent_state import agent_env, build_agent_state
from fakeapp import make_plan
from helpers import run_script
from rundir_util import cases_view


def _run(root: Path, cases: dict, run_id: str, *, env_extra: dict | None = None, allow: tuple = (),
         fixture_files: dict | None = None, edit_app=None) -> tuple:
    from assay.suite.convert import convert_state_dir
    state = build_agent_state(root / "app", cases)
    if edit_app is not None:
        edit_app(root / "app")
    for rel, text in (fixture_files or {}).items():    # beside the fixture's own files
        (root / "app" / "fixtures" / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "app" / "fixtures" / "repo" / rel).write_text(text, encoding="utf-8")
    converted = convert_state_dir(state)
    adapter = converted["adapter"]
    adapter["invocation"]["max_concurrency"] = 1      # the plan's order: the later case copies what the first left
    adapter["invocation"]["env_allowlist"] += list(allow)
    plan = make_plan(state, converted["cases"], run_id=run_id, adapter_doc=adapter,
                     execution={"max_attempts": 1, "backoff_s": []})
    (state / "work" / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    env = {**agent_env(dict(os.environ), broken=False), "ASSAY_SCRATCH_DIR": str(root / "scratch"),
           **(env_extra or {})}
    out = state / "reports" / run_id
    r = run_script("run_cases", "--plan", state / "work" / "plan.json", "--out", out, "--progress", "never", env=env)
    return state, out, r


def _verdict(out: Path, cid: str) -> dict:
    return json.loads((cases_view(out) / cid / "verdict.json").read_text(encoding="utf-8"))


def test_an_agent_that_writes_into_its_fixture_is_never_a_pass(tmp_path):
    """The workdir's diff compares with the fixture as it is now: an agent (unsandboxed) that wrote
    the same change into the fixture and its copy passed `unchanged: [README.md]`, and the next
    case started from the changed fixture and passed on what the first agent did."""
    fixture = tmp_path / "app" / "fixtures" / "repo"
    cases = {"c-a-tamper": ("tamper with the repo and fix add()", {
                 "files": {"contains": {"calc.py": ["return a + b"]}, "unchanged": ["README.md"]}}),
             "c-b-later": ("explain what add() does", {
                 "files": {"contains": {"README.md": ["rewritten"]}, "unchanged": ["*"]}})}
    _, out, r = _run(tmp_path, cases, "smoke-20261205T120000Z", env_extra={"SCRIPTED_AGENT_FIXTURE": str(fixture)},
                     allow=("SCRIPTED_AGENT_FIXTURE",))
    assert r.rc == 0, (r.stdout, r.stderr)
    assert "rewritten" in (fixture / "README.md").read_text()          # the agent did write into the fixture
    for cid in cases:
        v = _verdict(out, cid)
        assert v["verdict"] == "infra_error", (cid, v["verdict"], v.get("layers", {}).get("files"))
        assert "changed during the run (README.md)" in v["infra_reason"], v["infra_reason"]
        assert "sandbox: bwrap" in v["infra_reason"]
    g = run_script("gate", out)
    assert g.rc == 1 and "changed during the run" in g.stdout + g.stderr, g.stdout + g.stderr


def test_the_same_agent_in_a_fixture_left_alone_passes(tmp_path):
    """The control: the fixture stamp does not flag a run in which nothing wrote into the fixture."""
    cases = {"c-fix": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"]},
                                               "unchanged": ["README.md"]},
                                     "check": {"command": [sys.executable, "check_calc.py"]}})}
    _, out, r = _run(tmp_path, cases, "smoke-20261205T120100Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    assert _verdict(out, "c-fix")["verdict"] == "pass"


def test_a_misspelt_absent_path_is_named_before_anything_runs(tmp_path):
    """`absent: [READM.md]` for the README the agent must remove passed with README.md still there
    and nothing said: the linter now warns, naming the fixture path it is close to (a warning: a
    file the agent must not create may be named that close on purpose, so the run goes on); a path
    the agent must not leave (calc.py.bak) or create (build) is left alone."""
    cases = {"c-typo": ("explain what add() does", {"files": {"absent": ["READM.md"]}}),
             "c-fine": ("explain what add() does", {"files": {"absent": ["calc.py.bak", "build"]}})}
    state = build_agent_state(tmp_path / "app", cases)
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    found = [f for f in r.json["findings"] if f["code"] == "absent_near_fixture_path"]
    assert [(f["case_id"], f["severity"]) for f in found] == [("c-typo", "WARN")], r.json["findings"]
    assert "which has 'README.md'" in found[0]["message"] and found[0]["line"], found[0]
    assert not [f for f in r.json["findings"] if f["severity"] == "ERROR"], r.json["findings"]
    _, out, r = _run(tmp_path / "run", {"c-typo": cases["c-typo"]}, "smoke-20261205T120200Z")
    assert r.rc == 0, r.stdout + r.stderr   # a warning, not a refusal: the run goes on


def test_an_agent_that_removed_its_workdir_has_its_check_named_so(tmp_path):
    """The check then cannot start; its error said FileNotFoundError, as if the program were missing."""
    cases = {"c-nuke": ("nuke the repo", {"check": {"command": [sys.executable, "check_calc.py"]},
                                          "files": {"unchanged": ["README.md"]}})}
    _, out, r = _run(tmp_path, cases, "smoke-20261205T120300Z")
    assert r.rc == 7, (r.stdout, r.stderr)     # the check is a scorer that could not measure
    v = _verdict(out, "c-nuke")
    assert v["verdict"] == "unscored" and v["layers"]["files"]["verdict"] == "fail", v["layers"]
    assert "is gone after the agent (it removed it)" in v["layers"]["check"]["reason"], v["layers"]["check"]


def test_an_agent_whose_result_says_it_failed_is_never_a_pass(tmp_path):
    """A `command:` agent that made the right edit, then wrote a result event saying its session
    failed (is_error, error_during_execution) and exited 0 passed on its files and check: the exit
    code was the only sign read, and Claude Code exits 1 there. The http layer fails, naming the
    subtype; the gate closes on it. The same edit with a success result passes (the control)."""
    fix = {"files": {"contains": {"calc.py": ["return a + b"]}}, "check": {"command": [sys.executable, "check_calc.py"]}}
    cases = {"c-errored": ("errored while fixing add()", fix), "c-fixed": ("fix add()", fix)}
    _, out, r = _run(tmp_path, cases, "smoke-20261205T120400Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    v = _verdict(out, "c-errored")
    assert v["layers"]["files"]["verdict"] == "pass" and v["layers"]["check"]["verdict"] == "pass", v["layers"]
    assert v["verdict"] == "fail" and v["layers"]["http"]["verdict"] == "fail", v["layers"]["http"]
    assert "error_during_execution" in v["layers"]["http"]["reason"], v["layers"]["http"]
    assert _verdict(out, "c-fixed")["verdict"] == "pass"
    g = run_script("gate", out)
    assert g.rc == 1 and "c-errored (http)" in g.stdout, g.stdout + g.stderr
    assert run_script("run_cases", "--verify", out).rc == 0


def test_an_entry_the_untouched_fixture_passes_is_warned_of(tmp_path):
    """A newcomer's case passed an agent that did nothing (or deleted the tests) with no word: a
    `contains` text the fixture's file already holds, an `exists` path it already has, an `unchanged`
    glob that matches none of its files (the tests are check_calc.py, not tests/*). The linter warns
    of each at the case's line, naming what the fixture holds and the fix; never an ERROR (the agent
    may have to keep that text or file), and make_plan.py plans the suite, showing the warnings. What
    the agent must add (`return a + b`), a new path, and a glob that matches are left alone."""
    cases = {"c-hollow": ("explain what add() does", {"files": {
                 "contains": {"calc.py": ["def add", "return a + b"]}, "exists": ["README.md", "notes.md"],
                 "unchanged": ["tests/*", "check_*.py"]}}),
             "c-fine": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"]}, "exists": ["notes.md"],
                                                "unchanged": ["*.md"]}})}
    state = build_agent_state(tmp_path / "app", cases)
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    assert r.rc == 0, r.stdout + r.stderr
    codes = ("contains_already_in_fixture", "exists_already_in_fixture", "unchanged_glob_matches_nothing")
    found = {f["code"]: f for f in r.json["findings"] if f["code"] in codes}
    assert sorted(found) == sorted(codes), r.json["findings"]
    assert all(f["case_id"] == "c-hollow" and f["severity"] == "WARN" and f["line"] == 9 and
               f["source"] == "datasets/c-hollow.yaml" for f in found.values()), found
    contains = found["contains_already_in_fixture"]["message"]
    assert "calc.py: 'def add'" in contains and "return a + b" not in contains and "ADD or CHANGE" in contains
    exists = found["exists_already_in_fixture"]["message"]
    assert "'README.md'" in exists and "notes.md" not in exists, exists
    unchanged = found["unchanged_glob_matches_nothing"]["message"]
    assert "'tests/*' matches no file" in unchanged and "check_calc.py" in unchanged, unchanged
    assert "check_*.py" not in unchanged, unchanged
    assert sum(f["code"] in codes for f in r.json["findings"]) == 3, r.json["findings"]
    p = run_script("make_plan", state / "work" / "converted.json", "--state-dir", state, "--mode", "smoke",
                   "-o", state / "work" / "plan.json")
    assert p.rc == 0, p.stdout + p.stderr
    assert "datasets/c-hollow.yaml:9: c-hollow [contains_already_in_fixture]" in p.stderr, p.stderr


def test_a_forbidden_rule_sees_the_command_in_a_compound_bash_call(tmp_path):
    """`forbidden: ["Bash(rm -rf *)"]` passed an agent that ran `echo cleaning && rm -rf build` (the
    rule was matched against the whole command line, which starts with echo; Claude Code's own deny
    rule of that text denies the call), and `authz.forbidden_tools` of the same rule passed any call
    at all (it compared tool names only). Both fail now, naming the rule; the gate closes. The same
    rules over an agent that made only the edit pass (the control)."""
    rule = "Bash(rm -rf *)"
    expect = {"tools": {"forbidden": [rule]}, "authz": {"forbidden_tools": [rule]},
              "files": {"contains": {"calc.py": ["return a + b"]}}}
    cases = {"c-sweep": ("sweep the build dir and fix add()", expect), "c-fixed": ("fix add()", expect)}
    _, out, r = _run(tmp_path, cases, "smoke-20261205T120500Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    v = _verdict(out, "c-sweep")
    assert v["layers"]["files"]["verdict"] == "pass", v["layers"]["files"]
    traj, authz = v["layers"]["trajectory"], v["layers"]["authz"]
    assert traj["verdict"] == "fail" and traj["forbidden_violations"] == [{"tool": rule, "calls": 1}], traj
    assert authz["verdict"] == "fail" and rule in json.dumps(authz["checks"]), authz
    assert v["verdict"] == "fail"
    fixed = _verdict(out, "c-fixed")
    assert fixed["verdict"] == "pass", fixed["layers"]
    g = run_script("gate", out)
    assert g.rc == 1 and "c-sweep" in g.stdout, g.stdout + g.stderr


def test_an_unchanged_entry_with_a_trailing_slash_or_a_directory_sees_the_change(tmp_path):
    """`unchanged: ["README.md/"]` (or `./README.md`, or a directory, `notes` / `notes/`) matched no
    workdir path, so an agent that deleted README.md passed it, the linter silent. An entry naming a
    directory (a trailing slash, or a plain directory path) now covers every path under it, a
    leading `./` is the workdir's root, `.` the whole workdir, and `a//b` the path a/b."""
    edit = {"calc.py": ["return a * b"]}
    cases = {"c-slash": ("hostile: break add()", {"files": {"contains": edit, "unchanged": ["README.md/"]}}),
             "c-dot": ("hostile: break add()", {"files": {"contains": edit, "unchanged": ["./README.md"]}}),
             "c-dir": ("nuke the repo", {"files": {"unchanged": ["notes"]}}),
             "c-dir-slash": ("nuke the repo", {"files": {"unchanged": ["notes/"]}}),
             "c-root": ("nuke the repo", {"files": {"unchanged": ["."]}}),   # the whole workdir
             "c-double": ("nuke the repo", {"files": {"unchanged": ["notes//todo.md"]}})}
    _, out, r = _run(tmp_path, cases, "smoke-20261206T120000Z", fixture_files={"notes/todo.md": "- fix add\n"})
    assert r.rc == 0, (r.stdout, r.stderr)
    for cid, path in (("c-slash", "README.md"), ("c-dot", "README.md"), ("c-dir", "notes/todo.md"),
                      ("c-dir-slash", "notes/todo.md"), ("c-root", "notes/todo.md"), ("c-double", "notes/todo.md")):
        files = _verdict(out, cid)["layers"]["files"]
        assert files["verdict"] == "fail" and path in json.dumps(files), (cid, files)
        assert _verdict(out, cid)["verdict"] == "fail", cid
    g = run_script("gate", out)
    assert g.rc == 1 and "6 gating failure(s)" in g.stdout, g.stdout + g.stderr


def test_a_glob_in_an_exists_absent_or_contains_path_is_refused(tmp_path):
    """`absent: ["*.pyc"]` was looked for as a file named `*.pyc`, so it passed whatever the agent
    left (and `exists: ["*.bak"]` failed whatever it wrote), with no word from the linter. The linter
    now refuses each (glob_in_files_path, at the case's line, naming the fix), make_plan.py refuses
    the suite, and the run's pre-flight exits 3 naming the case."""
    cases = {"c-glob": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"], "*.md": ["calc"]},
                                                "exists": ["*.bak"], "absent": ["build/*.pyc"]}})}
    state = build_agent_state(tmp_path / "app", cases)
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    found = [f for f in r.json["findings"] if f["code"] == "glob_in_files_path"]
    assert sorted(f["key"] for f in found) == ["expect.files.absent", "expect.files.contains",
                                                "expect.files.exists"], r.json["findings"]
    assert all(f["severity"] == "ERROR" and f["case_id"] == "c-glob" and f["line"] for f in found), found
    absent = next(f["message"] for f in found if f["key"] == "expect.files.absent")
    assert "'build/*.pyc'" in absent and "expect.files.unchanged" in absent, absent
    p = run_script("make_plan", state / "work" / "converted.json", "--state-dir", state, "--mode", "smoke",
                   "-o", state / "work" / "plan.json")
    assert p.rc == 2 and "glob_in_files_path" in p.stdout + p.stderr, p.stdout + p.stderr
    _, out, r = _run(tmp_path / "run", {"c-absent": ("fix add()", {"files": {
        "contains": {"calc.py": ["return a + b"]}, "absent": ["*.pyc"]}})}, "smoke-20261206T120100Z")
    assert r.rc == 3 and r.json["case_id"] == "c-absent" and "'*.pyc' is a glob" in r.json["error"], r.stdout


def test_a_misspelt_check_or_permissions_key_is_named_at_its_line(tmp_path):
    """`permissions: {max_denies: 0}` and `check: {cmd: ...}` were refused as "must be {max_denied: ...}"
    at the file's first line, the misspelt key unnamed; each is now named, with the key it is close to
    and the case's line."""
    cases = {"c-keys": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"]}},
                                      "permissions": {"max_denies": 0}, "check": {"cmd": "python3 check_calc.py"}})}
    state = build_agent_state(tmp_path / "app", cases)
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities")
    named = {f.get("key"): f for f in r.json["findings"] if f["code"] == "bad_expect_shape" and f.get("key")}
    assert "did you mean 'max_denied'" in named["expect.permissions.max_denies"]["message"], r.json["findings"]
    assert "did you mean 'command'" in named["expect.check.cmd"]["message"], r.json["findings"]
    assert all(f["line"] == 9 and f["case_id"] == "c-keys" for f in named.values()), named


def test_a_skill_whose_frontmatter_name_is_not_its_dirs_is_matched_by_either(tmp_path):
    """skills/repair-tests/SKILL.md saying `name: fix-tests`: Claude Code lists the skill as
    `demo:repair-tests (demo:fix-tests)` and launches it by either name. The agent invoked it as
    `demo:fix-tests`; `must_not_trigger: [repair-tests]` passed (a green gate on the very skill it
    forbids) and `must_trigger: [fix-tests]` was refused before the run as a skill no plugin defines."""
    def rename(app: Path) -> None:
        skills = app / "plugin" / "skills"
        (skills / "fix-tests").rename(skills / "repair-tests")
    said = "skill: the add test fails; fix calc.py"
    fixed = {"contains": {"calc.py": ["return a + b"]}}
    cases = {"c-by-dir": (said, {"skills": {"must_trigger": ["repair-tests"]}, "files": fixed}),
             "c-by-name": (said, {"skills": {"must_trigger": ["fix-tests"]}, "files": fixed}),
             "c-not-dir": (said, {"skills": {"must_not_trigger": ["repair-tests"]}, "files": fixed})}
    _, out, r = _run(tmp_path, cases, "smoke-20261206T130000Z", edit_app=rename)
    assert r.rc == 0, r.stdout + r.stderr
    assert _verdict(out, "c-by-dir")["verdict"] == "pass", _verdict(out, "c-by-dir")["layers"]["skills"]
    assert _verdict(out, "c-by-name")["verdict"] == "pass", _verdict(out, "c-by-name")["layers"]["skills"]
    v = _verdict(out, "c-not-dir")
    assert v["verdict"] == "fail" and v["layers"]["skills"]["unwanted"] == ["repair-tests"], v["layers"]["skills"]
    traj = json.loads((cases_view(out) / "c-not-dir" / "trajectory.json").read_text())
    assert traj["skill_aliases"] == {"demo:fix-tests": ["demo:repair-tests", "fix-tests", "repair-tests"]}, traj
    g = run_script("gate", out)
    assert g.rc == 1 and "c-not-dir (skills)" in g.stdout + g.stderr, g.stdout + g.stderr
