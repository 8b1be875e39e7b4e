"""The completeness check at any size (rundir.streamed): the records folded and spilled instead of
held, a derived file compared line by line, manifest.yaml and results.json walked one case row at a
time. Each streaming piece must answer exactly what the whole-list version answers, on clean and on
broken input (pure, in process: no run, no app)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import json
import random

import pytest

from fakeapp import app, case, make_plan, run_runner, state, write_plan  # noqa: F401 (fixtures)
from helpers import SCRIPTS, run_script
from assay.core.jsonio import loads
from assay.rundir import derived
from assay.rundir.artifacts import run_conditions
from assay.rundir.completeness_case import _schema_problem
from assay.rundir.routing_files import iter_routing_rows
from assay.rundir.streamed import CasesFile, Finished, line_of, same_lines
from assay.stats.counts import summarize


def record(i: int, verdict: str = "pass", **extra) -> dict:
    layers = {"http": {"verdict": "pass"}, "answer": {"verdict": verdict if verdict in ("pass", "fail") else "n/a"},
              "routing": {"verdict": "n/a"}}
    rec = {"case_id": f"c-{i:03d}", "verdict": verdict, "canary": False, "holdout": False, "gating": True,
           "k": 1, "layers": layers}
    rec.update(extra)
    return rec


def varied_records(n: int = 90) -> list[dict]:
    routes = ["billing", "tech", None]
    out = []
    for i in range(n):
        verdict = ("pass", "fail", "unscored", "skipped", "infra_error")[i % 5]
        r = record(i, verdict, canary=i % 17 == 0, holdout=i % 7 == 3, gating=i % 11 != 4,
                   multi_turn=True if i % 13 == 0 else None, title=f"case {i}" if i % 2 else None)
        if i % 3 == 0:
            r["layers"]["routing"] = {"verdict": ("pass", "fail")[i % 2], "expected": routes[i % 3],
                                      "observed": routes[(i * 5) % 3], "acceptable": [], "clarify_ok": False,
                                      "observed_from": "response"}
        if i % 4 == 0:
            r["layers"]["answer"] = {"verdict": "unscorable", "blocked_by": "no answer path"}
        if i % 10 == 0:
            r["repeats"] = [{"n": 1, "verdict": "pass"}, {"n": 2, "verdict": verdict}]
        out.append(derived.slim(r))
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_the_fold_and_the_spill_give_what_the_records_give(tmp_path, seed):
    """Finished, fed the records in any order, gives the counts summarize() gives over them in plan
    order, and every derived file's rows (holdout routing ids sealed by plan order)."""
    records = varied_records()
    ids = [r["case_id"] for r in records]
    fin = Finished(ids, keep=True, directory=tmp_path)
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)
    for i in order:
        fin.add(i, records[i])
    try:
        assert len(fin) == len(records) and fin.records() == records
        assert fin.tally.summary(status="ok", missing_artifacts=[]) == \
            summarize(records, status="ok", missing_artifacts=[])
        assert list(fin.rows("verdicts")) == [derived.verdict_row(r) for r in records]
        assert list(fin.rows("stats")) == [row for row in map(derived.stats_row, records) if row]
        assert list(fin.rows("results")) == derived.results_rows(records)
        assert list(fin.rows("repeats")) == [row for r in records for row in derived.repeat_rows(r)]
        routing = list(iter_routing_rows(records))
        assert routing and any(row["case_id"].startswith("<holdout #") for row in routing)
        assert list(fin.rows("routing")) == routing
        assert fin.routing is run_conditions({}, records)["routing"]
        for name in ("verdicts", "stats", "results", "repeats", "routing"):
            assert [loads(raw.decode()) for raw in fin.lines(name)] == list(fin.rows(name)), name
    finally:
        fin.close()


def test_a_check_that_keeps_no_record_says_so(tmp_path):
    fin = Finished(["c-000"], directory=tmp_path)
    fin.add(0, varied_records(1)[0])
    assert len(fin) == 1
    with pytest.raises(TypeError, match="records=True"):
        fin.records()
    fin.close()


def write_lines(path, rows, *, newline_at_end=True):
    text = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    path.write_bytes((text if newline_at_end else text.rstrip("\n")).encode("utf-8"))


def test_a_derived_file_equals_its_rows_as_the_parsed_comparison_says(tmp_path):
    """same_lines answers what parsing each line and comparing rows answered: byte-equal lines are
    equal; any other line is parsed (a reformatted line still equal, 1 == true as in Python);
    a changed, missing or extra row, a line that is two lines to str.splitlines, NaN, a lone
    surrogate escape, a last line without its newline: not equal."""
    rows = [{"case_id": f"c-{i}", "verdict": "pass", "canary": False, "layers": {"http": "pass"}} for i in range(5)]
    want = [line_of(r) for r in rows]
    path = tmp_path / "v.jsonl"
    write_lines(path, rows)
    assert same_lines(path, want)
    path.write_text("".join(json.dumps(r, indent=None, separators=(",", ":")) + "\n" for r in rows) + "\n\n")
    assert same_lines(path, want)                                   # other spacing, blank lines: same rows
    write_lines(path, rows[:2] + [dict(rows[2], canary=0)] + rows[3:])
    assert same_lines(path, want)                                   # 0 == False, as the row comparison says
    cases = {
        "changed": rows[:2] + [dict(rows[2], verdict="fail")] + rows[3:],
        "missing": rows[:4],
        "extra": rows + [rows[0]],
        "order": rows[1:] + rows[:1],
    }
    for what, got in cases.items():
        write_lines(path, got)
        assert not same_lines(path, want), what
    write_lines(path, rows, newline_at_end=False)
    assert not same_lines(path, want)
    for odd in ("c-\u2028x", "c-\x85x"):                             # str.splitlines splits the line there
        odd_rows = [dict(rows[0], case_id=odd)]
        write_lines(path, odd_rows)
        assert not same_lines(path, [line_of(r) for r in odd_rows]), repr(odd)
    path.write_text('{"case_id": "c-0", "x": NaN}\n')
    assert not same_lines(path, [b'{"case_id": "c-0", "x": NaN}\n'])
    path.write_text('{"case_id": "\\udc80"}\n')
    assert not same_lines(path, [b'{"case_id": "\\udc80"}\n'])
    link = tmp_path / "link.jsonl"
    write_lines(path, rows)
    link.symlink_to(path)
    assert not same_lines(link, want)


def results_doc(n: int = 12) -> dict:
    rows = [derived.results_row(r) for r in varied_records(n) if not r.get("holdout")]
    return {"cases": rows, "dataset_version": 1, "exit_code": 0, "finished_at": "2026-12-01T00:00:00Z",
            "gate": "soft", "harness_version": "0.1.0", "k": 1, "mode": "smoke", "run_id": "smoke-20261201T000000Z",
            "selecting_split": "smoke", "started_at": "2026-12-01T00:00:00Z",
            "summary": summarize(varied_records(n), status="ok", missing_artifacts=[])}


def _dump(doc) -> str:
    """results.json as the runner writes it: sorted keys, indented, one compact line per case row."""
    return derived.results_text({k: v for k, v in doc.items() if k != "cases"},
                                [json.dumps(r, sort_keys=True, ensure_ascii=False) for r in doc["cases"]])


def results_mutations():
    """(name, text) of results.json broken one way each: the walk must word the problem as before."""
    doc = results_doc()
    yield "valid", _dump(doc)

    def with_row(i, **change):
        d = json.loads(json.dumps(doc))
        d["cases"][i].update(change)
        return _dump(d)
    yield "a middle row's canary is a string", with_row(3, canary="yes")
    yield "the first row's verdict is unknown", with_row(0, verdict="maybe")
    yield "the last row lacks layers", _dump(dict(doc, cases=doc["cases"][:-1] + [
        {k: v for k, v in doc["cases"][-1].items() if k != "layers"}]))
    yield "a row's canary is 0", with_row(5, canary=0)
    yield "two bad rows", with_row(2, gating="no").replace('"verdict": "fail"', '"verdict": 7', 1)
    yield "summary not an object", _dump(dict(doc, summary=[]))
    yield "no cases key", json.dumps({k: v for k, v in doc.items() if k != "cases"}, sort_keys=True, indent=2)
    yield "cases not an array", json.dumps(dict(doc, cases={"a": 1}), sort_keys=True, indent=2)
    yield "empty cases", _dump(dict(doc, cases=[]))
    deep = json.loads(json.dumps(doc))
    nest: list = []
    deep["cases"][4]["extra"] = nest
    for _ in range(120):
        nest.append([])
        nest = nest[0]
    yield "a row nested too deep", json.dumps(deep, sort_keys=True)
    yield "a repeated key (the whole parse decides)", _dump(doc).replace('{\n', '{\n  "k": 2,\n', 1)
    text = _dump(doc)
    first = json.dumps(doc["cases"][1], sort_keys=True, ensure_ascii=False)
    yield "a row written unsorted and compact (equal rows, other text)", text.replace(
        first, json.dumps(dict(reversed(list(doc["cases"][1].items()))), ensure_ascii=False, separators=(",", ":")))
    yield "a row's case id escaped (equal rows, other text)", text.replace(
        f'"case_id": "{doc["cases"][2]["case_id"]}"', '"case_id": "\\u0063' + doc["cases"][2]["case_id"][1:] + '"')
    yield "a row's title edited", with_row(4, title="edited")
    yield "a row appended after the last", _dump(dict(doc, cases=doc["cases"] + [doc["cases"][0]]))
    yield "the last row dropped", _dump(dict(doc, cases=doc["cases"][:-1]))
    yield "not an object", json.dumps([doc])


@pytest.mark.parametrize("as_lines", [False, True], ids=["rows", "lines"])
@pytest.mark.parametrize("name,text", list(results_mutations()), ids=lambda v: v if len(v) < 60 else None)
def test_a_walked_results_json_reads_and_is_worded_as_the_whole_document(tmp_path, monkeypatch, name, text, as_lines):
    """CasesFile over results.json: its top-level keys, its schema problem (worded by the whole
    document's check, the same string), its rows compared with the expected ones (given as rows, or
    as the check's canonical lines: a row whose text is the line is equal unparsed): what the whole
    parse gives. (Walked whatever its size here: WALK_ABOVE 0.)"""
    from assay.rundir import streamed
    monkeypatch.setattr(streamed, "WALK_ABOVE", 0)
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    whole = loads(text)
    expected = results_doc()["cases"]
    given = [line_of(r) for r in expected] if as_lines else expected
    doc = CasesFile(path, "results", expected=lambda: iter(given))
    if not isinstance(whole, dict):
        assert not doc.is_object
        return
    assert doc.head == (whole if doc.whole is not None else
                        {k: v for k, v in whole.items() if k != "cases" or not isinstance(v, list)})
    assert doc.schema_problem() == _schema_problem(whole, "results")
    assert doc.cases_equal() is (whole.get("cases") == expected)
    if name == "valid":
        assert doc.schema_problem() is None and doc.cases_equal() and doc.whole is None   # never parsed whole
    if name == "a row's canary is 0":
        assert doc.cases_equal() and doc.schema_problem() is not None   # equal as Python sees it, yet off-schema


def test_a_walked_manifest_takes_every_row_and_its_ids(tmp_path, monkeypatch):
    from assay.rundir import streamed
    monkeypatch.setattr(streamed, "WALK_ABOVE", 0)
    rows = [{"id": f"c-{i}", "set": ("main", "holdout", "canary")[i % 3], "sha256": "a" * 64} for i in range(7)]
    base = {"cases": rows, "run_id": "r", "k": 1}
    path = tmp_path / "manifest.yaml"
    path.write_text(json.dumps(base, indent=2))
    seen = []
    doc = CasesFile(path, None, seen.append)
    assert seen == rows and doc.head == {"run_id": "r", "k": 1} and doc.n_cases == 7
    for bad in ({"id": "c-1", "set": "side", "sha256": "a" * 64}, {"id": 3, "set": "main", "sha256": "a" * 64},
                {"id": "c-1", "set": "main", "sha256": "xyz"}, "c-1"):
        for at in (0, 4, 6):
            doc_rows = rows[:at] + [bad] + rows[at + 1:]
            whole = dict(base, cases=doc_rows)
            path.write_text(json.dumps(whole, indent=2))
            got = CasesFile(path, "manifest").schema_problem()
            assert got == _schema_problem(whole, "manifest") and got is not None, (bad, at)


def test_the_row_by_row_schema_split_is_taken_only_where_it_is_sound():
    """Validity splits per row only when nothing but `properties.cases` (type, items, minItems <= 1)
    constrains the array; a schema that says more is checked whole."""
    from assay.rundir.streamed import _decomposable
    items = {"type": "object"}
    ok = {"type": "object", "properties": {"cases": {"type": "array", "minItems": 1, "items": items}}}
    assert _decomposable(ok) is items
    for bad in (dict(ok, allOf=[{}]), {"properties": {"cases": {"type": "array", "items": items, "maxItems": 3}}},
                {"properties": {"cases": {"type": "array", "items": items, "minItems": 2}}},
                {"properties": {"cases": {"type": "array", "items": items, "uniqueItems": True}}},
                {"properties": {"cases": {"type": "array"}}}):
        assert _decomposable(bad) is None, bad
    for name in ("results", "manifest"):   # the shipped ones are split (the point of the walk)
        from assay.schemas import load_schema
        assert _decomposable(load_schema(name)) is not None, name


def test_a_layer_answer_is_memoized_only_by_what_the_layer_check_reads():
    """completeness_case._VerdictSchema: a layer's yes/no answer is kept by the values of the keys
    its schema's properties name (type-exact) and the presence of those its `required` lists; any
    other key, or a value that is not a plain scalar, is never part of a shared answer."""
    from assay.rundir.verdict_schema import _VerdictSchema
    from assay.schemas.shapes import reads as _reads
    v = _VerdictSchema()
    memo = v.by_values
    assert v.ok and memo.by_value == ("verdict",) and set(memo.by_presence) == {"blocked_by", "reason"}
    layers = [{"verdict": "pass"}, {"verdict": "unscorable"}, {"verdict": "unscorable", "blocked_by": "x"},
              {"verdict": "unscored"}, {"verdict": "unscored", "reason": "r"}, {"verdict": True}, {"verdict": 1},
              {"verdict": ["pass"]}, {"verdict": "maybe"}, {}, "n/a", {"verdict": "pass", "extra": {"deep": [1]}}]
    for layer, again in itertools.product(layers, repeat=2):
        for x in (layer, again):
            assert memo(x) == bool(v.layer_valid(x)), x
    assert memo.key({"verdict": True}) != memo.key({"verdict": 1})
    assert _reads({"type": "object", "additionalProperties": False}) is None
    assert _reads({"properties": {"a": {"enum": ["x"]}}, "allOf": [{"if": {"required": ["b"]}, "then": {}}]}) == \
        ({"a"}, {"b"})


# ------------------------------------------------------------------ the other readers' parts
def test_a_big_document_written_in_pieces_is_the_same_bytes(tmp_path):
    """writer_stream.write_json_streamed (compare.json's pairs encoded one by one) writes what write_json
    writes, whatever the lists hold (text with newlines, nesting, empty buckets)."""
    from assay.core import writer
    from assay.core.writer_stream import write_json_streamed
    rng = random.Random(3)
    for trial in range(30):
        doc = {"a": 1, "z": [1, {"q": "x\ny"}], "w": {},
               "buckets": {b: [{"case_id": f"c{i}", "answer": {"changed": rng.random() < 0.5, "diff": ["é", "\n"]},
                                "list": [[], {}, [1, [2]]]} for i in range(rng.randint(0, 4))]
                           for b in ("newly_failing", "still_passing", "only_in_base")}}
        write_json_streamed(tmp_path / "s.json", doc, "buckets")
        writer.write_json(tmp_path / "w.json", doc)
        assert (tmp_path / "s.json").read_bytes() == (tmp_path / "w.json").read_bytes(), trial


def test_a_big_documents_later_items_encoded_apart_are_the_same_bytes(tmp_path):
    """write_json_streamed at APART_ABOVE items or more: the second half of the items encoded by a forked
    child (writer_stream._Apart) gives write_json's bytes wherever the half falls (inside a list, at a
    list's edge, in a list written before others by the text's order), with items the fast encoder leaves
    to the encoder; a child that raises or dies leaves its items to the writer, the same bytes; an item the
    encoder refuses (NaN) in the child's half raises as it does on one process. In a fresh process with
    no other thread (a fork is only made there)."""
    done = subprocess.run([sys.executable, "-c", _APART, str(tmp_path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(SCRIPTS)), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"apart": 21, "failed": 2 * 21, "nan": "ValueError"}


_APART = r"""
import json, os, random, sys
from pathlib import Path
from assay.core import writer, writer_stream
tmp = Path(sys.argv[1])
writer_stream.APART_ABOVE = 1
made = {"apart": 0, "failed": 0}
real_init, real_close = writer_stream._Apart.__init__, writer_stream._Apart.close
def counted(self, lists, texts):
    real_init(self, lists, texts)
    made["apart"] += self.child is not None
def closed(self):
    made["used"] = made.get("used", 0) + bool(self.sizes)   # the child's bytes were copied in
    real_close(self)
writer_stream._Apart.__init__, writer_stream._Apart.close = counted, closed
class Tup(tuple):
    pass
rng = random.Random(5)
def doc_of(sizes):
    return {"a": 1, "z": [1, {"q": "x\ny"}], "buckets": {b: [
        {"case_id": f"c{i}", "answer": {"changed": rng.random() < 0.5, "diff": ["é", "\n"]},
         "odd": Tup((1, 2)) if i % 3 == 0 else [[], {}, [1, [2]]]} for i in range(n)]
        for b, n in zip(("newly_failing", "still_passing", "only_in_base", "changed_unscored"), sizes)}}
shapes = [(1, 1, 0, 0), (2, 0, 3, 1), (0, 0, 0, 5), (4, 4, 0, 0), (1, 0, 0, 0), (3, 1, 4, 1), (0, 6, 0, 1)]
def each(how):
    for sizes in shapes:
        for _ in range(3):
            doc = doc_of(sizes)
            writer_stream.write_json_streamed(tmp / "s.json", doc, "buckets")
            writer.write_json(tmp / "w.json", doc)
            assert (tmp / "s.json").read_bytes() == (tmp / "w.json").read_bytes(), (how, sizes)
each("apart")
apart = made["apart"]
assert made.pop("used") == apart
real_later = writer_stream._Apart._encode_later
for broken in (lambda self: 1 / 0, lambda self: os._exit(3)):
    writer_stream._Apart._encode_later = broken
    each("the child failed")
writer_stream._Apart._encode_later = real_later
made["failed"] = made["apart"] - apart
assert made.pop("used") == 0
doc = doc_of((2, 2, 0, 0))
doc["buckets"]["still_passing"][1]["x"] = float("nan")
try:
    writer_stream.write_json_streamed(tmp / "n.json", doc, "buckets")
    nan = "written"
except ValueError:
    nan = "ValueError"
assert not (tmp / "n.json").exists()
print(json.dumps({"apart": apart, "failed": made["failed"], "nan": nan}))
"""


@pytest.mark.parametrize("walk_above", [0, None])
def test_results_rows_shared_and_heads_read_as_the_whole_parse(tmp_path, monkeypatch, walk_above):
    """report.rundir: results.json read with its rows' equal parts shared, its head alone, a JSONL
    file's rows shared, and split_lines: each equal to the plain whole-file reading (walked, and
    parsed whole as a file under WALK_ABOVE is)."""
    from assay.report import rundir
    from assay.rundir import streamed
    if walk_above is not None:
        monkeypatch.setattr(streamed, "WALK_ABOVE", walk_above)
    path = tmp_path / "results.json"
    for name, text in results_mutations():
        path.write_text(text, encoding="utf-8")
        try:
            whole = rundir.read_json_file(path)
        except Exception as exc:   # noqa: BLE001 - the same error either way
            with pytest.raises(type(exc)):
                rundir.read_results_file(path)
            continue
        assert rundir.read_results_file(path) == whole, name
        rundir._HEADS.clear()
        head = rundir.try_json_head(path)
        assert head == ({k: v for k, v in whole.items() if k != "cases" or not isinstance(v, list)}
                        if isinstance(whole, dict) else whole), name
    rows = [{"case_id": f"c-{i}", "verdict": "pass", "layers": {"http": "pass"}} for i in range(4)]
    jsonl = tmp_path / "v.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows) + "\n")
    shared = rundir.read_jsonl_file(jsonl, share=True)
    assert shared == rows == rundir.read_jsonl_file(jsonl) and shared[0]["layers"] is shared[3]["layers"]
    for text in ("", "\n", "a", "a\n", "a\r\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k\n\nl", "x\r\n\r\n",
                 "a\nb", "\n\n", "é\n\nü", "é\u2028x\n"):
        assert list(rundir.split_lines(text)) == text.splitlines(), repr(text)
    import random   # both of split_lines' ways (newlines only, or other breaks too) against splitlines
    rng = random.Random(7)
    parts = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "a", "é", " "]
    for _ in range(3000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 10)))
        assert list(rundir.split_lines(text)) == text.splitlines(), repr(text)
    # a JSONL file's rows: the same values and the same words for a bad or too deep line as loads(max_depth)
    from assay.core.jsonio import MAX_DEPTH, loads
    for bad in ('{"a": 1}\n{"b": NaN}\n', '{"a": "\\ud800"}\n', "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",
                '{"a": {"b": 1e400}}\n', '{"a": 1}\n\ufeff{}\n'):
        jsonl.write_text(bad, encoding="utf-8")
        last = bad.splitlines()[-1]
        try:
            loads(last, max_depth=MAX_DEPTH)
            want = None
        except ValueError as exc:
            want = f"{jsonl}:{len(bad.splitlines())}: not a JSON line ({exc})"
        try:
            rundir.read_jsonl_file(jsonl)
            got = None
        except Exception as exc:   # noqa: BLE001 -- AssayError, its words compared
            got = str(exc)
        assert got == want, bad[:40]


def test_the_depth_check_still_finds_what_it_found(tmp_path):
    from assay.core.jsonio import too_deep
    assert too_deep({"a": {"b": 1}, "c": [1, 2]}, 2) is None and too_deep([{"a": 1}], 2) is None
    assert too_deep({"a": {"b": {"c": 1}}}, 2) == "a.b" and too_deep({"a": [[1]]}, 2) == "a[0]"
    assert too_deep({"a": {"b": 1}}, 1) == "a"


def test_a_journal_line_read_by_its_head_and_lazily_is_the_same_case(tmp_path):
    from assay.core import casestore
    for cid in ("c-1", "c-" + "é" * 300, "x" * 600):
        line = casestore.record_line(cid, {"case_id": cid, "verdict": "pass"}, {"answer.txt": "ü".encode() * 400})
        assert casestore.head_of(line) == (cid, None) and casestore.head_of(line, verdict=True)[0] == cid
        a, b = casestore.parse_line(line), casestore.parse_text_line(line)
        assert (a.case_id, a.verdict, a.names(), a.read("answer.txt"), a.read("verdict.json")) == \
            (b.case_id, b.verdict, b.names(), b.read("answer.txt"), b.read("verdict.json"))
    assert casestore.head_of(b'{"case_id": ' + b'"' + b"a" * 700) == (None, None)   # never closed: not a case


# ------------------------------------------------------------------ a real run, broken, checked
def _lines(path):
    return path.read_bytes().split(b"\n")[:-1]


def _write_lines(path, lines):
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def _edit_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2, sort_keys=True))


def _edit_record(i, change):
    def edit(run):
        lines = _lines(run / "cases.jsonl")
        doc = json.loads(lines[i])
        change(doc)
        lines[i] = json.dumps(doc, ensure_ascii=False).encode()
        _write_lines(run / "cases.jsonl", lines)
    return edit


# Each break and the problems --verify names for it: the same strings, in the same order, as the
# whole-document check named before the readers were streamed (checked side by side then).
BREAKS = {
    "clean": (lambda r: None, []),
    "a verdicts.jsonl row dropped": (lambda r: _write_lines(r / "verdicts.jsonl", _lines(r / "verdicts.jsonl")[:-1]),
                                     ["verdicts.jsonl (5 row(s), the case dirs give 6)"]),
    "a verdicts.jsonl row edited": (
        lambda r: _write_lines(r / "verdicts.jsonl", [line.replace(b'"pass"', b'"fail"', 1) if i == 2 else line
                                                      for i, line in enumerate(_lines(r / "verdicts.jsonl"))]),
        ["verdicts.jsonl (cases/c-002 disagrees with its verdict.json)"]),
    "verdicts.jsonl reformatted": (
        lambda r: _write_lines(r / "verdicts.jsonl", [json.dumps(json.loads(line), separators=(",", ":")).encode()
                                                      for line in _lines(r / "verdicts.jsonl")]), []),
    "results.json summary passes + 1": (
        lambda r: _edit_json(r / "results.json", lambda d: d["summary"].update(passes=d["summary"]["passes"] + 1)),
        ["results.json (summary passes disagree with a recount from the case dirs)"]),
    "a results.json row edited": (lambda r: _edit_json(r / "results.json", lambda d: d["cases"][3].update(verdict="fail")),
                                  ["results.json (cases rows disagree with the case dirs)"]),
    "a results.json row off-schema": (
        lambda r: _edit_json(r / "results.json", lambda d: d["cases"][4].update(canary="yes")),
        ["results.json (does not match the results schema at cases[4].canary: 'yes' is not of type 'boolean')"]),
    "results.json not JSON": (lambda r: (r / "results.json").write_text("{oops"),
                              ["results.json (unreadable: Expecting property name enclosed in double quotes: "
                               "line 1 column 2 (char 1))"]),
    "a manifest row off-schema": (
        lambda r: _edit_json(r / "manifest.yaml", lambda d: d["cases"][5].update(sha256="xyz")),
        ["manifest.yaml (does not match the manifest schema at cases[5].sha256: 'xyz' does not match "
         "'^[0-9a-f]{64}$')"]),
    "a case record dropped": (
        lambda r: _write_lines(r / "cases.jsonl", [line for line in _lines(r / "cases.jsonl") if b'"c-004"' not in line]),
        ["cases/c-004/verdict.json (case never finished)",
         "verdicts.jsonl (a row for a case with no finished case dir)",
         "verdicts_for_stats.jsonl (a row for a case with no finished case dir)",
         "results.json (summary n, attempted, passes, layers disagree with a recount from the case dirs)",
         "results.json (cases rows disagree with the case dirs)"]),
    "an artifact edited": (_edit_record(1, lambda d: d["files"].update({"answer.txt": "changed"})),
                           ["cases/{c1}/answer.txt (edited: its sha256 differs from the one verdict.json recorded)"]),
    "a layer off-schema": (_edit_record(0, lambda d: d["verdict"]["layers"]["http"].update(verdict="maybe")),
                           ["cases/{c0}/verdict.json (does not match the verdict schema at layers.http.verdict: 'maybe' "
                            "is not one of ['pass', 'fail', 'n/a', 'unscorable', 'unscored', 'error', 'infra_error', "
                            "'infra_incomplete'])",
                            "verdicts.jsonl (a row for a case with no finished case dir)",
                            "verdicts_for_stats.jsonl (a row for a case with no finished case dir)",
                            "results.json (summary n, attempted, passes, layers disagree with a recount from the case dirs)",
                            "results.json (cases rows disagree with the case dirs)"]),
    "a stray file": (lambda r: (r / "stray.txt").write_text("x"), ["stray.txt (not part of the run-dir contract)"]),
}


def test_a_broken_run_is_named_as_before(app, state):
    """One real 6-case run, broken one way at a time: `run_cases.py --verify`'s problems (the
    streamed check) are exactly the strings the whole-document check gave, in order; the count of
    finished cases and the exit code as before. The same check on two processes (rundir.parallel,
    forced at this size, with the faster decoder of big reads forced too: core.jsonio.bulk) gives the
    same strings: from its own fold when no record is broken, from the one-process check it falls
    back to when one is."""
    import shutil

    record_breaks = {"an artifact edited", "a layer off-schema"}
    runs = {}

    plan = make_plan(state, [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}})
                             for i in range(6)], app_url=app.url)
    out = state / "reports" / plan["run_id"]
    r = run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never")
    assert r.rc == 0, r.stdout
    order = [json.loads(line)["case_id"] for line in _lines(out / "cases.jsonl")]   # journal order: finish order
    for name, (brk, want) in BREAKS.items():
        run = runs[name] = state / "reports" / f"broken-{len(runs)}" / plan["run_id"]
        shutil.copytree(out, run)
        brk(run)
        got = run_script("run_cases.py", "--verify", str(run))
        want = [w.replace("{c0}", order[0]).replace("{c1}", order[1]) for w in want]
        problems = json.loads(got.stdout).get("missing_artifacts") if got.stdout.strip() else None
        assert (got.rc, problems) == ((6, want) if want else (0, [])), (name, got.stdout[-800:])
        runs[name] = (run, want)
    # the check on two processes, forced at this size, in one process with no other thread (as a CLI is)
    checked = subprocess.run([sys.executable, "-c", _CHECK_EACH, *(str(run) for run, _ in runs.values())],
                             capture_output=True, text=True, env=dict(os.environ, ASSAY_CHECK_FORK_ABOVE="0",
                                                                      ASSAY_FAST_JSON_ABOVE="0",
                                                                      PYTHONPATH=str(SCRIPTS)), timeout=600)
    assert checked.returncode == 0, checked.stderr[-2000:]
    for (name, (_run, want)), (problems, how, fast) in zip(runs.items(), json.loads(checked.stdout)):
        assert problems == want and fast, name
        assert how == ({"processes": 1, "fallback": "the record checks found a problem"} if name in record_breaks
                       else {"processes": 2}), (name, how)
    # the same, with every record checked by the parent's share (rundir.parallel.Shares: the chunks the child
    # has not taken when the parent's fold is done; here the child takes none): a broken record the parent
    # checks fails the check as one the child checks does
    checked = subprocess.run([sys.executable, "-c", _PARENT_CHECKS, *(str(run) for run, _ in runs.values())],
                             capture_output=True, text=True, env=dict(os.environ, ASSAY_CHECK_FORK_ABOVE="0",
                                                                      PYTHONPATH=str(SCRIPTS)), timeout=600)
    assert checked.returncode == 0, checked.stderr[-2000:]
    for (name, (_run, want)), (problems, how, taken) in zip(runs.items(), json.loads(checked.stdout)):
        assert problems == want, name
        assert how == ({"processes": 1, "fallback": "the record checks found a problem"} if name in record_breaks
                       else {"processes": 2}), (name, how)
        assert taken == (name != "a manifest row off-schema"), name   # the parent checked records (a bad manifest: none read)


_PARENT_CHECKS = """
import json, sys
from pathlib import Path
from assay.rundir import parallel
from assay.rundir.runlog_check import check_runlog
taken = []
own_checks = parallel.own_checks
def runlog_only(out, store, index_of, name, verdict_schema, share=None):   # the child: no record taken
    runlog = []
    check_runlog(Path(out) / "run.log", runlog)
    return [], runlog
def counted(store, index_of, name, verdict_schema, share=None):
    taken.append(1)
    return own_checks(store, index_of, name, verdict_schema, share)
parallel.record_checks, parallel.own_checks = runlog_only, counted
from assay.rundir.completeness import check_run_dir
out = []
for run in sys.argv[1:]:
    del taken[:]
    out.append([check_run_dir(Path(run))[0], dict(parallel.LAST), bool(taken)])
print(json.dumps(out))
"""


_CHECK_EACH = """
import json, sys
from pathlib import Path
from assay.rundir import parallel
from assay.core import jsonio
from assay.rundir.completeness import check_run_dir
print(json.dumps([[check_run_dir(Path(run))[0], dict(parallel.LAST), jsonio._fast is not None] for run in sys.argv[1:]]))
"""


def test_a_run_log_line_is_json_exactly_when_loads_says_so():
    """jsonio.loads_line (run.log's parse, one line at a time) accepts and refuses exactly the lines
    jsonio.loads does."""
    from assay.core.jsonio import loads_line
    lines = ['{"event": "finalize", "ts": "2026-12-01T00:00:00Z", "n": 3}', '{"x": 1.5e3}', '{"x": 1e400}',
             '{"x": NaN}', '{"x": -Infinity}', '{"x": "\\udc80"}', '{"x": "\\ud83d\\ude00"}', '[' * 2000 + ']' * 2000,
             '{"x": ' + "9" * 320 + '.5}', '{"x": ' + "9" * 320 + '}', '{"x": }', '{"a": 1} {"b": 2}', '"just text"',
             '{"x": "e1"}', '{"x": [1, 2, 3e2]}']
    for line in lines:
        try:
            loads(line)
            want = None
        except ValueError:
            want = ValueError
        try:
            loads_line(line)
            got = None
        except ValueError:
            got = ValueError
        assert got is want, line[:60]


def test_rowline_is_the_json_encoders_text():
    """rundir.rowline builds a derived row's line itself for flat rows: byte for byte what
    json.JSONEncoder(sort_keys=True, ensure_ascii=False) writes, for every value a row can hold,
    hostile text included; anything else goes through the encoder (same bytes)."""
    from assay.rundir import rowline
    enc = json.JSONEncoder(sort_keys=True, ensure_ascii=False)
    odd_text = ["", "é", "日本", "a\"b", "back\\slash", "tab\tnl\n", "\x00\x1f\x7f", "\u2028\u2029", "\ud800",
                "</script>", "😀", "{\"verdict\": \"pass\"}"]
    values = odd_text + [True, False, None, 0, -3, 10 ** 30, 1.5, float("nan"), [], ["a", "é"], ["a", 1],
                         [["x"]], {}, {"b": "fail", "a": "pass"}, {"a": 1}, {"a": ["x"]}, {"a": None},
                         {1: "x"}, (1, 2), {"z": {"y": "x"}}]

    class Sub(str):
        pass
    values += [Sub("sub"), {"a": Sub("pass")}]
    rng = random.Random(7)
    rows = [derived.verdict_row(r) for r in varied_records()] + [derived.results_row(r) for r in varied_records()]
    for _ in range(3000):
        keys = rng.sample(["case_id", "verdict", "layers", "title", "gating", "canary", "z", "A", "é", "\"q"],
                          rng.randint(0, 6))
        rows.append({k: rng.choice(values) for k in keys})
    rows += [{1: "int key"}, {2: "y", 1: {"a": "b"}}, [], "text", None, {}]
    for row in rows * 2:   # twice: the second time from the kept shapes and maps
        want = (enc.encode(row) + "\n").encode("utf-8", "backslashreplace")
        assert rowline.line_of(row) == want, row
    assert line_of is rowline.line_of
