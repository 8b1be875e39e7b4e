"""The plan a run executes, read once: a frozen `RunPlan` over a compact `CaseTable`.

`plan.json` is parsed and checked once, at pre-flight (`run.preflight.load_plan`, over
`plan.validate`); everything after takes this object instead of the raw dict. Its typed
fields are the plan's top-level keys the run reads, with the one definition of each default
(the effective `execution` and `scoring` blocks come from `plan.validate`, the builder).

Cases are the bulk of a big plan (~2.4 KB each as Python dicts), so the table keeps each case
as its canonical JSON bytes (compact, sorted keys: what make_plan.py writes, and what the plan's
SHA-256 is taken over) in one buffer, plus its id, its split and that text's SHA-256; a case is parsed when it is asked for (a worker taking it, a report reading
it) and dropped after. `read_plan_text` streams the cases out of the file text one at a time,
so even the parse never holds every case's dict at once.

`RunPlan` is also a read-only Mapping over the plan's top-level keys (`plan["cases"]` is the
table), so the rooms beside the run that read a plan dict (`suite.version`, `shard`, the
holdout ledger) read a `RunPlan` unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Iterator

from .jsonio import MISSING, SURROGATE_ESCAPE, bulk, canonical, fast_decode, finite_float, no_constant
from .secrets import case_env_names

_DECODER = json.JSONDecoder(parse_constant=no_constant, parse_float=finite_float)
_WS = re.compile(r"[ \t\n\r]*")                           # JSON's whitespace
_NEXT = re.compile(r"[ \t\n\r]*(?:,[ \t\n\r]*|(\]))")       # after a case row: a comma and the next row's start, or the end
_CUT = re.compile(r"\}(?=[ \t\n\r]*,[ \t\n\r]*\{)")        # where a run of object rows may end (a guess the parse proves)
CHUNK = 1 << 18   # characters of case rows a table taking rows in bulk is handed per decode


class CaseTable(Sequence):
    """The plan's cases in plan order: a Sequence of fresh dicts, parsed on demand.

    Per case it holds its canonical JSON bytes, a 32-byte digest and its id; `ids`,
    `splits`, `sha256(i)` and `canary(i)` answer without parsing."""

    __slots__ = ("_blob", "_ends", "_digests", "ids", "_splits", "_split_codes", "_index", "_closed",
                 "shaped", "env_names")

    def __init__(self) -> None:
        self._blob = bytearray()
        self._ends = array("Q")
        self._digests = bytearray()
        self.ids: list[str] = []
        self._splits: list[tuple[str, ...]] = []     # the distinct split lists, interned
        self._split_codes = array("H")
        self._index: dict[str, int] | None = None
        self._closed = False
        self.shaped = True    # every case an object with a string id and a non-empty list of string splits
        self.env_names: set[str] = set()   # secrets.case_env_names over every case, gathered at load

    @classmethod
    def of(cls, cases: Iterable[Mapping[str, Any]]) -> "CaseTable":
        table = cls()
        for case in cases:
            table.append(case)
        return table.close()

    def append(self, case: Mapping[str, Any]) -> None:
        if self._closed:
            raise TypeError("a CaseTable is read-only once built")
        text = canonical(case).encode("utf-8")
        self._blob += text
        self._ends.append(len(self._blob))
        self._digests += hashlib.sha256(text).digest()
        cid = case.get("id") if isinstance(case, Mapping) else None
        self.ids.append(cid if isinstance(cid, str) else repr(cid))
        split = case.get("split") if isinstance(case, Mapping) else None
        key = tuple(s for s in split if isinstance(s, str)) if isinstance(split, list) else ()
        if not (isinstance(cid, str) and isinstance(split, list) and split and len(key) == len(split)):
            self.shaped = False
        try:
            code = self._splits.index(key)
        except ValueError:
            code = len(self._splits)
            self._splits.append(key)
        self._split_codes.append(code)
        if isinstance(case, Mapping):
            self.env_names |= case_env_names((case,))

    def close(self) -> "CaseTable":
        self._closed = True   # no copy to bytes: at 100,000 cases that would be a second ~40 MB
        return self

    def __len__(self) -> int:
        return len(self._ends)

    def _span(self, i: int) -> tuple[int, int]:
        return (self._ends[i - 1] if i else 0), self._ends[i]

    def raw(self, i: int) -> bytes:
        start, end = self._span(i)
        return bytes(self._blob[start:end])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("case index out of range")
        return json.loads(self.raw(i))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self)):
            yield json.loads(self.raw(i))

    def split(self, i: int) -> tuple[str, ...]:
        return self._splits[self._split_codes[i]]

    def distinct_splits(self) -> list[tuple[str, ...]]:
        return list(self._splits)

    def canary(self, i: int) -> bool:
        return "canary" in self.split(i)

    def sha256(self, i: int) -> str:
        """sha256_json of case i (the hash of its canonical JSON), computed once at load."""
        return self._digests[32 * i:32 * i + 32].hex()

    def index_of(self, case_id: str) -> int | None:
        if self._index is None:
            self._index = {cid: i for i, cid in enumerate(self.ids)}
        return self._index.get(case_id)

    def heads(self) -> "CaseHeads":
        return CaseHeads(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CaseTable):
            return self._digests == other._digests
        if isinstance(other, list):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None   # type: ignore[assignment]


class CaseHeads(Sequence):
    """{"id", "split"} of every case, without parsing one (what the plan's cross-field checks read)."""

    def __init__(self, table: CaseTable) -> None:
        self._t = table

    def __len__(self) -> int:
        return len(self._t)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return {"id": self._t.ids[i], "split": list(self._t.split(i))}


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()


def read_plan_text(text: str, table: Any = None) -> tuple[dict[str, Any], CaseTable | None] | None:
    """Split plan text into (top-level keys without `cases`, the cases as a table), parsing one
    case at a time. None when the text is not a plain JSON object this reader walks (the caller
    then parses it whole with jsonio.loads, which names the problem exactly as before).
    `table`: what receives the cases instead of a CaseTable (a callable returning an object
    with `append(case)` and `close()`), e.g. a reader that keeps only their ids; see _walk_cases
    for the two faster ways a table may take rows (`append_rows`, `take_text`)."""
    if SURROGATE_ESCAPE.search(text):
        return None
    bulk(len(text))   # a big file: the faster decoder for the rows a table takes in bulk
    try:
        return _walk(text, table or CaseTable)
    except (ValueError, IndexError, RecursionError):
        return None


def _walk(text: str, make: Any = None) -> tuple[dict[str, Any], CaseTable | None] | None:
    i = _ws(text, 0)
    if text[i] != "{":
        return None
    top: dict[str, Any] = {}
    table: CaseTable | None = None
    i = _ws(text, i + 1)
    if text[i] == "}":   # an empty object: nothing may follow it (the whole-text parse names what does)
        return (top, None) if _ws(text, i + 1) == len(text) else None
    while True:
        if text[i] != '"':
            return None
        key, i = _DECODER.raw_decode(text, i)
        i = _ws(text, i)
        if text[i] != ":":
            return None
        i = _ws(text, i + 1)
        if key in top or (key == "cases" and table is not None):
            return None   # a repeated key: the whole-text parse decides
        if key == "cases" and text[i] == "[":
            table, i = _walk_cases(text, i, make or CaseTable)
        else:
            top[key], i = _DECODER.raw_decode(text, i)
        i = _ws(text, i)
        if text[i] == "}":
            break
        if text[i] != ",":
            return None
        i = _ws(text, i + 1)
    if _ws(text, i + 1) != len(text):
        return None
    return top, table


def _walk_cases(text: str, i: int, make: Any = None) -> tuple[CaseTable, int]:
    """The `cases` array from its `[` at i: each row handed to the table, in order. A table may take
    rows faster in two ways, each giving it exactly the rows the one-at-a-time walk would:
    - `append_rows(rows)`: a run of rows decoded in one call by jsonio's faster decoder. The run ends
      at a `}` followed by `, {` (_CUT), a guess: it is taken only when `[` + the run + `]` decodes,
      which proves the guess (text starting at a row that decodes as a list of values separated by
      commas is exactly those rows: a cut inside a string or a nested value leaves an unclosed string
      or bracket, which never decodes). Anything else (no faster decoder, a run it refuses: NaN, a
      number beyond a double, too deep) is walked one row at a time, as before.
    - `take_text(text, i)`: the table takes the row starting at i by its text alone and returns its
      end (None: the row is decoded and appended as usual)."""
    table = (make or CaseTable)()
    i = _ws(text, i + 1)
    if text[i] == "]":
        return table.close(), i + 1
    with_text = getattr(table, "wants_text", False)   # a table that compares each row's own text
    many = getattr(table, "append_rows", None)
    by_text = getattr(table, "take_text", None)
    scan = _DECODER.scan_once
    slow_until = i   # rows before this are walked one at a time (a run the faster decoder refused)
    while True:
        end = None
        if many is not None and i >= slow_until:
            cut = _CUT.search(text, i + CHUNK)
            if cut is None:
                many = None   # no run left to take in bulk (searched once, not once a row)
            else:
                rows = fast_decode("[" + text[i:cut.end()] + "]")
                if type(rows) is list:
                    many(rows)
                    end = cut.end()
                else:
                    slow_until = cut.end()
        elif by_text is not None:
            end = by_text(text, i)
        if end is None:
            try:
                case, end = scan(text, i)
            except StopIteration:
                raise ValueError("not a JSON value") from None
            if with_text:
                table.append(case, text[i:end])
            else:
                table.append(case)
        after = _NEXT.match(text, end)
        if after is None:
            raise ValueError("not a JSON array")
        if after.group(1):
            return table.close(), after.end()
        i = after.end()


@dataclass(frozen=True)
class RunPlan(Mapping):
    """The validated plan (plan_version 1). Build it with `run.preflight.load_plan` or
    `RunPlan.build` (plan.validate's effective blocks); never mutated after."""
    top: Mapping[str, Any]                 # every top-level key but `cases`, read-only
    cases: CaseTable
    execution: Mapping[str, Any]           # plan.validate.effective_execution: the one set of defaults
    scoring: Mapping[str, Any]             # plan.validate.effective_scoring
    sha256: str = field(default="")        # sha256_json of the whole plan, as written

    @classmethod
    def build(cls, top: Mapping[str, Any], cases: CaseTable, *, execution: Mapping[str, Any],
              scoring: Mapping[str, Any]) -> "RunPlan":
        top = {k: v for k, v in top.items() if k != "cases"}
        return cls(top=MappingProxyType(top), cases=cases, execution=MappingProxyType(dict(execution)),
                   scoring=MappingProxyType(dict(scoring)), sha256=plan_sha256(top, cases))

    # --- the typed reads (one place each) ----------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.top["run_id"]

    @property
    def mode(self) -> str:
        return self.top["mode"]

    @property
    def gate(self) -> str:
        return self.top["gate"]

    @property
    def selecting_split(self) -> str:
        return self.top["selecting_split"]

    @property
    def k(self) -> int:
        return self.top["k"]

    @property
    def adapter(self) -> Mapping[str, Any]:
        return self.top["adapter"]

    @property
    def invocation(self) -> Mapping[str, Any]:
        """adapter.invocation ({} when absent)."""
        return self.top["adapter"].get("invocation") or {}

    @property
    def capability_matrix(self) -> Mapping[str, Any]:
        return self.top["capability_matrix"]

    @property
    def paths(self) -> Mapping[str, Any]:
        return self.top.get("paths") or {}

    @property
    def manifest_extra(self) -> Mapping[str, Any]:
        return self.top.get("manifest_extra") or {}

    @property
    def dataset_version(self) -> int:
        return dataset_version_of(self.manifest_extra)

    @property
    def judge_block(self) -> Mapping[str, Any] | None:
        block = self.top.get("judge")
        return block if isinstance(block, Mapping) else None

    @property
    def shards(self) -> Mapping[str, Any] | None:
        return self.top.get("shards")

    # --- the Mapping view (top-level keys; "cases" is the table) -----------------------------
    def __getitem__(self, key: str) -> Any:
        if key == "cases":
            return self.cases
        return self.top[key]

    def __iter__(self) -> Iterator[str]:
        yield from sorted([*self.top, "cases"])

    def __len__(self) -> int:
        return len(self.top) + 1

    def with_cases(self, cases: Iterable[Mapping[str, Any]]) -> "RunPlan":
        """The same plan over other cases (a shard's): same blocks, its own hash."""
        table = cases if isinstance(cases, CaseTable) else CaseTable.of(cases)
        return RunPlan.build(self.top, table, execution=self.execution, scoring=self.scoring)


def dataset_version_of(manifest_extra: Any) -> int:
    """manifest_extra.dataset_version, 1 when unset or not an integer (the one default)."""
    v = manifest_extra.get("dataset_version", 1) if isinstance(manifest_extra, Mapping) else 1
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def plan_sha256(top: Mapping[str, Any], cases: CaseTable) -> str:
    """sha256_json({**top, "cases": cases}) without building the dict: the canonical text is
    streamed into the hash key by key, a case at a time."""
    h = hashlib.sha256()
    keys = sorted([*top, "cases"])
    h.update(b"{")
    for n, key in enumerate(keys):
        if n:
            h.update(b",")
        h.update(json.dumps(key, ensure_ascii=False).encode("utf-8") + b":")
        if key == "cases":
            h.update(b"[")
            for i in range(len(cases)):
                if i:
                    h.update(b",")
                h.update(cases.raw(i))
            h.update(b"]")
        else:
            h.update(canonical(top[key]).encode("utf-8"))
    h.update(b"}")
    return h.hexdigest()
