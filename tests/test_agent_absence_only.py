"""An agent suite whose every check is an absence: a skill that must not trigger
(`expect.skills.must_not_trigger`), paths that must stay absent (`expect.files.absent`) or unchanged
(`expect.files.unchanged`), at most N denied calls (`expect.permissions.max_denied`). An agent that
does nothing at all (answers one sentence, calls no tool, edits nothing) passed every case and the
gate opened green: nothing in the suite was shown to work. Driven as the user meets it
(tests/scripted_agent.py through the adapter's `command:` override; run_cases.py and gate.py as
subprocesses)."""

from __future__ import annotations

import json
import sys

from helpers import run_script
from test_agent_mistakes import _run, _verdict

IDLE = "idle: have a look around"    # the scripted agent's unknown word: no tool call, no edit
ABSENT = {
    "c-no-skill": (IDLE, {"skills": {"must_not_trigger": ["fix-tests"]}}),
    "c-no-files": (IDLE, {"files": {"absent": ["calc.py.bak", "build"], "unchanged": ["*.md"]}}),
    "c-no-denial": (IDLE, {"permissions": {"max_denied": 0}, "files": {"unchanged": ["*"]}}),
}


def test_an_agent_suite_of_absences_against_an_agent_that_does_nothing_closes_the_gate(tmp_path):
    _, out, r = _run(tmp_path, ABSENT, "smoke-20261206T010000Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    for cid in ABSENT:
        assert _verdict(out, cid)["verdict"] == "pass", (cid, _verdict(out, cid)["layers"])
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["passes_on_presence"]["on_presence"] == 0, summary["passes_on_presence"]
    assert summary["passes_on_presence"]["absence_layers"] == ["skills", "files", "permissions"], summary
    g = run_script("gate", out)
    assert g.rc == 1, g.stdout + g.stderr
    (line,) = [x for x in g.stdout.splitlines() if x.startswith("  gate closed:") and "passed only on" in x]
    assert "all 3 passing case(s) passed only on" in line, line
    for words in ("expect.skills.must_not_trigger", "expect.files absent / unchanged", "expect.permissions.max_denied"):
        assert words in line, line
    assert "does nothing" in line, line
    j = run_script("gate", out, "--json")       # the same decision on every surface
    assert j.rc == 1 and any("passed only on" in x for x in j.json["reasons"])
    assert run_script("run_cases", "--verify", out).rc == 0


def test_one_agent_case_that_needs_the_work_done_is_evidence(tmp_path):
    """The control: an edit the fixture lacks (`contains`) and a check that fails on the fixture
    make the run evidence; a skill that must trigger does too."""
    cases = {**ABSENT, "c-fix": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"]}},
                                               "check": {"command": [sys.executable, "check_calc.py"]}})}
    _, out, r = _run(tmp_path, cases, "smoke-20261206T010100Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["passes_on_presence"]["on_presence"] == 1, summary["passes_on_presence"]
    g = run_script("gate", out)
    assert not any("passed only on" in x for x in g.stdout.splitlines()), g.stdout


def test_which_agent_layers_pass_on_presence():
    """score.hollow's one rule over the agent scorers' records (pure)."""
    from assay.score.agent import score_files, score_skills
    from assay.score.hollow import passed_on_presence
    untouched = {"added": [], "removed": [], "modified": []}
    wanted = score_skills({"skills": ["demo:fix-tests"]}, {"skills": {"must_trigger": ["fix-tests"]}})
    not_wanted = score_skills({"skills": []}, {"skills": {"must_not_trigger": ["fix-tests"]}})
    assert passed_on_presence({"skills": wanted}) and not passed_on_presence({"skills": not_wanted})

    def files(spec, facts, changes):
        return score_files({"files": facts, "diff": changes}, {"files": spec})
    idle = files({"absent": ["build"], "unchanged": ["*"], "contains": {"calc.py": ["def add"]}},
                 {"absent": {"build": False}, "unchanged": {"*": []},
                  "contains": {"calc.py": {"file": True, "missing": [], "found": ["def add"]}}}, untouched)
    assert idle["verdict"] == "pass" and idle["touched"] == [] and not passed_on_presence({"files": idle})
    removed = files({"absent": ["docs/"]}, {"absent": {"docs/": False}}, {**untouched, "removed": ["docs/a.md"]})
    edited = files({"contains": {"calc.py": ["return a + b"]}},
                   {"contains": {"calc.py": {"file": True, "missing": [], "found": ["return a + b"]}}},
                   {**untouched, "modified": ["calc.py"]})
    for layer in (removed, edited):
        assert layer["verdict"] == "pass" and passed_on_presence({"files": layer}), layer
    # a record from before `touched` was kept is decided as before (presence); permissions never are
    assert passed_on_presence({"files": {"verdict": "pass", "failures": []}})
    assert not passed_on_presence({"permissions": {"verdict": "pass", "denied": 0, "max_denied": 0}})


BYPASS = {"c-denials-only": ("fix add()", {"permissions": {"max_denied": 0}}),
          "c-denials-and-fix": ("fix add()", {"permissions": {"max_denied": 0},
                                              "files": {"contains": {"calc.py": ["return a + b"]}}})}


def test_max_denied_under_bypass_permissions_is_never_a_pass(tmp_path):
    """Under permission_mode bypassPermissions the agent is never asked, so no call is denied:
    `permissions: {max_denied: 0}` passed every case, and a case asserting only it passed an agent
    whatever it did. The layer reads `unscorable` naming the mode and the fix: a case asserting only
    it is hollow (unscored, never a pass), one with another check passes on that; the gate names it."""
    bypass = {cid: (said + " [bypass]", expect) for cid, (said, expect) in BYPASS.items()}
    _, out, r = _run(tmp_path, bypass, "smoke-20261206T010200Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    only, fix = _verdict(out, "c-denials-only"), _verdict(out, "c-denials-and-fix")
    for v in (only, fix):
        perms = v["layers"]["permissions"]
        assert perms["verdict"] == "unscorable" and "bypassPermissions" in perms["blocked_by"], perms
    assert only["verdict"] == "unscored", only
    assert fix["verdict"] == "pass", fix["layers"]
    g = run_script("gate", out)   # a hollow case is counted unscored, never a pass (the linter names it: below)
    assert "1 pass, 0 fail (0 gating), 1 unscored" in g.stdout, g.stdout
    assert "NOT scored this run: permissions (2 cases: permission_mode bypassPermissions" in g.stdout, g.stdout
    # the case asserting only max_denied measured nothing, yet no linter error refused it (a WARN): it
    # closes the gate naming the mode and the fix, the other case passing did not open it green
    assert g.rc == 1, g.stdout
    (line,) = [x for x in g.stdout.splitlines() if x.startswith("  gate closed:") and "never ran" in x]
    assert "1 gating case(s)" in line and "c-denials-only (permission_mode bypassPermissions" in line, line
    assert "c-denials-and-fix" not in line and "drop max_denied" in line, line
    assert run_script("run_cases", "--verify", out).rc == 0


def test_max_denied_in_a_mode_that_asks_is_scored(tmp_path):
    """The control: the same cases in acceptEdits mode score the layer (a pass) and the gate opens."""
    _, out, r = _run(tmp_path, BYPASS, "smoke-20261206T010300Z")
    assert r.rc == 0, (r.stdout, r.stderr)
    for cid in BYPASS:
        v = _verdict(out, cid)
        assert v["verdict"] == "pass" and v["layers"]["permissions"]["verdict"] == "pass", v["layers"]
    assert run_script("gate", out).rc == 0


def test_the_linter_warns_of_max_denied_under_bypass_permissions(tmp_path):
    from agent_state import build_agent_state
    state = build_agent_state(tmp_path / "app", {"c-denials-only": BYPASS["c-denials-only"],
                                                 "c-fix": ("fix add()", {"files": {"contains": {"calc.py": ["return a + b"]}}})})
    doc = json.loads((state / "adapter.yaml").read_text())
    del doc["invocation"]["agent"]["command"]
    doc["invocation"]["agent"]["permission_mode"] = "bypassPermissions"
    (state / "adapter.yaml").write_text(json.dumps(doc), encoding="utf-8")
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    found = [f for f in r.json["findings"] if f["code"] == "max_denied_never_denied"]
    assert [(f["case_id"], f["severity"], f["source"]) for f in found] == \
        [("c-denials-only", "WARN", "datasets/c-denials-only.yaml")], r.json["findings"]
    assert "drop max_denied" in found[0]["message"] and "acceptEdits" in found[0]["message"], found[0]


def test_an_expect_files_path_outside_the_workdir_is_refused(tmp_path):
    """`absent: [/build]` (meaning the workdir's build dir) or `unchanged: [../calc.py]` names a path
    no workdir holds: the workdir is measured, so the entry passed whatever the agent did (and an
    `exists`/`contains` one failed whatever it did). The linter's ERROR names it; the run's pre-flight
    exits 3 naming the case and key before the agent runs."""
    cases = {"c-outside": ("fix add()", {"files": {"absent": ["/build"], "contains": {"calc.py": ["return a + b"]}}}),
             "c-climbs": ("fix add()", {"files": {"unchanged": ["../calc.py"], "contains": {"calc.py": ["return a + b"]}}})}
    from agent_state import build_agent_state
    state = build_agent_state(tmp_path / "lint" / "app", cases)
    r = run_script("convert_suite", state, "-o", state / "work" / "converted.json", "--split-dir", state / "work")
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", state / "work" / "suite.json", "--no-capabilities",
                   "--adapter", state / "work" / "adapter.json")
    found = sorted((f["case_id"], f["severity"], f["key"]) for f in r.json["findings"] if f["code"] == "path_outside_workdir")
    assert found == [("c-climbs", "ERROR", "expect.files.unchanged"), ("c-outside", "ERROR", "expect.files.absent")], \
        r.json["findings"]
    assert r.rc != 0
    _, out, r = _run(tmp_path / "run", {"c-outside": cases["c-outside"]}, "smoke-20261206T010400Z")
    assert r.rc == 3, (r.rc, r.stdout, r.stderr)
    err = json.loads(r.stdout)
    assert (err["case_id"], err["key"]) == ("c-outside", "expect.files.absent"), err
    assert "'/build' names a path outside the agent's workdir" in err["error"] and "'build' if that is meant" in err["error"]


def test_unchanged_sees_a_change_past_the_diff_listing_cap(tmp_path):
    """An agent that ran `npm install` in its workdir (thousands of added files under node_modules/)
    and also added tests/test_fake.py passed `unchanged: ["tests/*"]`: the glob was matched against
    the changed paths as listed in workdir.json, cut at DIFF_CAP in path order. It is judged on every
    change now; the listing stays capped (and says so)."""
    from assay.invoke import workdir as wd
    fixture, work = tmp_path / "fixture", tmp_path / "work"
    (fixture / "tests").mkdir(parents=True)
    (fixture / "tests" / "test_calc.py").write_text("assert True\n")
    wd.copy_fixture(fixture, work)
    (work / "node_modules").mkdir()
    for i in range(wd.DIFF_CAP + 5):
        (work / "node_modules" / f"m{i:05d}.js").write_text("")
    (work / "tests" / "test_fake.py").write_text("assert True\n")
    got = wd.measure(fixture, work, {"unchanged": ["tests/*"]}, None, {})
    assert got["diff"]["truncated"] is True and "tests/test_fake.py" not in got["diff"]["added"]
    assert got["files"]["unchanged"] == {"tests/*": ["tests/test_fake.py"]}, got["files"]
    from assay.score.agent import score_files
    assert score_files(got, {"files": {"unchanged": ["tests/*"]}})["verdict"] == "fail"
