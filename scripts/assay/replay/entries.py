"""An Outcome and a CaseTrace as cache data, and back. Secrets are left to the one writer;
what the app set as a cookie is kept by name only (its value is a credential)."""

from __future__ import annotations

from typing import Any, Mapping

from ..core.writer import REDACTED
from ..invoke.outcome import Outcome
from ..traces.collect import CaseTrace
from .key import VALUE_MASK

_OUTCOME_FIELDS = ("kind", "status", "headers", "body_text", "body_json", "json_ok", "error", "latency_ms",
                   "trace_id", "notes", "body_sha", "cli", "answer_withheld", "set_cookies")
_CREDENTIAL_HEADERS = ("set-cookie", "authorization", "proxy-authorization")


def mask_cookie(raw: str) -> str:
    """`name=value; attrs` -> `name=<masked>; attrs`: the jar still sees the name, expiry and path."""
    head, sep, attrs = str(raw).partition(";")
    name = head.split("=", 1)[0].strip()
    return f"{name}={VALUE_MASK}{sep}{attrs}"


def outcome_doc(out: Outcome) -> dict[str, Any]:
    doc = {name: getattr(out, name) for name in _OUTCOME_FIELDS}
    doc["headers"] = {k: (REDACTED if k.lower() in _CREDENTIAL_HEADERS else v) for k, v in (out.headers or {}).items()}
    doc["set_cookies"] = [mask_cookie(c) for c in out.set_cookies or []]
    doc["notes"] = list(out.notes or [])
    if out.agent is not None:   # agent mode: the workdir the agent left (the transcript is the exchange's trace)
        doc["agent"] = {"status": out.agent.get("status"), "reason": out.agent.get("reason"),
                        "workdir": out.agent.get("workdir")}
    return doc


def outcome_from(doc: Mapping[str, Any]) -> Outcome:
    kwargs = {name: doc.get(name) for name in _OUTCOME_FIELDS if name in doc}
    kwargs["headers"] = dict(kwargs.get("headers") or {})
    kwargs["notes"] = list(kwargs.get("notes") or [])
    kwargs["set_cookies"] = list(kwargs.get("set_cookies") or [])
    kwargs["json_ok"] = bool(kwargs.get("json_ok"))
    kwargs["latency_ms"] = float(kwargs.get("latency_ms") or 0.0)
    out = Outcome(**kwargs)
    if isinstance(doc.get("agent"), Mapping):
        out.agent = dict(doc["agent"])
    return out


def trace_doc(got: CaseTrace) -> dict[str, Any]:
    return {"status": got.status, "trajectory": got.trajectory, "trace_doc": got.trace_doc, "reason": got.reason,
            "trace_id": got.trace_id, "correlation": got.correlation}


def trace_from(doc: Mapping[str, Any]) -> CaseTrace:
    return CaseTrace(doc.get("status"), doc.get("trajectory"), doc.get("trace_doc"), doc.get("reason"),
                     doc.get("trace_id"), doc.get("correlation"))
