"""The completeness check's per-shape shortcuts give the answers of the code they stand in for
(kept here as the reference): the verdict envelope's yes/no by record shape (schemas.shapes.Shaped),
the routing line from a template (rundir.shaped.ShapedLines.routing), a derived file compared with
its expected lines one plainness search per block (rundir.streamed.same_lines), caserows.plain's
substring scans, and the spill's first write of a bucket (rundir.spill.PlanLines.flush)."""

from __future__ import annotations

import copy
import json
import random
import re
from pathlib import Path

import pytest

from test_schema_fast import Drawer, run_docs
from test_tally_fold import outcome

from assay.schemas import load_schema
from assay.schemas.fast import Compiler


# ------------------------------------------------------------------ the envelope by shape
def envelope_schema():
    envelope = copy.deepcopy(load_schema("verdict"))
    envelope["properties"]["layers"] = {"type": "object"}   # as _VerdictSchema checks it
    return envelope


class Sub(str):
    """A str subclass: never a value of an exact built-in type (the full check decides)."""


HOSTILE = [None, True, False, 0, 1, -1, 1.0, 0.5, -0.0, 0.0, float("nan"), float("inf"), 10 ** 40, "", "pass",
           "infra_incomplete", "ok", "not_collected", "\ud800", "é", "x" * 200, [], ["pass"], {}, {"a": 1},
           Sub("pass")]


def hostile_records(base: list[dict], seed: int):
    """Records near the real ones: each step changes one value (or drops, adds, retypes a key), and the
    same shape comes back with other values, so kept plans and memo answers are reused."""
    rnd = random.Random(seed)
    drawer = Drawer(rnd, "verdict")
    for i in range(900):
        rec = copy.deepcopy(rnd.choice(base))
        for _ in range(rnd.choice([0, 0, 1, 1, 2, 3])):
            op, key = rnd.randrange(6), rnd.choice(sorted(rec) + ["sent", "infra_reason", "extra", "trace"])
            if op == 0:
                rec.pop(key, None)
            elif op in (1, 2):
                rec[key] = copy.deepcopy(rnd.choice(HOSTILE))
            elif op == 3 and isinstance(rec.get("trace"), dict):
                rec["trace"][rnd.choice(["status", "collected", "reason", "trace_id", "x"])] = rnd.choice(HOSTILE)
            elif op == 4:
                rec = drawer.mutate(rec)
            else:
                rec.update(verdict="infra_incomplete", infra_reason=rnd.choice([None, "r", 1]),
                           sent=rnd.choice([True, 1, False]))
        yield rec if rnd.random() > 0.02 else dict(rec, **{"case_id": Sub("c-1")})


@pytest.fixture(scope="module")
def real_records(tmp_path_factory):
    records = [doc for name, doc in run_docs(tmp_path_factory.mktemp("shapes")) if name == "verdict"]
    # a routing-scored single-turn record as the big runs hold them (trace, digests, repeats None)
    records.append({**records[0], "trace": {"collected": False, "correlation": None, "reason": "none",
                                            "status": "not_collected", "trace_id": None},
                    "artifact_sha256": {"a.json": "0" * 64}, "repeats": None, "repeated_5xx": None})
    return records


def test_the_envelope_by_shape_answers_as_the_compiled_check(real_records):
    """schemas.shapes.Shaped (one instance: its plans and memos kept across the documents) says
    valid exactly when the full compiled check does, on real records and thousands of hostile ones
    (1 vs True vs 1.0, -0.0, NaN, big ints, str subclasses, missing, extra and retyped keys, a trace
    whose status and collected disagree, infra_incomplete with or without its reason)."""
    from assay.schemas.shapes import Shaped
    schema = envelope_schema()
    full = Compiler(load_schema).compile("verdict", schema)
    shaped = Shaped(Compiler(load_schema), "verdict", schema)
    seen = {True: 0, False: 0}
    for seed in range(3):
        for rec in hostile_records(real_records, seed):
            want = full(rec)
            assert shaped(rec) is want, json.dumps(rec, default=str)[:600]
            seen[want] += 1
    assert seen[True] > 300 and seen[False] > 300, seen
    assert len(shaped.plans) > 20 and any(plan[1] is not None for plan in shaped.plans.values() if type(plan) is tuple)
    assert shaped([]) is full([]) is False and shaped(Sub("x")) is full(Sub("x"))


class Fickle:
    """An object whose class, as isinstance asks it, is its own (never a value of an exact built-in type)."""

    def __init__(self, cls) -> None:
        self.cls = cls

    @property
    def __class__(self):
        return self.cls


def test_a_memo_never_answers_for_values_of_another_type():
    """schemas.shapes: 1, True and 1.0 are equal dict keys; a shape holds each value's type, so
    `{"k": True}` is never answered by the memo of `{"k": 1}` (and -0.0 answers as 0.0 does); an
    integer test is no type test (1.0 is one, 1.5 is not); a shape whose other keywords read only
    presences is answered once; an object isinstance sees as another class goes to the full check."""
    from assay.schemas.shapes import Shaped
    schema = {"type": "object", "properties": {"k": {"type": "integer", "minimum": 1}, "v": {"enum": ["a", 1]},
                                               "n": {"type": "integer"}, "s": {"type": ["string", "null"]}},
              "allOf": [{"if": {"properties": {"v": {"const": 1}}, "required": ["v"]}, "then": {"required": ["k"]}},
                        {"if": {"required": ["a"]}, "then": {"required": ["b"]}}]}
    full = Compiler(load_schema).compile("x", schema)
    shaped = Shaped(Compiler(load_schema), "x", schema)
    docs = [{"k": 1, "v": 1}, {"k": True, "v": 1}, {"k": 1.0, "v": True}, {"k": 1, "v": 1.0}, {"v": 1}, {"v": True},
            {"k": 0.0, "v": "a"}, {"k": -0.0, "v": "a"}, {"k": 2.5, "v": "a"}, {"k": 10 ** 30, "v": "a"},
            *[{"k": 1, **d} for d in ({"n": 1.0}, {"n": 1.5}, {"n": 2}, {"n": 2.0}, {"a": [1]}, {"a": [1], "b": 2},
                                      {"a": {}}, {"s": Fickle(str)}, {"s": Fickle(int)}, {"s": Fickle(type(None))},
                                      {"s": Fickle(bytes)})], {"a": [1]}, {"a": [1], "b": 2}, {"a": {}}, {"b": None}]
    answers = [full(doc) for doc in docs]
    assert answers.count(True) > 6 and answers.count(False) > 6
    for doc in docs * 2:
        assert shaped(doc) is full(doc), doc


# ------------------------------------------------------------------ the routing line's template
def test_a_routing_line_from_its_template_is_the_row_builders_line():
    """rundir.shaped.ShapedLines.routing equals line_of(routing_row(record, {})) (the reference) for
    equal-as-keys routing values (1, True, 1.0, -0.0), lists of strings or not, the sentinel's text in a
    value, odd ids (a surrogate, U+2028, non-ASCII, not a string, missing): the same line or error."""
    from assay.rundir.routing_files import routing_row
    from assay.rundir.rowline import line_of
    from assay.rundir.shaped import ShapedLines
    shaped, rnd = ShapedLines(), random.Random(5)
    values = [None, True, False, 1, 0, 1.0, -0.0, 0.0, "shifts", "\x00assay:case_id\x00", "é", ["a", "b"], ["a"], [],
              [1], [True], ["a", None], {"x": 1}, Sub("s"), [Sub("s")]]
    ids = ["c-1", "c-é", "c-\u2028", "c-\ud800", "\x00assay:case_id\x00", 7, None]
    base = {"expected": "a", "observed": "a", "acceptable": ["a"], "clarify_ok": False, "clarified": None,
            "observed_from": "response", "verdict": "pass"}
    for key, value in [(k, v) for k in ("clarify_ok", "clarified", "acceptable")   # equal as dict keys, not as text
                       for v in (1, True, 1.0, [1], [True], [1.0], ["1"], 0, False, -0.0, 0.0, [0], [False])]:
        rec = {"case_id": "c-eq", "layers": {"routing": dict(base, **{key: value})}}
        assert outcome(lambda: shaped.routing(rec)) == outcome(lambda: line_of(routing_row(rec, {}))), rec
    for i in range(3000):
        layer = {k: rnd.choice(values[:10] if rnd.random() < 0.5 else values)
                 for k in ("expected", "observed", "acceptable", "clarify_ok", "clarified", "observed_from")
                 if rnd.random() < 0.95}
        layer["verdict"] = "pass"
        rec = {"case_id": rnd.choice(ids[:2]) if rnd.random() < 0.8 else rnd.choice(ids), "layers": {"routing": layer}}
        if rnd.random() < 0.01:
            del rec["case_id"]
        want = outcome(lambda: line_of(routing_row(rec, {})))
        assert outcome(lambda: shaped.routing(rec)) == want, rec
    assert len([p for p in shaped._routes.values() if p is not None]) > 50


# ------------------------------------------------------------------ same_lines in blocks, plain
_REFUSED = re.compile(rb"\\ud|NaN|Infinity")   # caserows.plain's first test before (the reference)


def old_plain(raw: bytes) -> bool:
    from assay.rundir.caserows import _SPLIT
    return _REFUSED.search(raw) is None and (raw.isascii() or _SPLIT.search(raw) is None)


def test_plain_answers_as_its_regex_did():
    from assay.rundir.caserows import plain
    parts = [b"\\", b"u", b"d", b"D", b"N", b"a", b"I", b"nfinity", b"NaN", b"\\ud8", b"\xc2\x85", b"\xe2\x80\xa8",
             b"\xe2\x80", b"\xa9", b"\n", b"\"", b"x", "é".encode()]
    rnd = random.Random(2)
    for _ in range(20000):
        raw = b"".join(rnd.choice(parts) for _ in range(rnd.randint(0, 8)))
        assert plain(raw) is old_plain(raw), raw


def old_same_lines(path: Path, expected) -> bool:
    """rundir.streamed.same_lines before blocks: plainness searched line by line (the reference)."""
    from assay.core import casestore
    from assay.core.jsonio import loads, plain_loads
    if path.is_symlink():
        return False
    want_iter, end = iter(expected), 0
    want = next(want_iter, None)
    for offset, raw in casestore.iter_lines(path):
        end = offset + len(raw)
        if want is not None and raw == want and old_plain(raw):
            want = next(want_iter, None)
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
        if want is None or row != plain_loads(want):
            return False
        want = next(want_iter, None)
    return want is None and end == path.stat().st_size


def test_same_lines_in_blocks_answers_as_line_by_line(tmp_path):
    """A block that is not plain (one line with NaN, a surrogate escape, U+2028 or U+0085 among plain
    ones) has its lines parsed; the answer is the line-by-line one on equal, changed, reordered,
    reformatted, missing and extra rows, in blocks of every size."""
    from assay.rundir.rowline import line_of
    from assay.rundir.streamed import same_lines
    rnd = random.Random(4)
    odd = ["c-ok", "c-\u2028", "c-\x85", "NaN", "\\ud800", "c-é", "Infinity"]
    path = tmp_path / "d.jsonl"
    answers = set()
    for trial in range(400):
        rows = [{"case_id": rnd.choice(odd) if rnd.random() < 0.1 else f"c-{i}", "v": rnd.choice([1, True, "x"])}
                for i in range(rnd.randint(0, 12))]
        lines = [line_of(r) for r in rows]
        if rnd.random() < 0.1 and lines:
            lines[rnd.randrange(len(lines))] = b'{"case_id": "c-0", "x": NaN}\n'
        got = list(lines)
        change = rnd.randrange(6)
        if change == 1 and got:
            got[rnd.randrange(len(got))] = json.dumps(json.loads(got[0]), separators=(",", ":")).encode() + b"\n"
        elif change == 2 and got:
            got.pop(rnd.randrange(len(got)))
        elif change == 3:
            got.append(b"\n" if rnd.random() < 0.5 else b'{"case_id": "x"}\n')
        elif change == 4:
            rnd.shuffle(got)
        data = b"".join(got)
        path.write_bytes(data[:-1] if rnd.random() < 0.05 and data else data)
        size = rnd.randint(1, 5)
        blocks = [b"".join(lines[i:i + size]) for i in range(0, len(lines), size)]
        want = old_same_lines(path, lines)
        assert same_lines(path, blocks) is want, (trial, got, lines)
        answers.add(want)
    assert answers == {True, False}


# ------------------------------------------------------------------ the spill's first write
def test_a_spill_written_in_any_order_reads_back_in_plan_order(tmp_path, monkeypatch):
    """PlanLines: lines added in any order, some replaced, flushed at any point (a bucket's first write
    taking the fast path, its later writes merged) read back as the last line of each index, in order."""
    from assay.rundir import spill
    monkeypatch.setattr(spill, "BUCKET", 8)
    rnd = random.Random(6)
    for trial in range(60):
        n = rnd.randint(1, 70)
        monkeypatch.setattr(spill, "FLUSH_BYTES", rnd.choice([1, 40, 400, 1 << 20]))
        lines = spill.PlanLines(tmp_path, n)
        last: dict[int, bytes] = {}
        for _ in range(rnd.randint(0, 2 * n)):
            i = rnd.randrange(n)
            last[i] = b"" if rnd.random() < 0.05 else f"{i}:{rnd.random()}\n".encode()
            lines.add(i, last[i])
            if rnd.random() < 0.05:
                lines.flush()
        assert b"".join(lines.chunks()) == b"".join(last[i] for i in sorted(last)), trial
        lines.close()
