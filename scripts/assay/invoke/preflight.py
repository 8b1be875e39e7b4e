"""The invokers' pre-flight (steps 2-3): the invocation mode is supported and well-formed, the
invoker is built, and the app answers its health check. Exit 3 names the adapter key to fix.

It reads the run's plan as the frozen `core.runplan.RunPlan` (the engine's pre-flight,
`run.preflight.prepare`, calls it with the state dir it has already checked)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import AssayError
from ..core.runplan import RunPlan

SUPPORTED_MODES = ("http", "function", "cli", "agent")


def check_adapter(adapter: Mapping[str, Any]) -> None:
    """The invocation mode is one this runner runs, and the adapter matches its schema (exit 3
    naming the key). Runs before anything reads the adapter (env resolution included)."""
    inv = adapter.get("invocation") or {}
    mode = inv.get("mode") if isinstance(inv, Mapping) else None
    if mode not in SUPPORTED_MODES:
        raise AssayError(f"pre-flight: invocation.mode {mode!r} is not supported (http, function, cli, agent)", 3,
                         key="invocation.mode", mode=mode)
    # The adapter crossed a step boundary inside the plan: check its shape before using it.
    from ..schemas import validate
    validate(adapter, "adapter", source="adapter", code=3, what="the plan's")


def build_invoker(plan: RunPlan, env: Mapping[str, str], state: Path, *, out: Path | None = None,
                  environ: Mapping[str, str] | None = None, replaying: bool = False, render_only: bool = False):
    """The invoker for the (already checked, `check_adapter`) invocation; `state`: the plan's
    checked state dir (run.run_paths.state_dir_of). `render_only`: its `prepare` only renders each
    request as a run would record it (rescore), nothing is sent: a cli/agent program is not looked
    up, no agent fixture is checked. `replaying`: every case of the run is answered from the cache
    (no live case), so nothing the app needs to run is required: a function app's module is not
    imported, a cli/agent program (and bubblewrap, an agent check's or MCP server's program) is not
    looked up (docs/runner-contract.md §22); what shapes the requests and their scoring is checked."""
    inv = plan.invocation
    execution = plan.execution
    mode = inv.get("mode")
    if mode == "http":
        from ..invoke.http import HttpInvoker
        inv_obj = HttpInvoker(inv, env, timeout_s=execution["timeout_s"], insecure_tls=bool(execution["insecure_tls"]))
    elif mode == "agent":
        inv_obj = _agent_invoker(plan, env, state, out, os.environ if environ is None else environ, render_only,
                                 replaying)
    elif mode == "cli":
        from ..invoke.approot import app_root
        from ..invoke.cli import CliInvoker, scratch_area
        environ = os.environ if environ is None else environ
        run_dir = out if out is not None else state / "reports" / plan.run_id
        inv_obj = CliInvoker(inv, env, environ=environ, timeout_s=execution["timeout_s"],
                             app_root=app_root(plan.adapter, state), state_dir=state,
                             area=scratch_area(plan.run_id, Path(os.path.abspath(run_dir)), environ),
                             resolve=not (render_only or replaying))   # replayed: never started
    else:
        from ..invoke.approot import app_root
        from ..invoke.function import FunctionInvoker, import_entrypoint
        # replayed: the app's code is not even imported (every answer comes from the cache)
        fn = (_not_called if replaying else
              import_entrypoint(inv.get("entrypoint"), app_root(plan.adapter, state)))
        inv_obj = FunctionInvoker(inv, env, fn, timeout_s=execution["timeout_s"])
    from ..invoke.templates import request_template_problem
    unsent = None if render_only else request_template_problem(inv)
    if unsent:   # convert_suite.py refuses it at adapter.yaml's line; a plan made otherwise is stopped here
        raise AssayError(f"pre-flight: the plan's adapter (adapter.yaml): {unsent[1]}; then re-run convert_suite.py "
                         "and make_plan.py", 3, key=unsent[0])
    rb = inv.get("response_body")
    if rb is not None:
        from ..invoke.templates import response_body_problem
        problem = response_body_problem(rb)
        if problem:   # convert_suite.py refuses it at adapter.yaml's line; a plan made otherwise is stopped here
            raise AssayError(f"pre-flight: the plan's adapter (adapter.yaml): {problem}; then re-run convert_suite.py "
                             "and make_plan.py", 3, key="invocation.response_body")
    return inv_obj


def _agent_invoker(plan: RunPlan, env: Mapping[str, str], state: Path, out: Path | None,
                   environ: Mapping[str, str], render_only: bool = False, replaying: bool = False):
    """The agent invoker, and every case checked before the first runs: a fixture that is not there,
    a skill nothing defines, a check program that is not found are each exit 3 naming the case.
    `replaying` (no case runs live): the agent, its MCP servers and the cases' checks never run, so
    their programs (and bubblewrap) are not looked up; the adapter's paths, the MCP config's shape,
    the fixtures, skills and `expect.files` paths (what the recorded answers are scored against) are."""
    from ..invoke.agent import AgentInvoker, agent_case_problems, fixture_of
    from ..invoke.agent_skills import arm_only_skills, known_skills
    from ..invoke.fixture_paths import GLOB_IN_PATH, OUTSIDE_WORKDIR
    from ..invoke.cli import scratch_area
    from ..invoke.approot import app_root
    from ..score.tool_names import declared_tools
    run_dir = out if out is not None else state / "reports" / plan.run_id
    inv = AgentInvoker(plan.invocation, env, environ=environ, timeout_s=plan.execution["timeout_s"],
                       app_root=app_root(plan.adapter, state), state_dir=state,
                       area=scratch_area(plan.run_id, Path(os.path.abspath(run_dir)), environ),
                       declared=declared_tools(plan.adapter), resolve=not (render_only or replaying))
    if render_only:   # only its requests are rendered (rescore): nothing runs, no fixture is checked
        return inv
    cases = list(plan.cases)
    fixtures = sorted({fixture_of(c, inv.spec) for c in cases})
    if inv.spec.mcp_config is not None:
        from ..invoke.agent_mcp import KEY, mcp_config_problems, mcp_config_shape_problems
        for msg in (mcp_config_shape_problems(inv.spec.mcp_config) if replaying else
                    mcp_config_problems(inv.spec.mcp_config, [f for f in fixtures if f.is_dir()] or [inv.spec.workdir],
                                        inv.base_env.get("PATH"))):
            raise AssayError(f"pre-flight: {KEY}: {msg}", 3, key=KEY)
    skills = known_skills(inv.spec, fixtures)
    arm = (plan.manifest_extra or {}).get("arm")
    arm_only = arm_only_skills(plan.adapter, inv.spec, fixtures) if isinstance(arm, Mapping) else set()
    if isinstance(arm, Mapping):   # the skills layer reads a skill this arm runs without as the arm's meaning
        inv.arm_skills = {"arm": arm.get("name"), "skills": sorted(arm_only)}
    for case in cases:
        for key, msg in agent_case_problems(case, inv.spec, skills, inv.base_env.get("PATH"), programs=not replaying,
                                            arm_only=arm_only):
            if key == "expect.files.absent" and OUTSIDE_WORKDIR not in msg and GLOB_IN_PATH not in msg:
                continue                   # maybe meant (the linter's WARN absent_near_fixture_path)
            raise AssayError(f"pre-flight: case {case.get('id')}: {key}: {msg}", 3, case_id=case.get("id"), key=key)
    inv.plan_cases = cases   # the health check runs each case's check once on the untouched fixture
    return inv


def _not_called(*_args: Any, **_kwargs: Any) -> Any:
    raise RuntimeError("replay: the app's function is never called (answers come from the cache)")


# ---------------------------------------------------------------- step 3: health
def health_check(invoker: Any, invocation: Mapping[str, Any], *, resume: bool = False) -> dict[str, Any]:
    if getattr(invoker, "mode", None) in ("cli", "agent"):
        return invoker.health(resume=resume)
    if getattr(invoker, "mode", None) != "http":
        return {"checked": False, "reason": "function mode: the entrypoint imported"}
    hc = invocation.get("health_check") or {}
    method = str(hc.get("method") or "GET").upper()
    url = invoker.health_url(hc.get("path"))
    expect = hc.get("expect_status")
    out = invoker.request(method, url, {"Accept": "*/*"}, None)
    invoker.close()
    shown = invoker.base_recorded + (hc.get("path") or "")
    resolved = invoker.shown_resolved(url)
    if resolved:
        shown += f" (resolved: {resolved})"
    if out.kind != "response":
        fix = invoker.base_fix_hint()
        raise AssayError(f"pre-flight: health check {method} {shown} failed: {out.error}. Start the app (or "
                         f"fix {fix} / invocation.health_check) and re-run.", 3, key="invocation.health_check",
                         health_error=out.error, url=resolved or shown)
    if expect and out.status not in (expect if isinstance(expect, list) else [expect]):
        key, fix = _health_status_fix(invoker, hc, method, out.status)
        raise AssayError(f"pre-flight: health check {method} {shown} returned {out.status}, not one of "
                         f"{expect}; {fix}", 3, key=key, status=out.status)
    if not expect and hc.get("path") and out.status in (404, 405):
        # A declared health path the app has no route for (a typo, /health for /healthz) probed nothing:
        # without expect_status any status meant up, so the mistake passed pre-flight unnoticed.
        key, fix = _health_status_fix(invoker, hc, method, out.status)
        raise AssayError(f"pre-flight: health check {method} {shown} returned {out.status} (no expect_status, "
                         f"but a declared path must be a route the app has); {fix}", 3, key=key,
                         status=out.status)
    checked = {"checked": True, "method": method, "status": out.status}
    if hc.get("revision_from"):
        checked.update(served_revision(out, hc["revision_from"], f"{method} {shown}"))
    return checked


def served_revision(out: Any, path: str, shown: str) -> dict[str, Any]:
    """`invocation.health_check.revision_from`: what the app says it serves (e.g. a hash of the prompts it
    loaded at start), read from the health check's JSON answer. A long-running app keeps serving what it
    loaded until it restarts, so an edited prompt file is no evidence of what a run measured; this is
    (`candidate.py keep` compares it with the champion's run). An answer without it is exit 3."""
    from .templates import lookup
    found, value = lookup(out.body_json, path) if out.json_ok else (False, None)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value == "":
        got = "no JSON" if not out.json_ok else (f"{json.dumps(value)[:80]}" if found else "nothing")
        raise AssayError(f"pre-flight: health check {shown} answered {out.status} with {got} at "
                         f"invocation.health_check.revision_from ({path!r}): the app must report what it serves "
                         "there (a non-empty string or number, e.g. a hash of the prompts it loaded); fix the path "
                         "in adapter.yaml or the app's health route", 3, key="invocation.health_check.revision_from")
    return {"revision_from": path, "revision": str(value)}


def _health_status_fix(invoker: Any, hc: Mapping[str, Any], method: str, status: Any) -> tuple[str, str]:
    """(the adapter key, the fix) for a health check answered with a status it does not expect. A 404 or
    405 is an answer: the app is up and the request is wrong (a path it has no route for, one put after
    a base_url that holds a path of its own, a method it does not take), not an unhealthy app."""
    from urllib.parse import urlsplit
    base_path = urlsplit(invoker.base_wire).path.rstrip("/")   # never shown: a secret base_url's fragment
    under = (" (base_url holds a path of its own, put before this path and the endpoint's: is it part of the "
             "endpoint? then base_url ends at the port)" if base_path else "")
    if status == 404:
        if hc.get("path"):
            return ("invocation.health_check.path",
                    f"the app answered, so it is up, but it has no route there{under}: set "
                    "invocation.health_check.path in adapter.yaml to the app's health route (e.g. /healthz), or "
                    "remove health_check to probe GET base_url, where any status means up")
        return ("invocation.health_check.path",
                f"the app answered, so it is up, but it has no route at base_url{under}: add "
                "invocation.health_check.path in adapter.yaml (the app's health route, e.g. /healthz), or remove "
                "expect_status")
    if status == 405:
        return ("invocation.health_check.method",
                f"the app answered, so it is up, but that route does not take {method}: set "
                "invocation.health_check.method in adapter.yaml (GET, HEAD or POST) to one it takes")
    return "invocation.health_check.expect_status", "is the app healthy?"
