"""The `agent` invoker: a coding agent (Claude Code) run headless, once per attempt, in a fresh
copy of its workdir; its stream-json transcript is the case's trace.

`invocation.agent` (adapter-contract.md, "Agents"): `kind: claude-code`, `workdir` (copied fresh
for every case and repeat; a case's `input.fixture` names its own), `plugin_dirs`, `mcp_config`,
`permission_mode`, `allowed_tools`, `max_turns`, `timeout_s`, `sandbox: bwrap`, `env` (values by
`${VAR}` only), `program` (default `claude`) and `command` (the whole line for another agent
CLI, with `{input}` and `{workdir}` slots). The process is the cli invoker's: its own session,
the process group killed at the deadline, the environment exactly the allowlist (default PATH),
the `env` block and a fresh HOME per attempt (no user configuration, skill or login is read).

A conversation (`input.turns`) continues the first turn's session: `--resume <session_id>` in
the same workdir and HOME. A transcript that is cut off or malformed, or a model call the CLI
reports failed, is an attempt without an answer (retried, then `infra_error` naming why); a
transcript with a `result` event is an answer, whatever the agent did.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from ..core import secrets
from ..core.errors import AssayError
from ..core.jsonio import sha256_bytes
from . import templates, workdir as wd
from .fixture_digest import FIXTURE_DIGEST_KEY, FixtureDigests
from .fixture_paths import files_problems
from .agent_skills import plugin_not_loaded, skill_aliases, skill_files, skill_groups, skill_name_problems
from .cli import CliInvoker, RunInterrupted, _signal_name
from .outcome import CONNECTION, DROPPED, EXIT, RESPONSE, TIMEOUT, Outcome
from .procgroup import run_in_session

KINDS = ("claude-code",)
AGENT_KEYS = ("kind", "workdir", "plugin_dirs", "mcp_config", "permission_mode", "allowed_tools", "max_turns",
              "timeout_s", "sandbox", "env", "program", "command")
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
SANDBOXES = ("bwrap",)
BWRAP = "bwrap"


def _bad(msg: str, key: str) -> AssayError:
    return AssayError(f"pre-flight: invocation.agent.{key}: {msg}", 3, key=f"invocation.agent.{key}")


def _path(value: Any, key: str, app_root: Path, *, is_dir: bool) -> Path:
    if not isinstance(value, str) or not value:
        raise _bad("must be a path (relative to the app repo)", key)
    p = Path(value)
    p = (p if p.is_absolute() else app_root / p).resolve()
    if not (p.is_dir() if is_dir else p.is_file()):
        what = "directory" if is_dir else "file"
        raise _bad(f"{value!r} resolves to {p}, which is not a {what} (a path is relative to the app repo, "
                   f"{app_root})", key)
    return p


class AgentSpec:
    """`invocation.agent`, checked (exit 3 naming the key), paths resolved."""

    def __init__(self, block: Any, app_root: Path) -> None:
        if not isinstance(block, Mapping):
            raise AssayError("pre-flight: invocation.mode agent needs invocation.agent: {kind: claude-code, "
                             "workdir: <fixture dir>}", 3, key="invocation.agent")
        from ..core.suggest import did_you_mean
        for key in sorted(set(block) - set(AGENT_KEYS)):
            raise _bad(f"is not an agent key{did_you_mean(key, AGENT_KEYS)} (known: {', '.join(AGENT_KEYS)})", key)
        self.kind = block.get("kind", "claude-code")
        if self.kind not in KINDS:
            raise _bad(f"{self.kind!r} is not a supported transcript format ({', '.join(KINDS)})", "kind")
        self.app_root = app_root
        self.workdir = _path(block.get("workdir"), "workdir", app_root, is_dir=True)
        dirs = block.get("plugin_dirs") or []
        if not isinstance(dirs, list):
            raise _bad("must be a list of plugin directories", "plugin_dirs")
        self.plugin_dirs = [_path(d, f"plugin_dirs[{i}]", app_root, is_dir=True) for i, d in enumerate(dirs)]
        self.mcp_config = (_path(block["mcp_config"], "mcp_config", app_root, is_dir=False)
                           if block.get("mcp_config") is not None else None)
        # as written (a relative path is relative to the app repo): what the recorded argv names
        self.written = {"plugin_dirs": list(dirs), "mcp_config": block.get("mcp_config")}
        self.permission_mode = block.get("permission_mode")
        if self.permission_mode is not None and self.permission_mode not in PERMISSION_MODES:
            from ..core.suggest import did_you_mean as dym
            raise _bad(f"{self.permission_mode!r} is not a permission mode{dym(str(self.permission_mode), PERMISSION_MODES)}"
                       f" ({', '.join(PERMISSION_MODES)})", "permission_mode")
        tools = block.get("allowed_tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise _bad("must be a list of tool rules, e.g. [Read, Edit, \"Bash(pytest *)\"]", "allowed_tools")
        self.allowed_tools = list(tools)
        self.max_turns = block.get("max_turns")
        if self.max_turns is not None and (not isinstance(self.max_turns, int) or isinstance(self.max_turns, bool)
                                           or self.max_turns < 1):
            raise _bad("must be an integer >= 1", "max_turns")
        self.timeout_s = block.get("timeout_s")
        if self.timeout_s is not None and (isinstance(self.timeout_s, bool) or not isinstance(self.timeout_s, (int, float))
                                           or self.timeout_s <= 0):
            raise _bad("must be a number of seconds > 0", "timeout_s")
        self.sandbox = block.get("sandbox")
        if self.sandbox is not None and self.sandbox not in SANDBOXES:
            raise _bad(f"{self.sandbox!r} is not a sandbox ({', '.join(SANDBOXES)}; absent: none)", "sandbox")
        env = block.get("env") or {}
        if not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise _bad("must map variable names to strings", "env")
        for name, value in env.items():
            if not secrets.env_refs(value) and secrets.secret_shaped_name(name):
                raise _bad(f"{name} holds a literal value; a secret is given by reference only: "
                           f"{name}: \"${{{name}}}\" (never written into adapter.yaml)", f"env.{name}")
        self.env = dict(env)
        self.program = block.get("program") or "claude"
        if not isinstance(self.program, str):
            raise _bad("must be the CLI's name on PATH or its path", "program")
        cmd = block.get("command")
        if cmd is not None and (not isinstance(cmd, list) or not cmd or not all(isinstance(a, str) for a in cmd)):
            raise _bad("must be a non-empty list of strings (argv, no shell) with {input} and {workdir} slots",
                       "command")
        self.command = cmd

    def template(self, *, written: bool = False) -> list[str]:
        """The command line with `<user turn>` where the case's input goes (the cli invoker fills it).
        `written`: the plugin dirs and MCP config as the adapter writes them (what a run records and a
        replay keys: the app and its cache moved to another checkout still replay), else resolved."""
        if self.command is not None:
            return [a.replace("{input}", "<user turn>") for a in self.command]
        argv = [self.program, "-p", "<user turn>", "--output-format", "stream-json", "--verbose"]
        for d in (self.written["plugin_dirs"] if written else self.plugin_dirs):
            argv += ["--plugin-dir", str(d)]
        if self.mcp_config is not None:
            argv += ["--mcp-config", str(self.written["mcp_config"] if written else self.mcp_config)]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        if self.max_turns is not None:
            argv += ["--max-turns", str(self.max_turns)]
        if self.allowed_tools:
            argv += ["--allowedTools", ",".join(self.allowed_tools)]
        return argv


MCP_DOWN = ("failed", "needs-auth")


def mcp_not_connected(trajectory: Mapping[str, Any]) -> str | None:
    """Why the attempt ran without part of the app: an MCP server the session was given (by
    `mcp_config` or a plugin) that the transcript's init event reports `failed` or `needs-auth`.
    The agent then has none of its tools, so nothing the case asks of them is measured; a call to
    one is refused as "No such tool available". None when every server connected."""
    down = [s for s in trajectory.get("mcp_servers") or []
            if isinstance(s, Mapping) and s.get("status") in MCP_DOWN]
    if not down:
        return None
    names = ", ".join(f"{s.get('name')!r} ({s.get('status')})" for s in down)
    return (f"MCP server {names} did not connect: the agent had none of its tools. Run the server's command "
            "(invocation.agent.mcp_config) by hand in a copy of the fixture, where the agent starts it: give "
            "its path absolute or as ${VAR}, and its variables in invocation.env_allowlist")


def fixture_changed(fixture: Path, paths: list[str]) -> str:
    """Why an attempt is not scored when its fixture changed during the run: the workdir's diff
    (`expect.files`) compares with the fixture as it is now, so an agent that wrote the same change
    into the fixture and its copy would pass `unchanged`, and every later copy starts from it."""
    shown = ", ".join(paths[:5]) + (f" (+{len(paths) - 5} more)" if len(paths) > 5 else "")
    return (f"the fixture {fixture} changed during the run ({shown}): something outside the workdir wrote into "
            "it (an unsandboxed agent can; invocation.agent.sandbox: bwrap makes all but its workdir read-only), "
            "so the workdir's diff against it is no evidence. Restore the fixture (e.g. git checkout) and run again")


def fixture_of(case: Mapping[str, Any], spec: AgentSpec) -> Path:
    """The fixture a case runs in: its `input.fixture` (relative to the app repo), else the adapter's."""
    inp = case.get("input") if isinstance(case.get("input"), Mapping) else {}
    own = inp.get("fixture")
    if isinstance(own, str) and own:
        p = Path(own)
        return (p if p.is_absolute() else spec.app_root / p).resolve()
    return spec.workdir


class AgentInvoker(CliInvoker):
    mode = "agent"

    def __init__(self, invocation: Mapping[str, Any], env: Mapping[str, str], *, environ: Mapping[str, str],
                 timeout_s: float, app_root: Path, area: Path, state_dir: Path, declared: list[str] = (),
                 resolve: bool = True) -> None:
        spec = AgentSpec(invocation.get("agent"), app_root)
        self.spec = spec
        self.program_key = "invocation.agent.command[0]" if spec.command is not None else (
            "invocation.agent.program" if invocation["agent"].get("program") else
            "invocation.agent.program (default claude, the Claude Code CLI)")
        self.declared = list(declared)
        cli_inv = {"command": spec.template(), "cwd": "scratch", "stdin": "none",
                   "env_allowlist": invocation.get("env_allowlist") or ["PATH"],
                   "identity_map": invocation.get("identity_map") or {}}
        super().__init__(cli_inv, env, environ=environ, timeout_s=spec.timeout_s or timeout_s,
                         app_root=app_root, area=area, state_dir=state_dir, resolve=resolve)
        self.command_recorded = spec.template(written=True)   # the paths as written; sent resolved
        self.base_env.update({k: secrets.expand(v, env) for k, v in spec.env.items()})
        self._copied: dict[str, int] = {}   # an attempt's workdir -> when its copy was done (wd.copy_fixture)
        self._stamps: dict[str, dict] = {}  # a fixture -> its files before its first copy in this run (wd.stamp)
        self.plan_cases: list = []           # the run's cases (the pre-flight's): each check run on the fixture
        self._on_fixture: dict[str, dict] = {}   # a case id -> its check_on_fixture fact (invoke.fixture_check)
        self.fixture_digests = FixtureDigests()   # each fixture's files read once a run (the manifest's case hashes too)
        # {arm, skills}: the skills other arms' plugin dirs define that this run's arm lacks (set by the pre-flight)
        self.arm_skills: dict[str, Any] | None = None
        self._skill_files: dict[str, dict] = {}   # a fixture -> agent_skills.skill_files (read once a run)
        self.bwrap = None
        if spec.sandbox == "bwrap" and resolve:
            self.bwrap = shutil.which(BWRAP)
            if self.bwrap is None:
                raise AssayError("pre-flight: invocation.agent.sandbox bwrap needs bubblewrap (`bwrap` on PATH; "
                                 "Debian/Ubuntu: apt-get install bubblewrap); or drop the key to run unsandboxed",
                                 3, key="invocation.agent.sandbox")

    def health(self, *, resume: bool) -> dict[str, Any]:
        """The cli invoker's pre-flight, then each case's check once on the untouched fixture (§5.4)."""
        out = super().health(resume=resume)
        from .fixture_check import check_fixtures
        self._on_fixture = check_fixtures(self.plan_cases, lambda c: fixture_of(c, self.spec),
                                          lambda c: self.prepare(c, "fixture-check")[0]["env"], self.area,
                                          self.bwrap is not None, self.registry, self._stamp)
        return out

    def _stamp(self, fixture: Path) -> None:
        with self._lock:
            if str(fixture) not in self._stamps:
                self._stamps[str(fixture)] = wd.stamp(fixture)

    def manifest(self) -> dict[str, Any]:
        s = self.spec
        return {**super().manifest(), "agent": {
            "kind": s.kind, "workdir": str(s.workdir), "plugin_dirs": [str(d) for d in s.plugin_dirs],
            "mcp_config": str(s.mcp_config) if s.mcp_config else None, "permission_mode": s.permission_mode,
            "allowed_tools": s.allowed_tools, "max_turns": s.max_turns, "sandbox": s.sandbox,
            "env": sorted(s.env), "command_override": s.command is not None}}

    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None,
                session: Any = templates.UNSET):
        wire, recorded = super().prepare(case, uuid, extra_headers, session)
        if session is not templates.UNSET and session is not None and self.spec.command is None:
            wire["argv"] += ["--resume", str(session)]
            recorded["argv"] = list(recorded["argv"]) + ["--resume", str(session)]
        expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
        wire["fixture"] = fixture_of(case, self.spec)
        wire["files"] = expect.get("files") if isinstance(expect.get("files"), Mapping) else None
        wire["check"] = expect.get("check") if isinstance(expect.get("check"), Mapping) else None
        recorded["mode"] = "agent"
        # what the agent is asked with beside its argv, as replay keys and rescore compares it: the fixture
        # the attempt starts from (a case's `input.fixture`, else `agent.workdir`), relative to the app repo
        # (the app and its fixtures moved together still replay), and the digest of its files (a bug planted
        # in it, its check program edited: another request, never the old fixture's workdir scored), and the
        # `env` block as written, `${NAME}` unresolved: an edited value is another request, and the values
        # of the `${NAME}`s it names are bound by digest (assay.replay.key.Binding), never a
        # credential-shaped entry's
        fixture = os.path.relpath(Path(wire["fixture"]).resolve(), self.spec.app_root.resolve())
        recorded["fixture"] = fixture.replace(os.sep, "/")
        recorded[FIXTURE_DIGEST_KEY] = self.fixture_digests(wire["fixture"])
        if self.spec.env:
            recorded["agent_env"] = dict(sorted(self.spec.env.items()))
        return wire, recorded

    def _sandboxed(self, argv: list[str], scratch: Path, work: Path) -> list[str]:
        """bubblewrap: the whole filesystem read-only (the fixture, plugins and MCP servers stay
        readable where they are), the attempt's dir (workdir, HOME, TMPDIR) writable, the network as
        it is (the model endpoint stays reachable)."""
        s = str(scratch)
        return [self.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--bind", s, s, "--die-with-parent", "--new-session", "--chdir", str(work), "--"] + argv

    def send(self, wire: dict) -> Outcome:
        if self._interrupted:
            raise RunInterrupted("the runner was interrupted")
        if not self._ready:
            self.health(resume=False)
        scratch, scratch_rel = self._scratch_for(wire)
        wire["sends"] += 1
        work, home = scratch / "work", scratch / "home"
        fixture = Path(wire["fixture"])
        if not work.exists():
            if not fixture.is_dir():
                return Outcome(CONNECTION, error=f"the case's fixture {fixture} is not a directory")
            self._stamp(fixture)
            copied = wd.copy_fixture(fixture, work)
            with self._lock:   # a conversation's later turns measure the same copy
                self._copied[str(work)] = copied
            home.mkdir(exist_ok=True)
        env = dict(wire["env"], HOME=str(home))
        if self.bwrap:   # the rest of the filesystem is read-only: temporary files go to the attempt's dir
            (scratch / "tmp").mkdir(exist_ok=True)
            env["TMPDIR"] = str(scratch / "tmp")
        argv = [a.replace("{workdir}", str(work)) for a in wire["argv"]]
        if self.bwrap:
            argv = self._sandboxed(argv, scratch, work)
        r = run_in_session(argv, env=env, cwd=str(work), stdin_bytes=None, timeout_s=self.timeout_s,
                           registry=self.registry)
        if self._interrupted:
            raise RunInterrupted("the runner was interrupted")
        from ..traces.claude_code import read_stream
        got = read_stream(r.stdout, declared=self.declared)
        result_ev = next((e for e in reversed(got["events"]) if e.get("type") == "result"), None)
        cli: dict[str, Any] = {
            "exit_code": r.returncode if r.returncode is not None and r.returncode >= 0 else None,
            "signal": _signal_name(r.signal) if not r.timed_out else None, "timed_out": r.timed_out,
            "group_killed": r.group_killed or r.timed_out, "stdout_bytes": r.stdout_bytes,
            "stdout_truncated": r.stdout_truncated, "stderr": r.stderr.decode("utf-8", "replace"),
            "stderr_bytes": r.stderr_bytes, "stderr_truncated": r.stderr_truncated, "scratch": scratch_rel,
            "sandbox": self.spec.sandbox, "transcript": got["status"]}
        common = dict(latency_ms=r.latency_ms, cli=cli)
        if r.spawn_error:
            return Outcome(CONNECTION, error=f"cannot start the agent: {r.spawn_error}", **common)
        if r.timed_out:
            return Outcome(TIMEOUT, error=f"the agent did not finish within {self.timeout_s:g} s; its process "
                           "group was killed", **common)
        if r.returncode is not None and r.returncode < 0:
            return Outcome(DROPPED, error=f"the agent was killed by {_signal_name(r.signal)}", **common)
        if r.stdout_truncated:
            return Outcome(EXIT, status=r.returncode, error="the transcript exceeded the output cap and was cut "
                           f"({r.stdout_bytes} bytes): not scored from a partial transcript", **common)
        if got["status"] != "ok":
            tail = " ".join(cli["stderr"].split())[-200:]
            return Outcome(EXIT, status=r.returncode, error=f"transcript incomplete: {got['reason']} (exit code "
                           f"{r.returncode}{'; stderr: ' + tail if tail else ''})", **common)
        text = result_ev.get("result") if isinstance(result_ev.get("result"), str) else None
        if result_ev.get("is_error") is True and (result_ev.get("subtype") == "success"
                                                  or result_ev.get("terminal_reason") == "api_error"):
            return Outcome(EXIT, status=r.returncode, error=f"the agent's model call failed: {(text or '')[:200]}",
                           **common)
        down = plugin_not_loaded(got["trajectory"]) or mcp_not_connected(got["trajectory"])
        if down:
            return Outcome(EXIT, status=r.returncode, error=down, **common)
        with self._lock:
            copied_ns, before = self._copied.get(str(work)), self._stamps.get(str(fixture))
        listing = wd.tree(fixture)
        tampered = wd.changed_since(before, listing) if before is not None else []
        if tampered:
            return Outcome(EXIT, status=r.returncode, error=fixture_changed(fixture, tampered), **common)
        measured = wd.measure(fixture, work, wire.get("files"), wire.get("check"), env, self.registry, copied_ns,
                              listing)
        if wire.get("check") and wire["case_id"] in self._on_fixture:   # the same check on the untouched fixture
            measured["check_on_fixture"] = self._on_fixture[wire["case_id"]]
        traj = got["trajectory"]
        aliases = skill_aliases(skill_groups(self.spec, [fixture]), traj.get("skills") or [])
        if aliases:   # a skill whose frontmatter name is not its directory's: either name is the skill
            traj["skill_aliases"] = aliases
        if traj.get("offered_skills") is not None:   # what the skills layer names for a skill never offered
            if str(fixture) not in self._skill_files:
                self._skill_files[str(fixture)] = skill_files(self.spec, [fixture])
            traj["skill_files"] = self._skill_files[str(fixture)]
            if self.arm_skills is not None:
                traj["skills_left_out_by_arm"] = self.arm_skills
        body = {"result": text, "session_id": traj.get("session_id"), "subtype": result_ev.get("subtype"),
                "is_error": result_ev.get("is_error"), "num_turns": result_ev.get("num_turns")}
        withheld = None if text is not None else f"the agent stopped without an answer ({result_ev.get('subtype')})"
        out = Outcome(RESPONSE, status=r.returncode, body_text=text, body_json=body, json_ok=True,
                      body_sha=sha256_bytes(r.stdout), answer_withheld=withheld, **common)
        out.agent = {"status": got["status"], "reason": got["reason"], "trajectory": traj,
                     "events": got["events"], "workdir": measured}
        return out

    def finish_case(self, case_id: str, passed: bool) -> None:
        prefix = str(self.area / "cases" / case_id) + os.sep
        with self._lock:
            for key in [k for k in self._copied if k.startswith(prefix)]:
                del self._copied[key]
        super().finish_case(case_id, passed)


def agent_case_problems(case: Mapping[str, Any], spec: AgentSpec, known_skills: set[str],
                        path_env: str | None, *, programs: bool = True,
                        arm_only: set[str] = frozenset()) -> list[tuple[str, str]]:
    """(key, message) for what would make an agent case measure nothing: a fixture that is not a
    directory, a skill no plugin or workdir defines, a misspelt `unchanged` or `absent` path
    (fixture_paths.files_problems), a check program that cannot be found (`programs`: False for a
    replay, where the check is never run: its recorded result is scored). A skill only another arm's
    plugin dirs define (`arm_only`) is no problem: an arm runs without it on purpose. The
    linter (`--adapter`) and the pre-flight ask this one function."""
    out: list[tuple[str, str]] = []
    fixture = fixture_of(case, spec)
    if not fixture.is_dir():
        out.append(("input.fixture", f"the fixture {fixture} is not a directory (a path is relative to the app repo)"))
    expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
    skills = expect.get("skills") if isinstance(expect.get("skills"), Mapping) else {}
    out += skill_name_problems(skills, spec, known_skills, arm_only, fixture)
    files = expect.get("files") if isinstance(expect.get("files"), Mapping) else {}
    out += files_problems(files, fixture)
    check = expect.get("check") if isinstance(expect.get("check"), Mapping) else None
    if check is not None and fixture.is_dir() and programs:
        argv = wd.check_argv(check)
        if argv and wd.resolve_program(argv[0], fixture, path_env) is None:
            out.append(("expect.check.command", f"the check's program {argv[0]!r} is not found on the agent's "
                        "PATH nor in the fixture (a path with a slash is relative to the workdir)"))
    return out


def os_path(env: Mapping[str, str]) -> str | None:
    return env.get("PATH", os.defpath)
