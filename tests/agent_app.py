"""What the agent-mode tests share: the app they evaluate (a fixture repo whose add() is wrong, with
its own check, and a plugin with one skill, fix-tests) and the processes left in a directory."""

from __future__ import annotations

import os
from pathlib import Path


def build_repo_and_plugin(root: Path) -> Path:
    """<root>/fixtures/repo (calc.py's add subtracts; check_calc.py exits 1 until it is fixed) and
    <root>/plugin (the `demo` plugin, skill fix-tests). Returns the repo."""
    repo = root / "fixtures" / "repo"
    repo.mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("# calc\n")
    (repo / "check_calc.py").write_text("import calc\nassert calc.add(2, 3) == 5, calc.add(2, 3)\nprint('ok')\n")
    plugin = root / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "demo", "version": "0.1.0"}')
    (plugin / "skills" / "fix-tests").mkdir(parents=True)
    (plugin / "skills" / "fix-tests" / "SKILL.md").write_text(
        "---\nname: fix-tests\ndescription: Fix the failing tests of calc.py\n---\nFix the tests.\n")
    return repo


def processes_in(under: str, marker: bytes = b"") -> list[int]:
    """Live processes whose working directory is below `under` (and whose argv holds `marker`)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{pid}/cwd")
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        if argv and marker in argv and cwd.startswith(under) and stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X"):
            found.append(int(pid))
    return found
