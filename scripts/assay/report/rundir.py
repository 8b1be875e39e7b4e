"""Reading a finished (or running) run directory: the files of runner-contract §10, nothing else.

Every after-the-run tool (wait_run, gate, draft_report) reads a run dir through here, so
"what a run dir is" and "how an unreadable file is reported" are said once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..core import casestore
from ..core.errors import AssayError
from ..core.ids import is_safe_case_id, parse_run_id
from ..core.jsonio import MAX_DEPTH, id_line_parser, line_parser, loads, too_deep
from ..core.writer import read_bytes, refuse_symlinks_in


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


def read_json_file(path: Path) -> Any:
    """Parse a JSON file; raise AssayError(2) naming the file and the fix."""
    try:
        return loads(read_bytes(path).decode("utf-8"), max_depth=MAX_DEPTH)
    except FileNotFoundError:
        raise AssayError(f"{path}: file not found", 2, path=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise AssayError(f"{path}: not readable UTF-8 JSON ({exc}); re-check the run with "
                         f"`run_cases.py --verify {Path(path).parent}`", 2, path=str(path)) from None


def try_json(path: Path) -> Any:
    """Parse a JSON file, or None when it is absent or unreadable (a file mid-write counts as absent)."""
    try:
        return loads(read_bytes(path).decode("utf-8"), max_depth=MAX_DEPTH)
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def try_json_head(path: Path, take: Any = None) -> Any:
    """`try_json` of a file whose `cases` array is not wanted (manifest.yaml, results.json: 100,000
    rows at 100,000 cases): its top-level keys without `cases`, the rows walked one at a time and
    dropped. None exactly when try_json is None; a document the walk cannot take is parsed whole.
    The answer is kept while the file is unchanged (the gate asks for the manifest's keys 6 times):
    read it, never change it. `take(row)`, when given, sees every case row (nothing is kept then)."""
    import os
    if take is not None:
        return _json_head(path, take)
    try:
        st = os.stat(path)
        key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _HEADS:
        return _HEADS[key]
    head = _json_head(path)
    if key is not None:
        if len(_HEADS) >= 8:
            _HEADS.clear()
        _HEADS[key] = head
    return head


_HEADS: dict[tuple, Any] = {}


def _json_head(path: Path, take: Any = None) -> Any:
    from ..rundir.streamed import CasesFile
    deep = _DeepRows(take)
    try:
        doc = CasesFile(Path(path), None, deep)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if doc.whole is not None:   # parsed whole (a small file, or one the walk does not take): try_json's answer
        whole = doc.whole
        if too_deep(whole, MAX_DEPTH) is not None:
            return None
        if not isinstance(whole, dict) or not isinstance(whole.get("cases"), list):
            return whole
        for row in whole["cases"] if take is not None else ():
            take(row)
        return {k: v for k, v in whole.items() if k != "cases"}
    return doc.head if not deep.deep and too_deep(doc.head, MAX_DEPTH) is None else None


class _DeepRows:
    """A walk's `take` noting whether any case row nests deeper than MAX_DEPTH allows (it sits at
    depth 3: the document, its `cases` array, the row)."""

    def __init__(self, take: Any = None) -> None:
        self.deep, self.take = False, take

    def __call__(self, row: Any) -> None:
        if not self.deep and too_deep(row, MAX_DEPTH - 2) is not None:
            self.deep = True
        if self.take is not None:
            self.take(row)


class _SharedRows(list):
    """results.json's case rows, read one at a time (core.runplan's walk), each row's `layers`,
    `failed_layers` and `verdict` one object for every equal row: 100,000 rows hold a handful of
    layer maps, not 100,000 (the rows are read, never mutated, by every reader of a run)."""

    def __init__(self, check_depth: bool = True) -> None:
        super().__init__()
        self.memo: dict[Any, Any] = {}
        self.deep = _DeepRows()
        self.check_depth = check_depth

    def append(self, row: Any) -> None:
        if self.check_depth:
            self.deep(row)
        if isinstance(row, dict):
            memo = self.memo
            # the parser makes each row's key strings anew: one set of them for every row alike
            keys = tuple(row)
            shared_keys = memo.setdefault(("keys", keys), keys)
            if shared_keys is not keys:
                row = dict(zip(shared_keys, row.values()))
            layers = row.get("layers")
            if isinstance(layers, dict) and all(type(v) is str for v in layers.values()):
                key = ("layers", *layers.items())
                row["layers"] = memo.setdefault(key, layers)
            failed = row.get("failed_layers")
            if isinstance(failed, list) and all(type(v) is str for v in failed):
                row["failed_layers"] = memo.setdefault(("failed", *failed), failed)
            verdict = row.get("verdict")
            if type(verdict) is str:
                row["verdict"] = memo.setdefault(verdict, verdict)
            if len(memo) > 100_000:   # rows that share nothing: stop sharing, never grow without bound
                memo.clear()
        super().append(row)

    def close(self) -> "_SharedRows":
        return self


def read_results_file(path: Path, *, rows: bool = True) -> Any:
    """`read_json_file` of a results.json: the same document, its case rows shared as `_SharedRows`
    says (the document parsed whole, with its errors, whenever the walk does not take it).
    `rows=False`: its top-level keys only (the rows walked and dropped; no `cases` key)."""
    import os

    from ..core.runplan import read_plan_text
    from ..rundir.streamed import WALK_ABOVE
    try:
        small = os.stat(path).st_size <= WALK_ABOVE
    except OSError:
        small = True
    if small:   # parsed whole, as it always was (no second read)
        doc = read_json_file(path)
        return doc if rows or not isinstance(doc, dict) else {k: v for k, v in doc.items() if k != "cases"}
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return read_json_file(path)   # its error, worded as always
    walked = read_plan_text(text, _SharedRows if rows else _DroppedRows)
    del text
    if walked is None or walked[1] is None or walked[1].deep.deep or too_deep(walked[0], MAX_DEPTH) is not None \
            or list(walked[0]) != sorted(walked[0]):
        doc = read_json_file(path)
        return doc if rows or not isinstance(doc, dict) else {k: v for k, v in doc.items() if k != "cases"}
    top, cases = walked
    if not rows:
        return top
    cases.memo.clear()
    return {key: top[key] if key != "cases" else cases for key in sorted([*top, "cases"])}


class _DroppedRows:
    """A walk's table that keeps no case row (only whether one nests too deep)."""

    def __init__(self) -> None:
        self.deep = _DeepRows()

    def append(self, row: Any) -> None:
        self.deep(row)

    def close(self) -> "_DroppedRows":
        return self


def read_jsonl_file(path: Path, *, share: bool = False) -> list[dict]:
    """Rows of a JSONL file (absent file -> []); a bad line is AssayError(2) naming file and line.
    `share`: equal `layers` maps, `failed_layers` lists and verdicts one object (read-only rows,
    e.g. verdicts.jsonl of a 100,000-case run for a comparison)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    rows = _SharedRows(check_depth=False) if share else []   # loads() checks each row's depth
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AssayError(f"{path}: not readable UTF-8 ({exc})", 2, path=str(path)) from None
    parse = line_parser(text, max_depth=MAX_DEPTH)   # loads(line, max_depth=MAX_DEPTH), sooner
    if share:   # the rows are read-only: lines alike but for their case id are parsed once
        parse = id_line_parser(parse)
    for lineno, line in enumerate(split_lines(text), 1):
        if not line.strip():
            continue
        try:
            row = parse(line)
        except ValueError as exc:
            raise AssayError(f"{path}:{lineno}: not a JSON line ({exc})", 2, path=str(path), line=lineno) from None
        if isinstance(row, dict):
            rows.append(row)
    return list(rows) if share else rows


_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")   # and, in a text not all ASCII:
_OTHER_BREAKS_WIDE = _OTHER_BREAKS + ("\x85", "\u2028", "\u2029")


def split_lines(text: str):
    """`text.splitlines()`, one line at a time (a 100,000-line file is not held twice). A text whose
    only line breaks are newlines (what assay writes) is cut at each by `str.find` (a 100,000-line
    verdicts.jsonl in 0.06 s instead of 1 s)."""
    start = 0
    if not any(brk in text for brk in (_OTHER_BREAKS if text.isascii() else _OTHER_BREAKS_WIDE)):
        find = text.find
        while (end := find("\n", start)) >= 0:
            yield text[start:end]
            start = end + 1
        if start < len(text):
            yield text[start:]
        return
    for m in _BREAKS.finditer(text):
        yield text[start:m.start()]
        start = m.end()
    if start < len(text):
        yield text[start:]


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


def _not_a_run_hint(path: Path) -> str:
    """What to pass instead: a reports dir (its runs hold results.json) names its newest run."""
    try:
        runs = sorted(p.name for p in path.iterdir() if p.is_dir() and not p.is_symlink()
                      and (p / "results.json").is_file())
    except OSError:
        runs = []
    if runs:
        return (f"it is a reports dir of {len(runs)} run(s): pass one run directory, e.g. {path / runs[-1]} "
                f"(gate.py alone also takes the reports dir with --latest)")
    return "pass a run directory (reports/<run-id>); gate.py alone also takes a reports dir with --latest"


def load_results(run_dir: Path, *, rows: bool = True) -> dict:
    """results.json with an object `summary`, else AssayError(2). A symlink at the run dir, among
    its files or its case dirs is refused first (exit 2 naming it): nothing is read through one."""
    path = Path(run_dir) / "results.json"
    if Path(run_dir).is_dir():
        refuse_symlinks_in(run_dir, max_depth=2, what="inside a run directory")
    if not path.is_file():
        raise AssayError(f"{run_dir}: no results.json here; {_not_a_run_hint(Path(run_dir))}", 2, path=str(run_dir))
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
        raise AssayError(f"{reports_dir}: no run directory{what} (named <mode>-<YYYYMMDDTHHMMSSZ>, "
                         f"holding results.json) found", 2, path=str(reports_dir))
    return max(found)[2]


def latest_started_run(reports_dir: Path, mode: str | None = None, skipped: list[str] | None = None) -> Path:
    """`gate.py --latest`: `latest_run`, unless a newer run of the mode never started (it stopped at
    pre-flight and left `.<run-id>.not-started.json`, assay.rundir.not_started): then AssayError(2)
    naming it, never an older run gated in its place."""
    from ..rundir import not_started
    try:
        chosen: Path | None = latest_run(reports_dir, mode, skipped)
    except AssayError:
        if not_started.newest(Path(reports_dir), mode) is None:
            raise
        chosen = None
    chosen_id = parse_run_id(chosen.name) if chosen is not None else None
    never = not_started.newer_than(Path(reports_dir), mode, chosen_id[1] if chosen_id else None)
    if never is None:
        return chosen  # type: ignore[return-value]
    _, run_id, record = never
    why = not_started.reason(record)
    older = (f"--latest will not gate {chosen.name}, an older run, in its place"
             if chosen is not None else "there is no finished run to gate")
    raise AssayError(f"{reports_dir}: the newest run{f' of mode {mode}' if mode else ''}, {run_id}, never "
                     f"started ({why}); {older}. Fix what pre-flight names and run the plan again, or gate "
                     "a run by its directory (gate.py <reports>/<run-id>)", 2, path=str(reports_dir),
                     run_id=run_id, not_started=True)


def progress(run_dir: Path) -> tuple[int, int | None]:
    """(cases finished: committed case records, cases planned by the manifest or None).

    What a run in progress has done, read from the case journal (or an older run's case dirs):
    results.json is refreshed in batches, so its counts lag (at the start they are all 0)."""
    run_dir = Path(run_dir)
    finished = len(casestore.open_store(run_dir).ids())
    manifest = try_json(run_dir / "manifest.yaml")  # JSON text (valid YAML)
    planned = manifest.get("cases") if isinstance(manifest, dict) else None
    return finished, len(planned) if isinstance(planned, list) else None


def progress_phrase(run_dir: Path) -> tuple[str, int, int | None]:
    finished, planned = progress(run_dir)
    of = f" of {planned} planned" if planned is not None else ""
    return f"{finished}{of} case(s) finished so far", finished, planned
