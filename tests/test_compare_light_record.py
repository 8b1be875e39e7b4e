"""compare.light_record: a comparison reads a case's journal line at the keys a pair reads alone, and
answers as the whole decode (core.casestore.parse_text_line) does: the same case or none, the same
files, the same values at compare.light_record.PAIR_KEYS (`layers`: its `judged`), the same whole
verdict when asked. Each line is read twice by a compare Side, once with the light read and once
with it off (the whole decode, from the same place), over hostile lines: non-UTF-8 bytes and huge
integers in a key it skips, NaN, repeated keys, a `layers` that is not an object, nesting at the
recursion limit, lone surrogates, a title that is not a string..."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import msgspec
import pytest

from assay.compare import light_record
from assay.compare.light_record import PAIR_KEYS, LightRecord
from assay.compare.sides import Side
from assay.core import casestore, jsonio

LIMIT = 4300   # json's integer digits (sys.get_int_max_str_digits(), its default)


@pytest.fixture(autouse=True)
def engaged(monkeypatch):
    """msgspec engaged, as a big comparison engages it (jsonio.bulk); its int limit the default."""
    import sys
    monkeypatch.setattr(jsonio, "_fast", msgspec.json.Decoder().decode)
    monkeypatch.setattr(jsonio, "_fast_tried", True)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(LIMIT)
    yield
    sys.set_int_max_str_digits(old)


def _side(run_dir: Path = Path("unused")) -> Side:
    return Side(run_dir=run_dir, results={}, manifest={}, rows={}, case_hash={})


def _read(line: bytes, light: bool):
    side = _side()
    side._whole_lines = not light   # off: the whole decode, from the same place in the stack
    return side._read_line(line)


def _typed(value) -> list:
    """The value with its types (1 is not 1.0 nor True, -0.0 keeps its sign), walked without recursion:
    a value nested near the recursion limit is compared too."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float):
            out.append(("float", "nan" if math.isnan(v) else v.hex()))
        elif isinstance(v, dict):
            out.append(("dict", len(v)))
            for k in sorted(v, reverse=True):
                stack += [v[k], ("key", k)]
        elif isinstance(v, (list, tuple)):
            out.append((type(v).__name__, len(v)))
            stack.extend(reversed(v))
        else:
            out.append((type(v).__name__, v))
    return out


def _pair_part(verdict: dict) -> dict:
    """What a pair reads of a whole verdict record: PAIR_KEYS present, `layers` with its `judged`."""
    out = {k: verdict[k] for k in PAIR_KEYS if k in verdict}
    if "layers" in out:
        out["layers"] = {k: v for k, v in out["layers"].items() if k == "judged"}
    return out


def _same(line: bytes) -> bool:
    """Asserts the light read answers as the whole decode; True when it took the line."""
    old, new = _read(line, light=False), _read(line, light=True)
    assert not isinstance(old, LightRecord)
    if not isinstance(new, LightRecord):
        assert _typed(None if new is None else (new.case_id, new.verdict, new.files)) == \
            _typed(None if old is None else (old.case_id, old.verdict, old.files)), line[:120]
        return False
    assert old is not None, line[:120]
    assert (new.case_id, _typed(new.files)) == (old.case_id, _typed(old.files)), line[:120]
    assert _typed(new.pair_doc) == _typed(_pair_part(old.verdict)), line[:120]
    for name in ("answer.txt", "turns/1/answer.txt", "trajectory.json", "missing"):
        assert new.read(name) == old.read(name)
    assert new.read(casestore.VERDICT) == old.read(casestore.VERDICT)
    assert _typed(new.verdict) == _typed(old.verdict)
    return True


VERDICT = {"case_id": "c-1", "verdict": "pass", "title": "Refund ETA", "holdout": False, "latency_ms": 10.5,
           "judge_usage": None, "repeats": [{"verdict": "pass", "latency_ms": 9}, {"verdict": "fail"}],
           "turns": [{"n": 1, "verdict": "pass"}, {"n": 2, "verdict": "fail"}],
           "layers": {"answer": {"verdict": "pass", "checks": [{"status": "pass"}]},
                      "judged": {"verdict": "fail", "provisional": True,
                                 "rubrics": [{"pin": "p", "verdict": "fail", "provisional": True}]}},
           "skipped": "SKIP", "trace": {"status": "not_collected", "n": 12345678901234567890123}}
FILES = {"answer.txt": "The refund takes 5 days.".encode(), "turns/1/answer.txt": b"hi",
         "trajectory.json": b'{"tool_calls": []}'}
GOOD = casestore.record_line("c-1", VERDICT, FILES)

PAYLOADS = [
    b'"\xff"', b'"a\xc3"', b'"\xed\xa0\x80"', b'"\xc3\xa9\xe2\x80\xa8"', b'"\xf0\x9f\x98\x80"',   # (not) UTF-8
    b'9' * LIMIT, b'9' * (LIMIT + 1), b'-' + b'9' * (LIMIT + 1), b'1' + b'0' * LIMIT + b'.5', b'1e' + b'9' * 5000,
    b'NaN', b'-Infinity', b'1e400', b'-1e400', b'-0.0', b'-0', b'1.0', b'1', b'true', b'null', b'18446744073709551616',
    b'"\\ud800"', b'"\\udc00x"', b'"\\ud83d\\ude00"', b'"\\u0000"', b'"\\x"', b'"a\x01b"', b'01', b'1.', b'[1,]',
    b'{"a": 1, "a": [2]}', b'[' * 150 + b']' * 150, b'{"files": {"x": 1}}', b'"\\"files\\": {"',
]


def test_a_plain_line_is_read_light_and_alike():
    assert _same(GOOD)
    assert isinstance(_read(GOOD, light=True), LightRecord)
    assert _read(GOOD, light=True).pair_doc["layers"] == {"judged": VERDICT["layers"]["judged"]}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_a_hostile_value_where_the_light_read_skips_it_or_reads_it(payload):
    """In a key the light read skips (the verdict's, a layer beside `judged`), and in each key it
    reads: the whole decode's answer, or the line goes whole."""
    for at in (b'"SKIP"', ):
        _same(GOOD.replace(at, payload))
    for key in PAIR_KEYS:
        if key != "layers":
            _same(GOOD.replace(b'"skipped": "SKIP"', b'"skipped": 1, "' + key.encode() + b'": ' + payload))
    layers = b'"layers": {'
    _same(GOOD.replace(layers, layers + b'"zz": ' + payload + b', '))
    _same(GOOD.replace(layers, layers + b'"judged": ' + payload + b', '))   # repeated: the last is read
    _same(GOOD.replace(b'"judged": {', b'"judged": ' + payload + b', "j": {'))
    _same(GOOD.replace(b'"turns": [', b'"turns": [' + payload + b', '))


def test_non_utf8_and_huge_integers_where_skipped_go_whole():
    """msgspec checks neither in what it skips; json refuses the line (no record): so does the read."""
    for payload in (b'"\xff"', b'"a\xc3"', b'9' * (LIMIT + 1)):
        line = GOOD.replace(b'"SKIP"', payload)
        assert _read(line, light=False) is None and _read(line, light=True) is None
    # a surrogate encoded in UTF-8 (not UTF-8): json reads bytes with surrogatepass and takes it
    line = GOOD.replace(b'"SKIP"', b'"\xed\xa0\x80"')
    assert _read(line, light=False) is not None and not isinstance(_read(line, light=True), LightRecord)
    assert isinstance(_read(GOOD.replace(b'"SKIP"', "\"é\u2028😀\"".encode()), light=True), LightRecord)
    assert isinstance(_read(GOOD.replace(b'"SKIP"', b'9' * LIMIT), light=True), LightRecord)


def test_a_long_digit_run_is_found_wherever_it_lies():
    """light_record._long_digits measures the digits at each multiple of the limit: a run one over
    the limit at every offset around them is found, one at the limit never refuses the line."""
    pad = b" " * (2 * LIMIT)
    for n, whole in ((LIMIT + 1, False), (LIMIT, True)):
        for shift in list(range(0, 40)) + list(range(LIMIT - 40, LIMIT + 40)):
            line = GOOD.replace(b'"SKIP"', b'"' + b"x" * shift + b'", "big": ' + b"7" * n + pad[:shift])
            assert _same(line) is whole, (n, shift)


def test_repeated_keys_wrong_types_and_missing_parts():
    head, _, files = GOOD.partition(b', "files": ')
    verdict = head.partition(b', "verdict": ')[2]
    lines = [
        GOOD.replace(b'"title": "Refund ETA"', b'"title": "A", "title": 7'),
        GOOD.replace(b'"title": "Refund ETA"', b'"title": ["A"]'),
        GOOD.replace(b'"title": "Refund ETA"', b'"title": {"x": null}'),
        GOOD.replace(b'"holdout": false', b'"holdout": false, "holdout": 1'),
        GOOD.replace(b'"layers": {', b'"layers": [1], "layers": {'),
        GOOD.replace(b'"layers": {', b'"layers": {"judged": 1}, "layers": {'),
        b'{"case_id": "c-1", "verdict": [1], "verdict": ' + verdict + b', "files": ' + files,
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "verdict": [1], "files": ' + files,
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "verdict": {"title": 1}, "files": ' + files,
        b'{"case_id": "c-0", "case_id": "c-1", "verdict": ' + verdict + b', "files": ' + files,
        b'{"case_id": 1, "verdict": ' + verdict + b', "files": ' + files,
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "files": {"a": "b"}, "files": ' + files,
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "files": {"a": 1}}\n',
        b'{"case_id": "c-1", "verdict": ' + verdict + b'}\n',
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "files": ' + files.rstrip() + b' x\n',
        b'{"case_id": "c-1", "verdict": ' + verdict + b', "files": {}, "more": 1}\n',
        b'{"case_id": "c-1", "verdict": {}, "files": {}}\n',
        b'\xef\xbb\xbf' + GOOD, b' \t' + GOOD.rstrip() + b' \r\n', b'[' + GOOD + b']', b'', b' ', b'[]', b'{}',
        GOOD.rstrip() + b']', b']' + GOOD, GOOD.rstrip() + b'], [' + GOOD.rstrip(), GOOD.rstrip() + b', 1',
        GOOD.rstrip() + b']' * light_record.WRAP + b', [' * light_record.WRAP + GOOD.rstrip(),
    ]
    for value in (b'[1]', b'[]', b'null', b'"x"', b'0', b'false', b'{}', b'{"judged": null}', b'{"x": 1}'):
        lines.append(GOOD.replace(b'"layers": {', b'"layers": ' + value + b', "l": {'))
    for line in lines:
        _same(line)


def test_nesting_at_the_recursion_limit_answers_as_the_whole_decode():
    """Deep nesting in a key the light read skips, around the depth where the whole decode stops
    (alone, and beside 1e400, which msgspec refuses and json then decodes with less room): the
    light read never takes a line the whole decode finds too deep."""
    seen = set()
    for extra in (b'', b'"inf": 1e400, '):
        for depth in range(850, 1000):
            line = GOOD.replace(b'"skipped": "SKIP"', extra + b'"deep": ' + b'[' * depth + b']' * depth)
            _same(line)
            seen.add(_read(line, light=False) is None)
    assert seen == {True, False}   # the sweep crossed the whole decode's limit


def test_random_verdicts_read_alike():
    rng = random.Random(20261207)

    def value(depth=0):
        kind = rng.randrange(8 if depth < 3 else 5)
        if kind == 0:
            return rng.choice([True, False, None, 0, 1, -0.0, 1.0, 2 ** 70, -(2 ** 64), 1e308, 5e-324])
        if kind in (1, 2):
            return rng.uniform(-1e6, 1e6) if kind == 1 else rng.randrange(-10 ** 9, 10 ** 9)
        if kind in (3, 4):
            return "".join(rng.choice('aé\n"\\\u2028😀\x00 ') for _ in range(rng.randrange(8)))
        if kind in (5, 6):
            return {rng.choice(["judged", "verdict", "n", "x", *PAIR_KEYS]): value(depth + 1) for _ in range(rng.randrange(4))}
        return [value(depth + 1) for _ in range(rng.randrange(4))]

    took = 0
    for _ in range(600):
        verdict = {rng.choice([*PAIR_KEYS, "other", "trace"]): value() for _ in range(rng.randrange(9))}
        took += _same(casestore.record_line("c-1", verdict, {"answer.txt": b"x"}))
    assert took > 100


def test_a_side_reads_its_lines_whole_after_a_case_asks_for_its_whole_verdict(tmp_path):
    """A traced or judged run's cost rows read each case's whole verdict: from the first such case on,
    the side decodes its lines whole (no line decoded twice)."""
    lines = [casestore.record_line(f"c-{n}", dict(VERDICT, case_id=f"c-{n}"), FILES) for n in range(4)]
    (tmp_path / casestore.JOURNAL).write_bytes(b"".join(lines))
    side = _side(tmp_path)
    first, second = side.record("c-0"), side.record("c-1")
    assert isinstance(first, LightRecord) and isinstance(second, LightRecord)
    assert second.pair_doc == _pair_part(VERDICT | {"case_id": "c-1"})
    assert second.verdict == dict(VERDICT, case_id="c-1")
    third = side.record("c-2")
    assert not isinstance(third, LightRecord) and third.verdict == dict(VERDICT, case_id="c-2")
    assert side.pair_doc("c-2") == third.verdict


def test_without_msgspec_engaged_every_line_is_read_whole(monkeypatch):
    monkeypatch.setattr(jsonio, "_fast", None)
    assert light_record.light_record(GOOD) is None
    assert not isinstance(_read(GOOD, light=True), LightRecord) and _read(GOOD, light=True) is not None


class _Reads(dict):
    """A verdict record that notes each key read of it (and of its `layers`)."""

    def __init__(self, value, seen, path=""):
        super().__init__({k: _Reads(v, seen, f"{path}{k}.") if isinstance(v, dict) else v for k, v in value.items()})
        self.seen, self.path = seen, path

    def get(self, key, default=None):
        self.seen.add(self.path + key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(self.path + key)
        return super().__getitem__(key)


def test_what_a_pair_and_the_cost_fold_read_of_a_verdict_is_in_the_light_read():
    """Every key compare.pairs and stats.cost.case_light read of a verdict record is one the light read
    keeps (a reader that starts to read another key must be added to it, or it reads none)."""
    from assay.compare.pairs import compare_pair
    from assay.stats.cost import case_light
    seen: set[str] = set()
    base = dict(VERDICT, layers=dict(VERDICT["layers"], judged={"verdict": "pass", "provisional": True,
                                                                 "rubrics": [{"pin": "p", "verdict": "pass", "provisional": True}]}))
    docs = {"b": _Reads(base, seen), "c": _Reads(VERDICT, seen)}

    class Mem(Side):
        def pair_doc(self, case_id):
            return docs[self.run_dir.name]

        def text(self, case_id, *rel):
            return "same"

    rows = {"c-1": {"verdict": "pass", "layers": {"judged": "pass"}}}
    b, c = (Mem(run_dir=Path(w), results={"k": 2}, manifest={}, rows=rows, case_hash={"c-1": "h"}) for w in "bc")
    pair = compare_pair(b, c, "c-1")
    assert pair["judge_only"] and pair["turns"] and pair["repeats"]   # every part read
    for doc in docs.values():
        case_light(doc, False)
    outer = {k.split(".")[0] for k in seen}
    assert outer <= set(PAIR_KEYS), outer - set(PAIR_KEYS)
    assert {k.split(".")[1] for k in seen if k.startswith("layers.")} == {"judged"}


def _journal_run(reports: Path, run_id: str, cases: list[dict], extra: dict) -> Path:
    """rundir_util.make_run's run with its cases in a journal (a trace-less run's), each verdict
    record with `extra[id]` added."""
    import shutil

    from rundir_util import make_run
    run = make_run(reports, cases, run_id=run_id, manifest={"traces": {"collected": False}})
    lines = []
    for spec in cases:
        cdir = run / "cases" / spec["id"]
        verdict = json.loads((cdir / casestore.VERDICT).read_text()) | extra.get(spec["id"], {})
        files = {p.relative_to(cdir).as_posix(): p.read_bytes() for p in sorted(cdir.rglob("*"))
                 if p.is_file() and p.name != casestore.VERDICT}
        lines.append(casestore.record_line(spec["id"], verdict, files))
    shutil.rmtree(run / "cases")
    (run / casestore.JOURNAL).write_bytes(b"".join(lines))
    return run


def test_a_comparison_of_trace_less_runs_is_the_same_read_light(tmp_path, monkeypatch):
    """compare_runs over two trace-less journal runs (titles, judged flips and provisional rubrics,
    turns, repeats with their latencies, holdout, a judge's usage on one case): the document the whole
    decode gives, read light (the side reading whole from the judged case on) and every line light."""
    from assay.compare import sides
    from assay.compare.document import compare_runs
    judged = {"verdict": "pass", "provisional": True, "rubrics": [{"pin": "p", "verdict": "pass", "provisional": True}]}
    flipped = {"verdict": "fail", "provisional": True, "rubrics": [{"pin": "p", "verdict": "fail", "provisional": True}]}
    cases = [{"id": f"c-{n}", "verdict": "pass", "layers": {"judged": judged}} for n in range(8)]
    cand = [dict(c) for c in cases]
    cand[1] = {"id": "c-1", "verdict": "fail"}
    cand[2] = {"id": "c-2", "layers": {"judged": flipped}}
    cand[3] = {"id": "c-3", "holdout": True}
    cand[4] = {"id": "c-4", "repeats": [{"verdict": "pass", "latency_ms": 30}, {"verdict": "fail", "latency_ms": 9}]}
    base_extra = {"c-0": {"title": "Refund ETA", "latency_ms": 7}, "c-5": {"turns": [{"n": 1, "verdict": "pass"}]},
                  "c-6": {"judge_usage": {"calls": 1, "input_tokens": 5}}}
    cand_extra = {"c-0": {"title": 5}, "c-5": {"turns": [{"n": 1, "verdict": "fail"}, {"n": 2, "verdict": "pass"}]},
                  "c-6": {"judge_usage": {"calls": 2, "input_tokens": 9}}, "c-7": {"latency_ms": 99.5}}
    base = _journal_run(tmp_path / "a", "smoke-20261129T101500Z", cases, base_extra)
    cand_dir = _journal_run(tmp_path / "b", "smoke-20261130T101500Z", cand, cand_extra)
    light, whole = sides.light_record, sides.Side._read_whole
    docs, read = [], []
    for how in ("light", "every line light", "whole"):
        monkeypatch.setattr(sides.Side, "_read_whole", (lambda self: None) if how == "every line light" else whole)
        monkeypatch.setattr(sides, "light_record", (lambda line, on_whole=None: None) if how == "whole" else
                            lambda line, on_whole=None: read.append(how) or light(line, on_whole))
        docs.append(json.dumps(compare_runs(base, cand_dir)))
    assert docs[0] == docs[1] == docs[2]
    assert read.count("every line light") == 16 > read.count("light") > 8
    doc = json.loads(docs[0])
    assert doc["cost_latency"]["candidate"]["latency_p95_ms"] == 99.5 and doc["judge_flips"] == 0


def test_the_journal_line_fixture_is_what_the_runner_writes():
    doc = json.loads(GOOD)
    assert list(doc) == ["case_id", "verdict", "files"] and doc["verdict"] == VERDICT
