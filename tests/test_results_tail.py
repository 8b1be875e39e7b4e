"""results.json's summary.status read from the file's end (report.run_files.status_from_tail): the
gate decides whether to run the completeness check on it without walking 100,000 case rows twice.
Whatever the tail says, the gate confirms it against the whole file: a tail that says "running"
for a run the file says finished still gets the full check (never a gate opened unchecked)."""

from __future__ import annotations

import json
import os

import pytest

from fakeapp import app, case, make_plan, run_runner, state, write_plan  # noqa: F401 (fixtures)
from helpers import run_script


def _results(tmp_path, doc, indent=2, sort_keys=True):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc, indent=indent, sort_keys=sort_keys) + "\n")
    return path


def test_the_runners_layout_gives_its_status(tmp_path):
    from assay.report.run_files import status_from_tail
    doc = {"cases": [{"case_id": f"c-{i}", "verdict": "pass"} for i in range(3)], "run_id": "r",
           "summary": {"status": "ok", "nested": {"summary": {"status": "running"}}}}
    assert status_from_tail(_results(tmp_path, doc)) == "ok"
    doc["summary"]["status"] = "running"
    assert status_from_tail(_results(tmp_path, doc)) == "running"


def test_any_other_shape_says_nothing(tmp_path):
    from assay.report.run_files import status_from_tail
    doc = {"cases": [], "summary": {"status": "ok"}, "zzz": 1}   # summary not the last key
    assert status_from_tail(_results(tmp_path, doc)) is None
    assert status_from_tail(_results(tmp_path, {"summary": {"status": "ok"}}, indent=None)) is None  # one line
    path = _results(tmp_path, {"summary": {"status": "ok"}})
    path.write_text(path.read_text() + "garbage")
    assert status_from_tail(path) is None
    path.write_text('{\n  "summary": {"status": 7}\n}\n')
    assert status_from_tail(path) is None
    assert status_from_tail(tmp_path / "absent.json") is None
    target = _results(tmp_path, {"summary": {"status": "ok"}})
    link = tmp_path / "link.json"
    os.symlink(target, link)
    assert status_from_tail(link) is None   # never read through a symlink


def test_a_tail_saying_running_for_a_finished_run_is_checked_in_full(app, state, monkeypatch):
    from assay.report import gate as gate_mod
    from assay.verdict import decide
    plan = make_plan(state, [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}})
                             for i in range(3)], app_url=app.url)
    out = state / "reports" / plan["run_id"]
    assert run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never").rc == 0
    assert gate_mod.status_from_tail(out / "results.json") == "ok"
    assert run_script("gate", out, "--json").json["gate"] == "open"
    (out / "stray.txt").write_text("a file the run-dir contract does not list")
    monkeypatch.setattr(gate_mod, "status_from_tail", lambda _path: "running")
    res = decide(out)
    assert not res.open and any("stray.txt" in r for r in res.reasons), res.reasons


def test_the_head_past_the_case_rows_is_the_whole_documents_head(app, state, tmp_path):
    """report.run_files.head_past_cases: a comparison's side takes results.json's top-level keys from
    the bytes after the case rows (a 100,000-row file is not walked for them). On the runner's own
    file it is exactly the parsed document without `cases`; any other shape is None (walked)."""
    from assay.report.run_files import head_past_cases, read_results_file
    plan = make_plan(state, [case(f"c-{i:03d}", f"msg {i}", expect={"answer": {"must_contain": [f"msg {i}"]}})
                             for i in range(4)], app_url=app.url)
    out = state / "reports" / plan["run_id"]
    assert run_runner("--plan", write_plan(state, plan), "--out", out, "--progress", "never").rc == 0
    data = (out / "results.json").read_bytes()
    whole = json.loads(data)
    want = {k: v for k, v in whole.items() if k != "cases"}
    assert len(whole["cases"]) == 4 and head_past_cases(data) == want
    assert read_results_file(out / "results.json", rows=False) == want
    # rows holding nested arrays closed at any indent, an empty array: still exact
    doc = {"cases": [{"case_id": "a", "layers": {"x": ["p", "q"]}}], "run_id": "r", "summary": {"status": "ok"}}
    text = json.dumps(doc, indent=2, sort_keys=True).encode()
    assert head_past_cases(text) == {"run_id": "r", "summary": {"status": "ok"}}
    empty = json.dumps({"cases": [], "summary": {"status": "ok"}}, indent=2).encode()
    assert head_past_cases(empty) is None   # not the runner's layout: walked
    # not the runner's layout, or not JSON after the rows: None, never a guess
    assert head_past_cases(json.dumps(doc, sort_keys=True).encode()) is None          # one line
    # keys before `cases` (a run's `app`): read exactly, nested or not; a document whose keys are not in
    # the runner's sorted order, or bytes before the rows that are not one object's keys: None
    for before in ({"app": "fake"}, {"a": {"b": [1, {"c": 2}]}, "app": None}):
        doc_before = json.dumps({**before, **doc}, indent=2, sort_keys=True).encode()
        assert head_past_cases(doc_before) == {**before, "run_id": "r", "summary": {"status": "ok"}}
    assert head_past_cases(json.dumps({"app": "x", **doc}, indent=2).encode().replace(b'"app"', b'"zz"')) is None
    assert head_past_cases(b'{\n  "a": [\n  "cases": [\n' + text[len(b'{\n  "cases": [\n'):]) is None
    assert head_past_cases(text.replace(b'"run_id"', b'"zz"', 1).replace(b'"summary"', b'"aa"', 1)) is None  # unsorted
    assert head_past_cases(text[:-3]) is None
    assert head_past_cases(text.replace(b"\n  ]", b"\n  ] x", 1)) is None


def test_the_head_past_the_case_rows_is_none_where_the_document_is_not_json(tmp_path, monkeypatch):
    """report.cases_cut.head_past_cases: bytes that only look like the runner's layout (a comma with no
    key after or before it, a form feed where JSON allows no blank) are not a document: None, and
    read_results_file reads them as read_json_file does (its error), never a head from them."""
    from assay.core.errors import AssayError
    from assay.report.cases_cut import head_past_cases
    from assay.report.run_files import read_json_file, read_results_file
    from assay.rundir import streamed
    monkeypatch.setattr(streamed, "WALK_ABOVE", 0)   # as a 100,000-case results.json is read
    path = tmp_path / "results.json"
    doc = {"cases": [{"case_id": "a", "layers": {"x": ["p", "q"]}}]}
    text = json.dumps(doc, indent=2, sort_keys=True).encode()
    assert head_past_cases(text) == {}
    assert head_past_cases(json.dumps({"app": "x", **doc}, indent=2).encode()) == {"app": "x"}
    for bad in (text.replace(b"\n  ]\n}", b"\n  ],\n}"), text.replace(b"\n  ]\n}", b"\n  ]\x0c}"),
                text.replace(b"\n  ]\n}", b"\n  ]\x0b}"), b"{\n ," + text[1:], b"{\n  1," + text[1:]):
        with pytest.raises(ValueError):
            json.loads(bad)
        assert head_past_cases(bad) is None, bad[-12:]
        path.write_bytes(bad)
        for read in (read_json_file, lambda p: read_results_file(p, rows=False)):
            with pytest.raises(AssayError, match="not readable UTF-8 JSON"):
                read(path)
