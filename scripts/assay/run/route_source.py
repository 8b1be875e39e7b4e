"""Where a case's observed route comes from (`docs/runner-contract.md` §5.2): the declared sources in
priority order (`route_from_response`, the collected trace, `route_from_status`), and what the routing
layer records beside the route: whether the response held the declared path, and a trace that names
another agent than the response's route field (the response's is scored; the disagreement is said).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..invoke import templates
from ..score.base import nfc
from ..traces.collect import COMPLETE, NOT_COLLECTED


def observed_route(inv: Mapping[str, Any], ev: Any) -> tuple[str | None, str | None, bool, str | None]:
    """(observed, observed_from, any_source_declared, why the trace gave no route): declared sources
    only, in priority order. A collected trace is a declared source even when it gives no route."""
    declared, trace_note = False, None
    path = inv.get("route_from_response")
    if isinstance(path, str) and path:
        declared = True
        found, value = templates.lookup(ev.response_json, path)
        if found and value not in (None, ""):
            return str(value), "response", True, None
    if ev.trace_status != NOT_COLLECTED:
        declared = True
        name, trace_note = _trace_route(ev)
        if name:
            return (name if isinstance(name, str) else str(name)), "trace", True, None   # keeps a HostileText
    status_map = inv.get("route_from_status")
    if isinstance(status_map, Mapping) and status_map:
        declared = True
        route = status_map.get(ev.status, status_map.get(str(ev.status)))
        if route not in (None, ""):
            return str(route), "status", True, trace_note
    return None, None, declared, trace_note


def _trace_route(ev: Any) -> tuple[str | None, str | None]:
    """(the agent that handled the request, or None and why): never read from a trace that is not
    complete or whose spans follow another convention than the declared one."""
    if ev.trace_status != COMPLETE or ev.trajectory is None:
        return None, f"the trace is {ev.trace_status}: {ev.trace_reason or 'no detail'}"
    foreign = (ev.trajectory.get("convention") or {}).get("foreign") or {}
    if foreign:
        names = ", ".join(f"{n} ({m})" for n, m in sorted(foreign.items()))
        return None, (f"the spans carry another convention's markers: {names}; set traces.convention "
                      "to that convention or auto")
    from ..traces.routing import handling_agent, no_route_reason
    name, _ = handling_agent(ev.trajectory)
    return (name, None) if name else (None, no_route_reason(ev.trajectory))


def with_response_path(layer: dict, inv: Mapping[str, Any], ev: Any, observed_from: str | None) -> dict:
    """A declared route_from_response path: whether this answer held it (`response_path`), and,
    when the route came from a later source instead, a note that says so (never a silent fallback;
    the gate closes when no answer held the path: a hollow source)."""
    path = inv.get("route_from_response")
    if not isinstance(path, str) or not path:
        return layer
    found = observed_from == "response"
    layer = dict(layer, response_path={"path": path, "found": found})
    if not found and observed_from is not None:
        layer["note"] = (f"route_from_response {path!r} is absent in this response; the route was read from the "
                         f"{observed_from} instead")
    elif found and ev.trace_status == COMPLETE:
        traced, _ = _trace_route(ev)
        if traced and nfc(str(traced)) != nfc(str(layer.get("observed"))):
            from ..traces.routing import route_evidence
            how = route_evidence(ev.trajectory)
            layer["trace_route"] = {"observed": traced, **how}
            hops = ", ".join(how.get("handoffs") or [])
            layer["note"] = (f"the response and the trace disagree: route_from_response {path!r} says "
                             f"{layer.get('observed')!r}, the trace ({how['observed_via']}{': ' + hops if hops else ''}) "
                             f"says {traced!r}; the response's route is the one scored (route_from_response comes "
                             "first: remove it to score the trace's)")
    return layer
