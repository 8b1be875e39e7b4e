"""The scripted model behind tests/handoffapp.py: a triage agent handing off to billing or orders.

`handoff_reply(body)` answers one Chat Completions request (FakeModel(script=handoff_reply)).
Which agent is asking is read from the tools it offers, as a real model would see them:

- a domain agent (it offers `lookup_order` or `get_invoice`): after its own tool's result, the
  final answer from that result; before, one call of the tool whose id the user's text names
  (`ORD-<n>` for lookup_order, `INV-<n>` for get_invoice) with that id as the one argument;
- a triage agent (it offers tools whose names contain `transfer_to_`, or LlamaIndex's `handoff`
  tool, whose `to_agent` is the agent its description lists): after a handoff came back
  (a tool message answering a transfer), the last worker's answer repeated; else a transfer to
  orders when the user's text names an order (`ORD-`: checked first, so "charged twice for
  ORD-12" goes to orders, the planted misroute), to billing when it names an invoice (`INV-<n>`
  or the word "invoice"; without an id the billing agent answers without a tool), else a
  greeting of its own;
- Google ADK's triage agent (it offers `transfer_to_agent`, whose `agent_name` enum lists its
  sub-agents): the same choice as a transfer to the sub-agent whose name names it;
- CrewAI's manager (it offers `delegate_work_to_coworker`, the coworkers' roles in its description):
  the same choice as a delegation to the coworker whose role names it (`task` and `context`: the
  current task), the coworker's answer (the tool's result) repeated as the final answer;
- smolagents (it offers `final_answer`): the same choices as `final_answer` calls and managed-agent
  calls (`_smolagents_reply`).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

_ids = itertools.count(1)
CREWAI_DELEGATE = "delegate_work_to_coworker"  # CrewAI's manager delegates with this tool
ADK_TRANSFER = "transfer_to_agent"  # Google ADK's transfer tool (`agent_name`: one of its sub-agents)
ORDER_RE, INVOICE_RE = re.compile(r"ORD-\d+"), re.compile(r"INV-\d+")
ORDERS = {"ORD-12": "shipped", "ORD-7": "delivered", "ORD-99": "lost"}
INVOICES = {"INV-7": 42.5, "INV-3": 19.0}


def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return json.dumps({"order_id": order_id, "status": ORDERS.get(order_id, "unknown")})


def get_invoice(invoice_id: str) -> str:
    """Fetch an invoice's total."""
    return json.dumps({"invoice_id": invoice_id, "total": INVOICES.get(invoice_id, 0.0)})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _call(name: str, args: dict) -> tuple[dict, str]:
    call = {"id": f"call_{next(_ids):06d}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"


def _say(text: str) -> tuple[dict, str]:
    return {"role": "assistant", "content": text}, "stop"


def _first_param(tool: dict) -> str | None:
    props = ((tool.get("function") or {}).get("parameters") or {}).get("properties") or {}
    return next(iter(props), None)


def handoff_reply(body: dict) -> tuple[dict, str]:
    tools = {(t.get("function") or {}).get("name"): t for t in body.get("tools") or []}
    if "final_answer" in tools:
        return _smolagents_reply(body.get("messages") or [], tools)
    return _reply(body.get("messages") or [], tools)


def _smolagents_reply(messages: list, tools: dict) -> tuple[dict, str]:
    """smolagents: every answer is a `final_answer` call, tool results come back as user messages
    `Observation:\n<result>`, and a managed agent is a tool named after it taking a `task`."""
    last = _text(messages[-1].get("content")) if messages else ""
    if last.startswith("Observation:"):
        obs = last[len("Observation:"):].strip()
        try:
            data = json.loads(obs)
        except ValueError:
            return _call("final_answer", {"answer": obs})  # a managed agent's report
        return _call("final_answer", {"answer": f"Order {data['order_id']} is {data['status']}." if "status" in data
                                      else f"Invoice {data['invoice_id']} totals {data['total']}."})
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    for name, pattern in (("lookup_order", ORDER_RE), ("get_invoice", INVOICE_RE)):
        if name in tools:
            found = pattern.search(user)
            return _call(name, {_first_param(tools[name]) or "id": found.group(0)}) if found else \
                _call("final_answer", {"answer": "I could not find an id in your message."})
    target = "order" if ORDER_RE.search(user) else "billing" if INVOICE_RE.search(user) or "invoice" in user.lower() else None
    agent = next((n for n in tools if target and n and target in n), None)
    if agent:
        return _call(agent, {"task": user.split("New task:")[-1].strip()})
    return _call("final_answer", {"answer": "Hello! I can help with orders and invoices."})


def _reply(messages: list, tools: dict) -> tuple[dict, str]:
    call_names = {tc.get("id"): (tc.get("function") or {}).get("name")
                  for m in messages if m.get("role") == "assistant" for tc in m.get("tool_calls") or []}
    last = messages[-1] if messages else {}
    last_tool = call_names.get(last.get("tool_call_id")) if last.get("role") == "tool" else None
    user = next((_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")
    domain = [n for n in ("lookup_order", "get_invoice") if n in tools]
    transfers = [n for n in tools if n and ("transfer_to_" in n or n in ("handoff", CREWAI_DELEGATE))]
    if last_tool in ("lookup_order", "get_invoice"):  # (AutoGen's reflect_on_tool_use offers no tools here)
        data = json.loads(_text(last.get("content")))
        if set(data) == {"result"}:  # Google ADK wraps a tool's non-dict return value as {"result": ...}
            data = json.loads(data["result"])
        if "status" in data:
            return _say(f"Order {data['order_id']} is {data['status']}.")
        return _say(f"Invoice {data['invoice_id']} totals {data['total']}.")
    if domain:
        # the user's own words: AutoGen passes the other agents' messages as user messages too
        users = [_text(m.get("content")) for m in reversed(messages) if m.get("role") == "user"]
        pattern = ORDER_RE if domain[0] == "lookup_order" else INVOICE_RE
        found = next((f for u in users if (f := pattern.search(u))), None)
        if found:
            return _call(domain[0], {_first_param(tools[domain[0]]) or "id": found.group(0)})
        return _say("I could not find an id in your message.")
    if transfers:
        if last_tool == CREWAI_DELEGATE:  # the coworker's answer is the delegation tool's result
            return _say(_text(last.get("content")) or "Done.")
        if last_tool and "transfer" in last_tool:
            worker = next((_text(m.get("content")) for m in reversed(messages)
                           if m.get("role") == "assistant" and _text(m.get("content")) and not m.get("tool_calls")), "")
            return _say(worker or "Done.")
        target = ("order" if ORDER_RE.search(user) else
                  "billing" if INVOICE_RE.search(user) or "invoice" in user.lower() else None)
        name = next((n for n in transfers if target and target in n), None)
        if target and "handoff" in tools:  # LlamaIndex: one tool, the agents named in its description
            desc = str((tools["handoff"].get("function") or {}).get("description") or "")
            agent = next((a for a in re.findall(r"(\w+)'?:", desc) if target in a), None)
            return _call("handoff", {"to_agent": agent, "reason": user}) if agent else _say("No agent for that.")
        if target and CREWAI_DELEGATE in tools:  # CrewAI: the coworkers' roles in the tool's description
            desc = str((tools[CREWAI_DELEGATE].get("function") or {}).get("description") or "")
            roles = re.search(r"coworkers: ([^\n]+)", desc)
            role = next((r.strip() for r in (roles.group(1).split(",") if roles else []) if target in r.lower()), None)
            task = user.split("Current Task:")[-1].split("\n\n")[0].strip()
            return _call(CREWAI_DELEGATE, {"task": task, "context": task, "coworker": role}) if role else \
                _say("No coworker for that.")
        if target and ADK_TRANSFER in tools:  # Google ADK: one tool, the agents in its parameter's enum
            props = ((tools[ADK_TRANSFER].get("function") or {}).get("parameters") or {}).get("properties") or {}
            agent = next((a for a in (props.get("agent_name") or {}).get("enum") or [] if target in a), None)
            return _call(ADK_TRANSFER, {"agent_name": agent}) if agent else _say("No agent for that.")
        if name:
            param = _first_param(tools[name])
            return _call(name, {param: user} if param else {})
    return _say("Hello! I can help with orders and invoices.")
