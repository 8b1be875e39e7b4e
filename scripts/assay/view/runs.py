"""The runs list: one row per run dir under reports/, read lazily (results.json and manifest only).

A row is what the Runs page shows: mode, time, pass rate with its Wilson interval, the gate's
verdict (`assay.view.gates`: the one decision, in the gates' worker process; "checking" until known),
gating failures, infra rate, suite version, series, and marks for a rescored, aborted, running,
interrupted (its runner killed), sharded or incomplete run (never green). Rows are cached per run
by results.json's mtime; a running run's mark is asked each time.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from ..history.runs import HOLDOUT_MODES, SERIES_KEYS, shard_dir_reason, series_name
from ..stats.proportions import wilson_interval
from .gates import CHECKING, check_state, gate, runner_alive
from .paths import read_json, safe_run_id

_CACHE: dict[tuple[str, float], tuple[dict, dict]] = {}
_LOCK = threading.Lock()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def marks_of(name: str, summary: dict, manifest: dict) -> list[str]:
    marks = []
    extra = manifest.get("manifest_extra") if isinstance(manifest.get("manifest_extra"), dict) else {}
    if isinstance(extra.get("rescored_from"), dict):
        marks.append("rescored")
    status = summary.get("status")
    if status == "aborted":
        marks.append("aborted")
    elif status == "running":
        marks.append("running")
    elif status not in ("ok", None):
        marks.append(f"status {status}")
    if shard_dir_reason(name) or isinstance(manifest.get("shard"), dict):
        marks.append("shard")
    if _int(summary.get("infra_incomplete")) or status == "incomplete":
        marks.append("incomplete")
    return marks


def run_row(reports: Path, name: str, wait: float | None = 0.0) -> dict | None:
    """The run's row with the gate's decision if it is known within `wait` s (else gate "checking")."""
    base = _base_row(reports, name)
    if base is None:
        return None
    row, mtime, _ = base
    if "running" in row["marks"]:   # asked each time: a killed runner leaves results.json as it was,
        # and its gate's reason says how many cases finished and how to resume
        mark = "running" if runner_alive(reports / name) else "interrupted"
        row = dict(row, marks=[mark if m == "running" else m for m in row["marks"]])
    decision = gate(reports / name, mtime, wait)
    if row["status"] == "running":
        row = dict(row, **unfinished_counts(decision.get("counts")))
    return dict(row, gate=decision["gate"], reasons=decision["reasons"], verified=bool(decision.get("verified")),
                check=check_state(decision), green=decision["gate"] == "open" and not row["marks"])


def unfinished_counts(counts: dict | None) -> dict:
    """A run whose results.json still says running: its summary is the runner's last batch (a killed
    runner's often 0 cases while cases failed). Its counts are the decision's recount of the finished
    cases (`assay.verdict.decision_dict`, what gate.py quotes), or unknown (None, shown "–": the
    runner still writes them, or the gate is not decided yet), never that batch's 0."""
    counts = counts if isinstance(counts, dict) else {}
    passes, failures = counts.get("passes"), counts.get("failures")
    known = isinstance(passes, int) and isinstance(failures, int)
    ci = wilson_interval(passes, passes + failures) if known else None
    gating = counts.get("gating_failures")
    return {"n": counts.get("n") if isinstance(counts.get("n"), int) else None,
            "passes": passes if known else None, "failures": failures if known else None,
            "pass_rate": round(passes / (passes + failures), 4) if known and passes + failures else None,
            "interval": [round(ci[0], 4), round(ci[1], 4)] if ci else None,
            "gating_failures": gating if isinstance(gating, int) else None,
            "infra_rate": counts.get("infra_rate") if known else None,
            "unscored": counts.get("unscored") if isinstance(counts.get("unscored"), int) else None}


def _base_row(reports: Path, name: str) -> tuple[dict, float, dict] | None:
    """(the row without the gate, results.json's mtime, its summary and gate rule), cached by mtime."""
    d = reports / name
    try:
        mtime = os.stat(d / "results.json", follow_symlinks=False).st_mtime
    except OSError:
        return None
    key = (str(d), mtime)
    with _LOCK:
        if key in _CACHE:
            row, extra = _CACHE[key]
            return row, mtime, extra
    results = read_json(d / "results.json", reports)
    manifest = read_json(d / "manifest.yaml", reports)
    if not isinstance(results, dict) or not isinstance(results.get("summary"), dict):
        return None
    manifest = manifest if isinstance(manifest, dict) else {}
    s = results["summary"]
    passes, failures = _int(s.get("passes")), _int(s.get("failures"))
    ci = wilson_interval(passes, passes + failures)
    series_key = tuple(results.get(k, manifest.get(k)) for k in SERIES_KEYS)
    marks = marks_of(name, s, manifest)
    holdout = s.get("holdout") if isinstance(s.get("holdout"), dict) else {}
    row = {"run_id": name, "mode": results.get("mode") or manifest.get("mode"),
           "started_at": results.get("started_at"), "finished_at": results.get("finished_at"),
           "status": s.get("status"), "n": _int(s.get("n")), "passes": passes, "failures": failures,
           "pass_rate": round(passes / (passes + failures), 4) if passes + failures else None,
           "interval": [round(ci[0], 4), round(ci[1], 4)] if ci else None,
           "gating_failures": _int(s.get("gating_failures")), "infra_rate": s.get("infra_rate"),
           "unscored": _int(s.get("unscored")), "holdout_cases": _int(holdout.get("n")),
           "suite_sha256": manifest.get("suite_sha256") if isinstance(manifest.get("suite_sha256"), str) else None,
           "k": results.get("k", manifest.get("k")), "series": series_name(series_key),
           "marks": marks,
           "holdout_mode": (results.get("mode") or manifest.get("mode")) in HOLDOUT_MODES}
    with _LOCK:
        _CACHE[key] = (row, extra := {"summary": s, "gate_rule": results.get("gate")})
    return row, mtime, extra


def run_extra(reports: Path, name: str) -> dict | None:
    """The run's results.json summary and gate rule (read once with its row)."""
    base = _base_row(reports, name)
    return base[2] if base else None


def run_names(reports: Path) -> list[str]:
    try:
        entries = list(os.scandir(reports))
    except OSError:
        return []
    names = [e.name for e in entries
             if not e.is_symlink() and e.is_dir(follow_symlinks=False) and safe_run_id(e.name)]
    return sorted(names, reverse=True)


def unreadable_runs(reports: Path, names: list[str], shown: set[str]) -> list[dict]:
    """The run dirs the runs list left out, each with why (the fix is the run's own: finish,
    resume or remove it): never dropped without a word."""
    out = []
    for name in names:
        if name in shown:
            continue
        results = read_json(reports / name / "results.json", reports)
        why = "results.json is absent, unreadable or not JSON" if results is None else "results.json has no summary"
        out.append({"run_id": name, "reason": why + " (an unfinished or damaged run: resume it with "
                    "run_cases.py --resume, or remove the dir)"})
    return out


def list_runs(reports: Path, wait: float | None = 0.5) -> dict:
    """Every run's row; the gates not known within `wait` s in all (None: wait for every one) are
    "checking" (`checking` counts them: the page asks again). The run dirs that cannot be shown
    are listed under `unreadable`, with why."""
    names = run_names(reports)
    for n in reversed(names):  # queued oldest first: the worker takes the newest first
        run_row(reports, n, 0.0)
    deadline = None if wait is None else time.monotonic() + wait
    rows = []
    for n in names:
        r = run_row(reports, n, None if deadline is None else max(0.0, deadline - time.monotonic()))
        if r:
            rows.append(r)
    return {"runs": rows, "count": len(rows), "checking": sum(1 for r in rows if r["gate"] == CHECKING),
            "unreadable": unreadable_runs(reports, names, {r["run_id"] for r in rows}),
            "not_started": not_started_runs(reports, rows)}


def not_started_runs(reports: Path, rows: list[dict]) -> list[dict]:
    """The runs newer than every listed run of their mode that stopped at pre-flight (no run dir,
    `.<run-id>.not-started.json`; assay.rundir.not_started, gate.py --latest's rule): said above the
    list, so the newest row, an older run, never reads as the mode's latest result."""
    from ..core.ids import parse_run_id
    from ..rundir import not_started
    out = []
    for mode in not_started.modes(reports):
        stamps = [p[1] for p in (parse_run_id(r["run_id"]) for r in rows) if p and p[0] == mode]
        never = not_started.newer_than(reports, mode, max(stamps) if stamps else None)
        if never is None:
            continue
        _, run_id, record = never
        out.append({"run_id": run_id, "mode": mode, "exit_code": record.get("exit_code"), "at": record.get("at"),
                    "message": f"{not_started.headline(record, run_id, mode)}: "
                               "the runs listed are older, none of them is its result"})
    return out
