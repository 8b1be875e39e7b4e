"""Each agent case's `expect.check` run once on the UNTOUCHED fixture, before the first case
(runner contract §5.4, "A check the untouched fixture passes").

A check that gives its expected exit code on the fixture as it is cannot tell an agent that did
nothing from one that did the work. Each distinct (fixture, check command, timeout, expected exit
code, environment) runs once, in a fresh copy made as a case's is (`workdir.copy_fixture` into the
run's scratch area, the case's environment with its own HOME, TMPDIR there when the agent is
sandboxed, the check itself unsandboxed as a case's is, the check's own timeout). Its result, with
the case's `expect.files` entries the untouched fixture fails (`fixture_paths.fixture_fails`), is a
fact of each case's workdir facts (`check_on_fixture`); `assay.score.agent.score_check` decides
from it, live, in replay and in rescore alike.

Measurement only: nothing here decides a verdict.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core import writer
from . import workdir as wd
from .fixture_paths import fixture_fails

OUTPUT_CAP = 2000   # characters of the check's output on the fixture kept (its tail)


def check_key(fixture: Path, check: Mapping[str, Any], env: Mapping[str, str]) -> str:
    """What makes two cases' checks on the fixture the same run (values only in memory, never written)."""
    timeout = check.get("timeout_s") if isinstance(check.get("timeout_s"), (int, float)) else None
    return json.dumps([str(fixture), wd.check_argv(check), timeout, check.get("exit_code", 0),
                       sorted(env.items())])


def run_on_fixture(fixture: Path, check: Mapping[str, Any], env: Mapping[str, str], scratch: Path,
                   sandboxed: bool, registry: Any) -> dict:
    """The check run in a fresh copy of the fixture under `scratch` (removed after): {command,
    exit_code, timed_out, duration_ms, output, error?} (`exit_code` None when it did not run or
    finish: then nothing is known of the fixture)."""
    scratch.mkdir(parents=True)
    try:
        work, home = scratch / "work", scratch / "home"
        wd.copy_fixture(fixture, work)
        home.mkdir()
        run_env = dict(env, HOME=str(home))
        if sandboxed:   # as a case's: the agent's temporary files go to its attempt's dir
            (scratch / "tmp").mkdir()
            run_env["TMPDIR"] = str(scratch / "tmp")
        got = wd.run_check(check, work, run_env, registry)
    finally:
        writer.remove_tree(scratch)
    ran = got.get("ran") and not got.get("timed_out")
    out = {"command": got.get("command"), "exit_code": got.get("exit_code") if ran else None,
           "timed_out": bool(got.get("timed_out")), "duration_ms": got.get("duration_ms"),
           "output": writer.clip(str(got.get("output") or ""), OUTPUT_CAP, tail=True)}
    if got.get("error"):
        out["error"] = got["error"]
    return out


def check_fixtures(cases: list[Mapping[str, Any]], fixture_of: Callable[[Mapping[str, Any]], Path],
                   env_of: Callable[[Mapping[str, Any]], Mapping[str, str]], area: Path, sandboxed: bool,
                   registry: Any, before_copy: Callable[[Path], None]) -> dict[str, dict]:
    """{case id: its `check_on_fixture` fact} for every case with an `expect.check`; each distinct
    check run once (`before_copy(fixture)` first: the fixture's stamp is taken before its first copy)."""
    runs: dict[str, dict] = {}
    out: dict[str, dict] = {}
    for case in cases:
        expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
        check = expect.get("check")
        fixture = fixture_of(case)
        if not isinstance(check, Mapping) or not fixture.is_dir():
            continue
        env = env_of(case)
        key = check_key(fixture, check, env)
        if key not in runs:
            before_copy(fixture)
            runs[key] = run_on_fixture(fixture, check, env, area / "fixture-checks" / str(len(runs) + 1),
                                       sandboxed, registry)
        files = expect.get("files") if isinstance(expect.get("files"), Mapping) else {}
        out[str(case.get("id"))] = dict(runs[key], fixture_fails=fixture_fails(files, fixture))
    if (area / "fixture-checks").is_dir():
        try:
            (area / "fixture-checks").rmdir()
        except OSError:
            pass
    return out
