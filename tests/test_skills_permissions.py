"""Every skill, every documented call, through the real pinned Claude Code CLI — without a model.

For each skill a headless session (the CI recipe's flags: `--bare --permission-mode acceptEdits
--permission-prompts none`) is started with `/assay:<skill>` in a copy of the example app; the
scripted model (tests/messages_server.py) then issues, as Bash calls, every script call the
skill's SKILL.md and references document (tests/skill_calls.py fills the placeholders), then one
stray call in a form the skills forbid (`cd … && python3 …`). Claude Code checks each against the
skill's `allowed-tools` under those flags: the `result` event's `permission_denials` must name the
stray call and nothing else. What this proves is the permission and the command as written; the
sessions' `python3` records its argv instead of running (the happy paths in
tests/test_skills_headless.py run the scripts for real), so the seven sessions stay cheap.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from claude_cli import unavailable
from headless import run_parallel, run_session, take
from helpers import ROOT
from messages_server import text, tool
from skill_calls import documented_calls, documented_listings

pytestmark = [pytest.mark.skipif(unavailable() is not None, reason=unavailable() or ""), pytest.mark.slow]

SKILLS = sorted(p.parent.name for p in (ROOT / "skills").glob("*/SKILL.md"))
SEP = "\x1f"


def stray(calls: list[str]) -> str:
    """A call the skills forbid: `cd` into the plugin, then a script (outside the working directory)."""
    script = Path(shlex.split(calls[0])[1]).name if calls else "gate.py"
    return f'cd "{ROOT}" && python3 scripts/{script} --help'


def _recording_python(where: Path) -> Path:
    """A `python3` that appends its argv (unit-separated, one call a line) to `where/calls.log`."""
    shim = where / "python3"
    shim.write_text('#!/bin/sh\n{ for a in "$@"; do printf \'%s\\037\' "$a"; done; printf \'\\n\'; } '
                    f'>> "{where}/calls.log"\necho \'{{"recorded": true}}\'\n')
    shim.chmod(0o755)
    return shim


def _session(name: str, base: Path):
    app = base / name / "app"
    shutil.copytree(ROOT / "examples" / "helpdesk", app, ignore=shutil.ignore_patterns("work", "reports", "__pycache__"))
    calls = documented_calls(name)
    steps = [tool("Bash", {"command": c, "description": f"documented call {i + 1}"}) for i, c in enumerate(calls)]
    # the listings a skill documents (`ls -a <state-dir>`: no Glob or Grep tool in the session) are approved too
    steps += [tool("Bash", {"command": c, "description": "documented listing"}) for c in documented_listings(name)]
    steps += [tool("Bash", {"command": stray(calls), "description": "a stray call"}), text("Done.")]
    record = base / name / "rec"
    record.mkdir()
    session = run_session(f"/assay:{name}", steps, cwd=app, home=base / name / "home",
                          python=str(_recording_python(record)))
    log = record / "calls.log"
    recorded = [line.split(SEP)[:-1] for line in log.read_text().splitlines()] if log.exists() else []
    return calls, session, recorded


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    base = tmp_path_factory.mktemp("skills")
    return run_parallel({name: (lambda name=name: _session(name, base)) for name in SKILLS}, workers=4)


def test_every_skill_documents_calls_except_help():
    for name in SKILLS:
        assert bool(documented_calls(name)) == (name != "help"), name
    # the skills that look around the app say how: with `ls` (their allowed-tools pre-approve it)
    for name in ("start", "discover", "generate"):
        assert documented_listings(name), name


@pytest.mark.parametrize("name", SKILLS)
def test_every_documented_call_is_approved_and_the_stray_one_denied(sessions, name):
    calls, s, recorded = take(sessions, name)
    assert s.rc == 0 and s.result["is_error"] is False, s.why()
    assert s.init["permissionMode"] == "acceptEdits"
    assert not s.server.failures and s.server.overrun == 0, s.why()
    assert s.denied_commands() == [stray(calls)], s.why()
    # each documented call reached the shell with the documented argv, in order
    assert recorded == [shlex.split(c)[1:] for c in calls], s.why()
