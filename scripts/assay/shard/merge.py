"""The fail-closed merge of shard run directories into one run (wave 2 §4).

`merge_runs(plan_path, out, shard_dirs, baseline)`:

1. **Same plan** (exit 2): every shard dir is a run directory whose manifest names the
   plan's canonical SHA-256 and a shard of it; the shards ran with the same settings.
2. **Every shard, every case, exactly once** (exit 6, all problems at once): no shard
   missing or given twice; each shard passes the `--verify` check (complete, or aborted
   with everything it finished intact); every non-canary case is in its own shard only;
   every planned case is there unless the shard that owned it aborted; the shards were
   written by one attempt (`shard.attempt`, ASSAY_SHARD_ATTEMPT) when any records one, and, given
   `attempt` (--attempt: the shards Job's uid), every shard by that one (`other_attempts`).
   Shards that record an attempt, merged without being told which, are exit 2 (a Job re-applied
   with the same plan whose pods all stopped before they knew their shard left an earlier Job's).
3. **Build beside, rename into place**: `.<run_id>.merge-<pid>.tmp` next to `--out` gets
   the case dirs (whole trees, copied byte for byte, whatever files they hold), the
   manifest (the shards' own, with the plan's case list), and every derived file written
   by the runner's own code (`DerivedFiles`, `write_run_reports`, `check_run_dir`,
   `exit_code_for`). A merged dir that fails the completeness check is removed (exit 6).
4. **Status**: a shard that aborted makes the merged status that abort (canary before
   infra). Canary case records come from the first shard whose canary failed, else shard 1.
5. The holdout ledger: the plan's look must already be on this state dir's ledger (a shard ran
   against it, or the store's looks were folded in): shards run on other machines without
   --publish recorded it only in their own ledgers, so the merge refuses (exit 2, nothing written;
   `require_look_on_ledger`). The one line for the run id (`append_ledger`, never a second) is on
   disk before the build starts.

Everything written is a function of the inputs only (timestamps come from the shards),
so re-running the merge gives the same bytes. A previous merge at `--out` is replaced;
anything else there is refused (exit 2).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import casestore, writer
from ..core.errors import AssayError
from ..core.jsonio import atomic_write_json, atomic_write_text, read_json
from ..core.vocab import FAIL
from ..core.vocab import is_holdout
from ..plan.shards import is_canary, merge_attempt, shard_cases
from ..rundir import derived
from ..traces.collect import LATE_SPANS_FIX
from ..run import holdout_ledger
from ..run import preflight
from ..run import run_paths
from ..rundir.completeness import ABORTED, check_run_dir
from ..run.engine import EXIT_MESSAGES, exit_code_for
from ..run.lock import RunLock
from .attempts import (attempts_of, mixed_attempts_message, other_attempts, other_attempts_message,
                       refuse_untold)
from .manifest import merged_manifest

PROBLEMS_SHOWN = 5


@dataclass
class ShardRun:
    path: Path
    index: int
    manifest: dict
    results: dict
    status: str | None
    present: set[str] = field(default_factory=set)     # case dirs it holds
    problems: list[str] = field(default_factory=list)  # its --verify problems
    records: dict[str, dict] = field(default_factory=dict)


def _read_shard(path: Path, plan_sha: str, count: int) -> ShardRun:
    if not path.is_dir():   # a typo'd path or an empty glob: said as that, not as a broken run dir
        raise AssayError(f"{path}: {'not a directory' if path.exists() else 'no such directory'}; pass the "
                         "directories run_cases.py --shard I wrote "
                         "(<reports>/<run_id>.shard-<I>)", 2, shard_dir=str(path))
    try:
        manifest = read_json(path / "manifest.yaml")
    except (OSError, ValueError):
        raise AssayError(f"{path}: not a shard run directory (no readable manifest.yaml); pass the directories "
                         "run_cases.py --shard I wrote", 2, shard_dir=str(path)) from None
    if not isinstance(manifest, dict) or manifest.get("plan_sha256") != plan_sha:
        theirs = manifest.get("plan_sha256") if isinstance(manifest, dict) else None
        raise AssayError(f"{path}: this shard was run from another plan (its manifest's plan_sha256 "
                         f"{str(theirs)[:16] if theirs else '(none)'}... differs from --plan's {plan_sha[:16]}...: "
                         "the plan was made again since, or the shard is another plan's); merge only the shards "
                         "of one plan.json, or re-run the shard from it", 2,
                         shard_dir=str(path), key="plan_sha256", shard_plan_sha256=theirs, plan_sha256=plan_sha)
    shard = manifest.get("shard")
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int) or shard.get("count") != count:
        raise AssayError(f"{path}: not a shard of this plan (its manifest has no shard {{index, count: {count}}}); "
                         "an unsharded run of the plan needs no merge", 2, shard_dir=str(path), key="shard")
    try:
        results = read_json(path / "results.json")
    except (OSError, ValueError):
        results = {}
    status = ((results or {}).get("summary") or {}).get("status") if isinstance(results, dict) else None
    present = set(casestore.open_store(path).ids())
    return ShardRun(path, shard["index"], manifest, results if isinstance(results, dict) else {}, status, present)


def _check_out(plan: dict, out_arg: str) -> Path:
    """--out: the runner's own --out rules (name = run_id, under <state>/reports/, no link); it may
    hold a previous merge of this plan (replaced), nothing else."""
    previous = _is_previous_merge(Path(os.path.abspath(out_arg)), plan)
    try:
        return run_paths.check_out(plan, out_arg, resume=previous)
    except AssayError as exc:
        if exc.fields.get("key") == "--out" and "already exists" in exc.message:
            raise AssayError(f"--out {out_arg} already exists and is not a merge of this plan; use a new run id "
                             "(make_plan.py --run-id) or move that directory away", 2, key="--out") from None
        raise


def _is_previous_merge(out: Path, plan: dict) -> bool:
    try:
        manifest = read_json(out / "manifest.yaml")
        lines = (out / "run.log").read_text(encoding="utf-8").splitlines()
        last = json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return False
    return (isinstance(manifest, dict) and manifest.get("plan_sha256") == plan.sha256
            and isinstance(last, dict) and last.get("event") == "finalize" and "merged_from" in last)


def _namer(plan: dict):
    holdout: dict[str, int] = {}
    for c in plan["cases"]:
        if is_holdout(c):
            holdout[c["id"]] = len(holdout) + 1
    return lambda cid: f"<holdout #{holdout[cid]}>" if cid in holdout else cid


def _shown(items: list[str]) -> str:
    return ", ".join(items[:PROBLEMS_SHOWN]) + (f" (+{len(items) - PROBLEMS_SHOWN} more)"
                                                if len(items) > PROBLEMS_SHOWN else "")


def reconcile(plan: dict, shards: list[ShardRun], attempt: str | None = None) -> dict[str, Any]:
    """Every shard once, every case once, every shard complete, every shard by one attempt (by
    `attempt`, when the merge is told which): the problems by kind (empty = ok)."""
    count = plan["shards"]["count"]
    assignment = plan["shards"]["assignment"]
    name = _namer(plan)
    by_index: dict[int, list[ShardRun]] = {}
    for s in shards:
        by_index.setdefault(s.index, []).append(s)
    out: dict[str, Any] = {
        "missing_shards": [i for i in range(1, count + 1) if i not in by_index],
        "duplicated_shards": sorted(i for i, runs in by_index.items() if len(runs) > 1),
        "duplicated_shard_dirs": {str(i): [str(r.path) for r in runs] for i, runs in sorted(by_index.items())
                                  if len(runs) > 1},
        "unknown_shards": sorted(i for i in by_index if not 1 <= i <= count),
    }
    where: dict[str, list[int]] = {}
    for s in shards:
        for cid in s.present:
            where.setdefault(cid, []).append(s.index)
    duplicated, misplaced = [], []
    for c in plan["cases"]:
        cid = c["id"]
        if is_canary(c):
            continue
        found = sorted(set(where.get(cid, [])))   # one shard given twice is named as that, not per case
        if len(found) > 1:
            duplicated.append(f"{name(cid)} in shards {', '.join(map(str, found))}")
        elif found and found[0] != assignment[cid]:
            misplaced.append(f"{name(cid)} in shard {found[0]}, assigned to shard {assignment[cid]}")
    out["duplicated_cases"] = duplicated
    out["misplaced_cases"] = misplaced
    incomplete = {}
    for s in shards:
        if s.problems:
            hint = ""
            if s.status in ("running", None):
                hint = (f" (status {s.status}: the shard did not finish; resume it with run_cases.py --plan "
                        f"<plan> --shard {s.index} --out {s.path.name} --resume)")
            incomplete[str(s.index)] = [f"{s.path.name}{hint}"] + s.problems[:PROBLEMS_SHOWN]
    out["incomplete_shards"] = incomplete
    if attempt is None:
        out["mixed_attempts"] = attempts_of(shards)
    else:   # the Job this merge is for: a shard any other attempt wrote is not this run's
        out["other_attempts"] = other_attempts(shards, attempt)
    return {k: v for k, v in out.items() if v}


def _problem_message(problems: dict[str, Any], attempt: str | None = None, given: list[int] = ()) -> str:
    parts = []
    if "missing_shards" in problems:
        missing = ', '.join(map(str, problems['missing_shards']))
        parts.append(f"missing shard(s) {missing} (its run dir was not given: a missing shard is a failure, not "
                     f"an absence; pass its <run_id>.shard-<I> dir, or run it first with run_cases.py --plan <plan> "
                     "--shard <I>)")
    for index, dirs in (problems.get("duplicated_shard_dirs") or {}).items():
        parts.append(f"shard {index} given twice ({', '.join(dirs)}): pass one run dir per shard")
    if "unknown_shards" in problems:
        parts.append(f"shard(s) {', '.join(map(str, problems['unknown_shards']))} are not shards of this plan")
    if "duplicated_cases" in problems:
        parts.append(f"case(s) in two shards: {_shown(problems['duplicated_cases'])}")
    if "misplaced_cases" in problems:
        parts.append(f"case(s) in the wrong shard: {_shown(problems['misplaced_cases'])}")
    for index, lines in (problems.get("incomplete_shards") or {}).items():
        parts.append(f"shard {index} is not complete: {lines[0]}: {'; '.join(lines[1:])}")
    if "mixed_attempts" in problems:
        parts.append(mixed_attempts_message(problems["mixed_attempts"]))
    if "other_attempts" in problems:
        parts.append(other_attempts_message(problems["other_attempts"], attempt, given))
    return "merge refused: " + "; ".join(parts)


def _source_shard(plan: dict, shards: dict[int, ShardRun]) -> dict[str, ShardRun]:
    """Which shard's case dir the merged run takes, per case it holds."""
    assignment = plan["shards"]["assignment"]
    chosen: dict[str, ShardRun] = {}
    for c in plan["cases"]:
        cid = c["id"]
        if is_canary(c):
            holders = [shards[i] for i in sorted(shards) if cid in shards[i].records]
            failed = [s for s in holders if s.records[cid].get("verdict") == FAIL]
            if holders:
                chosen[cid] = (failed or holders)[0]
        elif cid in shards[assignment[cid]].records:
            chosen[cid] = shards[assignment[cid]]
    return chosen


def _record_line(store: casestore.CaseStore, case_id: str) -> bytes:
    """The case's journal line as the shard committed it (bytes copied, never re-serialized); an
    older shard's case dir becomes one line of the merged journal."""
    if store.layout == "journal":
        line = store.line(case_id)
        if line is None:
            raise AssayError(f"{store.run_dir}: case {case_id} vanished from cases.jsonl during the merge", 6)
        return line
    rec = store.load(case_id)
    files = {name: rec.read(name) or b"" for name in sorted(rec.names()) if name != casestore.VERDICT}
    return casestore.record_line(case_id, rec.verdict, files)


def _merged_status(shards: list[ShardRun]) -> str:
    statuses = {s.status for s in shards}
    for status in ABORTED:   # aborted_canary first: the runner's own precedence (exit 4 before 5)
        if status in statuses:
            return status
    return "ok"


def _runlog_text(plan: dict, shards: list[ShardRun], final: dict) -> str:
    """Each shard's events in shard order, tagged with `shard` (a holdout case's index remapped
    to its index in the whole plan), then one `finalize` naming the shards merged."""
    index_of = {c["id"]: i for i, c in enumerate(plan["cases"])}
    lines = []
    for s in shards:
        slice_ids = [c["id"] for c in shard_cases(plan, s.index)]
        try:
            raw = (s.path / "run.log").read_text(encoding="utf-8").splitlines()
        except OSError:
            raw = []
        for line in raw:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            if event.get("holdout") is True and isinstance(event.get("index"), int) \
                    and 0 <= event["index"] < len(slice_ids):
                event["index"] = index_of[slice_ids[event["index"]]]
            event["shard"] = s.index
            lines.append(json.dumps(event, sort_keys=True, ensure_ascii=False))
    lines.append(json.dumps(final, sort_keys=True, ensure_ascii=False))
    return "\n".join(lines) + "\n"


def merge_runs(plan_path: str, out_arg: str, shard_dirs: list[str], baseline_arg: str | None = None,
               stderr=None, attempt: str | None = None) -> tuple[int, dict]:
    stderr = stderr or sys.stderr
    attempt = merge_attempt(attempt)
    plan = preflight.load_plan(plan_path)
    if not plan.get("shards"):
        raise AssayError(f"--plan {plan_path}: this plan has no shards block; merge_runs.py merges the shard "
                         "runs of a plan built with make_plan.py --shards N", 2, key="--plan")
    if not shard_dirs:
        raise AssayError("merge_runs.py needs the shard run directories (SHARD_DIR...) after --out", 2)
    plan_sha = plan.sha256
    out = _check_out(plan, out_arg)
    ledger = holdout_ledger.ledger_path(plan)
    if ledger is not None:   # a holdout look taken on machines whose ledgers this one cannot see: refused
        holdout_ledger.require_look_on_ledger(ledger, plan, shard_dirs)
    baseline = preflight.check_baseline(baseline_arg, plan)
    count = plan["shards"]["count"]
    shards = [_read_shard(Path(p), plan_sha, count) for p in shard_dirs]
    for s in shards:
        s.problems, records, _ = check_run_dir(s.path, records=True)
        s.records = {r["case_id"]: r for r in records}
    problems = reconcile(plan, shards, attempt)
    if problems:
        extra = {"attempt": attempt} if attempt is not None else {}
        raise AssayError(_problem_message(problems, attempt, sorted({s.index for s in shards})), 6,
                         run_id=plan["run_id"], **extra, **problems)
    if attempt is None:
        refuse_untold(plan, shards)
    shards.sort(key=lambda s: s.index)
    manifest = merged_manifest(plan, shards, baseline)

    lock = RunLock(out, {"pid": os.getpid(), "run_id": plan["run_id"], "out": str(out), "plan": str(plan_path),
                         "merging": [s.path.name for s in shards]})
    lock.acquire()
    tmp = out.parent / f".{out.name}.merge-{os.getpid()}.tmp"
    try:
        if ledger is not None:   # the look is on the ledger before any byte of the merged run is readable
            holdout_ledger.append_ledger(ledger, plan, stderr)
        _remove_leftovers(out)
        code, result = _build(plan, shards, manifest, baseline, tmp, out)
        old = out.parent / f".{out.name}.merge-{os.getpid()}.old"
        if out.exists():
            out.rename(old)
        tmp.rename(out)
        if old.exists():
            shutil.rmtree(old)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
        lock.release()
    if attempt is not None:
        result["attempt"] = attempt
    if code:
        raise AssayError(EXIT_MESSAGES[code], code, **result)
    return code, result


def _remove_leftovers(out: Path) -> None:
    """The build dirs of a merge of this run id that was killed (`.<run>.merge-<pid>.tmp|.old`).
    Called under the run's lock, so no live merge of it owns one; links are unlinked, never followed."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.merge-\d+\.(tmp|old)")
    for entry in out.parent.iterdir():
        if pattern.fullmatch(entry.name):
            writer.remove_tree(entry)


def _build(plan: dict, shards: list[ShardRun], manifest: dict, baseline: dict | None, tmp: Path,
           out: Path) -> tuple[int, dict]:
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    atomic_write_json(tmp / "manifest.yaml", manifest)
    journal = casestore.Journal(tmp)
    stores = {s.index: casestore.open_store(s.path) for s in shards}
    by_index = {s.index: s for s in shards}
    source = _source_shard(plan, by_index)
    files = derived.DerivedFiles(tmp, manifest, len(plan["cases"]), run_paths.state_dir_of(plan))
    for i, c in enumerate(plan["cases"]):
        s = source.get(c["id"])
        if s is None:
            continue   # never finished in a shard that aborted
        # The case's whole record, whatever it holds: the artifact table decides what is valid.
        journal.append(_record_line(stores[s.index], c["id"]))
        files.add(i, s.records[c["id"]])
    journal.close()
    records = files.ordered()
    status = _merged_status(shards)
    derived.write_run_reports(tmp, records, k=plan["k"], oos_route=(manifest.get("scoring") or {}).get("oos_route"),
                              baseline=baseline)
    scorer_errors = sum(int(r.get("scorer_errors") or 0) for r in records)
    code = exit_code_for(status, [], scorer_errors)
    finished = max((str(s.results.get("finished_at")) for s in shards if s.results.get("finished_at")),
                   default=manifest["started_at"])
    merged_from = [{"shard": s.index, "run_dir": s.path.name, "status": s.status,
                    "started_at": s.manifest.get("started_at"), "finished_at": s.results.get("finished_at")}
                   for s in shards]
    final = {"ts": finished, "event": "finalize", "status": status, "exit_code": code, "missing_artifacts": 0,
             "merged_from": merged_from}
    atomic_write_text(tmp / "run.log", _runlog_text(plan, shards, final))
    late = [r for sh in shards for r in ((sh.results.get("late_spans") or {}).get("cases") or [])]
    if late:   # a shard's cases scored on part of their trace stay named in the merged run (the gate closes)
        files.extra["late_spans"] = {"cases": sorted(late, key=lambda r: (str(r.get("case_id")), str(r.get("trace_id")))),
                                     "fix": LATE_SPANS_FIX}
    files.refresh(status="running")
    known = {r["case_id"]: r for r in records}
    problems, _, _ = check_run_dir(tmp, status=status, schemas=False, known=known)
    if problems:
        raise AssayError(f"merge refused: the merged run fails the completeness check: {_shown(problems)}", 6,
                         run_id=plan["run_id"], missing_artifacts=problems)
    files.refresh(status=status, missing=[], exit_code=code, finished_at=finished)
    result = {"run_id": plan["run_id"], "status": status, "exit_code": code, "out": str(out),
              "shards": merged_from, "cases": len(records)}
    return code, result
