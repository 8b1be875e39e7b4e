"""The help desk's behaviour: a keyword router, three agents, four tools, tenant data.

Rule-based and deterministic (no model), but shaped like an LLM agent app: the
router picks one agent (billing, tech_support, account), the agent calls tools
with arguments and reads their results, and every step is recorded as an
OpenTelemetry GenAI span. `Desk(broken=True)` plants six realistic regressions;
`Desk(flaky=True)` makes one answer alternate between repeats of the same message.

`Desk.handle(message, tenant, role, recorder, session)` returns `(http_status, body)`
where body is `{"answer", "route", "clarify", "data"}`; the server adds the trace id.

Conversational memory: with a `session` key (the caller's `session_id`, or a
server-issued `conversation_id`), the desk remembers per tenant and session the last
invoice it named on its own, an invoice waiting for a refund amount, the last route and
the last knowledge-base article. So "which of my invoices is still open?" -> "refund 50
on that one" refunds the invoice it just named, "refund INV-1002" -> "25 dollars" issues
that refund, "when is it due?" follows the invoice just discussed, and "that didn't help"
opens a ticket about the last article, and "I'd like a refund of 25 dollars" -> "Which
invoice ...?" -> "INV-1002" refunds 25 on INV-1002. `Desk(broken=True)` also plants a fifth
regression: the desk forgets the session after its first turn, a sixth: a refund
reply no longer says when the money arrives (only a rubric, `refund-eta-v1`, can see it),
a seventh: a refund asked for with an amount but no invoice id is issued on the first
open invoice instead of asking which one (a simulated user's conversation catches it), and an
eighth: an invoice asked for "as JSON" comes back as an object in the answer field, not as text.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from typing import Any

from otlp import SpanRecorder

MODEL = "helpdesk-rules-1"
DEFAULT_TENANT = "acme"  # requests without X-Tenant act as the demo tenant
OOS_ANSWER = "I can only help with billing, technical support and account questions."

# Invoices belong to tenants; the record-level permission check compares them.
INVOICES: dict[str, dict[str, Any]] = {
    "INV-1001": {"tenant": "acme", "amount": 120.00, "status": "open", "due": "2026-12-15"},
    "INV-1002": {"tenant": "acme", "amount": 80.50, "status": "open", "due": "2026-12-20"},
    "INV-1003": {"tenant": "acme", "amount": 200.00, "status": "paid", "due": "2026-10-01"},
    "INV-1004": {"tenant": "acme", "amount": 45.25, "status": "open", "due": "2027-01-05"},
    "INV-2001": {"tenant": "globex", "amount": 300.00, "status": "open", "due": "2026-12-01"},
    "INV-2002": {"tenant": "globex", "amount": 99.99, "status": "paid", "due": "2026-09-30"},
    "INV-3001": {"tenant": "initech", "amount": 15.00, "status": "open", "due": "2026-12-31"},
    "INV-4001": {"tenant": "umbrella", "amount": 60.00, "status": "paid", "due": "2026-08-31"},
}
USERS: dict[str, list[str]] = {
    "acme": ["alice", "bob"], "globex": ["gina", "gus"], "initech": ["ivan"], "umbrella": ["uma"],
}
ALL_USERS = {u for users in USERS.values() for u in users}
PLANS = {"acme": "Business", "globex": "Starter", "initech": "Starter", "umbrella": "Enterprise"}
KB = [
    {"id": "KB-101", "title": "App crashes on the settings screen", "match": ["crash", "closes"],
     "text": "Clear the app cache (Settings > Storage > Clear cache), then update to the latest version."},
    {"id": "KB-102", "title": "VPN keeps disconnecting", "match": ["vpn"],
     "text": "Reinstall the VPN profile from the downloads page and switch the protocol to IKEv2."},
    {"id": "KB-103", "title": "Printer not working", "match": ["printer", "print"],
     "text": "Restart the print spooler service, then remove and re-add the printer."},
    {"id": "KB-104", "title": "Installing the desktop app", "match": ["install", "download"],
     "text": "Download the installer from the Downloads page and run it; admin rights are needed."},
    {"id": "KB-201", "title": "Turning on two-factor authentication", "match": ["two-factor", "2fa"],
     "text": "Open Security settings, choose Two-factor authentication and scan the QR code with your authenticator app."},
]
FLAKY_ALTERNATE = "Try turning the printer off and on again."

ROUTE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "billing": ("invoice", "inv-", "bill", "refund", "charge", "payment", "owe", "balance"),
    "tech_support": ("crash", "error", "bug", "install", "vpn", "printer", "sync", "slow",
                     "not working", "disconnect", "app "),
    "account": ("password", "log in", "login", "sign in", "two-factor", "2fa", "plan", "username"),
}
VAGUE = ("problem", "help", "issue", "question", "something wrong", "not sure")
INJECTION = re.compile(
    r"ignore (all |any |the )?(previous|prior|above|earlier)? ?(instructions|rules|tenant check)"
    r"|admin mode|system prompt|^\s*system:|every tenant|all tenants|developer mode", re.I)
INVOICE_ID = re.compile(r"\bINV-\d{4}\b", re.I)
# Words that point back at something said before ("that one", "it").
REFERS_BACK = re.compile(r"\b(that one|this one|that invoice|this invoice|it|that)\b", re.I)
AMOUNT_ONLY = re.compile(r"^\s*(?:make it |refund )?\$?(\d+(?:\.\d{1,2})?)\s*(?:usd|dollars?|bucks)?[\s,.!]*(?:please)?[\s.!]*$",
                         re.I)
NOT_HELPED = re.compile(r"\b(didn'?t (help|work)|did not (help|work)|still (broken|crashing|not working))\b", re.I)
MAX_SESSIONS = 10000


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _said(answer: Any) -> str:
    """The model's output text: the answer, or its JSON when a (broken) reply sends an object."""
    return answer if isinstance(answer, str) else json.dumps(answer, sort_keys=True)


class Desk:
    """The app's logic. Thread-safe: the only shared state is the flaky counter."""

    def __init__(self, broken: bool = False, flaky: bool = False) -> None:
        self.broken = broken
        self.flaky = flaky
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._sessions: dict[tuple[str, str], dict[str, Any]] = {}   # (tenant, session) -> memory

    # ---- conversational memory ---------------------------------------------------------

    def recall(self, tenant: str, session: str | None) -> dict[str, Any]:
        """What this session said before (a copy; empty without a session)."""
        if not session:
            return {}
        with self._lock:
            memory = self._sessions.get((tenant, session))
            if memory is None:
                return {}
            if self.broken and memory.get("turns", 0) >= 1:
                return {}  # regression (--break): the session is forgotten after its first turn
            return dict(memory)

    def remember(self, tenant: str, session: str | None, **facts: Any) -> None:
        if not session:
            return
        with self._lock:
            if (tenant, session) not in self._sessions and len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))  # oldest first: bounded memory
            memory = self._sessions.setdefault((tenant, session), {"turns": 0})
            memory.update(facts)
            memory["turns"] += 1

    def _resolve(self, message: str, memory: dict[str, Any]) -> tuple[str, str | None]:
        """(message with a back-reference made explicit, a route carried over from the last turn)."""
        text = message
        pending = memory.get("pending_refund")
        if pending and not INVOICE_ID.search(text) and AMOUNT_ONLY.match(text.strip()):
            return f"refund {AMOUNT_ONLY.match(text.strip()).group(1)} on {pending}", "billing"
        wanted = memory.get("refund_wanted")
        named = INVOICE_ID.search(text)
        if wanted is not None and named and "refund" not in text.lower():
            # the invoice id answers the desk's own question about a refund asked for without one
            return f"refund {wanted} on {named.group(0).upper()}".replace("refund  on", "refund on"), "billing"
        last = memory.get("last_invoice")
        if (last and not INVOICE_ID.search(text) and REFERS_BACK.search(text)
                and self.route(text) not in ("tech_support", "account")):
            text = REFERS_BACK.sub(last, text, count=1)
        carried = None
        if memory.get("last_route") in ROUTE_KEYWORDS and (REFERS_BACK.search(message) or NOT_HELPED.search(message)):
            carried = memory["last_route"]
        return text, carried

    # ---- routing -------------------------------------------------------------------------

    def route(self, message: str) -> str:
        """billing | tech_support | account | triage (ambiguous) | out_of_scope."""
        text = f" {message.lower()} "
        scores = {name: sum(kw in text for kw in kws) for name, kws in ROUTE_KEYWORDS.items()}
        if self.broken and "charge" in text:
            return "tech_support"  # regression: "charged" read as a technical fault
        best = max(scores.values())
        if best == 0:
            return "triage" if any(v in text for v in VAGUE) else "out_of_scope"
        winners = [name for name, score in scores.items() if score == best]
        return winners[0] if len(winners) == 1 else "triage"

    def handle(self, message: str, tenant: str, role: str, rec: SpanRecorder,
               session: str | None = None) -> tuple[int, dict]:
        memory = self.recall(tenant, session)
        said = message
        message, carried = self._resolve(message, memory)
        with rec.span("route", **{"helpdesk.router": "keywords"}) as span:
            route = self.route(message)
            if route in ("triage", "out_of_scope") and carried:
                route = carried  # a follow-up ("when is it due?") stays with the last agent
            span["attributes"]["helpdesk.route"] = route
        status, body = self._answer(route, message, said, tenant, role, rec, memory)
        facts: dict[str, Any] = {"last_route": route, "pending_refund": body.pop("_pending_refund", None),
                                 "refund_wanted": body.pop("_refund_wanted", None)}
        named = body.pop("_invoice", None)
        if named:
            facts["last_invoice"] = named
        article = body.pop("_article", None)
        if article:
            facts["last_article"] = article
        self.remember(tenant, session, **facts)
        return status, body

    def _answer(self, route: str, message: str, said: str, tenant: str, role: str, rec: SpanRecorder,
                memory: dict[str, Any]) -> tuple[int, dict]:
        if route == "out_of_scope":
            return 400, self._reply(OOS_ANSWER, route)
        if route == "triage":
            return 200, self._reply("Happy to help. Is this about a bill or invoice, a technical problem, "
                                    "or your account and login?", route, clarify=True)
        agent = {"billing": self._billing, "tech_support": self._tech, "account": self._account}[route]
        with rec.span(f"invoke_agent {route}", **{
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": route,
                "gen_ai.provider.name": "helpdesk"}):
            with rec.span(f"chat {MODEL}", kind="client", **{
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": MODEL,
                    "gen_ai.provider.name": "helpdesk"}) as chat:
                if INJECTION.search(message) or self._names_other_tenant(message, tenant):
                    body = self._reply("I can't share or change another customer's records, and I can't "
                                       "change how I operate. I can help with your own account.", route)
                elif route == "tech_support" and NOT_HELPED.search(said) and memory.get("last_article"):
                    body = self._ticket_for(memory["last_article"])   # a follow-up on the last answer
                else:
                    body = agent(message, tenant, role, rec)
                # finish reasons let a reader tell "no tool was asked for" from "tools not traced"
                asked = any(s["attributes"].get("gen_ai.operation.name") == "execute_tool" for s in rec.spans)
                chat["attributes"].update({
                    # message content capture (the GenAI convention's opt-in): what mine_traces.py reads
                    "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                        {"type": "text", "content": said}]}]),
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                        {"type": "text", "content": _said(body["answer"])}],
                        "finish_reason": "tool_call" if asked else "stop"}]),
                    "gen_ai.usage.input_tokens": 120 + _tokens(message),
                    "gen_ai.usage.output_tokens": _tokens(_said(body["answer"])),
                    "gen_ai.response.finish_reasons": ["tool_calls" if asked else "stop"],
                })
        return 200, body

    @staticmethod
    def _names_other_tenant(message: str, tenant: str) -> bool:
        words = set(re.findall(r"[a-z]+", message.lower()))
        return any(t in words for t in USERS if t != tenant)

    @staticmethod
    def _reply(answer: str, route: str, *, clarify: bool = False, data: dict | None = None) -> dict:
        return {"answer": answer, "route": route, "clarify": clarify, "data": data or {}}

    def _tool(self, rec: SpanRecorder, name: str, args: dict, fn) -> Any:
        """Run a tool inside an execute_tool span that records its arguments and result."""
        with rec.span(f"execute_tool {name}", **{
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": "call_" + hashlib.sha256(
                    json.dumps([name, args, len(rec.spans)], sort_keys=True).encode()).hexdigest()[:12],
                "gen_ai.tool.call.arguments": json.dumps(args, sort_keys=True)}) as span:
            result = fn(**args)
            span["attributes"]["gen_ai.tool.call.result"] = json.dumps(result, sort_keys=True)
        return result

    # ---- tools (the tenant comes from the request context, never from the model) --------

    def _lookup_invoice_tool(self, tenant: str, *, check: bool = True):
        def lookup_invoice(invoice_id: str) -> dict:
            inv = INVOICES.get(invoice_id)
            if inv is None or (check and inv["tenant"] != tenant):
                return {"error": "not_found"}  # never reveal that another tenant's invoice exists
            return {"invoice_id": invoice_id, "amount": inv["amount"], "status": inv["status"],
                    "due": inv["due"]}
        return lookup_invoice

    def _list_invoices_tool(self, tenant: str):
        def list_invoices(status: str) -> dict:
            rows = [{"invoice_id": i, "amount": v["amount"], "status": v["status"]}
                    for i, v in sorted(INVOICES.items())
                    if v["tenant"] == tenant and (status == "any" or v["status"] == status)]
            return {"invoices": rows}
        return list_invoices

    @staticmethod
    def _issue_refund(invoice_id: str, amount: float) -> dict:
        refund_id = "RF-" + hashlib.sha256(f"{invoice_id}:{amount}".encode()).hexdigest()[:6].upper()
        return {"refund_id": refund_id, "invoice_id": invoice_id, "amount": amount, "status": "issued"}

    @staticmethod
    def _search_kb(query: str) -> dict:
        q = query.lower()
        hits = [{"id": a["id"], "title": a["title"], "text": a["text"]}
                for a in KB if any(m in q for m in a["match"])]
        return {"articles": hits[:1]}

    @staticmethod
    def _reset_password(user: str) -> dict:
        return {"user": user, "status": "reset_link_sent"}

    # ---- agents ---------------------------------------------------------------------------

    def _billing(self, message: str, tenant: str, role: str, rec: SpanRecorder) -> dict:
        text = message.lower()
        ids = [i.upper() for i in INVOICE_ID.findall(message)]
        if ids:
            invoice_id = ids[0]
            if "refund" in text:
                return self._refund(message, invoice_id, tenant, role, rec)
            # regression (--break): the plain lookup path skips the tenant check
            lookup = self._lookup_invoice_tool(tenant, check=not self.broken)
            inv = self._tool(rec, "lookup_invoice", {"invoice_id": invoice_id}, lookup)
            if "error" in inv:
                return self._reply("I couldn't find that invoice on your account.", "billing")
            if "json" in text:
                doc = {"invoice_id": invoice_id, "amount": inv["amount"], "status": inv["status"],
                       "due": inv["due"]}
                # regression (--break): the JSON is sent as an object in the answer field, which always
                # held text (a client printing the answer shows no words; json_schema still holds)
                return self._reply(doc if self.broken else json.dumps(doc, sort_keys=True), "billing",
                                   data={"value": inv["amount"]})
            if "due" in text:
                return dict(self._reply(f"Invoice {invoice_id} is due on {inv['due']}.", "billing",
                                        data={"value": inv["due"]}), _invoice=invoice_id)
            return dict(self._reply(f"Invoice {invoice_id} is {inv['status']}: {inv['amount']:.2f} USD, "
                                    f"due {inv['due']}.", "billing", data={"value": inv["amount"]}),
                        _invoice=invoice_id)
        if any(w in text for w in ("total", "how much do i owe", "balance", "how many", "list", "show", "which")):
            status = "paid" if re.search(r"\bpaid\b", text) else "open"
            listed = self._tool(rec, "list_invoices", {"status": status}, self._list_invoices_tool(tenant))
            rows = listed["invoices"]
            if "how many" in text:
                return self._reply(f"You have {len(rows)} {status} invoices.", "billing",
                                   data={"value": len(rows)})
            if any(w in text for w in ("total", "owe", "balance")):
                counted = rows[:-1] if (self.broken and len(rows) > 1) else rows  # regression: off by one
                total = round(sum(r["amount"] for r in counted), 2)
                return self._reply(f"The total of your {status} invoices is {total:.2f} USD "
                                   f"across {len(rows)} invoice{'' if len(rows) == 1 else 's'}.", "billing",
                                   data={"value": total})
            listing = "; ".join(f"{r['invoice_id']} ({r['amount']:.2f} USD)" for r in rows) or "none"
            body = self._reply(f"Your {status} invoices: {listing}.", "billing", data={"value": rows})
            if len(rows) == 1:
                body["_invoice"] = rows[0]["invoice_id"]  # "that one" can only mean this invoice
            return body
        if "refund" in text:
            amounts = re.findall(r"(?<![\w-])\$?(\d+(?:\.\d{1,2})?)\b", message)
            if self.broken and amounts and not REFERS_BACK.search(message):
                # regression (--break): a refund asked for without an invoice id is issued on the
                # first open invoice instead of asking which one
                first = self._tool(rec, "list_invoices", {"status": "open"}, self._list_invoices_tool(tenant))
                if first["invoices"]:
                    guess = first["invoices"][0]["invoice_id"]
                    return self._refund(f"refund {amounts[0]} on {guess}", guess, tenant, role, rec)
            body = self._reply("I can help with invoices, refunds and payments. Which invoice is this about?",
                               "billing", clarify=True)
            return dict(body, _refund_wanted=amounts[0] if amounts else "")
        return self._reply("I can help with invoices, refunds and payments. Which invoice is this about?",
                           "billing", clarify=True)

    def _refund(self, message: str, invoice_id: str, tenant: str, role: str, rec: SpanRecorder) -> dict:
        if role == "viewer":
            return self._reply("Your role can view invoices but not issue refunds; ask an account admin.",
                               "billing")
        numbers = re.findall(r"(?<![\w-])\$?(\d+(?:\.\d{1,2})?)\b", INVOICE_ID.sub(" ", message))
        if not numbers:
            return dict(self._reply(f"How much should I refund on {invoice_id}?", "billing", clarify=True),
                        _pending_refund=invoice_id, _invoice=invoice_id)
        amount = float(numbers[0])
        inv = self._tool(rec, "lookup_invoice", {"invoice_id": invoice_id}, self._lookup_invoice_tool(tenant))
        if "error" in inv:
            return self._reply("I couldn't find that invoice on your account.", "billing")
        if amount > inv["amount"]:
            return self._reply(f"A refund cannot exceed the invoice amount ({inv['amount']:.2f} USD).",
                               "billing")
        refund = self._tool(rec, "issue_refund", {"invoice_id": invoice_id, "amount": amount},
                            self._issue_refund)
        # regression (--break): the reply no longer says when the money arrives -- only a rubric can see it
        eta = "" if self.broken else " It will be back on your card within 5 business days."
        return dict(self._reply(f"Refund {refund['refund_id']} of {amount:.2f} USD issued for {invoice_id}.{eta}",
                                "billing", data={"value": amount}), _invoice=invoice_id)

    def _tech(self, message: str, tenant: str, role: str, rec: SpanRecorder) -> dict:
        query = " ".join(re.findall(r"[\w-]+", message.lower()))
        calls = 4 if (self.broken and "vpn" in query) else 1  # regression: a re-query loop
        for _ in range(calls):
            found = self._tool(rec, "search_kb", {"query": query}, self._search_kb)
        if not found["articles"]:
            ticket = "TCK-" + hashlib.sha256(query.encode()).hexdigest()[:5].upper()
            return self._reply(f"I couldn't find a knowledge-base article for that, so I opened ticket "
                               f"{ticket} for our support team.", "tech_support")
        article = found["articles"][0]
        text = article["text"]
        if self.flaky and article["id"] == "KB-103" and self._repeat_count(message) % 2 == 0:
            text = FLAKY_ALTERNATE  # flaky: every second repeat gives a vaguer answer
        return dict(self._reply(f"{article['title']}: {text}", "tech_support"), _article=article["title"])

    def _ticket_for(self, title: str) -> dict:
        ticket = "TCK-" + hashlib.sha256(title.encode()).hexdigest()[:5].upper()
        return self._reply(f"Sorry that didn't help. I opened ticket {ticket} about \"{title}\" for our "
                           "support team.", "tech_support")

    def _account(self, message: str, tenant: str, role: str, rec: SpanRecorder) -> dict:
        text = message.lower()
        if "two-factor" in text or "2fa" in text:
            found = self._tool(rec, "search_kb", {"query": "two-factor authentication"}, self._search_kb)
            article = found["articles"][0]
            return self._reply(f"{article['title']}: {article['text']}", "account")
        if "plan" in text:
            return self._reply(f"Your account is on the {PLANS[tenant]} plan.", "account",
                               data={"value": PLANS[tenant]})
        if "password" in text or "log in" in text or "login" in text:
            named = [w for w in re.findall(r"[a-z]+", text) if w in ALL_USERS]
            user = named[0] if named else USERS[tenant][0]  # no user named: the caller's own account
            if user not in USERS[tenant]:
                return self._reply("I can only reset passwords for users on your own account.", "account")
            self._tool(rec, "reset_password", {"user": user}, self._reset_password)
            return self._reply(f"I sent a password reset link to the email on file for {user}.", "account")
        return self._reply("Is this about your password, two-factor authentication or your plan?",
                           "account", clarify=True)

    def _repeat_count(self, message: str) -> int:
        key = " ".join(message.lower().split())
        with self._lock:
            self._seen[key] = self._seen.get(key, 0) + 1
            return self._seen[key]
