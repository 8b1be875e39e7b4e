"""Is a run evidence for this candidate? (`candidate.py keep`, the optimize loop's honesty checks.)

A comparison.json says how a run compares with its baseline; it does not say which edit the run
measured, nor how often the holdout was looked at. So before the keep rule is read:

- each run started after the candidate was made (`new`): an older run measured the app before
  this edit (another candidate's, or none);
- no other candidate already named the run as its evidence (candidates/log.jsonl);
- the holdout run started after the training run finished (the holdout is spent only on a
  training win), and it is the only holdout look since the candidate was made (the ledger,
  datasets/holdout-looks.jsonl: a second run or an unseal since then turns the holdout into a
  training set);
- no case the comparison pairs was edited between the baseline run and this one (case_sha256,
  the rule compare_runs.py buckets as `expectation_changed`): an edited case's flip is the edit's,
  not the candidate's. Holdout cases are counted, never named.
- the baseline is not a run that measured another candidate that was not kept (named by its keep
  decision, or started while it was open: between its `new` and its revert), nor one started after
  this candidate's own `new` (an earlier try of this edit).
- the run called the app: a replayed or rescored run's answers are a recording's, not this edit's;
- it was scored as its baseline was (the same capability matrix, response readers, scoring settings
  and judge: `suite_parts_sha256`): a layer scored on one side only moves verdicts by itself;
- every case its baseline scored pass/fail scored pass/fail in it too: a case left out of a
  targeted selection, or an infra error the edit caused, would hide a regression from the pairing;
- every case it fails its baseline scored pass/fail: a case the champion lost to an infra error never
  pairs, so a fail there would count as no regression;
- the app served the edit: a run reporting the champion's revision (health_check.revision_from) did not;
- every case it ran was in its baseline run's selection: a smoke or targeted champion never ran the
  rest of the split, so a case the edit broke there would not pair;
- a holdout run is a look within the budget (the gate's rule, asked of assay.verdict: `holdout_look_reason`) and is
  compared with the champion's own holdout run when the log shows it (the kept candidate's).
Each refusal is exit 2 naming the run, the reason and the fix. Then, a run that is evidence: its own
gate beside its champion's run's (optimize/own_gate.py).
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from ..compare.pairs import case_status
from ..compare.sides import load_side
from ..core.errors import AssayError
from ..plan.modes import HOLDOUT_LEDGER
from ..suite.holdout import read_ledger
from ..core.ids import parse_utc as parse_ts  # noqa: F401 (the optimize modules read stamps by this name)


def _second(ts: _dt.datetime) -> _dt.datetime:
    return ts.replace(microsecond=0)


def _log_rows(state: Path) -> list[dict[str, Any]]:
    path = state / "candidates" / "log.jsonl"
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def _evidence_of(state: Path) -> dict[str, dict[str, Any]]:
    """run id -> {candidate, decision} for every run a keep decision of the log named."""
    out: dict[str, dict[str, Any]] = {}
    for row in _log_rows(state):
        if row.get("action") != "keep":
            continue
        for role in ("training", "holdout"):
            block = row.get(role)
            if isinstance(block, dict) and isinstance(block.get("run_id"), str):
                out.setdefault(block["run_id"], {"candidate": row.get("id"), "decision": row.get("decision")})
                if row.get("decision") == "kept":
                    out[block["run_id"]] = {"candidate": row.get("id"), "decision": "kept"}
    return out


def check_run(state: Path, doc: dict[str, Any], role: str, run_dir: str, run_id: Any,
              started: Any, baseline_run_id: Any) -> None:
    """Made after the candidate, not another candidate's evidence, not compared with a loser's run."""
    cid = doc["id"]
    start, made = parse_ts(started), parse_ts(doc.get("created_at"))
    if made is None:
        raise AssayError(f"candidates/{cid}/candidate.json: created_at {doc.get('created_at')!r} is not a UTC time, so "
                         "nothing shows which runs came after the candidate; make the candidate again with "
                         "candidate.py new", 2, key="created_at")
    if start is None:
        raise AssayError(f"--{role} {run_dir}: results.json has no started_at, so nothing shows the run measured "
                         f"candidate {cid}'s edit; measure it with a new run", 2)
    if _second(start) < made:
        raise AssayError(f"--{role} {run_dir}: started {started}, before candidate {cid} was made "
                         f"({doc.get('created_at')}), so it measured the app without this candidate's edit; "
                         "measure the edit with a new run", 2)
    used = _evidence_of(state)
    other = used.get(run_id) if isinstance(run_id, str) else None
    if other and other["candidate"] != cid:
        raise AssayError(f"--{role} {run_dir}: run {run_id} is already the evidence of candidate "
                         f"{other['candidate']} ({other['decision']}); a run measures one candidate: measure "
                         f"{cid} with its own run", 2)
    base = used.get(baseline_run_id) if isinstance(baseline_run_id, str) else None
    if base and base["decision"] != "kept":
        raise AssayError(f"--{role} {run_dir}: compared against {baseline_run_id}, the run of candidate "
                         f"{base['candidate']} ({base['decision']}), not the champion; re-run it with "
                         "--baseline-verdicts from the champion's run", 2)


def check_baseline_not_a_trial(state: Path, role: str, run_dir: str, cid: str, base_manifest: dict[str, Any]) -> None:
    """The baseline run did not start while another candidate, never kept, was open (between its `new`
    and its revert), nor after this candidate's own `new`: that run measured a trial edit (the other's,
    or an earlier try of this one), not the champion, even when no keep named it."""
    start = parse_ts(base_manifest.get("started_at"))
    if start is None:
        return
    rows = _log_rows(state)
    kept = {r.get("id") for r in rows if r.get("action") == "keep" and r.get("decision") == "kept"}
    for row in rows:
        other = row.get("id")
        made = parse_ts(row.get("ts")) if row.get("action") == "new" else None
        if made is None or other in kept or start < made + _dt.timedelta(seconds=1):
            continue   # a run within the second `new` was stamped in counts as before it
        if other == cid:   # this candidate is open: the run measured its text as it then was (an earlier try)
            raise AssayError(f"--{role} {run_dir}: its baseline run {base_manifest.get('run_id')} started "
                             f"{base_manifest.get('started_at')}, after this candidate {cid} was made "
                             f"({row.get('ts')}): it measured the app with this candidate's edit as it then was "
                             "(an earlier try), not the champion, so a win over it is no win over the champion; "
                             "compare with the champion's own run, made before `new` (reports/baseline.json: pin "
                             "a run made with no candidate open), then measure the edit again", 2)
        ends = [parse_ts(r.get("ts")) for r in rows if r.get("id") == other and r.get("action") == "revert"]
        ended = min((e for e in ends if e is not None and e >= made), default=None)
        if ended is None or start < ended + _dt.timedelta(seconds=1):   # the revert's stamp has whole seconds
            until = f"reverted {ended.strftime('%Y-%m-%dT%H:%M:%SZ')}" if ended else "never reverted"
            raise AssayError(f"--{role} {run_dir}: its baseline run {base_manifest.get('run_id')} started "
                             f"{base_manifest.get('started_at')}, while candidate {other} was open (made "
                             f"{row.get('ts')}, {until}) and {other} was never kept: it measured that edit, not the "
                             "champion; compare with the champion's own run (reports/baseline.json: pin a run made "
                             "with no candidate open), then measure the edit again", 2)


def check_holdout_order(state: Path, doc: dict[str, Any], train_results: dict[str, Any], hold_dir: str,
                        hold_run_id: Any, hold_started: Any) -> None:
    """The holdout run came after the training run finished, and is the one look since `new`."""
    cid = doc["id"]
    finished, start = parse_ts(train_results.get("finished_at")), parse_ts(hold_started)
    if finished is None or start is None or start < finished:
        raise AssayError(f"--holdout {hold_dir}: started {hold_started}, before the training run "
                         f"{train_results.get('run_id')} finished ({train_results.get('finished_at')}); the "
                         "holdout is looked at only after a training win (keep exit 3). This candidate's holdout "
                         f"is spent: revert it (candidate.py revert --id {cid})", 2)
    made = parse_ts(doc.get("created_at"))
    others = []
    for row in read_ledger(state / HOLDOUT_LEDGER):
        when = parse_ts(row.get("date"))
        # a look within the second `new` was stamped in counts as before it (created_at has whole seconds)
        if made is None or when is None or when < made + _dt.timedelta(seconds=1) or row.get("run_id") == hold_run_id:
            continue
        others.append(f"run {row['run_id']}" if isinstance(row.get("run_id"), str)
                      else f"an {row.get('mode') or 'unrecorded'} look at {row.get('date')}")
    if others:
        raise AssayError(f"--holdout {hold_dir}: the holdout was looked at {len(others) + 1} times since candidate "
                         f"{cid} was made ({', '.join(others)} besides {hold_run_id}; {HOLDOUT_LEDGER}); one "
                         "look per candidate, or the holdout becomes a training set. Revert it "
                         f"(candidate.py revert --id {cid}); the analyze skill reseals the holdout", 2)


def baseline_dir(state: Path, role: str, run_dir: str, manifest: dict[str, Any], baseline_run_id: Any) -> Path:
    """The run dir the comparison's baseline verdicts came from."""
    block = manifest.get("baseline_verdicts")
    path = block.get("path") if isinstance(block, dict) else None
    base_dir = Path(path).parent if isinstance(path, str) else None
    if base_dir is None or not base_dir.is_dir():
        base_dir = state / "reports" / str(baseline_run_id)
    if not base_dir.is_dir():
        raise AssayError(f"--{role} {run_dir}: its baseline run {baseline_run_id} is not in {state / 'reports'}, so "
                         "keep cannot check that no case was edited since it; restore that run dir", 2)
    return base_dir


def _spent(role: str, cid: str) -> str:
    if role == "holdout":
        return (f"this candidate's holdout look is spent: revert it (candidate.py revert --id {cid}); the analyze "
                "skill reseals the holdout")
    return "measure the edit with a new run (run_cases.py, not --replay and not rescore.py)"


def check_measured(role: str, run_dir: str, cid: str, manifest: dict[str, Any], results: dict[str, Any],
                   comparison: dict[str, Any], base_manifest: dict[str, Any]) -> None:
    """The run called the app, was scored as its baseline was, scored every case the baseline
    scored, and (a holdout run) is a look within the budget."""
    from ..report.gate_reasons import replayed_phrase
    from ..verdict import holdout_look_reason   # the gate's own rule, asked of the one decision's room
    replayed = replayed_phrase(Path(run_dir))
    if replayed:
        raise AssayError(f"--{role} {run_dir}: {replayed}, so its answers do not measure candidate {cid}'s "
                         f"edit: {_spent(role, cid)}", 2)
    mine, theirs = manifest.get("suite_parts_sha256"), base_manifest.get("suite_parts_sha256")
    if isinstance(mine, dict) and isinstance(theirs, dict):
        from ..compare.document import SUITE_PART_WORDS
        parts = [SUITE_PART_WORDS.get(k, k) for k in sorted(set(mine) | set(theirs))
                 if k != "cases" and mine.get(k) != theirs.get(k)]
        if parts:
            fix = ("measure the edit with a new run scored as the champion was (or re-run and pin the champion "
                   "under the new settings first)" if role == "training" else _spent(role, cid))
            raise AssayError(f"--{role} {run_dir}: not scored as its baseline run {base_manifest.get('run_id')} "
                             f"was ({'; '.join(parts)}: not the same in both runs; a --layer plan, or profile.yaml "
                             f"or adapter.yaml edited since), so its flips are the scoring's, not the candidate's: "
                             f"{fix}", 2)
    missing = comparison.get("cases_only_in_baseline")
    if isinstance(missing, int) and missing > 0:
        ids = [i for i in comparison.get("cases_only_in_baseline_ids") or [] if isinstance(i, str)]
        named = _named(role, ids, missing)
        raise AssayError(f"--{role} {run_dir}: {missing} case(s) the baseline run {comparison.get('baseline_run_id')} "
                         f"scored have no pass/fail verdict in this run{named} (left out of its selection, an infra "
                         "error, unscored or skipped), so a case the edit broke there would not show in the "
                         "comparison (gate.py names why): "
                         + ("measure the edit with a new regression run in which every one of them scores"
                            if role == "training" else _spent(role, cid)), 2,
                         unpaired=missing)
    ran = {c.get("id") for c in base_manifest.get("cases") or [] if isinstance(c, dict)}   # a set: 100,000 cases
    unmeasured = [c.get("id") for c in manifest.get("cases") or []
                  if isinstance(c, dict) and c.get("set") != "canary" and c.get("id") not in ran]
    if unmeasured:   # a smoke or targeted champion: what the edit broke outside its selection never pairs
        named = _named(role, unmeasured)
        raise AssayError(f"--{role} {run_dir}: {len(unmeasured)} case(s) of this run were not in its baseline run "
                         f"{base_manifest.get('run_id')}'s selection (a {base_manifest.get('mode')} run){named}, so "
                         "the champion never measured them and a case the edit broke there would not show in the "
                         "comparison: "
                         + ("run the champion on the full split (a regression run of the champion's text, pinned in "
                            "reports/baseline.json), then measure the edit again against it" if role == "training"
                            else _spent(role, cid)), 2, unmeasured=len(unmeasured))
    if role == "holdout":
        over = holdout_look_reason(run_dir, results)
        if over:
            raise AssayError(f"--holdout {run_dir}: {over}. It decides no keep, and {_spent(role, cid)}", 2)


def _named(role: str, ids: list, total: int | None = None) -> str:
    """": c-1, c-2 ... and N more" naming the cases on training (`total` of them, `ids` the first); nothing
    on the holdout (its cases are only counted, never named)."""
    total = len(ids) if total is None else total
    if role == "holdout":
        return ""
    return ": " + ", ".join(map(str, ids[:5])) + (f" and {total - 5} more" if total > 5 else "")


def check_served(role: str, run_dir: str, cid: str, manifest: dict[str, Any],
                 base_manifest: dict[str, Any]) -> dict[str, Any]:
    """What the app served (`invocation.health_check.revision_from`, recorded at pre-flight as the manifest's
    `health_check.revision`). An http app is a server assay never starts: a long-running one keeps serving the
    prompt it loaded at start, so a run made after the edit may have measured the champion's text. The same
    revision in the run and its baseline run is exit 2 (it served what the champion's run measured); no
    revision in either says that nothing shows the app served the edit."""
    mine = (manifest.get("health_check") or {}).get("revision")
    theirs = (base_manifest.get("health_check") or {}).get("revision")
    if mine is not None and mine == theirs:
        raise AssayError(f"--{role} {run_dir}: the app reported revision {mine!r} (invocation.health_check."
                         f"revision_from) in this run and in its baseline run {base_manifest.get('run_id')}: it "
                         f"served what the champion's run measured, not candidate {cid}'s edit (a long-running app "
                         "reads its prompt at start: it was not restarted after the edit, or the edit is not in "
                         "what it serves), so this run decides nothing: restart the app on the edited files, then "
                         + ("measure the edit with a new run" if role == "training" else _spent(role, cid)), 2,
                         revision=mine)
    if mine is not None and theirs is not None:
        return {"known": True, "revision": mine, "baseline_revision": theirs}
    if (manifest.get("invocation") or {}).get("mode") != "http":
        return {"known": True, "why": "the runner started the app for this run, after the edit"}
    which = "this run" if mine is None else f"its baseline run {base_manifest.get('run_id')}"
    return {"known": False, "why": (
        f"nothing shows the app served the edit: {which} recorded no revision (invocation.health_check."
        "revision_from) and an http app is a server assay does not start; a long-running app serves the prompt "
        "it loaded at start, so restart it after each edit, and declare revision_from so that keep can tell")}


def check_champion_holdout(state: Path, pinned_run_id: Any, hold_dir: str, cid: str, baseline_run_id: Any) -> None:
    """When the pinned champion is a kept candidate's training run, its holdout run is the holdout baseline."""
    kept = [row for row in _log_rows(state) if row.get("action") == "keep" and row.get("decision") == "kept"
            and isinstance(row.get("training"), dict) and row["training"].get("run_id") == pinned_run_id]
    hold = kept[-1].get("holdout") if kept else None
    want = hold.get("run_id") if isinstance(hold, dict) else None
    if isinstance(want, str) and baseline_run_id != want:
        raise AssayError(f"--holdout {hold_dir}: compared against {baseline_run_id}, but the champion "
                         f"{pinned_run_id} (candidate {kept[-1].get('id')}, kept) was measured on the holdout by "
                         f"{want}; against an older run the holdout counts the champion's own gains as this "
                         f"candidate's: {_spent('holdout', cid)}", 2)


def check_cases_unchanged(state: Path, role: str, run_dir: str, manifest: dict[str, Any],
                          baseline_run_id: Any) -> None:
    """No case paired by the comparison changed (case_sha256) between the baseline run and this one."""
    base_dir = baseline_dir(state, role, run_dir, manifest, baseline_run_id)
    base, cand = load_side(base_dir, "baseline"), load_side(Path(run_dir), f"--{role}")
    edited = [cid for cid in cand.rows if cid in base.rows and case_status(base, cand, cid)[0] is True]
    if not edited:
        return
    sealed = [c for c in edited if c in cand.holdout or c in base.holdout]
    named = [c for c in edited if c not in sealed]
    what = ", ".join(named[:5]) + (f" and {len(named) - 5} more" if len(named) > 5 else "")
    if sealed:
        what = (what + " and " if what else "") + f"{len(sealed)} holdout case(s) (ids sealed)"
    raise AssayError(f"--{role} {run_dir}: {len(edited)} case(s) changed since the baseline run {baseline_run_id} "
                     f"({what}): their flips are the case edits', not the candidate's. Re-run the champion on "
                     "this suite (bump datasets/dataset.yaml dataset_version and pin it), or undo the case "
                     "edits, then measure the candidate again", 2, edited=len(edited))


def broken_gating(run_dir: str, base_dir: Path) -> list[str]:
    """The gating cases its baseline (the champion) passed that the run fails, in the run's order: a
    candidate that breaks one makes the release gate close (gate.py --baseline names them), so it is
    never kept, whatever the paired statistics say of the suite as a whole."""
    from ..report.run_files import read_jsonl_file
    base = {r.get("case_id"): r.get("verdict") for r in read_jsonl_file(Path(base_dir) / "verdicts.jsonl")
            if isinstance(r, dict)}
    return [r["case_id"] for r in read_jsonl_file(Path(run_dir) / "verdicts.jsonl")
            if isinstance(r, dict) and isinstance(r.get("case_id"), str) and r.get("gating", True) is not False
            and not r.get("canary") and r.get("verdict") == "fail" and base.get(r["case_id"]) == "pass"]


def check_baseline_scored_fails(role: str, run_dir: str, base_dir: Path, cid: str) -> None:
    """Every case this run fails, its baseline run scored pass or fail: a case the champion's run has no
    pass/fail verdict for (an infra error, unscored, skipped) never pairs, so a fail there is counted as no
    regression while it may be the edit's break (a gating one closes the kept run's gate). Exit 2, named
    (a holdout run's counted)."""
    from ..report.run_files import read_jsonl_file
    base = {r.get("case_id"): r.get("verdict") for r in read_jsonl_file(Path(base_dir) / "verdicts.jsonl")
            if isinstance(r, dict)}
    unknown = [r["case_id"] for r in read_jsonl_file(Path(run_dir) / "verdicts.jsonl")
               if isinstance(r, dict) and isinstance(r.get("case_id"), str) and not r.get("canary")
               and r.get("verdict") == "fail" and r["case_id"] in base and base[r["case_id"]] not in ("pass", "fail")]
    if not unknown:
        return
    named = _named(role, unknown)
    raise AssayError(f"--{role} {run_dir}: {len(unknown)} case(s) this run fails have no pass/fail verdict in its "
                     f"baseline run {base_dir.name} (an infra error, unscored or skipped there){named}, so the "
                     "comparison never pairs them: a fail there may be the edit's break, and an infra error is "
                     "no evidence that it is not: "
                     + ("re-run the champion so that every case scores (pin that run in reports/baseline.json), "
                        "then measure the edit again" if role == "training" else _spent(role, cid)), 2,
                     unpaired_fails=len(unknown))


RECOUNTED = ("keep", "n", "fixed_by_candidate", "broken_by_candidate", "delta", "p_candidate_better", "threshold",
             "proven", "verdict_label")


def check_recorded(role: str, run_dir: str, base_dir: Path, comparison: dict[str, Any], cid: str) -> None:
    """The run and its baseline run pass the completeness check (`run_cases.py --verify`: a verdict file
    edited by hand, e.g. the champion's verdicts_for_stats.jsonl, no longer says what its cases did), and
    comparison.json is what the stats module gives for their verdicts now (an edited or stale
    comparison.json decides nothing). Counts only: holdout ids are never named."""
    from ..report.gate_reasons import run_verify
    from ..report.run_files import read_jsonl_file
    from ..stats.paired import compare, paired_population
    from ..stats.verdict_file import holdout_beside
    fix = "measure the edit with a new run" if role == "training" else _spent(role, cid)
    for what, d in (("", Path(run_dir)), (f"its baseline run {base_dir.name} ", base_dir)):
        clean, detail = run_verify(d)
        if not clean:
            raise AssayError(f"--{role} {run_dir}: {what}fails the completeness check ({detail}); its files are "
                             "not the run's record, so no keep is read from them: restore the run dir from its "
                             f"own files, or {fix}", 2)
    base_file, run_file = base_dir / "verdicts_for_stats.jsonl", Path(run_dir) / "verdicts_for_stats.jsonl"
    try:   # over the pairs the comparison's statistics are over: a canary of either run is none
        canaries = set(holdout_beside(str(base_file), "canary")) | set(holdout_beside(str(run_file), "canary"))
        redo = compare(paired_population(read_jsonl_file(base_file), canaries),
                       paired_population(read_jsonl_file(run_file), canaries))
    except AssayError as exc:
        redo = {"error": exc.message}
    differ = [k for k in RECOUNTED if redo.get(k) != comparison.get(k)]
    if differ:
        said = ", ".join(f"{k} {json.dumps(comparison.get(k))} (the verdicts give {json.dumps(redo.get(k))})"
                        for k in differ[:4])
        raise AssayError(f"--{role} {run_dir}: comparison.json is not the comparison of this run's verdicts with "
                         f"its baseline run {base_dir.name}'s ({said}): it was edited, or written against other "
                         f"verdicts, so it decides nothing; {fix}", 2)


def check_edit_unchanged(doc: dict[str, Any], role: str, run_dir: str, started: Any) -> None:
    """No surface changed after the run started: a later edit is text the run never measured."""
    start = parse_ts(started)
    for s in doc["surfaces"]:
        try:
            mtime = (Path(doc["app"]) / s["path"]).lstat().st_mtime
        except OSError:
            continue   # deleted: the blob check of `keep` says what differs
        changed = _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc)
        if start is not None and changed > start:
            fix = "measure the edit as it is now with a new run" if role == "training" else _spent(role, doc["id"])
            raise AssayError(f"--{role} {run_dir}: surface {s['path']} was changed at "
                             f"{changed.strftime('%Y-%m-%dT%H:%M:%SZ')}, after the run started ({started}), so the "
                             f"run did not measure the text being kept: {fix}", 2, surface=s["path"])

