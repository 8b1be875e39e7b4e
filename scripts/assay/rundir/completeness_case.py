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
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..core import casestore
from ..core.jsonio import loads, read_json, sha256_bytes
from ..core.writer import SymlinkError, read_bytes
from ..core.vocab import SKIPPED
from ..schemas import iter_errors
from ..score.rollup import (SIMULATED_TURN_LAYERS, case_verdict, conversation_verdict, fold_repeats,
                            merge_turn_layers, simulated_verdict)
from . import derived
from .artifacts import required_case_files

if TYPE_CHECKING:
    from .streamed import Finished

SYMLINK_PROBLEM = "a symlink: a run directory holds none, and nothing is read through one"


def _schema_problem(doc: Any, name: str, enabled: bool = True) -> str | None:
    if not enabled:
        return None
    errors = iter_errors(doc, name)
    if not errors:
        return None
    e = errors[0]
    return f"does not match the {name} schema at {e['key']}: {e['message']}"


class _VerdictSchema:
    """--verify's JSON Schema pass over every verdict.json: the envelope (with `layers` taken as any
    object) through the yes/no check, then each layer against `$defs/layer` (compiled, its answer
    memoized by the values of the few keys it reads, `_reads`; with jsonschema instead, cached by
    its canonical JSON: most layers of a run are the same few objects). Only a yes/no: any doc found invalid goes through the full validation, so
    the problem reported is exactly the full one's. Falls back to the full validation for every
    doc when the schema's `layers` part is not the shape this relies on.
    """

    CACHE_MAX = 20000

    def __init__(self) -> None:
        import copy

        from ..schemas import load_schema
        schema = load_schema("verdict")
        layers = (schema.get("properties") or {}).get("layers") or {}
        props = layers.get("properties") or {}
        layer_def = (schema.get("$defs") or {}).get("layer")
        self.names = frozenset(props)
        # the layers every verdict has; the agent layers (skills, files, check, permissions) are
        # optional, so runs written before them stay valid
        self.required = frozenset(layers.get("required") or ())
        self.ok = (set(layers) == {"type", "additionalProperties", "required", "properties"}
                   and layers["type"] == "object" and layers["additionalProperties"] is False
                   and self.required <= self.names
                   and all(v == {"$ref": "#/$defs/layer"} for v in props.values())
                   and isinstance(layer_def, dict) and "$ref" not in json.dumps(layer_def)
                   and json.dumps(schema).count('"$ref"') == len(props))
        if not self.ok:
            return
        envelope = copy.deepcopy(schema)
        envelope["properties"]["layers"] = {"type": "object"}
        layer_schema = {"$schema": schema.get("$schema"), **layer_def}
        self.cache: dict[str, bool] | None = {}
        from ..schemas.fast import Compiler, Unsupported
        try:  # the yes/no check without jsonschema (assay.schemas.fast), else jsonschema's
            compiler = Compiler(load_schema)
            self.envelope_valid = compiler.compile("verdict", envelope)
            self.layer_valid = compiler.compile("verdict", layer_schema)
            self.cache = None   # a compiled layer check needs no cache keyed by the whole layer
            reads = _reads(layer_schema)
            if reads is not None:   # its answer is a function of a few keys: memoized by their values
                self.by_value, self.by_presence = tuple(sorted(reads[0])), tuple(sorted(reads[1] - reads[0]))
                self.memo: dict[tuple, bool] = {}
            return
        except Unsupported:
            pass
        import jsonschema
        cls = jsonschema.validators.validator_for(schema)
        self.envelope_valid = cls(envelope, format_checker=cls.FORMAT_CHECKER).is_valid
        self.layer_valid = cls(layer_schema, format_checker=cls.FORMAT_CHECKER).is_valid

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
        if not isinstance(layers, dict) or not self.required <= set(layers) <= self.names \
                or not self.envelope_valid(rec):
            return False
        if self.cache is None:
            memo = getattr(self, "memo", None)
            for layer in layers.values():
                key = self._key(layer) if memo is not None else None
                if key is None:
                    if not self.layer_valid(layer):
                        return False
                    continue
                ok = memo.get(key)
                if ok is None:
                    if len(memo) >= self.CACHE_MAX:
                        memo.clear()
                    ok = memo[key] = bool(self.layer_valid(layer))
                if not ok:
                    return False
            return True
        for layer in layers.values():
            key = json.dumps(layer, sort_keys=True, ensure_ascii=False, allow_nan=True)
            ok = self.cache.get(key)
            if ok is None:
                if len(self.cache) >= self.CACHE_MAX:
                    self.cache.clear()
                ok = self.cache[key] = self.layer_valid(layer)
            if not ok:
                return False
        return True


    def _key(self, layer: Any) -> tuple | None:
        """What the layer check reads of `layer` (see `_reads`): the values of the keys its
        `properties` name (each with its type: True == 1 in a dict key) and whether the keys its
        `required` lists are present. None (check it directly) when a value is not a plain scalar."""
        if not isinstance(layer, dict):
            return None
        values = tuple(map(layer.get, self.by_value, repeat(_ABSENT)))
        types = tuple(map(type, values))
        if not _SCALARS.issuperset(types):
            return None
        return values, types, tuple(map(layer.__contains__, self.by_presence))


class _Absent:
    """A key the layer does not have (its own type in the memo key)."""


_ABSENT = _Absent()
_SCALARS = frozenset({str, int, float, bool, type(None), _Absent})
# keywords whose answer on an object depends only on the keys `properties` and `required` name
_BY_KEYS = frozenset({"type", "required", "properties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
                      "description", "title", "$comment", "$schema"})


def _reads(schema: Any) -> tuple[set[str], set[str]] | None:
    """(names whose values an object's validity reads, names whose presence it reads) for a schema
    built only of `_BY_KEYS` at the object level (a `properties` subschema may read its value in any
    way: the value is the memo key); None for any other schema (it may read every key)."""
    if isinstance(schema, bool):
        return set(), set()
    if not isinstance(schema, dict) or not set(schema) <= _BY_KEYS:
        return None
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, dict) or not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return None
    values, present = set(props), set(required)
    subs = [*(schema.get("allOf") or []), *(schema.get("anyOf") or []), *(schema.get("oneOf") or []),
            *(schema[k] for k in ("not", "if", "then", "else") if k in schema)]
    for sub in subs:
        got = _reads(sub)
        if got is None:
            return None
        values |= got[0]
        present |= got[1]
    return values, present


def journal_cases(store: casestore.CaseStore, index_of: Mapping[str, int], name: Callable[[str], str],
                  problems: list[str], deep: bool, known: Mapping[str, dict] | None,
                  verdict_schema: "_VerdictSchema | None", records: "Finished") -> list[str]:
    """The journal's case records into `records` (rundir.streamed.Finished, by plan index); returns
    the finished ids.
    A `known` record (the runner's own, not --verify) is not re-parsed: its committed line is
    there, and the runner composed that line from exactly these artifacts in one append."""
    journal = casestore.JOURNAL
    if store.layout == "none":
        return []
    if store.torn:
        problems.append(f"{journal} (a torn last record: {store.torn} byte(s) after the last newline, a write "
                        "cut short; it is not a case, and --resume drops it)")
    for n in store.garbled[:20]:
        problems.append(f"{journal} (line {n} is not a case record)")
    for cid in store.duplicates:
        problems.append(f"{name(cid) if cid in index_of else 'cases/' + cid} (recorded twice in {journal})")
    found: list[str] = []
    for offset, line in casestore.iter_lines(store.run_dir / journal):
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
        if got is not None:
            records.add(index_of[cid], derived.slim(got, share=False))
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
                records.add(index_of[entry], derived.slim(rec, share=False))
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
