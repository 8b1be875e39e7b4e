"""The skill names an agent case may name (`expect.skills`): each listed plugin dir's skills and the
workdir's own, and the plugin dirs that define none (so no name could be checked against them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agent import AgentSpec


# the start of the message for a listed plugin dir that defines no skill (the linter names it by this)
NO_SKILL_IN_PLUGIN_DIR = "the plugin dir"


def plugin_dirs_without_skills(spec: AgentSpec) -> list[str]:
    """One message per `invocation.agent.plugin_dirs` entry that defines no skill (no
    `skills/<name>/SKILL.md` under it), naming the dir and the fix: a case that names a skill could
    not be checked against it, so `must_not_trigger: [a typo]` would pass whatever the agent did."""
    out = []
    for d in spec.plugin_dirs:
        if any((d / "skills").glob("*/SKILL.md")):
            continue
        inner = sorted({str(p.parents[2]) for p in d.glob("*/skills/*/SKILL.md")})
        fix = (f"list the plugin's own dir instead ({', '.join(inner[:3])} defines skills)" if inner
               else "list the plugin's own dir (the one holding skills/<name>/SKILL.md)")
        out.append(f"{NO_SKILL_IN_PLUGIN_DIR} {d} defines no skill (no skills/<name>/SKILL.md under it), so no "
                   f"skill name can be checked against it; {fix} in invocation.agent.plugin_dirs")
    return out


def known_skills(spec: AgentSpec, fixture_dirs: list[Path] = ()) -> set[str]:
    """Every skill name a case may name: each plugin dir's skills (bare and `<plugin>:<skill>`) and
    the workdir's own `.claude/skills`."""
    import json
    names: set[str] = set()
    for d in spec.plugin_dirs:
        plugin = d.name
        manifest = d / ".claude-plugin" / "plugin.json"
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
            plugin = doc.get("name") or plugin if isinstance(doc, dict) else plugin
        except (OSError, ValueError):
            pass
        for skill in (d / "skills").glob("*/SKILL.md"):
            names.update({skill.parent.name, f"{plugin}:{skill.parent.name}"})
    for root in [spec.workdir, *fixture_dirs]:
        for skill in (root / ".claude" / "skills").glob("*/SKILL.md"):
            names.add(skill.parent.name)
    return names
