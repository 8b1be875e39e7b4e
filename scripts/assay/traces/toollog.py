"""Could assay have seen every tool call of a trace? (`trajectory.tool_log`, read by assay.traces.normalize). Pure."""

from __future__ import annotations

from typing import Any

from . import conventions, frameworks

TOOL_KIND, LLM_KIND = conventions.TOOL, conventions.LLM


def _asks_for_tool(finish: list[str]) -> bool:
    return any("tool" in f.lower() or "function" in f.lower() for f in finish)


def tool_log(conv_info: dict, kinds: dict, llm_seen: list[tuple[bool, list[str] | None]],
              span_names: list[str], markers: dict[str, str] | None = None,
              unread_tools: list[str] | None = None, untraced: list[dict] | None = None) -> dict:
    """Could assay have seen every tool call of this trace? `{seen, source, reason}`.

    Seen: the trace has tool spans; or every LLM span's output messages were captured (tool
    calls derived from their parts); or, without content, every LLM span's finish reasons say
    no tool was asked for. Blind otherwise, and always when the spans carry another
    convention's markers, no span maps to an LLM or tool call, `unread_tools` names gen_ai
    tool spans the declared convention does not read, or `untraced` names tool calls an LLM span's
    captured output asked for that no tool span shows (`untraced_requests`): a tool call missing
    from the log either way.
    """
    used = conv_info["used"]
    if conv_info["foreign"]:
        names = ", ".join(f"{n} ({m})" for n, m in sorted(conv_info["foreign"].items()))
        return {"seen": False, "source": None, "reason": f"spans carry another convention's markers: {names}; "
                f"traces.convention is {conv_info['declared']}: set it to that convention or auto"}
    if not kinds[TOOL_KIND] and not kinds[LLM_KIND]:
        shown = ", ".join(repr(n) for n in list(dict.fromkeys(span_names))[:5]) or "none"
        # another convention's marker that is never "foreign" (gen_ai's, written by every
        # instrumentation's LLM spans) still says which convention these spans speak
        other = {n: m for n, m in (markers or {}).items() if n != used}
        hint = ("; the spans carry " + ", ".join(f"{m} ({n})" for n, m in sorted(other.items()))
                + f": set traces.convention to {sorted(other)[0] if len(other) == 1 else 'that convention'} or auto"
                ) if other else ""
        if conv_info["declared"] == conventions.AUTO and not markers:
            looked = "; ".join(f"{c.name}: {' / '.join(c.markers)}" for c in conventions.CONVENTIONS.values())
            return {"seen": False, "source": None, "reason": "no span maps to an LLM or tool call: traces.convention "
                    f"auto recognized no convention (no span carries a marker attribute: {looked}); is the app's "
                    f"LLM / agent instrumentation installed and on? (span names: {shown})"}
        return {"seen": False, "source": None, "reason": f"no span maps to an LLM or tool call under convention "
                f"{used}{hint} (span names: {shown})"}
    if unread_tools:
        shown = ", ".join(repr(n) for n in list(dict.fromkeys(unread_tools))[:5])
        return {"seen": False, "source": None, "reason": f"{len(unread_tools)} gen_ai execute_tool span(s) "
                f"({shown}) are tool calls convention {used} does not read: set traces.convention to gen_ai "
                f"when the app's tool spans are gen_ai's, or trace its tools with {used}'s instrumentation"}
    if untraced:
        shown = ", ".join(f"{r.get('name')!r}" + (f" (call {r['call_id']})" if r.get("call_id") is not None else "")
                          for r in untraced[:5])
        conv = conventions.CONVENTIONS.get(used, conventions.GEN_AI)
        span_kind = {"gen_ai": "execute_tool span", "openinference": "TOOL span", "openllmetry": "@tool span"}.get(used, "tool span")
        return {"seen": False, "source": None, "reason": f"{len(untraced)} tool call(s) an LLM span's output messages "
                f"asked for ({shown}{', ...' if len(untraced) > 5 else ''}) have no {span_kind} ({conv.tool_name[0]}) "
                "while other tool calls do: the app does not trace every tool, so calls that ran can be missing "
                f"from the tool log; trace each tool's execution with an {span_kind} the way the traced ones are"}
    if kinds[TOOL_KIND]:
        return {"seen": True, "source": "tool_spans", "reason": None}
    unseen = [finish for captured, finish in llm_seen if not captured]
    if all(finish is not None and not _asks_for_tool(finish) for finish in unseen):
        return {"seen": True, "source": "llm_messages" if len(unseen) < len(llm_seen) else "finish_reasons",
                "reason": None}
    return {"seen": False, "source": None, "reason": f"{len(unseen)} LLM span(s) without captured output "
            "messages (and no tool span) may have asked for tools: tool calls cannot be seen (turn on the "
            "instrumentation's message content capture, or trace tool execution)"}


def unread_gen_ai_tools(conv: conventions.Convention, spans: list[dict], kind: dict, tool_calls: list[dict],
                        handoffs: list[dict]) -> list[str]:
    """Names of gen_ai `execute_tool` spans another convention left unread: a tool call in the trace
    that is missing from the tool log read as declared (each read call of that name covers one span)."""
    if conv is conventions.GEN_AI:
        return []
    read: dict[Any, int] = {}
    for t in tool_calls:
        read[t["name"]] = read.get(t["name"], 0) + 1
    targets = {h["to"] for h in handoffs}
    unread = []
    for s in spans:
        a = s["attributes"]
        if a.get("gen_ai.operation.name") != "execute_tool" or kind[id(s)] == TOOL_KIND:
            continue
        name = a.get("gen_ai.tool.name")
        if (str(name or "").lower().startswith(conventions.TRANSFER_PREFIXES) or name in targets
                or name in frameworks.HANDOFF_REQUESTS):
            continue  # a framework's handoff, not a tool call
        if read.get(name):
            read[name] -= 1
        else:
            unread.append(s["name"])
    return unread


def untraced_requests(executed: list[dict], requested: list[dict], answers: int = 0) -> list[dict]:
    """The tool calls LLM spans' captured output messages asked for that no tool span shows: each
    request is matched to one executed call by call id, else by tool name (handoff requests are
    already left out; smolagents' `final_answer`, how an agent answers, is no tool call)."""
    remaining = list(executed)
    missing = []
    for req in requested:
        name, cid = req.get("name"), req.get("call_id")
        if not name or (answers and name == frameworks.SMOLAGENTS_ANSWER):
            continue
        hit = next((t for t in remaining if cid is not None and t.get("call_id") is not None
                    and str(t["call_id"]) == str(cid)), None)
        hit = hit or next((t for t in remaining if t.get("name") == name), None)
        if hit is None:
            missing.append(req)
        else:
            remaining.remove(hit)
    return missing
