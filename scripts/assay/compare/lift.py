"""Two arms' runs of one suite (`make_plan.py --arm`), compared: the lift a change gives an agent app.

`compare_runs.py` adds a `lift` block when either run was planned under an arm
(`manifest_extra.arm`): the arms' names, per case the verdict on each side (pass^k: a case passes
only when all its k repeats did), each side's pass rate and the difference, the paired statistics
of the comparison (the exact test and the minimum detectable effect at this n, `stats`), and the
trigger accuracy of the skill expectations on each side (the share of cases asserting
`expect.skills` whose skills layer passed). Nothing is re-decided: the verdicts are the runs' own.
"""

from __future__ import annotations

from typing import Any

from .sides import Side


def arm_of(side: Side) -> dict[str, Any] | None:
    extra = side.manifest.get("manifest_extra") if isinstance(side.manifest.get("manifest_extra"), dict) else {}
    arm = extra.get("arm")
    return arm if isinstance(arm, dict) else None


def _rate(values: list[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _trigger(side: Side, ids: list[str]) -> dict[str, Any]:
    asserted = [side.rows[c] for c in ids if c in side.rows
                and str((side.rows[c].get("layers") or {}).get("skills")) in ("pass", "fail")]
    passed = [str(r["layers"]["skills"]) == "pass" for r in asserted]
    return {"cases": len(asserted), "correct": sum(passed), "accuracy": _rate(passed)}


def lift_block(base: Side, cand: Side, pairs: list[dict[str, Any]], stats: dict | None,
               stats_note: str | None) -> dict[str, Any] | None:
    barm, carm = arm_of(base), arm_of(cand)
    if barm is None and carm is None:
        return None
    bname, cname = (barm or {}).get("name") or "(no arm)", (carm or {}).get("name") or "(no arm)"
    scored = [p for p in pairs if p["verdict"]["base"] in ("pass", "fail") and p["verdict"]["candidate"] in ("pass", "fail")]
    brate = _rate([p["verdict"]["base"] == "pass" for p in scored])
    crate = _rate([p["verdict"]["candidate"] == "pass" for p in scored])
    ids = [p["case_id"] for p in pairs]
    out = {
        "base_arm": barm, "candidate_arm": carm,
        "reading": f"lift of arm {cname} over arm {bname}",
        "k": {"base": base.k, "candidate": cand.k},
        "cases": [{"case_id": p["case_id"], bname: p["verdict"]["base"], cname: p["verdict"]["candidate"]}
                  for p in pairs],
        "pass_rate": {"base": brate, "candidate": crate,
                      "lift": None if brate is None or crate is None else round(crate - brate, 4),
                      "cases": len(scored)},
        "trigger_accuracy": {"base": _trigger(base, ids), "candidate": _trigger(cand, ids)},
        "stats": stats, "stats_note": stats_note,
    }
    if barm is not None and carm is not None and bname == cname:
        out["note"] = f"both runs were planned under the same arm ({bname}): this is a re-run, not a lift"
    if stats and stats.get("mde_sentence"):
        out["sentence"] = (f"Arm {cname} vs {bname}: pass^k {crate} vs {brate} over {len(scored)} case(s). "
                           f"{stats['mde_sentence']}")
    return out
