"""What particular agent frameworks write beyond their convention's table. Pure.

`assay.traces.conventions` maps each convention's attributes; the frameworks below write spans
in those conventions with shapes of their own, read here (checked against the real packages in
tests/test_handoff_frameworks_e2e.py; references/instrument-your-app.md says it per framework):

- **AutoGen AgentChat** hands off through tools `transfer_to_<target>` (its `Handoff`, the name
  lower-cased). Its own tracing writes them as `execute_tool transfer_to_<target>` spans
  (`gen_ai.system = autogen`, no arguments); openinference-instrumentation-autogen-agentchat as
  TOOL spans named `<agent>.transfer_to_<target>`, its agents as AGENT spans `<agent>.on_messages_stream`
  whose name is `graph.node.id`. Such a span is a handoff when `<target>` is an agent of the trace;
  else it stays a tool call and the trace names no route (`unread_handoffs`): never a guess.
- **LlamaIndex AgentWorkflow** (openinference-instrumentation-llama-index) writes no AGENT span.
  A tool span's `input.value` is the call's bound arguments `{"kwargs": {...}}`; the `handoff`
  tool's (`to_agent`, `reason`) also holds the workflow's `ctx`, which is no argument. The
  `<LLM class>._prepare_chat_with_tools` spans are typed LLM but call no model.
- **smolagents** (openinference-instrumentation-smolagents): an agent is the AGENT span
  `<name>.run`; a managed agent runs inside its manager's run, which then repeats its answer
  (as langgraph-supervisor's supervisor does): that call is a handoff manager -> managed agent.
  Tool spans' `input.value` is `{"args", "sanitize_inputs_outputs", "kwargs"}`; the
  `final_answer` tool (FinalAnswerTool) is how an agent answers, not a tool call.
- **CrewAI** (openinference-instrumentation-crewai, its model calls from openinference-instrumentation-
  openai): an agent's task is the AGENT span `<role>._execute_core` (`graph.node.id` = the role).
  A manager (hierarchical process) or an agent with `allow_delegation` runs a coworker through the
  TOOL span `Delegate work to coworker` / `Ask question to coworker` (`input.value` = `{task,
  context, coworker}`); the coworker has no span of its own: its model and tool calls are below
  that tool span. Such a span is the coworker's run (an agent span of the role the `<crew>.kickoff`
  span's `crew_agents` lists, matched as CrewAI matches it: whitespace collapsed, quotes dropped,
  without case) and a handoff to it; a coworker that names no agent of the crew and ran no model
  call below is an unread handoff (no route).
- **Google ADK** (its own OTel spans under gen_ai, or openinference-instrumentation-google-adk):
  an agent hands over with its `transfer_to_agent` tool (`gen_ai.tool.type = TransferToAgentTool`),
  the target in the call's `agent_name` argument (`gen_ai.tool.call.arguments`, OpenInference
  `input.value`; without content capture there is none: a handoff whose target is unknown, and the
  route is the answering agent). A tool's result is wrapped: `{"result": <value>}` when the function
  returned no dict, inside `{"id", "name", "response"}` on OpenInference's `output.value`.
  OpenInference 1.0 over ADK 2.x writes an agent run's model calls onto one LLM span (ADK's
  `invoke_agent <agent>`), which keeps the last: `checks.merged_llm_spans` counts them (model
  calls and tokens are undercounted by the trace itself).
- **Nested LLM spans**: a framework's LLM span with another LLM span below it (AutoGen's
  `OpenAIChatCompletionClient.create` over openinference-instrumentation-openai's span of the same
  request) is one model call: the innermost span (nearest the wire) is the call; a wrapper's
  model and token counts fill what its inner span lacks, and are never counted again.
"""

from __future__ import annotations

from typing import Any, Callable

from ..core.jsonio import maybe_json

AUTOGEN_HANDOFF = "transfer_to_"
SMOLAGENTS, SMOLAGENTS_ANSWER = "smolagents.", "final_answer"
_CALL_KEYS = {"args", "kwargs", "sanitize_inputs_outputs"}  # smolagents adds the last
LLAMAINDEX_HANDOFF = "handoff"
NOT_MODEL_CALLS = ("._prepare_chat_with_tools",)  # LlamaIndex: builds the request, sends nothing
_CONTEXT_ARGS = ("ctx",)  # LlamaIndex passes the workflow Context to tools that take one


def smolagents_agent_name(name: Any, attrs: dict) -> str | None:
    """smolagents' AGENT span `<agent name>.run` (openinference-instrumentation-smolagents writes no
    agent.name; its spans carry `smolagents.*` attributes)."""
    if isinstance(name, str) and name.endswith(".run") and any(k.startswith(SMOLAGENTS) for k in attrs):
        return name[:-len(".run")] or None
    return None


def smolagents_managed_call(attrs: dict, inside_agent: bool) -> bool:
    """A smolagents agent run inside another agent's run: the manager called its managed agent."""
    return inside_agent and any(k.startswith(SMOLAGENTS) for k in attrs)


def is_answer_tool(name: Any, attrs: dict) -> bool:
    """smolagents' `final_answer` tool (FinalAnswerTool) is how an agent answers, not a tool call."""
    return name == "FinalAnswerTool" and attrs.get("tool.name") == SMOLAGENTS_ANSWER


CREWAI_DELEGATION = ("Delegate work to coworker", "Ask question to coworker")  # CrewAI's AgentTools
ADK_TRANSFER = "transfer_to_agent"
# the LLM's requests for these tools are the handoffs they make (never requested tool calls)
HANDOFF_REQUESTS = ("delegate_work_to_coworker", "ask_question_to_coworker", ADK_TRANSFER, LLAMAINDEX_HANDOFF)


def crewai_role_key(name: Any) -> str:
    """A CrewAI role as its AgentTools match a coworker: whitespace collapsed, quotes dropped, no case."""
    return " ".join(str(name).split()).replace('"', "").casefold() if isinstance(name, str) else ""


def crewai_roles(attr_dicts: list[dict]) -> dict[str, str]:
    """{role key: role} of the crews in a trace: the `<crew>.kickoff` span's `crew_agents`
    (openinference-instrumentation-crewai), a JSON list of the crew's agents."""
    roles: dict[str, str] = {}
    for attrs in attr_dicts:
        agents = maybe_json(attrs.get("crew_agents"))
        for agent in agents if isinstance(agents, list) else []:
            role = agent.get("role") if isinstance(agent, dict) else None
            if isinstance(role, str) and role.strip():
                roles.setdefault(crewai_role_key(role), role)
    return roles


def crewai_delegation(attrs: dict) -> str | None:
    """The coworker a CrewAI `Delegate work to coworker` / `Ask question to coworker` TOOL span runs
    (its `coworker` argument; CrewAI also takes `co_worker`, and a list's first item), else None."""
    if attrs.get("openinference.span.kind") != "TOOL" or attrs.get("tool.name") not in CREWAI_DELEGATION:
        return None
    args = maybe_json(attrs.get("input.value"))
    who = (args.get("coworker") or args.get("co_worker")) if isinstance(args, dict) else None
    if isinstance(who, str) and who.startswith("[") and who.endswith("]"):
        who = who[1:-1].split(",")[0]
    return who.strip() if isinstance(who, str) and who.strip() else ""


def crewai_delegations(spans: list[dict], is_tool: Callable[[dict], bool], is_llm: Callable[[dict], bool],
                       parent_of: Callable[[dict], dict | None]) -> tuple[dict[int, str], list[dict]]:
    """({id(span): coworker} for CrewAI delegation tool spans that ran a coworker: agent spans of it;
    [{to, span}] for those naming no agent of the crew that ran no model call below: unread handoffs).
    The coworker is the crew's role it names (`crew_roles`), else the name as written when a model
    call ran below the span."""
    found = [(s, who) for s in spans if is_tool(s) and (who := crewai_delegation(s["attributes"])) is not None]
    if not found:
        return {}, []
    roles = crewai_roles([s["attributes"] for s in spans])
    llm_below: set[int] = set()
    for s in spans:
        cur, seen = (parent_of(s) if is_llm(s) else None), set()
        while cur is not None and id(cur) not in seen:
            seen.add(id(cur))
            llm_below.add(id(cur))
            cur = parent_of(cur)
    delegated, unread = {}, []
    for s, who in found:
        role = roles.get(crewai_role_key(who)) or (who if who and id(s) in llm_below else None)
        if role:
            delegated[id(s)] = role
        else:
            unread.append({"to": who or None, "span": s})
    return delegated, unread


def _is_adk(attrs: dict) -> bool:
    return "gen_ai.tool.type" in attrs or any(k.startswith("gcp.vertex.agent.") for k in attrs)


def adk_handoff(attrs: dict) -> dict | None:
    """Google ADK's `transfer_to_agent` tool span (its own, or OpenInference's TOOL span of it): a
    handoff to its `agent_name` argument, checked against the trace's agents; target unknown (None)
    when the arguments were not captured."""
    tool = attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
    if tool != ADK_TRANSFER or not _is_adk(attrs):
        return None
    args = next((a for key in ("gen_ai.tool.call.arguments", "input.value")
                 if isinstance(a := maybe_json(attrs.get(key)), dict)), None)
    to = args.get("agent_name") if args else None
    to = to if isinstance(to, str) and to else None
    frm = attrs.get("gen_ai.agent.name")
    return {"from": frm if isinstance(frm, str) and frm else None, "to": to, "agent_check": to is not None,
            "tool": tool}


def adk_tool_result(result: Any, attrs: dict) -> Any:
    """An ADK tool's own return value: OpenInference's `{"id", "name", "response"}` is the response,
    and ADK's `{"result": <value>}` (what it makes of a return value that is no dict) is the value."""
    if not _is_adk(attrs):
        return result
    if isinstance(result, dict) and set(result) == {"id", "name", "response"}:
        result = result["response"]
    if isinstance(result, dict) and set(result) == {"result"}:
        result = maybe_json(result["result"])
    return result


def adk_merged_llm_span(name: Any, attrs: dict) -> bool:
    """openinference-instrumentation-google-adk (1.0) over google-adk 2.x types ADK's own `invoke_agent
    <agent>` span LLM and writes each model call of that agent run onto it: the span holds the run's
    last call only (earlier calls and their tokens are not in the trace)."""
    return (isinstance(name, str) and name.startswith("invoke_agent ") and attrs.get("openinference.span.kind") == "LLM"
            and _is_adk(attrs))


def call_arguments(value: Any) -> Any:
    """A call recorded as its bound arguments (`{"args": [...], "kwargs": {...}}`: traceloop.entity.input,
    LlamaIndex's input.value): the keyword arguments are the call's (positional ones kept under
    `args`), without the LlamaIndex workflow context. Anything else is returned as read."""
    doc = maybe_json(value)
    if isinstance(doc, dict) and set(doc) <= _CALL_KEYS and isinstance(doc.get("kwargs"), dict):
        kwargs = {k: v for k, v in doc["kwargs"].items() if k not in _CONTEXT_ARGS}
        args = doc.get("args") or []
        return kwargs if not args else {"args": args, **kwargs}
    return doc


def tool_output(doc: Any) -> Any:
    """LlamaIndex's ToolOutput (`{"blocks": [...], "tool_name", "raw_input", "raw_output", ...}` in a
    tool span's output.value): the tool's own return value is `raw_output`."""
    if isinstance(doc, dict) and {"blocks", "tool_name", "raw_output"} <= set(doc):
        return maybe_json(doc["raw_output"])
    return doc


def is_model_call_span(name: Any) -> bool:
    """False for spans typed LLM that send no request (see NOT_MODEL_CALLS)."""
    return not (isinstance(name, str) and name.endswith(NOT_MODEL_CALLS))


def autogen_handoff(name: Any, attrs: dict, openinference: bool) -> dict | None:
    """AutoGen's `transfer_to_<target>` tool span (its own under gen_ai, openinference's) as a handoff
    candidate; `agent_check`: a handoff only if `<target>` is an agent of the trace (`settle_handoffs`)."""
    name = name if isinstance(name, str) else ""
    if not openinference and attrs.get("gen_ai.system") == "autogen" \
            and attrs.get("gen_ai.operation.name") == "execute_tool":
        tool = attrs.get("gen_ai.tool.name")
        frm = None
    elif openinference and attrs.get("openinference.span.kind") == "TOOL" and isinstance(attrs.get("tool.name"), str) \
            and name.endswith("." + attrs["tool.name"]):
        tool = attrs["tool.name"]
        frm = name[:-len(tool) - 1] or None
    else:
        return None
    if isinstance(tool, str) and tool.startswith(AUTOGEN_HANDOFF) and len(tool) > len(AUTOGEN_HANDOFF):
        return {"from": frm, "to": tool[len(AUTOGEN_HANDOFF):], "agent_check": True, "tool": tool}
    return None


def llamaindex_handoff(attrs: dict) -> dict | None:
    """LlamaIndex's `handoff` TOOL span: `to_agent` from its arguments."""
    if attrs.get("openinference.span.kind") != "TOOL" or attrs.get("tool.name") != LLAMAINDEX_HANDOFF:
        return None
    args = call_arguments(attrs.get("input.value"))
    to = args.get("to_agent") if isinstance(args, dict) else None
    return {"from": None, "to": to} if isinstance(to, str) and to else None


def no_agent_note(span_names: list) -> str | None:
    """Why a trace has no agent span, when a framework is known to write none."""
    if any(isinstance(n, str) and n.startswith("AgentWorkflow.") for n in span_names):
        return ("LlamaIndex's AgentWorkflow writes no AGENT span (openinference-instrumentation-llama-index): "
                "only its handoff tool calls name an agent")
    return None


def settle_handoffs(candidates: list[dict], agent_names: set[str]) -> tuple[list[dict], list[dict]]:
    """(handoffs, unread): a candidate needing an agent check is a handoff when its target names an
    agent of the trace (AutoGen lower-cases it: matched without case, the agent's own spelling kept)."""
    known = {n.lower(): n for n in agent_names if isinstance(n, str)}
    done, unread = [], []
    for h in candidates:
        if not h.get("agent_check"):
            done.append(h)
        elif str(h.get("to")).lower() in known:
            done.append({**h, "to": known[str(h["to"]).lower()]})
        else:
            unread.append(h)
    return done, unread


def nested_llm_wrappers(llm_spans: list[dict], parent_of: Callable[[dict], dict | None]) -> dict[int, dict]:
    """{id(wrapper span): the innermost LLM span below it} for LLM spans with an LLM span below them
    (`parent_of(span)` -> its parent span or None)."""
    wrapped: dict[int, dict] = {}
    llm_ids = {id(s) for s in llm_spans}
    for s in llm_spans:  # walk up from every LLM span: each LLM ancestor is a wrapper of it
        seen, cur = set(), parent_of(s)
        while cur is not None and id(cur) not in seen:
            seen.add(id(cur))
            if id(cur) in llm_ids and id(cur) not in wrapped:
                wrapped[id(cur)] = s
            cur = parent_of(cur)
    innermost: dict[int, dict] = {}
    for key, inner in wrapped.items():  # follow a wrapper's inner span while it is itself a wrapper
        hops = 0
        while id(inner) in wrapped and hops < len(wrapped):
            inner, hops = wrapped[id(inner)], hops + 1
        innermost[key] = inner
    return innermost
