"""Span attribute conventions (`traces.convention`): one small mapping table each. Pure.

A convention says which spans are agents, LLM calls and tool calls, and which attributes hold
an agent's name, a tool's name / call id / arguments / result, the model and the token counts,
and where an LLM span keeps the tool calls it asked for (its output messages) and the tool
results it was given (its input messages). `auto` picks one per trace by marker attributes.

- `gen_ai`: OTel GenAI semantic conventions (`gen_ai.operation.name` = invoke_agent | chat |
  text_completion | generate_content | execute_tool; messages in `gen_ai.input.messages` /
  `gen_ai.output.messages` as role + parts). Written by opentelemetry-instrumentation-openai-v2,
  opentelemetry-util-genai, opentelemetry-instrumentation-openai-agents-v2.
- `openinference`: Arize OpenInference (`openinference.span.kind` = AGENT | LLM | TOOL, `tool.name`,
  `graph.node.id` (an agent's name, AutoGen AgentChat), `input.value`, `output.value`, `llm.token_count.*`, `llm.output_messages.<i>.message.tool_calls.
  <j>.tool_call.*`). Written by openinference-instrumentation-* and OITracer.
- `openllmetry`: Traceloop OpenLLMetry (`traceloop.span.kind` = agent | tool | workflow | task,
  `traceloop.entity.name`, `traceloop.entity.input` / `.output`; LLM spans in gen_ai form or the
  older `llm.request.type` + `gen_ai.prompt.<i>.*` / `gen_ai.completion.<i>.*` form).

Handoffs (one agent passing the request to another) are not tool calls: each convention names
the spans that record one (`handoff(span name, attributes)` -> {from, to} or None; see
`assay.traces.routing` for how the route follows them).

A tool-argument value that is a JSON Schema (an object with `type: object` and `properties`)
is not arguments: it is skipped and the next source of the table is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from ..core.jsonio import maybe_json
from ..core.vocab import TRACE_CONVENTIONS
from . import frameworks
from .frameworks import call_arguments

AGENT, LLM, TOOL = "agent", "llm", "tool"
AUTO = "auto"


_json = maybe_json


def looks_like_json_schema(value: Any) -> bool:
    """True for a JSON Schema of an object (what some libraries put where arguments belong)."""
    value = _json(value)
    return (isinstance(value, dict) and value.get("type") == "object" and isinstance(value.get("properties"), dict)
            and ("title" in value or "required" in value or all(isinstance(v, dict) for v in value["properties"].values())))


def _oi_output(value: Any) -> Any:
    """output.value; a LangChain ToolMessage (`{"type": "tool", "data": {"content": ...}}`, what
    openinference-instrumentation-langchain records for a LangGraph tool) is its content; LlamaIndex's
    ToolOutput is its raw_output (assay.traces.frameworks)."""
    doc = _json(value)
    if isinstance(doc, dict) and doc.get("type") == "tool" and isinstance(doc.get("data"), dict) \
            and "content" in doc["data"]:
        return _json(doc["data"]["content"])
    return frameworks.tool_output(doc)


@dataclass(frozen=True)
class Convention:
    """One convention's mapping table (see the module docstring)."""
    name: str
    markers: tuple[str, ...]                       # attribute keys only this convention writes
    kinds: tuple[tuple[str, dict[str, str]], ...]  # (attribute, value -> agent|llm|tool), first hit wins
    agent_name: tuple[str, ...]
    tool_name: tuple[str, ...]
    tool_call_id: tuple[str, ...]
    tool_args: tuple[tuple[str, Callable[[Any], Any]], ...]
    tool_result: tuple[tuple[str, Callable[[Any], Any]], ...]
    model: tuple[str, ...]
    input_tokens: tuple[str, ...]
    output_tokens: tuple[str, ...]
    finish_reasons: tuple[str, ...]
    agent_name_from_span_name: bool = False
    handoff: Callable[[Any, dict], dict | None] = lambda name, attrs: None
    # (span name, attributes) -> an agent name the framework keeps outside the name attributes
    framework_agent_name: Callable[[Any, dict], str | None] = lambda name, attrs: None
    # the setting that leaves tool arguments / results out of this convention's spans, and its fix
    hides: tuple[str, str] = ("", "")

    def kind_of(self, attrs: dict) -> str | None:
        for key, table in self.kinds:
            value = attrs.get(key)
            if isinstance(value, str) and value in table:
                return table[value]
        return None

    @staticmethod
    def first(attrs: dict, keys: tuple[str, ...]) -> Any:
        for key in keys:
            if attrs.get(key) not in (None, ""):
                return attrs[key]
        return None

    def tokens(self, attrs: dict) -> dict[str, int]:
        out = {}
        for field, keys in (("input_tokens", self.input_tokens), ("output_tokens", self.output_tokens)):
            value = self.first(attrs, keys)
            if isinstance(value, int) and not isinstance(value, bool):
                out[field] = value
        return out

    def arguments(self, attrs: dict) -> tuple[bool, Any, str | None]:
        """(captured, arguments, note): the first source that is not a JSON Schema."""
        note = None
        for key, convert in self.tool_args:
            if key in attrs and attrs[key] != REDACTED:
                value = convert(attrs[key])
                if looks_like_json_schema(value):
                    note = f"{key} holds a JSON Schema, not arguments: ignored"
                    continue
                return True, value, note
        return False, None, note

    def result(self, attrs: dict) -> tuple[bool, Any]:
        for key, convert in self.tool_result:
            if key in attrs and attrs[key] != REDACTED:
                return True, convert(attrs[key])
        return False, None

    def finish(self, attrs: dict) -> list[str] | None:
        value = self.first(attrs, self.finish_reasons)
        if value is None:
            return None
        return [str(v) for v in value] if isinstance(value, list) else [str(value)]


# ---------------------------------------------------------------------------- handoffs

def _gen_ai_handoff(name: Any, attrs: dict) -> dict | None:
    """opentelemetry-instrumentation-openai-agents-v2: an `agent_handoff` span names both agents;
    AutoGen's own `execute_tool transfer_to_<agent>`, Google ADK's `execute_tool transfer_to_agent`
    (assay.traces.frameworks)."""
    if attrs.get("gen_ai.operation.name") != "agent_handoff":
        return frameworks.autogen_handoff(name, attrs, openinference=False) or frameworks.adk_handoff(attrs)
    return {"from": attrs.get("gen_ai.handoff.from_agent"), "to": attrs.get("gen_ai.handoff.to_agent")}


def langgraph_metadata(attrs: dict) -> dict:
    """The LangGraph run metadata openinference-instrumentation-langchain keeps in `metadata`."""
    meta = _json(attrs.get("metadata"))
    return meta if isinstance(meta, dict) and "langgraph_node" in meta else {}


def _langgraph_agent(meta: dict) -> str | None:
    """The (sub)graph a LangGraph node runs in: the last `name:<id>` of `checkpoint_ns`, else the node.

    `create_react_agent(name="orders")` runs its generic `agent` / `tools` nodes inside the
    subgraph `orders`; langgraph-supervisor's own agent is the subgraph `supervisor`.
    """
    ns = meta.get("checkpoint_ns")
    if isinstance(ns, str) and ns:
        return ns.split("|")[-1].split(":")[0] or None
    node = meta.get("langgraph_node")
    return node if isinstance(node, str) and node else None


TRANSFER_PREFIXES = ("transfer_to_", "transfer_back_to_")  # openai-agents and langgraph handoff tools
_OI_HANDOFF_PREFIX = "handoff to "


def _oi_handoff(name: Any, attrs: dict) -> dict | None:
    """OpenInference handoffs: openinference-instrumentation-openai-agents' TOOL span `handoff to X`
    (no tool.name; input.value = from, output.value = to), and langgraph-supervisor's `transfer_to_X` /
    `transfer_back_to_X` tools (metadata `__handoff_destination`), whatever span kind carries them;
    AutoGen's, LlamaIndex's and Google ADK's handoff tools (assay.traces.frameworks; CrewAI's
    delegation tools are its coworkers' runs: assay.traces.normalize)."""
    kind = attrs.get("openinference.span.kind")
    name = name if isinstance(name, str) else ""
    meta = langgraph_metadata(attrs)
    if meta and kind in ("TOOL", "AGENT"):
        dest = meta.get("__handoff_destination")
        prefix = next((p for p in TRANSFER_PREFIXES if name.startswith(p)), None)
        if isinstance(dest, str) and dest or prefix:
            return {"from": _langgraph_agent(meta), "to": dest if isinstance(dest, str) and dest else name[len(prefix):]}
    if kind == "TOOL" and not attrs.get("tool.name") and (name == "handoff" or name.startswith(_OI_HANDOFF_PREFIX)):
        # the span name is never redacted; input.value / output.value are under OPENINFERENCE_HIDE_*
        to = name[len(_OI_HANDOFF_PREFIX):] or _unredacted(attrs.get("output.value"))
        return {"from": _unredacted(attrs.get("input.value")), "to": to}
    return (frameworks.autogen_handoff(name, attrs, openinference=True) or frameworks.llamaindex_handoff(attrs)
            or frameworks.adk_handoff(attrs))


REDACTED = "__REDACTED__"  # what OpenInference writes for hidden inputs and outputs


def _unredacted(value: Any) -> Any:
    return None if value in (None, "", REDACTED) else value


def _oi_framework_agent(name: Any, attrs: dict) -> str | None:
    meta = langgraph_metadata(attrs)
    return _langgraph_agent(meta) if meta else frameworks.smolagents_agent_name(name, attrs)


GEN_AI_LLM_OPS = {"chat": LLM, "text_completion": LLM, "generate_content": LLM}
_GEN_AI_MESSAGES = ("gen_ai.input.messages", "gen_ai.output.messages")

_GEN_AI_CAPTURE = ("content capture is off: set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY "
                   "(true for the openai-agents instrumentation)")

# the usage's names, then their names before semantic conventions 1.27 (older instrumentations write them)
GEN_AI_USAGE = (("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
                ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"))
GEN_AI = Convention(
    name="gen_ai", markers=("gen_ai.operation.name",),
    kinds=(("gen_ai.operation.name", {"invoke_agent": AGENT, "execute_tool": TOOL, **GEN_AI_LLM_OPS}),),
    agent_name=("gen_ai.agent.name",), tool_name=("gen_ai.tool.name",), tool_call_id=("gen_ai.tool.call.id",),
    tool_args=(("gen_ai.tool.call.arguments", _json),), tool_result=(("gen_ai.tool.call.result", _json),),
    model=("gen_ai.response.model", "gen_ai.request.model"), input_tokens=GEN_AI_USAGE[0], output_tokens=GEN_AI_USAGE[1],
    finish_reasons=("gen_ai.response.finish_reasons",), handoff=_gen_ai_handoff,
    hides=(_GEN_AI_CAPTURE,) * 2)

OPENINFERENCE = Convention(
    name="openinference", markers=("openinference.span.kind",),
    kinds=(("openinference.span.kind", {"AGENT": AGENT, "LLM": LLM, "TOOL": TOOL}),),
    agent_name=("agent.name", "gen_ai.agent.name", "graph.node.id"), tool_name=("tool.name", "gen_ai.tool.name"),
    tool_call_id=("tool_call.id", "gen_ai.tool.call.id"),
    tool_args=(("input.value", call_arguments), ("tool_call.function.arguments", _json), ("gen_ai.tool.call.arguments", _json)),
    tool_result=(("output.value", _oi_output), ("gen_ai.tool.call.result", _json)),
    model=("llm.model_name", "gen_ai.response.model", "gen_ai.request.model"),
    input_tokens=("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
    output_tokens=("llm.token_count.completion", "gen_ai.usage.output_tokens"),
    finish_reasons=("llm.finish_reason", "gen_ai.response.finish_reasons"), agent_name_from_span_name=True,
    handoff=_oi_handoff, framework_agent_name=_oi_framework_agent,
    hides=tuple(f"OPENINFERENCE_HIDE_{w}=true (or TraceConfig(hide_{w.lower()}=True)) hides them: unset it or set "
                "it to false" for w in ("INPUTS", "OUTPUTS")))

OPENLLMETRY = Convention(
    name="openllmetry", markers=("traceloop.span.kind", "traceloop.entity.name", "llm.request.type"),
    kinds=(("traceloop.span.kind", {"agent": AGENT, "tool": TOOL}),
           ("gen_ai.operation.name", GEN_AI_LLM_OPS),
           ("llm.request.type", {"chat": LLM, "completion": LLM})),
    agent_name=("traceloop.entity.name", "gen_ai.agent.name"), tool_name=("gen_ai.tool.name", "traceloop.entity.name"),
    tool_call_id=("gen_ai.tool.call.id",),
    tool_args=(("traceloop.entity.input", call_arguments), ("gen_ai.tool.call.arguments", _json)),
    tool_result=(("traceloop.entity.output", _json), ("gen_ai.tool.call.result", _json)),
    model=("gen_ai.response.model", "gen_ai.request.model"), input_tokens=GEN_AI_USAGE[0], output_tokens=GEN_AI_USAGE[1],
    finish_reasons=("gen_ai.response.finish_reasons", "gen_ai.completion.0.finish_reason"),
    hides=("TRACELOOP_TRACE_CONTENT=false hides them: unset it or set it to true",) * 2)

CONVENTIONS: dict[str, Convention] = {c.name: c for c in (GEN_AI, OPENINFERENCE, OPENLLMETRY)}
CONVENTION_NAMES: tuple[str, ...] = TRACE_CONVENTIONS
assert set(CONVENTION_NAMES) == {*CONVENTIONS, AUTO}, "core.vocab.TRACE_CONVENTIONS and the tables disagree"
# `auto` tries the conventions with their own markers first; gen_ai's marker is shared by the others.
_AUTO_ORDER = (OPENINFERENCE, OPENLLMETRY, GEN_AI)


def markers_seen(spans: list[dict]) -> dict[str, str]:
    """{convention: first marker attribute seen} over the spans' attributes."""
    seen: dict[str, str] = {}
    for s in spans:
        attrs = s["attributes"]
        for conv in _AUTO_ORDER:
            if conv.name not in seen:
                hit = next((m for m in conv.markers if m in attrs), None)
                if hit:
                    seen[conv.name] = hit
    return seen


def pick(declared: str, spans: list[dict]) -> tuple[Convention, dict]:
    """(the convention to read these spans with, {declared, used, by, foreign}).

    `auto`: the first of openinference, openllmetry, gen_ai whose marker a span carries
    (gen_ai when none does). A declared convention is used as declared; `foreign` names another
    convention's markers found on the spans (the trace is then not read as declared).
    """
    seen = markers_seen(spans)
    if declared == AUTO:
        conv = next((c for c in _AUTO_ORDER if c.name in seen), GEN_AI)
        by = f"marker {seen[conv.name]}" if conv.name in seen else "no convention's marker attribute: gen_ai assumed"
        return conv, {"declared": AUTO, "used": conv.name, "by": by, "foreign": {}, "capture": capture_info(conv)}
    conv = CONVENTIONS[declared]
    # gen_ai's marker is written by the others' LLM instrumentations too: never foreign.
    foreign = {name: marker for name, marker in seen.items() if name not in (conv.name, GEN_AI.name)}
    return conv, {"declared": declared, "used": conv.name, "by": "declared", "foreign": foreign, "capture": capture_info(conv)}


def capture_info(conv: Convention) -> dict[str, str]:
    """{arguments, results}: where this convention keeps a tool call's arguments / results and what
    leaves them out (what a scorer says when a call's were not captured)."""
    return {what: f"{attrs[0][0]}; {hide}" for what, attrs, hide in
            (("arguments", conv.tool_args, conv.hides[0]), ("results", conv.tool_result, conv.hides[1]))}


# ---------------------------------------------------------------------------- LLM message parts

def _parts_messages(value: Any) -> list[dict]:
    doc = _json(value)
    return [m for m in doc if isinstance(m, dict)] if isinstance(doc, list) else []


_OI_KEY = re.compile(r"^llm\.(input|output)_messages\.(\d+)\.message\.(.+)$")
_TL_KEY = re.compile(r"^gen_ai\.(prompt|completion)\.(\d+)\.(.+)$")


def _indexed(attrs: dict, pattern: re.Pattern, side: str) -> list[dict]:
    """Flattened `<prefix>.<i>.<rest>` attributes regrouped into a list of {rest: value}."""
    groups: dict[int, dict] = {}
    for key, value in attrs.items():
        m = pattern.match(key)
        if m and m.group(1) == side:
            groups.setdefault(int(m.group(2)), {})[m.group(3)] = value
    return [groups[i] for i in sorted(groups)]


def _flat_tool_calls(msg: dict, prefix: str, fields: tuple[str, str, str]) -> list[dict]:
    """Tool calls kept as `<prefix><j>.<field>` keys of one flattened message."""
    calls: dict[int, dict] = {}
    for key, value in msg.items():
        if key.startswith(prefix):
            j, _, rest = key[len(prefix):].partition(".")
            if j.isdigit():
                calls.setdefault(int(j), {})[rest] = value
    out = []
    for j in sorted(calls):
        c = calls[j]
        out.append({"name": c.get(fields[0]), "arguments": _json(c.get(fields[1])), "call_id": c.get(fields[2]),
                    "arguments_captured": fields[1] in c})
    return out


def requested_tool_calls(conv: Convention, attrs: dict) -> tuple[bool, list[dict]]:
    """(output messages captured, tool calls this LLM span's output asked for)."""
    if "gen_ai.output.messages" in attrs:
        calls = []
        for msg in _parts_messages(attrs["gen_ai.output.messages"]):
            for part in msg.get("parts") or []:
                if isinstance(part, dict) and part.get("type") == "tool_call":
                    calls.append({"name": part.get("name"), "arguments": _json(part.get("arguments")),
                                  "call_id": part.get("id"), "arguments_captured": "arguments" in part})
        return True, calls
    if conv is OPENINFERENCE:
        msgs = _indexed(attrs, _OI_KEY, "output")
        calls = [c for m in msgs for c in _flat_tool_calls(
            m, "tool_calls.", ("tool_call.function.name", "tool_call.function.arguments", "tool_call.id"))]
        return bool(msgs), calls
    if conv is OPENLLMETRY:
        msgs = _indexed(attrs, _TL_KEY, "completion")
        calls = [c for m in msgs for c in _flat_tool_calls(m, "tool_calls.", ("name", "arguments", "id"))]
        return bool(msgs), calls
    return False, []


def given_tool_results(conv: Convention, attrs: dict) -> dict[str, Any]:
    """{tool call id: result} from the tool messages in this LLM span's input."""
    out: dict[str, Any] = {}
    for msg in _parts_messages(attrs.get("gen_ai.input.messages")):
        for part in msg.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call_response" and part.get("id"):
                out[str(part["id"])] = _json(part.get("response", part.get("result")))
    if conv is OPENINFERENCE:
        for m in _indexed(attrs, _OI_KEY, "input"):
            if m.get("role") == "tool" and m.get("tool_call_id"):
                out.setdefault(str(m["tool_call_id"]), _json(m.get("content")))
    if conv is OPENLLMETRY:
        for m in _indexed(attrs, _TL_KEY, "prompt"):
            if m.get("role") == "tool" and m.get("tool_call_id"):
                out.setdefault(str(m["tool_call_id"]), _json(m.get("content")))
    return out


def _text_of(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):   # OpenAI-style content parts
        texts = [p.get("text") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "\n".join(texts) if texts else None
    return None


def message_texts(conv: Convention, attrs: dict, side: str) -> list[tuple[str, str]]:
    """[(role, text)] of an LLM span's captured `input` or `output` messages (text parts only);
    [] when content was not captured. Read by mine_traces (assay.mine)."""
    out: list[tuple[str, str]] = []
    key = f"gen_ai.{side}.messages"
    if key in attrs:
        for msg in _parts_messages(attrs[key]):
            role = str(msg.get("role") or ("assistant" if side == "output" else "user"))
            texts = [p.get("content") for p in msg.get("parts") or []
                     if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)]
            if texts:
                out.append((role, "\n".join(texts)))
        return out
    if conv is OPENINFERENCE:
        for m in _indexed(attrs, _OI_KEY, side):
            text = _text_of(m.get("content"))
            if text:
                out.append((str(m.get("role") or "user"), text))
    elif conv is OPENLLMETRY:
        for m in _indexed(attrs, _TL_KEY, "prompt" if side == "input" else "completion"):
            text = _text_of(m.get("content"))
            if text:
                out.append((str(m.get("role") or "user"), text))
    return out
