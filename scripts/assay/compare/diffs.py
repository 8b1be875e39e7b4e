"""Pure diffs for a pair: the answer (normalized, word by word) and the trajectory (tool sequence
and arguments, first difference). No I/O here.

Answer normalization: Unicode NFC (contracts §0), every run of whitespace is one space, leading
and trailing whitespace dropped. Case and punctuation are kept: "Refund issued." and "refund
issued" are different answers. Trajectory: the ordered tool calls as (name, arguments); two
trajectories are the same when both lists are equal; results are compared apart (the judge's
material, see pairs.py).
"""

from __future__ import annotations

import difflib
import json
import unicodedata
from typing import Any

MAX_DIFF_WORDS = 400   # a diff longer than this is cut (said so in the diff)
MAX_TEXT = 240         # one diff line's text, in the first-line summary


def normalize_answer(text: str | None) -> str | None:
    if text is None:
        return None
    return " ".join(unicodedata.normalize("NFC", text).split())


def word_diff(base: str, candidate: str) -> dict[str, Any]:
    """{"ops": [{"op": equal|delete|insert|replace, "base": str, "candidate": str}], "truncated": bool}."""
    a, b = base.split(), candidate.split()
    ops, words = [], 0
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    truncated = False
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        words += max(i2 - i1, j2 - j1)
        if words > MAX_DIFF_WORDS:
            truncated = True
            break
        ops.append({"op": tag, "base": " ".join(a[i1:i2]), "candidate": " ".join(b[j1:j2])})
    return {"ops": ops, "truncated": truncated}


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1] + "…"


def diff_first_line(diff: dict[str, Any]) -> str | None:
    """The first change of a word diff in one line: `- old words + new words`."""
    for op in diff.get("ops") or []:
        if op["op"] == "equal":
            continue
        parts = []
        if op["base"]:
            parts.append(f"- {_short(op['base'])}")
        if op["candidate"]:
            parts.append(f"+ {_short(op['candidate'])}")
        return " ".join(parts)
    return None


def tool_calls(trajectory: Any) -> list[dict[str, Any]] | None:
    """[{name, arguments, result}] in call order from a trajectory.json, or None without one."""
    if not isinstance(trajectory, dict) or not isinstance(trajectory.get("tool_calls"), list):
        return None
    out = []
    for call in trajectory["tool_calls"]:
        if isinstance(call, dict):
            out.append({"name": call.get("name"), "arguments": call.get("arguments"), "result": call.get("result")})
    return out


def _call_key(call: dict[str, Any]) -> str:
    return json.dumps([call.get("name"), call.get("arguments")], sort_keys=True, ensure_ascii=False, default=str)


def call_text(call: dict[str, Any] | None) -> str:
    if call is None:
        return "(no call)"
    args = json.dumps(call.get("arguments"), sort_keys=True, ensure_ascii=False, default=str)
    return _short(f"{call.get('name')}({args})")


def trajectory_diff(base: list[dict] | None, candidate: list[dict] | None) -> dict[str, Any]:
    """{changed, base, candidate, first_difference} over (name, arguments); `changed` is None when
    either side has no trajectory (no trace collected): unknown, never "unchanged"."""
    if base is None or candidate is None:
        return {"changed": None, "reason": "no trajectory on " + ("either side" if base is None and candidate is None
                                                                   else "the base" if base is None else "the candidate")}
    shown_b = [call_text(c) for c in base]
    shown_c = [call_text(c) for c in candidate]
    if [_call_key(c) for c in base] == [_call_key(c) for c in candidate]:
        return {"changed": False, "base": shown_b, "candidate": shown_c}
    index = next((i for i, (x, y) in enumerate(zip(base, candidate)) if _call_key(x) != _call_key(y)),
                 min(len(base), len(candidate)))
    b = base[index] if index < len(base) else None
    c = candidate[index] if index < len(candidate) else None
    what = ("tool" if b and c and b.get("name") != c.get("name") else "arguments" if b and c
            else "extra call" if c else "missing call")
    return {"changed": True, "base": shown_b, "candidate": shown_c,
            "first_difference": {"index": index, "kind": what, "base": call_text(b), "candidate": call_text(c)}}


def trajectory_first_line(diff: dict[str, Any]) -> str | None:
    first = diff.get("first_difference")
    if not first:
        return None
    return f"call {first['index'] + 1} ({first['kind']}): {first['base']} -> {first['candidate']}"


def expectation_diff(base: Any, candidate: Any) -> dict[str, Any]:
    """What changed in an edited case's expect.json: the keys (dotted, two levels) whose value differs.
    Identical files say the edit is elsewhere (a pinned rubric, the request shape, the judge)."""
    if not isinstance(base, dict) or not isinstance(candidate, dict):
        return {"keys": [], "note": "expect.json missing on one side"}

    def flat(doc: dict) -> dict[str, str]:
        out = {}
        for k, v in doc.items():
            if isinstance(v, dict) and v:
                out.update({f"{k}.{k2}": json.dumps(v2, sort_keys=True, ensure_ascii=False) for k2, v2 in v.items()})
            else:
                out[k] = json.dumps(v, sort_keys=True, ensure_ascii=False)
        return out
    b, c = flat(base), flat(candidate)
    keys = sorted(k for k in set(b) | set(c) if b.get(k) != c.get(k))
    if not keys:
        return {"keys": [], "note": "expect.json is the same: the edit is in a pinned rubric, the request shape "
                                    "or the judge's identity"}
    return {"keys": [{"key": k, "base": _short(b.get(k, "(absent)")), "candidate": _short(c.get(k, "(absent)"))}
                     for k in keys]}


def results_equal(base: list[dict] | None, candidate: list[dict] | None) -> bool | None:
    """Tool results equal, call by call (None when either side has no trajectory)."""
    if base is None or candidate is None:
        return None
    dump = lambda calls: [json.dumps(c.get("result"), sort_keys=True, ensure_ascii=False, default=str) for c in calls]
    return dump(base) == dump(candidate)
