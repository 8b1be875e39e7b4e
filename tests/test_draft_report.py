"""draft_report.py: counting rules on crafted runs, canaries apart, holdout aggregate only,
the status-derived routing caveat, comparison words, not-measured lines and redaction."""

from __future__ import annotations

import pytest
from helpers import run_script
from rundir_util import basic_cases, make_run, realistic_run

from assay.report.draft import draft as draft_report
from assay.report.redact import redact
from assay.verdict import GateOptions, decide


def draft(run_dir):
    """The library call the script makes (in-process: fast); the CLI is tested below."""
    return draft_report(run_dir, decision=decide(run_dir, GateOptions(verify=False))).markdown


def test_cli_stdout_equals_library_output(tmp_path):
    run_dir = make_run(tmp_path, basic_cases())   # crafted: not a run the completeness check accepts
    r = run_script("draft_report", run_dir, "-o", "-", "--no-verify")
    library = draft_report(run_dir, decision=decide(run_dir, GateOptions(verify=False)), gate_flags="--no-verify")
    assert r.rc == 0 and r.stdout == library.markdown


def section(text, title):
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 3)
    return text[start:end if end != -1 else None]


def test_3_pass_1_fail_1_skipped_reads_3_of_4_and_canaries_apart(tmp_path):
    text = draft(make_run(tmp_path, basic_cases()))
    counts = section(text, "Counts")
    assert "5 cases + 2 canaries ran; 1 failed, 1 skipped." in counts
    assert "**Pass rate 3/4 = 75.0%**" in counts
    assert "3/5" not in text and "7 ran" not in text
    assert "Canaries (counted apart): 2/2 passed." in counts
    assert "**1 gating failure**: they close the gate." in counts


def test_headline_key_figures_come_first(tmp_path):
    text = draft(make_run(tmp_path, basic_cases()))
    line = "**Pass rate 3/4 (75.0%)** · **1 gating failure** · 1 skipped · 0 unscored · 0 infra · canaries 2/2"
    assert line in text and text.index(line) < text.index("<!-- assay:clusters -->")


def test_zero_gating_failures_is_a_result(tmp_path):
    text = draft(make_run(tmp_path, [{"id": "a"}, {"id": "b"}, {"id": "s", "verdict": "skipped"},
                                     {"id": "u", "verdict": "unscored"}]))
    assert "**0 gating failures (n=4).**" in text
    assert "No failure clusters: 0 gating failures (n=4)" in section(text, "Top failure clusters")
    assert "Unscored: 1 · Skipped: 1" in text
    assert "Unscorable layers: none." in text
    assert "## Failure excerpts" not in text


def test_clusters_slot_is_first_then_excerpts_then_metrics(tmp_path):
    text = draft(make_run(tmp_path, basic_cases()))
    begin, end = text.index("<!-- assay:clusters -->"), text.index("<!-- /assay:clusters -->")
    assert "drafted by `cluster_failures.py`" in text[begin:end] and "TODO" not in text
    assert begin < text.index("## Failure excerpts") < text.index("## Counts") < text.index("## Results by layer")
    assert text.index("# assay report:") < begin


def test_nongating_failure_reported_as_not_closing_the_gate(tmp_path):
    text = draft(make_run(tmp_path, [{"id": "a"}, {"id": "soft-1", "verdict": "fail", "gating": False}]))
    assert "**0 gating failures (n=2).**" in text
    assert "1 failure on `gating: false` cases (`soft-1`): reported here, and they do not close the gate." in text
    assert "gating: false, does not close the gate" in section(text, "Failure excerpts")


def test_layer_table_has_execution_and_authz_rows(tmp_path):
    text = draft(realistic_run(tmp_path))
    table = section(text, "Results by layer")
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ") and "---" not in line}
    for layer in ("http", "routing", "answer", "execution", "authz", "rules", "judged"):
        assert layer in rows
    assert "| execution | ✅ 1 | ❌ 1 | 50.0% |" in rows["execution"]
    assert "| authz | 0 | ❌ 1 | 0.0% |" in rows["authz"]


def test_holdout_aggregate_only_never_an_id(tmp_path):
    run_dir = realistic_run(tmp_path)
    text = draft(run_dir)
    assert "hold-sealed" not in text and "HOLDOUT ANSWER" not in text
    hold = section(text, "Holdout (aggregate only)")
    assert "2 holdout cases: 1 pass, 1 fail (1 gating)" in hold and "Pass rate 1/2 = 50.0%" in hold
    # reliability.json lists a holdout id among excluded cases: counted, never named
    assert "`slow-report` and 1 holdout (sealed)" in section(text, "Reliability")
    # the written report (default path) is sealed too
    assert run_script("draft_report", run_dir).rc == 0
    assert "hold-sealed" not in (run_dir / "report.md").read_text(encoding="utf-8")


def test_routing_all_status_derived_caveat_and_no_accuracy_word(tmp_path):
    def route(v):
        return {"routing": {"verdict": v, "expected": "answered", "observed": "answered" if v == "pass" else "refused",
                            "observed_from": "status", "acceptable": ["answered"]}}
    rr = {"n": 2, "accuracy": 0.5, "macro_f1": 0.5, "micro_f1": 0.5, "per_target": {}, "spurious_labels": [],
          "confusion_matrix": {"answered": {"answered": 1, "refused": 1}}, "accepted_alternates": 0}
    run_dir = make_run(tmp_path, [{"id": "a", "layers": route("pass")}, {"id": "b", "verdict": "fail", "layers": route("fail")}],
                       extra_files={"routing_report.json": rr})
    routing = section(draft(run_dir), "Routing")
    assert routing.splitlines()[2].startswith("**Status-derived routing.**")
    assert "not routing accuracy" in routing
    assert "Routing accuracy" not in routing and "Status-mapping agreement: **50.0%**" in routing
    assert "Spurious labels: none." in routing


def test_routing_some_status_derived_says_how_many(tmp_path):
    status = {"routing": {"verdict": "pass", "expected": "x", "observed": "x", "observed_from": "status"}}
    resp = {"routing": {"verdict": "pass", "expected": "x", "observed": "x", "observed_from": "response"}}
    run_dir = make_run(tmp_path, [{"id": "a", "layers": status}, {"id": "b", "layers": resp}, {"id": "c", "layers": resp}],
                       extra_files={"routing_report.json": {"n": 3, "accuracy": 1.0, "confusion_matrix": {"x": {"x": 3}}}})
    routing = section(draft(run_dir), "Routing")
    assert "**1 of 3 scored cases' routes are status-derived**" in routing
    assert "Routing accuracy: **100.0%**" in routing


def test_confusion_matrix_and_spurious_labels(tmp_path):
    routing = section(draft(realistic_run(tmp_path)), "Routing")
    assert "| `tech` | · | *1* | **1** |" in routing
    assert "**Spurious labels**" in routing and "`sales` (1)" in routing


def test_reliability_and_comparison_words_with_attrition_first(tmp_path):
    text = draft(realistic_run(tmp_path))
    rel = section(text, "Reliability")
    assert "pass@k **0.875**, pass^k **0.625**, gap 0.250" in rel
    cmp = section(text, "Compared with the baseline")
    assert cmp.index("SELECTION BIAS RISK") < cmp.index("within noise (n=9 cannot detect any effect below 63.3pp)")


def test_comparison_words_derived_when_absent(tmp_path):
    cmp = {"n": 52, "baseline_pass_rate": 0.5, "candidate_pass_rate": 0.7, "delta": 0.2,
           "min_detectable_effect_at_this_n": 0.14, "fixed_by_candidate": 11, "broken_by_candidate": 1}
    text = draft(make_run(tmp_path, [{"id": "a"}], extra_files={"comparison.json": cmp}))
    assert "**improved (n=52 cannot detect any effect below 14.0pp)**" in text


def test_comparison_words_say_not_proven(tmp_path):
    # issue 46 C1: a comparison.json kept on the Bayesian rule whose sign test is not significant
    # (42 cases, 4 fixed, p = 0.0625) printed "improved" alone; an older file without verdict_label too
    cmp = {"n": 42, "baseline_pass_rate": 0.9048, "candidate_pass_rate": 1.0, "delta": 0.0952,
           "fixed_by_candidate": 4, "broken_by_candidate": 0, "verdict_words": "improved", "alpha": 0.05,
           "sign_test_p_one_sided": 0.0625, "mde_sentence": "n=42 cannot detect any effect below 15.4pp",
           "sub_mde_keep": "KEPT BUT NOT PROVEN: delta 9.5pp is below what this run can detect"}
    text = draft(make_run(tmp_path, [{"id": "a"}], extra_files={"comparison.json": cmp}))
    assert "**improved, not proven (n=42 cannot detect any effect below 15.4pp)**" in text


def test_not_measured_lines(tmp_path):
    text = draft(realistic_run(tmp_path))
    nm = section(text, "Not measured in this run")
    assert "**Judged layer** (`expect.answer.rubric`, 1 case): not measured in this run (runner: unjudged (judge not calibrated) ×1)." in nm
    assert "**Business rules** (`expect.answer.rules`, 1 case): not measured in this run." in nm


def test_redaction_applies_to_excerpts_and_is_counted(tmp_path):
    text = draft(realistic_run(tmp_path, pii=True))
    assert "jane.doe@example.com" not in text and "555" not in text and "4111111111111111" not in text
    assert "[email redacted]" in text and "[phone redacted]" in text and "[number redacted]" in text
    assert "is true (from `manifest.yaml` `data.may_contain_pii`): redaction pass, 3 redactions over 4 excerpted cases" in text


def test_no_pii_flag_quotes_as_is(tmp_path):
    text = draft(realistic_run(tmp_path, pii=False))
    assert "jane.doe@example.com" in text
    assert "`data.may_contain_pii` is false (from `manifest.yaml` `data.may_contain_pii`)" in text


def test_unknown_pii_flag_redacts_and_says_why_and_gitignore_means_true(tmp_path):
    run_dir = realistic_run(tmp_path / "reports", pii=None)
    text = draft(run_dir)
    assert "was not found" in text and "jane.doe" not in text
    (tmp_path / "reports" / ".gitignore").write_text("*/cases/\n")
    assert "is true (from `reports/.gitignore`" in draft(run_dir)


def test_zero_redactions_still_says_the_pass_happened(tmp_path):
    text = draft(make_run(tmp_path, basic_cases(), manifest={"data": {"may_contain_pii": True}}))
    assert "redaction pass, 0 redactions" in text


@pytest.mark.parametrize("text,expected,n", [
    ("mail bob.smith@example.co.uk now", "mail [email redacted] now", 1),
    ("call +44 20 7946 0958 or (555) 123-4567", "call [phone redacted] or [phone redacted]", 2),
    ("card 4111111111111111", "card [number redacted]", 1),
    ("order 12345 on 2026-11-29, total 99.50", "order 12345 on 2026-11-29, total 99.50", 0),
])
def test_redact_unit(text, expected, n):
    assert redact(text) == (expected, n)


def test_not_quotable_banner_for_aborted_runs(tmp_path):
    run_dir = make_run(tmp_path, [{"id": "a"}, {"id": "canary-x", "canary": True, "verdict": "fail"}],
                       status="aborted_canary", exit_code=4)
    text = draft(run_dir)
    assert "> **Not quotable.**" in text and "A canary failed, so the run stopped: canary canary-x failed on answer: got HTTP 200" in text


def test_running_run_is_refused_and_existing_report_needs_force(tmp_path):
    running = make_run(tmp_path / "a", [{"id": "a"}], status="running")   # no runner holds its lock: killed
    with pytest.raises(Exception, match="the run was interrupted"):
        draft(running)
    r = run_script("draft_report", running)
    assert r.rc == 2 and "still 'running'" in r.json["error"] and r.json["resume"].endswith("--resume")
    run_dir = make_run(tmp_path / "b", basic_cases())
    r = run_script("draft_report", run_dir)
    assert r.rc == 0 and r.json["report"].endswith("report.md") and (run_dir / "report.md").exists()
    r = run_script("draft_report", run_dir)
    assert r.rc == 2 and "--force" in r.json["error"]
    assert run_script("draft_report", run_dir, "--force").rc == 0


def test_output_onto_a_directory_asks_for_a_file_path_not_force(tmp_path):
    """-o DIR said "DIR exists ... Pass --force to overwrite it", and --force cannot overwrite a
    directory with the report: it names the directory and asks for a file path, with or without --force."""
    run_dir = make_run(tmp_path / "b", basic_cases())
    folder = tmp_path / "reports-out"
    folder.mkdir()
    for extra in ((), ("--force",)):
        r = run_script("draft_report", run_dir, "-o", folder, *extra)
        assert r.rc == 2 and "is a directory" in r.json["error"] and str(folder) in r.json["error"], r.stdout + r.stderr
        assert "--force" not in r.json["error"] and str(folder / "report.md") in r.json["error"]
        assert "Traceback" not in r.stderr
    assert list(folder.iterdir()) == []


def test_hostile_answer_stays_inside_a_code_block(tmp_path):
    text = draft(realistic_run(tmp_path))
    excerpt = section(text, "Failure excerpts")
    line = [x for x in excerpt.splitlines() if "<script>" in x][0]
    assert line.startswith("actual:")
    fence_lines = [i for i, x in enumerate(excerpt.splitlines()) if x.startswith("```")]
    idx = excerpt.splitlines().index(line)
    assert any(a < idx < b for a, b in zip(fence_lines[::2], fence_lines[1::2]))


def test_results_json_not_matching_its_schema_is_exit_2(tmp_path):
    run_dir = make_run(tmp_path, basic_cases(), summary={"passes": "three"})
    r = run_script("draft_report", run_dir)
    assert r.rc == 2 and "results.json" in r.json["error"] and "passes" in r.json["error"]


def test_excerpt_lines_use_each_layers_own_terms():
    from assay.report.sections import describe_layer
    assert describe_layer("loops", {"verdict": "fail", "findings": [{"message": "search_kb called 4 times"}],
                                    "heavy_tools": {"search_kb": 4}}) == "search_kb called 4 times"
    assert describe_layer("trajectory", {"verdict": "fail", "failures": ["expected tool call(s) missing: ['x']"]}) \
        == "expected tool call(s) missing: ['x']"
    assert describe_layer("authz", {"verdict": "fail", "checks": [
        {"check": "forbidden_record_ids", "reason": "forbidden record id(s) returned: ['INV-2001']", "status": "fail"},
        {"check": "x", "status": "pass"}]}) == "forbidden_record_ids -> fail (forbidden record id(s) returned: ['INV-2001'])"
    assert describe_layer("routing", {"verdict": "fail", "expected": "a", "observed": "b", "observed_from": "trace"}) \
        == 'expected "a", observed "b" (from trace)'
    assert len(describe_layer("state", {"verdict": "fail", "blob": "x" * 1000})) < 420
