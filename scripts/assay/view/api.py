"""The JSON documents behind the pages, by API path; one function for the server and the bundle.

/api/runs, /api/run/<id> (counts + the gate's decision or "checking"), /api/run/<id>/gate?wait=S,
/api/run/<id>/cases?… (a page), /api/run/<id>/sources?ids=… (the shown failing rows' case files),
/api/case/<run>/<case>, /api/compare/<base>/<cand> (assay.compare's document),
/api/history (run_history's series and flaky cases, unverified).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import AssayError
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
    return {"run": row, "gate": {"gate": row["gate"], "reasons": row["reasons"], "verified": row["verified"]},
            "summary": extra.get("summary"), "gate_rule": extra.get("gate_rule")}


def gate_doc(reports: Path, run_id: str, query: dict[str, Any]) -> dict:
    """The gate's decision, waiting up to ?wait= seconds (at most gates.WAIT_MAX_S) for it."""
    try:
        wait = float((query.get("wait") or ["0"])[0])
    except ValueError:
        wait = 0.0
    row = run_row(reports, run_id, wait if wait == wait else 0.0)
    if row is None:
        raise NotFound("no results.json")
    return {"gate": row["gate"], "reasons": row["reasons"], "verified": row["verified"], "green": row["green"]}


def compare_doc(reports: Path, base: str, cand: str) -> dict:
    """assay.compare's document, plus each side's cost and latency per case and in total with the
    deltas (compare.cost_delta), and each pair marked when only a rubric's verdict changed."""
    from ..compare.cost_delta import cost_latency
    from ..compare.document import compare_runs
    try:
        doc = compare_runs(run_dir(reports, base), run_dir(reports, cand))
    except AssayError as exc:
        return {"error": str(exc)}
    doc["cost_latency"] = cost_latency(run_dir(reports, base), run_dir(reports, cand))
    for pairs in (doc.get("buckets") or {}).values():
        for p in pairs if isinstance(pairs, list) else []:
            changed = {c.get("layer") for c in p.get("layers_changed") or []}
            p["rubric_only"] = changed == {"judged"}
    return doc


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
    """run_history's document (unverified), holdout ids removed: history.runs seals them itself;
    this second pass keeps the viewer's own rule (any id in any run's verdicts.jsonl)."""
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
        return compare_doc(reports, parts[1], parts[2])
    raise NotFound(path)
