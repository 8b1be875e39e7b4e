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
