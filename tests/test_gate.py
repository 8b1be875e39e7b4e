"""gate.py: each close condition in order, each one-screen line, --latest by timestamp,
JUnit validity (no holdout ids), the GitHub step summary, and exit codes 0/1/2."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest
from helpers import run_script
from rundir_util import DEFAULT_RUN_ID, basic_cases, make_run

from assay.report import gate as gate_mod
from assay.report import gate_reasons


def passing_cases():
    return [{"id": "c-pass-1"}, {"id": "c-pass-2"}, {"id": "canary-1", "canary": True}]


class InProcess:
    """gate's text output via the library (fast); rc/stdout like the CLI's text mode."""

    def __init__(self, run_dir, **kw):
        res = gate_mod.evaluate(run_dir, verify=False, **kw)
        self.rc = 0 if res.open else 1
        self.stdout = "\n".join(res.lines) + "\n"


def gate(run_dir, *args, env=None):
    """No extra flags: in-process; flags that only the CLI parses: a real subprocess."""
    if env is None and all(a in ("--require-canaries", "--max-infra-rate", "1") for a in args):
        kw = {"require_canaries": "--require-canaries" in args}
        if "--max-infra-rate" in args:
            kw["max_infra_rate"] = float(args[args.index("--max-infra-rate") + 1])
        return InProcess(run_dir, **kw)
    return run_script("gate", run_dir, "--no-verify", *args, env=env)


def test_cli_text_equals_library_lines(tmp_path):
    run_dir = make_run(tmp_path, basic_cases())
    r = run_script("gate", run_dir, "--no-verify")
    assert r.rc == 1 and r.stdout == InProcess(run_dir).stdout


def test_open_gate_exit_0_and_lines(tmp_path):
    run_dir = make_run(tmp_path, passing_cases())
    r = gate(run_dir)
    assert r.rc == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[0] == f"{DEFAULT_RUN_ID}: PASS"
    assert lines[1] == "  2 cases + 1 canary: 2 pass, 0 fail (0 gating), 0 unscored, 0 skipped"
    assert lines[2] == "  infra 0.0%, crash 0.0%, scorer errors 0"
    assert "  canaries 1/1 pass" in lines
    assert "  soft gate (smoke, k=1): closes on the same reasons as a hard gate; open means no failure among " \
           "these cases at k=1, not a release decision" in lines
    assert any(line.startswith("  not verified: --no-verify") for line in lines)
    assert not any("gate closed" in line for line in lines)


@pytest.mark.parametrize("summary,results,expect", [
    ({"passes": "3"}, {}, "malformed count(s) in results.json summary: passes"),
    ({"skipped": -1}, {}, "malformed count(s) in results.json summary: skipped"),
    ({"status": "incomplete"}, {}, "run status is 'incomplete', not 'ok'"),
    ({}, {"exit_code": 7}, "runner exit code 7 (not 0)"),
    ({"holdout": {"n": 3, "gating_failures": 2, "passes": 1, "failures": 2}}, {},
     "holdout gating failures (2) exceed the total (0)"),
    ({"infra_rate": 0.1}, {}, "infra rate 10.0% is above 5.0%"),
    ({"missing_artifacts": ["cases/c-pass-1/answer.txt"]}, {}, "missing artifacts: cases/c-pass-1/answer.txt"),
    ({"passes": 0, "failures": 0}, {}, "nothing was measured (0 passes + 0 failures), which is not a pass"),
    ({"infra_incomplete": 1}, {}, "1 case(s) infra_incomplete (their trace never completed"),
])
def test_each_close_condition(tmp_path, summary, results, expect):
    run_dir = make_run(tmp_path, passing_cases(), summary=summary, results=results)
    r = gate(run_dir)
    assert r.rc == 1, r.stdout
    assert any(line.startswith(f"  gate closed: {expect}") for line in r.stdout.splitlines()), r.stdout
    assert r.stdout.splitlines()[0].split(" -- closed: ")[0].endswith(": FAIL")


def test_gating_failures_name_cases_up_to_5_and_holdout_share(tmp_path):
    cases = [{"id": f"c-f{i}", "verdict": "fail"} for i in range(7)]
    cases += [{"id": "h-secret-1", "verdict": "fail", "holdout": True}, {"id": "c-ok"}]
    run_dir = make_run(tmp_path, cases)
    r = gate(run_dir)
    assert r.rc == 1
    line = [x for x in r.stdout.splitlines() if x.startswith("  gate closed:") and "gating failure" in x][0]
    assert line == ("  gate closed: 8 gating failure(s): c-f0 (answer), c-f1 (answer), c-f2 (answer), "
                    "c-f3 (answer), c-f4 (answer) and 2 more (1 of them holdout, aggregate only: ids sealed)")
    assert "h-secret-1" not in r.stdout
    assert "  holdout (aggregate only): 0/1 pass" in r.stdout.splitlines()
    # only a holdout case failed: the headline's cut at the first colon keeps its parentheses balanced
    r = gate(make_run(tmp_path / "h", [{"id": "h-secret-2", "verdict": "fail", "holdout": True}, {"id": "c-ok"}]))
    assert r.rc == 1 and "h-secret-2" not in r.stdout
    assert r.stdout.splitlines()[0].endswith(" -- closed: 1 gating failure(s) (1 of them holdout, aggregate only)")


def test_reasons_are_listed_in_reference_order(tmp_path):
    run_dir = make_run(tmp_path, [{"id": "c-f", "verdict": "fail"}],
                       summary={"status": "aborted_infra", "infra_rate": 0.5, "missing_artifacts": ["x"]},
                       results={"exit_code": 5})
    r = gate(run_dir, "--require-canaries")
    reasons = [x for x in r.stdout.splitlines() if x.startswith("  gate closed")]
    keys = ["run status", "runner exit code", "gating failure", "infra rate", "missing artifacts", "--require-canaries"]
    assert len(reasons) == len(keys)
    for reason, key in zip(reasons, keys):
        assert key in reason


def test_nongating_failure_suffix_and_gate_open(tmp_path):
    run_dir = make_run(tmp_path, passing_cases() + [{"id": "c-soft", "verdict": "fail", "gating": False}])
    r = gate(run_dir)
    assert r.rc == 0
    assert r.stdout.splitlines()[0] == f"{DEFAULT_RUN_ID}: PASS (1 failure(s) on gating:false cases, not counted)"


def test_canary_not_verified_line_and_require_canaries(tmp_path):
    cases = passing_cases() + [{"id": "canary-2", "canary": True, "verdict": "infra_error"}]
    run_dir = make_run(tmp_path, cases)
    r = gate(run_dir)
    assert r.rc == 0
    assert ("  canaries 1/2 pass; 1 NOT VERIFIED (infra, unscored or skipped: the harness was not "
            "verified by it; not a canary failure): canary-2 (infra_error: ") in r.stdout
    r = gate(run_dir, "--require-canaries")
    assert r.rc == 1
    assert "  gate closed: --require-canaries: 1/2 canaries passed; the harness is not verified" in r.stdout.splitlines()


def test_require_canaries_closes_a_run_without_canaries(tmp_path):
    run_dir = make_run(tmp_path, [{"id": "h1", "holdout": True}], run_id="holdout-20261129T101500Z")
    r = gate(run_dir, "--require-canaries")
    assert r.rc == 1
    assert "  gate closed: --require-canaries: this run has no canary (a holdout run never does)" in r.stdout.splitlines()
    assert "h1" not in r.stdout.replace("holdout", "")


def test_require_canaries_malformed_block(tmp_path):
    run_dir = make_run(tmp_path, passing_cases(), summary={"canaries": {"n": "two"}})
    r = gate(run_dir, "--require-canaries")
    assert r.rc == 1 and "summary.canaries is malformed" in r.stdout


def test_repeated_5xx_line_names_cases_and_holdout_wording(tmp_path):
    cases = passing_cases() + [{"id": "c-503", "verdict": "infra_error", "repeated_5xx": {"status": 503, "attempts": 3}}]
    run_dir = make_run(tmp_path / "a", cases)
    r = gate(run_dir, "--max-infra-rate", "1")
    line = [x for x in r.stdout.splitlines() if x.startswith("  1 infra case(s) got the same 5xx")][0]
    assert line.startswith("  1 infra case(s) got the same 5xx on every attempt: possibly the app's own error, not the provider -- ")
    assert "open their response.json" in line and "c-503 (503 x3)" in line
    # the same error on every attempt is the app's own: it closes the gate, under any infra bar
    assert r.rc == 1 and "  gate closed: 1 gating case(s) got the same 5xx status and body on every attempt: the app's " \
        "own error on those inputs, not a transient outage: c-503 (503 x3)" in r.stdout, r.stdout
    quiet = make_run(tmp_path / "c", passing_cases() + [{"id": "c-503", "verdict": "infra_error", "gating": False,
                                                          "repeated_5xx": {"status": 503, "attempts": 3}}])
    assert gate(quiet, "--max-infra-rate", "1").rc == 0   # a gating: false case never closes it
    hcases = [{"id": "h-503", "holdout": True, "verdict": "infra_error", "repeated_5xx": {"status": 500, "attempts": 3}},
              {"id": "h-ok", "holdout": True}]
    run_dir = make_run(tmp_path / "b", hcases, run_id="holdout-20261129T101500Z", summary={"repeated_5xx": 1})
    r = gate(run_dir, "--max-infra-rate", "1")
    line = [x for x in r.stdout.splitlines() if x.startswith("  1 infra case(s) got the same 5xx")][0]
    assert "sealed" in line and "h-503" not in r.stdout
    assert r.rc == 1 and "(holdout: sealed, not named)" in r.stdout


def test_infra_errors_under_the_bar_are_named_beside_an_open_gate(tmp_path):
    # before: "PASS ... 1 infra_error" and no id: a CLI that exited 2 on one gating case in 22 was never named
    cases = [{"id": f"c-{i}"} for i in range(21)] + [
        {"id": "c-exit", "verdict": "infra_error",
         "infra_reason": "exit: the command exited with code 2 (no stderr) on all 3 attempt(s)"}]
    r = gate(make_run(tmp_path, cases))
    assert r.rc == 0
    assert ("  1 infra_error case(s) under --max-infra-rate (not closing the gate; not measured, read each before "
            "trusting the result): c-exit (exit: the command exited with code 2 (no stderr) on all 3 attempt(s))"
            ) in r.stdout.splitlines()
    r = gate(make_run(tmp_path / "b", cases[19:]))      # over the bar: the closing reason names it, once
    assert r.rc == 1 and r.stdout.count("c-exit (exit:") == 1


def test_a_loose_infra_bar_is_said_on_the_screen(tmp_path):
    """`--max-infra-rate 1` (a user who meant 1%) opened the gate over 12 of 22 cases never answered and
    said nothing of the bar; it is said now, what it lets through and the fraction to pass instead."""
    cases = [{"id": f"c-{i}"} for i in range(10)] + [{"id": f"c-down-{i}", "verdict": "infra_error"} for i in range(12)]
    run_dir = make_run(tmp_path, cases)
    r = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "1")
    assert r.rc == 0, r.stdout   # a note, never a refusal: tests pass 1 on purpose
    assert ("  note: --max-infra-rate 1 lets up to 100% of the cases end in infra errors (never answered, so never "
            "measured) with this gate open; the flag takes a fraction: for 1% pass 0.01, for 5% 0.05 (the default)"
            ) in r.stdout.splitlines(), r.stdout
    assert "--max-infra-rate 0.5 lets up to 50% " in run_script("gate", run_dir, "--no-verify", "--max-infra-rate",
                                                                 "0.5").stdout
    strict = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "0.01")
    assert strict.rc == 1 and "note: --max-infra-rate" not in strict.stdout, strict.stdout


def test_a_loose_infra_bar_note_is_in_the_json(tmp_path):
    """`gate.py --json --max-infra-rate 1` said nothing of the bar: a CI step or a skill reading the JSON
    never saw the screen's note. `infra_bar_note` carries its words, null under a strict bar."""
    cases = [{"id": f"c-{i}"} for i in range(10)] + [{"id": f"c-down-{i}", "verdict": "infra_error"} for i in range(12)]
    run_dir = make_run(tmp_path, cases)
    screen = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "1").stdout.splitlines()
    r = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "1", "--json")
    assert r.rc == 0 and r.json["gate"] == "open", r.stdout
    assert r.json["infra_bar_note"].startswith("note: --max-infra-rate 1 lets up to 100% "), r.json
    assert "  " + r.json["infra_bar_note"] in screen      # the screen's words, one definition
    strict = run_script("gate", run_dir, "--no-verify", "--max-infra-rate", "0.01", "--json")
    assert strict.rc == 1 and strict.json["infra_bar_note"] is None, strict.stdout


def test_not_scored_and_judged_lines(tmp_path):
    cases = [{"id": "c1", "layers": {"execution": {"verdict": "unscorable", "blocked_by": "no oracle"},
                                      "judged": {"verdict": "unscored", "reason": "unjudged (mode: smoke)"}}}]
    r = gate(make_run(tmp_path, cases))
    assert "  NOT scored this run: execution (1 cases: no oracle)" in r.stdout.splitlines()
    assert "  judged layers: unjudged (mode: smoke) x1" in r.stdout.splitlines()


def test_non_numeric_rates_print_na(tmp_path):
    r = gate(make_run(tmp_path, passing_cases(), summary={"crash_rate": None}))
    assert "  infra 0.0%, crash n/a, scorer errors 0" in r.stdout.splitlines()


def test_latest_picks_by_run_id_timestamp_not_mtime(tmp_path):
    newer = make_run(tmp_path, passing_cases(), run_id="smoke-20261129T120000Z")
    older = make_run(tmp_path, [{"id": "c-f", "verdict": "fail"}], run_id="smoke-20261129T090000Z")
    make_run(tmp_path, passing_cases(), run_id="regression-20261130T000000Z")
    os.utime(newer / "results.json", (1, 1))
    os.utime(newer, (1, 1))
    assert (older / "results.json").stat().st_mtime > (newer / "results.json").stat().st_mtime
    r = gate(tmp_path, "--latest", "--mode", "smoke", "--json")
    assert r.json["run_id"] == "smoke-20261129T120000Z"
    r = gate(tmp_path, "--latest", "--json")
    assert r.json["run_id"] == "regression-20261130T000000Z"
    (tmp_path / "not-a-run").mkdir()
    r = gate(tmp_path, "--latest", "--mode", "holdout")
    assert r.rc == 2 and "no run directory with mode holdout" in r.json["error"]


def test_latest_on_a_state_dir_with_no_run_yet_is_bad_input_not_a_closed_gate(tmp_path):
    # a fresh state dir (the start and analyze skills' first call): no reports/ at all. It was an
    # internal error (a traceback, exit 1: what a closed gate exits) instead of exit 2 naming the dir
    (tmp_path / ".assay" / "datasets").mkdir(parents=True)
    r = run_script("gate", tmp_path / ".assay" / "reports", "--latest", "--json")
    assert r.rc == 2 and "internal" not in r.json, r.stdout + r.stderr
    assert "reports: not a directory; --latest takes the reports dir" in r.json["error"]
    assert "Traceback" not in r.stderr


def test_latest_on_the_state_dir_names_its_reports_dir(tmp_path):
    # `gate.py --latest .assay` (the state dir, not .assay/reports): the error points at the reports dir
    state = tmp_path / ".assay"
    make_run(state / "reports", passing_cases())
    r = run_script("gate", state, "--latest", "--json")
    assert r.rc == 2 and r.json["error"] == (
        f"{state}: no run directory (named <mode>-<YYYYMMDDTHHMMSSZ>, holding results.json) found; "
        f"--latest takes the reports dir: did you mean {state / 'reports'}?"), r.stdout + r.stderr
    assert run_script("gate", state / "reports", "--latest", "--json").json["run_id"] == DEFAULT_RUN_ID   # as suggested
    # a dir with no reports/ beneath it is not told to look there
    (state / "empty").mkdir()
    r = run_script("gate", state / "empty", "--latest", "--json")
    assert r.rc == 2 and "did you mean" not in r.json["error"], r.stdout


@pytest.mark.parametrize("args,expect", [
    (["--mode", "smoke"], "--mode only applies with --latest"),
    (["--max-infra-rate", "1.5"], "--max-infra-rate"),
])
def test_bad_flags_exit_2(tmp_path, args, expect):
    r = gate(make_run(tmp_path, passing_cases()), *args)
    assert r.rc == 2 and expect in r.json["error"]


def test_missing_results_or_bad_summary_exit_2(tmp_path):
    r = run_script("gate", tmp_path)
    assert r.rc == 2 and "no results.json" in r.json["error"]
    (tmp_path / "results.json").write_text(json.dumps({"summary": [1]}))
    r = run_script("gate", tmp_path)
    assert r.rc == 2 and "summary" in r.json["error"]


def test_json_output(tmp_path):
    r = gate(make_run(tmp_path, basic_cases()), "--json")
    out = r.json
    assert r.rc == 1 and out["gate"] == "closed"
    assert out["passes"] == 3 and out["failures"] == 1 and out["verified"] is False
    assert out["reasons"] == ["1 gating failure(s): c-fail-1 (answer)"]
    # the runner exited 0 on this closed run: its code is named as the runner's, never `exit_code`
    assert "exit_code" not in out and out["runner_exit_code"] == 0


def test_verify_is_the_runners_completeness_check_and_closes_with_a_clear_reason(tmp_path, monkeypatch):
    from assay.rundir import completeness
    run_dir = make_run(tmp_path, passing_cases())
    # the real check on this hand-made dir: its manifest lacks a required key, named as --verify names it
    res = gate_mod.evaluate(run_dir)
    assert not res.open and res.verify_clean is False
    assert res.reasons == ["run_cases.py --verify exit 6: missing or inconsistent: manifest.yaml (does not match "
                           "the manifest schema at (root): 'baseline_verdicts' is required but missing)"]
    monkeypatch.setattr(completeness, "check_run_dir", lambda d: (["cases/c-pass-1/answer.txt"], [], {}))
    res = gate_mod.evaluate(run_dir)
    assert res.reasons == ["run_cases.py --verify exit 6: missing or inconsistent: cases/c-pass-1/answer.txt"]
    assert not any("NOT VERIFIED" in x for x in res.lines)

    def crash(d):
        raise KeyError("cases")
    monkeypatch.setattr(completeness, "check_run_dir", crash)
    res = gate_mod.evaluate(run_dir)   # a bug in the check is a closed gate that says so, never a pass
    assert not res.open and res.reasons == [
        "the completeness check (run_cases.py --verify) failed: KeyError: 'cases'"]

    def not_a_run(d):
        raise completeness.RunDirError("no results.json")
    monkeypatch.setattr(completeness, "check_run_dir", not_a_run)
    assert gate_mod.evaluate(run_dir).reasons == ["run_cases.py --verify exit 2: --verify: no results.json"]
    monkeypatch.setattr(completeness, "check_run_dir", lambda d: ([], [], {}))
    res = gate_mod.evaluate(run_dir)
    assert res.open and res.verify_clean is True
    assert not any("not verified" in x for x in res.lines)


def test_junit_is_valid_xml_without_holdout_ids(tmp_path):
    cases = basic_cases() + [
        {"id": "c-unscored", "verdict": "unscored"}, {"id": "c-infra", "verdict": "infra_error"},
        {"id": "c-soft", "verdict": "fail", "gating": False},
        {"id": "hold-secret-a", "holdout": True, "verdict": "fail"}, {"id": "hold-secret-b", "holdout": True},
    ]
    run_dir = make_run(tmp_path / "reports", cases)
    junit = tmp_path / "junit.xml"
    r = gate(run_dir, "--junit", junit)
    assert r.rc == 1
    data = junit.read_text(encoding="utf-8")
    assert "hold-secret" not in data
    root = ET.fromstring(data.encode("utf-8"))
    assert root.tag == "testsuites"
    suites = {s.get("name").split(".")[-1]: s for s in root.findall("testsuite")}
    assert set(suites) == {"cases", "canaries", "holdout", "gate"}
    cases_suite = suites["cases"]
    names = [tc.get("name") for tc in cases_suite.findall("testcase")]
    assert names == ["c-pass-1", "c-pass-2", "c-pass-3", "c-fail-1", "c-skip-1", "c-unscored", "c-infra", "c-soft"]
    by = {tc.get("name"): tc for tc in cases_suite.findall("testcase")}
    assert by["c-fail-1"].find("failure").get("message") == "failed layer(s): answer -- answer: must_contain \"refund\" -> fail"
    assert "gating: false" in by["c-soft"].find("failure").get("message")
    for name in ("c-skip-1", "c-infra"):
        assert by[name].find("skipped").get("message")
    # an unscored gating case closed the gate: a failure in JUnit, not a skip (issue 24 D6)
    assert by["c-unscored"].find("failure").get("type") == "unscored"
    assert cases_suite.get("tests") == "8" and cases_suite.get("failures") == "3" and cases_suite.get("skipped") == "2"
    assert [tc.get("name") for tc in suites["canaries"].findall("testcase")] == ["canary-ok-1", "canary-ok-2"]
    hold = suites["holdout"].findall("testcase")
    assert len(hold) == 1 and hold[0].find("failure") is not None
    assert suites["gate"].find("testcase/failure") is not None
    assert root.get("tests") == str(sum(int(s.get("tests")) for s in suites.values()))


def test_github_summary_appends_markdown_and_needs_the_variable(tmp_path):
    run_dir = make_run(tmp_path / "reports", basic_cases())
    target = tmp_path / "summary.md"
    target.write_text("earlier step\n")
    r = gate(run_dir, "--github-summary", env={"GITHUB_STEP_SUMMARY": str(target)})
    assert r.rc == 1
    text = target.read_text()
    assert text.startswith("earlier step\n## assay gate: `smoke-20261129T101500Z` ❌ closed")
    assert "| 5 | 3 | 1 | 1 | 0 | 1 | 0.0% | 0.0% |" in text
    assert "- 1 gating failure(s): c-fail-1 (answer)" in text
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    import subprocess, sys
    from helpers import SCRIPTS
    proc = subprocess.run([sys.executable, str(SCRIPTS / "gate.py"), str(run_dir), "--no-verify", "--github-summary"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "GITHUB_STEP_SUMMARY is not set" in json.loads(proc.stdout)["error"]


def test_a_reports_dir_where_a_run_dir_is_expected_names_a_run_to_pass(tmp_path):
    """gate.py (without --latest), draft_report.py, --baseline: the shared loader names a run of the reports dir
    instead of offering --latest to commands that have none; stats.py given a run dir names its verdicts file.
    In process: milliseconds."""
    from assay.core.errors import AssayError
    from assay.report.rundir import load_results
    from assay.stats.verdict_file import read_verdicts_jsonl
    run_dir = make_run(tmp_path, basic_cases())
    (run_dir / "verdicts_for_stats.jsonl").write_text("")
    with pytest.raises(AssayError) as err:
        load_results(tmp_path)
    assert f"a reports dir of 1 run(s): pass one run directory, e.g. the newest, {run_dir}" in err.value.message
    with pytest.raises(AssayError) as err:
        read_verdicts_jsonl(str(run_dir))
    assert f"pass a run's verdicts file, {run_dir / 'verdicts_for_stats.jsonl'}" in err.value.message


def test_the_reasons_walk_the_rows_once_and_keep_nothing_after(tmp_path, monkeypatch):
    """The four kinds of closing case (not run, unscored, judge unstable, skipped) share one walk of
    results.json's rows (gate_case.closing_rows); the walk is the decision's alone: none is kept after."""
    from assay.report import gate_case
    cases = [{"id": "c-pass"}, {"id": "c-un", "verdict": "unscored"},
             {"id": "c-sk", "verdict": "skipped", "skip_reason": "adapter has no conversation settings (invocation.conversation)"}]
    run_dir = make_run(tmp_path, cases)
    calls = []
    real = gate_case.case_gate
    monkeypatch.setattr(gate_case, "case_gate", lambda *a, **k: calls.append(a[1].get("case_id")) or real(*a, **k))
    res = gate_mod.evaluate(run_dir, verify=False)
    assert not res.open and any("c-un" in r for r in res.reasons), res.reasons
    assert sorted(calls) == ["c-pass", "c-sk", "c-un"] and gate_case._WALKED == []


def test_a_gate_that_cannot_decide_leaves_no_older_junit_behind(tmp_path):
    """A JUnit reader on a reused workspace (`if: always()`) read the previous run's junit.xml when the
    gate refused its input (exit 2): the file now holds one <error> testcase saying why."""
    junit = tmp_path / "junit.xml"
    run_dir = make_run(tmp_path / "reports", basic_cases())
    assert run_script("gate", run_dir, "--junit", junit).rc in (0, 1)
    assert b"<error" not in junit.read_bytes()
    r = run_script("gate", tmp_path / "reports" / "smoke-20990101T000000Z", "--junit", junit)
    assert r.rc == 2, r.stdout
    root = ET.parse(junit).getroot()
    errors = root.findall(".//testcase/error")
    assert root.get("errors") == "1" and len(root.findall(".//testcase")) == 1 and len(errors) == 1
    assert errors[0].get("message").startswith("gate not decided: ") and "smoke-20990101T000000Z" in errors[0].text
    # decided, then an output step fails (a summary file that cannot be written): the decision's JUnit stays
    r = run_script("gate", run_dir, "--junit", junit, "--github-summary",
                   env={"GITHUB_STEP_SUMMARY": str(tmp_path / "no-such-dir" / "summary.md")})
    assert r.rc == 2 and b"<error" not in junit.read_bytes(), r.stdout


def test_a_failed_canary_is_a_failure_in_junit_that_says_it_closes_the_gate(tmp_path):
    """A failed canary is `gating: false` yet closes the gate (gate_case's CANARY): JUnit (and the
    pytest item, which asks the same question) must not read it as a non-gating failure."""
    run_dir = make_run(tmp_path / "reports", [{"id": "c-pass-1"}, {"id": "canary-bad", "canary": True, "verdict": "fail",
                                                                    "gating": False}])
    junit = tmp_path / "junit.xml"
    r = gate(run_dir, "--junit", junit)
    assert r.rc == 1, r.stdout
    root = ET.fromstring(junit.read_bytes())
    canaries = next(s for s in root.findall("testsuite") if s.get("name").endswith("canaries"))
    message = canaries.find("testcase/failure").get("message")
    assert "(canary: a failed canary stops the run and closes the gate)" in message, message
    assert "does not close the gate" not in message


def test_a_row_without_a_gating_key_is_gating():
    """`gating` defaults to true (runner contract): a results row that omits it (an older runner's,
    a hand-merged file) is held to every rule, so its check that never ran closes the gate."""
    from assay.report.gate_case import UNSCORED, case_gate, is_gating
    row = {"case_id": "c-1", "verdict": "unscored"}
    doc = {"unscored_reason": "answer: no answer at $.reply", "layers": {"answer": {"verdict": "unscored"}}}
    assert is_gating(row) and not is_gating(dict(row, gating=False))
    assert case_gate(None, row, doc).kind == UNSCORED
