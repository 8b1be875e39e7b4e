"""Parsing a judge's reply, checking its evidence, and folding node verdicts.

A node verdict is `pass | fail | unknown`. Node -> rubric: every node pass -> pass; any fail
-> fail; else unscored. A quote that is not in the material makes the node `unknown`.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ..core.writer import clip

NODE_VERDICTS = ("pass", "fail", "unknown")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.S)
_WS = re.compile(r"\s+")


def parse_reply(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(verdict dict, None) or (None, why it does not parse). Strict: one JSON object, optionally in one
    ```json fence; `verdict` in pass|fail|unknown, `evidence` a list of strings, `reason` a string."""
    if isinstance(value, str):
        text = value.strip()
        m = _FENCE.match(text)
        if m:
            text = m.group(1).strip()
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None, "the reply is not one JSON object"
    if not isinstance(value, dict):
        return None, "the reply is not a JSON object"
    verdict = value.get("verdict")
    if verdict not in NODE_VERDICTS:
        return None, f"verdict {verdict!r} is not pass, fail or unknown"
    evidence = value.get("evidence", [])
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        return None, "evidence is not a list of strings"
    reason = value.get("reason", "")
    if not isinstance(reason, str):
        return None, "reason is not a string"
    return {"verdict": verdict, "evidence": evidence, "reason": reason}, None


def _norm(text: str) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def quote_found(quote: str, texts: list[str]) -> bool:
    """A quote counts when, NFC and whitespace-collapsed, it is a substring of one material text.
    Surrounding quotation marks and a trailing ellipsis are not part of the quote."""
    q = _norm(quote).strip("\"'“”‘’").removesuffix("...").removesuffix("…").strip()
    if not q:
        return False
    return any(q in _norm(t) for t in texts)


def checked_node(parsed: dict[str, Any], texts: list[str]) -> tuple[str, str]:
    """(node verdict, reason) after the evidence rule."""
    verdict, evidence = parsed["verdict"], parsed["evidence"]
    missing = [q for q in evidence if not quote_found(q, texts)]
    if missing:
        return "unknown", f"evidence quote not found in the material: {clip(missing[0], 120)!r}"
    if verdict == "pass" and not evidence:
        return "unknown", "a pass without any evidence quote"
    return verdict, parsed["reason"]


def rubric_verdict(node_verdicts: list[str]) -> str:
    if node_verdicts and all(v == "pass" for v in node_verdicts):
        return "pass"
    if "fail" in node_verdicts:
        return "fail"
    return "unscored"
