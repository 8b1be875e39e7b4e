"""The runs list: one row per run dir under reports/, read lazily (results.json and manifest only).

A row is what the Runs page shows: mode, time, pass rate with its Wilson interval, the gate's
verdict (from `assay.report.gate.evaluate`, the gate's own library function, never re-stated),
gating failures, infra rate, suite version, series, and marks for a rescored, aborted, sharded
or incomplete run (never green). Rows are cached per run by results.json's mtime.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..history.runs import HOLDOUT_MODES, SERIES_KEYS, _shard_reason, series_name
from ..report.gate import evaluate
from ..stats.proportions import wilson_interval
from .paths import read_json, safe_run_id

_CACHE: dict[tuple[str, float], dict] = {}
_LOCK = threading.Lock()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def gate_of(run_dir: Path) -> dict:
    """The gate's decision for the viewer: evaluate() without the --verify subprocess."""
    try:
        res = evaluate(run_dir, verify=False)
    except AssayError as exc:
        return {"gate": "closed", "reasons": [str(exc)], "lines": []}
    except (OSError, ValueError, RecursionError) as exc:
        return {"gate": "closed", "reasons": [f"unreadable run files ({type(exc).__name__})"], "lines": []}
    return {"gate": "open" if res.open else "closed", "reasons": list(res.reasons),
            "verified": False, "in_progress": getattr(res, "in_progress", None)}


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
    if _shard_reason(name) or isinstance(manifest.get("shard"), dict):
        marks.append("shard")
    if _int(summary.get("infra_incomplete")) or status == "incomplete":
        marks.append("incomplete")
    return marks


def run_row(reports: Path, name: str) -> dict | None:
    d = reports / name
    try:
        mtime = os.stat(d / "results.json", follow_symlinks=False).st_mtime
    except OSError:
        return None
    key = (str(d), mtime)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    results = read_json(d / "results.json", reports)
    manifest = read_json(d / "manifest.yaml", reports)
    if not isinstance(results, dict) or not isinstance(results.get("summary"), dict):
        return None
    manifest = manifest if isinstance(manifest, dict) else {}
    s = results["summary"]
    passes, failures = _int(s.get("passes")), _int(s.get("failures"))
    ci = wilson_interval(passes, passes + failures)
    series_key = tuple(results.get(k, manifest.get(k)) for k in SERIES_KEYS)
    gate = gate_of(d)
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
           "gate": gate["gate"], "reasons": gate["reasons"], "marks": marks,
           "green": gate["gate"] == "open" and not marks,
           "holdout_mode": (results.get("mode") or manifest.get("mode")) in HOLDOUT_MODES}
    with _LOCK:
        _CACHE[key] = row
    return row


def run_names(reports: Path) -> list[str]:
    try:
        entries = list(os.scandir(reports))
    except OSError:
        return []
    names = [e.name for e in entries
             if not e.is_symlink() and e.is_dir(follow_symlinks=False) and safe_run_id(e.name)]
    return sorted(names, reverse=True)


def list_runs(reports: Path) -> dict:
    rows = [r for r in (run_row(reports, n) for n in run_names(reports)) if r]
    return {"runs": rows, "count": len(rows)}
