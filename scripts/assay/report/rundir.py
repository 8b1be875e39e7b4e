"""Reading a finished (or running) run directory: the files of runner-contract §10, nothing else.

Every after-the-run tool (wait_run, gate, draft_report) reads a run dir through here, so
"what a run dir is" and "how an unreadable file is reported" are said once.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..core import casestore
from ..core.errors import AssayError
from ..core.ids import is_safe_case_id, parse_run_id
from ..core.jsonio import loads
from ..core.writer import read_bytes, refuse_symlinks_in
from .run_files import (_HEADS, read_json_file, read_jsonl_file, read_results_file, split_lines,  # noqa: F401
                        try_json, try_json_head)   # (their one definition; imported from here too)


class RunResultsView:
    """What every reader of a finished run says about it: its summary and its run id.

    Mixed into the report's and the gate's records, which carry `run_dir` and `results`.
    """

    run_dir: Path
    results: dict

    @property
    def summary(self) -> dict:
        return self.results["summary"]

    @property
    def run_id(self) -> str:
        rid = self.results.get("run_id")
        return rid if isinstance(rid, str) else self.run_dir.name


def last_log_event(run_dir: Path) -> dict | None:
    """The last parseable line of run.log, or None."""
    try:
        lines = read_bytes(Path(run_dir) / "run.log").decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if line.strip():
            try:
                event = loads(line)
            except ValueError:
                continue  # a line being written right now
            return event if isinstance(event, dict) else None
    return None


def not_a_run_hint(path: Path) -> str:
    """What to pass instead: a reports dir (its runs hold results.json) names its newest run; a run
    that never started (its `.<run-id>.not-started.json` beside the path) says why."""
    from ..rundir import not_started
    try:
        record = read_json_file(not_started.marker_path(path)) if not path.exists() else None
    except AssayError:
        record = None
    if isinstance(record, dict) and not_started.refused_plan(record):
        return (f"that plan was refused ({not_started.reason(record)}): it never became a run, no run directory "
                f"was made. {not_started.fix(record)}")
    if isinstance(record, dict):
        return (f"that run never started ({not_started.reason(record)}): no run directory was made; fix "
                "what pre-flight names and run the plan again")
    lock = path.parent / f".{path.name}.lock"
    parsed = parse_run_id(path.name)
    if parsed and not path.exists() and (lock.exists() or lock.is_symlink()):
        return f"that run never started: {not_started.reason(not_started.lock_record(lock, path.name, parsed[0]))}"
    if path.is_file():
        return _file_hint(path)
    if not path.exists():
        return "no such directory; pass a run directory (reports/<run-id>, the `out` make_plan.py prints)"
    try:
        runs = sorted(p.name for p in path.iterdir() if p.is_dir() and not p.is_symlink()
                      and (p / "results.json").is_file())
    except OSError:
        runs = []
    if runs:   # the example is the newest run by run-id timestamp (as --latest picks), never by name
        newest = max(runs, key=lambda name: ((parse_run_id(name) or ("", ""))[1], name))
        return (f"it is a reports dir of {len(runs)} run(s): pass one run directory, e.g. the newest, "
                f"{path / newest} (gate.py alone also takes the reports dir with --latest [--mode M])")
    return "pass a run directory (reports/<run-id>); gate.py alone also takes a reports dir with --latest"


def _file_hint(path: Path) -> str:
    """A file where a run dir was expected: a run's own results.json names its dir; a plan names the
    run dir it makes (reports/<its run_id>), which exists only once run_cases.py has run it."""
    if path.name == "results.json" and parse_run_id(path.parent.name):
        return f"that is a run's results.json: pass its directory, {path.parent}"
    head = try_json_head(path)
    if isinstance(head, dict) and "plan_version" in head and isinstance(head.get("run_id"), str):
        paths = head.get("paths") if isinstance(head.get("paths"), dict) else {}
        state = paths.get("state_dir") if isinstance(paths.get("state_dir"), str) else "<state>"
        out = Path(state) / "reports" / head["run_id"]
        made = "" if (out / "results.json").is_file() else " (run it first: run_cases.py --plan <that plan> --out that dir)"
        return f"that is a plan (make_plan.py's output), not a run: its run directory is {out}{made}"
    return "it is a file; pass a run directory (reports/<run-id>)"


def load_results(run_dir: Path, *, rows: bool = True) -> dict:
    """results.json with an object `summary`, else AssayError(2). A symlink at the run dir, among
    its files or its case dirs is refused first (exit 2 naming it): nothing is read through one."""
    path = Path(run_dir) / "results.json"
    if Path(run_dir).is_dir():
        refuse_symlinks_in(run_dir, max_depth=2, what="inside a run directory")
    if not path.is_file():
        raise AssayError(f"{run_dir}: no results.json here; {not_a_run_hint(Path(run_dir))}", 2, path=str(run_dir))
    doc = read_results_file(path, rows=rows)
    if not isinstance(doc, dict) or not isinstance(doc.get("summary"), dict):
        raise AssayError(f"{path}: `summary` is missing or not an object; this is not a results.json "
                         f"the runner wrote", 2, path=str(path))
    return doc


def case_verdict(run_dir: Path, case_id: str) -> dict | None:
    """cases/<id>/verdict.json, or None (unsafe id, absent, unreadable)."""
    if not is_safe_case_id(case_id):
        return None
    doc = casestore.open_store(run_dir).verdict(case_id)
    return doc if isinstance(doc, dict) else None


def holdout_ids(run_dir: Path, rows: list[dict] | None = None) -> set[str]:
    """Every holdout case id the run dir knows (verdicts.jsonl and case dirs): ids to never print."""
    rows = rows if rows is not None else read_jsonl_file(Path(run_dir) / "verdicts.jsonl")
    ids = {r["case_id"] for r in rows if isinstance(r, dict) and r.get("holdout") and isinstance(r.get("case_id"), str)}
    for cid, doc in casestore.open_store(run_dir).verdicts():
        if doc.get("holdout"):
            ids.add(cid)
    return ids


class LazyHoldoutIds:
    """`holdout_ids(run_dir, rows)` read on the first `in`: a caller that has no case to name (the
    gate on a run with no unscored, skipped or infra gating case) never reads every verdict.json."""

    def __init__(self, run_dir: Path, rows: list[dict] | None = None):
        self._args, self._ids = (run_dir, rows), None

    def __contains__(self, case_id: object) -> bool:
        if self._ids is None:
            self._ids = holdout_ids(*self._args)
        return case_id in self._ids


def unfinished_rescore(run_dir: Path) -> str | None:
    """Why `--latest` passes over this run dir: a rescore (manifest_extra.rescored_from) whose
    status is not ok (aborted, running, incomplete). A rescore calls no app: an aborted one is
    not the app's latest result. None for every other run."""
    manifest = try_json_head(run_dir / "manifest.yaml")
    extra = manifest.get("manifest_extra") if isinstance(manifest, dict) else None
    source = extra.get("rescored_from") if isinstance(extra, dict) else None
    if not isinstance(source, dict):
        return None
    results = try_json_head(run_dir / "results.json")
    summary = results.get("summary") if isinstance(results, dict) else None
    status = summary.get("status") if isinstance(summary, dict) else None
    if status == "ok":
        return None
    return f"a rescore that did not finish: status {status!r}, rescored from {source.get('run_id')}"


def latest_run(reports_dir: Path, mode: str | None = None, skipped: list[str] | None = None) -> Path:
    """The newest run dir by the run id's timestamp (never mtime), never a rescore that did not
    finish (named in `skipped` when given); AssayError(2) if none."""
    reports_dir = Path(reports_dir)
    if not reports_dir.is_dir():
        raise AssayError(f"{reports_dir}: not a directory; --latest takes the reports dir "
                         f"(<state>/reports)", 2, path=str(reports_dir))
    found = []
    for child in reports_dir.iterdir():
        parsed = parse_run_id(child.name)
        if not parsed or not (child / "results.json").is_file():
            continue
        if mode is not None and parsed[0] != mode:
            continue
        why = unfinished_rescore(child)
        if why:
            if skipped is not None:
                skipped.append(f"{child.name} ({why})")
            continue
        found.append((parsed[1], child.name, child))
    if not found:
        what = f" with mode {mode}" if mode else ""
        # a state dir given for its reports dir: `gate.py --latest .assay`
        hint = (f"; --latest takes the reports dir: did you mean {reports_dir / 'reports'}?"
                if (reports_dir / "reports").is_dir() else "")
        raise AssayError(f"{reports_dir}: no run directory{what} (named <mode>-<YYYYMMDDTHHMMSSZ>, "
                         f"holding results.json) found{hint}", 2, path=str(reports_dir))
    return max(found)[2]


def other_modes_note(reports_dir: Path, chosen: Path) -> str | None:
    """`gate.py --latest` without `--mode` gates the newest run of any mode: when the reports dir also
    holds runs of other modes, say which mode it chose and the newest run of each other mode, which
    this gate did not read (a red regression run behind a newer green smoke run is no green regression)."""
    picked = parse_run_id(chosen.name)
    if not picked:
        return None
    newest: dict[str, str] = {}
    for child in Path(reports_dir).iterdir():
        parsed = parse_run_id(child.name)
        if parsed and parsed[0] != picked[0] and (child / "results.json").is_file():
            if parsed[0] not in newest or parse_run_id(newest[parsed[0]])[1] < parsed[1]:  # type: ignore[index]
                newest[parsed[0]] = child.name
    if not newest:
        return None
    others = "; ".join(f"{mode}: {run_id}" for mode, run_id in sorted(newest.items()))
    modes = " or ".join(f"--mode {mode}" for mode in sorted(newest))
    return (f"--latest without --mode gated {chosen.name}, the newest run of any mode ({picked[0]}); this reports "
            f"dir also holds runs of other modes, not gated here (newest {others}): pass {modes} to gate "
            "that series")


def unmerged_shards(reports_dir: Path, mode: str | None, stamp: str | None) -> tuple[str, list[str]] | None:
    """(run_id, its shard dir names) of the newest run of `mode` newer than `stamp` that is only shard
    dirs (`<run_id>.shard-<I>`, assay.plan.shards) with no merged `<run_id>/results.json` beside them:
    its shards were never merged (or the merge was refused), so it has no result yet. Else None."""
    from ..plan.shards import parse_shard_dir_name
    found: dict[str, list[str]] = {}
    if not Path(reports_dir).is_dir():   # a fresh state dir: `latest_run`'s error names it
        return None
    for child in Path(reports_dir).iterdir():
        parsed = parse_shard_dir_name(child.name)
        run = parse_run_id(parsed[0]) if parsed else None
        if run and (mode is None or run[0] == mode) and (stamp is None or run[1] > stamp):
            found.setdefault(parsed[0], []).append(child.name)  # type: ignore[index]
    for run_id in sorted(found, key=lambda r: parse_run_id(r)[1], reverse=True):  # type: ignore[index]
        if not (Path(reports_dir) / run_id / "results.json").is_file():
            return run_id, sorted(found[run_id])
    return None


def latest_started_run(reports_dir: Path, mode: str | None = None, skipped: list[str] | None = None) -> Path:
    """`gate.py --latest`: `latest_run`, unless a newer run of the mode never started (it stopped at
    pre-flight and left `.<run-id>.not-started.json`, assay.rundir.not_started) or is only shards that
    were never merged (`unmerged_shards`): then AssayError(2) naming it, never an older run gated in
    its place."""
    from ..rundir import not_started
    try:
        chosen: Path | None = latest_run(reports_dir, mode, skipped)
    except AssayError:
        if not_started.newest(Path(reports_dir), mode) is None and unmerged_shards(reports_dir, mode, None) is None:
            raise
        chosen = None
    chosen_id = parse_run_id(chosen.name) if chosen is not None else None
    stamp = chosen_id[1] if chosen_id else None
    older = (f"--latest will not gate {chosen.name}, an older run, in its place"
             if chosen is not None else "there is no finished run to gate")
    of_mode = f" of mode {mode}" if mode else ""
    shards = unmerged_shards(reports_dir, mode, stamp)
    if shards is not None:
        run_id, names = shards
        raise AssayError(f"{reports_dir}: the newest run{of_mode}, {run_id}, is only shard dir(s) never merged "
                         f"({', '.join(names)}); {older}. Merge every shard (merge_runs.py --plan <plan.json> "
                         f"--out {Path(reports_dir) / run_id} <its shard dirs>) and gate the merged run, or gate "
                         "a run by its directory (gate.py <reports>/<run-id>)", 2, path=str(reports_dir),
                         run_id=run_id, unmerged_shards=names)
    damaged = _damaged_newer(Path(reports_dir), mode, chosen)
    if damaged is not None:
        run_id, why, fix = damaged
        instead = older if chosen is None or run_id != chosen.name else "--latest will not gate it as that run's result"
        raise AssayError(f"{reports_dir}: the newest run{of_mode}, {run_id}, {why}; {instead}. {fix}, or gate a run "
                         "by its directory (gate.py <reports>/<run-id>)", 2, path=str(reports_dir), run_id=run_id)
    never = not_started.newer_than(Path(reports_dir), mode, stamp)
    if never is None:
        return chosen  # type: ignore[return-value]
    _, run_id, record = never
    fix = not_started.fix(record)
    raise AssayError(f"{reports_dir}: {not_started.headline(record, run_id, mode)}; {older}. "
                     f"{fix + ' Or' if fix else 'Or'} gate a run by its directory (gate.py <reports>/<run-id>)", 2,
                     path=str(reports_dir), run_id=run_id, not_started=True,
                     **({"refused_plan": True} if not_started.refused_plan(record) else {}))


def _damaged_newer(reports_dir: Path, mode: str | None, chosen: Path | None) -> tuple[str, str, str] | None:
    """(run id, what is wrong, the fix) when the newest run dir of `mode` by its name cannot be --latest's answer:
    it holds no results.json (a partial copy or sync, a deleted file) and is newer than `chosen`, or
    `chosen` is another run under a newer name (its results.json's run_id is not its dir's name: the
    runner names a run dir by its run id, so it is a copy or rename of another run). Never an older or
    other run gated in its place."""
    stamp = parse_run_id(chosen.name)[1] if chosen is not None else None
    for child in sorted(reports_dir.iterdir(), key=lambda c: parse_run_id(c.name) or ("", ""), reverse=True):
        parsed = parse_run_id(child.name)
        if not parsed or (mode is not None and parsed[0] != mode) or (stamp is not None and parsed[1] <= stamp):
            continue
        if child.is_dir() and not (child / "results.json").is_file():
            return (child.name, "has no results.json (a partial copy or sync, or a deleted file)",
                    f"Restore its files (run_cases.py --verify {child} names what is missing), or remove that dir")
    if chosen is not None:
        results = try_json_head(chosen / "results.json")
        run_id = results.get("run_id") if isinstance(results, dict) else None
        if isinstance(run_id, str) and run_id != chosen.name:
            return (chosen.name, f"holds run {run_id} (its results.json's run_id is not its dir's name: a copy or "
                    "rename of another run)", f"Move it back to {reports_dir / run_id}, or remove it")
    return None


def progress(run_dir: Path) -> tuple[int, int | None]:
    """(cases finished: committed case records, cases planned by the manifest or None).

    What a run in progress has done, read from the case journal (or an older run's case dirs):
    results.json is refreshed in batches, so its counts lag (at the start they are all 0)."""
    run_dir = Path(run_dir)
    finished = len(casestore.open_store(run_dir).ids())
    manifest = try_json(run_dir / "manifest.yaml")  # JSON text (valid YAML)
    planned = manifest.get("cases") if isinstance(manifest, dict) else None
    return finished, len(planned) if isinstance(planned, list) else None


def since_last_case(run_dir: Path, lock: Path, now: float | None = None) -> tuple[float, bool] | None:
    """(seconds since the last case finished, whether one finished under this runner) of a run in
    progress: the case journal's last append (its mtime; a resume's cut of a torn line counts as one),
    or, when no case has finished since this runner took its lock (a fresh run, or a resumed one whose
    journal is older), the lock's write time (seconds since the runner started). None when neither
    file can be read."""
    def mtime(path: Path) -> float | None:
        try:
            st = os.lstat(path)
        except OSError:
            return None
        return st.st_mtime if st.st_size else None   # the runner opens an empty journal before any case ends
    started, last = mtime(lock), mtime(Path(run_dir) / casestore.JOURNAL)
    now = time.time() if now is None else now
    if last is not None and (started is None or last >= started):
        return max(0.0, now - last), True
    if started is None:
        return None
    return max(0.0, now - started), False


def age_words(seconds: float) -> str:
    """42 s, 12 min, 3 h 5 min."""
    s = int(seconds)
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def since_phrase(since: tuple[float, bool] | None) -> str:
    """`the last one finished 12 min ago` / `none since its runner started 12 min ago` ('' if unknown)."""
    if since is None:
        return ""
    age, finished = since
    return (f"the last one finished {age_words(age)} ago" if finished
            else f"none since its runner started {age_words(age)} ago")


def progress_phrase(run_dir: Path) -> tuple[str, int, int | None]:
    finished, planned = progress(run_dir)
    of = f" of {planned} planned" if planned is not None else ""
    return f"{finished}{of} case(s) finished so far", finished, planned
