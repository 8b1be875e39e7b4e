"""One side of a comparison: a finished run dir read through the files of runner-contract §10.

`load_side(run_dir)` reads results.json, manifest.yaml and verdicts.jsonl once; the per-case
files (verdict.json, answer.txt, trajectory.json, turns/<n>/...) are read only when a pair
needs them. Nothing is written, nothing follows a symlink (report.rundir refuses them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import AssayError
from ..core.ids import is_safe_case_id
from ..report.rundir import load_results, try_json_head
from ..report.cases_cut import typed_cases_head
from ..report.run_files import read_jsonl_by_id
from ..core import casestore
from ..core.jsonio import plain_loads
from .light_record import LightRecord, light_record


@dataclass
class Side:
    run_dir: Path
    results: dict
    manifest: dict
    rows: dict[str, dict]                  # verdicts.jsonl by case id, plan order kept (rows without case_id)
    case_hash: dict[str, str | None]       # case_sha256 (None: the run predates case hashes)
    legacy: dict[str, str | None] | None = None   # see legacy_hash
    holdout: set[str] = field(default_factory=set)

    @property
    def legacy_hash(self) -> dict[str, str | None]:
        """The plan case's own sha256 by id (older runs have only this): read from manifest.yaml
        on first use (a pair asks only when a side lacks case_sha256)."""
        if self.legacy is None:
            table = _CaseHashes(self.rows, legacy=True)
            _manifest_rows(self.run_dir, table)
            self.legacy = table.legacy
        return self.legacy

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
        last = getattr(self, "_last", None)
        if last is not None and last[0] == case_id:
            return last[1]
        if not is_safe_case_id(case_id):
            return None
        store = self.open_store()
        if store.layout == "journal":   # the journal opened once, each case's line read where it is
            fd = getattr(self, "_fd", None)
            if fd is None:
                fd = self._fd = _Journal(self.run_dir)
            raw = store.line(case_id, fd.fd)
            rec = self._read_line(raw) if raw is not None else None
            rec = rec if rec is not None and rec.case_id == case_id else None
        else:
            rec = store.load(case_id)
        self._last = (case_id, rec)
        return rec

    def _read_line(self, raw: bytes) -> casestore.CaseRecord | None:
        """A journal line's case: what a pair reads of it alone (compare.light_record) until a case
        asks for its whole verdict (a traced or judged run's cost rows: then every line whole)."""
        if not getattr(self, "_whole_lines", False):
            rec = light_record(raw, self._read_whole)
            if rec is not None:
                return rec
        return casestore.parse_text_line(raw)

    def _read_whole(self) -> None:
        self._whole_lines = True

    def open_store(self) -> casestore.CaseStore:
        """The run's case store, opened on first use (the run dir is finished: load_side refuses a
        running one, so one index serves every pair)."""
        store = getattr(self, "_store", None)
        if store is None:
            store = self._store = casestore.open_store(self.run_dir)
        return store

    def record(self, case_id: str) -> casestore.CaseRecord | None:
        """The case's record (the one a pair just read is kept: no second read)."""
        return self._case(case_id)

    def pair_doc(self, case_id: str) -> dict:
        """The case's verdict record as a pair reads it ({} when absent): at least its keys
        compare.light_record.PAIR_KEYS, each as in the whole record."""
        rec = self._case(case_id)
        return rec.pair_doc if isinstance(rec, LightRecord) else self.verdict_doc(case_id)

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
            return plain_loads(text) if text is not None else None
        except (ValueError, RecursionError):
            return None


class _Journal:
    """A side's cases.jsonl, open for reading while the side lives (closed with it)."""

    def __init__(self, run_dir: Path) -> None:
        from ..core.writer import open_file
        self.fd = open_file(Path(run_dir) / casestore.JOURNAL, os.O_RDONLY)

    def __del__(self) -> None:
        try:
            os.close(self.fd)
        except (OSError, TypeError, AttributeError):   # at interpreter exit
            pass


def load_side(run_dir: Path, what: str) -> Side:
    """Read a run dir for comparison; AssayError(2) naming `what` (base / candidate) and the fix.

    What a 100,000-case comparison holds per case is its verdicts.jsonl row (equal `layers` maps one
    shared object) and its case hashes: results.json and manifest.yaml are walked one case row at a
    time (their top-level keys kept), never held whole."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise AssayError(f"{what} {run_dir}: not a directory; pass a run directory (<state>/reports/<run-id>)",
                         2, path=str(run_dir))
    results = load_results(run_dir, rows=False)
    status = results["summary"].get("status")
    if status == "running":
        raise AssayError(_unfinished_words(run_dir, results, what), 2, path=str(run_dir))
    rows = read_jsonl_by_id(run_dir / "verdicts.jsonl", _RowsById().kept)
    table = _CaseHashes(rows)
    manifest = _manifest_rows(run_dir, table)
    if not isinstance(manifest, dict) or table.deep:
        raise AssayError(f"{what} {run_dir}: manifest.yaml is missing or unreadable; this is not a run "
                         f"directory the runner finished (check it with run_cases.py --verify {run_dir})",
                         2, path=str(run_dir))
    holdout = {cid for cid, r in rows.items() if r.get("holdout")}
    holdout |= table.holdout
    return Side(run_dir=run_dir, results=results, manifest=manifest, rows=rows, case_hash=table.case_hash,
                holdout=holdout)


def _unfinished_words(run_dir: Path, results: dict, what: str) -> str:
    """Why a side whose results.json still says `running` is not compared: its runner is alive (wait for
    it), or no runner holds its lock (killed?: the --resume command that finishes it, as every reader of
    an interrupted run says it: report.interrupted.unfinished_runner)."""
    from ..report.interrupted import unfinished_runner
    _, how = unfinished_runner(run_dir, results)
    if how is None:
        return (f"{what} {run_dir}: the run is still running (summary.status running); wait for it "
                f"(wait_run.py {run_dir}), then compare")
    return (f"{what} {run_dir}: the run never finished (summary.status is still running but no runner holds its "
            f"lock: killed?); {how}, then compare")


class _RowsById:
    """verdicts.jsonl's rows by case id as they are read, each held without its `case_id` (the key
    says it) and one object for every row alike but for its id (at 100,000 cases a handful of rows,
    not 100,000 dicts: ~40 MB a side). Read-only, as every row of a comparison is. load_side asks
    `kept` once per shape of verdicts.jsonl line (report.run_files.read_jsonl_by_id)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict] = {}
        self.alike: dict[tuple, dict] | None = {}

    def add(self, row: Any) -> None:
        cid = row.get("case_id") if isinstance(row, dict) else None
        if isinstance(cid, str):
            self.rows[cid] = self.kept({k: v for k, v in row.items() if k != "case_id"})

    def kept(self, rest: dict) -> dict:
        """The one object held for a row without its case id (`rest` itself, or an equal one held before)."""
        if self.alike is not None:   # containers by identity (rows of a shape share theirs), kept alive here
            key = tuple((k, (type(v), id(v)) if isinstance(v, (dict, list)) else (type(v), v)) for k, v in rest.items())
            rest = self.alike.setdefault(key, rest)
            if len(self.alike) > 10_000:   # rows that share nothing: stop sharing, never grow without bound
                self.alike = None
        return rest


def _rows_by_id(lines: Any) -> dict[str, dict]:
    """_RowsById over rows already read."""
    by_id = _RowsById()
    for row in lines:
        by_id.add(row)
    return by_id.rows


def _manifest_rows(run_dir: Path, table: "_CaseHashes") -> Any:
    """manifest.yaml's top-level keys, each case row handed to `table` (walked one at a time, or
    from the whole document when the walk cannot take the file); None when it cannot be read.
    A big manifest whose rows are what the runner writes (see `_manifest_row_type`) is decoded by
    msgspec into those four strings alone (~15x sooner than the walk): the same answer."""
    path = Path(run_dir) / "manifest.yaml"
    decode = _typed_rows(path)
    got = typed_cases_head(path, decode) if decode is not None else None
    if got is not None:
        for c in got[1]:
            table.put(c.id, c.case_sha256, c.set, c.sha256)
        return got[0]
    manifest = try_json_head(path, table)
    if isinstance(manifest, dict) and "cases" in manifest:   # parsed whole: its rows as before
        cases = manifest.get("cases")
        for c in cases if isinstance(cases, list) else []:
            table(c)
        manifest = {k: v for k, v in manifest.items() if k != "cases"}
    return manifest


def _typed_rows(path: Path) -> Any:
    """The typed decode of a manifest's `cases` array (jsonio.fast_typed), when the file is big enough
    for the faster decoder; None otherwise."""
    from ..core.jsonio import bulk, fast_typed
    try:
        bulk(os.stat(path).st_size)
    except OSError:
        return None
    return fast_typed(_manifest_row_type)


def _manifest_row_type(msgspec: Any) -> Any:
    """A manifest's case rows as `_CaseHashes` reads them, typed so that msgspec refuses every array
    on which its answer could differ from the walk's: each row an object with a string `id` and no
    key but `id`, `case_sha256`, `set` and `sha256`, each a string or null or absent (then None, as
    `.get` reads it; a repeated key: the last, as json's). Such a row nests two deep, never too deep.
    A row of any other kind (a number, a nested value, an extra key): the walk reads the file."""
    class Row(msgspec.Struct, forbid_unknown_fields=True, gc=False):
        id: str
        case_sha256: str | None = None
        set: str | None = None
        sha256: str | None = None
    return list[Row]


class _CaseHashes:
    """manifest.yaml's case rows as they are walked: each case's case_sha256 (None when absent) by id,
    the holdout ids, and whether a row nests too deep to read (try_json refuses it); with `legacy`,
    each case's sha256 instead. An id already read from verdicts.jsonl is kept as that one string
    (the two files list the cases in plan order: the next id of the rows is the one to compare with)."""

    def __init__(self, rows: dict[str, dict], legacy: bool = False) -> None:
        self.ids = iter(rows)
        self.case_hash: dict[str, str | None] = {}
        self.legacy: dict[str, str | None] | None = {} if legacy else None
        self.holdout: set[str] = set()
        self.deep = False

    def __call__(self, c: Any) -> None:
        from ..core.jsonio import MAX_DEPTH, too_deep
        if not self.deep and too_deep(c, MAX_DEPTH - 2) is not None:
            self.deep = True
        if isinstance(c, dict) and isinstance(c.get("id"), str):
            self.put(c["id"], c.get("case_sha256"), c.get("set"), c.get("sha256"))

    def put(self, cid: str, case_sha256: Any, set_: Any, sha256: Any) -> None:
        """One case row with a string id: its case_sha256 (and holdout), or with `legacy` its sha256."""
        known = next(self.ids, None)
        cid = known if known == cid else cid
        if self.legacy is not None:
            self.legacy[cid] = sha256 if isinstance(sha256, str) else None
            return
        self.case_hash[cid] = case_sha256 if isinstance(case_sha256, str) else None
        if set_ == "holdout":
            self.holdout.add(cid)
