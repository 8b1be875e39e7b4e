"""A case's verdict.json record: the fields every case has, and the k repeats folded into one."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping

from ..core import writer
from ..core.vocab import ERROR, INFRA_ERROR, INFRA_INCOMPLETE, UNSCORED, is_judge_unstable
from ..score.rollup import unscored_reason
from .case_files import workdir_flag
from .caseinfo import case_title, input_text
from ..invoke.outcome import RESPONSE, is_rate_limited, same_body_key
from ..traces.collect import NOT_COLLECTED
from ..core.vocab import is_holdout


def base_record(case: Mapping[str, Any], k: int) -> dict[str, Any]:
    """The record's fields before anything is sent (a skipped case keeps most of them)."""
    split = case.get("split") or []
    canary = "canary" in split
    expect = case.get("expect") if isinstance(case.get("expect"), Mapping) else {}
    return {"case_id": case["id"], "verdict": None, "canary": canary, "holdout": is_holdout(case),
            "gating": False if canary else case.get("gating", True) is not False,
            "unit": _str_or_none(case.get("unit")), "category": _str_or_none(case.get("category")), "k": k, "attempts": 0,
            "retry_count": 0, "crashed": False, "repeated_5xx": None, "skip_reason": None, "infra_reason": None,
            "rate_limited_retries": 0,
            "latency_ms": None, "repeats": None, "layers": {}, "scorer_errors": 0, "sent": True,
            "trace_collected": False, "trace_status": NOT_COLLECTED, "has_result_expect": bool(expect.get("result")),
            "title": case_title(case), "input_text": input_text(case), "judged": False, "judge_usage": None,
            "judge_unstable": False, **identity_field(case)}


def identity_field(case: Mapping[str, Any]) -> dict[str, Any]:
    """`{"identity": {"key", "reached": False}}` for a case that sends an identity, else {}: `key` a digest
    of the identity (never its values), so a run's cases of one user are told apart from another's;
    `reached` (sent_record) whether the app answered any of its requests 2xx. A refusal by status alone
    is evidence only for an identity the run shows the app let in somewhere (stats.tally)."""
    ident = case.get("identity")
    if not ident:
        return {}
    text = json.dumps(ident, sort_keys=True, ensure_ascii=False, default=str)
    return {"identity": {"key": hashlib.sha256(text.encode("utf-8")).hexdigest()[:12], "reached": False}}


def _reached(base: Mapping[str, Any], repeats: list[dict]) -> dict[str, Any]:
    ident = base.get("identity")
    if not isinstance(ident, dict):
        return {}
    ok = any(o.kind == RESPONSE and isinstance(o.status, int) and 200 <= o.status < 300
             for r in repeats for o in r["outcomes"])
    return {"identity": dict(ident, reached=ok)}


def sent_record(base: dict[str, Any], repeats: list[dict], chosen: dict, folded: str, *, k: int,
                judged: list[dict], undeclared: list[str]) -> dict[str, Any]:
    """The record of a sent case: `folded` is the repeats' verdict, `chosen` the repeat it came from."""
    attempts = sum(len(r["outcomes"]) for r in repeats)
    infra_reason = chosen["infra_reason"]
    if folded == INFRA_INCOMPLETE and infra_reason is None:
        infra_reason = writer.redact_text(chosen["trace"]["reason"]) or "trace incomplete"
    if folded == INFRA_ERROR and infra_reason is None:  # the app answered; a layer's outage (the judge's)
        down = [f"{name}: {entry.get('reason')}" for name, entry in (chosen.get("layers") or {}).items()
                if isinstance(entry, Mapping) and entry.get("verdict") == INFRA_ERROR and entry.get("reason")]
        infra_reason = writer.redact_text("; ".join(down)) if down else None
    return dict(
        base, verdict=folded, sent=True, attempts=attempts,
        retry_count=sum(max(0, len(r["outcomes"]) - 1) for r in repeats),   # a repeat may send nothing
        crashed=any(o.crashed for r in repeats for o in r["outcomes"]),
        repeated_5xx=repeated_5xx(repeats), infra_reason=infra_reason, trace=chosen["trace"],
        rate_limited_retries=sum(1 for r in repeats for o in r["outcomes"][:-1] if is_rate_limited(o)),
        latency_ms=chosen["response"].get("latency_ms"), layers=chosen["layers"],
        unscored_reason=unscored_reason(chosen["layers"], folded),
        repeats=[{"n": r["n"], "verdict": r["verdict"], "trace_collected": r.get("trajectory") is not None,
                  "latency_ms": repeat_latency_ms(r), **workdir_flag(r)} for r in repeats] if k > 1 else None,
        scorer_errors=sum(1 for r in repeats for v in r["layers"].values() if v.get("verdict") == ERROR),
        judge_unstable=folded == UNSCORED and any(is_judge_unstable({"layers": r["layers"]}) for r in repeats),
        judged=bool(judged), judge_usage=_judge_usage(judged, k),
        trace_collected=chosen["trajectory"] is not None, trace_status=chosen["trace_status"],
        undeclared_tools=undeclared or None, **workdir_flag(chosen), **_reached(base, repeats))


def repeat_latency_ms(repeat: Mapping[str, Any]) -> float | None:
    """One repeat's end-to-end latency: its final attempt's, or for a conversation the sum over its sent
    turns (as the case's `latency_ms` is the deciding repeat's). Each repeat is a sample of the p95
    budget: the deciding repeat alone hides a slow tail in the others (stats.cost)."""
    if "turns" in repeat:
        return round(sum(t["response"].get("latency_ms") or 0 for t in repeat["turns"]), 3)
    value = (repeat.get("response") or {}).get("latency_ms")
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def repeated_5xx(repeats: list[dict]) -> dict | None:
    """The same 5xx (status and body) on every attempt; for a conversation, on the same turn. Only when
    every repeat went unanswered (infra_error): a 5xx the case expects (expect.http.status) is its answer,
    and a rate-limited one (a 503 with Retry-After) says the app is busy, not that it broke."""
    outs = [o for r in repeats for o in r["outcomes"]]
    if any(r.get("verdict") != INFRA_ERROR for r in repeats) or any(is_rate_limited(o) for o in outs):
        return None
    carried = [o.repeated_5xx for o in outs]
    if outs and all(isinstance(c, dict) and o.kind == RESPONSE and o.status == c.get("status")
                    for o, c in zip(outs, carried)):
        return dict(carried[0])   # rescore: the source's mark (only its final attempt was stored)
    if len(outs) < 2 or any(o.kind != RESPONSE or (o.status or 0) < 500 for o in outs):
        return None
    if len({(o.status, same_body_key(o)) for o in outs}) != 1:  # ids, uuids, timestamps masked
        return None
    turns = {t for r in repeats for t in (r.get("ending_turns") or [])}
    if "turns" in repeats[0]:
        if len(turns) != 1:
            return None
        return {"status": outs[0].status, "attempts": len(outs), "turn": turns.pop()}
    return {"status": outs[0].status, "attempts": len(outs)}


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _judge_usage(judged: list[dict], k: int = 1) -> dict[str, Any] | None:
    """The judge's tokens over a case's judged repeats (the judge's modules: only for a judged case); at
    k > 1 with `judged_repeats`, how many repeats they are: the judge's cost of one answer is the sum over
    them (stats.judge_cost)."""
    if not judged:
        return None
    from ..judge.fold import sum_usage
    usage = sum_usage([r["judge_doc"]["usage"] for r in judged])
    if k > 1:
        usage["judged_repeats"] = len(judged)
    return usage
