"""The `cli` invoker: `invocation.command` run once per attempt, in its own session.

argv is `command` with the placeholders filled (no shell); `stdin: user_turn` also writes
the user turn on stdin; `cwd: scratch` gives each attempt a fresh directory in the run's
scratch area (outside the app repo), a path runs it there. The child's environment is
exactly the `env_allowlist` variables the runner has, the `${VAR}`s the invocation names,
and `TRACEPARENT` when the run correlates traces by `traceparent-echo`.

Exit codes (runner contract §17): exit 0 is a response (the `status` every layer sees is
the exit code); a non-zero exit is an `exit` outcome, retried and then `infra_error` like a
5xx, unless the case sets `expect.exit_code` (then every exit is a response and the `http`
layer compares the code); the deadline is a `timeout` (the whole process group is killed);
death by a signal the runner did not send is `dropped` (a crash); a command that cannot be
started is `connection`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import secrets, writer
from ..core.errors import AssayError
from ..core.jsonio import sha256_bytes
from . import templates
from .http import placeholder_values
from .outcome import CONNECTION, DROPPED, EXIT, RESPONSE, TIMEOUT, Outcome, decode_body
from .orphans import GroupRegistry
from .procgroup import OUTPUT_CAP_BYTES, grace_for, run_in_session

SCRATCH_ENV = "ASSAY_SCRATCH_DIR"
# Allowlisted variables whose values are not treated as secrets (every other allowlisted value
# is redacted from the artifacts like a `${VAR}`).
PLAIN_ENV = secrets.PLAIN_ENV
TRACE_ENV = {"traceparent": "TRACEPARENT", "tracestate": "TRACESTATE"}


def allowlist(invocation: Mapping[str, Any]) -> list[str]:
    names = invocation.get("env_allowlist") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise AssayError("pre-flight: invocation.env_allowlist must be a list of variable names", 3,
                         key="invocation.env_allowlist")
    return names


def allowlisted_secrets(invocation: Mapping[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Allowlisted variables the runner has whose values count as secrets (redacted everywhere)."""
    return {n: environ[n] for n in allowlist(invocation) if n not in PLAIN_ENV and environ.get(n)}


def scratch_area(run_id: str, out: Path, environ: Mapping[str, str]) -> Path:
    """The run's scratch area: <ASSAY_SCRATCH_DIR or the system temp dir>/assay-scratch-<uid>/<run id>-<hash>.

    The hash of the run dir's path keeps two state dirs with the same run id apart, and lets
    `--resume` find the same area again."""
    root = environ.get(SCRATCH_ENV) or os.path.join(tempfile.gettempdir(), f"assay-scratch-{os.getuid()}")
    digest = hashlib.sha256(str(out).encode("utf-8")).hexdigest()[:8]
    return Path(os.path.abspath(root)) / f"{run_id}-{digest}"


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def fill_arg(arg: str, values: Mapping[str, Any]) -> str:
    for mark, value in values.items():
        if mark in arg:
            arg = arg.replace(mark, "" if value is None or value is templates.UNSET else str(value))
    return arg


def fill_argv(args: list[str], values: Mapping[str, Any]) -> list[str]:
    """Each argument filled; an argument that is exactly an unset placeholder (`<session>` on a
    conversation's turn 1) is left out, like an unset entry of a JSON body."""
    return [fill_arg(a, values) for a in args if not (a in values and values[a] is templates.UNSET)]


class CliInvoker:
    mode = "cli"

    def __init__(self, invocation: Mapping[str, Any], env: Mapping[str, str], *, environ: Mapping[str, str],
                 timeout_s: float, app_root: Path, area: Path, state_dir: Path, resolve: bool = True) -> None:
        # resolve=False: the request is only rendered as a run would record it (rescore), never sent,
        # so the program is not looked up (the recorded argv names it as the adapter wrote it)
        if os.name != "posix":  # sessions and process-group kills are what make a timeout hold
            raise AssayError("pre-flight: invocation.mode cli needs a POSIX system (Linux, macOS): the runner "
                             "kills a command's whole process group, which Windows does not have", 3,
                             key="invocation.mode")
        command = invocation.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            raise AssayError("pre-flight: invocation.command must be a non-empty list of strings (argv, no "
                             "shell), e.g. [python3, agent.py, \"<user turn>\"]", 3, key="invocation.command")
        self.command_recorded = list(command)
        self.conversation_template = self.command_recorded   # what <uuid>/<session> must appear in
        self.command_wire = [secrets.expand(a, env) for a in command]
        self.timeout_s = float(timeout_s)
        self.stdin_mode = invocation.get("stdin") or "none"
        if self.stdin_mode not in ("user_turn", "none"):
            raise AssayError(f"pre-flight: invocation.stdin must be user_turn or none (got {self.stdin_mode!r})",
                             3, key="invocation.stdin")
        self.app_root = app_root
        self.area = area
        cwd = invocation.get("cwd") or "scratch"
        self.cwd_recorded = cwd
        if cwd == "scratch":
            self.cwd: Path | None = None
            if _inside(area, app_root) or _inside(area, state_dir):
                raise AssayError(f"pre-flight: the scratch area {area} is inside the app repo {app_root}; an "
                                 f"agent started there would find and change the repo. Set {SCRATCH_ENV} to a "
                                 "directory outside it", 3, key="invocation.cwd", env=SCRATCH_ENV)
        else:
            path = Path(secrets.expand(cwd, env))
            self.cwd = (path if path.is_absolute() else app_root / path).resolve()
            if not self.cwd.is_dir():
                raise AssayError(f"pre-flight: invocation.cwd {cwd!r} resolves to {self.cwd}, which is not a "
                                 "directory (a path is relative to the app repo; or use `scratch`)", 3,
                                 key="invocation.cwd")
        names = allowlist(invocation)
        base = {n: environ[n] for n in names if n in environ}
        self.allowlisted_unset = sorted(n for n in names if n not in environ)
        base.update({n: env[n] for n in sorted(secrets.env_refs(invocation)) if n in env})
        self.base_env = base
        self.env = env
        self.identity_map = invocation.get("identity_map") or {}
        self.program = self._resolve_program() if resolve else self.command_wire[0]
        self.registry = GroupRegistry(area / "pgroups")
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = {}
        self._dirs: dict[tuple[str, str], tuple[Path, str]] = {}   # (case id, uuid) -> its scratch dir
        self._ready = False
        self._interrupted = False

    # ---- pre-flight ---------------------------------------------------------------
    program_key = "invocation.command[0]"   # the key a user wrote the program under (the agent invoker's own)

    def _resolve_program(self) -> str:
        prog = self.command_wire[0]
        shown = self.command_recorded[0]
        key = self.program_key
        if "/" in prog:
            path = Path(prog) if os.path.isabs(prog) else self.app_root / prog
            if path.is_file() and os.access(path, os.X_OK):
                return str(path.resolve())
            raise AssayError(f"pre-flight: {key} {shown!r} resolves to {path}, which is not an "
                             "executable file (a relative path is relative to the app repo)", 3,
                             key=key.split(" ", 1)[0].split("[", 1)[0])
        search = self.base_env.get("PATH")
        found = shutil.which(prog, path=search if search is not None else os.defpath)
        if found is None:
            where = (f"the child's PATH ({search})" if search is not None
                     else f"the default PATH {os.defpath} (PATH is not in invocation.env_allowlist)")
            fix = ("put it on that PATH" if search is not None else "add PATH to env_allowlist")
            raise AssayError(f"pre-flight: {key} {shown!r} is not found on {where}; {fix}, or give "
                             f"its path (e.g. ./{prog}: a relative path is relative to the app repo, {self.app_root})",
                             3, key=key.split(" ", 1)[0].split("[", 1)[0])
        return os.path.abspath(found)

    def health(self, *, resume: bool) -> dict[str, Any]:
        """Pre-flight for a real run: the scratch area exists; orphans of an earlier runner are killed."""
        self._make_area()
        killed = self.registry.sweep()
        self._ready = True
        if self.allowlisted_unset:  # a typo in env_allowlist shows up as a failing command: say it first
            sys.stderr.write("assay: invocation.env_allowlist names variable(s) this environment does not set, "
                             f"so the command will not have them: {', '.join(self.allowlisted_unset)}\n")
        return {"checked": True, "reason": "cli mode: the command resolved", "program": self.program,
                "orphan_groups_killed": len(killed), "allowlisted_unset": self.allowlisted_unset}

    def _make_area(self) -> None:
        """The area and its parents are real directories of this user (a shared temp dir is
        writable by others: a planted symlink or foreign directory is refused, exit 3)."""
        ours = [self.area, self.area / "pgroups"]
        if self.area.parent.name.startswith("assay-scratch-"):  # the default root in the shared temp dir
            ours.insert(0, self.area.parent)
        for path in ours:
            try:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            except OSError as exc:
                raise AssayError(f"pre-flight: cannot create the scratch area {path}: {exc}; set {SCRATCH_ENV} "
                                 "to a writable directory", 3, key="invocation.cwd", env=SCRATCH_ENV)
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
                raise AssayError(f"pre-flight: the scratch area {path} is a symlink or not owned by this user; "
                                 f"remove it or set {SCRATCH_ENV} to a directory of your own", 3,
                                 key="invocation.cwd", env=SCRATCH_ENV)

    def manifest(self) -> dict[str, Any]:
        return {"command": self.command_recorded, "stdin": self.stdin_mode, "cwd": self.cwd_recorded,
                "child_env": sorted(self.base_env), "identity_env": sorted(map(str, self.identity_map.values())),
                "scratch_area": str(self.area),
                "output_cap_bytes": OUTPUT_CAP_BYTES, "kill_grace_s": grace_for(self.timeout_s)}

    # ---- one attempt ----------------------------------------------------------------
    def prepare(self, case: Mapping[str, Any], uuid: str, extra_headers: Mapping[str, str] | None = None,
                session: Any = templates.UNSET):
        values = placeholder_values(case, uuid, session)
        env = dict(self.base_env)
        trace_env = {TRACE_ENV[k.lower()]: v for k, v in (extra_headers or {}).items() if k.lower() in TRACE_ENV}
        env.update(trace_env)
        identity_env = self._identity_env(case)
        env.update(identity_env)
        expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
        code = expect.get("exit_code")
        wire = {"argv": [self.program] + fill_argv(self.command_wire[1:], values),
                "stdin": (values["<user turn>"] or "").encode("utf-8") if self.stdin_mode == "user_turn" else None,
                "env": env, "case_id": str(case.get("id")), "uuid": uuid, "sends": 0,
                "expect_exit_code": code if isinstance(code, int) and not isinstance(code, bool) else None}
        recorded = {"mode": "cli", "argv": fill_argv(self.command_recorded, values),
                    "stdin": self.stdin_mode, "cwd": self.cwd_recorded, "env": sorted(env), **trace_env}
        ident = case.get("identity") if isinstance(case.get("identity"), Mapping) else {}
        if identity_env:   # who asked, as replay and rescore key it: identity_map values, a token by its name only
            recorded["identity_env"] = {k: (f"${{{k}}}" if k == ident.get("token_env") else v)
                                        for k, v in sorted(identity_env.items())}
        return wire, recorded

    def retrace(self, wire: dict, recorded: dict, trace_headers: Mapping[str, str]) -> bool:
        """Put a retry's own trace context (a fresh `TRACEPARENT`) on a prepared run, in place."""
        trace_env = {TRACE_ENV[k.lower()]: v for k, v in trace_headers.items() if k.lower() in TRACE_ENV}
        wire["env"].update(trace_env)
        recorded.update(trace_env)
        return True

    def _identity_env(self, case: Mapping[str, Any]) -> dict[str, str]:
        """cli: `identity_map` names the environment variables that carry the case's identity
        (`identity.token_env: NAME` passes the runner's NAME through under its own name)."""
        ident = case.get("identity")
        out: dict[str, str] = {}
        if not isinstance(ident, Mapping):
            return out
        for key, value in ident.items():
            if key == "token_env":
                out[str(value)] = self.env[value]
            elif self.identity_map.get(key):
                out[str(self.identity_map[key])] = (",".join(map(str, value)) if isinstance(value, list)
                                                    else value if isinstance(value, str) else json.dumps(value))
        return out

    def _scratch_for(self, wire: dict) -> tuple[Path, str]:
        """A fresh dir per attempt. The turns of one conversation attempt share the uuid (a retry
        restarts it with a new one) and so share its dir; a resent request gets a new one."""
        key = (wire["case_id"], wire["uuid"])
        with self._lock:
            known = self._dirs.get(key) if wire["sends"] == 0 else None
        if known is not None:
            return known
        made = self._scratch_dir(wire["case_id"])
        with self._lock:
            self._dirs[key] = made
        return made

    def _scratch_dir(self, case_id: str) -> tuple[Path, str]:
        with self._lock:
            n = self._attempts.get(case_id, 0) + 1
            self._attempts[case_id] = n
        case_area = self.area / "cases" / case_id
        if n == 1 and (case_area.exists() or case_area.is_symlink()):  # an interrupted runner's: start over
            writer.remove_tree(case_area)
        path = case_area / str(n)
        path.mkdir(parents=True)
        return path, f"cases/{case_id}/{n}"

    def interrupt(self) -> None:
        """The runner is being stopped (SIGINT/SIGTERM): kill every running command now. The
        cases they belonged to end without a verdict.json (`--resume` redoes them)."""
        self._interrupted = True
        self.registry.kill_live()

    def send(self, wire: Mapping[str, Any]) -> Outcome:
        if self._interrupted:
            raise RunInterrupted("the runner was interrupted")
        if not self._ready:
            self.health(resume=False)
        scratch_rel = None
        cwd = self.cwd
        if cwd is None:
            cwd, scratch_rel = self._scratch_for(wire)
        wire["sends"] += 1
        r = run_in_session(wire["argv"], env=wire["env"], cwd=str(cwd), stdin_bytes=wire["stdin"],
                           timeout_s=self.timeout_s, registry=self.registry)
        if self._interrupted:  # killed by the runner's own stop, not an answer of the app
            raise RunInterrupted("the runner was interrupted")
        cli: dict[str, Any] = {
            "exit_code": r.returncode if r.returncode is not None and r.returncode >= 0 else None,
            "signal": _signal_name(r.signal) if not r.timed_out else None, "timed_out": r.timed_out,
            "group_killed": r.group_killed or r.timed_out, "stdout_bytes": r.stdout_bytes,
            "stdout_truncated": r.stdout_truncated, "stderr": r.stderr.decode("utf-8", "replace"),
            "stderr_bytes": r.stderr_bytes, "stderr_truncated": r.stderr_truncated, "scratch": scratch_rel}
        if r.pipe_held:
            cli["note"] = ("stdout/stderr stayed open after the process group was gone (a process that left "
                           "the session still holds it)")
        text, doc, ok, notes = decode_body(r.stdout, False)
        withheld = None
        if r.stdout_truncated:
            doc, ok = None, False
            withheld = (f"stdout exceeded the {OUTPUT_CAP_BYTES}-byte cap ({r.stdout_bytes} bytes); the "
                        "answer is not scored from a cut-off output")
            notes.append(withheld)
        common = dict(latency_ms=r.latency_ms, cli=cli)
        if r.spawn_error:
            return Outcome(CONNECTION, error=f"cannot start the command: {r.spawn_error}", **common)
        if r.timed_out:
            cli["stdout"] = text
            return Outcome(TIMEOUT, error=f"no exit within {self.timeout_s:g} s; the process group was killed",
                           **common)
        if r.returncode is not None and r.returncode < 0:
            cli["stdout"] = text
            return Outcome(DROPPED, error=f"the command was killed by {_signal_name(r.signal)}", **common)
        expected = wire.get("expect_exit_code")
        if r.returncode != 0 and expected is None:
            cli["stdout"] = text
            tail = writer.clip(" ".join(cli["stderr"].split()), 200, tail=True)  # what the command said
            return Outcome(EXIT, status=r.returncode, error=f"the command exited with code {r.returncode}"
                           + (f" (stderr: {tail})" if tail else " (no stderr)"), **common)
        return Outcome(RESPONSE, status=r.returncode, body_text=text, body_json=doc, json_ok=ok, notes=notes,
                       body_sha=sha256_bytes(r.stdout), answer_withheld=withheld, **common)

    # ---- after the case / the run ------------------------------------------------------
    def finish_case(self, case_id: str, passed: bool) -> None:
        """A passing case's scratch dirs are removed; any other case's are kept for inspection."""
        with self._lock:
            for key in [k for k in self._dirs if k[0] == case_id]:
                del self._dirs[key]
        case_area = self.area / "cases" / case_id
        if passed and self.cwd is None and (case_area.exists() or case_area.is_symlink()):
            writer.remove_tree(case_area)

    def close(self) -> None:
        """Kill any group still running (an interrupted run); drop the area if nothing is kept in it."""
        self.registry.close()
        for sub in (self.area / "pgroups", self.area / "cases", self.area):
            try:
                sub.rmdir()
            except OSError:
                pass


class RunInterrupted(Exception):
    """Raised in a case worker when the runner is stopped: the case must not get a verdict."""


def stop_on_signals(invoker: CliInvoker) -> Callable[[], None]:
    """SIGINT/SIGTERM kill the running commands at once, then stop the run like Ctrl-C (exit 130).

    Without this a SIGTERM (a cancelled CI job) would end the runner and leave its commands
    running in their own sessions. Returns the function that restores the previous handlers."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum, frame):
        invoker.interrupt()
        raise KeyboardInterrupt
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)
    return restore


def _signal_name(num: int | None) -> str | None:
    if num is None:
        return None
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
