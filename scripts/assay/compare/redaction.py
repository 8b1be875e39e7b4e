"""Redaction of a comparison's quoted text, with the report's rule (report/redact.py): when either
run may contain PII (the adapter's `data.may_contain_pii` is true, or neither run records it),
every answer, diff, tool-call text and expected value a pair quotes has emails, phone numbers
and long digit runs replaced, before compare.json or compare.html is written. The verdicts,
the buckets and whether something changed are computed on the real text first.
"""

from __future__ import annotations

from typing import Any

from ..report.redact import pii_flag, redact
from .sides import Side


def should_redact(*sides: Side) -> tuple[bool, str]:
    """(redact?, why) over both runs: redact unless every run says may_contain_pii: false."""
    reasons = []
    for side in sides:
        flag, source = pii_flag(side.run_dir, side.manifest, side.run_id)
        if flag is not False:
            reasons.append(f"{side.run_id}: may_contain_pii {'true' if flag else 'unknown'} ({source})")
    return bool(reasons), "; ".join(reasons)


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            out, n = redact(value)
            self.n += n
            return out
        if isinstance(value, list):
            return [self(v) for v in value]
        return value


def redact_pair(pair: dict[str, Any], count: _Counter) -> None:
    answer = pair.get("answer") or {}
    for key in ("base", "candidate", "first_line"):
        if key in answer:
            answer[key] = count(answer[key])
    for op in (answer.get("diff") or {}).get("ops") or []:
        op["base"], op["candidate"] = count(op["base"]), count(op["candidate"])
    traj = pair.get("trajectory") or {}
    for key in ("base", "candidate", "first_line"):
        if key in traj:
            traj[key] = count(traj[key])
    first = traj.get("first_difference")
    if first:
        first["base"], first["candidate"] = count(first["base"]), count(first["candidate"])
    for turn in (pair.get("turns") or {}).get("turns") or []:
        for key in ("answer_first_line", "trajectory_first_line"):
            if key in turn:
                turn[key] = count(turn[key])
    for k in (pair.get("expectation") or {}).get("keys") or []:
        k["base"], k["candidate"] = count(k["base"]), count(k["candidate"])


def redact_pairs(pairs: list[dict[str, Any]]) -> int:
    count = _Counter()
    for pair in pairs:
        redact_pair(pair, count)
    return count.n
