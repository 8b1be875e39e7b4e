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


def _frontmatter(skill_md: Path) -> dict[str, str] | None:
    """The top-level `key: value` lines of a SKILL.md's frontmatter (between its first two `---`
    lines; a block scalar's `>` or `|` is its value), else None (no frontmatter, or one not closed)."""
    try:
        lines = skill_md.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    if not lines or lines[0].strip() != "---":
        return None
    out: dict[str, str] = {}
    for line in lines[1:200]:
        if line.strip() == "---":
            return out
        key, sep, value = line.partition(":")
        if sep and key == key.lstrip() and key.strip():
            out.setdefault(key.strip(), value.split(" #", 1)[0].strip().strip("'\"").strip())
    return None


def _frontmatter_name(skill_md: Path) -> str | None:
    """The `name:` of a SKILL.md's frontmatter (between its first two `---` lines), else None."""
    return (_frontmatter(skill_md) or {}).get("name") or None


def skill_files(spec: AgentSpec, fixture_dirs: list[Path] = ()) -> dict[str, Any]:
    """What the skills layer names when a skill a case names was not offered to the session:
    `undescribed` {name: SKILL.md path} for each SKILL.md without a frontmatter description (Claude
    Code loads it as a slash command but lists it in no init `skills`; a plugin's is never offered to
    the model), and `stray` SKILL.md paths where the agent reads none (`.claude/skill/x/SKILL.md`, a
    plugin's `skill/`): at most 20, relative to the app repo when under it."""
    def shown(p: Path) -> str:
        try:
            return str(p.relative_to(spec.app_root))
        except ValueError:
            return str(p)
    undescribed: dict[str, str] = {}
    read: set[Path] = set()
    for skill, plugin in _skill_mds(spec, fixture_dirs):
        read.add(skill)
        if not (_frontmatter(skill) or {}).get("description"):
            for n in (skill.parent.name, *([f"{plugin}:{skill.parent.name}"] if plugin else [])):
                undescribed.setdefault(n, shown(skill))
    stray: list[str] = []
    for top in [*spec.plugin_dirs, spec.workdir, *fixture_dirs]:
        for depth in ("*/SKILL.md", "*/*/SKILL.md", "*/*/*/SKILL.md"):
            for p in sorted(top.glob(depth)):
                if p not in read and ".git" not in p.parts and "node_modules" not in p.parts \
                        and shown(p) not in stray and len(stray) < 20:
                    stray.append(shown(p))
    return {"undescribed": undescribed, "stray": stray}


def arm_only_skills(adapter: Mapping[str, Any], spec: AgentSpec, fixture_dirs: list[Path] = ()) -> set[str]:
    """The skill names that the plugin dirs of the adapter's `arms` define and this agent's do not: a run
    planned under an arm without them legitimately lacks them (its `must_not_trigger` on them reads as
    the arm's meaning: the skill was not there to trigger; evaluate-agents.md, "Two runs, one per arm")."""
    from types import SimpleNamespace
    arms = adapter.get("arms") if isinstance(adapter.get("arms"), Mapping) else {}
    dirs = {(spec.app_root / d).resolve() for arm in arms.values() if isinstance(arm, Mapping)
            and isinstance(arm.get("plugin_dirs"), list) for d in arm["plugin_dirs"] if isinstance(d, str) and d}
    # an arm's path that is not there is named by the linter's arms check and by that arm's pre-flight
    others = sorted(d for d in dirs if d.is_dir() and d not in spec.plugin_dirs)
    if not others:
        return set()
    other_skills = set().union(*skill_groups(SimpleNamespace(plugin_dirs=others, workdir=spec.workdir)))
    return other_skills - known_skills(spec, fixture_dirs)


def _plugin_name(d: Path) -> str:
    """The name Claude Code gives a plugin dir: its manifest's `name`, else the dir's own."""
    import json
    try:
        doc = json.loads((d / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return d.name
    return str(doc.get("name") or d.name) if isinstance(doc, dict) else d.name


def skill_groups(spec: AgentSpec, fixture_dirs: list[Path] = ()) -> list[set[str]]:
    """Each skill a case may name, as the set of its names: its directory's name and, when its
    SKILL.md's frontmatter `name` differs, that name too (Claude Code lists the skill as
    `demo:fix-tests (demo:repair-tests)` and launches it by either), each bare and, for a plugin's
    skill, as `<plugin>:<name>`."""
    groups: list[set[str]] = []
    for skill, plugin in _skill_mds(spec, fixture_dirs):
        bare = {skill.parent.name, _frontmatter_name(skill) or skill.parent.name}
        groups.append(bare | {f"{plugin}:{n}" for n in bare} if plugin else bare)
    return groups


def _skill_mds(spec: Any, fixture_dirs: list[Path] = ()) -> list[tuple[Path, str | None]]:
    """Every SKILL.md the agent reads, with its plugin's name (None for a workdir or fixture skill): each
    plugin dir's `skills/<name>/SKILL.md`, then the workdir's and each fixture's `.claude/skills/<name>/SKILL.md`."""
    out: list[tuple[Path, str | None]] = []
    for d in spec.plugin_dirs:
        plugin = _plugin_name(d)
        out += [(skill, plugin) for skill in sorted((d / "skills").glob("*/SKILL.md"))]
    for root in [spec.workdir, *fixture_dirs]:
        out += [(skill, None) for skill in sorted((root / ".claude" / "skills").glob("*/SKILL.md"))]
    return out


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


def skill_name_problems(skills: Mapping[str, Any], spec: AgentSpec, known: set[str], arm_only: set[str],
                        fixture: Path) -> list[tuple[str, str]]:
    """(key, message) for each skill an `expect.skills` block names that nothing the agent reads defines
    (agent.agent_case_problems): a typo (with the closest name), a plugin dir that defines no skill, or
    no skill defined at all. A skill only another arm's plugin dirs define (`arm_only`) is none."""
    from ..core.suggest import did_you_mean
    out: list[tuple[str, str]] = []
    empty = plugin_dirs_without_skills(spec)
    for key in ("must_trigger", "must_not_trigger"):
        for name in skills.get(key) or []:
            if not isinstance(name, str) or name in known or name in arm_only:
                continue
            if empty:   # a plugin dir that defines no skill: no name could be checked (it reads vacuous)
                out.append((f"expect.skills.{key}", f"skill {name!r}: {empty[0]}"))
            elif known or arm_only:
                names = sorted(known | arm_only)
                out.append((f"expect.skills.{key}", f"skill {name!r} is defined by no plugin dir or workdir skill"
                            f"{did_you_mean(name, names)} (known: {', '.join(names)})"))
            else:   # nothing defines a skill: must_not_trigger would pass whatever the agent did
                stray = skill_files(spec, [fixture] if fixture.is_dir() else [])["stray"]
                out.append((f"expect.skills.{key}", f"skill {name!r} is defined nowhere the agent reads skills: "
                            "invocation.agent.plugin_dirs lists no plugin dir and the fixture "
                            f"{fixture} has no .claude/skills/<name>/SKILL.md"
                            + (f" (a SKILL.md where the agent reads none: {', '.join(stray[:3])})" if stray else "")
                            + f"; put the skill at .claude/skills/{name.rsplit(':', 1)[-1]}/SKILL.md in the fixture or "
                            "list its plugin's dir in invocation.agent.plugin_dirs"))
    return out
