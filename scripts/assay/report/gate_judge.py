"""The gate's judge checks that are not counts: gating cases the judge left unstable."""

from __future__ import annotations

from pathlib import Path

from .gate_case import JUDGE_UNSTABLE, closing_cases
from .rundir import LazyHoldoutIds, case_verdict

MAX_NAMED = 5   # how many cases a gate line names (the gate imports it from here)


def judge_unstable_reason(run_dir: Path, results: dict) -> str | None:
    """Close on gating cases the judge left unstable, on a line of their own: the judge disagreed
    with itself (judge.yaml `repeats`, a pairwise order flip), so the case is unscored -- not the
    app's failure, and not a pass. Holdout ids are counted, never printed."""
    cases = closing_cases(run_dir, results, JUDGE_UNSTABLE, limit=MAX_NAMED)
    if not cases.count:
        return None
    return (f"judge unstable: {cases.count} gating case(s) unscored because the judge disagreed with itself (not "
            "app failures; read the judge's answers in judge.json, then tighten the rubric or change the judge)"
            + cases.tail())


def instability_lines(instability: object) -> list[str]:
    """One line per rubric pin whose judge disagreed with itself on some node (summary.judged.instability)."""
    if not isinstance(instability, dict):
        return []
    out = []
    for pin, slot in instability.items():
        if not isinstance(slot, dict) or not isinstance(slot.get("unstable_nodes"), int) or not slot["unstable_nodes"]:
            continue
        rate = slot.get("rate")
        pct = f" ({rate * 100:.1f} %)" if isinstance(rate, (int, float)) else ""
        out.append(f"  judge instability: {pin}: {slot['unstable_nodes']} of {slot.get('judged_nodes')} node "
                   f"verdict(s) unstable{pct} (the judge's repeated answers differed)")
    return out


def judge_cost_gate_line(cost_latency: object) -> list[str]:
    """`judge cost: ...` from results.json's cost_latency.judge (absent when the judge made no call)."""
    judge = cost_latency.get("judge") if isinstance(cost_latency, dict) else None
    if not isinstance(judge, dict) or not judge.get("calls"):
        return []
    if not isinstance(judge.get("total"), (int, float)):
        return [f"  judge cost: not priced ({judge.get('reason') or 'no prices'})"]
    answers = judge.get("answers")   # k > 1: the per case figure is one answer's
    on, of = ((f" on {answers} judged answer(s)", " (one answer's)") if isinstance(answers, int)
              and not isinstance(answers, bool) else ("", ""))
    return [f"  judge cost: {judge['total']:.6g} {judge.get('currency') or ''} over {judge['calls']} call(s){on}, "
            f"{judge.get('mean_per_case') or 0:.6g} per case{of}, apart from the app's"]


def provisional_fail_line(run_dir: Path, results: dict) -> list[str]:
    """`judged (provisional): would have failed: <case> (<rubric>, provisional, not gating)`: a rubric
    not yet calibrated that said fail never gates, but a person must see which case it saw fail."""
    judged = (results.get("summary") or {}).get("judged") if isinstance(results.get("summary"), dict) else None
    prov = judged.get("provisional") if isinstance(judged, dict) else None
    if not isinstance(prov, dict) or not prov.get("fail"):
        return []
    rows = results.get("cases") if isinstance(results.get("cases"), list) else []
    sealed = LazyHoldoutIds(run_dir, rows)
    named, count = [], 0
    for row in rows:
        if not isinstance(row, dict) or (row.get("layers") or {}).get("judged") in (None, "n/a", "pass", "fail"):
            continue
        cid = str(row.get("case_id"))
        layer = ((case_verdict(run_dir, cid) or {}).get("layers") or {}).get("judged")
        if not isinstance(layer, dict) or layer.get("provisional_verdict") != "fail":
            continue
        count += 1
        if cid not in sealed and len(named) < MAX_NAMED:
            pins = [r.get("pin") for r in layer.get("rubrics") or [] if isinstance(r, dict)
                    and r.get("provisional") and r.get("verdict") == "fail"]
            named.append(f"{cid} ({', '.join(str(p) for p in pins) or 'rubric'}, provisional, not gating)")
    if not count:
        return []
    return [f"  judged (provisional) would have failed: {count} case(s): " + ", ".join(named)
            + (f" and {count - len(named)} more" if count > len(named) else "")
            + " -- calibrate the rubric (score_agreement.py --write) to let it gate"]
