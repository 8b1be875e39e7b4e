"""The viewer's pure parts, in process: the gate is "checking" (never green) until the gate's own
evaluation has finished; background passes yield to requests; the gate reads holdout ids only
when it names a case; the shown rows carry their own unit before the background pass is done;
a case document carries each turn's judge calls and simulator notes."""

from __future__ import annotations

import threading

from rundir_util import make_run


def test_gate_is_checking_and_never_green_until_evaluated(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", "0")   # a crafted run, incomplete for --verify: only a kept answer
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


def test_the_gate_is_decided_before_the_per_case_pass(tmp_path, monkeypatch):
    """The run page's first request asks for its gate; the per-case pass that fills the facets
    waits for that decision before it reads a single verdict (order of events, no timer)."""
    monkeypatch.setenv("ASSAY_CHECK_KEEP_ABOVE", "0")   # a crafted run, incomplete for --verify: only a kept answer
    from assay.core import case_read
    from assay.view import cases, gates
    reports = tmp_path / "reports"
    run = make_run(reports, [{"id": f"c-{i:03d}", "unit": "u"} for i in range(30)], run_id="smoke-20261130T101500Z")
    events, release, pass_waits = [], threading.Event(), threading.Event()
    real_decide, real_settled, real_verdicts = gates.decide, gates.settled, case_read.case_verdicts

    def decide(d):
        assert release.wait(60), "the per-case pass never waited for the gate"
        doc = real_decide(d)
        events.append("gate decided")
        return doc

    def settled(d, timeout):
        events.append("pass waits for the gate")
        pass_waits.set()
        return real_settled(d, timeout)

    def verdicts(d, ids, **kw):
        events.append("request reads verdicts" if threading.current_thread() is threading.main_thread()
                      else "pass reads verdicts")
        return real_verdicts(d, ids, **kw)

    monkeypatch.setattr(gates, "decide", decide)
    monkeypatch.setattr(gates, "settled", settled)
    monkeypatch.setattr(cases, "case_verdicts", verdicts)
    monkeypatch.setattr(cases, "GATE_FIRST_S", 60.0)
    page = cases.page(reports, run.name, {"size": ["10"]})   # the run page's rows, the decision asked
    assert [r["unit"] for r in page["cases"]] == ["u"] * 10
    assert pass_waits.wait(60)
    release.set()
    assert cases.index(reports, run.name)["meta"].wait(60)
    assert sorted(events[:2]) == ["pass waits for the gate", "request reads verdicts"], events
    assert events[2] == "gate decided" and events[3:] and set(events[3:]) == {"pass reads verdicts"}, events
    assert gates.gate(run, (run / "results.json").stat().st_mtime, 0)["gate"] == "open"


def test_the_worker_process_decides_as_the_thread_would(tmp_path, monkeypatch):
    """A server's gate decisions come from its worker process: the same answer as `gates.decide`
    in process (the one verdict), and the process really answered (the in-process path is broken)."""
    from assay.view import gates
    run = make_run(tmp_path / "reports", [{"id": "c-1"}, {"id": "c-2", "verdict": "fail"}], run_id="smoke-20261130T101600Z")
    want = gates.decide(run)
    assert want["gate"] == "closed" and any("c-2" in r for r in want["reasons"])
    monkeypatch.setattr(gates, "decide", lambda d: {"gate": "not this one"})
    assert gates.start_worker()
    try:
        got = gates.gate(run, (run / "results.json").stat().st_mtime, wait=None)
        assert got == want and gates._PROCESS, got   # a failed worker is dropped, never used again
    finally:
        gates.stop_worker()
    assert not gates._PROCESS


def test_case_verdicts_read_as_the_store_reads_each_case(tmp_path):
    """core.case_read.case_verdicts, from the journal's start or through its index: what
    open_store(run).verdict(id) says of each case (first committed line, garbled lines and a torn
    tail skipped, unsafe and unknown ids left out)."""
    from assay.core import casestore
    from assay.core.case_read import case_verdicts
    run = tmp_path / "run"
    run.mkdir()
    lines = [casestore.record_line(f"c-{i}", {"case_id": f"c-{i}", "verdict": "pass", "n": i}, {}) for i in range(40)]
    lines.insert(3, b'{"case_id": 7}\n')                                          # not a case record
    lines.insert(5, casestore.record_line("c-1", {"case_id": "c-1", "verdict": "fail"}, {}))   # a later line of c-1
    lines.insert(9, b'{"case_id": "c-x", "verdict": [1}\n')                        # its verdict unreadable
    (run / casestore.JOURNAL).write_bytes(b"".join(lines) + lines[20][:25])      # a torn tail
    store = casestore.scan(run)
    ids = ["c-0", "c-1", "c-x", "c-39", "nope", "../c-2", "c-5", "c-1"]
    want = {cid: store.verdict(cid) for cid in ids if cid != "../c-2" and isinstance(store.verdict(cid), dict)}
    assert want["c-1"]["verdict"] == "pass" and "c-x" not in want and "c-39" in want
    for from_start in (True, False):
        assert case_verdicts(run, ids, from_start=from_start) == want
        assert case_verdicts(run, ids[:2], from_start=from_start) == {k: want[k] for k in ids[:2]}


def test_line_parser_reads_each_line_as_loads_does():
    import json

    from assay.core.jsonio import line_parser, loads, loads_line
    deep = "[" * 50000 + "]" * 50000
    lines = ['{"a": NaN}', '{"a": -Infinity}', '{"a": 1e400}', '{"a": 1e-400}', '{"a": "\\ud800"}', '{"a": "\\ud83d\\ude00"}',
             '{"a": ' + "9" * 400 + '.0}', '{"a": 1.5, "b": [1, {"c": null}]}', "[1,2", "", "\ufeff{}", "1 2", deep,
             '{"a": 1, "a": 2}']

    def outcome(parse, line):
        try:
            return json.dumps(parse(line))
        except ValueError as exc:
            return str(exc)
    for line in lines:
        assert outcome(line_parser(line), line) == outcome(loads, line), line[:40]
        assert outcome(line_parser("\n".join(lines)), line) == outcome(loads, line), line[:40]
    assert line_parser('{"a": 1}') is not loads_line and line_parser('{"a": "\\udc00"}') is loads_line
    for line in lines:   # run.log's parse, a line at a time: the same answers
        assert outcome(loads_line, line) == outcome(loads, line), line[:40]


def test_too_deep_names_the_first_path_as_it_did():
    from assay.core.jsonio import too_deep
    rows = {"cases": [{"id": i, "layers": {"a": "pass"}, "f": ["a"]} for i in range(50)], "summary": {"n": 50}}
    assert too_deep(rows, 4) is None and too_deep(rows, 100) is None and too_deep(rows, 3) == "cases[49].f"
    assert too_deep(rows, 2) == "cases[49]" and too_deep(rows, 1) == "summary"
    assert too_deep({"a": [{"b": [[1]]}], "z": 1}, 3) == "a[0].b" and too_deep([[{"k": {}}]], 3) == "[0][0].k"
    assert too_deep(5, 0) is None and too_deep({}, 0) == "(root)"


def test_id_line_parser_answers_as_its_parse_does():
    """verdicts.jsonl's rows parsed once per shape (jsonio.id_line_parser): the same value or the same
    error as the parse it wraps, whatever the line; nested values are shared between rows alike."""
    import json
    import random

    from assay.core.jsonio import MAX_DEPTH, id_line_parser, line_parser, loads

    base = '{"canary": false, "case_id": "%s", "layers": {"answer": "%s"}, "verdict": "%s"}'
    lines = [base % (f"c-{i}", v, v) for i in range(40) for v in ("pass", "fail")]
    lines += [
        '{"case_id": "a", "case_id":"b"}', '{"case_id":"b", "case_id": "a"}',    # duplicate keys: the last wins
        '{"case_id": "a", "case_id": "b"}',                                         # the marker twice
        '{"x": {"case_id": "nested"}, "case_id": 5}', '{"x": {"case_id": "nested"}}',
        '{"case_id": "a\\"b", "v": 1}', '{"case_id": "a\\u0041", "v": 1}', '{"case_id": "tab\there"}',
        '{"case_id": "x", "v": "\\u0000"}', '{"case_id": "a", "case_id":"\\u0000"}', '{"case_id": "", "v": 1}', '{"case_id": "\u00e9\u4e2d", "v": 1}',
        '{"case_id": "x", "v": NaN}', '{"case_id": "x", "v": 1e400}', '{"case_id": "x", "v": "\\ud800"}',
        '{"case_id": "x"', '{"case_id": "x"}}', '\ufeff{"case_id": "x"}', '["case_id": "x"]', '[1, 2]', '"case_id": "x"',
        '{"a": "y"case_id": "x"}', '{"case_id": "x", "d": ' + "[" * 120 + "]" * 120 + "}",
        '{"case_id": "x\u2028y"}', '{"case_id": "x", "t": "%s"}' % ("\\n" * 3),
    ]
    rng = random.Random(7)
    noise = ["1", "null", "[1, {}]", '"s"', '{"case_id": "q"}']
    for _ in range(300):   # shapes with noise: the id anywhere, odd values beside it
        parts = [f'"k{j}": {rng.choice(noise)}' for j in range(rng.randint(0, 3))]
        parts.insert(rng.randint(0, len(parts)), f'"case_id": "{rng.choice(["a", "b-1", "", "c d"])}"')
        lines.append("{" + ", ".join(parts) + "}")

    def outcome(parse, line):
        try:
            return json.dumps(parse(line))
        except ValueError as exc:
            return "error: " + str(exc)
    text = "\n".join(lines)
    for depth in (None, MAX_DEPTH):
        plain = line_parser(text, max_depth=depth)
        shaped = id_line_parser(line_parser(text, max_depth=depth))
        for line in lines + lines:   # twice: the second time from the kept shapes
            assert outcome(shaped, line) == outcome(plain, line), line[:60]
    shaped = id_line_parser(loads)
    a, b = shaped(lines[0]), shaped(lines[2])
    assert a["case_id"] == "c-0" and b["case_id"] == "c-1" and a["layers"] is b["layers"]
    few = id_line_parser(loads, limit=1)
    assert [few(line)["case_id"] for line in lines[:6]] == ["c-0", "c-0", "c-1", "c-1", "c-2", "c-2"]
