"""core.writer.dumps and run.log's rows keep one JSON encoder each: the text is json.dumps's, byte for byte."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("indent", [None, 2, 4])
def test_writer_dumps_is_json_dumps_with_its_arguments(indent):
    from assay.core import writer
    values = [{"b": 1, "a": [1.5, "é", None, True], "c": {"z": "x\u2028y", "y": {}}}, [], "plain", 3,
              {"nested": [{"k": i, "v": str(i) * i} for i in range(5)]}]
    for value in values:
        assert writer.dumps(value, indent=indent) == json.dumps(value, indent=indent, sort_keys=True,
                                                                 ensure_ascii=False, allow_nan=False)
    from assay.core.hostile import clean
    odd = {"x": float("nan"), "y": [float("inf")]}   # not JSON: written as core.hostile's text
    assert writer.dumps(odd, indent=indent) == json.dumps(clean(odd)[0], indent=indent, sort_keys=True,
                                                          ensure_ascii=False, allow_nan=False)


def test_runlog_row_is_json_dumps_with_its_arguments(tmp_path):
    from pathlib import Path
    from assay.run.runlog import RunLog
    log = RunLog(tmp_path / "run.log")
    log.event("case_done", case_id="c-1", verdict="pass", latency_ms=1.5, odd=Path("x"), text="é\u2028")
    log.close()
    line = (tmp_path / "run.log").read_text("utf-8")
    row = json.loads(line)
    assert line == json.dumps(row, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    assert row["odd"] == "x" and row["text"] == "é\u2028" and list(row) == sorted(row)


def test_indented_is_the_encoders_text_or_none():
    """core.indent.indented: the standard library's indented text exactly, for random plain JSON
    values; None (the caller asks the encoder) for whatever that encoder would convert or refuse."""
    import random
    from collections import OrderedDict
    from enum import IntEnum

    from assay.core.indent import indented
    from assay.core.writer_stream import write_json_streamed

    def value(rng, depth):
        kinds = ["s", "i", "f", "b", "n"] + (["d", "l", "t"] if depth < 4 else [])
        kind = rng.choice(kinds)
        if kind == "s":
            return "".join(rng.choice(["a", "é", "\n", '"', "\\", "\u2028", "\x00", "😀", " "]) for _ in range(rng.randint(0, 5)))
        if kind == "i":
            return rng.choice([0, -1, 7, 10 ** 20, -(2 ** 70)])
        if kind == "f":
            return rng.choice([0.0, -0.0, 1.5, 1e-300, 1e300, 0.1, 123456789.125])
        if kind in "bn":
            return rng.choice([True, False, None])
        items = [value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
        if kind == "d":
            return {"".join(rng.choice("abcé_") for _ in range(rng.randint(0, 3))): v for v in items}
        return items if kind == "l" else tuple(items)

    rng = random.Random(11)
    for indent in (2, 4):
        for _ in range(2000):
            v = value(rng, 0)
            assert indented(v, indent) == json.dumps(v, indent=indent, sort_keys=True, ensure_ascii=False,
                                                     allow_nan=False), repr(v)[:80]

    class Level(IntEnum):
        ONE = 1
    for odd in ({"a": float("nan")}, [float("inf")], OrderedDict(b=1), {1: "x"}, {"k": Level.ONE}, {"k": object()},
                {"k": {"deeper": [1, {2: 3}]}}, {"s": type("S", (str,), {})("sub")}):
        assert indented(odd, 2) is None, odd
    # with `shared` (compare.json's writer: one dict for the document): parts held by many values, at
    # several depths, written once each, the same text; a full `shared` starts again
    import assay.core.indent as indent_mod
    pool = [value(rng, 2) for _ in range(40)] + [{"changed": False}, [], {"base": "pass", "candidate": "fail"}]
    shared: dict = {}
    keep = indent_mod.SHARED_KEEP
    indent_mod.SHARED_KEEP = 16
    try:
        for _ in range(1500):
            v = {"p": rng.choice(pool), "q": [rng.choice(pool), {"r": rng.choice(pool)}], "s": value(rng, 1),
                 **{f"k{i}": rng.choice(pool) for i in range(rng.randint(0, 9))}}
            assert indented(v, 2, shared) == json.dumps(v, indent=2, sort_keys=True, ensure_ascii=False,
                                                        allow_nan=False), repr(v)[:80]
        assert 0 < len(shared) <= 16
        for odd in ({"a": {"b": float("nan")}}, [[object()]], {"k": {1: 2}}):
            assert indented(odd, 2, shared) is None, odd
    finally:
        indent_mod.SHARED_KEEP = keep
    # compare.json's writer: the same bytes as write_json, items through `indented`
    doc = {"buckets": {"a": [{"x": i, "y": [1.5, "é"]} for i in range(3)], "b": []}, "z": 1}
    from pathlib import Path
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        write_json_streamed(Path(tmp) / "c.json", doc, "buckets")
        assert (Path(tmp) / "c.json").read_text("utf-8") == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
