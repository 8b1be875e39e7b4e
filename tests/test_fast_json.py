"""The faster JSON decoder for big reads (core.jsonio.bulk: msgspec, the `fast` extra) answers
exactly as the standard library's: the same value (the same types: an integer of any size stays an
integer, -0.0 keeps its sign) or the same error, on hostile text and on journal lines, through every
entry point the readers use. Each input is decoded twice in this process, the faster decoder
engaged and not (pure, no run: tests/test_readers_streamed.py and tests/test_check_parallel.py
run the readers on real runs with it engaged)."""

from __future__ import annotations

import json
import math
import random

import msgspec
import pytest

from assay.core import casestore, jsonio

HOSTILE = [
    '{"a": 1, "a": 2}', '{"b": 1, "a": 2, "b": 3}', '1e400', '-1e400', '1e-400', '1.7976931348623159e308',
    '1.7976931348623157e308', '2.2250738585072014e-308', '4.9e-324', '-0', '-0.0', '0.1', '1E5', '1e+5',
    '123456789012345678901234567890', '-123456789012345678901234567890', '18446744073709551616',
    '-9223372036854775809', '9' * 400, '0.' + '3' * 60, '1.0000000000000000000000000001',
    '"a\x01b"', '"a\tb"', '"\\ud800"', '"\\udc00x"', '"\\ud800\\u0041"', '"\\ud83d\\ude00"', '"\x7f\u2028"',
    '"\\u0000"', '\ufeff{}', '[' * 2000 + ']' * 2000, '[' * 150 + ']' * 150, 'NaN', '-Infinity', '{"x": NaN}',
    '01', '1.', '.5', '+1', '-', '[1,]', '{"a":1,}', '{"a": 1} ', ' \n{"a": 1}\n', '{"a":1}\x00', '{"a": 1} {"b": 2}',
    'true', 'null', '"just text"', '', ' ', '{"é": "ü", "k": ["\\u00e9", "\\n\\"\\\\"]}', '{"x": "e1"}',
]


def _engaged(monkeypatch, on: bool) -> None:
    monkeypatch.setattr(jsonio, "_fast", msgspec.json.Decoder().decode if on else None)
    monkeypatch.setattr(jsonio, "_fast_tried", True)


def _answer(fn, data):
    """A decode's answer, compared exactly: the value with its types, or the error's type and words."""
    try:
        return "ok", _typed(fn(data))
    except Exception as exc:   # noqa: BLE001 -- the error itself is the answer compared
        return "error", type(exc).__name__, str(exc)


def _typed(value):
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, value)


ENTRY_POINTS = {
    "plain_loads": jsonio.plain_loads,
    "loads": jsonio.loads,
    "loads max_depth": lambda t: jsonio.loads(t, max_depth=jsonio.MAX_DEPTH),
    "loads_line": jsonio.loads_line,
    "line_parser": lambda t: jsonio.line_parser(t, max_depth=jsonio.MAX_DEPTH)(t),
}


def _both(monkeypatch, data) -> dict:
    answers = {}
    for on in (False, True):
        _engaged(monkeypatch, on)
        for name, fn in ENTRY_POINTS.items():
            if name in ("loads_line", "line_parser") and (not isinstance(data, str) or "\n" in data.strip()):
                continue
            answers.setdefault(name, []).append(_answer(fn, data))
    return answers


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_gets_the_standard_librarys_answer(monkeypatch, text):
    for data in (text, text.encode("utf-8", "surrogatepass")):
        for name, (plain, fast) in _both(monkeypatch, data).items():
            assert fast == plain, (name, data[:60])


def _random_doc(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return rng.choice([True, False, None])
    if kind == 1:
        return rng.choice([rng.randrange(-10**6, 10**6), rng.randrange(-2**70, 2**70), rng.randrange(2**63, 2**64)])
    if kind == 2:   # any double, by its bits
        value = struct_double(rng.getrandbits(64))
        return 0.5 if math.isnan(value) or math.isinf(value) else value
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind in (4, 5):
        return "".join(rng.choice(["a", "é", "\n", '"', "\\", "\u2028", "😀", "\x00", "\u00ff", " "])
                       for _ in range(rng.randrange(12)))
    if kind in (6, 7):
        return {f"k{rng.randrange(5)}": _random_doc(rng, depth + 1) for _ in range(rng.randrange(5))}
    return [_random_doc(rng, depth + 1) for _ in range(rng.randrange(5))]


def struct_double(bits: int) -> float:
    import struct
    return struct.unpack("<d", bits.to_bytes(8, "little"))[0]


def test_random_documents_and_number_spellings_decode_alike(monkeypatch):
    rng = random.Random(20261206)
    texts = []
    for _ in range(400):
        doc = _random_doc(rng)
        texts.append(json.dumps(doc))
        texts.append(json.dumps(doc, ensure_ascii=False))
    for _ in range(2000):   # number spellings json.dumps never writes: long mantissas, exponents, zeros
        mantissa = "".join(rng.choice("0123456789") for _ in range(rng.randrange(1, 40)))
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randrange(0, 40)))
        exp = rng.choice(["", f"e{rng.randrange(-330, 330)}", f"E+{rng.randrange(0, 330)}"])
        mantissa = mantissa.lstrip("0") or "0"
        texts.append(f'[{rng.choice(["", "-"])}{mantissa}{"." + frac if frac else ""}{exp}]')
    for text in texts:
        for name, (plain, fast) in _both(monkeypatch, text).items():
            assert fast == plain, (name, text[:80])


def _journal_lines() -> list[bytes]:
    verdict = {"case_id": "c-1", "verdict": "pass", "layers": {"files": {"verdict": "n/a"}},
               "n": 12345678901234567890123, "x": -0.0, "text": 'a "files": {x} \\u00e9'}
    lines = [casestore.record_line(cid, dict(verdict, case_id=cid), {"answer.txt": "ü".encode() * 400,
                                                                     "files": b"{}"})
             for cid in ("c-1", "c-" + "é" * 300, "x" * 600, "y" * 505)]
    good = lines[0]
    head, _, rest = good.partition(b', "files": {')
    lines += [
        good.replace(b'"verdict": "pass"', b'"verdict": NaN'),                       # json takes it, msgspec not
        good.replace(b'"verdict": {', b'"verdict":  {', 1),                          # a space more before it
        head + b', "files": {"answer.txt": "\xff"}}\n',                                  # files not UTF-8
        head + b', "files": {}, "verdict": {"case_id": "c-1"}}\n',                     # the key again, after
        head.replace(b'"verdict": "pass"', b'"verdict": "pass", "verdict": "fail"') + b', "files": {' + rest,
        head + b'} , "files": {' + rest,                                               # not one object
        head[:-1] + b', "files": {' + rest,                                            # the verdict never closed
        b'{"case_id": "c-2", "verdict": [1], "files": {}}\n',
        b'{"case_id": "c-3", "verdict": {"a": 1e400}, "files": {}}\n',
        b'{"case_id": "c-4", "verdict": {"a": "\\ud800"}, "files": {}}\n',
        b'{"case_id": 7, "verdict": {}, "files": {}}\n',
    ]
    return lines


def test_a_journal_line_is_the_same_case_with_either_decoder(monkeypatch):
    """casestore.head_of (the id and the verdict record, from the verdict's own bytes when engaged)
    and parse_line / parse_text_line answer as the standard library does, line by line."""
    for line in _journal_lines():
        answers = []
        for on in (False, True):
            _engaged(monkeypatch, on)
            rec = casestore.parse_line(line)
            answers.append((_answer(lambda b: casestore.head_of(b, verdict=True), line),
                            _answer(casestore.head_of, line),
                            None if rec is None else (rec.case_id, _typed(rec.verdict), sorted(rec.files.items())),
                            None if (t := casestore.parse_text_line(line)) is None else _typed(t.verdict)))
        assert answers[1] == answers[0], line[:80]


def test_the_faster_decoder_is_engaged_only_by_a_big_read(monkeypatch):
    """Small reads never import msgspec (its import costs more than they save); a read of
    FAST_ABOVE bytes does; ASSAY_FAST_JSON_ABOVE moves the line."""
    monkeypatch.setattr(jsonio, "_fast", None)
    monkeypatch.setattr(jsonio, "_fast_tried", False)
    jsonio.loads('{"a": 1}')
    jsonio.bulk(jsonio.FAST_ABOVE - 1)
    assert jsonio._fast is None and not jsonio._fast_tried
    jsonio.bulk(jsonio.FAST_ABOVE)
    assert jsonio._fast is not None
    monkeypatch.setattr(jsonio, "_fast", None)
    monkeypatch.setattr(jsonio, "_fast_tried", False)
    monkeypatch.setenv("ASSAY_FAST_JSON_ABOVE", "0")
    jsonio.loads("1")
    assert jsonio._fast is not None
