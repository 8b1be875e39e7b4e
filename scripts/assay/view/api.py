"""The JSON documents behind the pages, by API path; one function for the server and the bundle.

/api/runs, /api/run/<id> (counts + the gate's decision or "checking"), /api/run/<id>/gate?wait=S,
/api/run/<id>/cases?… (a page), /api/run/<id>/sources?ids=… (the shown failing rows' case files),
/api/case/<run>/<case>, /api/compare/<base>/<cand> (assay.compare's document),
/api/history (run_history's series and flaky cases; the check not run, a run its decision says failed it excluded).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from . import gates
from .cases import page, sources
from .case import case_doc
from .paths import NotFound, read_jsonl, run_dir
from .runs import list_runs, run_extra, run_row


def run_doc(reports: Path, run_id: str, wait: float | None = 0.0) -> dict:
    """Counts from results.json at once; the gate's decision if known within `wait` s, else
    "checking" (the page then asks /api/run/<id>/gate)."""
    run_dir(reports, run_id)
    row = run_row(reports, run_id, wait)
    if row is None:
        raise NotFound("no results.json")
    extra = run_extra(reports, run_id) or {}
    return {"run": row, "gate": {"gate": row["gate"], "reasons": row["reasons"], "verified": row["verified"],
                                 "check": row["check"]},
            "summary": extra.get("summary"), "gate_rule": extra.get("gate_rule")}


def gate_doc(reports: Path, run_id: str, query: dict[str, Any]) -> dict:
    """The gate's decision, waiting up to ?wait= seconds (at most gates.WAIT_MAX_S) for it."""
    row = run_row(reports, run_id, _wait(query, 0.0))
    if row is None:
        raise NotFound("no results.json")
    return {"gate": row["gate"], "reasons": row["reasons"], "verified": row["verified"], "green": row["green"],
            "check": row["check"]}


def _wait(query: dict[str, Any], default: float) -> float:
    """?wait= seconds (the default when absent or not a number; gates caps it at WAIT_MAX_S)."""
    try:
        wait = float((query.get("wait") or [default])[0])
    except ValueError:
        return default
    return wait if wait == wait else default


def compare_doc(reports: Path, base: str, cand: str, wait: float | None = gates.WAIT_MAX_S) -> dict:
    """assay.compare's document (each side's cost and latency per case and in total with the deltas
    are its own `cost_latency`: compare.cost_delta), each pair marked when only a rubric's verdict changed. First
    each side's completeness check as its gate decided it (waited for up to `wait` s): a side that
    fails it is refused in compare_runs.py's words (`error`, `refused`); a side still being decided
    is `checking` (no comparison drawn yet: the page asks again); a side not checked here (too big,
    no answer kept) is compared and named in `unchecked`."""
    from ..compare.baseline import unverified_words
    from ..compare.document import compare_runs
    sides = [("base", base, run_dir(reports, base)), ("candidate", cand, run_dir(reports, cand))]
    for _, _, d in sides:
        gates.ask(d)   # both queued before either is waited for
    decisions = [gates.current(d, wait) for _, _, d in sides]
    checks = [(role, rid, d, gates.check_state(dec)) for (role, rid, d), dec in zip(sides, decisions)]
    for role, rid, d, check in checks:
        if check["state"] == "failed":
            shown = str(check["detail"]).removeprefix("run_cases.py --verify ")
            return {"error": unverified_words(d, role, shown), "refused": {"role": role, "run_id": rid}}
    pending = [{"role": role, "run_id": rid} for role, rid, _, check in checks if check["state"] == gates.CHECKING]
    if pending:
        return {"checking": pending, "words": " and ".join(f"the {p['role']} {p['run_id']}" for p in pending)
                + (" are" if len(pending) > 1 else " is") + " still being checked (run_cases.py --verify, as the "
                "gate reads it): no comparison is drawn "
                "from files not yet checked"}
    try:
        doc = compare_runs(run_dir(reports, base), run_dir(reports, cand))
    except AssayError as exc:
        return {"error": str(exc)}
    # a base whose own gate is closed is said first, in gate.py --baseline's words (assay.verdict's)
    red = red_base_words(reports, sides[0][2], sides[1][2], doc["base"]["run_id"], decisions[0])
    if red:
        doc["notes"].insert(0, red)
    doc["red_baseline"] = red
    doc["unchecked"] = [f"the {role} {rid} has no check answer here (run_cases.py --verify: the viewer runs it on a "
                        "small run only, else shows an answer gate.py or compare_runs.py kept for these files): its "
                        "rows are read as they are; compare_runs.py checks both sides before it compares" for role, rid, _, check in checks if check["state"] == "unchecked"]
    for pairs in (doc.get("buckets") or {}).values():
        for p in pairs if isinstance(pairs, list) else []:
            changed = {c.get("layer") for c in p.get("layers_changed") or []}
            p["rubric_only"] = changed == {"judged"}
    return doc


def red_base_words(reports: Path, base_dir: Path, cand_dir: Path, base_id: str, decision: dict | None) -> str | None:
    """assay.verdict.baseline.red_baseline_words for the base run the page compares with, asked of the
    decision the viewer shows for it (the runs page's, assay.verdict's): None while it is open or not
    decided. The pinned run (reports/baseline.json) is told to re-pin; any other base to be compared with
    a run whose gate was open."""
    from ..compare.baseline import pinned
    from ..verdict.baseline import red_baseline_words
    if not isinstance(decision, dict) or decision.get("gate") not in ("open", "closed"):
        return None
    try:
        pin = pinned(reports)
    except AssayError:   # a bad pin is gate.py --baseline auto's to refuse; here the base is named
        pin = None
    spec = "auto" if pin is not None and pin.resolve() == Path(base_dir).resolve() else str(base_dir)
    reasons = decision.get("reasons") or []
    return red_baseline_words(spec, cand_dir, base_dir, base_id,
                              is_open=lambda _: (decision["gate"] == "open", reasons[0] if reasons else None))


def sealed_ids(reports: Path) -> set[str]:
    """Every holdout case id any run's verdicts.jsonl names (to be kept out of every document)."""
    from .runs import run_names
    ids: set[str] = set()
    for name in run_names(reports):
        ids |= {r["case_id"] for r in read_jsonl(reports / name / "verdicts.jsonl", reports)
                if r.get("holdout") and isinstance(r.get("case_id"), str)}
    return ids


def seal(value: Any, sealed: set[str]) -> Any:
    """`value` without any dict key, case row or string equal to a sealed id."""
    if isinstance(value, dict):
        if value.get("case_id") in sealed:
            return None
        return {k: seal(v, sealed) for k, v in value.items() if k not in sealed}
    if isinstance(value, list):
        out = [seal(v, sealed) for v in value]
        return [v for v, orig in zip(out, value) if not (v is None and isinstance(orig, dict)) and not (isinstance(orig, str) and orig in sealed)]
    return value


def history_doc(reports: Path) -> dict:
    """run_history's document without running the completeness check (for speed), holdout ids removed:
    each run carries its decision (`gate_of`, the Runs page's), and one whose decision says its check failed
    (a kept answer, or the viewer's check of a small run) is excluded as run_history.py excludes it
    (`history.check.check_verdict`); history.runs seals holdout ids itself, and this second pass keeps the
    viewer's own rule (any id in any run's verdicts.jsonl)."""
    from ..history.runs import history
    try:
        from .gates import gate_of
        doc = history(reports.parent, verify=False, decide=gate_of)
    except AssayError as exc:
        return {"error": str(exc)}
    sealed = sealed_ids(reports)
    return seal(doc, sealed) if sealed else doc


def route(reports: Path, path: str, query: dict[str, Any]) -> Any:
    """The document for an API path, or NotFound."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] != ["api"]:
        raise NotFound(path)
    parts = parts[1:]
    if parts == ["runs"]:
        return list_runs(reports)
    if parts == ["history"]:
        return history_doc(reports)
    if len(parts) == 2 and parts[0] == "run":
        return run_doc(reports, parts[1])
    if len(parts) == 3 and parts[0] == "run" and parts[2] == "gate":
        return gate_doc(reports, parts[1], query)
    if len(parts) == 3 and parts[0] == "run" and parts[2] == "cases":
        return page(reports, parts[1], query)
    if len(parts) == 3 and parts[0] == "run" and parts[2] == "sources":
        return sources(reports, parts[1], query)
    if len(parts) == 3 and parts[0] == "case":
        return case_doc(reports, parts[1], parts[2], (query.get("baseline") or [None])[0])
    if len(parts) == 3 and parts[0] == "compare":
        return compare_doc(reports, parts[1], parts[2], _wait(query, gates.WAIT_MAX_S))
    raise NotFound(path)
