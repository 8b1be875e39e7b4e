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
