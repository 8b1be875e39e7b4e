"""The completeness check (contracts §5.10): run at the end of every run and by --verify.

Reads only the run dir. Every problem is one string in `missing_artifacts`, naming the
file (holdout cases by index, never by id): missing files, unparseable or off-schema
files, files whose bytes differ from the sha256 their verdict.json recorded, derived
files that disagree with the case dirs, counts that disagree with a recount, and any
file the run-dir contract does not list.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from ..core.jsonio import loads, read_json, read_jsonl, sha256_bytes
from ..core.writer import SymlinkError, read_bytes
from ..core.vocab import SKIPPED
from ..schemas import iter_errors
from ..score.rollup import (SIMULATED_TURN_LAYERS, case_verdict, conversation_verdict, fold_repeats,
                            merge_turn_layers, simulated_verdict)
from ..stats.counts import COUNT_KEYS, summarize
from . import derived
from .artifacts import AFTER_RUN_FILES, RUN_ARTIFACTS, required_case_files, required_run_files

STOPPED_FAIL_FAST = "stopped_fail_fast"   # --fail-fast N: the rest is not run (never passed)
ABORTED = ("aborted_canary", "aborted_infra", STOPPED_FAIL_FAST)
SYMLINK_PROBLEM = "a symlink: a run directory holds none, and nothing is read through one"


class RunDirError(Exception):
    """The path is not a run directory at all (--verify exit 2)."""


def _schema_problem(doc: Any, name: str, enabled: bool = True) -> str | None:
    if not enabled:
        return None
    errors = iter_errors(doc, name)
    if not errors:
        return None
    e = errors[0]
    return f"does not match the {name} schema at {e['key']}: {e['message']}"


class _VerdictSchema:
    """--verify's JSON Schema pass over every verdict.json, with each distinct layer object
    validated once: the envelope (with `layers` taken as any object) through jsonschema, then
    each layer against `$defs/layer`, cached by its canonical JSON (most layers of a run are
    the same few objects). Only a yes/no: any doc found invalid goes through the full
    validation, so the problem reported is exactly the full one's. Falls back to the full
    validation for every doc when the schema's `layers` part is not the shape this relies on.
    """

    CACHE_MAX = 20000

    def __init__(self) -> None:
        import copy

        import jsonschema

        from ..schemas import load_schema
        schema = load_schema("verdict")
        layers = (schema.get("properties") or {}).get("layers") or {}
        props = layers.get("properties") or {}
        layer_def = (schema.get("$defs") or {}).get("layer")
        self.names = frozenset(props)
        self.ok = (set(layers) == {"type", "additionalProperties", "required", "properties"}
                   and layers["type"] == "object" and layers["additionalProperties"] is False
                   and set(layers["required"]) == self.names
                   and all(v == {"$ref": "#/$defs/layer"} for v in props.values())
                   and isinstance(layer_def, dict) and "$ref" not in json.dumps(layer_def)
                   and json.dumps(schema).count('"$ref"') == len(props))
        if not self.ok:
            return
        envelope = copy.deepcopy(schema)
        envelope["properties"]["layers"] = {"type": "object"}
        layer_schema = {"$schema": schema.get("$schema"), **layer_def}
        cls = jsonschema.validators.validator_for(schema)
        self.envelope = cls(envelope, format_checker=cls.FORMAT_CHECKER)
        self.layer = cls(layer_schema, format_checker=cls.FORMAT_CHECKER)
        self.cache: dict[str, bool] = {}

    def problem(self, rec: Any) -> str | None:
        try:
            valid = self.ok and self._valid(rec)
        except RecursionError:  # a hand-made deep document: the full validation names it
            valid = False
        if valid:
            return None
        return _schema_problem(rec, "verdict")

    def _valid(self, rec: Any) -> bool:
        layers = rec.get("layers") if isinstance(rec, dict) else None
        if not isinstance(layers, dict) or set(layers) != self.names or not self.envelope.is_valid(rec):
            return False
        for layer in layers.values():
            key = json.dumps(layer, sort_keys=True, ensure_ascii=False, allow_nan=True)
            ok = self.cache.get(key)
            if ok is None:
                if len(self.cache) >= self.CACHE_MAX:
                    self.cache.clear()
                ok = self.cache[key] = self.layer.is_valid(layer)
            if not ok:
                return False
        return True


def _jsonl(path: Path) -> list | None:
    try:
        return read_jsonl(path)
    except (OSError, ValueError):
        return None


def check_run_dir(out: Path, *, status: str | None = None, schemas: bool = True,
                  known: Mapping[str, dict] | None = None,
                  written: Mapping[str, bytes] | None = None) -> tuple[list[str], list[dict], dict]:
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
        manifest = read_json(out / "manifest.yaml")
    except (OSError, ValueError) as exc:
        return [f"manifest.yaml (missing or unreadable: {type(exc).__name__})"], [], {}
    bad = _schema_problem(manifest, "manifest", schemas)
    if bad:
        return [f"manifest.yaml ({bad})"], [], manifest if isinstance(manifest, dict) else {}
    ids = [c["id"] for c in manifest["cases"]]
    index_of = {cid: i for i, cid in enumerate(ids)}
    holdout = {}
    for c in manifest["cases"]:
        if c.get("set") == "holdout":
            holdout[c["id"]] = len(holdout) + 1

    def name(cid: str) -> str:
        """Holdout cases are named by their order among the plan's holdout cases, never by id."""
        return f"cases/<holdout #{holdout[cid]}>" if cid in holdout else f"cases/{cid}"

    results = None
    try:
        results = read_json(out / "results.json")
    except FileNotFoundError:
        pass   # named as missing below
    except (OSError, ValueError) as exc:   # there but unreadable: a defect, never silently skipped
        if (out / "results.json").is_file():
            problems.append(f"results.json (unreadable: {_why(exc)})")
    if results is not None and not isinstance(results, dict):
        problems.append("results.json (not a JSON object)")
        results = None
    summary_doc = (results or {}).get("summary")
    run_status = status or (summary_doc.get("status") if isinstance(summary_doc, dict) else None)

    # --- case dirs
    records: dict[int, dict] = {}
    cases_dir = out / "cases"
    present, linked = [], set()
    if cases_dir.is_dir():
        for e in os.scandir(cases_dir):
            present.append(e.name)
            if e.is_symlink():
                linked.add(e.name)
        present.sort()
    verdict_schema = _VerdictSchema() if schemas else None
    for entry in present:
        if entry in linked:
            problems.append(f"cases/{entry} ({SYMLINK_PROBLEM})" if entry not in index_of
                            else f"{name(entry)} ({SYMLINK_PROBLEM})")
            continue
        if entry not in index_of:
            problems.append(f"cases/{entry} (not a case of this run's plan)")
            continue
        cdir = cases_dir / entry
        rec = _check_case(cdir, entry, name(entry), problems, schemas,
                          None if known is None or schemas else known.get(entry), verdict_schema)
        if rec is not None:
            # flat memory over 10,000 cases (a `known` record is slim already)
            records[index_of[entry]] = rec if known is not None and rec is known.get(entry) else derived.slim(rec)
    if run_status not in ABORTED:
        present_set = set(present)  # (a list here made this loop quadratic: 0.5 s at 10,000 cases)
        for cid in ids:
            if cid not in present_set:
                problems.append(f"{name(cid)}/verdict.json (case never finished)")
    ordered = [records[i] for i in sorted(records)]
    # the derived files may be compared by their bytes only when the listing found exactly the
    # records this process holds (see the docstring)
    landed = {}
    if written and known is not None and len(ordered) == len(known) and \
            all(known.get(r.get("case_id")) is r for r in ordered):
        landed = written

    # --- run-level files
    allowed = {a.path for a in RUN_ARTIFACTS} | {"cases"} | set(AFTER_RUN_FILES)
    for p in sorted(out.iterdir()):
        if p.name not in allowed:
            problems.append(f"{p.name} (not part of the run-dir contract)")
    required = required_run_files(manifest, ordered)
    for rel in required:
        if not (out / rel).is_file():
            problems.append(f"{rel} (missing)")
    for a in RUN_ARTIFACTS:
        if a.path not in required and (out / a.path).exists():
            problems.append(f"{a.path} (present although its condition did not hold)")
    if not _as_written(out, "verdicts.jsonl", landed):
        _check_jsonl(out, "verdicts.jsonl", [derived.verdict_row(r) for r in ordered], problems, name)
    if not _as_written(out, "verdicts_for_stats.jsonl", landed):
        _check_jsonl(out, "verdicts_for_stats.jsonl",
                     [row for row in (derived.stats_row(r) for r in ordered) if row], problems, name)
    if "routing_results.jsonl" in required:
        _check_jsonl(out, "routing_results.jsonl", derived.routing_rows(ordered), problems, lambda c: str(c))
    if "repeats.jsonl" in required:
        _check_jsonl(out, "repeats.jsonl", [row for r in ordered for row in derived.repeat_rows(r)], problems, name)
    for rel in ("routing_report.json", "reliability.json", "comparison.json"):
        if rel in required and (out / rel).is_file():
            try:
                read_json(out / rel)
            except (OSError, ValueError):
                problems.append(f"{rel} (unreadable)")
    if not _as_written(out, "results.json", landed):
        _check_results(results, manifest, ordered, problems, schemas, run_status)
    _check_runlog(out / "run.log", problems)
    return problems, ordered, manifest


def _as_written(out: Path, rel: str, landed: Mapping[str, bytes]) -> bool:
    """True when `rel` holds exactly the bytes this process last wrote there."""
    if rel not in landed:
        return False
    try:
        return read_bytes(out / rel) == landed[rel]
    except (OSError, SymlinkError):
        return False


def _list_files(directory: str, prefix: str = "", links: set[str] | None = None) -> set[str]:
    """Every file under a case dir, relative, via os.scandir (one syscall per directory).
    A symlink is never listed as a file nor entered: its path goes into `links`."""
    found: set[str] = set()
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    for entry in entries:
        if entry.is_symlink():
            if links is not None:
                links.add(prefix + entry.name)
        elif entry.is_dir(follow_symlinks=False):
            found |= _list_files(entry.path, f"{prefix}{entry.name}/", links)
        else:
            found.add(prefix + entry.name)
    return found


def _check_case(cdir: Path, cid: str, shown: str, problems: list[str], deep: bool,
                known: dict | None = None, verdict_schema: _VerdictSchema | None = None) -> dict | None:
    """One case dir. `deep` (--verify) adds the JSON Schema and the sha256 of every file.
    `known`: the record this process wrote as verdict.json (not re-read; the file must exist)."""
    links: set[str] = set()
    present = _list_files(str(cdir), links=links)
    for rel in sorted(links):
        problems.append(f"{shown}/{rel} ({SYMLINK_PROBLEM})")
    if "verdict.json" in links:
        return None
    mine = known is not None and "verdict.json" in present
    if mine:
        rec = known
    else:
        try:
            rec = read_json(cdir / "verdict.json")
        except FileNotFoundError:
            problems.append(f"{shown}/verdict.json (missing: the case never finished)")
            return None
        except (OSError, ValueError):
            problems.append(f"{shown}/verdict.json (unreadable)")
            return None
    if not deep:
        bad = None
    elif verdict_schema is not None:
        bad = verdict_schema.problem(rec)
    else:
        bad = _schema_problem(rec, "verdict")
    if bad or rec.get("case_id") != cid:
        problems.append(f"{shown}/verdict.json ({bad or 'case_id differs from its directory'})")
        return None
    required = required_case_files(rec)
    shas = rec.get("artifact_sha256") or {}
    for rel in required:
        if rel == "verdict.json":
            continue
        if rel not in present:
            problems.append(f"{shown}/{rel} (missing)")
        elif deep and rel in shas and sha256_bytes(read_bytes(cdir / rel)) != shas[rel]:
            problems.append(f"{shown}/{rel} (edited: its sha256 differs from the one verdict.json recorded)")
    for rel in sorted(present - set(required)):
        problems.append(f"{shown}/{rel} (not part of the run-dir contract)")
    # internal consistency: the verdict is the rollup of what the record holds (a record this
    # process rolled up itself and did not re-read needs no second roll-up)
    if mine:
        expected = rec.get("verdict")
    elif rec.get("verdict") == SKIPPED or rec.get("skip_reason"):
        expected = SKIPPED
    elif rec.get("repeats"):
        expected = fold_repeats([r.get("verdict") for r in rec["repeats"]])
    elif rec.get("simulated"):
        expected = simulated_verdict(rec.get("layers") or {}, (rec.get("simulator") or {}).get("outcome"))
    elif rec.get("multi_turn"):
        expected = conversation_verdict(rec.get("layers") or {}, turns_sent=int(rec.get("turns_sent") or 0),
                                        turns_total=int(rec.get("turns_total") or 0),
                                        failed_turn=rec.get("failed_turn"))
    else:
        expected = case_verdict(rec.get("layers") or {}, skipped=False)
    if rec.get("verdict") != expected:
        problems.append(f"{shown}/verdict.json (edited: verdict {rec.get('verdict')!r} is not the rollup "
                        f"{expected!r} of its layers/repeats)")
    if rec.get("multi_turn") and rec.get("sent") is not False and deep:
        _check_turns(cdir, shown, rec, problems)
    for r in rec.get("repeats") or []:
        try:
            rv = read_json(cdir / "repeats" / str(r.get("n")) / "verdict.json")
        except (OSError, ValueError, SymlinkError):
            continue  # already named as missing above
        if not isinstance(rv, dict) or not isinstance(r, dict) or rv.get("verdict") != r.get("verdict"):
            problems.append(f"{shown}/repeats/{r.get('n')}/verdict.json (disagrees with the case's repeats list)")
    return rec


def _check_turns(cdir: Path, shown: str, rec: dict, problems: list[str]) -> None:
    """--verify over a conversation's turn tree: each turn's verdict is the roll-up of its layers
    and the one the case lists, and the case's layers are the merge of its turns' layers."""
    turn_layers = []
    for t in rec.get("turns") or []:
        n = t.get("n")
        try:
            tv = read_json(cdir / "turns" / str(n) / "verdict.json")
        except (OSError, ValueError):
            continue  # already named as missing above
        layers = tv.get("layers") if isinstance(tv.get("layers"), dict) else {}
        turn_layers.append((n, layers))
        if tv.get("verdict") != t.get("verdict") or tv.get("verdict") != case_verdict(layers, skipped=False):
            problems.append(f"{shown}/turns/{n}/verdict.json (edited: its verdict is not the roll-up of its layers "
                            "or disagrees with the case's turns list)")
    if len(turn_layers) == len(rec.get("turns") or []) and turn_layers:
        merged = merge_turn_layers(turn_layers)
        mine = {k: (v or {}).get("verdict") for k, v in (rec.get("layers") or {}).items()}
        if rec.get("simulated"):   # a simulated user's case layers are its end state; only liveness is merged
            merged = {k: v for k, v in merged.items() if k in SIMULATED_TURN_LAYERS}
            mine = {k: v for k, v in mine.items() if k in SIMULATED_TURN_LAYERS}
        if {k: v.get("verdict") for k, v in merged.items()} != mine:
            problems.append(f"{shown}/verdict.json (edited: its layers are not the merge of its turns' layers)")


def _check_jsonl(out: Path, rel: str, expected: list[dict], problems: list[str], name) -> None:
    path = out / rel
    if not path.is_file():
        return
    rows = _jsonl(path)
    if rows is None:
        problems.append(f"{rel} (unreadable)")
        return
    if rows == expected:
        return
    by_id = {}
    for row in expected:
        by_id.setdefault(row.get("case_id"), []).append(row)
    detail = f"{len(rows)} row(s), the case dirs give {len(expected)}"
    for row in rows:
        cid = row.get("case_id") if isinstance(row, dict) else None
        cid = cid if isinstance(cid, str) else None
        if cid not in by_id or row not in by_id[cid]:
            detail = (f"{name(cid)} disagrees with its verdict.json" if cid in by_id
                      else "a row for a case with no finished case dir")
            break
    problems.append(f"{rel} ({detail})")


def _check_results(results: Any, manifest: dict, records: list[dict], problems: list[str], schemas: bool,
                   run_status: str | None = None) -> None:
    if results is None:
        return  # named as missing above
    bad = _schema_problem(results, "results", schemas)
    if bad:
        problems.append(f"results.json ({bad})")
        return
    if results.get("run_id") != manifest.get("run_id"):
        problems.append("results.json (run_id differs from manifest.yaml)")
    recount = summarize(records, status="ok", missing_artifacts=[])
    summary = results.get("summary") or {}
    diff = [key for key in COUNT_KEYS if summary.get(key) != recount.get(key)]
    if diff:
        problems.append(f"results.json (summary {', '.join(diff)} disagree with a recount from the case dirs)")
    if results.get("cases") != derived.results_rows(records):
        problems.append("results.json (cases rows disagree with the case dirs)")
    stopped = results.get("stopped_early")
    if (run_status == STOPPED_FAIL_FAST) != isinstance(stopped, dict):
        problems.append("results.json (status stopped_fail_fast and `stopped_early` go together)")
    elif isinstance(stopped, dict) and stopped.get("not_run") != len(manifest.get("cases") or []) - len(records):
        problems.append("results.json (stopped_early.not_run disagrees with the plan's cases never finished)")


def _why(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8"
    if isinstance(exc, OSError):
        return exc.strerror or type(exc).__name__
    return str(exc)[:120]


def _check_runlog(path: Path, problems: list[str]) -> None:
    if not path.is_file():
        return
    try:
        for line in read_bytes(path).decode("utf-8").splitlines():
            if line.strip():
                loads(line)
    except (UnicodeDecodeError, ValueError):
        problems.append("run.log (a line is not JSON)")
    except OSError as exc:
        problems.append(f"run.log (unreadable: {_why(exc)})")
