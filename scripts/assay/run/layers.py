"""Score one repeat, layer by layer, in the decision order of contracts §5.5.

Per layer, first match wins: not applicable -> n/a; disabled in the matrix ->
unscorable + blocked_by; input unavailable -> unscored + reason; else the pure scorer
-> pass | fail (or `error` when it raises ScorerInputError). Scorers are imported from
assay.score; this module only decides applicability and gathers inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..core import hostile
from ..core.vocab import (AGENT_LAYERS, ERROR, INFRA_INCOMPLETE, LAYER_ORDER, NA, UNSCORABLE, UNSCORED,
                          matrix_enabled)
from ..invoke import templates
from ..traces.collect import COMPLETE, NOT_COLLECTED
from .route_source import observed_route, with_response_path

RULES_REASON = "business rules are evaluated by the skill"
STATE_REASON = "reserved"
NO_ANSWER_REASON = "no answer at the adapter's <answer> path"
_TRUTHY = ("true", "yes", "1", "y")


@dataclass
class ScoreContext:
    """What every case of a run shares."""
    invocation: Mapping[str, Any]
    matrix: Mapping[str, Any]
    scoring: Mapping[str, Any]
    judged_reason: Callable[[Mapping[str, Any]], str]
    traces_collected: bool
    traceless_reason: str | None
    declared_tools: frozenset = frozenset()   # the adapter's `tools` names (empty: no list declared)


@dataclass
class RepeatEvidence:
    """What one sent repeat produced."""
    status: int | None
    response_json: Any
    answer: str | None
    answer_note: str | None
    trace_status: str
    trajectory: dict | None
    trace_reason: str | None = None
    workdir: dict | None = None     # agent mode: the workdir's facts after the run (invoke.workdir)
    answer_leaf: dict | None = None  # the <answer> leaf was an object or a list (score.answer_leaf.leaf_of)
    answer_echo: dict | None = None  # the answer is the user's turn word for word (score.answer_leaf.echo_of)


def applicable(expect: Mapping[str, Any], ctx: ScoreContext) -> dict[str, bool]:
    """Which layers apply to a case (the first question of the decision order), all at once."""
    answer = expect.get("answer") if isinstance(expect.get("answer"), dict) else {}
    fmt = expect.get("format") if isinstance(expect.get("format"), dict) else {}
    return {
        "http": True,
        "routing": bool(expect.get("route") or expect.get("route_acceptable")),
        "trajectory": bool(expect.get("tools")),
        "tool_selection": bool(expect.get("args")),
        "loops": ctx.traces_collected,
        "answer": bool(answer.get("must_contain") or answer.get("must_not_contain") or fmt.get("json_schema")),
        "execution": bool(expect.get("result")),
        "authz": bool(expect.get("authz")),
        "rules": bool(answer.get("rules")),
        "state": bool(expect.get("state")),
        "judged": bool(answer.get("rubric")),
        "skills": bool(expect.get("skills")),
        "files": bool(expect.get("files")),
        "check": bool(expect.get("check")),
        "permissions": bool(expect.get("permissions")) or ctx.invocation.get("mode") == "agent",
    }


def _guard(fn: Callable[[], dict]) -> dict:
    """Run a scorer; a rejected input becomes an `error` layer, a missing module an honest unscored."""
    try:
        from ..score.base import ScorerInputError
    except ImportError:  # pragma: no cover - the scorer package is part of the build
        ScorerInputError = ValueError  # type: ignore[misc,assignment]
    try:
        return fn()
    except ScorerInputError as exc:
        return {"verdict": ERROR, "reason": str(exc)}
    except ImportError as exc:
        return {"verdict": UNSCORED, "reason": f"scorer not available in this build ({exc.name})"}


def clarified_flag(inv: Mapping[str, Any], ev: RepeatEvidence) -> bool | None:
    path = inv.get("clarify_from_response")
    if not isinstance(path, str) or not path:
        return None
    found, value = templates.lookup(ev.response_json, path)
    if not found or value is None:
        return False
    if isinstance(value, str):
        return value.strip().lower() in _TRUTHY
    return bool(value)


def http_status_ok(expect: Mapping[str, Any], ev: RepeatEvidence) -> tuple[Any, bool]:
    """(expected status, whether the response's status meets it): absent means any 2xx."""
    exp = (expect.get("http") or {}).get("status") if isinstance(expect.get("http"), Mapping) else None
    if exp is None:
        return exp, ev.status is not None and 200 <= ev.status < 300
    return exp, ev.status in (exp if isinstance(exp, list) else [exp])


def _trace_input(ctx: ScoreContext, ev: RepeatEvidence, http_failed: bool = False) -> dict | None:
    """None when the trajectory is usable; else the layer to record instead."""
    if ev.trace_status == NOT_COLLECTED or not ctx.traces_collected:
        return {"verdict": UNSCORED, "reason": f"traces not collected: {ctx.traceless_reason or 'trace-less run'}"}
    if ev.trace_status != COMPLETE or ev.trajectory is None:
        if http_failed:
            # the app refused (401, 404, ...) and wrote no complete trace: the case fails on its
            # http layer; an infra_incomplete here would hide that (a 401 canary read as "no trace")
            return {"verdict": UNSCORED, "reason": f"no complete trace after HTTP {ev.status} (the http layer "
                    f"failed): trace {ev.trace_status}: {ev.trace_reason or 'no detail'}"}
        return {"verdict": INFRA_INCOMPLETE, "reason": f"trace {ev.trace_status}: {ev.trace_reason or 'no detail'}"}
    bad = hostile.holds([(c.get("name"), c.get("arguments"), c.get("result"))
                         for c in ev.trajectory.get("tool_calls") or [] if isinstance(c, Mapping)])
    if bad is not None:
        return {"verdict": UNSCORED, "reason": hostile.reason("a tool call in the trace", bad)}
    from ..score.base import blind_tool_log
    blind = blind_tool_log(ev.trajectory)
    if blind:
        return {"verdict": UNSCORED, "reason": f"the trace cannot show tool calls: {blind}"}
    return None


def score_layer(layer: str, case: Mapping[str, Any], ctx: ScoreContext, ev: RepeatEvidence,
                actual_box: dict, applies: Mapping[str, bool]) -> dict:
    expect = case.get("expect") or {}
    if not applies[layer]:
        return {"verdict": NA}
    enabled, blocked_by = matrix_enabled(dict(ctx.matrix), layer)
    if not enabled:
        return {"verdict": UNSCORABLE, "blocked_by": blocked_by}
    sc = ctx.scoring
    if layer == "http" and ctx.invocation.get("mode") in ("cli", "agent"):
        # cli: the status is the exit code; expected 0 unless the case sets expect.exit_code
        exp = expect.get("exit_code") if isinstance(expect.get("exit_code"), int) else 0
        out = {"verdict": "pass" if ev.status == exp else "fail", "expected_exit_code": exp, "exit_code": ev.status}
        if ctx.invocation.get("mode") == "agent" and isinstance(ev.trajectory, Mapping):
            from ..score.agent import mcp_crash_reason, mcp_server_crashes, session_error_reason
            crashes = mcp_server_crashes(ev.trajectory)   # the app under test crashed: never a pass
            failed = session_error_reason(ev.response_json, ev.status) if exp == 0 else None
            if crashes:
                out.update(verdict="fail", reason=mcp_crash_reason(crashes), mcp_crashes=crashes)
            elif failed:
                out.update(verdict="fail", reason=failed)
        return out
    if layer == "http":
        exp, ok = http_status_ok(expect, ev)
        out = {"verdict": "pass" if ok else "fail", "expected_status": exp, "status": ev.status}
        if ev.answer is None and ev.answer_note and isinstance(ev.status, int) and 200 <= ev.status < 300:
            out["answer_absent"] = ev.answer_note   # a 2xx the adapter reads no answer from (summary.answer_absent)
        return out
    if layer == "routing":
        observed, observed_from, declared, trace_note = observed_route(ctx.invocation, ev)
        if not declared:
            return {"verdict": UNSCORED, "reason": "no route source declared (route_from_response, a "
                    "collected trace, or route_from_status); routes are never inferred"}
        bad = hostile.holds(observed) if observed_from != "response" else hostile.holds(
            templates.lookup(ev.response_json, ctx.invocation.get("route_from_response"))[1])
        if bad is not None:
            return {"verdict": UNSCORED, "reason": hostile.reason(f"the route (from the {observed_from})", bad)}
        from ..score.routing import score_case_routing
        layer = _guard(lambda: score_case_routing(expect, observed, observed_from, clarified_flag(ctx.invocation, ev)))
        if observed is None and trace_note and layer.get("verdict") == UNSCORED:
            layer["reason"] = f"{layer.get('reason')}; {trace_note}"
        if observed_from == "trace":
            from ..traces.routing import route_evidence
            layer.update(route_evidence(ev.trajectory))
            if layer.get("verdict") == "fail" and layer.get("reason"):
                how = layer["observed_via"] + (f" {', '.join(layer['handoffs'])}" if layer.get("handoffs") else "")
                layer["reason"] += f" (the trace's {how})"
        return with_response_path(layer, ctx.invocation, ev, observed_from)
    if layer in ("trajectory", "tool_selection", "loops"):
        http_failed = ctx.invocation.get("mode") not in ("cli", "agent") and not http_status_ok(expect, ev)[1]
        missing = _trace_input(ctx, ev, http_failed)
        if missing is not None:
            return missing
        if layer == "trajectory":
            from ..score.trajectory import score_trajectory
            return _guard(lambda: score_trajectory(ev.trajectory, expect,
                                                   fail_on_errored_calls=bool(sc.get("fail_on_errored_calls"))))
        if layer == "tool_selection":
            from ..score.tool_args import score_tool_args
            return _guard(lambda: score_tool_args(ev.trajectory, expect))
        from ..score.loops import score_loops
        return _guard(lambda: score_loops(ev.trajectory, repeat_threshold=int(sc.get("repeat_threshold") or 3),
                                          call_budget=int(sc.get("call_budget") or 15)))
    if layer == "answer":
        if ev.answer is None:
            return {"verdict": UNSCORED, "reason": ev.answer_note or NO_ANSWER_REASON}
        from ..score.answer import score_answer
        return _guard(lambda: score_answer(ev.answer, expect, regex_timeout_s=float(sc.get("scorer_timeout_s") or 2.0),
                                                leaf=ev.answer_leaf, echo=ev.answer_echo))
    if layer == "execution":
        from ..score.execution import extract_actual, score_execution

        def run() -> dict:
            from ..score.base import blind_tool_log
            usable = ev.trace_status == COMPLETE and not blind_tool_log(ev.trajectory)
            tool_calls = (ev.trajectory or {}).get("tool_calls") if usable else None
            actual = extract_actual(dict(ctx.invocation), ev.response_json, ev.answer, tool_calls)
            actual_box["actual"] = actual
            bad = hostile.holds(actual)
            if bad is not None:
                return {"verdict": UNSCORED, "reason": hostile.reason("the result read for this check", bad)}
            layer = score_execution(expect.get("result"), actual, float_tolerance=sc.get("float_tolerance"))
            first = _first_source(ctx.invocation, actual)
            if first is not None:   # a declared source this answer lacked is counted, never silent (§16)
                layer["first_source"] = first
            return layer
        return _guard(run)
    if layer == "authz":
        from ..score.authz import score_authz
        traj = ev.trajectory if ev.trace_status == COMPLETE else None
        return _guard(lambda: score_authz(traj, expect, answer=ev.answer, response_json=ev.response_json,
                                          id_pattern=sc.get("id_pattern"), http_status=ev.status,
                                          regex_timeout_s=float(sc.get("scorer_timeout_s") or 2.0),
                                          identified=bool(case.get("identity"))))
    if layer in AGENT_LAYERS:
        return _agent_layer(layer, expect, ctx, ev)
    if layer == "rules":
        return {"verdict": UNSCORED, "reason": RULES_REASON}
    if layer == "state":
        return {"verdict": UNSCORED, "reason": STATE_REASON}
    if layer == "judged":
        return {"verdict": UNSCORED, "reason": ctx.judged_reason(case)}
    raise KeyError(layer)  # pragma: no cover


def _first_source(invocation: Mapping[str, Any], actual: Mapping[str, Any]) -> dict | None:
    """With more than one result source declared: the first one, its spec as text, and whether it gave
    this answer's value. One that no answer held is a hollow source (`summary.result_source`)."""
    from ..score.execution import SOURCES
    declared = [s for s in SOURCES if invocation.get(s) is not None]
    if len(declared) < 2:
        return None
    spec = invocation[declared[0]]
    if isinstance(spec, dict):   # result_from_tool: {tool, field?}
        spec = ".".join(str(x) for x in (spec.get("tool"), spec.get("field")) if x)
    found = "missing" not in actual and actual.get("source") == declared[0]
    return {"source": declared[0], "path": str(spec), "found": found}


def _agent_layer(layer: str, expect: Mapping[str, Any], ctx: ScoreContext, ev: RepeatEvidence) -> dict:
    """skills / permissions from the transcript; files / check from the workdir measured after the run.
    Not measured (another invocation mode, no transcript) is `unscored`, never a pass."""
    from ..score import agent
    if ctx.invocation.get("mode") != "agent":
        return {"verdict": UNSCORED, "reason": f"expect.{layer} is measured only for invocation.mode agent "
                f"(this run's mode is {ctx.invocation.get('mode')!r})"}
    if layer in ("files", "check"):
        if not isinstance(ev.workdir, Mapping) or layer not in ev.workdir:
            return {"verdict": UNSCORED, "reason": "the workdir was not measured after the agent"}
        gap = _unmeasured(layer, expect, ev.workdir)
        if gap is not None:   # a replay or rescore under an edited expectation: never scored from other facts
            return {"verdict": UNSCORED, "reason": gap}
        scorer = agent.score_files if layer == "files" else agent.score_check
        return _guard(lambda: scorer(ev.workdir, expect))
    missing = _trace_input(ctx, ev)
    if missing is not None:
        return missing
    if layer == "skills":
        return _guard(lambda: agent.score_skills(ev.trajectory, expect))
    mode = ev.trajectory.get("permission_mode") if isinstance(ev.trajectory, Mapping) else None
    spec = ctx.invocation.get("agent") if isinstance(ctx.invocation.get("agent"), Mapping) else {}
    if mode is None and spec.get("command") is None:   # a transcript recorded before the mode was kept
        mode = spec.get("permission_mode")
    return _guard(lambda: agent.score_permissions(ev.trajectory, expect, mode))


def _unmeasured(layer: str, expect: Mapping[str, Any], workdir: Mapping[str, Any]) -> str | None:
    """Why the recorded workdir facts do not answer the case's current `files`/`check` (None: they do)."""
    from ..invoke import workdir as wd
    if layer == "files":
        what = wd.unmeasured(expect.get("files"), workdir.get("files"))
        return None if what is None else (f"{what} was not measured in the workdir the agent left (the case "
                                          "asks more than the run that measured it did): run the case live")
    got = workdir.get("check") if isinstance(workdir.get("check"), Mapping) else {}
    spec = expect.get("check") if isinstance(expect.get("check"), Mapping) else {}
    now = wd.check_argv(spec)
    if got.get("command") is not None and list(got["command"]) != now:
        return (f"the check that ran was {got['command']}; the case now asks {now}: its exit code is not known "
                "for that command: run the case live")
    # a timeout_s cut since the check ran (its own timeout kept with it; a run dir from before that kept
    # none): a run under the timeout asked now would have stopped it without an exit code
    took, was, limit = got.get("duration_ms"), got.get("timeout_s"), wd.check_timeout(spec)
    if (got.get("exit_code") is not None and isinstance(took, (int, float)) and not isinstance(took, bool)
            and took > limit * 1000 and (not isinstance(was, (int, float)) or limit < was)):
        return (f"the check that ran took {took / 1000:g} s, longer than its timeout_s now ({limit:g} s): under "
                "this timeout it would have been stopped without an exit code: run the case live")
    return None


def score_repeat(case: Mapping[str, Any], ctx: ScoreContext, ev: RepeatEvidence) -> tuple[dict, dict | None]:
    """(layers in LAYER_ORDER, actual-or-None) for one sent repeat that got an answer."""
    actual_box: dict = {}
    applies = applicable(case.get("expect") or {}, ctx)
    layers = {name: score_layer(name, case, ctx, ev, actual_box, applies) for name in LAYER_ORDER}
    if ctx.declared_tools and ev.trace_status == COMPLETE:
        from ..score.tool_names import hold_to_declared, undeclared_calls
        layers = hold_to_declared(layers, case.get("expect") or {}, undeclared_calls(ev.trajectory, ctx.declared_tools))
    if ev.trace_status == COMPLETE:
        from ..score.tool_names import hold_to_session, not_in_session
        layers = hold_to_session(layers, not_in_session(case.get("expect") or {}, ev.trajectory))
        from ..score.agent import hold_skills_to_session, skills_not_offered
        layers = hold_skills_to_session(layers, skills_not_offered(ev.trajectory, case.get("expect") or {}))
    return layers, actual_box.get("actual")


def stopped_layers(first: str, first_detail: dict, reason: str) -> dict:
    """Layers for a repeat that never reached scoring (skipped, or transport failure)."""
    out = {name: {"verdict": NA, "reason": reason} for name in LAYER_ORDER}
    out[first] = first_detail
    return out


def skipped_layers(reason: str) -> dict:
    return {name: {"verdict": NA, "reason": reason} for name in LAYER_ORDER}


# The scorers are imported lazily (a run pays only for the layers it uses), but never for the
# first time on a case worker: an import that fails half-way on one thread (EMFILE while reading a
# module file) leaves the others a partially initialized module ("cannot import name ...", exit 1).
# The engine imports them on its own thread before the first worker starts.
_LAZY_SCORERS = ("agent", "base", "routing", "trajectory", "tool_args", "loops", "answer", "execution", "authz",
                 "tool_names")


def warm_scorers(cases: Any = (), *, judged: bool = False) -> None:
    """Import every scorer module a case worker may reach, on the calling thread, and the paths only
    some runs take, when this one takes them: a conversation's (`run.repeat_conversation`), a
    simulated user's (`run.simulated`) and the judge's (`judged`: the run has a judge)."""
    import importlib
    from ..core.casekind import any_conversation, any_simulated
    for name in _LAZY_SCORERS:
        importlib.import_module(f"..score.{name}", __package__)
    importlib.import_module("..traces.routing", __package__)
    if any_conversation(cases):
        importlib.import_module("..invoke.conversation", __package__)
        importlib.import_module(".repeat_conversation", __package__)
    if any_simulated(cases):
        importlib.import_module(".simulated", __package__)
    if judged:
        for name in ("..judge.prompt", "..judge.rubrics", "..judge.turns", "..judge.fold", ".turn_judging"):
            importlib.import_module(name, __package__)

