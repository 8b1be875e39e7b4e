"""The top of the Case page: each failing layer as expected beside actual, in words.

Pure: over the case's verdict, expect.json, answer and trajectory (what case.case_doc already
read). The reason is report.sections' sentence (the one the run page's row shows); expected is the
part of expect.json the layer is judged against (report.sections.EXPECT_KEYS); actual is what the
app did, in the layer's own terms.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.vocab import LAYER_ORDER
from ..report.failwords import check_label
from ..report.sections import EXPECT_KEYS, failure_sentence

CLIP = 600
CHECK_TAIL_LINES = 3     # the check's last output lines beside its exit code (all of it: the layer's JSON)
SHOWN = ("fail", "error", "unscored", "infra_error", "infra_incomplete")


def _words(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= CLIP else text[:CLIP] + " …"


def _expected(name: str, expect: dict | None) -> str | None:
    if not isinstance(expect, dict):
        return None
    parts = [f"{k}: {_words(expect[k])}" for k in EXPECT_KEYS.get(name, (name,)) if k in expect]
    return "; ".join(parts) or None


def _called(trajectory: dict | None) -> str:
    calls = (trajectory or {}).get("tool_calls") if isinstance(trajectory, dict) else None
    names = [str(c.get("name")) for c in calls or [] if isinstance(c, dict)]
    return "called " + ", ".join(names) if names else "no tool was called"


def _arguments(layer: dict, trajectory: dict | None) -> str:
    """The failing tools' calls with their arguments (`issue_refund {"invoice_id": "INV-1001"}`)."""
    tools = {str(c.get("tool")) for c in layer.get("checks") or [] if isinstance(c, dict) and c.get("status") == "fail"}
    calls = (trajectory or {}).get("tool_calls") if isinstance(trajectory, dict) else None
    shown = [f"{c.get('name')} {_words(c.get('arguments'))}" for c in calls or []
             if isinstance(c, dict) and str(c.get("name")) in tools]
    return "; ".join(shown) if shown else f"{', '.join(sorted(tools)) or 'the tool'} was not called"


def _actual(name: str, layer: dict, answer: str | None, trajectory: dict | None) -> str | None:
    if name == "routing" and "observed" in layer:
        return f"routed to {_words(layer.get('observed'))}" + (f" (from {layer['observed_from']})"
                                                                if layer.get("observed_from") else "")
    if name == "http" and "status" in layer:
        return f"HTTP {layer.get('status')}"
    if name == "execution" and "actual" in layer:
        return _words(layer.get("actual"))
    if name == "tool_selection":
        return _arguments(layer, trajectory)
    if name in ("trajectory", "loops"):
        return _called(trajectory)
    if name == "answer":
        return _words(answer) if answer is not None else "no answer"
    return _agent_actual(name, layer)


def _agent_actual(name: str, layer: dict) -> str | None:
    """What the agent did, for the agent layers (skills, files, check, permissions)."""
    if name == "skills":
        invoked = [str(s) for s in layer.get("invoked") or []]
        return "invoked " + ", ".join(invoked) if invoked else "no skill was invoked"
    if name == "files" and isinstance(layer.get("diff"), dict):
        d = layer["diff"]
        parts = [f"{word} {', '.join(map(str, d.get(key) or []))}" for key, word in
                 (("modified", "modified"), ("added", "added"), ("removed", "deleted")) if d.get(key)]
        return _words("; ".join(parts)) if parts else "the agent changed no file"
    if name == "check" and "exit_code" in layer:
        lines = str(layer.get("output") or "").strip().splitlines()
        tail = "\n".join(line[-160:] for line in lines[-CHECK_TAIL_LINES:])
        return f"exit code {layer.get('exit_code')}" + (f"; its output ends:\n{tail}" if tail else "; no output")
    if name == "permissions" and layer.get("denied_tools") is not None:
        return f"{layer.get('denied')} call(s) denied: {', '.join(map(str, layer.get('denied_tools') or []))}"
    return None


def _checks(layer: dict) -> list[dict]:
    checks = layer.get("checks") if isinstance(layer.get("checks"), list) else []
    return [{"check": check_label(c) + (f" {_words(c['entry'])}" if c.get("entry") is not None else ""),
             "status": c.get("status"), "why": c.get("reason") or c.get("detail")}
            for c in checks if isinstance(c, dict) and c.get("status") != "pass"]


def _judged(judge: dict | None) -> list[dict]:
    """Each failed criterion of a failed rubric: what the rubric asks beside what the judge saw."""
    out = []
    for r in (judge or {}).get("rubrics") or [] if isinstance(judge, dict) else []:
        if not isinstance(r, dict) or r.get("verdict") != "fail":
            continue
        for n in r.get("nodes") or []:
            if isinstance(n, dict) and n.get("verdict") == "fail":
                out.append({"check": f"{r.get('pin') or r.get('rubric_id') or 'rubric'} {n.get('node_id') or ''}".strip(),
                            "status": "fail", "expected": n.get("criterion"), "why": n.get("reason"),
                            "provisional": bool(r.get("provisional"))})
    return out


def failures(verdict: dict | None, expect: dict | None, answer: str | None, trajectory: dict | None,
             judge: dict | None = None) -> list[dict]:
    """Every layer that did not pass (fail first, then error and unscored), in decision order."""
    layers = (verdict or {}).get("layers") if isinstance((verdict or {}).get("layers"), dict) else {}
    order = list(LAYER_ORDER) + sorted(set(layers) - set(LAYER_ORDER))
    out = []
    for name in order:
        layer = layers.get(name)
        if not isinstance(layer, dict) or layer.get("verdict") not in SHOWN:
            continue
        status = layer["verdict"]
        sentence = failure_sentence(name, layer) if status == "fail" else str(layer.get("reason") or status)
        out.append({"layer": name, "verdict": status, "sentence": sentence,
                    "expected": _expected(name, expect),
                    "actual": _actual(name, layer, answer, trajectory) if status == "fail" else None,
                    "checks": _judged(judge) if name == "judged" else _checks(layer),
                    "provisional": bool(layer.get("provisional"))})
    out.sort(key=lambda f: f["verdict"] != "fail")
    return out
