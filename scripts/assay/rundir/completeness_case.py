"""The completeness check of one case (`completeness.check_run_dir` walks them; contracts §5.10): one case record, from the case
journal (`cases.jsonl`, core.casestore) or from an older run's `cases/<id>/` directory.

Both layouts are checked by the same rules (`_check_record`): the verdict record (schema
with --verify), the required artifacts of the artifact table present and nothing else, with
--verify the sha256 of each one against `artifact_sha256`, the verdict as the roll-up of its
layers/repeats/turns. Problems name `cases/<id>/<artifact>` (holdout cases by index).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..core import casestore
from ..core.jsonio import loads, read_json, sha256_bytes
from ..core.writer import SymlinkError, read_bytes
from ..core.vocab import SKIPPED
from ..score.rollup import (SIMULATED_TURN_LAYERS, case_verdict, conversation_verdict, fold_repeats,
                            merge_turn_layers, simulated_verdict)
from . import derived
from .artifacts import required_case_files
from .verdict_schema import _schema_problem, _VerdictSchema

if TYPE_CHECKING:
    from .streamed import Finished

SYMLINK_PROBLEM = "a symlink: a run directory holds none, and nothing is read through one"


def journal_cases(store: casestore.CaseStore, index_of: Mapping[str, int], name: Callable[[str], str],
                  problems: list[str], deep: bool, known: Mapping[str, dict] | None,
                  verdict_schema: "_VerdictSchema | None", records: "Finished | None", *,
                  part: str = "both", lines: Iterable[tuple[int, bytes]] | None = None) -> list[str]:
    """The journal's case records into `records` (rundir.streamed.Finished, by plan index); returns
    the finished ids.
    A `known` record (the runner's own, not --verify) is not re-parsed: its committed line is
    there, and the runner composed that line from exactly these artifacts in one append.
    `part="checks"` (rundir.parallel's two processes): only each record's own checks, nothing folded;
    `lines`: the (offset, line) pairs to check, when not the whole journal (rundir.parallel.Shares)."""
    journal = casestore.JOURNAL
    if store.layout == "none":
        return []
    checks_only = part == "checks"
    if store.torn and not checks_only:
        problems.append(f"{journal} (a torn last record: {store.torn} byte(s) after the last newline, a write "
                        "cut short; it is not a case, and --resume drops it)")
    for n in [] if checks_only else store.garbled[:20]:
        problems.append(f"{journal} (line {n} is not a case record)")
    for cid in [] if checks_only else store.duplicates:
        problems.append(f"{name(cid) if cid in index_of else 'cases/' + cid} (recorded twice in {journal})")
    found: list[str] = []
    for offset, line in casestore.iter_lines(store.run_dir / journal) if lines is None else lines:
        cid, _ = casestore.head_of(line)
        if cid is None or store.offset_of(cid) != offset:
            continue
        found.append(cid)
        if cid not in index_of:
            problems.append(f"cases/{cid} (not a case of this run's plan)")
            continue
        mine = known.get(cid) if known is not None and not deep else None
        if mine is not None:
            if mine is derived.KNOWN:
                records.mark(index_of[cid])
            else:
                records.add(index_of[cid], mine, mine=True)
            continue
        rec = casestore.parse_line(line)
        if rec is None:
            problems.append(f"{name(cid)}/verdict.json (unreadable: line {len(found)} of {journal} is not JSON)")
            continue
        got = _check_record(rec.names(), lambda: rec.verdict, rec.read, cid, name(cid), problems, deep, None,
                            verdict_schema)
        if got is not None and not checks_only:
            records.add(index_of[cid], got)
    return found


def dir_cases(out: Path, index_of: Mapping[str, int], name: Callable[[str], str], problems: list[str], deep: bool,
              known: Mapping[str, dict] | None, verdict_schema: "_VerdictSchema | None",
              records: "Finished") -> list[str]:
    """An older run dir's `cases/<id>/` directories into `records`; returns the entries listed."""
    cases_dir = out / casestore.LEGACY_DIR
    present, linked = [], set()
    for e in os.scandir(cases_dir):
        present.append(e.name)
        if e.is_symlink():
            linked.add(e.name)
    present.sort()
    for entry in present:
        if entry in linked:
            problems.append(f"cases/{entry} ({SYMLINK_PROBLEM})" if entry not in index_of
                            else f"{name(entry)} ({SYMLINK_PROBLEM})")
            continue
        if entry not in index_of:
            problems.append(f"cases/{entry} (not a case of this run's plan)")
            continue
        rec = _check_case(cases_dir / entry, entry, name(entry), problems, deep,
                          None if known is None or deep else known.get(entry), verdict_schema)
        if rec is not None:
            if known is not None and rec is known.get(entry):
                records.add(index_of[entry], rec, mine=True)
            else:
                records.add(index_of[entry], rec)
    return present


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
                known: dict | None = None, verdict_schema: "_VerdictSchema | None" = None) -> dict | None:
    """One case dir of an older run. `known`: the record this process holds (not re-read)."""
    links: set[str] = set()
    present = _list_files(str(cdir), links=links)
    for rel in sorted(links):
        problems.append(f"{shown}/{rel} ({SYMLINK_PROBLEM})")
    if "verdict.json" in links:
        return None
    if "verdict.json" not in present:
        problems.append(f"{shown}/verdict.json (missing: the case never finished)")
        return None

    def load() -> Any:
        return known if known is not None else read_json(cdir / "verdict.json")

    def read(rel: str) -> bytes:
        return read_bytes(cdir / rel)
    return _check_record(present, load, read, cid, shown, problems, deep, known, verdict_schema)


def _check_record(present: set[str], load: Callable[[], Any], read: Callable[[str], bytes | None], cid: str,
                  shown: str, problems: list[str], deep: bool, known: dict | None,
                  verdict_schema: "_VerdictSchema | None") -> dict | None:
    """One case record, either layout. `deep` (--verify) adds the JSON Schema and the sha256 of
    every artifact. `known`: the record this process wrote (no second roll-up)."""
    try:
        rec = load()
    except (OSError, ValueError):
        problems.append(f"{shown}/verdict.json (unreadable)")
        return None
    if not isinstance(rec, dict):
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
        elif deep and rel in shas and sha256_bytes(read(rel) or b"") != shas[rel]:
            problems.append(f"{shown}/{rel} (edited: its sha256 differs from the one verdict.json recorded)")
    for rel in sorted(present - set(required)):
        problems.append(f"{shown}/{rel} (not part of the run-dir contract)")
    # internal consistency: the verdict is the rollup of what the record holds (a record this
    # process rolled up itself and did not re-read needs no second roll-up)
    if known is not None:
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
        _check_turns(read, shown, rec, problems)
    for r in rec.get("repeats") or []:
        rv = _doc(read, f"repeats/{r.get('n') if isinstance(r, dict) else None}/verdict.json")
        if rv is None:
            continue  # already named as missing above
        if not isinstance(rv, dict) or not isinstance(r, dict) or rv.get("verdict") != r.get("verdict"):
            problems.append(f"{shown}/repeats/{r.get('n')}/verdict.json (disagrees with the case's repeats list)")
    return rec


def _doc(read: Callable[[str], bytes | None], rel: str) -> Any:
    """An artifact parsed, or None when absent or unreadable."""
    try:
        data = read(rel)
        return loads(data.decode("utf-8")) if data is not None else None
    except (OSError, ValueError, SymlinkError, RecursionError):
        return None


def _check_turns(read: Callable[[str], bytes | None], shown: str, rec: dict, problems: list[str]) -> None:
    """--verify over a conversation's turn tree: each turn's verdict is the roll-up of its layers
    and the one the case lists, and the case's layers are the merge of its turns' layers."""
    turn_layers = []
    for t in rec.get("turns") or []:
        n = t.get("n")
        tv = _doc(read, f"turns/{n}/verdict.json")
        if not isinstance(tv, dict):
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
