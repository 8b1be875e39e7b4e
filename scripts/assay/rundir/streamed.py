"""The completeness check at any size: what it reads is folded or walked, never held whole.

- `Finished`: the finished cases' records by plan index, each folded into the counts
  (stats.tally, as the runner folds them) and its derived rows' JSON lines kept on disk in plan
  order (rundir.spill), so a 100,000-case `--verify` holds a few bytes per case, not every record.
- `same_lines`: a derived JSONL file against those lines (in blocks), read as it streams: a line whose bytes
  are the expected line's is equal without a parse; any other line is parsed and compared as
  `completeness._same_rows` always did (so the answer is the same, only faster).
- `CasesFile`: manifest.yaml or results.json, whose one big key is `cases`, walked one case row
  at a time when it is big (WALK_ABOVE; core.runplan's reader): the top-level keys kept, each row validated against the
  schema's `cases.items` and handed on. Anything the walk does not take as plainly valid (a file
  it cannot walk, a row the yes/no check refuses) is parsed whole and checked exactly as before,
  so every problem is worded as it always was. The rows go to rundir.caserows.Rows (in bulk, or
  results.json's by their text against the expected lines: the same answers, sooner).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..core import casestore, writer
from ..core.jsonio import MAX_DEPTH, loads, plain_loads, too_deep
from ..core.runplan import read_plan_text
from ..score.hollow import layer_verdicts
from ..score.layershape import layer_shape
from ..stats.tally import Tally
from .artifacts import routing_scorable
from .caserows import END as _END, Rows, free_string, plain as _plain
from .rowline import line_of  # one JSONL line as the runner writes it: sorted keys, UTF-8
from .spill import PlanLines

# A manifest.yaml or results.json longer than this (characters; ~40,000 case rows) is walked one case row
# at a time; a shorter one is parsed whole (faster, and small enough to hold).
WALK_ABOVE = 16 << 20

_FILES = ("verdicts", "stats", "results", "repeats", "routing")


class Finished:
    """The finished cases of the run being checked (see the module docstring). `len()` is how many.

    `add(index, record)` folds a record read from the run dir; `mark(index)` takes the runner's own
    record (derived.KNOWN) without reading it, `fill(index, record)` folds it later if a comparison
    needs it. `keep=True` also holds the records (the callers that read them back: the shard merge),
    a read record as its slim copy (derived.slim), the runner's own as they are."""

    def __init__(self, ids: list[str], *, keep: bool = False, directory: Path | None = None) -> None:
        self.ids = ids                  # the plan's case ids (index -> id), for the holdout seal
        self.n = len(ids)
        self.keep = keep
        self.held: dict[int, dict] = {}
        self.tally = Tally()
        self.count = 0                  # finished cases: folded or marked
        self.mine = 0                   # of them, records the caller's `known` mapping handed over itself
        self.marked = 0                 # of them, derived.KNOWN markers not folded (yet)
        self.routing = False            # run_conditions' "routing": a non-canary routing-scorable record
        self._routing_holdout = False   # a holdout case's routing row: its id is sealed by plan order
        self._holdout = bytearray(self.n)
        self._state = bytearray(self.n)   # 0 none, 1 folded, 2 marked
        self._dir = directory
        self._spills: dict[str, PlanLines] | None = None
        self._rows: Any = None          # rundir.derived, once a record is folded (its row builders)
        self._shaped: Any = None        # rundir.shaped.ShapedLines: the three derived lines of a record

    def __len__(self) -> int:
        return self.count

    # ------------------------------------------------------------------ filling
    def mark(self, index: int) -> None:
        self._state[index] = 2
        self.count += 1
        self.marked += 1

    def add(self, index: int, record: dict, *, mine: bool = False) -> None:
        self._state[index] = 1
        self.count += 1
        self.mine += 1 if mine else 0
        self._fold(index, record, mine)

    def fill(self, index: int, record: dict) -> None:
        """A marked case's record, folded now (its count was taken by `mark`)."""
        if self._state[index] == 2:
            self._state[index] = 1
            self.marked -= 1
            self._fold(index, record, True)

    def _fold(self, index: int, record: dict, mine: bool) -> None:
        got = record.get("layers")
        verdicts = shape = None
        if type(got) is dict:   # read once, for every fold below
            verdicts = layer_verdicts(got)
            shape = layer_shape(got, verdicts)
        self.tally.add(index, record, verdicts, shape)
        if self._spills is None:
            from . import derived   # imported once a record is folded (not per record: ~0.7 us each)
            from .shaped import ShapedLines
            self._rows, self._shaped = derived, ShapedLines()
            self._spills = {name: PlanLines(self._dir, self.n) for name in _FILES}
        s, d = self._spills, self._rows
        vline, sline, rline = self._shaped.lines(record, verdicts, shape)   # from its shape's template
        s["verdicts"].add(index, vline)
        if sline is not None:
            s["stats"].add(index, sline)
        if record.get("holdout"):
            self._holdout[index] = 1
        else:
            s["results"].add(index, rline)
        reps = d.repeat_rows(record)
        if reps:
            s["repeats"].add(index, b"".join(line_of(r) for r in reps))
        if not record.get("canary") and routing_scorable(record):
            self.routing = True
            if record.get("holdout"):
                self._routing_holdout = True
            s["routing"].add(index, self._shaped.routing(record))   # line_of(routing_row(record, {})), templated
        if self.keep:
            self.held[index] = record if mine else d.slim(record, share=False)

    # ------------------------------------------------------------------ reading back
    def records(self) -> list[dict]:
        """The held records in plan order (`keep=True`)."""
        if not self.keep:
            raise TypeError("the completeness check kept no records: call check_run_dir(..., records=True)")
        return [self.held[i] for i in sorted(self.held)]

    def lines(self, name: str) -> Iterator[bytes]:
        """One derived file's expected lines in plan order (verdicts, stats, results, repeats, routing)."""
        if self._spills is None:
            return
        if name == "routing" and self._routing_holdout:
            yield from (line_of(row) for row in self.rows("routing"))
            return
        yield from self._spills[name].lines()

    def blocks(self, name: str) -> Iterator[bytes]:
        """The same lines in blocks of whole lines (the spill's buckets; the sealed routing rows one by one)."""
        if self._spills is None:
            return
        if name == "routing" and self._routing_holdout:
            yield from self.lines(name)
            return
        yield from self._spills[name].chunks()

    def rows(self, name: str) -> Iterator[dict]:
        """The same, parsed (routing rows with holdout ids sealed as `<holdout #i>`, in plan order)."""
        if self._spills is None:
            return
        sealed = self._sealed() if name == "routing" and self._routing_holdout else None
        for raw in self._spills[name].lines():
            row = plain_loads(raw)
            if sealed is not None:
                row["case_id"] = sealed.get(row["case_id"], row["case_id"])
            yield row

    def _sealed(self) -> dict[str, str]:
        """routing_files.sealed_ids over the finished records: holdout ids by their plan order."""
        out: dict[str, str] = {}
        for i in range(self.n):
            if self._holdout[i] and self._state[i] == 1:
                out[self.ids[i]] = f"<holdout #{len(out) + 1}>"
        return out

    def close(self) -> None:
        for spill in (self._spills or {}).values():
            spill.close()
        self._spills = None


# --------------------------------------------------------------------- a JSONL file
def same_lines(path: Path, expected: Iterable[bytes]) -> bool:
    """True when the file's rows are exactly the rows of `expected` (canonical lines, given in blocks
    of one or more whole lines: `Finished.blocks`), as completeness._same_rows answers: False on any
    doubt (a link, a line that is not one JSON line, a last line with no newline). A byte-equal line
    of a plain block is equal; any other line is parsed."""
    if path.is_symlink():
        return False
    plain = [False]
    want_iter = _lines(expected, plain)
    want = next(want_iter, _END)
    end = 0
    for offset, raw in casestore.iter_lines(path):
        end = offset + len(raw)
        if want is not _END and raw == want and plain[0]:
            want = next(want_iter, _END)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        if not line.strip():
            continue
        if len(line.splitlines()) != 1:
            return False
        try:
            row = loads(line)
        except ValueError:
            return False
        if want is _END or row != plain_loads(want):
            return False
        want = next(want_iter, _END)
    try:
        return want is _END and end == path.stat().st_size
    except OSError:
        return False


def _lines(blocks: Iterable[bytes], plain: list[bool]) -> Iterator[bytes]:
    """Each line of each block, `plain[0]` saying whether caserows.plain holds for the line's block
    while it is yielded. That is one search per block, and it holds for each of the block's lines:
    none of the patterns plain searches for (a surrogate escape, NaN, Infinity, U+0085, U+2028,
    U+2029 in UTF-8) has a newline byte in it, so no match spans two lines, and a block with no
    match and ASCII (or no separator) has none in any of its lines. A line of a block that is not
    plain is parsed (the same answer, only slower)."""
    for block in blocks:
        plain[0] = _plain(block)
        start, size = 0, len(block)
        while start < size:
            nl = block.index(b"\n", start)
            yield block[start:nl + 1]
            start = nl + 1


# --------------------------------------------------------------------- manifest.yaml, results.json
def _decomposable(schema: Mapping[str, Any]) -> dict | None:
    """The `cases.items` schema when validity splits per row: the document is valid iff the document
    with only its first row is, and every other row is valid against `items`. True when nothing but
    `properties.cases` constrains `cases` and that says only type array, items, minItems <= 1."""
    if not set(schema) <= {"$schema", "$id", "$comment", "title", "description", "type", "required", "properties",
                           "$defs", "additionalProperties"}:
        return None
    cases = (schema.get("properties") or {}).get("cases")
    if not isinstance(cases, dict) or cases.get("type") != "array" or not isinstance(cases.get("items"), dict):
        return None
    if not set(cases) <= {"type", "items", "minItems", "title", "description", "$comment"}:
        return None
    if cases.get("minItems", 0) not in (0, 1):
        return None
    return cases["items"]


class CasesFile:
    """A JSON file whose `cases` array is walked, not held (see the module docstring).

    `head`: its top-level keys (with `cases` too when it is not an array). `whole`: the document
    parsed whole, when the walk could not take it (then every question is answered from it).
    `take(row)` sees each case row; `expected()` (results.json) gives the rows `cases` must equal
    (each a dict, or its canonical line as bytes), compared during the walk (`cases_equal`). The text is not kept.
    Raises what `jsonio.read_json` raises for a file it cannot read (OSError, ValueError)."""

    def __init__(self, path: Path, schema: str | None, take: Callable[[Any], None] | None = None,
                 expected: Callable[[], Iterable[dict]] | None = None) -> None:
        self.path, self.schema, self.take, self.expected = path, schema, take, expected
        text = writer.read_bytes(path).decode("utf-8")
        self._items = None
        free = None
        if schema is not None:
            from ..schemas import fast_checker, load_schema
            items = _decomposable(load_schema(schema))
            if items is not None and fast_checker(schema) is not None:
                free = free_string(items)
                from ..schemas.fast import Compiler, Unsupported
                try:
                    self._items = Compiler(load_schema).compile(schema, items)
                except Unsupported:
                    self._items = None
        self.whole: Any = None
        self.rows: Rows | None = None
        rows = iter(expected()) if expected is not None else None
        # a file under WALK_ABOVE is parsed whole, as it always was (C-fast, and small enough to hold)
        walked = read_plan_text(text, lambda: Rows(self._items, take, rows, free)) if len(text) > WALK_ABOVE else None
        self._rest = rows
        if walked is None:
            self.whole = loads(text)
            self.head = self.whole if isinstance(self.whole, dict) else None
            return
        self.head, self.rows = walked[0], walked[1]

    @property
    def is_object(self) -> bool:
        return isinstance(self.head, dict)

    @property
    def n_cases(self) -> int | None:
        """How many case rows (None when `cases` is not an array)."""
        if self.whole is not None:
            cases = self.whole.get("cases") if isinstance(self.whole, dict) else None
            return len(cases) if isinstance(cases, list) else None
        return self.rows.count if self.rows is not None else None

    def parse_whole(self) -> Any:
        if self.whole is None:
            self.whole = loads(writer.read_bytes(self.path).decode("utf-8"))
        return self.whole

    def schema_problem(self) -> str | None:
        """completeness_case._schema_problem of the whole document, without building it when the
        walk showed it valid (any doubt: the whole document, checked and worded as always)."""
        from .completeness_case import _schema_problem
        if self.whole is None and self._items is not None and self._valid_walked():
            return None
        return _schema_problem(self.parse_whole(), self.schema)

    def _valid_walked(self) -> bool:
        from ..schemas import fast_checker
        rows = self.rows
        if rows is not None and not rows.valid:
            return False
        doc = dict(self.head) if rows is None else dict(self.head, cases=[] if rows.first is _END else [rows.first])
        try:
            return too_deep(doc, MAX_DEPTH) is None and bool(fast_checker(self.schema)(doc))
        except RecursionError:
            return False

    def cases_equal(self) -> bool:
        """`doc.get("cases") == list(expected())`, from the walk (the rows were compared as read)."""
        if self.whole is not None or self.rows is None:
            doc = self.whole if self.whole is not None else self.head
            return isinstance(doc, dict) and doc.get("cases") == [plain_loads(w) if type(w) is bytes else w
                                                                  for w in self.expected()]
        return self.rows.same and next(self._rest, _END) is _END
