"""Parsing a judge's reply, checking its evidence, and folding node verdicts.

A node verdict is `pass | fail | unknown`, or `judge_unstable` when repeated asks disagree
(`agree`). Node -> rubric: any fail -> fail; any unstable node -> judge_unstable; every node
pass -> pass; else unscored. A quote that is not in the material makes the node `unknown`, and so
does a pass not backed by the answer (`checked_node`).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from ..core.vocab import JUDGE_UNSTABLE
from ..core.writer import clip

NODE_VERDICTS = ("pass", "fail", "unknown")
_WS = re.compile(r"\s+")


def fenced_blocks(text: str) -> list[str]:
    """The bodies of the fenced blocks of a reply, in linear time: the same list as the regex
    `^```(?:json)?[ \t]*\n(.*?)\n[ \t]*```[ \t]*$` (re.S | re.M) gave with findall. An opening line
    is ``` or ```json (blanks after it allowed) with a newline after it; its block closes at the
    first line holding only ``` (blanks around it allowed) from the second line after it on, the
    body the text between. An opening line with no closing line after it means no later one has
    one either, so the scan stops there: the regex read to the end again from each later opening
    line, quadratic in them (a reply of 200 KB of ```json lines took minutes)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    blocks: list[str] = []
    i = 0
    while i < len(lines) - 1:  # an opening line needs a newline after it: never the last line
        line = lines[i]
        if not (line.startswith("```") and line[3:].removeprefix("json").strip(" \t") == ""):
            i += 1
            continue
        close = next((k for k in range(i + 2, len(lines)) if lines[k].strip(" \t") == "```"), None)
        if close is None:
            break
        blocks.append(text[starts[i + 1]:starts[close] - 1])
        i = close + 1
    return blocks


def reply_object(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The one JSON object of a reply -- bare, or in exactly one fenced block (```json or ```, prose
    before and after the fence ignored; bare JSON inside prose is not read) -- or (None, why)."""
    if isinstance(value, str):
        text = value.strip()
        fences = fenced_blocks(text)
        if len(fences) > 1:
            return None, f"the reply holds {len(fences)} fenced blocks; give exactly one JSON object"
        if fences:
            text = fences[0].strip()
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None, "the reply is not one JSON object"
    if not isinstance(value, dict):
        return None, "the reply is not a JSON object"
    return value, None


def parse_reply(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(verdict dict, None) or (None, why it does not parse). Strict: one JSON object, bare or in
    exactly one fenced block (```json or ```, prose before and after the fence is ignored; bare
    JSON inside prose is not read); `verdict` in pass|fail|unknown, `evidence` a list of strings,
    `reason` a string."""
    value, err = reply_object(value)
    if value is None:
        return None, err
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


def checked_node(parsed: dict[str, Any], material: Any, reference_guided: bool = False) -> tuple[str, str]:
    """(node verdict, reason) after the evidence rule. Every quote must be in the material. A verdict
    is about the answer, so a pass needs at least one quote from the answer, and each of its other
    quotes from the answer, the tool results or (reference-guided node) the reference; a quote found
    only in the user's own message never backs a pass. A fail may quote the message (what was asked
    and is missing). Anything else makes the node `unknown`."""
    from .prompt import ANSWER, USER_MESSAGE
    verdict, evidence = parsed["verdict"], parsed["evidence"]
    sources = material.sources(reference_guided)
    found_in = [[name for name, texts in sources.items() if quote_found(q, texts)] for q in evidence]
    for quote, where in zip(evidence, found_in):
        if not where:
            return "unknown", f"evidence quote not found in the material: {clip(quote, 120)!r}"
    if verdict != "pass":
        return verdict, parsed["reason"]
    if not evidence:
        return "unknown", "a pass without any evidence quote"
    for quote, where in zip(evidence, found_in):
        if where == [USER_MESSAGE]:
            return "unknown", (f"evidence quote {clip(quote, 120)!r} is from the user's message, not the answer: a "
                               "pass needs evidence from the answer itself")
    if not any(ANSWER in where for where in found_in):
        return "unknown", ("a pass with no evidence quote from the answer (only tool results or the reference): "
                           "the verdict is about the answer")
    return verdict, parsed["reason"]


def agree(verdicts: list[str]) -> str:
    """The one verdict several answers to the same question gave (repeated asks of a node, the two
    orders of a pairwise comparison), or JUDGE_UNSTABLE when they differ. No answers: unknown."""
    if not verdicts:
        return "unknown"
    return verdicts[0] if all(v == verdicts[0] for v in verdicts) else JUDGE_UNSTABLE


def rubric_verdict(node_verdicts: list[str]) -> str:
    """Nodes -> rubric: any fail -> fail (a stable fail of one node is a fail); else any unstable node
    -> judge_unstable; every node pass -> pass; else unscored."""
    if "fail" in node_verdicts:
        return "fail"
    if JUDGE_UNSTABLE in node_verdicts:
        return JUDGE_UNSTABLE
    if node_verdicts and all(v == "pass" for v in node_verdicts):
        return "pass"
    return "unscored"
