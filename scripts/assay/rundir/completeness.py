"""The completeness check (contracts §5.10): run at the end of every run and by --verify.

Reads only the run dir. Every problem is one string in `missing_artifacts`, naming the
file (holdout cases by index, never by id): missing files, unparseable or off-schema
files, files whose bytes differ from the sha256 their verdict.json recorded, derived
files that disagree with the case dirs, counts that disagree with a recount, and any
file the run-dir contract does not list. One case record's checks (either layout) are `completeness_case`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..core import casestore
from ..core.jsonio import read_json, read_jsonl, sha256_file
from ..core.runplan import read_plan_text
from ..core.writer import SymlinkError, read_bytes
from ..stats.counts import COUNT_KEYS
from . import derived, parallel
from .artifacts import AFTER_RUN_FILES, RUN_ARTIFACTS, required_run_files, routing_scorable
from .streamed import CasesFile, Finished, same_lines
from .runlog_check import check_runlog, why
from .completeness_case import SYMLINK_PROBLEM, _schema_problem, _VerdictSchema, dir_cases, journal_cases

STOPPED_FAIL_FAST = "stopped_fail_fast"   # --fail-fast N: the rest is not run (never passed)
ABORTED = ("aborted_canary", "aborted_infra", STOPPED_FAIL_FAST)


class RunDirError(Exception):
    """The path is not a run directory at all (--verify exit 2)."""


def _jsonl(path: Path) -> list | None:
    try:
        return read_jsonl(path)
    except (OSError, ValueError):
        return None


def check_run_dir(out: Path, *, status: str | None = None, schemas: bool = True,
                  known: Mapping[str, dict] | None = None,
                  written: Mapping[str, bytes] | None = None,
                  records: bool = False) -> tuple[list[str], Any, dict]:
    """(problems, records in plan order, manifest). `status` overrides results.json's (the runner's view).

    `schemas=False` (the runner's own end-of-run check, over files it just wrote from
    schema-shaped records) skips the two deep passes --verify always runs: the JSON Schemas
    and re-hashing every case file against the sha256s its verdict.json recorded.

    `known` (the runner's end-of-run check only; case id -> the record this process wrote
    atomically as that case's verdict.json, or read from it when --resume adopted the case):
    such a case's verdict.json is not re-read, its dir is only listed (the file must still be
    there, with exactly the other required files), and its verdict is not re-rolled up (it is
    the roll-up this process made). Case dirs not in `known` are read as always. --verify
    never passes it: it is the independent re-read.

    `written` (with `known`; run-dir relative path -> the bytes this process last wrote
    there): when every case the listing found is a `known` one, a derived file (verdicts.jsonl,
    verdicts_for_stats.jsonl, results.json) whose bytes on disk are exactly those is not
    re-parsed and recounted: it is the text this process rendered from those same records. Any
    other content gets the full comparison.

    `records=True` (the shard merge, which reads each shard's records back): the second value is
    the finished records in plan order. By default (--verify, the gate, compare's check of its
    base, history, publish, the runner's own check) no record is held, whatever the run's size:
    the second value is only their count (`len()`). Either way the records are folded into the
    counts and their derived rows kept on disk in plan order (rundir.streamed), and a big
    manifest.yaml or results.json is walked one case row at a time (the manifest returned then
    holds its `cases` as their ids).
    """
    if not out.is_dir() or not ((out / "manifest.yaml").exists() or (out / "results.json").exists()):
        raise RunDirError(f"{out} is not a run directory (no manifest.yaml or results.json)")
    problems: list[str] = []
    # A run dir holds no links: one among its own entries is a defect named here, and nothing
    # is read through it (case dirs and their files are checked as they are listed below).
    top_links = sorted(e.name for e in os.scandir(out) if e.is_symlink())
    if out.is_symlink() or top_links:
        shown = [out.name] if out.is_symlink() else top_links
        return [f"{rel} ({SYMLINK_PROBLEM})" for rel in shown], [], {}
    try:
        manifest = _read_manifest(out / "manifest.yaml", compact=known is not None and not schemas, schemas=schemas)
    except (OSError, ValueError) as exc:
        return [f"manifest.yaml (missing or unreadable: {type(exc).__name__})"], [], {}
    if isinstance(manifest, CasesFile):   # walked: valid unless the walk says otherwise
        bad = manifest.schema_problem() if schemas else None
        if bad:
            return [f"manifest.yaml ({bad})"], [], manifest.whole if isinstance(manifest.whole, dict) else {}
        manifest = _manifest_ids(manifest)
    else:
        bad = _schema_problem(manifest, "manifest", schemas)
        if bad:
            return [f"manifest.yaml ({bad})"], [], manifest if isinstance(manifest, dict) else {}
    cases = manifest["cases"]
    ids = cases if isinstance(cases, _CaseIds) else [c["id"] for c in cases]
    index_of = {cid: i for i, cid in enumerate(ids)}
    holdout = {}
    for cid in (cases.holdout if isinstance(cases, _CaseIds) else (c["id"] for c in cases if c.get("set") == "holdout")):
        holdout[cid] = len(holdout) + 1

    def name(cid: str) -> str:
        """Holdout cases are named by their order among the plan's holdout cases, never by id."""
        return f"cases/<holdout #{holdout[cid]}>" if cid in holdout else f"cases/{cid}"

    # --- the case records: the journal, or an older run's case dirs
    # (a reader's spill goes to the temp dir: a run dir may be read-only, and is never written by a check)
    store = casestore.scan(out)
    if isinstance(known, derived.Known) and store.layout == "dirs":
        known = None   # the runner writes the journal; an older layout is re-read in full
    verdict_schema = _VerdictSchema() if schemas else None
    parallel.LAST.clear()
    if known is None and schemas and parallel.usable(store):   # the record checks in a child (rundir.parallel)
        share = parallel.Shares(store)   # the record checks' chunks, this process's once its own work is done
        child = parallel.Child(lambda: parallel.record_checks(out, store, index_of, name, verdict_schema,
                                                              share if share.usable else None))
        fin = Finished(ids, keep=records, directory=None)
        try:
            got = _check_cases(out, manifest, ids, index_of, name, fin, list(problems), schemas, known, written,
                               status, records, store, verdict_schema, child, share if share.usable else None)
        finally:
            fin.close()
            child.cancel()
            share.close()
        if got is not None:
            parallel.LAST.update(processes=2)
            return got
    parallel.LAST.setdefault("processes", 1)
    fin = Finished(ids, keep=records, directory=out if known is not None else None)
    try:
        return _check_cases(out, manifest, ids, index_of, name, fin, problems, schemas, known, written, status,
                            records, store, verdict_schema)
    finally:
        fin.close()


def _check_cases(out, manifest, ids, index_of, name, fin, problems, schemas, known, written, status, keep,
                 store, verdict_schema, child=None, share=None):
    """check_run_dir once the manifest is read: the case records into `fin`, then the run's files.
    With `child` (rundir.parallel): this process folds while the child checks each record (with `share`,
    the chunks of records it has not taken by the time this process is done are checked here); None
    when either found a problem or the child failed (the caller checks again in one process)."""
    if child is not None:
        present = parallel.fold_only(store, index_of, fin)
    elif store.layout != "dirs":
        present = journal_cases(store, index_of, name, problems, schemas, known, verdict_schema, fin)
    else:
        present = dir_cases(out, index_of, name, problems, schemas, known, verdict_schema, fin)
    # the derived files may be compared by their bytes only when the listing found exactly the
    # records this process holds (see the docstring)
    landed, stream = {}, None
    if isinstance(known, derived.Known):
        if fin.count == len(known) and fin.marked == fin.count:
            stream, landed = known.stream, dict(written or {})   # read back only where needed
        elif fin.marked:   # a case this process does not hold: every file is compared in full
            _fill(fin, known.stream, index_of)
    elif written and known is not None and fin.count == len(known) and fin.mine == fin.count:
        landed = written

    def expected() -> Finished:
        """`fin` with every record folded (the runner's own are read back from its spill on first need)."""
        if fin.marked:
            _fill(fin, stream, index_of)
        return fin

    # results.json, read once the records are folded (its case rows are compared as they are walked);
    # its own problems come first, as when it was read before the records. The runner's own check
    # with the hash of the results.json it wrote reads it only if it differs.
    results = None
    deferred = isinstance(known, derived.Known) and status is not None and "results.json" in (written or {})
    if not deferred:
        first: list[str] = []
        results = _load_results(out, first, schemas, lambda: expected().lines("results"))
        problems[0:0] = first
    summary_doc = results.head.get("summary") if results is not None else None
    run_status = status or (summary_doc.get("status") if isinstance(summary_doc, dict) else None)
    if run_status not in ABORTED:
        present_set = set(present)  # (a list here made this loop quadratic: 0.5 s at 10,000 cases)
        for cid in ids:
            if cid not in present_set:
                problems.append(f"{name(cid)}/verdict.json (case never finished)")
    del present
    # --- run-level files
    allowed = {a.path for a in RUN_ARTIFACTS} | set(AFTER_RUN_FILES)
    routing = (any(routing_scorable(r) for r in stream if not r.get("canary")) if fin.marked and stream is not None
               else fin.routing)
    required = required_run_files(manifest, (), routing=routing)
    if store.layout == "dirs":   # an older run dir: its case dirs instead of the journal
        allowed = (allowed - {casestore.JOURNAL}) | {casestore.LEGACY_DIR}
        required = [rel for rel in required if rel != casestore.JOURNAL]
    for p in sorted(out.iterdir()):
        if p.name not in allowed:
            problems.append(f"{p.name} (not part of the run-dir contract)")
    for rel in required:
        if not (out / rel).is_file():
            problems.append(f"{rel} (missing)")
    for a in RUN_ARTIFACTS:
        if a.path not in required and (out / a.path).exists():
            problems.append(f"{a.path} (present although its condition did not hold)")
    for rel, key, shown in (("verdicts.jsonl", "verdicts", name), ("verdicts_for_stats.jsonl", "stats", name),
                            ("routing_results.jsonl", "routing", lambda c: str(c)), ("repeats.jsonl", "repeats", name)):
        if rel in ("verdicts.jsonl", "verdicts_for_stats.jsonl") or rel in required:
            if not _as_written(out, rel, landed):
                _check_jsonl(out, rel, expected, key, problems, shown)
    for rel in ("routing_report.json", "reliability.json", "comparison.json"):
        if rel in required and (out / rel).is_file():
            try:
                read_json(out / rel)
            except (OSError, ValueError):
                problems.append(f"{rel} (unreadable)")
    if not _as_written(out, "results.json", landed):
        if deferred:
            results = _load_results(out, problems, schemas, lambda: expected().lines("results"))
        _check_results(results, manifest, len(ids), expected, problems, schemas, run_status)
    if child is None:
        check_runlog(out / "run.log", problems)
    else:
        try:   # the chunks of record checks the child has not taken yet, checked here meanwhile
            mine = parallel.own_checks(store, index_of, name, verdict_schema, share) if share is not None else []
        except (OSError, ValueError):
            mine = ["the record checks' chunks could not be read"]
        if mine:
            parallel.LAST["fallback"] = "the record checks found a problem"
            return None
        answer = child.result()
        if not isinstance(answer, tuple) or answer[0]:
            parallel.LAST["fallback"] = "the record checks found a problem" if answer else "the child gave no answer"
            return None
        problems.extend(answer[1])
    if not keep:
        return problems, _Count(fin.count), manifest
    if stream is not None and fin.marked:
        return problems, stream, manifest
    return problems, expected().records(), manifest


class _Count:
    """How many cases finished (check_run_dir(records=False)): no record is held."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


def _fill(fin: Finished, stream, index_of: Mapping[str, int]) -> None:
    """Fold the runner's own records (derived.Known's stream) into the marked places of `fin`."""
    for r in stream:
        i = index_of.get(r.get("case_id"))
        if i is not None:
            fin.fill(i, r)


def _load_results(out: Path, problems: list[str], schemas: bool = True,
                  expected: Callable[[], Iterable[dict]] | None = None) -> CasesFile | None:
    """results.json walked (rundir.streamed.CasesFile: its `cases` rows are compared with `expected()`
    as they are read, never held), or None with its problem named (a missing one is named later)."""
    try:
        results = CasesFile(out / "results.json", "results" if schemas else None, expected=expected)
    except FileNotFoundError:
        return None   # named as missing below
    except (OSError, ValueError) as exc:   # there but unreadable: a defect, never silently skipped
        if (out / "results.json").is_file():
            problems.append(f"results.json (unreadable: {why(exc)})")
        return None
    if not results.is_object:
        problems.append("results.json (not a JSON object)")
        return None
    return results


class _CaseIds(list):
    """The manifest's case ids in plan order (and its holdout ones), read one case at a time."""

    def __init__(self) -> None:
        super().__init__()
        self.holdout: list[str] = []

    def append(self, case: Any) -> None:
        super().append(case["id"])
        if case.get("set") == "holdout":
            self.holdout.append(case["id"])

    def close(self) -> "_CaseIds":
        return self


class _ManifestIds:
    """The walk's receiver for manifest.yaml's case rows (CasesFile's `take`): their ids in plan
    order and the holdout ones; `odd` when a row is not a case with a string id."""

    def __init__(self) -> None:
        self.ids, self.odd = _CaseIds(), False

    def __call__(self, case: Any) -> None:
        if self.odd or not isinstance(case, dict) or not isinstance(case.get("id"), str):
            self.odd = True
            return
        self.ids.append(case)


def _read_manifest(path: Path, *, compact: bool, schemas: bool = True) -> Any:
    """manifest.yaml; `compact` (the runner's own end-of-run check, over the manifest it wrote):
    its cases as their ids only (core.runplan's reader, one case parsed at a time), not 100,000 dicts.
    Otherwise (every other check) walked the same way, and schema-checked row by row (a CasesFile)."""
    if compact:
        walked = read_plan_text(read_bytes(path).decode("utf-8"), _CaseIds)
        if walked is not None and walked[1] is not None:
            return dict(walked[0], cases=walked[1])
        return read_json(path)
    return CasesFile(path, "manifest" if schemas else None, _ManifestIds())


def _manifest_ids(doc: CasesFile) -> Any:
    """A walked manifest as the check reads it: its top-level keys, `cases` as their ids (the
    document parsed whole when the walk could not take it, as it always was)."""
    take = doc.take
    if doc.whole is None and doc.rows is not None and not take.odd:
        return dict(doc.head, cases=take.ids)
    return doc.parse_whole()


def _as_written(out: Path, rel: str, landed: Mapping[str, Any]) -> bool:
    """True when `rel` holds exactly the bytes this process last wrote there (`landed[rel]`:
    those bytes, or their sha256 in hex, compared streaming)."""
    if rel not in landed:
        return False
    want = landed[rel]
    try:
        if isinstance(want, bytes):
            return read_bytes(out / rel) == want
        return sha256_file(out / rel) == want
    except (OSError, SymlinkError):
        return False


def _check_jsonl(out: Path, rel: str, expected: Callable[[], Finished], key: str, problems: list[str], name) -> None:
    """`rel`'s rows against the ones the records give (`expected().lines(key)`): compared line by line
    as they are read (a 100,000-case run holds neither list); only a file that differs is read whole
    to say how."""
    path = out / rel
    if not path.is_file():
        return
    fin = expected()
    if same_lines(path, fin.blocks(key)):
        return
    expect = list(fin.rows(key))
    rows = _jsonl(path)
    if rows is None:
        problems.append(f"{rel} (unreadable)")
        return
    if rows == expect:
        return
    by_id = {}
    for row in expect:
        by_id.setdefault(row.get("case_id"), []).append(row)
    detail = f"{len(rows)} row(s), the case dirs give {len(expect)}"
    for row in rows:
        cid = row.get("case_id") if isinstance(row, dict) else None
        cid = cid if isinstance(cid, str) else None
        if cid not in by_id or row not in by_id[cid]:
            detail = (f"{name(cid)} disagrees with its verdict.json" if cid in by_id
                      else "a row for a case with no finished case dir")
            break
    problems.append(f"{rel} ({detail})")


def _check_results(results: CasesFile | None, manifest: dict, n_cases: int, expected: Callable[[], Finished],
                   problems: list[str], schemas: bool, run_status: str | None = None) -> None:
    if results is None:
        return  # named as missing above
    bad = results.schema_problem() if schemas else None
    if bad:
        problems.append(f"results.json ({bad})")
        return
    head = results.head
    if head.get("run_id") != manifest.get("run_id"):
        problems.append("results.json (run_id differs from manifest.yaml)")
    problems.extend(derived.copies_differ(head, manifest))
    fin = expected()
    recount = fin.tally.summary(status="ok", missing_artifacts=[])   # stats.counts.summarize, folded
    summary = head.get("summary") or {}   # (its status on disk: the runner checks its own while it says running)
    problems.extend(derived.exit_code_differs(head.get("exit_code"), summary.get("status"), recount.get("scorer_errors")))
    diff = [key for key in COUNT_KEYS if summary.get(key) != recount.get(key)]
    if diff:
        problems.append(f"results.json (summary {', '.join(diff)} disagree with a recount from the case dirs)")
    if not results.cases_equal():
        problems.append("results.json (cases rows disagree with the case dirs)")
    stopped = head.get("stopped_early")
    if (run_status == STOPPED_FAIL_FAST) != isinstance(stopped, dict):
        problems.append("results.json (status stopped_fail_fast and `stopped_early` go together)")
    elif isinstance(stopped, dict) and stopped.get("not_run") != n_cases - len(fin):
        problems.append("results.json (stopped_early.not_run disagrees with the plan's cases never finished)")
