"""Whether a run's completeness check failed: the one rule run_history.py and the viewer's History
exclude a run by (`check_verdict`), asked of the run's gate decision first."""

from __future__ import annotations

from pathlib import Path


def check_verdict(run_dir: Path, decision: dict | None, verify: bool) -> tuple[str | None, bool]:
    """(why the run is excluded: the completeness check's words when it failed, else None; whether the
    check answered). The one rule for run_history.py and the viewer's History: a run whose decision
    (`decide`) says its check failed (`assay.verdict.decide.check_failed`: gate.py ran it, or the viewer took
    the answer a reader kept for these bytes, `<reports>/.<run-id>.checked.json`, or checked a small
    run itself) is excluded in the gate's words. With `verify` and no answer in the decision, the check
    is run here (`run_cases.py --verify`'s function; a kept answer is taken for the same bytes)."""
    from ..verdict import check_failed
    failed = check_failed(decision)
    checked = bool(decision and decision.get("verified"))
    if verify and not checked:
        from ..report.gate_reasons import run_verify
        clean, detail = run_verify(run_dir)
        failed, checked = (None if clean else detail or "run_cases.py --verify failed"), True
    return failed, checked

