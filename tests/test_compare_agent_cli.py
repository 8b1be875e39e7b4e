"""A team compares today's run of their agent app with last week's baseline after the Claude Code CLI
auto-updated (and its model changed) between the runs: compare_runs.py, gate.py --baseline, the
report's comparison section and the viewer's compare page said what got better and what broke and
nothing about the CLI, though each session's transcript recorded its version and model (trajectory.json
`agent_cli`). Now compare.json's notes say it on every surface; a run whose transcripts name no CLI
version (an older run, another CLI) is unknown, never different. The agent is tests/fakeclaude.py run
as test_agent_mode.py runs it (no arms), upgraded in place as test_lift_caveats.py does."""

from __future__ import annotations

import json
import urllib.request

import pytest

from fakeapp import case
from helpers import run_script, view_server
from test_agent_mode import FIX_EXPECT, run, setup_state
from test_lift_caveats import cli_version

pytestmark = pytest.mark.slow   # three run_cases.py runs of agent subprocesses

CASES = [case("c-fix", "fix the add function", expect=FIX_EXPECT),
         case("c-fix-2", "fix the add function please", expect=FIX_EXPECT)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    state = setup_state(tmp)
    out = {"state": state}
    for name, version, model, at in (("old", "none", "claude-scripted-1", "20261201T090000Z"),
                                     ("last_week", "2.0.1", "claude-scripted-1", "20261202T090000Z"),
                                     ("today", "2.1.0", "claude-scripted-2", "20261209T090000Z")):
        cli_version(state.parent, version, model)
        r, out[name] = run(state, CASES, tmp, run_id=f"regression-{at}")
        assert r.rc == 0, r.stdout + r.stderr
    return out


def _cli_notes(notes: list[str]) -> list[str]:
    return [n for n in notes if "agent's Claude Code CLI version" in n or "agent's model" in n]


def test_a_cli_upgraded_between_the_runs_is_said_on_every_comparison_surface(runs, tmp_path):
    base, cand = runs["last_week"], runs["today"]
    r = run_script("compare_runs", base, cand, "-o", tmp_path / "compare.json", "--html", tmp_path / "compare.html")
    assert r.rc == 0, r.stdout + r.stderr
    said = _cli_notes(r.json["notes"])   # the printed summary
    assert len(said) == 2, r.json["notes"]
    version, model = said
    assert version.startswith("the agent's Claude Code CLI version differs: base 2.0.1, candidate 2.1.0"), version
    assert "may be the CLI's change, not only the app's" in version and "make claude-cli" in version, version
    assert model.startswith("the agent's model differs: base claude-scripted-1, candidate claude-scripted-2"), model
    assert r.json["headline"] == "no verdict changed", r.json["headline"]   # a caveat, never a decision
    doc = json.loads((tmp_path / "compare.json").read_text())
    assert doc["base"]["agent_cli"] == {"versions": ["2.0.1"], "models": ["claude-scripted-1"]}, doc["base"]
    assert doc["candidate"]["agent_cli"] == {"versions": ["2.1.0"], "models": ["claude-scripted-2"]}
    assert _cli_notes(doc["notes"]) == said
    assert "base 2.0.1, candidate 2.1.0" in (tmp_path / "compare.html").read_text()
    # the same on two processes (each half of the cases folded apart, then merged)
    forked = run_script("compare_runs", base, cand, env={"ASSAY_COMPARE_FORK_ABOVE": "0"})
    assert forked.rc == 0 and forked.json["candidate"]["agent_cli"] == doc["candidate"]["agent_cli"], forked.stdout

    # gate.py --baseline: the note among the comparison's, the decision the run's own (assay.verdict)
    alone = run_script("gate", cand)
    g = run_script("gate", cand, "--baseline", base)
    assert g.rc == alone.rc == 0, g.stdout + g.stderr
    assert "base 2.0.1, candidate 2.1.0" in g.stdout, g.stdout
    # the report's comparison section
    rep = run_script("draft_report", cand, "--baseline", base, "-o", tmp_path / "report.md")
    assert rep.rc == 0, rep.stdout + rep.stderr
    assert "base 2.0.1, candidate 2.1.0" in (tmp_path / "report.md").read_text()
    # the viewer's compare page
    with view_server(runs["state"]) as url:
        with urllib.request.urlopen(f"{url}/api/compare/{base.name}/{cand.name}?wait=60", timeout=120) as resp:
            page = json.loads(resp.read())
    assert _cli_notes(page["notes"]) == said, page.get("notes")
    for run_dir in (base, cand):   # nothing was written to the runs
        v = run_script("run_cases", "--verify", run_dir)
        assert v.rc == 0, v.stdout + v.stderr


def test_a_run_whose_transcripts_name_no_cli_version_is_unknown_never_different(runs):
    """The older run's sessions named no CLI version (its init events lack claude_code_version) and ran
    the same model: nothing is said, and its agent_cli lists no version."""
    r = run_script("compare_runs", runs["old"], runs["last_week"])
    assert r.rc == 0, r.stdout + r.stderr
    assert not _cli_notes(r.json["notes"]), r.json["notes"]
    assert r.json["base"]["agent_cli"] == {"versions": [], "models": ["claude-scripted-1"]}, r.json["base"]
    assert r.json["candidate"]["agent_cli"]["versions"] == ["2.0.1"]
