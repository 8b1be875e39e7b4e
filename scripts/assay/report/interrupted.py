"""A run whose results.json still says `running`: is the runner alive, and what finished?

results.json is refreshed in batches while a run goes, so a runner killed by SIGTERM or
SIGKILL can leave it saying `0 cases`. The gate does not quote that: it recounts the
finished cases from their verdict.json files (the counts table, `assay.stats.counts`) and
says the run was interrupted, how many of the planned cases finished and how to resume; the
finished cases' rows stand in for results.json's `cases` (its last batch), so the gate's reasons
name the failing cases as they do for a finished run (holdout rows left out, as results.json does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import casestore
from ..core.errors import AssayError
from ..rundir.derived import results_rows
from ..stats.counts import cases_phrase, summarize
from .rundir import try_json
from ..rundir.runlock import how_to_finish, lock_path, runner_state


def unfinished_runner(run_dir: Path, results: Any) -> tuple[str, str | None]:
    """(the run id, None while a runner holds the run's lock, else the words that finish the run: `finish it
    with: <the --resume command>`, how_to_finish's): what every reader of a `running` run says it from."""
    run_dir = Path(run_dir)
    run_id = results.get("run_id") if isinstance(results, dict) and isinstance(results.get("run_id"), str) \
        else run_dir.name
    lock = lock_path(run_dir, run_id)
    if runner_state(lock) == "alive":
        return run_id, None
    lock_doc = try_json(lock)
    return run_id, how_to_finish(run_dir, lock_doc if isinstance(lock_doc, dict) else None)


def interrupted_view(run_dir: Path, results: dict) -> tuple[dict | None, list[dict] | None, str]:
    """(recounted summary, the finished cases' results.json rows, close reason) for a `running` run
    whose runner is gone; (None, None, reason) while the runner lives."""
    run_dir = Path(run_dir)
    _, how = unfinished_runner(run_dir, results)
    if how is None:
        return None, None, ("the run is still running (its runner holds the lock): wait with "
                      f"`wait_run.py {run_dir}`, then gate the finished run")
    records: list[dict[str, Any]] = [doc for cid, doc in casestore.open_store(run_dir).verdicts()
                                     if doc.get("case_id") == cid]
    summary = summarize(records, status="running", missing_artifacts=[])
    manifest = try_json(run_dir / "manifest.yaml")  # JSON text (valid YAML)
    planned = manifest.get("cases") if isinstance(manifest, dict) else None
    n_planned = len(planned) if isinstance(planned, list) else None
    canaries = sum(1 for c in planned or [] if isinstance(c, dict) and c.get("set") == "canary")
    finished = cases_phrase(summary["n"], summary["canaries"]["n"])
    of = f" of {cases_phrase(n_planned - canaries, canaries)} planned" if n_planned is not None else ""
    reason = (f"run interrupted: status is still 'running' but no runner holds its lock (killed?); "
              f"{finished} finished{of} ({summary['passes']} pass, {summary['failures']} fail); {how}")
    return summary, results_rows(records), reason


def refuse_unfinished(run_dir: Path, what: str, given: str, **fields: Any) -> None:
    """AssayError(2) when `given` (a verdicts file, `what`: "the baseline", "--baseline-verdicts", ...)
    sits in a run dir whose results.json still says `running`: its verdicts files hold the cases of the
    runner's last batch (results.json's too), never the run's result, so no reader pairs or rates them.
    The words say whether the runner lives (wait) or was killed (the --resume command). Nothing when
    `run_dir` holds no results.json (a file kept outside a run dir) or the run finished."""
    from .run_files import status_from_tail, try_json_head
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if not path.is_file():
        return
    status = status_from_tail(path)
    head = try_json_head(path) if status is None else None
    if status is None and isinstance(head, dict) and isinstance(head.get("summary"), dict):
        status = head["summary"].get("status")
    if status != "running":
        return
    run_id, how = unfinished_runner(run_dir, head if isinstance(head, dict) else try_json_head(path))
    if how is None:
        raise AssayError(f"{what} {given} is the verdicts of run {run_id}, which is still running (its runner holds "
                         "the lock): the file holds only the cases finished so far; wait with "
                         f"`wait_run.py {run_dir}`, then pass it", 2, path=str(run_dir), run_id=run_id, **fields)
    raise AssayError(f"{what} {given} is the verdicts of run {run_id}, which never finished (status is still "
                     "'running' but no runner holds its lock: killed?): the file holds only the cases of its last "
                     f"batch, not the run's result; {how}"
                     " -- then pass it again (or another run's verdicts_for_stats.jsonl)", 2, path=str(run_dir),
                     run_id=run_id, **fields)
