"""The viewer's pure parts, in process: the gate is "checking" (never green) until the gate's own
evaluation has finished; background passes yield to requests; the gate reads holdout ids only
when it names a case; the shown rows carry their own unit before the background pass is done;
a case document carries each turn's judge calls and simulator notes."""

from __future__ import annotations

import threading

from rundir_util import make_run


def test_gate_is_checking_and_never_green_until_evaluated(tmp_path, monkeypatch):
    from assay.view import gates, runs
    reports = tmp_path / "reports"
    make_run(reports, [{"id": "c-1"}], run_id="smoke-20261130T101500Z")
    release, real = threading.Event(), gates.decide
    monkeypatch.setattr(gates, "decide", lambda d: (release.wait(10), real(d))[1])
    row = runs.run_row(reports, "smoke-20261130T101500Z", 0.0)
    assert (row["gate"], row["green"], row["reasons"]) == ("checking", False, [])
    assert runs.run_row(reports, "smoke-20261130T101500Z", 0.2)["gate"] == "checking"  # waited, still unknown
    listed = runs.list_runs(reports, wait=0.1)
    assert listed["checking"] == 1 and not listed["runs"][0]["green"]
    release.set()
    row = runs.run_row(reports, "smoke-20261130T101500Z", 5.0)
    assert (row["gate"], row["green"]) == ("open", True)


def test_background_pass_waits_for_requests_to_finish():
    from assay.view import quiet
    done = threading.Event()
    with quiet.busy():
        t = threading.Thread(target=lambda: (quiet.wait_quiet(5.0), done.set()))
        t.start()
        assert not done.wait(0.2)  # a request is being answered: the pass holds back
        with quiet.waiting():  # this request now waits on the pass: it goes on
            assert done.wait(5.0)
    t.join(5)


def test_gate_reads_no_case_verdict_when_it_names_no_case(tmp_path, monkeypatch):
    from assay.core import casestore
    from assay.report import gate
    run = make_run(tmp_path / "reports", [{"id": f"c-{i}", "verdict": "fail" if i == 3 else "pass"} for i in range(20)])
    reads, real = [], casestore._json   # the one reader of a case's verdict.json (an older run dir's)
    monkeypatch.setattr(casestore, "_json", lambda p: (reads.append(p.name), real(p))[1])
    res = gate.evaluate(run, verify=False)
    assert not res.open and any("c-3" in r for r in res.reasons)
    assert "verdict.json" not in reads  # a gating failure is named from results.json; no seal to read
    run2 = make_run(tmp_path / "r2", [{"id": "c-1", "verdict": "unscored"}, {"id": "c-2"}])
    res2 = gate.evaluate(run2, verify=False)
    assert any("c-1" in r for r in res2.reasons) and reads.count("verdict.json") >= 2  # named: the seal is read


def test_first_page_rows_carry_their_unit_before_the_pass(tmp_path, monkeypatch):
    from assay.view import cases
    reports = tmp_path / "reports"
    make_run(reports, [{"id": f"c-{i:03d}", "unit": f"u{i % 3}"} for i in range(150)], run_id="smoke-20261130T101500Z")
    monkeypatch.setattr(cases, "_fill_meta", lambda doc: None)  # the background pass never runs
    page = cases.page(reports, "smoke-20261130T101500Z", {"size": ["10"]})
    assert [r["unit"] for r in page["cases"]] == [f"u{i % 3}" for i in range(10)]
    assert page["meta_ready"] is False and page["counts"] == {"pass": 150} and page["facets"]["units"] == []


def test_case_doc_carries_each_turns_judge_calls_and_simulator_notes(tmp_path):
    """turns/<n>/judge.json and turns/<n>/simulator.json reach the case page's document under
    their turn, the case-level ones at the top; a turn without them has None; holdout stays out."""
    import json

    import pytest

    from assay.view.case import case_doc
    from assay.view.paths import NotFound
    reports = tmp_path / "reports"
    run = make_run(reports, [{"id": "c-1", "verdict": "pass"}, {"id": "h-1", "verdict": "pass", "holdout": True}])
    files = {"turns/1/answer.txt": "a1", "turns/2/answer.txt": "a2",
             "turns/2/judge.json": {"turn": 2, "rubrics": [{"pin": "tone-v1", "scope": "turn"}]},
             "turns/1/simulator.json": {"turn": {"message": "hi", "stop": False}, "calls": []},
             "simulator.json": {"outcome": "goal_reached"}, "judge.json": {"rubrics": [{"pin": "tone-v1", "turn": 2}]}}
    for name, doc in files.items():
        (run / "cases" / "c-1" / name).parent.mkdir(parents=True, exist_ok=True)
        (run / "cases" / "c-1" / name).write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    doc = case_doc(reports, run.name, "c-1")
    assert [t["turn"] for t in doc["turns"]] == [1, 2]
    assert doc["turns"][0]["judge"] is None and doc["turns"][1]["judge"]["rubrics"][0]["scope"] == "turn"
    assert doc["turns"][0]["simulator"]["turn"]["message"] == "hi" and doc["turns"][1]["simulator"] is None
    assert doc["simulator"] == {"outcome": "goal_reached"} and doc["judge"]["rubrics"][0]["turn"] == 2
    with pytest.raises(NotFound):
        case_doc(reports, run.name, "h-1")
