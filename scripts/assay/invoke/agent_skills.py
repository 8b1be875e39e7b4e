"""The skill names an agent case may name (`expect.skills`): each listed plugin dir's skills and the
workdir's own, and the plugin dirs that define none (so no name could be checked against them)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

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


# the words of an attempt's infra reason when the CLI refused a listed plugin (score.hollow_hints names the key)
PLUGIN_NOT_LOADED = "was not loaded: the agent had none of its skills"


def plugin_not_loaded(trajectory: Mapping[str, Any]) -> str | None:
    """Why the attempt ran without part of the app: a plugin the transcript's init event reports in
    `plugin_errors` (Claude Code refuses a plugin whose manifest is corrupt or invalid, says so there
    and runs on without it). Its skills were never offered, so `must_not_trigger` would pass and
    nothing asked of the plugin is measured. None when every plugin loaded."""
    errors = [e for e in trajectory.get("plugin_errors") or [] if isinstance(e, Mapping)]
    if not errors:
        return None
    said = "; ".join(f"{e.get('path') or 'a plugin'}: {str(e.get('message') or 'no reason given')[:300]}"
                     for e in errors)
    return (f"a plugin {PLUGIN_NOT_LOADED}, commands or hooks ({said}). Run `claude plugin validate <dir>` on "
            "it and fix what it names (its .claude-plugin/plugin.json), or the path in invocation.agent.plugin_dirs")


def _frontmatter_name(skill_md: Path) -> str | None:
    """The `name:` of a SKILL.md's frontmatter (between its first two `---` lines), else None."""
    try:
        lines = skill_md.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:60]:
        if line.strip() == "---":
            return None
        key, sep, value = line.partition(":")
        if sep and key.strip() == "name":
            value = value.split(" #", 1)[0].strip().strip("'\"").strip()
            return value or None
    return None


def skill_groups(spec: AgentSpec, fixture_dirs: list[Path] = ()) -> list[set[str]]:
    """Each skill a case may name, as the set of its names: its directory's name and, when its
    SKILL.md's frontmatter `name` differs, that name too (Claude Code lists the skill as
    `demo:fix-tests (demo:repair-tests)` and launches it by either), each bare and, for a plugin's
    skill, as `<plugin>:<name>`."""
    import json
    groups: list[set[str]] = []
    for d in spec.plugin_dirs:
        plugin = d.name
        manifest = d / ".claude-plugin" / "plugin.json"
        try:
            doc = json.loads(manifest.read_text(encoding="utf-8"))
            plugin = doc.get("name") or plugin if isinstance(doc, dict) else plugin
        except (OSError, ValueError):
            pass
        for skill in sorted((d / "skills").glob("*/SKILL.md")):
            bare = {skill.parent.name, _frontmatter_name(skill) or skill.parent.name}
            groups.append(bare | {f"{plugin}:{n}" for n in bare})
    for root in [spec.workdir, *fixture_dirs]:
        for skill in sorted((root / ".claude" / "skills").glob("*/SKILL.md")):
            groups.append({skill.parent.name, _frontmatter_name(skill) or skill.parent.name})
    return groups


def known_skills(spec: AgentSpec, fixture_dirs: list[Path] = ()) -> set[str]:
    """Every skill name a case may name: each plugin dir's skills (bare and `<plugin>:<skill>`) and
    the workdir's own `.claude/skills`, by their directory's name and their frontmatter `name`."""
    return set().union(*skill_groups(spec, fixture_dirs))


def skill_aliases(groups: list[set[str]], invoked: list[str]) -> dict[str, list[str]]:
    """For each invoked skill name that has other names (skill_groups), those names: the trajectory
    records them so that `must_not_trigger: [fix-tests]` sees the skill invoked as `repair-tests`."""
    out: dict[str, list[str]] = {}
    for name in invoked:
        renamed = [g for g in groups if name in g and len({n for n in g if ":" not in n}) > 1]
        others = sorted(set().union(*renamed) - {name}) if renamed else []
        if others:
            out[name] = others
    return out
