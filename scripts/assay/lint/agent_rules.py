"""Shape rules for the agent expectations (`expect.skills`, `files`, `check`, `permissions`) and the
agent case's checks against the adapter (a typo'd skill, a fixture that is not there, a check
program not found): the latter ask `assay.invoke.agent.agent_case_problems`, the pre-flight's own
function, so the linter and the run say the same thing; so does an `mcp_config` the agent refuses
(`assay.invoke.agent_mcp`, the file's shape only: a server's command is on the agent's run-time PATH)."""

from __future__ import annotations

from typing import Any, Callable

from ..core.suggest import did_you_mean
from ..score.agent import NEVER_DENIES, NEVER_DENIES_BLOCK
from .key_homes import CHECK_KEYS, FILES_KEYS, PERMISSIONS_KEYS, SKILLS_KEYS, misplaced

Report = Callable[..., None]
# an `expect.files` entry the untouched fixture already passes (fixture_paths.fixture_passes), by key
FIXTURE_PASSES = {"expect.files.contains": "contains_already_in_fixture",
                  "expect.files.exists": "exists_already_in_fixture",
                  "expect.files.unchanged": "unchanged_glob_matches_nothing"}



def _keys(block: dict, allowed: tuple[str, ...], where: str, report: Report) -> None:
    for key in sorted(set(block) - set(allowed), key=str):   # each at its own line: its home, or the closest key
        report("bad_expect_shape", misplaced(key, where) or f"{where}.{key} is not a key of {where}"
               f"{did_you_mean(str(key), allowed)}; allowed: {', '.join(allowed)}", key=f"{where}.{key}")


def _names(value: Any, where: str, report: Report) -> None:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        report("bad_expect_shape", f"{where} must be a non-empty list of names or paths")


def check_agent_expect(expect: dict, where: str, report: Report) -> None:
    skills = expect.get("skills")
    if "skills" in expect:
        if not isinstance(skills, dict) or not skills:
            report("bad_expect_shape", f"{where}.skills must be {{must_trigger: [..], must_not_trigger: [..]}}")
        else:
            _keys(skills, SKILLS_KEYS, f"{where}.skills", report)
            for key in SKILLS_KEYS:
                if key in skills:
                    _names(skills[key], f"{where}.skills.{key}", report)
    files = expect.get("files")
    if "files" in expect:
        if not isinstance(files, dict) or not files:
            report("bad_expect_shape", f"{where}.files must be a mapping: exists, absent, contains, unchanged")
        else:
            _keys(files, FILES_KEYS, f"{where}.files", report)
            for key in ("exists", "absent", "unchanged"):
                if key in files:
                    _names(files[key], f"{where}.files.{key}", report)
            contains = files.get("contains")
            if "contains" in files and not (isinstance(contains, dict) and contains and all(
                    isinstance(v, list) and v and all(isinstance(t, str) and t for t in v) for v in contains.values())):
                report("bad_expect_shape", f"{where}.files.contains must map a path to a list of texts: "
                       "{src/app.py: [\"def main\"]}")
    check = expect.get("check")
    if "check" in expect:
        cmd = check.get("command") if isinstance(check, dict) else None
        if isinstance(check, dict):   # a misspelt key by name first (`cmd:`), with its line
            _keys(check, CHECK_KEYS, f"{where}.check", report)
        if not isinstance(check, dict) or not (
                (isinstance(cmd, str) and cmd.strip()) or
                (isinstance(cmd, list) and cmd and all(isinstance(a, str) and a for a in cmd))):
            report("bad_expect_shape", f"{where}.check must be {{command: \"pytest -q\" or [argv], exit_code?: 0}}")
        else:
            code = check.get("exit_code", 0)
            if not isinstance(code, int) or isinstance(code, bool):
                report("bad_expect_shape", f"{where}.check.exit_code must be an integer")
    perms = expect.get("permissions")
    if "permissions" in expect:
        limit = perms.get("max_denied") if isinstance(perms, dict) else None
        if isinstance(perms, dict):   # a misspelt key by name first (`max_denies:`), with its line
            _keys(perms, PERMISSIONS_KEYS, f"{where}.permissions", report)
        if not isinstance(perms, dict) or not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
            report("bad_expect_shape", f"{where}.permissions must be {{max_denied: <integer >= 0>}}")


def check_agent_cases(cases: list[dict[str, Any]], adapter: dict[str, Any], app_root: Any,
                      source_of: Callable[[int], str | None], report: Report) -> None:
    """--adapter with invocation.mode agent: each case's fixture, skills and check program exist
    (the pre-flight's own checks, so a newcomer's typo is named before any case runs)."""
    inv = adapter.get("invocation") if isinstance(adapter.get("invocation"), dict) else {}
    if inv.get("mode") != "agent" or app_root is None:
        return
    from pathlib import Path
    from ..core.errors import AssayError
    from ..invoke.agent import AgentSpec, agent_case_problems, fixture_of
    from ..invoke.agent_skills import NO_SKILL_IN_PLUGIN_DIR, arm_only_skills, known_skills
    from ..invoke.fixture_paths import GLOB_IN_PATH, OUTSIDE_WORKDIR, fixture_passes
    try:
        spec = AgentSpec(inv.get("agent"), Path(app_root))
    except AssayError as exc:
        report("bad_agent_case", exc.message.replace("pre-flight: ", "adapter: "))
        return
    if spec.mcp_config is not None:   # the file's shape only: a server's command is looked up on the
        from ..invoke.agent_mcp import KEY, mcp_config_shape_problems   # agent's PATH at the run's pre-flight
        for msg in mcp_config_shape_problems(spec.mcp_config):
            report("bad_mcp_config", f"{KEY}: {msg}", key=KEY)
    _check_arms(adapter, inv.get("agent"), Path(app_root), spec, report)
    import os
    fixtures = sorted({fixture_of(c, spec) for c in cases if isinstance(c, dict)})
    skills = known_skills(spec, [f for f in fixtures if f.is_dir()])
    arm_only = arm_only_skills(adapter, spec, [f for f in fixtures if f.is_dir()])
    _undescribed_skills(spec, [f for f in fixtures if f.is_dir()], report)
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            continue
        for key, msg in agent_case_problems(case, spec, skills, os.environ.get("PATH"), arm_only=arm_only):
            code = {"input.fixture": "missing_fixture", "expect.check.command": "check_not_found",
                    "expect.files.unchanged": "unchanged_not_in_fixture",
                    "expect.files.absent": "absent_near_fixture_path"}.get(key, "unknown_skill")
            if OUTSIDE_WORKDIR in msg:
                code = "path_outside_workdir"
            elif GLOB_IN_PATH in msg:
                code = "glob_in_files_path"
            elif key.startswith("expect.skills.") and msg.split(": ", 1)[-1].startswith(NO_SKILL_IN_PLUGIN_DIR):
                code = "plugin_dir_defines_no_skill"
            report(code, f"{key}: {msg}", case_id=case.get("id"), source=source_of(i), key=key)
        expect = case.get("expect") if isinstance(case.get("expect"), dict) else {}
        files = expect.get("files") if isinstance(expect.get("files"), dict) else {}
        for key, msg in fixture_passes(files, fixture_of(case, spec)):   # WARN: the agent may have to keep it
            report(FIXTURE_PASSES[key], f"{key}: {msg}", case_id=case.get("id"), source=source_of(i), key=key)
        perms = expect.get("permissions")
        if spec.permission_mode == NEVER_DENIES and spec.command is None and isinstance(perms, dict) \
                and "max_denied" in perms:   # the run reads it unscorable unless a denial is measured
            report("max_denied_never_denied", f"expect.permissions.max_denied: {NEVER_DENIES_BLOCK}",
                   case_id=case.get("id"), source=source_of(i), key="expect.permissions.max_denied")


def _undescribed_skills(spec: Any, fixtures: list, report: Report) -> None:
    """WARN skill_without_description for each SKILL.md the agent reads that has no frontmatter
    description: Claude Code loads it as a slash command but lists it in no init `skills` (a plugin's is
    never offered to the model; the skills layer then reads `unscored` on a case naming it)."""
    from ..invoke.agent_skills import skill_files
    from ..score.agent import undescribed_fix
    seen: set[str] = set()
    for name, path in sorted(skill_files(spec, fixtures)["undescribed"].items()):
        if path in seen:
            continue
        seen.add(path)
        report("skill_without_description", f"{path}: a SKILL.md without frontmatter description; "
               f"{undescribed_fix(name)}")


def _check_arms(adapter: dict[str, Any], block: Any, app_root: Any, base: Any, report: Report) -> None:
    """Each arm's own keys as the base block's are checked: `make_plan.py --arm NAME` runs the agent with
    `invocation.agent` and the arm's keys over it (assay.plan.arms), so an arm's `mcp_config` the agent
    refuses (or a path of the arm that is not there) was clean here and met only at the run's pre-flight,
    under invocation.agent's name. Named `arms.<name>.<key>`, with the same codes and the same checks
    (AgentSpec, agent_mcp's file shape)."""
    arms = adapter.get("arms")
    if not isinstance(arms, dict) or not isinstance(block, dict):
        return
    from ..core.errors import AssayError
    from ..invoke.agent import AgentSpec
    from ..invoke.agent_mcp import mcp_config_shape_problems
    for name in sorted(arms, key=str):
        overrides = arms[name]
        if not isinstance(overrides, dict) or not overrides:
            continue
        where = f"arms.{name}"
        try:
            spec = AgentSpec({**block, **overrides}, app_root)
        except AssayError as exc:   # the base block passed: the arm's key is the one refused
            key = str(exc.fields.get("key") or "").replace("invocation.agent", where, 1)
            report("bad_agent_case", exc.message.replace("pre-flight: invocation.agent", where, 1),
                   key=key or where)
            continue
        if overrides.get("mcp_config") is not None and spec.mcp_config != base.mcp_config:
            for msg in mcp_config_shape_problems(spec.mcp_config):
                report("bad_mcp_config", f"{where}.mcp_config: {msg}", key=f"{where}.mcp_config")
