"""The judged layer's reason before any judge call: pending (a judge runs) or why nothing judges."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.jsonio import read_json
from ..core.runplan import RunPlan

JUDGE_PENDING = "judge pending"


def judged_reason_fn(plan: RunPlan, state: Path) -> Callable[[Mapping[str, Any]], str]:
    """The judged layer's reason before any judge call: JUDGE_PENDING when the plan enables a judge
    (the case worker then judges), else why nothing judges this run."""
    block = plan.judge_block
    if block is not None:
        if block.get("enabled"):
            return lambda case: JUDGE_PENDING
        why = f"unjudged ({block.get('reason') or 'judge disabled in the plan'})"
        from ..plan.modes import MODES
        if not (plan.mode in MODES and MODES[plan.mode].judge):
            return lambda case: why  # smoke / targeted without --judge: the mode's choice
        # A mode that judges by default, with no judge.yaml: a calibrated pin would gate here,
        # so leaving it unjudged is a check that never ran, not a choice.
        from ..judge.rubrics import case_pins
        from ..judge.runtime import calibration_of, load_calibration
        sidecar, sidecar_why = load_calibration(plan, state)

        def reason(case: Mapping[str, Any]) -> str:
            gating = [str(p) for p in case_pins(dict(case)) if calibration_of(sidecar, sidecar_why, str(p))[0]]
            if not gating:
                return why
            return (f"no judge/judge.yaml in the state dir, so the calibrated (gating) rubric {', '.join(gating)} "
                    f"never ran in this {plan.mode} run; add judge/judge.yaml (docs/runner-contract.md, The judge)")
        return reason
    if plan.mode == "smoke":
        return lambda case: "unjudged (mode: smoke)"
    raw = plan.paths.get("judge_calibration")
    sidecar: Any = None
    if raw:
        p = Path(raw)
        try:
            sidecar = read_json(p if p.is_absolute() else state / p)
        except (OSError, ValueError):
            sidecar = None

    def reason(case: Mapping[str, Any]) -> str:
        rubric = ((case.get("expect") or {}).get("answer") or {}).get("rubric")
        return "unjudged (deferred to skill)" if rubric_calibrated(sidecar, rubric) else "unjudged (judge not calibrated)"
    return reason


def rubric_calibrated(sidecar: Any, rubric: Any) -> bool:
    """True only when the sidecar says this rubric (or every rubric) is calibrated."""
    if not isinstance(sidecar, Mapping):
        return False
    rubrics = sidecar.get("rubrics")
    ids = rubric if isinstance(rubric, list) else [rubric]
    if isinstance(rubrics, Mapping) and rubrics:
        return all(isinstance(rubrics.get(r), Mapping) and rubrics[r].get("calibrated") is True for r in ids)
    if isinstance(rubrics, list) and rubrics:
        by_id = {str(r.get("rubric") or r.get("id")): r for r in rubrics if isinstance(r, Mapping)}
        return all(isinstance(by_id.get(str(r)), Mapping) and by_id[str(r)].get("calibrated") is True for r in ids)
    return sidecar.get("calibrated") is True or sidecar.get("status") == "calibrated"
