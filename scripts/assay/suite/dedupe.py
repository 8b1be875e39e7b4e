"""Near-duplicate cases by ROUGE-L over what the user says.

A case's text is every user message and every user turn, joined, lowercased and split
into word tokens. Two cases are near-duplicates when the ROUGE-L F1 of their texts (the
longest common subsequence of tokens, F1 of its precision and recall) is at or above the
threshold (0.7 by default, the generation guidance's). A metamorphic pair (one case is the
other's `metamorphic_parent`) is near-identical on purpose and never flagged, nor is a pair
whose `identity` differs (the same question from another user or role asks about other
data: a deliberate pair, counted apart); pairs from
the same template are flagged with `same_template: true`, since instantiating a template
with different data is the one legitimate reason two inputs read alike.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

from .convert import convert_state_dir

TOKEN_RE = re.compile(r"[\w'-]+", re.UNICODE)
NEAR_DUPLICATE = 0.7   # the generation guidance's ROUGE-L F1 threshold


def case_text(case: dict[str, Any]) -> str:
    parts: list[str] = []
    inp = case.get("input") or {}
    for msg in inp.get("messages") or []:
        if isinstance(msg, dict) and msg.get("role", "user") == "user" and isinstance(msg.get("content"), str):
            parts.append(msg["content"])
    for turn in inp.get("turns") or []:
        if isinstance(turn, dict):
            content = turn.get("content", turn.get("user"))
            if isinstance(content, str):
                parts.append(content)
        elif isinstance(turn, str):
            parts.append(turn)
    if isinstance(inp.get("text"), str):
        parts.append(inp["text"])
    return "\n".join(parts)


def tokens(text: str) -> list[str]:
    return TOKEN_RE.findall(text.lower())


def lcs_length(a: list[str], b: list[str]) -> int:
    if len(a) < len(b):
        a, b = b, a
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, 1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(a: list[str], b: list[str]) -> float:
    """ROUGE-L F1 (beta = 1) of two token lists; 0.0 when either is empty."""
    if not a or not b:
        return 0.0
    lcs = lcs_length(a, b)
    if lcs == 0:
        return 0.0
    return 2 * lcs / (len(a) + len(b))


def near_duplicates(cases: list[dict[str, Any]], sources: dict[str, str],
                    threshold: float = NEAR_DUPLICATE) -> dict[str, Any]:
    items = []
    for c in cases:
        cid = c.get("id")
        if isinstance(cid, str):
            toks = tokens(case_text(c))
            items.append((cid, toks, Counter(toks), c))
    pairs, metamorphic_skipped, identity_skipped, empty = [], 0, 0, [cid for cid, toks, _, _ in items if not toks]
    for i in range(len(items)):
        a_id, a_toks, a_bag, a = items[i]
        for j in range(i + 1, len(items)):
            b_id, b_toks, b_bag, b = items[j]
            if not a_toks or not b_toks:
                continue
            # LCS <= the multiset overlap: skip pairs that cannot reach the threshold
            if 2 * sum((a_bag & b_bag).values()) / (len(a_toks) + len(b_toks)) < threshold:
                continue
            score = rouge_l(a_toks, b_toks)
            if score < threshold:
                continue
            if a.get("metamorphic_parent") == b_id or b.get("metamorphic_parent") == a_id:
                metamorphic_skipped += 1
                continue
            if (a.get("identity") or None) != (b.get("identity") or None):
                identity_skipped += 1
                continue
            same_template = bool(a.get("template_id")) and a.get("template_id") == b.get("template_id")
            pairs.append({"a": a_id, "b": b_id, "rouge_l": round(score, 3), "same_template": same_template,
                          "files": [sources.get(a_id), sources.get(b_id)],
                          "a_text": case_text(a)[:160], "b_text": case_text(b)[:160]})
    pairs.sort(key=lambda p: (-p["rouge_l"], p["a"], p["b"]))
    return {"cases": len(items), "threshold": threshold, "flagged": len(pairs), "pairs": pairs,
            "metamorphic_pairs_skipped": metamorphic_skipped,
            "identity_pairs_skipped": identity_skipped, "cases_without_user_text": empty,
            "method": "ROUGE-L F1 over lowercased word tokens of the user messages and turns"}


def dedupe_state_dir(state_dir: str | os.PathLike[str], threshold: float = NEAR_DUPLICATE) -> dict[str, Any]:
    conv = convert_state_dir(state_dir)
    return near_duplicates(conv["cases"], conv["sources"], threshold)
