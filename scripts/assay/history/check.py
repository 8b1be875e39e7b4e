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


def with_kept_answer(run_dir: Path, decision: dict) -> dict:
    """`decision` (run without the check: `run_history.py --no-verify`) with the completeness check's
    answer a reader kept for these same bytes (`rundir.checked.known`: gate.py, compare, `--baseline auto`
    keep it), when there is one and the decision has none. The check itself is never run here: skipping it
    is what --no-verify asks. A kept answer that says the check failed so excludes the run on this path as
    on the default one (an edited run gate.py found failing is never drawn as a point); one that says clean
    makes the run a checked one."""
    if not isinstance(decision, dict) or decision.get("verified"):
        return decision
    from ..report.gate_reasons import verify_answer
    from ..rundir.checked import known
    try:
        problems = known(Path(run_dir))
    except Exception:   # noqa: BLE001 -- no readable kept answer: the run stays unchecked, as it was
        return decision
    if problems is None:
        return decision
    clean, detail = verify_answer(problems)
    out = dict(decision, verified=True, verify_clean=clean, verify_detail=detail)
    if not clean:
        out["gate"], out["reasons"] = "closed", [detail, *[r for r in decision.get("reasons") or [] if r != detail]]
    return out
