"""Issue 24 D6: failures are printed in their own words in JUnit, the report and cluster titles.

Before: `tool_selection: None -> fail (expected 45.5, got 540.0)`; a judged failure as the
layer's raw JSON; an unscored gating case as <skipped> in JUnit although it closed the gate."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from helpers import run_script
from rundir_util import make_run
from rundir_util import cases_view

ARGS_LAYER = {"verdict": "fail", "checks": [
    {"tool": "issue_refund", "arg": "amount", "expectation": 45.5, "call_index": 0, "calls": "any",
     "status": "fail", "reason": "expected 45.5, got 540.0"},
    {"tool": "notify", "arg": None, "expectation": None, "call_index": None, "calls": "any",
     "status": "fail", "reason": "tool_not_called"}]}
JUDGED_LAYER = {"verdict": "fail", "provisional": False, "provisional_verdict": None, "usage": {"calls": 2},
                "rubrics": [{"pin": "refund-eta-v1", "verdict": "fail", "provisional": False, "infra": False,
                             "why_provisional": None}]}
JUDGE_DOC = {"case_id": "c-judged", "rubrics": [{"pin": "refund-eta-v1", "verdict": "fail", "nodes": [
    {"node_id": "states-amount", "criterion": "The reply states the amount.", "verdict": "pass", "reason": "ok"},
    {"node_id": "states-arrival", "criterion": "The reply says when the refund will arrive.", "verdict": "fail",
     "reason": "no arrival time is given"}]}]}


def a_run(tmp_path):
    run = make_run(tmp_path / "state" / "reports", [
        {"id": "c-args", "verdict": "fail"}, {"id": "c-judged", "verdict": "fail"},
        {"id": "c-unscored", "verdict": "unscored"}, {"id": "c-unscored-soft", "verdict": "unscored", "gating": False}])
    for cid, name, layer in (("c-args", "tool_selection", ARGS_LAYER), ("c-judged", "judged", JUDGED_LAYER)):
        path = cases_view(run) / cid / "verdict.json"
        doc = json.loads(path.read_text())
        doc["layers"]["answer"] = {"verdict": "pass", "checks": []}
        doc["layers"][name] = layer
        path.write_text(json.dumps(doc))
    (run / "cases" / "c-judged" / "judge.json").write_text(json.dumps(JUDGE_DOC))
    rows = [json.loads(x) for x in (run / "verdicts.jsonl").read_text().splitlines()]
    for row in rows:
        if row["case_id"] == "c-args":
            row["layers"] = {**row["layers"], "answer": "pass", "tool_selection": "fail"}
        if row["case_id"] == "c-judged":
            row["layers"] = {**row["layers"], "answer": "pass", "judged": "fail"}
    (run / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run


def test_junit_names_the_argument_the_criterion_and_fails_unscored_gating(tmp_path):
    run = a_run(tmp_path)
    junit = tmp_path / "junit.xml"
    run_script("gate", run, "--no-verify", "--junit", junit)
    by = {tc.get("name"): tc for tc in ET.fromstring(junit.read_bytes()).iter("testcase")}
    args = by["c-args"].find("failure").get("message")
    assert "issue_refund.amount -> fail (expected 45.5, got 540.0)" in args and "None" not in args, args
    assert "notify (not called) -> fail" in args
    judged = by["c-judged"].find("failure").get("message")
    assert "refund-eta-v1 states-arrival: The reply says when the refund will arrive. (judge: no arrival time is given)" \
        in judged, judged
    assert "{" not in judged and "states-amount" not in judged
    unscored = by["c-unscored"].find("failure")
    assert unscored is not None and unscored.get("type") == "unscored" and by["c-unscored"].find("skipped") is None
    assert by["c-unscored-soft"].find("skipped") is not None  # gating: false did not close the gate


def test_report_and_clusters_use_the_same_words(tmp_path):
    run = a_run(tmp_path)
    r = run_script("draft_report", run, "-o", tmp_path / "report.md")
    assert r.rc == 0, r.stdout + r.stderr
    report = (tmp_path / "report.md").read_text()
    assert "issue_refund.amount -> fail (expected 45.5, got 540.0)" in report
    assert "None -> fail" not in report
    assert "refund-eta-v1 states-arrival: The reply says when the refund will arrive." in report
    assert "(judge: no arrival time is given)" in report
    c = run_script("cluster_failures", run)
    assert c.rc == 0, c.stdout + c.stderr
    titles = [g["reason"] for g in c.json["clusters"]]
    assert any(t.startswith("issue_refund.amount: expected") for t in titles), titles
    assert "refund-eta-v1 states-arrival: The reply says when the refund will arrive." in titles, titles
    assert not any("None" in t or "{" in t for t in titles), titles
