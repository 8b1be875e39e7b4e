"""A new user's adapter for a router app whose payments agent moves money: it reads the amount
debited from `result_from_response` and, as a backstop, from the answer text (`result_pattern`).
The path is misspelt (`result.debitted`), so every case's value came from the answer's words, and
the app that debits twice while saying "Transferred 10" passed every execution check: the gate
opened on a wrong side effect. A declared result source that no answer held is a hollow source,
not a fallback (as a route path is). Driven the way the README says (convert_suite, make_plan,
run_cases, gate as subprocesses), against a real HTTP app on its own loopback port.
"""

from __future__ import annotations

import json

import pytest

from fakeapp import Reply, run_as_a_user, run_runner
from helpers import run_script, write_yaml

ADAPTER = """adapter_version: 1
app: {name: bank}
access_level: black
invocation:
  mode: http
  base_url: ${BANK_URL}
  endpoint: POST /chat
  request_body: '{"message": "<user turn>"}'
  response_body: '{"answer": "<answer>"}'
  health_check: {method: GET, path: /healthz, expect_status: [200]}
  route_from_response: route
  result_from_response: RESULT_PATH
  result_pattern: 'Transferred (\\d+)'
traces: {source: none}
"""
PROFILE = """profile_version: 1
stage: pre-stability
architecture: {kind: router_executor}
routing_contract: [payments, orders]
capability_matrix:
  answer_quality: {enabled: true}
  routing: {enabled: true}
  execution: {enabled: true}
  tool_selection: {enabled: false, blocked_by: no traces}
  trajectory: {enabled: false, blocked_by: no traces}
"""


def case(cid: str, content: str) -> str:
    return (f"id: {cid}\nsplit: [full, smoke]\ncategory: happy\ntest_type: MFT\ntemplate_id: null\n"
            f"input:\n  messages:\n    - {{role: user, content: {content}}}\n"
            "expect:\n  route: payments\n  result: {scalar: 10}\n")


def double_debit(req) -> Reply:
    """Routes right, says it moved 10, debits 20."""
    if req.method == "GET":
        return Reply(200, {"ok": True})
    return Reply(200, {"answer": "Transferred 10. Balance now 80.", "route": "payments",
                       "result": {"debited": 20, "balance": 80}})


def pipeline(tmp_path, result_path: str):
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("RESULT_PATH", result_path))
    write_yaml(state / "profile.yaml", PROFILE)
    for cid, text in {"c-pay00001": "Transfer 10 to Bob", "c-pay00002": "Send 10 to Alice"}.items():
        write_yaml(state / "datasets" / f"{cid}.yaml", case(cid, text))
    return run_as_a_user(tmp_path, state, double_debit, "BANK_URL")


def execution(run_dir, cid: str) -> dict:
    for line in (run_dir / "cases.jsonl").read_text().splitlines():
        rec = json.loads(line)
        v = rec.get("verdict", rec)
        if v.get("case_id") == cid:
            return v["layers"]["execution"]
    raise AssertionError(cid)


@pytest.mark.parametrize("result_path", ["result.debitted", "result.debited"])
def test_a_result_path_no_answer_holds_is_a_hollow_source_not_a_fallback(tmp_path, result_path):
    run_dir, g = pipeline(tmp_path, result_path)
    layer = execution(run_dir, "c-pay00001")
    if result_path == "result.debited":   # the control: the right path reads the double debit
        assert layer["verdict"] == "fail" and layer["source"] == "result_from_response"
        assert layer["first_source"] == {"source": "result_from_response", "path": "result.debited", "found": True}
        assert g.rc == 1 and "c-pay00001 (execution)" in g.stdout, g.stdout
        return
    # each case still says where its value came from (the documented per-case fallback) ...
    assert layer["verdict"] == "pass" and layer["source"] == "result_pattern"
    assert layer["first_source"] == {"source": "result_from_response", "path": "result.debitted", "found": False}
    summary = json.loads((run_dir / "results.json").read_text())["summary"]
    assert summary["result_source"] == {"source": "result_from_response", "path": "result.debitted",
                                        "read": 2, "found": 0, "fell_back": 2}
    assert run_runner("--verify", run_dir).rc == 0   # --verify recounts the new summary block
    # ... and the gate closes on the hollow source (before: PASS while the app debited twice)
    assert g.rc == 1, g.stdout
    assert g.stdout.splitlines()[0].startswith(f"{run_dir.name}: FAIL")
    assert ("gate closed: result_from_response 'result.debitted' was absent in all 2 answer(s) read for "
            "execution (a hollow result source; 2 fell back to result_pattern or another later source)") in g.stdout
    assert "fix the path in adapter.yaml" in g.stdout
    j = run_script("gate", run_dir, "--json")   # the same decision on every surface
    assert j.rc == 1 and any("hollow result source" in x for x in j.json["reasons"])


def test_the_gate_lines_for_a_result_source_only_some_answers_lack():
    from assay.report.gate_trust import result_source_line, result_source_reason
    partial = {"result_source": {"source": "result_from_tool", "path": "lookup_invoice.total", "read": 5,
                                 "found": 3, "fell_back": 2}}
    assert result_source_reason(partial) is None
    assert result_source_line(partial) == ("  execution: result_from_tool 'lookup_invoice.total' absent in 2 of 5 "
                                           "answer(s); 2 read from a later source instead "
                                           "(verdict.json layers.execution.first_source)")
    assert result_source_reason({"result_source": {"source": "result_from_response", "path": "x", "read": 3,
                                                   "found": 0, "fell_back": 0}})
    assert result_source_reason({}) is None and result_source_line({}) is None


def test_a_route_the_adapter_cannot_observe_is_named_at_the_route_line(tmp_path):
    """The same new user's app reports no route at all and the adapter declares no route source:
    validate_cases warned `route_not_observable` at line 1 of each case file, not at the
    `route:` line to fix (unknown_route names its line; this names its line too)."""
    state = tmp_path / "app" / ".assay"
    write_yaml(state / "adapter.yaml", ADAPTER.replace("  route_from_response: route\n", "")
               .replace("RESULT_PATH", "result.debited"))
    write_yaml(state / "profile.yaml", PROFILE)
    write_yaml(state / "datasets" / "c-pay00001.yaml", case("c-pay00001", "Transfer 10 to Bob"))
    work = state / "work"
    r = run_script("convert_suite", state, "-o", work / "converted.json", "--split-dir", work)
    assert r.rc == 0, r.stdout + r.stderr
    r = run_script("validate_cases", "--cases", work / "suite.json", "--capabilities", work / "capabilities.json",
                   "--adapter", work / "adapter.json")
    assert r.rc == 0, r.stdout + r.stderr
    (finding,) = [f for f in r.json["findings"] if f["code"] == "route_not_observable"]
    lines = (state / "datasets" / "c-pay00001.yaml").read_text().splitlines()
    assert lines[finding["line"] - 1] == "  route: payments", finding
    assert finding["key"] == "expect.route"
