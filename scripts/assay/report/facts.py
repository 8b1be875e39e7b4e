"""The run's files, loaded once for the report: results, rows, manifest, run-level reports,
the holdout id set (ids to never print), and per-case verdicts of NON-holdout cases only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core import case_read, casestore
from ..core.errors import AssayError
from ..core.jsonio import MAX_DEPTH, loads
from ..core.writer import read_bytes
from .rundir import RunResultsView, case_verdict, holdout_ids, load_results, read_jsonl_file, try_json


@dataclass
class RunFacts(RunResultsView):
    run_dir: Path
    results: dict
    rows: list[dict]                     # verdicts.jsonl, holdout rows removed
    sealed: set[str]                     # holdout ids: never printed
    manifest: dict | None
    routing: dict | None
    reliability: dict | None
    comparison: dict | None
    verdicts: dict[str, dict] = field(default_factory=dict)  # non-holdout case id -> verdict.json


def _manifest(run_dir: Path) -> dict | None:
    path = run_dir / "manifest.yaml"
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        doc = loads(text, max_depth=MAX_DEPTH)  # the runner writes JSON text (valid YAML)
    except ValueError as exc:
        if "deep" in str(exc):
            return None
        try:
            import yaml
            doc = yaml.safe_load(text)
        except Exception:  # noqa: BLE001 - an unreadable manifest is "unknown", reported as such
            return None
    return doc if isinstance(doc, dict) else None


def _refuse_running(run_dir: Path, results: dict) -> None:
    """A `running` run has nothing to report: wait for a live runner; a killed one (no runner holds the
    lock, as wait_run.py exit 4 says) will never finish by waiting, so name the --resume command."""
    from ..rundir.runlock import how_to_finish, lock_path, resume_command, runner_state
    run_id = results.get("run_id") if isinstance(results.get("run_id"), str) else run_dir.name
    lock = lock_path(run_dir, run_id)
    if runner_state(lock) == "alive":
        raise AssayError(f"{run_dir}: the run is still running (summary.status is 'running'); wait with "
                         f"wait_run.py, then draft the report from the finished run", 2, path=str(run_dir))
    doc = try_json(lock)
    doc = doc if isinstance(doc, dict) else None
    command, _ = resume_command(run_dir, doc)
    raise AssayError(f"{run_dir}: the run was interrupted (summary.status is still 'running' but no runner "
                     f"holds its lock: killed?), so there is no report to draft; {how_to_finish(run_dir, doc)} "
                     "-- then draft the report from the finished run", 2, path=str(run_dir), resume=command)


def load_facts(run_dir: Path) -> RunFacts:
    from ..schemas import validate

    run_dir = Path(run_dir)
    results = load_results(run_dir)
    # Schemas at the boundary: a report quotes these numbers, so they must be the runner's shape.
    validate(results, "results", source=str(run_dir / "results.json"))
    if results["summary"].get("status") == "running":
        _refuse_running(run_dir, results)
    all_rows = read_jsonl_file(run_dir / "verdicts.jsonl")
    sealed = holdout_ids(run_dir, all_rows)
    rows = [r for r in all_rows if not r.get("holdout") and r.get("case_id") not in sealed]
    facts = RunFacts(run_dir=run_dir, results=results, rows=rows, sealed=sealed, manifest=_manifest(run_dir),
                     routing=_obj(try_json(run_dir / "routing_report.json")),
                     reliability=_obj(try_json(run_dir / "reliability.json")),
                     comparison=_obj(try_json(run_dir / "comparison.json")))
    for row in rows:
        cid = row.get("case_id")
        doc = case_verdict(run_dir, cid) if isinstance(cid, str) else None
        if doc and not doc.get("holdout"):
            facts.verdicts[cid] = doc
    return facts


def _obj(value: object) -> dict | None:
    return value if isinstance(value, dict) else None


def case_link(case_id: str, run_dir: Path | None = None) -> str:
    """A case id linked to its directory in an older run dir (report.md sits in the run dir; ids
    are URL-safe by rule); the id alone in a run with a case journal (no per-case files)."""
    from .mdtext import code
    if run_dir is not None and casestore.open_store(run_dir).layout != "dirs":
        return code(case_id)
    return f"[{code(case_id)}](cases/{case_id}/)"


def read_case_file(run_dir: Path, case_id: str, name: str) -> str | None:
    """One artifact of a finished case as text (either run-dir layout, core.casestore), or None."""
    return case_read.read_case_text(run_dir, case_id, name)
