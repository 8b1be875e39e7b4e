"""One optimize candidate: recorded before the edit, reverted with a verified blob, or kept
on evidence (wave2 §6, the optimize loop).

- `new`: every surface (a file path relative to the app) must be tracked and clean; its
  HEAD blob is recorded in `<state>/candidates/<id>/candidate.json` before any edit.
- `revert`: verify first, touch nothing on any refusal (every surface a plain file tracked at
  HEAD with exactly the recorded blob, nothing staged, no symlink on its path, git run with no
  `GIT_*` variable and literal pathspecs); then write the recorded blob's bytes over each
  surface (never a pathspec checkout), keep what it replaced in git's object store, and
  `git hash-object` must equal the recorded blob.
- `keep`: the training run's comparison.json must pass the stats keep rule (`keep: true`:
  P(candidate better) >= threshold and delta > 0) against the pinned baseline; only then
  is the holdout run's comparison read, and it must pass too. Each run's own gate (assay.verdict, the
  decision gate.py prints) must close for no reason its champion's run does not close for too (a
  budget, a canary, the infra bar: kept, the release gate would close on it), else rejected naming
  gate.py's first such reason; a reason both close for is said (`gate_closed_note`). A kept candidate pins
  `<state>/reports/baseline.json` = {run_id, dataset_version, harness_version} of the
  training run. Without --holdout a training win is `needs_holdout`.
Every decision is one line of `<state>/candidates/log.jsonl`.
"""

from __future__ import annotations

import datetime as _dt
import os
import stat
from pathlib import Path
from typing import Any

from ..core import writer
from ..core.errors import AssayError
from ..core.jsonio import atomic_write_json
from ..report.rundir import load_results, read_json_file
from . import evidence, gitops, own_gate, record

KEPT, REJECTED, NEEDS_HOLDOUT = "kept", "rejected", "needs_holdout"
COMPARISON_KEYS = ("keep", "verdict_label", "proven", "verdict_phrase", "delta", "n", "p_candidate_better", "threshold",
                   "fixed_by_candidate", "broken_by_candidate", "gate_note", "sub_mde_keep",
                   "case_attrition_warning", "baseline_run_id")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _state(state_dir: str | os.PathLike[str]) -> Path:
    state = Path(state_dir)
    if not state.is_dir():
        raise AssayError(f"{state_dir}: state dir not found (pass the app's .assay/ directory)", 2)
    return state


def new(state_dir: str | os.PathLike[str], *, surfaces: list[str], app: str | None, cid: str | None,
        cluster: str | None, reflection: str | None) -> dict[str, Any]:
    state = _state(state_dir)
    app_dir = Path(app) if app else state.resolve().parent
    gitops.check_repo(app_dir)
    if not surfaces:
        raise AssayError("--surface is required: name each file the candidate will edit (relative to --app)", 2)
    cid = cid or "cand-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    cdir = record.cand_dir(state, cid)
    if cdir.exists() or cdir.is_symlink():
        raise AssayError(f"candidate {cid!r} already exists ({cdir}); pick another --id", 2)
    recorded = []
    for rel in surfaces:
        why = gitops.surface_problem(rel)
        if why:
            raise AssayError(f"--surface {rel!r} {why}", 2, surface=rel)
        if any(s["path"] == rel for s in recorded):
            raise AssayError(f"--surface {rel} is given twice", 2, surface=rel)
        _plain_file(app_dir, rel)
        if not (app_dir / rel).is_file():
            raise AssayError(f"surface {rel}: no such file under {app_dir}", 2, surface=rel)
        status = gitops.dirty(app_dir, rel)
        if status:
            raise AssayError(f"surface {rel} has uncommitted changes ({status}); commit or stash them first: a "
                             "candidate starts from a clean file so that its revert is exact", 2, surface=rel)
        held = record.holders(state, str(app_dir.resolve()), rel)
        if held:
            named = ", ".join(f"{h} ({st})" for h, st in held)
            raise AssayError(f"surface {rel} is already a surface of candidate {named}, neither kept nor reverted: "
                             "its revert would write its recorded text over this candidate's edit, and a keep "
                             "of either would credit it with the other's. One candidate per surface: finish it "
                             f"first (candidate.py revert --id {held[0][0]}, or keep it), then start this one",
                             2, surface=rel, candidates=[h for h, _ in held])
        recorded.append({"path": rel, "blob": gitops.head_blob(app_dir, rel)})
    doc = {"id": cid, "created_at": _now(), "app": str(app_dir.resolve()), "surfaces": recorded,
           "cluster": cluster, "reflection": reflection, "status": "open"}
    cdir = record.make_dir(state, cid)
    record.save(state, cid, doc)
    record.append_log(state, {"ts": doc["created_at"], "id": cid, "action": "new", "surfaces": recorded,
                              "cluster": cluster})
    return {**doc, "file": str(cdir / "candidate.json"),
            "next": "edit the surfaces, then measure on training (a regression run with --baseline-verdicts)"}


def _plain_file(app_dir: Path, rel: str) -> None:
    """The surface is not a symlink, and no directory between it and the app is one."""
    target = app_dir / rel
    try:
        writer.refuse_symlinks_between(target, app_dir, "a candidate surface")
    except AssayError:
        raise AssayError(f"surface {rel}: {target} is or sits under a symbolic link; a surface is one regular "
                         "file inside the app (a revert never writes through a link)", 2, surface=rel) from None
    if target.exists() and not stat.S_ISREG(target.lstat().st_mode):
        raise AssayError(f"surface {rel}: {target} is not a regular file", 2, surface=rel)


def _check_revertible(app_dir: Path, s: dict[str, Any], cid: str) -> None:
    """Every refusal happens here, before any file is touched: the surface is a plain file tracked
    at HEAD with exactly the recorded blob, nothing of it is staged, and no link is in its way."""
    rel, blob = s["path"], s["blob"]
    _plain_file(app_dir, rel)
    entry = gitops.head_entry(app_dir, rel)
    if entry is None:
        raise AssayError(f"revert of {cid}: surface {rel} is not tracked at HEAD in {app_dir} any more; nothing "
                         "was touched", 1, surface=rel)
    mode, kind, head = entry
    if kind != "blob" or mode not in gitops.PLAIN_FILE_MODES:
        raise AssayError(f"revert of {cid}: surface {rel} is tracked as mode {mode} ({kind}), not a plain file; "
                         "nothing was touched", 1, surface=rel)
    if head != blob:
        raise AssayError(f"revert of {cid}: surface {rel} at HEAD is blob {head}, not the recorded {blob} (it was "
                         "committed or changed at HEAD since `new`), so reverting would discard work that is not "
                         f"the candidate's; nothing was touched. To restore the recorded text by hand: "
                         f"git cat-file -p {blob} > {rel}", 1, surface=rel, head_blob=head)
    staged = gitops.index_blob(app_dir, rel)
    if staged != blob:
        raise AssayError(f"revert of {cid}: surface {rel} has staged changes (index blob {staged}); nothing was "
                         f"touched. Unstage them (git restore --staged -- {rel}) or commit them first", 1,
                         surface=rel)


def _restore(app_dir: Path, rel: str, blob: str) -> str | None:
    """Write the recorded blob's bytes over the surface (temp file + rename, the file's mode kept);
    returns the blob id of what was replaced, stored in git's object store (None: nothing replaced)."""
    target = app_dir / rel
    replaced = None
    mode = 0o644
    if target.exists():
        if gitops.worktree_blob(app_dir, rel) == blob:
            return None
        replaced = gitops.store_worktree(app_dir, rel)
        mode = stat.S_IMODE(target.lstat().st_mode)
    data = gitops.blob_bytes(app_dir, blob, rel)
    target.parent.mkdir(parents=True, exist_ok=True)   # the candidate deleted it (no link on the way: checked)
    tmp = target.parent / f".{target.name}.assay-revert-{os.getpid()}.tmp"
    fd = writer.open_file(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return replaced


def revert(state_dir: str | os.PathLike[str], cid: str) -> dict[str, Any]:
    state = _state(state_dir)
    doc = record.load(state, cid)
    if doc.get("status") == KEPT:
        raise AssayError(f"candidate {cid} was kept and pinned as the baseline; revert it by hand and pin a "
                         "new baseline, never through this command", 2)
    app_dir = Path(doc["app"])
    gitops.check_repo(app_dir)
    for s in doc["surfaces"]:          # verify every surface before touching any
        _check_revertible(app_dir, s, cid)
    results = []
    for s in doc["surfaces"]:
        replaced = _restore(app_dir, s["path"], s["blob"])
        now = gitops.worktree_blob(app_dir, s["path"])
        results.append({"path": s["path"], "blob": s["blob"], "replaced_blob": replaced, "after_revert": now,
                        "verified": now == s["blob"]})
    ok = all(r["verified"] for r in results)
    doc["status"] = "reverted" if ok else "revert_failed"
    record.save(state, cid, doc)
    record.append_log(state, {"ts": _now(), "id": cid, "action": "revert", "verified": ok, "surfaces": results})
    if not ok:
        bad = ", ".join(r["path"] for r in results if not r["verified"])
        raise AssayError(f"revert of {cid}: {bad} does not hash to the recorded blob after writing it (a git "
                         "clean filter or line-ending setting rewrites it?); what was replaced is kept as "
                         "replaced_blob (git cat-file -p <blob>)", 1, surfaces=results)
    return {"id": cid, "status": "reverted", "surfaces": results}


def _run(run_dir: str, role: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    path = Path(run_dir)
    results = load_results(path)
    if results["summary"].get("status") != "ok":
        raise AssayError(f"--{role} {run_dir}: run status is {results['summary'].get('status')!r}, not ok; an "
                         "aborted or incomplete run is not evidence (finish it: wait_run.py prints the run_cases.py --resume command; "
                         "or re-run it)", 2)
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
    return results, manifest, comparison


def _evidence(state: Path, doc: dict[str, Any], run_dir: str, role: str,
              run: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
    """The run measured this candidate's edit, against an unchanged suite (optimize/evidence.py); what
    shows the app served the edit (`served`)."""
    results, manifest, comparison = run
    started = results.get("started_at") or manifest.get("started_at")
    evidence.check_run(state, doc, role, run_dir, manifest.get("run_id"), started, comparison.get("baseline_run_id"))
    evidence.check_edit_unchanged(doc, role, run_dir, started)
    base_dir = evidence.baseline_dir(state, role, run_dir, manifest, comparison.get("baseline_run_id"))
    base_manifest = read_json_file(base_dir / "manifest.yaml")
    evidence.check_baseline_not_a_trial(state, role, run_dir, doc["id"], base_manifest)
    evidence.check_measured(role, run_dir, doc["id"], manifest, results, comparison, base_manifest)
    evidence.check_cases_unchanged(state, role, run_dir, manifest, comparison.get("baseline_run_id"))
    evidence.check_recorded(role, run_dir, base_dir, comparison, doc["id"])
    evidence.check_baseline_scored_fails(role, run_dir, base_dir, doc["id"])
    return evidence.check_served(role, run_dir, doc["id"], manifest, base_manifest)


def _gate(block: dict[str, Any], run_dir: str, base_dir: Path) -> dict[str, Any]:
    """The run's own gate beside its champion's run's (assay.verdict's decisions), kept in its output block."""
    block["gate"] = own_gate.gate_check(run_dir, base_dir)
    return block["gate"]


def _summary(comparison: dict[str, Any]) -> dict[str, Any]:
    return {k: comparison[k] for k in COMPARISON_KEYS if k in comparison}


def keep(state_dir: str | os.PathLike[str], cid: str, *, training: str, holdout: str | None) -> tuple[str, dict]:
    state = _state(state_dir)
    doc = record.load(state, cid)
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
    others = gitops.changed_outside(app_dir, [s["path"] for s in doc["surfaces"]], state)
    made = evidence.parse_ts(doc.get("created_at"))
    # an untracked file made or changed since `new` (a new prompt file the app reads): measured too, and
    # neither recorded as a surface nor ever removed by a revert. created_at has whole seconds: a file
    # written within the second `new` was stamped in counts as before it (as a holdout look does)
    fresh = gitops.untracked_since(app_dir, state, made.timestamp() + 1) if made is not None else []
    others += fresh
    if others:   # the runs measured these too: kept, they would be credited to this candidate
        named = [f"{p} (untracked, new since `new`)" if p in fresh else p for p in others]
        shown = ", ".join(named[:10]) + (f" and {len(named) - 10} more" if len(named) > 10 else "")
        raise AssayError(f"candidate {cid}: file(s) outside its surfaces differ from HEAD ({shown}); the runs "
                         "measured them too, so a keep would credit this candidate with them (another candidate's "
                         "edit, a stray change, a new file the app reads): undo them (delete a new file, or add it to "
                         ".gitignore when it is the app's own output; or make them a candidate of their own), then "
                         "measure this candidate again", 2, outside=others)
    train_run = train_results, train_manifest, train_cmp = _run(training, "training")
    pin_path = state / "reports" / "baseline.json"
    pinned = read_json_file(pin_path) if pin_path.is_file() else None
    if pinned and train_cmp.get("baseline_run_id") not in (None, pinned.get("run_id")):
        raise AssayError(f"--training {training}: compared against {train_cmp.get('baseline_run_id')}, but the "
                         f"pinned baseline is {pinned.get('run_id')} (reports/baseline.json); re-run with "
                         "--baseline-verdicts reports/<pinned>/verdicts_for_stats.jsonl", 2)
    train_served = _evidence(state, doc, training, "training", train_run)
    out: dict[str, Any] = {"id": cid, "training": {"run_id": train_manifest.get("run_id"), **_summary(train_cmp),
                                                   "served": train_served},
                           "surfaces": edited}
    train_base = evidence.baseline_dir(state, "training", training, train_manifest, train_cmp.get("baseline_run_id"))
    train_broke = evidence.broken_gating(training, train_base)
    if not train_cmp["keep"]:
        decision = REJECTED
        out["reason"] = f"training comparison does not pass the keep rule: {train_cmp.get('verdict_phrase')}"
        out["next"] = f"candidate.py revert --id {cid} (the holdout was not looked at)"
    elif train_broke:
        decision = REJECTED
        out["reason"] = (f"training breaks {len(train_broke)} gating case(s) the champion passed ("
                         + ", ".join(train_broke[:10]) + (" and more" if len(train_broke) > 10 else "")
                         + f"): kept, the release gate would close on them ({train_cmp.get('verdict_label')} "
                           "over the suite as a whole)")
        out["next"] = f"candidate.py revert --id {cid} (the holdout was not looked at); fix what it broke in a new candidate"
    elif _gate(out["training"], training, train_base)["new_reasons"]:
        decision = REJECTED
        out["reason"] = own_gate.closed_words("training", out["training"]["gate"])
        out["next"] = (f"candidate.py revert --id {cid} (the holdout was not looked at); gate.py {training} names "
                       "every reason and its fix: a new candidate without what closed it (when the reason is not the "
                       "edit's, e.g. an outage during the run, fix that first, then measure the edit again as a new "
                       "candidate)")
    elif holdout is None:
        decision = NEEDS_HOLDOUT
        out["reason"] = f"training passed the keep rule ({train_cmp.get('verdict_label')}); the holdout decides"
        out["next"] = ("spend one holdout look (a --mode holdout run with --baseline-verdicts from the "
                       f"champion's holdout run), then candidate.py keep --id {cid} --training ... --holdout ...")
    else:
        hold_run = hold_results, hold_manifest, hold_cmp = _run(holdout, "holdout")
        hold_served = _evidence(state, doc, holdout, "holdout", hold_run)
        if pinned:
            evidence.check_champion_holdout(state, pinned.get("run_id"), holdout, cid, hold_cmp.get("baseline_run_id"))
        evidence.check_holdout_order(state, doc, train_results, holdout, hold_manifest.get("run_id"),
                                     hold_results.get("started_at") or hold_manifest.get("started_at"))
        out["holdout"] = {"run_id": hold_manifest.get("run_id"), **_summary(hold_cmp), "served": hold_served}
        hold_base = evidence.baseline_dir(state, "holdout", holdout, hold_manifest, hold_cmp.get("baseline_run_id"))
        hold_broke = evidence.broken_gating(holdout, hold_base)
        if not hold_cmp["keep"]:
            decision = REJECTED
            out["reason"] = f"won on training but the holdout does not pass the keep rule: {hold_cmp.get('verdict_phrase')}"
            out["next"] = f"candidate.py revert --id {cid}; keep its reflection for the pool"
        elif hold_broke:   # counted, never named: the holdout's ids stay sealed
            decision = REJECTED
            out["reason"] = (f"won on training but breaks {len(hold_broke)} gating holdout case(s) the champion "
                             "passed: kept, the release gate would close on them")
            out["next"] = f"candidate.py revert --id {cid}; keep its reflection for the pool"
        elif _gate(out["holdout"], holdout, hold_base)["new_reasons"]:   # gate.py's words: holdout ids sealed
            decision = REJECTED
            out["reason"] = "won on training but " + own_gate.closed_words("holdout", out["holdout"]["gate"])
            out["next"] = f"candidate.py revert --id {cid}; keep its reflection for the pool"
        else:
            decision = KEPT
            pin = {"run_id": train_manifest["run_id"], "dataset_version": train_manifest["dataset_version"],
                   "harness_version": train_manifest["harness_version"]}
            pin_path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_json(pin_path, pin)
            out["baseline_pinned"] = {"file": str(pin_path), **pin}
            out["reason"] = (f"training ({train_cmp.get('verdict_label')}) and then holdout "
                             f"({hold_cmp.get('verdict_label')}) passed the keep rule")
            out["next"] = "show the diff to the user; nothing is committed by assay"
            doc["status"] = KEPT
    unknown = [b["served"]["why"] for b in (out["training"], out.get("holdout")) if b and not b["served"]["known"]]
    if unknown:   # a decision on runs that may not have seen the edit (a win or a loss): said
        out["served_note"] = unknown[0]
    shared = [(role, b["gate"]) for role in ("training", "holdout") if (b := out.get(role)) and "gate" in b
              and b["gate"]["shared_reasons"] and not b["gate"]["new_reasons"]]
    if shared:   # the champion's run closed on these too: the keep rule decided, the gate stays closed
        out["gate_closed_note"] = own_gate.stays_closed_note(*shared[0])
    if decision == REJECTED:
        doc["status"] = "rejected"
    doc.setdefault("decisions", []).append({"ts": _now(), "decision": decision})
    record.save(state, cid, doc)
    record.append_log(state, {"ts": _now(), "id": cid, "action": "keep", "decision": decision,
                       "training": out["training"], "holdout": out.get("holdout"), "surfaces": edited,
                       "baseline_pinned": out.get("baseline_pinned")})
    out["decision"] = decision
    return decision, out
