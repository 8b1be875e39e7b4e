"""The manifest written as a stream (core.json_rows, suite.version.CompactVersion) is byte for byte
what the whole-document write gave, secrets redacted alike, and the suite hashes are suite_version's."""

from __future__ import annotations

import hashlib
import json

from helpers import SCRIPTS  # noqa: F401 (puts scripts/ on sys.path)

from assay.core import writer
from assay.core.json_rows import write_json_with_rows
from assay.core.runplan import CaseTable
from assay.suite.version import CompactVersion, manifest_cases, manifest_rows, suite_version


def _case(i: int, **extra) -> dict:
    return {"id": f"c-{i:04d}", "split": ["smoke"] if i % 3 else ["smoke", "canary"], "unit": "billing",
            "input": {"messages": [{"role": "user", "content": f"refund {i} \u00e9\u4e2d"}]},
            "expect": {"route": "billing", "must_contain": [str(i)]}, **extra}


def _plan(cases) -> dict:
    return {"adapter": {"invocation": {"mode": "http", "endpoint": "POST /chat", "request_body": '{"m": "<user turn>"}',
                                       "response_body": '{"a": "<answer>"}'}},
            "capability_matrix": {"routing": {"enabled": True}}, "scoring": {"oos_route": "oos"},
            "judge": {"enabled": False}, "cases": cases}


def test_rows_stream_to_the_same_bytes_as_the_whole_document(tmp_path):
    doc = {"run_id": "smoke-20260101T000000Z", "zeta": {"nested": [1, 2, {"cases": []}]}, "alpha": "x\ny",
           "empty": [], "uni": "\u00e9\u2028"}
    for n in (0, 1, 2, 513, 1100):
        rows = [{"id": f"c-{i}", "set": "smoke", "sha256": "ab" * 32, "deep": {"l": [i, {"k": None}]}}
                for i in range(n)]
        whole, streamed = tmp_path / f"whole-{n}.json", tmp_path / f"stream-{n}.json"
        writer.write_json(whole, dict(doc, cases=rows))
        digest = write_json_with_rows(streamed, doc, "cases", iter(rows))
        assert streamed.read_bytes() == whole.read_bytes(), n
        assert digest == hashlib.sha256(whole.read_bytes()).hexdigest()
        assert json.loads(streamed.read_text())["cases"] == rows


def test_a_secret_in_a_row_or_the_document_is_redacted_alike(tmp_path):
    secret = "sk-live-streamed-7731"
    writer.register_secrets([secret])
    try:
        doc = {"run_id": "r", "note": f"token {secret}"}
        rows = [{"id": "c-1", "set": "smoke"}, {"id": "c-2", "set": f"has {secret} in it"}]
        whole, streamed = tmp_path / "whole.json", tmp_path / "stream.json"
        writer.write_json(whole, dict(doc, cases=rows))
        write_json_with_rows(streamed, doc, "cases", rows)
        assert streamed.read_bytes() == whole.read_bytes() and secret.encode() not in streamed.read_bytes()
    finally:
        writer.register_secrets([])


def test_the_marker_inside_the_document_falls_back_to_the_whole_write(tmp_path):
    doc = {"odd": "\u0000assay-rows\u0000"}
    rows = [{"id": "c-1"}]
    whole, streamed = tmp_path / "whole.json", tmp_path / "stream.json"
    writer.write_json(whole, dict(doc, cases=rows))
    write_json_with_rows(streamed, doc, "cases", rows)
    assert streamed.read_bytes() == whole.read_bytes()


def test_compact_version_is_suite_version():
    cases = [_case(i) for i in range(300)] + [_case(999, id="Z-last"), _case(998, id="a.first")]
    plan = _plan(CaseTable.of(cases))
    compact = CompactVersion.of(plan)
    assert compact is not None
    full = suite_version(_plan(cases))
    assert compact.suite_sha256 == full["suite_sha256"] and compact.suite_parts_sha256 == full["suite_parts_sha256"]
    assert [compact.case_sha256(i) for i in range(len(cases))] == [full["cases"][c["id"]] for c in cases]

    def case_set(head):
        return "canary" if "canary" in head["split"] else "smoke"
    assert list(manifest_rows(plan["cases"], case_set, compact)) == manifest_cases(plan, case_set, full)
    # a changed case changes the suite hash (the streamed hash is not a constant)
    changed = CompactVersion.of(_plan(CaseTable.of(cases[:-1] + [_case(998, id="a.first", expect={"route": "other"})])))
    assert changed.suite_sha256 != compact.suite_sha256
    assert changed.suite_parts_sha256["cases"] != compact.suite_parts_sha256["cases"]


def test_duplicate_ids_are_left_to_the_whole_map():
    assert CompactVersion.of(_plan(CaseTable.of([_case(1), _case(1)]))) is None
    assert CompactVersion.of(_plan([_case(1)])) is None   # not a run's CaseTable
