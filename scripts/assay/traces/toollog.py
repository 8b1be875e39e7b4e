"""Could assay have seen every tool call of a trace? (`trajectory.tool_log`, read by assay.traces.normalize). Pure."""

from __future__ import annotations

from . import conventions

TOOL_KIND, LLM_KIND = conventions.TOOL, conventions.LLM


def _asks_for_tool(finish: list[str]) -> bool:
    return any("tool" in f.lower() or "function" in f.lower() for f in finish)


def tool_log(conv_info: dict, kinds: dict, llm_seen: list[tuple[bool, list[str] | None]],
              span_names: list[str], markers: dict[str, str] | None = None) -> dict:
    """Could assay have seen every tool call of this trace? `{seen, source, reason}`.

    Seen: the trace has tool spans; or every LLM span's output messages were captured (tool
    calls derived from their parts); or, without content, every LLM span's finish reasons say
    no tool was asked for. Blind otherwise, and always when the spans carry another
    convention's markers or no span maps to an LLM or tool call.
    """
    used = conv_info["used"]
    if conv_info["foreign"]:
        names = ", ".join(f"{n} ({m})" for n, m in sorted(conv_info["foreign"].items()))
        return {"seen": False, "source": None, "reason": f"spans carry another convention's markers: {names}; "
                f"traces.convention is {conv_info['declared']}: set it to that convention or auto"}
    if kinds[TOOL_KIND]:
        return {"seen": True, "source": "tool_spans", "reason": None}
    if not kinds[LLM_KIND]:
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
    unseen = [finish for captured, finish in llm_seen if not captured]
    if all(finish is not None and not _asks_for_tool(finish) for finish in unseen):
        return {"seen": True, "source": "llm_messages" if len(unseen) < len(llm_seen) else "finish_reasons",
                "reason": None}
    return {"seen": False, "source": None, "reason": f"{len(unseen)} LLM span(s) without captured output "
            "messages (and no tool span) may have asked for tools: tool calls cannot be seen (turn on the "
            "instrumentation's message content capture, or trace tool execution)"}
