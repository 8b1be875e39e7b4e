"""Who handled the request, read from a normalized trajectory; tool arguments a tool span lost. Pure.

`handling_agent(trajectory)` is the trace-observed route (`docs/runner-contract.md` §5.5, §14):

1. the target of the last handoff (`trajectory.handoffs`, in start order), where a handoff back
   to an agent that itself handed off earlier in the trace is a return, not a route
   (langgraph-supervisor's workers hand back to the supervisor, which repeats their answer);
2. without a handoff: the agent whose LLM call ended last, the one that produced the answer
   (pydantic-ai's output functions run the next agent inside the entry agent's run); when that
   call ran in an agent span without a name, no route (never the named agent that spoke earlier);
3. else the named agent span, when the trace has one agent (agent spans but no LLM span);
   never a guess among several agents, nor when a handoff span was not read as one
   (`trajectory.unread_handoffs`): `no_route_reason` then says why.

Wrapper spans (openai-agents' unnamed "Agent workflow") have no name and are never a route.

`arguments_from_requests(tool_calls, requested)`: LangGraph's tools with one parameter record
the bare value (`input.value = "ORD-12"`) on their TOOL span; the LLM span's tool call holds the
arguments object. Such a call takes the arguments of the LLM's request for the same tool (by
call id, else the n-th request of that name for its n-th execution). AutoGen's own `execute_tool`
spans carry no arguments and no result: by call id only, the request's arguments and the result
the next LLM call was given.
"""

from __future__ import annotations

from typing import Any

HANDOFF, ANSWERING, FIRST = "handoff", "answering agent", "first agent"


def first_agent_name(trajectory: dict | None) -> str | None:
    """The first agent span (by start time) with a name, or None."""
    for agent in (trajectory or {}).get("agents") or []:
        name = agent.get("name")
        if isinstance(name, str) and name:
            return name
    return None


def handling_agent(trajectory: dict | None) -> tuple[str | None, str | None]:
    """(route, how): how is `handoff`, `answering agent` or `first agent` (None without a route:
    `no_route_reason` says why). A trace with a handoff span not read as one names no route."""
    traj = trajectory or {}
    if traj.get("unread_handoffs"):
        return None, None
    route, sources = None, set()
    for h in traj.get("handoffs") or []:
        frm, to = h.get("from"), h.get("to")
        if isinstance(frm, str) and frm:
            sources.add(frm)
        if isinstance(to, str) and to and to not in sources:
            route = to
    if route:
        return route, HANDOFF
    last = _last_agent_call(traj)
    if last is not None:  # its agent span without a name: who answered cannot be read (no_route_reason)
        return (last["agent"], ANSWERING) if last.get("agent") else (None, None)
    first = first_agent_name(traj)
    # several agents and nothing saying which answered: never a guess
    return (first, FIRST) if first and len(_agent_names(traj)) == 1 else (None, None)


def _last_agent_call(traj: dict) -> dict | None:
    """The LLM call that ended last among those run in an agent span: a named agent's, or one whose agent
    span has no name (`agent_span`: an agent the instrumentation left unnamed)."""
    calls = [c for c in traj.get("llm_calls") or [] if isinstance(c.get("agent"), str) and c["agent"] or c.get("agent_span")]
    if not calls:
        return None
    return max(enumerate(calls), key=lambda ic: (ic[1].get("end_ns") or ic[1].get("start_ns") or 0, ic[0]))[1]


def _agent_names(traj: dict) -> set[str]:
    return {a["name"] for a in traj.get("agents") or [] if isinstance(a.get("name"), str) and a["name"]}


def no_route_reason(trajectory: dict | None) -> str:
    """Why `handling_agent` read no route from this trajectory (the routing layer's unscored reason)."""
    traj = trajectory or {}
    log = traj.get("tool_log") or {}
    if (not traj.get("agents") and not traj.get("llm_calls") and not traj.get("tool_calls")
            and log.get("seen") is False and log.get("reason")):
        # nothing in the trace was read as an agent, LLM or tool call: the cause the trace layers name
        # (traces.convention not the spans' convention, no GenAI instrumentation), and its fix
        return f"no span in the trace was read as an agent: {log['reason']}; or declare route_from_response"
    unread = traj.get("unread_handoffs") or []
    if unread:
        spans = ", ".join(repr(u.get("span")) for u in unread[:3])
        return (f"handoff span(s) {spans} name no agent of this trace, so who handled the request cannot be "
                "read; declare route_from_response")
    last = _last_agent_call(traj)
    if last is not None and not last.get("agent"):
        used = (traj.get("convention") or {}).get("used") or "gen_ai"
        attr = {"openinference": "agent.name", "openllmetry": "traceloop.entity.name"}.get(used, "gen_ai.agent.name")
        return (f"the LLM call that ended last (the answer) ran in agent span {last['agent_span']!r}, which has no "
                f"agent name ({attr}), so who handled the request cannot be read: name every agent "
                "(gen_ai: opentelemetry-util-genai's invoke_local_agent(agent_name=...), the framework's agent "
                "name), or declare route_from_response")
    names = _agent_names(traj)
    if len(names) > 1:
        return (f"{len(names)} agents ({', '.join(sorted(names))}) and no handoff or LLM call of theirs says "
                "which handled the request; declare route_from_response")
    note = traj.get("no_agent_note")
    return f"no agent span in the trace has a name{f' ({note})' if note else ''}; declare route_from_response"


def route_evidence(trajectory: dict | None) -> dict:
    """What the routing layer records beside a trace-observed route: how it was read, the handoffs."""
    _, how = handling_agent(trajectory)
    hops = [f"{h.get('from') or '?'} -> {h.get('to') or '?'}" for h in (trajectory or {}).get("handoffs") or []]
    return {"observed_via": how, **({"handoffs": hops} if hops else {})}


def arguments_from_requests(tool_calls: list[dict], requested: list[dict],
                            given: dict | None = None) -> list[str]:
    """Fill bare-value or uncaptured arguments from the LLM's tool calls in place, and uncaptured
    results from `given` ({call id: the result the next LLM call was given}); the notes to record."""
    by_id = {str(r["call_id"]): r for r in requested if r.get("call_id") is not None}
    by_name: dict[Any, list[dict]] = {}
    for r in requested:
        by_name.setdefault(r.get("name"), []).append(r)
    seen: dict[Any, int] = {}
    notes = []
    for call in tool_calls:
        n = seen[call["name"]] = seen.get(call["name"], -1) + 1
        cid = str(call["call_id"]) if call.get("call_id") is not None else None
        if not call.get("result_captured") and cid and given and cid in given:
            call["result"], call["result_captured"] = given[cid], True
            notes.append(f"tool {call['name']!r}: its span holds no result; taken from the next LLM span's "
                         "input messages")
        captured = call.get("arguments_captured")
        if captured and isinstance(call.get("arguments"), (dict, list)):
            continue
        req = by_id.get(cid) if cid else None
        if req is None and captured:  # a bare value: the n-th request of that name (no id to match)
            same = by_name.get(call["name"]) or []
            req = same[n] if n < len(same) else None
        if req is not None and req.get("arguments_captured") and isinstance(req.get("arguments"), dict):
            call["arguments"], call["arguments_captured"] = req["arguments"], True
            notes.append(f"tool {call['name']!r}: its span holds {'a bare value' if captured else 'no arguments'}; "
                         "arguments taken from the LLM span's tool call")
    return notes
