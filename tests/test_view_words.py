"""The words the viewer's pages are built from, in process: a failed layer's sentence and the
first failing layer (report.sections, the report's own words), where a case is written
(view.source: the usual name, any name by its id line, never through a symlink, the line of the
failing expectation), each failing layer as expected beside actual (view.failure), and two runs'
cost and latency per case with deltas (compare.cost_delta)."""

from __future__ import annotations

import json

from rundir_util import make_run

TOOL = {"tool": "restart_service", "arg": "timeout_s", "calls": "any", "status": "fail", "reason": "expected 300, got 300000"}


def test_failure_sentence_reads_as_words_never_json():
    from assay.report.sections import failure_sentence
    assert failure_sentence("tool_selection", {"verdict": "fail", "checks": [TOOL, {"tool": "x", "arg": "y", "status": "pass"}]}) \
        == "restart_service.timeout_s: expected 300, got 300000"
    assert failure_sentence("tool_selection", {"verdict": "fail", "checks": [
        {"tool": "notify", "status": "fail", "reason": "tool_not_called"}]}) == "notify (not called)"
    assert failure_sentence("answer", {"verdict": "fail", "checks": [
        {"check": "must_contain", "entry": "refund", "status": "fail", "reason": "not found in the answer"}]}) \
        == 'must_contain "refund": not found in the answer'
    assert failure_sentence("routing", {"verdict": "fail", "expected": "billing", "observed": "tech"}).startswith(
        'expected "billing", observed "tech"')


def test_first_failure_is_the_first_layer_in_decision_order_or_why_unscored():
    from assay.report.sections import first_failure
    doc = {"verdict": "fail", "layers": {"answer": {"verdict": "fail", "checks": [{"check": "must_contain", "entry": "a", "status": "fail"}]},
                                          "tool_selection": {"verdict": "fail", "checks": [TOOL]}, "http": {"verdict": "pass"}}}
    first = first_failure(doc)
    assert first["layer"] == "tool_selection" and first["check"] == {"tool": "restart_service", "arg": "timeout_s"}
    assert first_failure({"verdict": "unscored", "layers": {}, "unscored_reason": "answer: no answer at <answer>"})["sentence"] \
        == "answer: no answer at <answer>"
    assert first_failure({"verdict": "pass", "layers": {"http": {"verdict": "pass"}}}) is None


def test_source_finds_the_case_file_and_the_failing_line_never_through_a_link(tmp_path):
    from assay.view import source
    (tmp_path / "datasets" / "team").mkdir(parents=True)
    (tmp_path / "datasets" / "c-1.yaml").write_text("id: c-1\nexpect:\n  args:\n    restart_service:\n      timeout_s: 300\n")
    (tmp_path / "datasets" / "team" / "refund case.yml").write_text("# a refund\nid: 'c-2'\nexpect: {route: billing}\n")
    outside = tmp_path / "outside.yaml"
    outside.write_text("id: c-3\n")
    (tmp_path / "datasets" / "c-3.yaml").symlink_to(outside)
    first = {"layer": "tool_selection", "check": {"tool": "restart_service", "arg": "timeout_s"}}
    assert source.where(tmp_path, "c-1", first) == {"path": "datasets/c-1.yaml", "line": 5}
    assert source.where(tmp_path, "c-2", {"layer": "routing", "check": None}, wait=10) == {
        "path": "datasets/team/refund case.yml", "line": 3}
    assert source.where(tmp_path, "c-3", None, wait=10) is None  # a symlink is never read
    assert source.source_doc(tmp_path, "c-1", None)["text"].startswith("id: c-1")


def test_failures_put_expected_beside_actual():
    from assay.view.failure import failures
    verdict = {"layers": {"tool_selection": {"verdict": "fail", "checks": [TOOL]}, "http": {"verdict": "pass"},
                          "execution": {"verdict": "unscored", "reason": "no actual result"}}}
    traj = {"tool_calls": [{"name": "restart_service", "arguments": {"timeout_s": 300000}}, {"name": "other", "arguments": {}}]}
    out = failures(verdict, {"args": {"restart_service": {"timeout_s": 300}}}, "done", traj)
    assert [f["layer"] for f in out] == ["tool_selection", "execution"]  # failing first, then unscored
    assert out[0]["expected"] == 'args: {"restart_service": {"timeout_s": 300}}'
    assert out[0]["actual"] == 'restart_service {"timeout_s": 300000}'
    assert out[1]["sentence"] == "no actual result" and out[1]["actual"] is None


def test_compare_cost_and_latency_per_case_and_in_total(tmp_path):
    from assay.compare.cost_delta import cost_latency
    (tmp_path / "prices.yaml").write_text("currency: USD\nper: 1000\nmodels:\n  m: {input: 1.0, output: 1.0}\n")
    runs = []
    for n, run_id in enumerate(("smoke-20261201T100000Z", "smoke-20261202T100000Z")):
        d = make_run(tmp_path / "reports", [{"id": "c-1"}, {"id": "c-2"}, {"id": "h-1", "holdout": True}], run_id=run_id)
        for cid in ("c-1", "c-2", "h-1"):
            (d / "cases" / cid / "trajectory.json").write_text(json.dumps(
                {"llm_calls": [{"model": "m", "input_tokens": 1000 * (n + 1) if cid == "c-1" else 1000, "output_tokens": 0}]}))
        runs.append(d)
    doc = cost_latency(*runs)
    assert "cases" not in doc and doc["currency"] == "USD"   # no per case map: the totals, folded
    # the holdout case is in each side's totals, never among the cases compared one by one
    assert doc["by_verdict_change"]["unchanged"] == {"cases": 2, "cost_delta": 1.0, "cost_unknown": 0,
                                                     "latency_delta_ms": 0.0}
    assert doc["both_traced"]["cases"] == 2 and doc["both_traced"]["delta"]["cost_total"] == 1.0
    assert doc["base"]["cost_total"] == 3.0 and doc["candidate"]["cost_total"] == 4.0 and doc["delta"]["cost_total"] == 1.0


def test_a_traceless_comparison_folds_the_same_totals_as_each_runs_rows(tmp_path):
    """A trace-less run's cases are folded from their verdict alone (stats.cost.case_light, no row):
    the totals and verdict-change groups equal run_cost's and compare_to_baseline's over the rows,
    a skipped or holdout case is in no pair's figures, and a listed case carries its own latency."""
    from assay.compare.cost_delta import cost_latency
    from assay.compare.document import compare_runs
    from assay.stats.cost import compare_to_baseline, run_cost
    specs = [[{"id": "c-1"}, {"id": "c-2"}, {"id": "c-3"}, {"id": "c-4"}, {"id": "h-1", "holdout": True}],
             [{"id": "c-1", "verdict": "fail"}, {"id": "c-2"}, {"id": "c-3", "verdict": "skipped"}, {"id": "c-4"},
              {"id": "h-1", "holdout": True}]]
    latency = [{"c-1": 10.0, "c-2": 20.25, "c-3": 7.0, "c-4": 5.0, "h-1": 1.0},
               {"c-1": 40.5, "c-2": 20.25, "c-3": 9.0, "c-4": 6.0, "h-1": 900.0}]
    runs = []
    for n, run_id in enumerate(("smoke-20261201T100000Z", "smoke-20261202T100000Z")):
        d = make_run(tmp_path / "reports", specs[n], run_id=run_id, manifest={"traces": {"collected": False}})
        for cid, ms in latency[n].items():
            v = json.loads((d / "cases" / cid / "verdict.json").read_text())
            v["latency_ms"] = ms
            if cid == "c-4" and n == 0:   # a judged case: its full row (the judge's tokens), beside the light ones
                v["judge_usage"] = {"calls": 1, "input_tokens": 10, "output_tokens": 2}
            (d / "cases" / cid / "verdict.json").write_text(json.dumps(v))
        runs.append(d)
    doc = cost_latency(*runs)
    base, cand = run_cost(runs[0], None), run_cost(runs[1], None)
    assert doc["by_verdict_change"] == compare_to_baseline(cand, base)["by_verdict_change"]
    assert doc["by_verdict_change"]["broken"] == {"cases": 1, "cost_delta": 0.0, "cost_unknown": 1,
                                                  "latency_delta_ms": 30.5}
    for side, run in (("base", base), ("candidate", cand)):
        lat = run["totals"]["latency_ms"]
        assert (doc[side]["latency_p50_ms"], doc[side]["latency_p95_ms"], doc[side]["latency_mean_ms"]) == \
            (lat["p50"], lat["p95"], lat["mean"]), side
        assert doc[side]["judge_calls"] == run["totals"]["judge"]["calls"] and doc[side]["traced_cases"] == 0
    assert doc["base"]["judge_calls"] == 1 and doc["candidate"]["latency_p95_ms"] == 900.0   # holdout: in the totals
    pairs = {p["case_id"]: p for ps in compare_runs(*runs)["buckets"].values() for p in ps}
    assert pairs["c-1"]["cost_latency"] == {"cost": [None, None, None], "latency_ms": [10.0, 40.5, 30.5]}
    assert "cost_latency" not in pairs["c-2"] and "cost_latency" not in pairs["c-3"] and "h-1" not in pairs


def test_key_line_reads_keys_by_indentation():
    from assay.view.source import key_line
    text = ("id: c-1\n# expect: not this\ninput:\n  expect: nested, not this\nexpect:\n  route: billing\n"
            "  args:\n    \"restart_service\":\n      calls: any\n      timeout_s: 300\n  tools: {order: [a]}\n")
    assert key_line(text, ("expect", "args", "restart_service", "timeout_s")) == 10
    assert key_line(text, ("expect", "args", "restart_service", "missing")) == 8  # the deepest key it has
    assert key_line(text, ("expect", "tools", "order")) == 11  # a flow mapping: its parent's line
    assert key_line(text, ("expect",)) == 5 and key_line(text, ("nothing",)) is None


def test_key_line_reads_a_padded_line_in_linear_time():
    """A case file's line with a long run of blanks and no colon after it (a mined case's padded input):
    the key pattern's lazy key ended at each blank of the run and scanned the rest again, quadratic (200 KB:
    ~46 s, 1 MB: ~20 min per page of its source). In a child process, so a hang is bounded (never a speed bar)."""
    import subprocess
    import sys
    code = ("import sys; from assay.view.source import key_line\n"
            "text = ('id: c-1\\ninput:\\n  messages:\\n  - role: user\\n    content: |\\n      word' + ' ' * 1_000_000"
            " + 'x\\nexpect:\\n  route: billing\\n')\n"
            "print(key_line(text, ('expect', 'route')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "8", r.stdout + r.stderr


def test_the_rows_request_reads_no_case_file_the_sources_request_does(tmp_path, monkeypatch):
    from assay.view import cases, source
    reports = tmp_path / "reports"
    make_run(reports, [{"id": f"c-{i}", "verdict": "fail" if i < 2 else "pass"} for i in range(5)], run_id="smoke-20261130T101500Z")
    (tmp_path / "datasets").mkdir()
    for i in range(5):
        (tmp_path / "datasets" / f"c-{i}.yaml").write_text(f"id: c-{i}\nexpect:\n  answer:\n    must_contain: [refund]\n")
    reads, real = [], source.read_bytes
    monkeypatch.setattr(source, "read_bytes", lambda p: (reads.append(p.name), real(p))[1])
    page = cases.page(reports, "smoke-20261130T101500Z", {})
    assert len(page["cases"]) == 5 and reads == []
    got = cases.sources(reports, "smoke-20261130T101500Z", {"ids": ["c-0,c-1,c-2,nope"]})["sources"]
    assert got == {"c-0": {"path": "datasets/c-0.yaml", "line": 4}, "c-1": {"path": "datasets/c-1.yaml", "line": 4}}
    assert sorted(reads) == ["c-0.yaml", "c-1.yaml"]  # failing rows only, once each
    cases.sources(reports, "smoke-20261130T101500Z", {"ids": ["c-0,c-1"]})
    assert len(reads) == 2
