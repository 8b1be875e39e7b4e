"""The agent layers: `skills`, `files`, `check`, `permissions` (wave 4 §4). Pure.

Inputs are what the run measured: the transcript's trajectory (its `skills`, the skills the
agent invoked through the `Skill` tool, and its `permission_denials`) and the workdir's facts
after the agent (`assay.invoke.workdir`: `files`, `check`). A fact that was not measured is never
a pass: the caller records `unscored` before asking these.

- skills: `expect.skills.must_trigger` (each invoked at least once) and `must_not_trigger`
  (none invoked). A name without `:` also matches a plugin's `<plugin>:<name>`; a skill whose
  SKILL.md `name` differs from its directory's is matched by either (the trajectory's `skill_aliases`).
- files: `exists`, `absent` (paths), `contains` ({path: [text]}: the file holds each text),
  `unchanged` ([glob]: no path matching it was added, removed or modified). The layer records the
  asserted paths the agent changed (`touched`): none, and an agent that did nothing passes it too
  (score.hollow.absence_only; likewise skills without `must_trigger`, and any permissions pass).
- check: the command's exit code equals `expect.check.exit_code` (default 0); its output tail is
  kept on the layer. A check that gives that exit code on the untouched fixture too (`check_on_fixture`,
  run before the cases by assay.invoke.fixture_check) is `unscored` unless the case asserts an
  `expect.files` entry the fixture fails: it measured nothing (runner contract §5.4).
- permissions: at most `expect.permissions.max_denied` calls denied (default 0). An agent case
  that does not assert it still fails on a denial (the default), but never passes on its absence.
  Under permission_mode bypassPermissions nothing is denied: an asserted limit not exceeded is
  `unscorable` (never a pass), a measured denial still fails.
- the http layer of an agent (the exit code) also fails on an MCP server that closed its connection
  mid-call and on a result event that says the session failed though the agent exited 0.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..core.suggest import closest
from ..core.vocab import NA, UNSCORABLE, UNSCORED
from .base import FAIL, PASS, ScorerInputError


def _names(block: Mapping[str, Any], key: str) -> list[str]:
    value = block.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ScorerInputError(f"expect.skills.{key} must be a list of skill names, got {value!r}")
    return value


def skill_matches(wanted: str, invoked: str) -> bool:
    return invoked == wanted or (":" not in wanted and invoked.rsplit(":", 1)[-1] == wanted)


def score_skills(trajectory: Mapping[str, Any], expect: Mapping[str, Any]) -> dict:
    block = expect.get("skills")
    if not isinstance(block, Mapping) or not block:
        raise ScorerInputError(f"expect.skills must be a mapping with must_trigger / must_not_trigger, got {block!r}")
    invoked = [s for s in trajectory.get("skills") or [] if isinstance(s, str)]
    must, must_not = _names(block, "must_trigger"), _names(block, "must_not_trigger")
    aliases = trajectory.get("skill_aliases") if isinstance(trajectory.get("skill_aliases"), Mapping) else {}

    def names_of(s: str) -> list[str]:   # the invoked skill's other names (its frontmatter name vs its dir's)
        other = aliases.get(s)
        return [s, *(n for n in other if isinstance(n, str))] if isinstance(other, list) else [s]

    missing = [w for w in must if not any(skill_matches(w, n) for s in invoked for n in names_of(s))]
    wrong = [w for w in must_not if any(skill_matches(w, n) for s in invoked for n in names_of(s))]
    failures = ([f"skill(s) not triggered: {missing}"] if missing else []) + \
               ([f"skill(s) triggered that must not be: {wrong}"] if wrong else [])
    return {"verdict": FAIL if failures else PASS, "invoked": invoked, "must_trigger": must, "missing": missing,
            "unwanted": wrong, "failures": failures, "reason": "; ".join(failures) or None}


def undescribed_fix(name: str) -> str:
    """The fix for a SKILL.md without a frontmatter description (`name` bare or `<plugin>:<name>`): the
    skills layer's reason and the linter's skill_without_description say it."""
    return (f"add frontmatter at its top (---, name: {name.rsplit(':', 1)[-1]}, description: <when to use it>, ---): "
            "Claude Code lists a skill to the model only with a frontmatter description")


def _offered_names(trajectory: Mapping[str, Any]) -> list[str] | None:
    """The skill names the session was offered: its init event's `skills` (an entry `a (b)` is both
    names) and its bare slash commands (a workdir's .claude/skills SKILL.md without a frontmatter
    description is listed to the model with its first line, though not in `skills`; a plugin's is
    not). None: the transcript lists no skills (another agent CLI, a recording from before)."""
    listed = trajectory.get("offered_skills")
    if not isinstance(listed, list):
        return None
    out: list[str] = []
    for entry in listed:
        if isinstance(entry, str):
            out += [n.strip() for n in re.split(r"[()]", entry) if n.strip()]
    out += [c for c in trajectory.get("slash_commands") or [] if isinstance(c, str) and ":" not in c]
    return out


def skills_not_offered(trajectory: Any, expect: Mapping[str, Any]) -> list[str]:
    """One message per skill the case's `expect.skills` names that the agent's session was never
    offered (the transcript's init event), naming the skill, its SKILL.md or where it is looked for,
    and the fix. [] when the transcript lists no skills, and for a skill the run's arm runs without
    (`skills_left_out_by_arm`: the arm's meaning, evaluate-agents.md)."""
    block = expect.get("skills")
    if not isinstance(trajectory, Mapping) or not isinstance(block, Mapping):
        return []
    offered = _offered_names(trajectory)
    if offered is None:
        return []
    arm = trajectory.get("skills_left_out_by_arm") if isinstance(trajectory.get("skills_left_out_by_arm"), Mapping) else {}
    exempt = {n for n in arm.get("skills") or [] if isinstance(n, str)}
    aliases = trajectory.get("skill_aliases") if isinstance(trajectory.get("skill_aliases"), Mapping) else {}
    also = [n for v in aliases.values() if isinstance(v, list) for n in v if isinstance(n, str)]
    files = trajectory.get("skill_files") if isinstance(trajectory.get("skill_files"), Mapping) else {}
    undescribed = files.get("undescribed") if isinstance(files.get("undescribed"), Mapping) else {}
    stray = [p for p in files.get("stray") or [] if isinstance(p, str)]
    out: list[str] = []
    for key in ("must_trigger", "must_not_trigger"):
        for name in block.get(key) or []:
            if not isinstance(name, str) or name in exempt or any(skill_matches(name, n) for n in offered + also):
                continue
            path = undescribed.get(name)
            if isinstance(path, str):
                out.append(f"expect.skills.{key} names {name!r}, whose {path} has no frontmatter description: Claude "
                           "Code loaded it as a slash command only and never offered it to the model (the "
                           f"transcript's init event lists no such skill); {undescribed_fix(name)}")
                continue
            listed = [n for n in trajectory.get("offered_skills") or [] if isinstance(n, str)]
            close = closest(name, listed)
            out.append(f"expect.skills.{key} names {name!r}, a skill the agent's session was never offered (the "
                       f"transcript's init event lists {len(listed)} skill(s){', the closest ' + repr(close) if close else ''}"
                       f"): no SKILL.md defines it where the agent reads skills, .claude/skills/{name.rsplit(':', 1)[-1]}"
                       "/SKILL.md in the case's fixture or skills/<name>/SKILL.md of a plugin dir in "
                       "invocation.agent.plugin_dirs" + (f" (a SKILL.md where the agent reads none: "
                                                         f"{', '.join(stray[:3])})" if stray else "")
                       + "; fix the name, or put the skill there")
    return out


def hold_skills_to_session(layers: dict[str, Any], named: list[str]) -> dict[str, Any]:
    """The layers with a passing skills layer that names a skill the session was never offered made
    `unscored` (it measured nothing: a skill never offered is never triggered), and a failing one's
    reason saying why (the agent could not have triggered it)."""
    entry = layers.get("skills")
    if not named or not isinstance(entry, dict) or entry.get("verdict") not in (PASS, FAIL):
        return layers
    said = "; ".join(named)
    if entry.get("verdict") == PASS:
        return dict(layers, skills=dict(entry, verdict=UNSCORED, not_offered=named, reason=(
            f"{said}. So this check cannot fail: it measured nothing")))
    return dict(layers, skills=dict(entry, not_offered=named, reason=f"{entry.get('reason')}; {said}"))


def score_files(measured: Mapping[str, Any], expect: Mapping[str, Any]) -> dict:
    spec = expect.get("files")
    facts = measured.get("files")
    if not isinstance(spec, Mapping) or not spec:
        raise ScorerInputError(f"expect.files must be a mapping (exists, absent, contains, unchanged), got {spec!r}")
    if not isinstance(facts, Mapping):
        raise ScorerInputError("the workdir was not measured for expect.files")
    failures: list[str] = []
    for path, there in (facts.get("exists") or {}).items():
        if not there:
            failures.append(f"{path} does not exist")
    for path, there in (facts.get("absent") or {}).items():
        if there:
            failures.append(f"{path} exists (it must be absent)")
    for path, got in (facts.get("contains") or {}).items():
        if not got.get("file"):
            failures.append(f"{path} is not a file in the workdir")
        elif got.get("missing"):
            failures.append(f"{path} does not contain {got['missing']}")
    for glob, changed in (facts.get("unchanged") or {}).items():
        if changed:
            failures.append(f"{glob} changed: {changed[:10]}")
    out = {"verdict": FAIL if failures else PASS, "failures": failures, "reason": "; ".join(failures) or None,
           "diff": measured.get("diff")}
    touched = _touched(spec, measured.get("diff"))
    if touched is not None:
        out["touched"] = touched
    return out


def _touched(spec: Mapping[str, Any], changes: Any) -> list[str] | None:
    """The paths `expect.files` names (exists, absent, contains; not the `unchanged` globs) that the
    agent added, removed or modified, or a directory it changed something under: none means every
    asserted path is as the fixture had it, so an agent that did nothing passes the layer too
    (score.hollow.absence_only). None when the changes were not recorded (decided as before); a diff
    cut at its cap counts every asserted path as touched."""
    if not isinstance(changes, Mapping):
        return None
    asked = [p for key in ("exists", "absent") if isinstance(spec.get(key), list) for p in spec[key]
             if isinstance(p, str)]
    asked += [str(p) for p in spec.get("contains") or {}] if isinstance(spec.get("contains"), Mapping) else []
    if changes.get("truncated"):
        return sorted(set(asked))
    changed = [str(c) for key in ("added", "removed", "modified") for c in changes.get(key) or []]
    out = set()
    for path in asked:
        bare = path.strip("/").removeprefix("./")
        if any(c == bare or c.startswith(bare + "/") for c in changed):
            out.add(path)
    return sorted(out)


def score_check(measured: Mapping[str, Any], expect: Mapping[str, Any]) -> dict:
    spec = expect.get("check")
    got = measured.get("check")
    if not isinstance(spec, Mapping):
        raise ScorerInputError(f"expect.check must be a mapping {{command, exit_code?}}, got {spec!r}")
    if not isinstance(got, Mapping):
        raise ScorerInputError("the check was not run")
    want = spec.get("exit_code", 0)
    detail = {k: got.get(k) for k in ("command", "exit_code", "duration_ms", "output")}
    if not got.get("ran") or got.get("timed_out") or got.get("exit_code") is None:
        raise ScorerInputError(f"the check did not give an exit code: {got.get('error') or 'not run'}")
    ok = got["exit_code"] == want
    out = {"verdict": PASS if ok else FAIL, "expected_exit_code": want, **detail,
           "reason": None if ok else f"the check `{_argv_words(got.get('command'))}` exited {got['exit_code']} "
                                     f"(expected {want})"}
    before = measured.get("check_on_fixture")
    if not isinstance(before, Mapping) or before.get("command") != got.get("command"):
        return out   # not run on the fixture (a run dir from before it was): decided as before
    out["exit_code_on_fixture"] = before.get("exit_code")
    if ok and before.get("exit_code") == want:
        others = _fixture_fails_asked(before.get("fixture_fails"), expect.get("files"))
        if others:
            out["kept_by"] = others   # a regression guard beside an assertion an idle agent fails
        else:
            out.update(verdict=UNSCORED, reason=HOLLOW_CHECK.format(command=_argv_words(got.get("command")),
                                                                    code=want))
    return out


# recorded on the check layer (and in results.json's hollow layers) and recounted by --verify: never reword it
HOLLOW_CHECK = ("the check passes on the untouched fixture and nothing else the case asserts fails there, so an agent "
                "that does nothing passes it: assert a check that fails before the fix (or an expect.files contains "
                "text or exists path the fixture lacks, an absent path it has); `{command}` exited {code} in a "
                "fresh copy of the fixture, before any agent")


def _fixture_fails_asked(fails: Any, files: Any) -> list[str]:
    """The recorded `expect.files` entries the untouched fixture fails (fixture_paths.fixture_fails)
    that the case still asks (an entry edited since the recording is not known to fail there)."""
    fails = fails if isinstance(fails, Mapping) else {}
    files = files if isinstance(files, Mapping) else {}
    asked = files.get("contains") if isinstance(files.get("contains"), Mapping) else {}
    held = fails.get("contains") if isinstance(fails.get("contains"), Mapping) else {}
    out = [f"expect.files.contains {rel}: {t!r}" for rel, texts in held.items()
           if isinstance(asked.get(rel), list) and isinstance(texts, list) for t in texts if t in asked[rel]]
    for key in ("exists", "absent"):
        wanted = files.get(key) if isinstance(files.get(key), list) else []
        out += [f"expect.files.{key} {p!r}" for p in (fails.get(key) if isinstance(fails.get(key), list) else [])
                if p in wanted]
    return out


def _argv_words(argv: Any) -> str:
    """A check's argv as a person would type it (a program's directory left out)."""
    if not isinstance(argv, list) or not argv:
        return str(argv)
    return " ".join([str(argv[0]).rsplit("/", 1)[-1]] + [str(a) for a in argv[1:]])


# A session in this mode asks for nothing, so it denies nothing (Claude Code's --permission-mode)
NEVER_DENIES = "bypassPermissions"
# recorded on the layer (blocked_by, and results.json's unscorable_layers): never reword it
NEVER_DENIES_BLOCK = ("permission_mode bypassPermissions: the agent is never asked, so no call is denied and "
                      "expect.permissions.max_denied measures nothing; run it in default, acceptEdits or dontAsk "
                      "mode with allowed_tools (invocation.agent), or drop max_denied")


def score_permissions(trajectory: Mapping[str, Any], expect: Mapping[str, Any],
                      permission_mode: str | None = None) -> dict:
    """`permission_mode`: the session's (its transcript's init event, else the adapter's). Under
    bypassPermissions an asserted limit that was not exceeded is `unscorable`: no call could be
    denied, so the pass is vacuous; a denial that was measured still fails."""
    block = expect.get("permissions")
    asserted = isinstance(block, Mapping) and "max_denied" in block
    limit = block.get("max_denied") if asserted else 0
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ScorerInputError(f"expect.permissions.max_denied must be an integer >= 0, got {limit!r}")
    denials = [d for d in trajectory.get("permission_denials") or [] if isinstance(d, Mapping)]
    tools = [str(d.get("tool")) for d in denials]
    detail = {"denied": len(denials), "max_denied": limit, "denied_tools": tools, "asserted": asserted}
    if len(denials) > limit:
        why = f"{len(denials)} call(s) denied ({', '.join(tools)}); at most {limit} allowed" + (
            "" if asserted else " (the default in agent mode: set expect.permissions.max_denied to allow some)")
        return {"verdict": FAIL, "reason": why, **detail}
    if not asserted:
        return {"verdict": NA, "reason": "no call denied (not asserted by the case)", **detail}
    if permission_mode == NEVER_DENIES:
        return {"verdict": UNSCORABLE, "blocked_by": NEVER_DENIES_BLOCK, "reason": NEVER_DENIES_BLOCK,
                "permission_mode": permission_mode, **detail}
    return {"verdict": PASS, "reason": None, **detail}


# What the Claude Code CLI puts in the tool_result of an MCP call whose server went away mid-call: the
# MCP SDK's ConnectionClosed error (code -32000), the whole result "Connection closed" (the pinned CLI;
# "MCP error -32000: Connection closed" in the SDK's own words): a stdio server that exited, a remote one
# that dropped. Never a tool's own error that says so about its backend ("Connection closed by
# server."): that is the tool's answer, so the whole text must be the SDK's.
_MCP_GONE = re.compile(r"\s*(?:Error: )?(?:MCP error -32000: )?Connection closed\s*")


def mcp_server_crashes(trajectory: Mapping[str, Any]) -> list[dict]:
    """The MCP calls whose server closed its connection during the call: the app under test crashed
    (the CLI restarts the server and the agent goes on, so its answer and later calls may look
    fine). Each as {index, tool, server, error}."""
    out = []
    for i, call in enumerate(trajectory.get("tool_calls") or []):
        mcp = call.get("mcp") if isinstance(call, Mapping) else None
        err = call.get("error") if isinstance(mcp, Mapping) else None
        if isinstance(err, str) and _MCP_GONE.fullmatch(err):
            out.append({"index": i, "tool": call.get("name"), "server": mcp.get("server"), "error": err[:200]})
    return out


def mcp_crash_reason(crashes: list[dict]) -> str:
    first = crashes[0]
    more = f" (and {len(crashes) - 1} more call(s))" if len(crashes) > 1 else ""
    return (f"MCP server {first['server']!r} closed its connection during call {first['index'] + 1} "
            f"({first['tool']}: {first['error']!r}){more}: the server under test exited mid-call. Run it by hand "
            "and send it that call's arguments (the case's trajectory.json) to see why")


def session_error_reason(body: Any, exit_code: Any) -> str | None:
    """Why an attempt that exited 0 still failed: its result event says the session failed
    (`is_error` with a subtype other than `success`: error_max_turns, error_during_execution). Claude
    Code exits 1 there; a `command:` CLI that exits 0 must not pass on the files it left. (A failed
    model call, `is_error` with subtype `success`, is an infra error before any layer is scored.)"""
    if exit_code != 0 or not isinstance(body, Mapping) or body.get("is_error") is not True:
        return None
    return (f"the agent's result event says its session failed (subtype {body.get('subtype')!r}, is_error "
            "true) though it exited 0: never a pass, whatever its files show (Claude Code exits 1 there; "
            "make a command: agent do the same)")
