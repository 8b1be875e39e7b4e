"""One optimize candidate: recorded before the edit, reverted with a verified blob, or kept
on evidence (wave2 §6, the optimize loop).

- `new`: every surface (a file path relative to the app) must be tracked and clean; its
  HEAD blob is recorded in `<state>/candidates/<id>/candidate.json` before any edit.
- `revert`: `git checkout -- <surface>`, then `git hash-object` must equal the recorded blob.
- `keep`: the training run's comparison.json must pass the stats keep rule (`keep: true`:
  P(candidate better) >= threshold and delta > 0) against the pinned baseline; only then
  is the holdout run's comparison read, and it must pass too. A kept candidate pins
  `<state>/reports/baseline.json` = {run_id, dataset_version, harness_version} of the
  training run. Without --holdout a training win is `needs_holdout`.
Every decision is one line of `<state>/candidates/log.jsonl`.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.ids import is_safe_case_id
from ..core.jsonio import atomic_write_json
from ..report.rundir import load_results, read_json_file
from . import gitops

KEPT, REJECTED, NEEDS_HOLDOUT = "kept", "rejected", "needs_holdout"
COMPARISON_KEYS = ("keep", "verdict_phrase", "delta", "n", "p_candidate_better", "threshold",
                   "fixed_by_candidate", "broken_by_candidate", "gate_note", "sub_mde_keep",
                   "case_attrition_warning", "baseline_run_id")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _state(state_dir: str | os.PathLike[str]) -> Path:
    state = Path(state_dir)
    if not state.is_dir():
        raise AssayError(f"{state_dir}: state dir not found (pass the app's .assay/ directory)", 2)
    return state


def _cand_dir(state: Path, cid: str) -> Path:
    if not is_safe_case_id(cid):
        raise AssayError(f"--id {cid!r}: use 1-128 characters of [A-Za-z0-9._-]", 2)
    return state / "candidates" / cid


def append_log(state: Path, row: dict[str, Any]) -> None:
    path = state / "candidates" / "log.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def load(state: Path, cid: str) -> dict[str, Any]:
    path = _cand_dir(state, cid) / "candidate.json"
    if not path.is_file():
        raise AssayError(f"candidate {cid!r}: {path} not found; start one with `candidate.py new`", 2)
    return read_json_file(path)


def new(state_dir: str | os.PathLike[str], *, surfaces: list[str], app: str | None, cid: str | None,
        cluster: str | None, reflection: str | None) -> dict[str, Any]:
    state = _state(state_dir)
    app_dir = Path(app) if app else state.resolve().parent
    gitops.check_repo(app_dir)
    if not surfaces:
        raise AssayError("--surface is required: name each file the candidate will edit (relative to --app)", 2)
    cid = cid or "cand-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cdir = _cand_dir(state, cid)
    if cdir.exists():
        raise AssayError(f"candidate {cid!r} already exists ({cdir}); pick another --id", 2)
    recorded = []
    for rel in surfaces:
        if not (app_dir / rel).is_file():
            raise AssayError(f"surface {rel}: no such file under {app_dir}", 2, surface=rel)
        status = gitops.dirty(app_dir, rel)
        if status:
            raise AssayError(f"surface {rel} has uncommitted changes ({status}); commit or stash them first: a "
                             "candidate starts from a clean file so that its revert is exact", 2, surface=rel)
        recorded.append({"path": rel, "blob": gitops.head_blob(app_dir, rel)})
    doc = {"id": cid, "created_at": _now(), "app": str(app_dir.resolve()), "surfaces": recorded,
           "cluster": cluster, "reflection": reflection, "status": "open"}
    cdir.mkdir(parents=True)
    atomic_write_json(cdir / "candidate.json", doc)
    append_log(state, {"ts": doc["created_at"], "id": cid, "action": "new", "surfaces": recorded,
                       "cluster": cluster})
    return {**doc, "file": str(cdir / "candidate.json"),
            "next": "edit the surfaces, then measure on training (a regression run with --baseline-verdicts)"}


def revert(state_dir: str | os.PathLike[str], cid: str) -> dict[str, Any]:
    state = _state(state_dir)
    doc = load(state, cid)
    if doc.get("status") == KEPT:
        raise AssayError(f"candidate {cid} was kept and pinned as the baseline; revert it by hand and pin a "
                         "new baseline, never through this command", 2)
    app_dir = Path(doc["app"])
    results = []
    for s in doc["surfaces"]:
        gitops.checkout(app_dir, s["path"])
        now = gitops.worktree_blob(app_dir, s["path"])
        results.append({"path": s["path"], "blob": s["blob"], "after_revert": now, "verified": now == s["blob"]})
    ok = all(r["verified"] for r in results)
    doc["status"] = "reverted" if ok else "revert_failed"
    atomic_write_json(_cand_dir(state, cid) / "candidate.json", doc)
    append_log(state, {"ts": _now(), "id": cid, "action": "revert", "verified": ok, "surfaces": results})
    if not ok:
        bad = ", ".join(r["path"] for r in results if not r["verified"])
        raise AssayError(f"revert of {cid}: {bad} does not match the recorded blob after `git checkout` (HEAD "
                         "moved since `new`?); restore it by hand from the blob in candidate.json", 1,
                         surfaces=results)
    return {"id": cid, "status": "reverted", "surfaces": results}


def _run(run_dir: str, role: str) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    path = Path(run_dir)
    results = load_results(path)
    if results["summary"].get("status") != "ok":
        raise AssayError(f"--{role} {run_dir}: run status is {results['summary'].get('status')!r}, not ok; an "
                         "aborted or incomplete run is not evidence (re-run it)", 2)
    manifest = read_json_file(path / "manifest.yaml")
    comp_path = path / "comparison.json"
    if not comp_path.is_file():
        raise AssayError(f"--{role} {run_dir}: no comparison.json; run it with --baseline-verdicts pointing at "
                         "the champion's verdicts_for_stats.jsonl", 2)
    comparison = read_json_file(comp_path)
    if not isinstance(comparison, dict) or "keep" not in comparison:
        detail = comparison.get("error") if isinstance(comparison, dict) else None
        raise AssayError(f"--{role} {run_dir}: comparison.json has no keep decision ({detail or 'not a comparison'})", 2)
    is_holdout = manifest.get("selecting_split") == "holdout"
    if (role == "holdout") != is_holdout:
        want = "a holdout run (--mode holdout)" if role == "holdout" else "a training run (regression or targeted)"
        raise AssayError(f"--{role} {run_dir}: is a {manifest.get('mode')} run; pass {want}", 2)
    return path, manifest, comparison


def _summary(comparison: dict[str, Any]) -> dict[str, Any]:
    return {k: comparison[k] for k in COMPARISON_KEYS if k in comparison}


def keep(state_dir: str | os.PathLike[str], cid: str, *, training: str, holdout: str | None) -> tuple[str, dict]:
    state = _state(state_dir)
    doc = load(state, cid)
    if doc.get("status") != "open":
        raise AssayError(f"candidate {cid} is {doc.get('status')}; only an open candidate can be kept", 2)
    app_dir = Path(doc["app"])
    edited = []
    for s in doc["surfaces"]:
        now = gitops.worktree_blob(app_dir, s["path"])
        edited.append({"path": s["path"], "before": s["blob"], "after": now})
    if all(e["before"] == e["after"] for e in edited):
        raise AssayError(f"candidate {cid}: no surface differs from its recorded blob; the edit is not in the "
                         "working tree, so these runs did not measure it", 2)
    train_dir, train_manifest, train_cmp = _run(training, "training")
    pin_path = state / "reports" / "baseline.json"
    pinned = read_json_file(pin_path) if pin_path.is_file() else None
    if pinned and train_cmp.get("baseline_run_id") not in (None, pinned.get("run_id")):
        raise AssayError(f"--training {training}: compared against {train_cmp.get('baseline_run_id')}, but the "
                         f"pinned baseline is {pinned.get('run_id')} (reports/baseline.json); re-run with "
                         "--baseline-verdicts reports/<pinned>/verdicts_for_stats.jsonl", 2)
    out: dict[str, Any] = {"id": cid, "training": {"run_id": train_manifest.get("run_id"), **_summary(train_cmp)},
                           "surfaces": edited}
    if not train_cmp["keep"]:
        decision = REJECTED
        out["reason"] = f"training comparison does not pass the keep rule: {train_cmp.get('verdict_phrase')}"
        out["next"] = f"candidate.py revert --id {cid} (the holdout was not looked at)"
    elif holdout is None:
        decision = NEEDS_HOLDOUT
        out["reason"] = "training passed the keep rule; the holdout decides"
        out["next"] = ("spend one holdout look (a --mode holdout run with --baseline-verdicts from the "
                       f"champion's holdout run), then candidate.py keep --id {cid} --training ... --holdout ...")
    else:
        hold_dir, hold_manifest, hold_cmp = _run(holdout, "holdout")
        out["holdout"] = {"run_id": hold_manifest.get("run_id"), **_summary(hold_cmp)}
        if not hold_cmp["keep"]:
            decision = REJECTED
            out["reason"] = f"won on training but the holdout does not pass the keep rule: {hold_cmp.get('verdict_phrase')}"
            out["next"] = f"candidate.py revert --id {cid}; keep its reflection for the pool"
        else:
            decision = KEPT
            pin = {"run_id": train_manifest["run_id"], "dataset_version": train_manifest["dataset_version"],
                   "harness_version": train_manifest["harness_version"]}
            pin_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(pin_path, pin)
            out["baseline_pinned"] = {"file": str(pin_path), **pin}
            out["reason"] = "training and then holdout passed the keep rule"
            out["next"] = "show the diff to the user; nothing is committed by assay"
            doc["status"] = KEPT
    if decision == REJECTED:
        doc["status"] = "rejected"
    doc.setdefault("decisions", []).append({"ts": _now(), "decision": decision})
    atomic_write_json(_cand_dir(state, cid) / "candidate.json", doc)
    append_log(state, {"ts": _now(), "id": cid, "action": "keep", "decision": decision,
                       "training": out["training"], "holdout": out.get("holdout"), "surfaces": edited,
                       "baseline_pinned": out.get("baseline_pinned")})
    out["decision"] = decision
    return decision, out
