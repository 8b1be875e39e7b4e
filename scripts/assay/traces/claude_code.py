"""An agent's transcript as the case's trace: Claude Code's `--output-format stream-json
--verbose` lines in, the normalized trajectory every trace-fed layer reads out. Pure.

The events (one JSON object a line): `system`/`init` (session id, model, tools, MCP servers),
`assistant` messages whose content holds `tool_use` blocks (id, name, input), `user` messages
whose content holds the matching `tool_result` blocks (`is_error` included), and one final
`result` event (subtype, is_error, result text, session_id, num_turns, duration_ms,
total_cost_usd, usage, modelUsage, permission_denials). An event with `parent_tool_use_id` was
written inside a subagent (the `Task`/`Agent` tool call of that id): its tool calls belong to
that subagent, a nested agent of the session.

What the trajectory holds beyond the OTel readers' shape: `skills` (each `Skill` tool call's
skill, in order: a skill trigger), `permission_denials` (tool name, call id, never the input:
a denied write can carry a whole file), `result` (subtype, is_error, turns, duration, the
CLI's own cost) and `session_id`. Tokens: the `result` event's per-model usage (`modelUsage`,
else `usage` under the init event's model); cache reads and writes count as input tokens (the
prices file has one input price: a conservative figure). A transcript without usage gives one
model call without tokens: its cost is incomplete, never 0.

A transcript that ends without a `result` event (cut off: a killed agent, a full pipe) or holds
a line that is not JSON is `incomplete` with a named reason: the case is infra, never a pass.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping   # Mapping: annotations only; the transcript is JSON, so its objects are dicts

from ..core.ids import MCP_PREFIX, split_mcp  # noqa: F401 (their one definition; imported from here too)

OK, INCOMPLETE = "ok", "incomplete"
MAIN_AGENT = "claude-code"
SUBAGENT_TOOLS = ("Task", "Agent")
SKILL_TOOL = "Skill"
def declared_name(name: str, declared: Iterable[str]) -> str:
    """The name a tool call carries in the trajectory. An MCP tool keeps `mcp__<server>__<tool>`
    unless the adapter's `tools` declares it by its bare `<tool>` name only (either form may be
    declared; expectations then use the declared form)."""
    parts = split_mcp(name)
    known = set(declared)
    if parts is None or name in known:
        return name
    return parts[1] if parts[1] in known else name


def parse_lines(data: bytes) -> tuple[list[dict], str | None]:
    """(the events, why the stream is unreadable or None). Blank lines are skipped."""
    events: list[dict] = []
    text = data.decode("utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            ev = json.loads(line)
        except (ValueError, RecursionError):
            return events, f"line {n} of the transcript is not JSON ({line[:60]!r}): a malformed or cut-off stream"
        if not isinstance(ev, dict):
            return events, f"line {n} of the transcript is not a JSON object"
        events.append(ev)
    return events, None


def _skill_of(inp: Any) -> str | None:
    if not isinstance(inp, dict):
        return None
    for key in ("skill", "command", "name"):
        value = inp.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip().lstrip("/")
    return None


def _result_text(content: Any) -> Any:
    if isinstance(content, list):
        parts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return "\n".join(parts) if len(parts) == len(content) else content
    return content


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _model_calls(result: Mapping[str, Any], model: str | None) -> list[dict]:
    """One model-call row per model the session used, with its tokens (none: no usage reported)."""
    calls = []
    per_model = result.get("modelUsage")
    if isinstance(per_model, dict) and per_model:
        for name, u in sorted(per_model.items()):
            if not isinstance(u, dict):
                continue
            cache = _int(u.get("cacheReadInputTokens")) + _int(u.get("cacheCreationInputTokens"))
            calls.append({"operation": "chat", "agent": MAIN_AGENT, "model": str(name),
                          "input_tokens": _int(u.get("inputTokens")) + cache,
                          "output_tokens": _int(u.get("outputTokens")), "cache_tokens": cache,
                          "duration_ms": None, "error": None})
        if calls:
            return calls
    usage = result.get("usage")
    if isinstance(usage, dict) and ("input_tokens" in usage or "output_tokens" in usage):
        cache = _int(usage.get("cache_read_input_tokens")) + _int(usage.get("cache_creation_input_tokens"))
        return [{"operation": "chat", "agent": MAIN_AGENT, "model": model, "input_tokens":
                 _int(usage.get("input_tokens")) + cache, "output_tokens": _int(usage.get("output_tokens")),
                 "cache_tokens": cache, "duration_ms": None, "error": None}]
    return [{"operation": "chat", "agent": MAIN_AGENT, "model": model, "duration_ms": None, "error": None,
             "usage_missing": True, "note": "the result event reports no token usage: the cost is incomplete"}]


def read_transcript(events: list[dict], *, declared: Iterable[str] = ()) -> dict:
    """{status ok|incomplete, reason, trajectory} for one agent run's events."""
    declared = list(declared)
    init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), {})
    model = init.get("model") if isinstance(init.get("model"), str) else None
    calls: list[dict] = []
    by_id: dict[str, dict] = {}
    agent_of_call: dict[str, str] = {}          # a subagent's Task call id -> its agent name
    agents = [{"name": MAIN_AGENT, "parent_agent": None, "span_id": None, "start_ns": None, "end_ns": None,
               "duration_ms": None, "error": None}]
    result: Mapping[str, Any] | None = None
    for ev in events:
        kind = ev.get("type")
        parent = ev.get("parent_tool_use_id")
        agent = agent_of_call.get(parent, MAIN_AGENT) if isinstance(parent, str) else MAIN_AGENT
        msg = ev.get("message") if isinstance(ev.get("message"), dict) else {}
        content = msg.get("content") if isinstance(msg.get("content"), list) else []
        if kind == "assistant":
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                raw = str(block.get("name") or "")
                inp = block.get("input")
                cid = str(block.get("id")) if block.get("id") is not None else None
                call = {"name": declared_name(raw, declared) or None, "agent": agent, "call_id": cid,
                        "arguments": inp, "arguments_captured": isinstance(inp, dict), "result": None,
                        "result_captured": False, "origin": "executed", "span_id": cid, "start_ns": None,
                        "end_ns": None, "duration_ms": None, "error": None}
                if split_mcp(raw):
                    call["mcp"] = {"server": split_mcp(raw)[0], "tool": split_mcp(raw)[1]}
                if raw == SKILL_TOOL:
                    call["skill"] = _skill_of(inp)
                if raw in SUBAGENT_TOOLS and cid:
                    sub = inp.get("subagent_type") if isinstance(inp, dict) else None
                    name = str(sub) if isinstance(sub, str) and sub else f"subagent-{len(agents)}"
                    agent_of_call[cid] = name
                    agents.append({"name": name, "parent_agent": agent, "span_id": cid, "start_ns": None,
                                   "end_ns": None, "duration_ms": None, "error": None,
                                   "description": inp.get("description") if isinstance(inp, dict) else None})
                calls.append(call)
                if cid:
                    by_id[cid] = call
        elif kind == "user":
            for block in content:
                if not isinstance(block, dict) or block.get("type") != "tool_result":
                    continue
                call = by_id.get(str(block.get("tool_use_id")))
                if call is None:
                    continue
                call["result"] = _result_text(block.get("content"))
                call["result_captured"] = True
                if block.get("is_error") is True:
                    text = call["result"] if isinstance(call["result"], str) else "tool_result is_error"
                    call["error"] = text[:300] or "tool_result is_error"
        elif kind == "result":
            result = ev
    # a skill counts as triggered when its Skill call was not refused (an unknown skill is an error)
    skills = [c["skill"] for c in calls if c.get("skill") and not c["error"]]
    denials = []
    if result is not None:
        for d in result.get("permission_denials") or []:
            if isinstance(d, dict):
                denials.append({"tool": declared_name(str(d.get("tool_name") or ""), declared),
                                "call_id": d.get("tool_use_id")})
    llm = _model_calls(result or {}, model)
    usage_total = {"input_tokens": sum(_int(c.get("input_tokens")) for c in llm),
                   "output_tokens": sum(_int(c.get("output_tokens")) for c in llm)}
    session = (result or {}).get("session_id") or init.get("session_id")
    trajectory = {
        "trace_id": str(session) if session else None, "session_id": session, "agents": agents, "llm_calls": llm,
        "tool_calls": calls, "handoffs": [], "usage": {"by_agent": {MAIN_AGENT: usage_total}, "total": usage_total},
        "convention": {"used": "claude-code-stream-json", "declared": "claude-code", "foreign": {}},
        "tool_log": {"seen": True, "source": "transcript", "reason": None},
        "skills": skills, "permission_denials": denials,
        "cwd": init.get("cwd") if isinstance(init.get("cwd"), str) else None,   # path rules read in it (score.tool_rule)
        # the session's permission mode (bypassPermissions: nothing is asked, so nothing is denied; score.agent)
        "permission_mode": init.get("permissionMode") if isinstance(init.get("permissionMode"), str) else None,
        "mcp_servers": [{"name": s.get("name"), "status": s.get("status")} for s in init.get("mcp_servers") or []
                        if isinstance(s, dict)],
        "available_tools": [t for t in init.get("tools") or [] if isinstance(t, str)],
        # the skills the session listed (None: the init event lists none, e.g. another agent CLI) and its slash
        # commands: a SKILL.md without a frontmatter description is a command only (score.agent.skills_not_offered)
        "offered_skills": ([s for s in init["skills"] if isinstance(s, str)] if isinstance(init.get("skills"), list)
                           else None),
        "slash_commands": [c for c in init.get("slash_commands") or [] if isinstance(c, str)],
        # a plugin the CLI refused to load (a corrupt or invalid manifest): the session had none of it
        "plugin_errors": [{"path": e.get("path"), "message": e.get("message")} for e in init.get("plugin_errors") or []
                          if isinstance(e, dict)],
        # which CLI and model ran the session (the init event's): a lift across two of them is not the arm's alone
        "agent_cli": {"version": init.get("claude_code_version") if isinstance(init.get("claude_code_version"), str)
                      else None, "model": model},
        "result": None if result is None else {
            k: result.get(k) for k in ("subtype", "is_error", "num_turns", "duration_ms", "duration_api_ms",
                                        "total_cost_usd")},
    }
    if result is None:
        why = ("the transcript ended without a result event (cut off: the agent was killed or its output "
               f"stopped after {len(events)} event(s))")
        return {"status": INCOMPLETE, "reason": why, "trajectory": trajectory}
    return {"status": OK, "reason": None, "trajectory": trajectory}


def read_stream(data: bytes, *, declared: Iterable[str] = ()) -> dict:
    """`read_transcript` over the raw stdout bytes; an unreadable line makes it incomplete."""
    events, bad = parse_lines(data)
    got = read_transcript(events, declared=declared)
    got["events"] = events
    if bad is not None:
        got.update(status=INCOMPLETE, reason=bad)
    elif not events:
        got.update(status=INCOMPLETE, reason="the agent wrote no transcript (no stream-json line on stdout)")
    return got


def answer_of(result_event: Mapping[str, Any] | None) -> str | None:
    value = (result_event or {}).get("result")
    return value if isinstance(value, str) else None
