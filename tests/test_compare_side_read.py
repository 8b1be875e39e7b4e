"""A comparison side's reads at 100,000 cases, held to the readers they stand in for (compare.sides):
verdicts.jsonl read once per shape of line (report.run_files.read_jsonl_by_id) against the rows read one by
one and shared twice, as load_side read them before; manifest.yaml's case rows decoded typed (msgspec,
report.cases_cut.typed_cases_head) against the walk and the whole parse, on hostile files. The fast way
either answers exactly as the old one or declines (the old one then answers)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_fast_json import _engaged

from assay.compare import sides
from assay.core.errors import AssayError
from assay.report.cases_cut import typed_cases_head
from assay.report.run_files import read_jsonl_by_id, read_jsonl_file
from assay.rundir import streamed


def _row(i: int, **extra) -> dict:
    return {"case_sha256": f"{i:064x}", "id": f"c-{i}", "set": "holdout" if i % 3 == 0 else "main",
            "sha256": f"{i + 7:064x}", **extra}


CLEAN = {"auth": {"type": "none"}, "baseline_verdicts": None, "cases": [_row(i) for i in range(5)],
         "k": 1, "run_id": "r-1", "zeta": [1, {"n": -0.0}]}


def _runner_text(doc: dict) -> bytes:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False).encode("utf-8")


def _manifests() -> list[tuple[str, bytes]]:
    """manifest.yaml texts: the runner's own, and hostile ones a hand edit, a tool or an attacker makes."""
    text = _runner_text(CLEAN)
    row0 = json.dumps(_row(0), indent=2, sort_keys=True).replace("\n", "\n    ").encode()
    swap = lambda old, new: text.replace(old, new, 1)   # noqa: E731
    out = [("clean", text), ("no rows", text.replace(text[text.index(b"[\n    {"):text.index(b"\n  ],") + 4], b"[\n  ]")),
           ("cases first", _runner_text({k: v for k, v in CLEAN.items() if k >= "cases"})),
           ("cases last", _runner_text({"cases": CLEAN["cases"]})),
           ("a non-ASCII id", _runner_text({**CLEAN, "cases": [_row(1, id="c-é中"), _row(2)]})),
           ("nulls and absent keys", _runner_text({**CLEAN, "cases": [{"id": "a", "case_sha256": None, "set": None},
                                                                      {"id": "b"}, _row(3)]})),
           ("an escaped key and value", swap(b'"id": "c-0"', b'"i\\u0064": "c-\\u0030"')),
           ("a repeated id key in a row", swap(b'"id": "c-0"', b'"id": "c-x", "id": "c-0"')),
           ("a repeated id", _runner_text({**CLEAN, "cases": [_row(1), _row(2), _row(1, set="holdout")]})),
           ("a repeated key before", swap(b'"auth":', b'"k": 9,\n  "auth":')),
           ("a repeated key after", swap(b'"run_id":', b'"k": 9,\n  "run_id":')),
           ("cases twice", swap(b'"k": 1,', b'"cases": [\n' + row0 + b'\n  ],\n  "k": 1,')),
           ("cases twice, not an array", swap(b'"k": 1,', b'"cases": 5,\n  "k": 1,')),
           ("cases not an array", _runner_text({**CLEAN, "cases": {"id": "x"}})),
           ("a number hash", swap(b'"case_sha256": "' + f"{0:064x}".encode() + b'"', b'"case_sha256": 12')),
           ("a big int", swap(b'"case_sha256": "' + f"{0:064x}".encode() + b'"', b'"case_sha256": ' + b"9" * 40)),
           ("a huge float", swap(b'"set": "holdout"', b'"set": 1e400')),
           ("NaN in a row", swap(b'"set": "holdout"', b'"set": NaN')),
           ("NaN in the head", swap(b'"k": 1', b'"k": NaN')),
           ("a bool set", swap(b'"set": "holdout"', b'"set": true')),
           ("an extra key", swap(b'"set": "holdout"', b'"set": "holdout", "x": 1')),
           ("a nested row value", swap(b'"set": "holdout"', b'"set": "holdout", "x": {"y": [1]}')),
           ("a row nested too deep", swap(b'"set": "holdout"', b'"x": ' + b"[" * 99 + b"]" * 99 + b', "set": "holdout"')),
           ("a head nested too deep", swap(b'"k": 1', b'"k": ' + b"[" * 100 + b"]" * 100)),
           ("a row not an object", swap(b"[\n    {", b'[\n    "c-9",\n    null,\n    7,\n    {')),
           ("an id not a string", swap(b'"id": "c-0"', b'"id": 0')),
           ("a lone surrogate in a row", swap(b'"set": "main"', b'"set": "\\ud800"')),
           ("a surrogate pair in a row", swap(b'"set": "main"', b'"set": "\\ud83d\\ude00"')),
           ("a lone surrogate in the head", swap(b'"r-1"', b'"\\udc00"')),
           ("not UTF-8", swap(b'"r-1"', b'"r-\xff"')),
           ("a form feed at the end", text.rstrip(b"}") + b"\x0c}"),
           ("a form feed after the rows", _runner_text({"cases": CLEAN["cases"]}).replace(b"\n  ]\n}", b"\n  ]\x0c}")),
           ("a hash nested too deep", swap(b'"case_sha256": "' + f"{0:064x}".encode() + b'"',
                                           b'"case_sha256": ' + b"[" * 99 + b"]" * 99)),
           ("a form feed between rows", swap(b"},\n    {", b"},\x0c\n    {")),
           ("a comma after the rows and nothing", _runner_text({"cases": CLEAN["cases"]}).replace(b"\n  ]\n}", b"\n  ],\n}")),
           ("a comma before the rows and nothing", b"{\n ," + _runner_text({"cases": CLEAN["cases"]})[1:]),
           ("a closed object, then more", _runner_text({"cases": CLEAN["cases"]}).replace(b"\n  ]\n}", b"\n  ],} x}")),
           ("junk after", text + b" x"),
           ("a trailing comma in the rows", swap(b"\n    }\n  ]", b"\n    },\n  ]")),
           ("a byte-order mark", b"\xef\xbb\xbf" + text),
           ("one line", json.dumps(CLEAN, sort_keys=True).encode()),
           ("not an object", b"[\n  1\n]")]
    return out


def _side_answer(path: Path, legacy: bool) -> str:
    table = sides._CaseHashes({"c-1": {}, "c-2": {}}, legacy=legacy)
    head = sides._manifest_rows(path.parent, table)
    return repr((head, list(table.case_hash.items()), sorted(table.holdout), table.deep,
                 None if table.legacy is None else list(table.legacy.items())))


@pytest.mark.parametrize("walk_above", [0, None])   # walked (a big manifest) / parsed whole (a small one)
def test_a_manifests_rows_decoded_typed_answer_as_the_walk(monkeypatch, tmp_path, walk_above):
    if walk_above is not None:
        monkeypatch.setattr(streamed, "WALK_ABOVE", walk_above)
    path = tmp_path / "manifest.yaml"
    taken = []
    for name, data in _manifests():
        path.write_bytes(data)
        for legacy in (False, True):
            _engaged(monkeypatch, False)   # the faster decoder off: the walk, as before
            want = _side_answer(path, legacy)
            _engaged(monkeypatch, True)
            if typed_cases_head(path, sides._typed_rows(path)) is not None:
                taken.append(name)
            assert _side_answer(path, legacy) == want, (name, legacy)
    # the typed decode takes what the runner writes, and nothing it cannot answer exactly
    assert {"clean", "no rows", "cases first", "cases last", "a non-ASCII id", "nulls and absent keys",
            "an escaped key and value", "a repeated id"} <= set(taken), taken
    assert not {"a repeated key before", "a repeated key after", "cases twice", "cases twice, not an array",
                "a huge float", "a bool set", "an extra key", "a row nested too deep", "a head nested too deep",
                "a lone surrogate in a row", "a form feed at the end", "a form feed after the rows", "a hash nested too deep", "a comma after the rows and nothing",
                "a comma before the rows and nothing", "a closed object, then more"} & set(taken), taken


def _verdict_lines() -> list[str]:
    base = '{"canary": false, "case_id": "%s", "gating": %s, "layers": {"answer": "%s"}, "verdict": "%s"}'
    lines = [base % (f"c-{i}", g, v, v) for i in range(30) for v in ("pass", "fail") for g in ("true", "1")]
    lines += [
        base % ("c-1", "true", "pass", "pass"),   # an id again: its value replaced, its place kept
        '{"case_id": "a", "case_id": "b", "v": 1}', '{"case_id": "a\\u0041", "v": 1}',
        '{"case_id": "x", "v": "\\u0000"}', '{"case_id": "", "v": 1}', '{"case_id": "\u00e9\u4e2d", "v": 1.0}',
        '{"case_id": "y", "v": -0.0}', '{"case_id": "z", "v": 123456789012345678901234567890}',
        '{"x": {"case_id": "nested"}, "case_id": 5}', '{"x": {"case_id": "nested"}}', '[1, 2]', '"s"', 'null',
        '{"case_id": "w", "layers": {"a": "pass"}, "failed_layers": ["a"], "verdict": "fail"}',
        '{"verdict": "fail", "layers": {"a": "pass"}, "failed_layers": ["a"], "case_id": "v"}',
        '{"case_id": "u", "d": ' + "[" * 60 + "]" * 60 + "}", '{"case_id": "s", "t": "\\ud83d\\ude00"}', "",
    ]
    return lines


def _by_id_before(path: Path) -> dict:
    """load_side's rows as it read them before: every line parsed, shared, then shared again by id."""
    by_id = sides._RowsById()
    read_jsonl_file(path, share=True, take=by_id.add)
    return by_id.rows


@pytest.mark.parametrize("fast", [False, True])
def test_verdict_rows_read_once_per_shape_are_the_rows_read_one_by_one(monkeypatch, tmp_path, fast):
    _engaged(monkeypatch, fast)
    path = tmp_path / "verdicts.jsonl"
    lines = _verdict_lines()
    path.write_text("\n".join(lines + lines) + "\n", encoding="utf-8")
    got = read_jsonl_by_id(path, sides._RowsById().kept)
    assert repr(list(got.items())) == repr(list(_by_id_before(path).items()))
    assert got["c-0"] is got["c-2"] and got["c-0"] is not got["c-1"] and got["w"] == got["v"]
    # a bad line, an unreadable file, no file: the same words
    for bad in ('{"case_id": "a"}\n{"case_id": "b", "v": NaN}\n', '{"case_id": "a", "v": "\\ud800"}\n',
                '{"case_id": "a", "d": ' + "[" * 120 + "]" * 120 + "}\n", '{"case_id": "a"\n', "\ufeff{}\n", '{"case_id": "tab\there"}\n'):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(AssayError) as before:
            _by_id_before(path)
        with pytest.raises(AssayError) as now:
            read_jsonl_by_id(path, sides._RowsById().kept)
        assert str(now.value) == str(before.value)
    path.write_bytes(b'{"case_id": "\xff"}\n')
    with pytest.raises(AssayError, match="not readable UTF-8"):
        read_jsonl_by_id(path, sides._RowsById().kept)
    assert read_jsonl_by_id(tmp_path / "absent.jsonl", sides._RowsById().kept) == {}
