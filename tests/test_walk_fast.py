"""The faster walk of a big manifest.yaml / results.json (core.runplan._walk_cases, rundir.caserows.Rows):
rows decoded in bulk by the faster decoder, results.json rows taken by their text with one verdict per
shape. Each must hand over exactly what the one-row-at-a-time walk (kept here as the reference) hands
over, on hostile text too (pure, in process; the faster decoder forced on, the bulk runs made small)."""

from __future__ import annotations

import json

import pytest

from assay.core import jsonio, runplan
from assay.core.jsonio import MAX_DEPTH, too_deep
from assay.rundir import caserows
from assay.rundir.caserows import Rows
from assay.rundir.streamed import line_of

_OLD = json.JSONDecoder(parse_constant=jsonio.no_constant, parse_float=jsonio.finite_float)


def _old_ws(text, i):
    while i < len(text) and text[i] in " \t\n\r":
        i += 1
    return i


def old_walk(text):
    """The walk as it was (one row at a time, a Python whitespace loop): (top keys, rows) or None."""
    if jsonio.SURROGATE_ESCAPE.search(text):
        return None
    try:
        i = _old_ws(text, 0)
        if text[i] != "{":
            return None
        top, rows = {}, None
        i = _old_ws(text, i + 1)
        if text[i] == "}":
            return top, None
        while True:
            key, i = _OLD.raw_decode(text, i)
            i = _old_ws(text, i)
            if text[i] != ":":
                return None
            i = _old_ws(text, i + 1)
            if key in top or (key == "cases" and rows is not None):
                return None
            if key == "cases" and text[i] == "[":
                rows, i = [], _old_ws(text, i + 1)
                if text[i] == "]":
                    i += 1
                else:
                    while True:
                        row, i = _OLD.raw_decode(text, i)
                        rows.append(row)
                        i = _old_ws(text, i)
                        if text[i] == "]":
                            i += 1
                            break
                        if text[i] != ",":
                            raise ValueError
                        i = _old_ws(text, i + 1)
            else:
                top[key], i = _OLD.raw_decode(text, i)
            i = _old_ws(text, i)
            if text[i] == "}":
                break
            if text[i] != ",":
                return None
            i = _old_ws(text, i + 1)
        if _old_ws(text, i + 1) != len(text):
            return None
        return top, rows
    except (ValueError, IndexError, RecursionError):
        return None


class _Bulk(list):
    """A table taking rows one at a time or in bulk (as Rows does with no expected rows)."""
    bulk_calls = 0

    def append_rows(self, rows):
        type(self).bulk_calls += 1
        self.extend(rows)

    def close(self):
        return self


@pytest.fixture
def fast(monkeypatch):
    """The faster decoder engaged for any size, and a bulk run every few characters."""
    monkeypatch.setenv("ASSAY_FAST_JSON_ABOVE", "0")
    monkeypatch.setattr(jsonio, "_fast_tried", False)
    jsonio.bulk(0)
    if jsonio._fast is None:
        pytest.skip("msgspec (the `fast` extra) is not installed")
    monkeypatch.setattr(runplan, "CHUNK", 30)


def _row(i, **extra):
    return {"id": f"c-{i}", "set": "main", "sha256": "a" * 64, **extra}


HOSTILE_ROWS = [
    ("plain", _row(1)), ("repeated key", '{"id": "c-x", "id": "c-y", "set": "main"}'), ("NaN", '{"id": NaN}'),
    ("Infinity", '{"x": -Infinity}'), ("beyond a double", '{"x": 1e400}'), ("tiny", '{"x": 1.5e-400}'),
    ("big int", '{"x": ' + "9" * 40 + "}"), ("huge int", '{"x": ' + "9" * 5000 + "}"), ("-0.0", '{"x": -0.0}'),
    ("1 and 1.0", '{"x": 1, "y": 1.0, "z": true}'), ("non-ASCII id", _row(2, id="ça-\u2028-\U0001f600")),
    ("a cut inside a string", '{"id": "}, {\\"a\\": 1}, {", "set": "main"}'),
    ("a cut inside a nested value", '{"id": "n", "x": [{"a": 1}, {"b": 2}], "y": {"c": {}}}'),
    ("a control character", '{"id": "a\x01b"}'), ("an escaped surrogate", '{"id": "\\ud800"}'),
    ("not an object", '7'), ("a string row", '"}, {"'), ("an array row", '[{"a": 1}, {"b": 2}]'),
    ("deep", '{"x": ' + "[" * 150 + "]" * 150 + "}"), ("very deep", '{"x": ' + "[" * 3000 + "]" * 3000 + "}"),
    ("bad JSON", '{"id": }'), ("trailing comma", None), ("missing bracket", None),
]


def _texts():
    for name, bad in HOSTILE_ROWS:
        rows = [json.dumps(_row(i), indent=2) for i in range(12)]
        for at in (0, 5, 11):
            body = list(rows)
            if bad is not None:
                body[at] = bad if isinstance(bad, str) else json.dumps(bad, ensure_ascii=False)
            cases = ",\n  ".join(body)
            if name == "trailing comma":
                cases += ","
            text = '{"a": 1, "cases": [\n  ' + cases + ("\n  ]" if name != "missing bracket" else "") + ', "z": {}}'
            yield f"{name}@{at}", text


@pytest.mark.parametrize("name,text", list(_texts()), ids=lambda v: v if len(v) < 40 else None)
def test_rows_taken_in_bulk_are_the_rows_walked_one_at_a_time(fast, name, text):
    got = runplan.read_plan_text(text, _Bulk)
    want = old_walk(text)
    assert (got is None) == (want is None), name
    if got is not None:
        assert got[0] == want[0] and list(got[1]) == want[1], name
        assert repr(list(got[1])) == repr(want[1])   # -0.0, 1 vs 1.0, True vs 1 alike


def test_the_bulk_runs_are_taken(fast):
    """The fast path is not silently off: a plain big array is handed over in runs."""
    _Bulk.bulk_calls = 0
    text = json.dumps({"cases": [_row(i) for i in range(200)]}, indent=2)
    got = runplan.read_plan_text(text, _Bulk)
    assert list(got[1]) == [_row(i) for i in range(200)] and _Bulk.bulk_calls > 5


# ------------------------------------------------------------------ results rows taken by their text
def _result(i, **extra):
    return {"canary": False, "case_id": f"b-{i:03d}", "failed_layers": [], "gating": True,
            "layers": {"answer": "pass", "http": "pass"}, "verdict": "pass", **extra}


def _item_valid(row):
    """A row check that reads everything but the top-level case_id's value (which may be any string),
    nested values included: what Rows may share a verdict over."""
    return (isinstance(row, dict) and isinstance(row.get("case_id"), str) and row.get("verdict") in ("pass", "fail")
            and all(type(v) is str and v.isalpha() for v in row.get("layers", {}).values()))


def _reference(text, expected):
    """What Rows answers walked one row at a time: (count, valid, same)."""
    walked = old_walk(text)
    if walked is None:
        return None
    rows = walked[1]
    valid = all(_item_valid(r) and too_deep(r, MAX_DEPTH - 2) is None for r in rows[1:])
    same = rows == [json.loads(w) for w in expected]
    return len(rows), valid, same


def _result_texts():
    rows = [_result(i) for i in range(10)]
    lines = [line_of(r) for r in rows]
    plain = [w[:-1].decode() for w in lines]

    def doc(body):
        return '{"cases": [\n    ' + ",\n    ".join(body) + '\n  ], "k": 1}'
    yield "clean", doc(plain), lines
    for at in (1, 4, 9):
        bad_layer = _result(at, layers={"answer": "pa-ss", "http": "pass"})
        yield f"a nested value off@{at}", doc(plain[:at] + [line_of(bad_layer)[:-1].decode()] + plain[at + 1:]), \
            lines[:at] + [line_of(bad_layer)] + lines[at + 1:]
        for nested_id in ("ok", "9"):   # a nested value the check takes, and one it refuses
            nested = dict(_result(at), layers={"answer": "pass", "case_id": nested_id})
            for top in ('"case_id":"\\u0000"', f'"case_id":"b-{at}"'):
                text = line_of(nested)[:-1].decode().replace(f'"case_id": "b-{at:03d}"', top)
                yield f"the marker only nested ({nested_id}), top id {top}@{at}", \
                    doc(plain[:at] + [text] + plain[at + 1:]), lines[:at] + [text.encode() + b"\n"] + lines[at + 1:]
        ctrl = plain[at].replace(f"b-{at:03d}", f"b-\x01{at}")
        yield f"a raw control character in the id@{at}", doc(plain[:at] + [ctrl] + plain[at + 1:]), \
            lines[:at] + [ctrl.encode() + b"\n"] + lines[at + 1:]
        esc = plain[at].replace(f'"b-{at:03d}"', '"b-\\"0"')
        yield f"an escaped quote in the id@{at}", doc(plain[:at] + [esc] + plain[at + 1:]), \
            lines[:at] + [esc.encode() + b"\n"] + lines[at + 1:]
        twice = plain[at].replace('"verdict": "pass"', f'"verdict": "pass", "case_id": "b-{at:03d}"')
        yield f"the id twice@{at}", doc(plain[:at] + [twice] + plain[at + 1:]), \
            lines[:at] + [twice.encode() + b"\n"] + lines[at + 1:]
        nan = plain[at].replace('"gating": true', '"gating": NaN')
        yield f"NaN@{at}", doc(plain[:at] + [nan] + plain[at + 1:]), lines[:at] + [nan.encode() + b"\n"] + lines[at + 1:]
        yield f"a row differs from the expected@{at}", doc(plain[:at] + [plain[0]] + plain[at + 1:]), lines
        uni = line_of(_result(at, case_id=f"é-\u2028-{at}"))
        yield f"a non-ASCII id@{at}", doc(plain[:at] + [uni[:-1].decode()] + plain[at + 1:]), \
            lines[:at] + [uni] + lines[at + 1:]
    yield "one expected row short", doc(plain), lines[:-1]
    yield "one expected row more", doc(plain), lines + [lines[0]]


@pytest.mark.parametrize("name,text,lines", list(_result_texts()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else None)
def test_rows_taken_by_their_text_answer_as_rows_walked_one_at_a_time(fast, name, text, lines):
    def make():
        return Rows(_item_valid, None, iter(lines), "case_id")
    got = runplan.read_plan_text(text, make)
    ref = _reference(text, lines)
    assert (got is None) == (ref is None), name
    if got is not None:
        rows = got[1]
        same = rows.same and next(rows.expected, caserows.END) is caserows.END
        assert (rows.count, rows.valid, same) == ref, name


def test_rows_are_taken_by_their_text_and_one_verdict_per_shape(fast, monkeypatch):
    """The fast path is not silently off: 200 rows of one shape are checked once, never decoded."""
    calls = []
    lines = [line_of(_result(i)) for i in range(200)]
    text = '{"cases": [\n' + ",\n".join(w[:-1].decode() for w in lines) + "\n]}"

    def counted(row):
        calls.append(row)
        return _item_valid(row)
    rows = runplan.read_plan_text(text, lambda: Rows(counted, None, iter(lines), "case_id"))[1]
    assert rows.count == 200 and rows.valid and rows.same and len(calls) == 1


def test_the_free_string_is_only_a_property_checked_for_being_a_string():
    from assay.schemas import load_schema
    from assay.rundir.streamed import _decomposable
    assert caserows.free_string(_decomposable(load_schema("results"))) == "case_id"
    ok = {"type": "object", "required": ["a"], "properties": {"a": {"type": "string", "description": "d"}},
          "additionalProperties": {"type": "string"}}
    assert caserows.free_string(ok) == "a"
    for bad in (dict(ok, propertyNames={"maxLength": 3}), dict(ok, allOf=[{}]), dict(ok, type=["object", "null"]),
                dict(ok, properties={"a": {"type": "string", "pattern": "^b"}}),
                dict(ok, properties={"a": {"type": "string", "maxLength": 3}}),
                dict(ok, properties={"a": {"enum": ["x"]}}), dict(ok, dependentRequired={"a": ["b"]}),
                {k: v for k, v in ok.items() if k != "type"}):
        assert caserows.free_string(bad) is None, bad


def _depth_texts():
    yield from _texts()
    for depth in (MAX_DEPTH - 3, MAX_DEPTH - 2, MAX_DEPTH - 1):   # a row nesting up to the limit, at it, past it
        for at in (0, 5, 11):
            body = [json.dumps(_row(i), indent=2) for i in range(12)]
            body[at] = '{"id": "d", "x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
            yield f"depth {depth}@{at}", '{"cases": [\n  ' + ",\n  ".join(body) + "\n]}"


@pytest.mark.parametrize("name,text", list(_depth_texts()), ids=lambda v: v if len(v) < 40 else None)
def test_rows_checked_in_bulk_answer_as_rows_checked_one_at_a_time(fast, name, text):
    """Rows with no expected rows (manifest.yaml): the verdict over a bulk run is every row's."""
    def valid(row):
        return isinstance(row, dict) and isinstance(row.get("id"), str)
    seen = []
    got = runplan.read_plan_text(text, lambda: Rows(valid, seen.append, None))
    want = old_walk(text)
    assert (got is None) == (want is None), name
    if got is not None:
        rows = want[1]
        assert seen == rows and got[1].count == len(rows) and got[1].first == rows[0]
        assert got[1].valid == all(valid(r) and too_deep(r, MAX_DEPTH - 2) is None for r in rows[1:]), name


def test_the_walked_files_read_as_the_whole_document_with_the_fast_paths_on(fast, tmp_path, monkeypatch):
    """test_readers_streamed's CasesFile tests over the shipped schemas (results.json broken every way
    it tries, as rows and as canonical lines; manifest.yaml's rows), with both fast paths engaged."""
    import test_readers_streamed as streamed_tests
    for n, (name, text) in enumerate(streamed_tests.results_mutations()):
        for as_lines in (False, True):
            where = tmp_path / f"{n}-{as_lines}"
            where.mkdir()
            streamed_tests.test_a_walked_results_json_reads_and_is_worded_as_the_whole_document(
                where, monkeypatch, name, text, as_lines)
    streamed_tests.test_a_walked_manifest_takes_every_row_and_its_ids(tmp_path, monkeypatch)


@pytest.mark.parametrize("change", [{"verdict": "maybe"}, {"failed_turn": 0}, {"failed_turn": True},
                                    {"layers": {"answer": 1}}, {"canary": 0}, {"case_id": 7}, {"extra": [[[]]]},
                                    {"failed_layers": ["a", None]}, {}], ids=repr)
def test_an_off_schema_row_equal_to_its_expected_line_is_named_as_the_whole_document(fast, tmp_path, monkeypatch,
                                                                                      change):
    """results.json rows equal to the check's own lines (the rows taken by their text) yet off-schema
    (records the runner wrote so): the schema problem is the whole document's, word for word."""
    import test_readers_streamed as streamed_tests
    from assay.rundir import streamed
    from assay.rundir.completeness_case import _schema_problem
    monkeypatch.setattr(streamed, "WALK_ABOVE", 0)
    doc = streamed_tests.results_doc()
    doc["cases"] = doc["cases"] * 4
    for at in (len(doc["cases"]) // 2, len(doc["cases"]) - 1):
        doc["cases"][at] = dict(doc["cases"][at], **change)
    path = tmp_path / "results.json"
    path.write_text(streamed_tests._dump(doc), encoding="utf-8")
    lines = [line_of(r) for r in doc["cases"]]
    got = streamed.CasesFile(path, "results", expected=lambda: iter(lines))
    assert got.whole is None and got.cases_equal()   # walked, every row equal to its line
    assert got.schema_problem() == _schema_problem(jsonio.loads(path.read_text()), "results")
    assert (got.schema_problem() is None) == (change in ({}, {"extra": [[[]]]}))   # extra keys are allowed
