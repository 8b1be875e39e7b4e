"""Run history (run_history.py, assay.history.runs) and the proportion statistics it uses.

Series, flaky cases, drift and exclusions are exercised on synthetic run directories
(the three files history reads, `--no-verify`); the verified path, the page and its
screenshot run over real runs of the example app (tests/test_cost.py's fixture shape).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fakeapp import Reply, app, case, make_plan, make_state, run_runner  # noqa: F401 (app: a fixture)
from helpers import run_script

from assay.history.runs import flips, history
from assay.stats.proportions import fisher_exact_two_sided, wilson_interval


# ---------------------------------------------------------------- pure statistics

def test_fisher_exact_matches_known_values():
    # R: fisher.test(matrix(c(1,11,9,3),2))$p.value = 0.002759456
    assert math.isclose(fisher_exact_two_sided(1, 9, 11, 3), 0.002759456, rel_tol=1e-6)
    # the tea-tasting table: two-sided p = 0.4857143
    assert math.isclose(fisher_exact_two_sided(3, 1, 1, 3), 0.4857143, rel_tol=1e-6)
    assert fisher_exact_two_sided(5, 5, 5, 5) == 1.0


def _fisher_by_integers(a, b, c, d):
    """An independent exact Fisher: every table's count as an exact integer (Pascal's ratio from
    the support's first table), the 1e-9 tie margin in integers, one division at the end."""
    from fractions import Fraction
    row1, col1, n = a + b, a + c, a + b + c + d
    lo, hi = max(0, col1 - (n - row1)), min(row1, col1)
    t, terms = math.comb(row1, lo) * math.comb(n - row1, col1 - lo), {}
    for x in range(lo, hi + 1):
        terms[x] = t
        if x < hi:
            t = t * (row1 - x) * (col1 - x) // ((x + 1) * (n - row1 - col1 + x + 1))
    tail = sum(v for v in terms.values() if v * 10 ** 9 <= terms[a] * (10 ** 9 + 1))
    return float(Fraction(tail, math.comb(n, col1)))


@pytest.mark.parametrize("table", [(1, 9, 11, 3), (3, 1, 1, 3), (10, 0, 0, 10), (91, 106, 88, 0), (110, 155, 195, 196),
                                   (7, 7, 7, 7), (0, 12, 3, 9), (1860, 140, 57000, 3000), (1900, 100, 57000, 3000)])
def test_fisher_exact_equals_the_integer_sum_up_to_60000_pooled_cases(table):
    assert math.isclose(fisher_exact_two_sided(*table), _fisher_by_integers(*table), rel_tol=1e-11)


def test_fisher_exact_at_200000_cases():
    # 94,000/100,000 vs 94,300/100,000: _fisher_by_integers gives 0.004386125191704842 (2.3 s; not rerun here)
    assert math.isclose(fisher_exact_two_sided(94000, 6000, 94300, 5700), 0.004386125191704842, rel_tol=1e-11)


def test_wilson_interval_known_values_and_edges():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and math.isclose(hi, 0.2775, abs_tol=1e-4)
    lo, hi = wilson_interval(10, 10)
    assert math.isclose(hi, 1.0) and math.isclose(lo, 0.7225, abs_tol=1e-4)
    assert wilson_interval(0, 0) is None


def test_flips_count_only_scored_changes():
    assert flips(["pass", "fail", "pass", "pass", "fail"]) == 3
    assert flips(["pass", "unscored", "pass", None, "pass"]) == 0
    assert flips(["fail", "infra_error", "pass"]) == 1


def test_one_repeat_per_run_is_no_evidence_the_flips_went_with_the_app():
    """A case that flipped and flipped back is flaky unless each run's repeats (two or more) all agreed:
    a run whose reliability.json counts one repeat for it (n = 1) says nothing, as k = 1 says nothing
    (mutation hunt, round 3)."""
    from assay.history.flaky import classify
    seq = ["pass", "fail", "pass"]
    runs = [{"run_id": f"r{i}", "repeats": {"c-1": {"n": n, "c": c}}} for i, (n, c) in enumerate([(1, 1), (1, 0), (1, 1)])]
    assert classify("c-1", seq, runs)[0] == "flaky"
    agreed = [{"run_id": f"r{i}", "repeats": {"c-1": {"n": 3, "c": c}}} for i, c in enumerate([3, 0, 3])]
    assert classify("c-1", seq, agreed) == ("changed", {"flips": 2, "kind": "fix", "since_run": "r2"})


def test_a_change_whose_repeats_split_only_as_it_happened_is_a_regression_or_a_fix():
    """3/3, 3/3, 1/3, 0/3, 0/3 broke once and stayed broken: a regression since the run where its repeats
    split, not "flaky" (the history page called such regressions flaky); 0/3, 2/3, 3/3 mended once. A case
    whose repeats split in its last run, in a run away from its change, or in two runs stays flaky; so does
    one whose other runs had a single repeat (no evidence they agreed)."""
    from assay.history.flaky import classify

    def runs(counts, n=3):
        return [{"run_id": f"r{i}", "repeats": {"c-1": {"n": n, "c": c}}} for i, c in enumerate(counts)]

    def seq(counts, n=3):
        return ["pass" if c == n else "fail" for c in counts]

    broke = [3, 3, 1, 0, 0]
    assert classify("c-1", seq(broke), runs(broke)) == (
        "changed", {"flips": 1, "kind": "regression", "since_run": "r2", "repeats_disagreed_in": ["r2"]})
    mended = [0, 2, 3]
    assert classify("c-1", seq(mended), runs(mended)) == (
        "changed", {"flips": 1, "kind": "fix", "since_run": "r2", "repeats_disagreed_in": ["r1"]})
    for counts in ([3, 3, 1], [1, 0, 0], [3, 2, 3, 0, 0], [3, 3, 1, 0, 2, 0], [3, 1, 1, 0]):
        assert classify("c-1", seq(counts), runs(counts))[0] == "flaky", counts
    one = [{"run_id": "r0", "repeats": {"c-1": {"n": 1, "c": 1}}}] + runs([3, 1, 0])[1:]
    assert classify("c-1", ["pass", "fail", "fail"], one)[0] == "flaky"


# ---------------------------------------------------------------- synthetic runs

def make_run(reports: Path, run_id: str, verdicts: dict[str, str], *, status="ok", dataset=1, harness="0.1.0",
             k=1, mode=None, case_sets=True, passed_repeats: dict[str, int] | None = None) -> Path:
    """`passed_repeats`: per case, how many of its k repeats passed (the run's reliability.json, k > 1)."""
    mode = mode or run_id.split("-")[0]
    d = reports / run_id
    (d / "cases").mkdir(parents=True)
    passes = sum(1 for v in verdicts.values() if v == "pass")
    failures = sum(1 for v in verdicts.values() if v == "fail")
    summary = {"status": status, "n": len(verdicts), "passes": passes, "failures": failures,
               "gating_failures": failures, "unscored": len(verdicts) - passes - failures, "infra_rate": 0.0}
    common = {"run_id": run_id, "mode": mode, "dataset_version": dataset, "harness_version": harness, "k": k}
    (d / "results.json").write_text(json.dumps({**common, "summary": summary, "started_at": "x"}))
    cases = [{"id": cid, "set": "holdout" if mode == "holdout" else "main"} for cid in sorted(verdicts)]
    (d / "manifest.yaml").write_text(json.dumps({**common, **({"cases": cases} if case_sets else {})}))
    rows = [{"case_id": (f"<holdout #{i}>" if mode == "holdout" else cid), "verdict": v}
            for i, (cid, v) in enumerate(sorted(verdicts.items()), 1)]
    (d / "verdicts_for_stats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    if passed_repeats is not None:
        per_case = [{"case_id": cid, "n": k, "c": c} for cid, c in sorted(passed_repeats.items())]
        (d / "reliability.json").write_text(json.dumps({"k": k, "per_case": per_case}))
    return d


def stamp(i: int) -> str:
    return f"202611{10 + i:02d}T120000Z"


@pytest.fixture
def state(tmp_path):
    (tmp_path / "reports").mkdir()
    return tmp_path


def test_series_split_on_every_version_change_and_say_what_changed(state):
    r = state / "reports"
    base = {"a": "pass", "b": "pass"}
    make_run(r, f"regression-{stamp(1)}", base)
    make_run(r, f"regression-{stamp(2)}", base)
    make_run(r, f"regression-{stamp(3)}", base, dataset=2)
    make_run(r, f"regression-{stamp(4)}", base, dataset=2, harness="0.2.0")
    make_run(r, f"regression-{stamp(5)}", base, dataset=2, harness="0.2.0", k=3)
    make_run(r, f"smoke-{stamp(6)}", base)
    doc = history(state, verify=False)
    names = [s["name"] for s in doc["series"]]
    assert names == ["regression · dataset v1 · assay 0.1.0 · k=1", "regression · dataset v2 · assay 0.1.0 · k=1",
                     "regression · dataset v2 · assay 0.2.0 · k=1", "regression · dataset v2 · assay 0.2.0 · k=3",
                     "smoke · dataset v1 · assay 0.1.0 · k=1"]
    assert [len(s["runs"]) for s in doc["series"]] == [2, 1, 1, 1, 1]
    assert [s["started_by"] for s in doc["series"][:4]] == [
        None, "dataset_version 1 → 2", "harness_version 0.1.0 → 0.2.0", "k 1 → 3"]


def test_flaky_case_found_across_five_runs_and_ranked(state):
    r = state / "reports"
    seqs = {"steady": "PPPPP", "flip4": "PFPFP", "flip1": "PPPPF", "unscored": "PUPUP"}
    glyph = {"P": "pass", "F": "fail", "U": "unscored"}
    for i in range(5):
        make_run(r, f"regression-{stamp(i)}", {cid: glyph[s[i]] for cid, s in seqs.items()})
    doc = history(state, verify=False)
    flaky = doc["series"][0]["flaky"]
    assert [(f["case_id"], f["flips"]) for f in flaky] == [("flip4", 4)]
    assert flaky[0]["sequence"] == ["pass", "fail", "pass", "fail", "pass"]
    assert doc["flaky_cases"][0]["case_id"] == "flip4"
    # changed once and stayed: a regression since the run it changed in, never "flaky"
    changed = doc["series"][0]["changed"]
    assert [(c["case_id"], c["kind"], c["since_run"]) for c in changed] == [("flip1", "regression", f"regression-{stamp(4)}")]
    assert [c["case_id"] for c in doc["changed_cases"]] == ["flip1"]


def test_a_break_fixed_a_run_later_is_a_regression_then_a_fix_and_a_flaky_case_is_flaky_at_k3(state, tmp_path):
    """`make demo MODE=regression` clean, --break, clean, then --flaky three times: the broken cases failed
    all 3 repeats in the broken run and passed all 3 elsewhere (they went with the app: a fix, never
    flaky), while the printer case passed 2 of 3 repeats in every flaky run (flaky, though its pass^k
    verdict never flipped back in the last three runs). At k = 1 the same break-and-fix stays flaky: no
    repeats say the flips went with the app."""
    r = state / "reports"
    broke = {"clean": ("pass", 3), "break": ("fail", 0), "flaky": ("pass", 3)}
    flaky = {"clean": ("pass", 3), "break": ("pass", 3), "flaky": ("fail", 2)}
    for i, app_ in enumerate(["clean", "break", "clean", "flaky", "flaky", "flaky"]):
        cases = {"broke": broke[app_], "printer": flaky[app_], "steady": ("pass", 3)}
        make_run(r, f"regression-{stamp(i)}", {c: v for c, (v, _) in cases.items()}, k=3,
                 passed_repeats={c: n for c, (_, n) in cases.items()})
    for i, v in enumerate(["pass", "fail", "pass"]):
        make_run(r, f"smoke-{stamp(i)}", {"broke": v})
    res = run_script("run_history", state, "--no-verify", "--html", tmp_path / "h.html")
    assert res.rc == 0, res.stdout + res.stderr
    doc = json.loads((r / "history.json").read_text())
    k3, k1 = doc["series"]
    assert [f["case_id"] for f in k3["flaky"]] == ["printer"]
    assert [(f["case_id"], f["repeats_disagreed_in"]) for f in k3["flaky"]] == [
        ("printer", [f"regression-{stamp(i)}" for i in (3, 4, 5)])]
    assert [(c["case_id"], c["kind"], c["since_run"], c["flips"]) for c in k3["changed"]] == [
        ("broke", "fix", f"regression-{stamp(2)}", 2)]
    assert [f["case_id"] for f in k1["flaky"]] == ["broke"] and k1["changed"] == []
    assert all("repeats" not in run for s in doc["series"] for run in s["runs"])
    page = (tmp_path / "h.html").read_text()
    flaky_table = page[page.index("Flaky cases (1)"):page.index("Regressions and fixes")]
    assert "printer" in flaky_table and "broke" not in flaky_table
    assert "<code>broke</code></td><td>fix</td>" in page[page.index("Regressions and fixes"):]


def _rate_runs(r: Path, rates: list[tuple[int, int]]):
    for i, (p, n) in enumerate(rates):
        make_run(r, f"regression-{stamp(i)}", {f"c{j:02d}": ("pass" if j < p else "fail") for j in range(n)})


def test_drift_flagged_when_the_drop_is_beyond_the_sample_size(state):
    _rate_runs(state / "reports", [(19, 20), (20, 20), (19, 20), (8, 20)])
    d = history(state, verify=False)["series"][0]["drift"]
    assert d["flagged"] is True and d["direction"] == "down" and d["p_value"] < 0.05
    assert "Fisher" in d["test"]


def test_drift_not_flagged_within_noise(state):
    _rate_runs(state / "reports", [(15, 20), (16, 20), (14, 20), (13, 20)])
    doc = history(state, verify=False)
    d = doc["series"][0]["drift"]
    assert d["flagged"] is False and d["p_value"] >= 0.05
    assert doc["drift_flagged"] == []


def test_unusable_runs_are_excluded_and_named(state):
    r = state / "reports"
    make_run(r, f"regression-{stamp(1)}", {"a": "pass"})
    make_run(r, f"regression-{stamp(2)}", {"a": "pass"}, status="running")
    make_run(r, f"regression-{stamp(3)}", {"a": "pass"}, status="aborted_canary")
    make_run(r, f"regression-{stamp(4)}", {"a": "pass"}, status="incomplete")
    (r / f"regression-{stamp(5)}").mkdir()
    (r / "scratch").mkdir()
    doc = history(state, verify=False)
    reasons = {e["run_id"]: e["reason"] for e in doc["excluded_runs"]}
    assert "'running'" in reasons[f"regression-{stamp(2)}"]
    assert "aborted_canary" in reasons[f"regression-{stamp(3)}"]
    assert "incomplete" in reasons[f"regression-{stamp(4)}"]
    assert "no results.json" in reasons[f"regression-{stamp(5)}"]
    assert "not a run id" in reasons["scratch"]
    assert doc["runs_used"] == 1
    # with --verify (the default) a hand-made run is not a run the runner would vouch for
    verified = history(state, verify=True)
    assert verified["runs_used"] == 0
    assert "--verify" in {e["run_id"]: e["reason"] for e in verified["excluded_runs"]}[f"regression-{stamp(1)}"]


def test_holdout_runs_are_aggregate_only(state):
    r = state / "reports"
    make_run(r, f"holdout-{stamp(1)}", {"secret-1": "pass", "secret-2": "fail"})
    make_run(r, f"holdout-{stamp(2)}", {"secret-1": "fail", "secret-2": "pass"})
    doc = history(state, verify=False)
    s = doc["series"][0]
    assert s["holdout"] and s["cases"] is None and s["flaky"] == []
    assert s["runs"][0]["pass_rate"] == 0.5
    text = json.dumps(doc)
    assert "secret" not in text and "<holdout" not in text


def test_script_writes_history_and_page_and_refuses_bad_input(state, tmp_path):
    _rate_runs(state / "reports", [(19, 20), (20, 20), (8, 20)])
    r = run_script("run_history", state, "--no-verify", "--html", tmp_path / "h.html")
    assert r.rc == 0, r.stdout + r.stderr
    out = r.json
    assert out["runs_used"] == 3 and out["drift_flagged"]
    page = (tmp_path / "h.html").read_text()
    assert "<svg" in page and "<script" not in page.lower() and "default-src 'none'" in page
    assert json.loads((state / "reports" / "history.json").read_text())["series"]
    bad = run_script("run_history", tmp_path / "nope")
    assert bad.rc == 2 and "not a directory" in bad.json["error"]
    no_reports = run_script("run_history", state / "reports")  # a directory, but not a state dir
    assert no_reports.rc == 2 and "is a reports dir" in no_reports.json["error"]
    assert f"pass its parent, {state}" in no_reports.json["error"]


def test_unknown_case_sets_withhold_every_id(state):
    r = state / "reports"
    make_run(r, f"smoke-{stamp(1)}", {"maybe-sealed": "pass"}, case_sets=False)
    make_run(r, f"smoke-{stamp(2)}", {"maybe-sealed": "fail"}, case_sets=False)
    doc = history(state, verify=False)
    assert "maybe-sealed" not in json.dumps(doc) and doc["series"][0]["runs"][0]["passes"] == 1
    assert "per-case data withheld" in doc["series"][0]["runs"][0]["per_case_withheld"]


def test_holdout_case_of_a_smoke_run_never_reaches_history_json_or_html(app, tmp_path, monkeypatch):
    """Real runs: a case split [smoke, holdout] flips like c-flip does; run_history (verified)
    names c-flip as flaky and the sealed id nowhere, though verdicts_for_stats.jsonl holds it.
    A plan now refuses such a case (holdout_not_sealed); these runs are ones written before it
    did, which every reader must still seal."""
    from fakeapp import run_runner_mixed_split
    state = make_state(tmp_path)
    answers = {}
    app.handler = lambda req: Reply(200, {"ok": True}) if req.method == "GET" else \
        Reply(200, {"message": answers[req.json["message"]]})
    cases = [case("c-flip", "one"), case("sealed-hx7", "two", split=("smoke", "holdout")), case("c-ok", "three")]
    for i, word in enumerate(("right", "wrong")):
        answers.update({"one": "re: one" if i == 0 else word, "two": "re: two" if i == 0 else word, "three": "re: three"})
        plan = make_plan(state, cases, app_url=app.url, run_id=f"smoke-{stamp(i + 1)}")
        path = state / "work" / f"plan{i}.json"
        path.write_text(json.dumps(plan))
        res = run_runner_mixed_split(monkeypatch, "--plan", path, "--out", state / "reports" / plan["run_id"],
                                     "--progress", "never")
        assert res.rc in (0, 1), res.stdout + res.stderr
        assert "sealed-hx7" in (state / "reports" / plan["run_id"] / "verdicts_for_stats.jsonl").read_text()
    r = run_script("run_history", state, "--html", tmp_path / "h.html")
    assert r.rc == 0, r.stdout + r.stderr
    text = (state / "reports" / "history.json").read_text()
    assert [(f["case_id"], f["kind"]) for f in json.loads(text)["changed_cases"]] == [("c-flip", "regression")]
    assert json.loads(text)["flaky_cases"] == []  # one change that stayed is a regression, not flaky
    for out in (text, (tmp_path / "h.html").read_text(), r.stdout):
        assert "sealed-hx7" not in out and "hx7" not in out
