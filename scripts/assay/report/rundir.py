"""Reading a finished (or running) run directory: the files of runner-contract §10, nothing else.

Every after-the-run tool (wait_run, gate, draft_report) reads a run dir through here, so
"what a run dir is" and "how an unreadable file is reported" are said once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core import casestore
from ..core.errors import AssayError
from ..core.ids import is_safe_case_id, parse_run_id
from ..core.jsonio import MAX_DEPTH, loads
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


def read_jsonl_file(path: Path) -> list[dict]:
    """Rows of a JSONL file (absent file -> []); a bad line is AssayError(2) naming file and line."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return []
    rows = []
    try:
        text = read_bytes(path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AssayError(f"{path}: not readable UTF-8 ({exc})", 2, path=str(path)) from None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = loads(line, max_depth=MAX_DEPTH)
        except ValueError as exc:
            raise AssayError(f"{path}:{lineno}: not a JSON line ({exc})", 2, path=str(path), line=lineno) from None
        if isinstance(row, dict):
            rows.append(row)
    return rows


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


def throughput_events(run_dir: Path) -> list[dict]:
    """The run's `throughput` events from run.log: the last one of each shard (a merged run
    holds each shard's, tagged `shard`), or the last one (a resumed run logs one per process).
    [] for an older run, a run still going, or one killed before its end."""
    try:
        lines = read_bytes(Path(run_dir) / "run.log").decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    last: dict[Any, dict] = {}
    for line in lines:
        if '"throughput"' not in line:
            continue
        try:
            event = loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "throughput":
            last[event.get("shard")] = event
    return [last[k] for k in sorted(last, key=lambda k: (k is not None, k if isinstance(k, int) else -1))]


def _throttle_text(ev: dict) -> str | None:
    if not (ev.get("decreases") or ev.get("pauses") or ev.get("rate_limited_answers")):
        return None
    fl = ev.get("in_flight") if isinstance(ev.get("in_flight"), dict) else {}

    def num(v: Any) -> str:
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "n/a"
    text = (f"{num(ev.get('rate_limited_answers'))} rate-limited answer(s); in flight "
            f"{num(fl.get('min'))}-{num(fl.get('max'))} (median {num(fl.get('median'))}) of max_concurrency "
            f"{num(ev.get('max_concurrency'))}")
    if ev.get("adaptive"):
        text += (f"; the limit went down {num(ev.get('decreases'))} time(s), lowest {num(ev.get('limit_min'))}, "
                 f"ended at {num(ev.get('limit_end'))}")
    if ev.get("pauses"):
        text += f"; {num(ev.get('pauses'))} Retry-After pause(s), {num(ev.get('paused_s'))} s without sending"
    return text


def throughput_line(run_dir: Path) -> str | None:
    """One sentence on how the app held up under the run's concurrency, when the app throttled it
    (a rate-limited answer, a 429/503 that lowered the in-flight limit, a Retry-After pause),
    else None; per shard for a merged run. Read from run.log's `throughput` events: timing
    stays out of results.json (runner contract §5)."""
    parts = []
    for ev in throughput_events(run_dir):
        text = _throttle_text(ev)
        if text:
            parts.append(f"shard {ev['shard']}: {text}" if isinstance(ev.get("shard"), int) else text)
    return "throttled by the app: " + "; ".join(parts) if parts else None


def load_results(run_dir: Path) -> dict:
    """results.json with an object `summary`, else AssayError(2). A symlink at the run dir, among
    its files or its case dirs is refused first (exit 2 naming it): nothing is read through one."""
    path = Path(run_dir) / "results.json"
    if Path(run_dir).is_dir():
        refuse_symlinks_in(run_dir, max_depth=2, what="inside a run directory")
    if not path.is_file():
        raise AssayError(f"{run_dir}: no results.json here; pass a run directory "
                         f"(reports/<run-id>) or a reports dir with --latest", 2, path=str(run_dir))
    doc = read_json_file(path)
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
    manifest = try_json(run_dir / "manifest.yaml")
    extra = manifest.get("manifest_extra") if isinstance(manifest, dict) else None
    source = extra.get("rescored_from") if isinstance(extra, dict) else None
    if not isinstance(source, dict):
        return None
    results = try_json(run_dir / "results.json")
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
