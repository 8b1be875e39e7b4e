"""One side of a comparison: a finished run dir read through the files of runner-contract §10.

`load_side(run_dir)` reads results.json, manifest.yaml and verdicts.jsonl once; the per-case
files (verdict.json, answer.txt, trajectory.json, turns/<n>/...) are read only when a pair
needs them. Nothing is written, nothing follows a symlink (report.rundir refuses them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.ids import is_safe_case_id
from ..report.rundir import load_results, read_jsonl_file, try_json
from ..core import casestore


@dataclass
class Side:
    run_dir: Path
    results: dict
    manifest: dict
    rows: dict[str, dict]                  # verdicts.jsonl by case id, plan order kept
    case_hash: dict[str, str | None]       # case_sha256 (None: the run predates case hashes)
    legacy_hash: dict[str, str | None]     # the plan case's own sha256 (older runs have only this)
    holdout: set[str] = field(default_factory=set)

    @property
    def run_id(self) -> str:
        rid = self.results.get("run_id")
        return rid if isinstance(rid, str) else self.run_dir.name

    @property
    def k(self) -> Any:
        return self.results.get("k", self.manifest.get("k"))

    @property
    def has_case_hashes(self) -> bool:
        return bool(self.case_hash) and all(v is not None for v in self.case_hash.values())

    def describe(self) -> dict[str, Any]:
        s = self.results.get("summary") or {}
        return {"run_id": self.run_id, "run_dir": str(self.run_dir), "mode": self.results.get("mode"),
                "k": self.k, "dataset_version": self.results.get("dataset_version"),
                "harness_version": self.results.get("harness_version"), "status": s.get("status"),
                "started_at": self.results.get("started_at"),
                "suite_sha256": self.manifest.get("suite_sha256"),
                "case_hashes": self.has_case_hashes}

    # -------------------------------------------------------- per-case files (lazy)
    def _case(self, case_id: str) -> casestore.CaseRecord | None:
        """The case's record (core.casestore, either layout). Only the last one is kept: a pair
        reads one case's verdict, answer, trajectory and expect in a row, and a 100,000-case
        comparison holds no more than one record per side."""
        if not is_safe_case_id(case_id):
            return None
        last = getattr(self, "_last", None)
        if last is not None and last[0] == case_id:
            return last[1]
        store = getattr(self, "_store", None)
        if store is None:   # the run dir is finished (load_side refuses a running one): one index
            store = self._store = casestore.open_store(self.run_dir)
        rec = store.load(case_id)
        self._last = (case_id, rec)
        return rec

    def verdict_doc(self, case_id: str) -> dict:
        """The case's verdict record ({} when absent)."""
        rec = self._case(case_id)
        return rec.verdict if rec is not None and isinstance(rec.verdict, dict) else {}

    def text(self, case_id: str, *rel: str) -> str | None:
        rec = self._case(case_id)
        data = rec.read("/".join(rel)) if rec is not None else None
        return data.decode("utf-8", "replace") if data is not None else None

    def json(self, case_id: str, *rel: str) -> Any:
        text = self.text(case_id, *rel)
        try:
            return json.loads(text) if text is not None else None
        except (ValueError, RecursionError):
            return None


def load_side(run_dir: Path, what: str) -> Side:
    """Read a run dir for comparison; AssayError(2) naming `what` (base / candidate) and the fix."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AssayError(f"{what} {run_dir}: not a directory; pass a run directory (<state>/reports/<run-id>)",
                         2, path=str(run_dir))
    results = load_results(run_dir)
    status = results["summary"].get("status")
    if status == "running":
        raise AssayError(f"{what} {run_dir}: the run is still running (summary.status running); wait for it "
                         f"(wait_run.py {run_dir}) or resume it, then compare", 2, path=str(run_dir))
    manifest = try_json(run_dir / "manifest.yaml")
    if not isinstance(manifest, dict):
        raise AssayError(f"{what} {run_dir}: manifest.yaml is missing or unreadable; this is not a run "
                         f"directory the runner finished (check it with run_cases.py --verify {run_dir})",
                         2, path=str(run_dir))
    rows: dict[str, dict] = {}
    for row in read_jsonl_file(run_dir / "verdicts.jsonl"):
        cid = row.get("case_id")
        if isinstance(cid, str):
            rows[cid] = row
    entries = [c for c in manifest.get("cases") or [] if isinstance(c, dict) and isinstance(c.get("id"), str)]
    case_hash = {c["id"]: c.get("case_sha256") if isinstance(c.get("case_sha256"), str) else None for c in entries}
    legacy = {c["id"]: c.get("sha256") if isinstance(c.get("sha256"), str) else None for c in entries}
    holdout = {cid for cid, r in rows.items() if r.get("holdout")}
    holdout |= {c["id"] for c in entries if c.get("set") == "holdout"}
    return Side(run_dir=run_dir, results=results, manifest=manifest, rows=rows, case_hash=case_hash,
                legacy_hash=legacy, holdout=holdout)
