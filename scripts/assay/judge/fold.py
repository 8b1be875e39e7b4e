"""Folding judge answers, pure: the asks of one node (every judge of an ensemble, `repeats` times
each) into the node's verdict; nodes into the rubric (assay.judge.verdict.rubric_verdict); rubrics
into the `judged` layer; and the calls' token usage.

One node, in this order:
1. a judge call that was infra (the judge down) makes the node infra: no verdict is made of the rest;
2. each judge's asks must agree (`agree`): a judge that answered differently is `judge_unstable`,
   and so is the node: the judge disagreed with itself, so no verdict of it is trusted;
3. the judges' verdicts combine by the ensemble's `aggregate`: `single` (one judge), `majority`
   (more than half; no majority is `unknown`) or `unanimous` (every judge; any disagreement is
   `unknown`). Judges that disagree with each other are an ensemble doing its work, not instability.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..core.vocab import FAIL, INFRA_ERROR, JUDGE_UNSTABLE, PASS, UNSCORED
from .served import served_of
from .verdict import agree

UNKNOWN = "unknown"



_ORDER = {"pass": 0, "fail": 1, UNKNOWN: 2, JUDGE_UNSTABLE: 3}


def _said(verdicts: list[str]) -> str:
    """`pass x2, fail`: in a fixed order (asks answer in any order on the pool)."""
    counts = sorted(Counter(verdicts).items(), key=lambda kv: (_ORDER.get(kv[0], 9), kv[0]))
    return ", ".join(f"{v} x{n}" if n > 1 else v for v, n in counts)


def fold_node(asks: list[dict[str, Any]], aggregate: str, n_judges: int) -> dict[str, Any]:
    """(verdict, evidence, reason, infra, judges) of one node from its asks. An ask is
    `{judge, ask, verdict, evidence, reason, infra}` (judge and ask are 1-based)."""
    infra = [a for a in asks if a["infra"]]
    if infra:
        return {"verdict": UNKNOWN, "evidence": [], "reason": infra[0]["reason"], "infra": True, "judges": []}
    judges = []
    for j in range(1, n_judges + 1):
        mine = [a for a in asks if a["judge"] == j]
        verdicts = [a["verdict"] for a in mine]
        judges.append({"judge": j, "verdict": agree(verdicts), "asks": verdicts})
    unstable = [j for j in judges if j["verdict"] == JUDGE_UNSTABLE]
    if unstable:
        who = "; ".join(f"judge {j['judge']} answered {_said(j['asks'])} over {len(j['asks'])} asks" for j in unstable)
        if n_judges == 1:
            who = who.replace("judge 1 answered", "the judge answered")
        return {"verdict": JUDGE_UNSTABLE, "evidence": [], "reason": f"{JUDGE_UNSTABLE}: {who}", "infra": False,
                "judges": judges}
    verdicts = [j["verdict"] for j in judges]
    if aggregate == "unanimous":
        verdict = agree(verdicts)
        if verdict == JUDGE_UNSTABLE:
            return {"verdict": UNKNOWN, "evidence": [], "infra": False, "judges": judges,
                    "reason": f"the judges disagree ({_said(verdicts)}) and the ensemble is unanimous: no verdict"}
    elif aggregate == "majority":
        top, count = Counter(verdicts).most_common(1)[0]
        if count * 2 <= len(verdicts):
            return {"verdict": UNKNOWN, "evidence": [], "infra": False, "judges": judges,
                    "reason": f"no majority among the judges ({_said(verdicts)})"}
        verdict = top
    else:
        verdict = verdicts[0]
    first = next(a for a in asks if a["verdict"] == verdict)
    reason = first["reason"]
    if n_judges > 1:
        reason = f"{aggregate} of {n_judges} judges ({_said(verdicts)}): {reason}"
    return {"verdict": verdict, "evidence": first["evidence"], "reason": reason, "infra": False, "judges": judges}


def fold_pair_node(node: dict, asks: list[dict[str, Any]], aggregate: str, n_judges: int) -> dict[str, Any]:
    """One node from every judge's asks (assay.judge.pairwise.judge_pair), by fold_node's rule:
    an outage makes it infra; a comparison that flipped with the order makes it judge_unstable (the judge
    answered by position); a judge whose asks differ makes it judge_unstable; else the judges' outcomes
    combine by `aggregate` (an ensemble's majority or unanimity, never the first judge alone)."""
    out: dict[str, Any] = {"node_id": node["id"], "criterion": node["criterion"], "verdict": "unknown",
                           "outcome": "unknown", "orders": {}, "evidence": [], "reason": "", "infra": False,
                           "calls": [c for a in asks for c in a["calls"]]}
    infra = [a for a in asks if a["infra"]]
    if infra:
        out.update(infra=True, reason=infra[0]["reason"])
        return out
    from .pairwise import node_verdict   # lazily, as judged_layer below: pairwise needs nothing of this module
    folded = fold_node(asks, aggregate, n_judges)
    flipped = [a for a in asks if a["verdict"] == JUDGE_UNSTABLE]
    if flipped:
        a = flipped[0]
        outcome, reason = JUDGE_UNSTABLE, (a["reason"] if n_judges == 1 else f"judge {a['judge']}: {a['reason']}")
    else:
        outcome, reason = folded["verdict"], folded["reason"]
    decided = next((a for a in asks if a["verdict"] == outcome), None)
    out.update(outcome=outcome, verdict=node_verdict(outcome), reason=reason,
               orders=decided["orders"] if decided else {})
    if len(asks) > 1:
        out["judges"] = folded["judges"]
    return out


def instability(nodes: list[dict[str, Any]]) -> dict[str, int]:
    """{judged, unstable}: the nodes that got an answer (not infra, not skipped) and how many of them
    the judge left unstable."""
    judged = [n for n in nodes if not n.get("infra") and n.get("calls")]
    return {"judged": len(judged), "unstable": sum(1 for n in judged if n.get("verdict") == JUDGE_UNSTABLE)}


def usage_of(results: list[dict]) -> dict[str, Any]:
    """Calls and tokens over every call of every node; `by_model` splits them by the judge model that
    answered (an ensemble's judges are priced each at its own price)."""
    total: dict[str, Any] = {"calls": 0, "input_tokens": 0, "output_tokens": 0, "calls_without_usage": 0}
    by_model: dict[str, dict[str, int]] = {}
    for res in results:
        if res.get("reused_from"):
            continue  # calls made (and paid for) by the source run
        for node in res["nodes"]:
            for call in node["calls"]:
                total["calls"] += 1
                slot = by_model.setdefault(str(call.get("model") or "(no model name)"),
                                           {"calls": 0, "input_tokens": 0, "output_tokens": 0})
                slot["calls"] += 1
                u = call.get("usage")
                if isinstance(u, dict):
                    for key in ("input_tokens", "output_tokens"):
                        total[key] += int(u.get(key) or 0)
                        slot[key] += int(u.get(key) or 0)
                else:
                    total["calls_without_usage"] += 1
    if len(by_model) > 1:   # one model: the judge's (judge.json, the manifest) prices every call
        total["by_model"] = dict(sorted(by_model.items()))
    return total


def sum_usage(usages: list[dict]) -> dict[str, Any]:
    """Several usage blocks (repeats of a case, turns of a conversation) added up, `by_model` too."""
    out: dict[str, Any] = {}
    for u in usages:
        for key, value in u.items():
            if key == "by_model" and isinstance(value, dict):
                slots = out.setdefault("by_model", {})
                for model, counts in value.items():
                    slot = slots.setdefault(model, {})
                    for k, v in counts.items():
                        slot[k] = slot.get(k, 0) + int(v)
            elif isinstance(value, int):
                out[key] = out.get(key, 0) + value
    return out


def fold_rubrics(results: list[dict]) -> str:
    """Rubric verdicts -> one: infra > fail > judge_unstable > every pass -> pass > unscored."""
    if any(r["infra"] for r in results):
        return INFRA_ERROR
    verdicts = [r["verdict"] for r in results]
    if FAIL in verdicts:
        return FAIL
    if JUDGE_UNSTABLE in verdicts:
        return JUDGE_UNSTABLE
    if verdicts and all(v == PASS for v in verdicts):
        return PASS
    return UNSCORED


def judged_layer(results: list[dict], usage: dict[str, Any]) -> dict[str, Any]:
    """The `judged` layer, decided per pin: calibrated rubric versions decide it (one that did not
    run makes it unscored, whatever the others said); provisional ones are recorded beside it
    (`provisional_verdict`) and never change it. `provisional` is true only when no calibrated pin
    decides the layer: a provisional pin beside a calibrated one never makes the layer read as a
    chosen unscored. A deciding judge_unstable leaves the layer `unscored` with `judge_unstable: true`."""
    from . import pairwise   # loaded with the judge's runtime at pre-flight (a run with no judge never needs it)
    calibrated = [r for r in results if not r["provisional"]]
    provisional = [r for r in results if r["provisional"]]
    layer: dict[str, Any] = {
        "rubrics": [{"pin": r["pin"], "verdict": r["verdict"], "provisional": r["provisional"], "infra": r["infra"],
                     "why_provisional": r["why_provisional"], **instability(r.get("nodes") or []),
                     **pairwise.layer_fields(r)} for r in results],
        "provisional": not calibrated,
        "provisional_verdict": fold_rubrics(provisional) if provisional else None,
        "usage": usage,
        **served_of(results),
    }
    verdict = fold_rubrics(calibrated) if calibrated else UNSCORED
    layer["verdict"] = verdict
    if verdict == INFRA_ERROR:
        layer["reason"] = next(r["reason"] for r in calibrated if r["infra"])
    elif verdict == JUDGE_UNSTABLE:
        layer.update(verdict=UNSCORED, judge_unstable=True,
                     reason="; ".join(f"{r['pin']}: {r['reason']}" for r in calibrated if r["verdict"] == JUDGE_UNSTABLE))
    elif verdict == UNSCORED:
        if not calibrated:
            whys = sorted({str(r["why_provisional"]) for r in provisional})
            layer["reason"] = (f"provisional (not gating): the judge said {layer['provisional_verdict']}; "
                               + "; ".join(whys))
        else:
            layer["reason"] = "; ".join(f"{r['pin']}: {r['reason']}" for r in calibrated if r["verdict"] == UNSCORED)
    if provisional and calibrated:
        layer["provisional_note"] = "; ".join(sorted({str(r["why_provisional"]) for r in provisional}))
    return layer
