"""coverage.py and dedupe_cases.py: the generate step's suite tooling, as scripts and as pure functions."""

from __future__ import annotations

import pytest
from fixtures_authoring import CASES, _case, make_state
from helpers import ROOT, run_script

from assay.suite.dedupe import near_duplicates, rouge_l, tokens


def test_rouge_l_values():
    assert rouge_l(tokens("the cat sat on the mat"), tokens("The cat on the mat")) == pytest.approx(10 / 11)
    assert rouge_l(tokens("a b c"), tokens("c b a")) == pytest.approx(1 / 3)
    assert rouge_l([], tokens("x")) == 0.0
    assert rouge_l(tokens("refund INV-1002 now"), tokens("refund inv-1002 now")) == 1.0


def test_near_duplicates_rules():
    base = {"input": {"messages": [{"role": "user", "content": "What is the total of my open invoices?"}]}}
    cases = [
        {"id": "a", **base, "identity": {"user": "acme"}},
        {"id": "b", **base, "identity": {"user": "acme"}, "template_id": "t1"},
        {"id": "c", **base, "identity": {"user": "globex"}},                        # other data: deliberate
        {"id": "d", **base, "identity": {"user": "acme"}, "metamorphic_parent": "a"},  # perturbation: deliberate
        {"id": "e", "input": {"messages": [{"role": "user", "content": "Reset my password please"}]},
         "identity": {"user": "acme"}},
    ]
    out = near_duplicates(cases, {}, 0.7)
    flagged = {(p["a"], p["b"]) for p in out["pairs"]}
    assert flagged == {("a", "b"), ("b", "d")}
    assert out["metamorphic_pairs_skipped"] == 1 and out["identity_pairs_skipped"] == 3


def test_dedupe_script_flags_a_copied_case(tmp_path):
    cases = dict(CASES)
    cases["c-00000011"] = _case("c-00000011", split="[full]", content="How much is invoice INV-0042 please?")
    state = make_state(tmp_path, cases=cases, dataset=None)
    r = run_script("dedupe_cases", state)
    assert r.rc == 0, r.stdout
    pair = [p for p in r.json["pairs"] if {p["a"], p["b"]} == {"c-00000001", "c-00000011"}]
    assert pair and pair[0]["rouge_l"] >= 0.7 and pair[0]["files"][1] == "datasets/c-00000011.yaml"
    assert r.json["metamorphic_pairs_skipped"] >= 1     # c-00000002 is c-00000001's perturbation
    assert run_script("dedupe_cases", state, "--threshold", "0").rc == 2
    assert run_script("dedupe_cases", tmp_path / "missing").rc == 2


def test_coverage_grid_empty_cells_and_split_targets(tmp_path):
    state = make_state(tmp_path)
    r = run_script("coverage", state)
    assert r.rc == 0, r.stdout
    out = r.json
    assert out["cases"] == 10 and out["units"] == ["app", "invoices", "shifts"]
    assert out["grid"]["invoices"]["happy"] == {"MFT": 2, "INV": 0, "DIR": 0}
    assert out["by_unit"]["shifts"]["total"] == 3
    assert {"unit": "app", "category": "happy"} in out["empty_cells"]["unit_category"]
    assert {"unit": "shifts", "test_type": "INV"} in out["empty_cells"]["unit_test_type"]
    assert out["splits"]["smoke"]["count"] == 7 and out["splits"]["smoke"]["status"] == "over"
    assert out["splits"]["holdout"]["status"] == "too_small"        # 10 cases: no holdout expected yet
    assert out["splits"]["canary"]["status"] == "ok" and out["dataset_version"] == 3
    example = run_script("coverage", ROOT / "examples" / "helpdesk" / ".assay").json
    assert example["cases"] == 55 and example["splits"]["holdout"]["status"] == "ok"
    r = run_script("coverage", tmp_path / "nope")
    assert r.rc == 2 and "does not exist" in r.json["error"]


def test_coverage_refuses_a_case_it_cannot_place_in_the_grid(tmp_path):
    """A newcomer's typos in the keys coverage counts: `split: smoke` (a string, not a list) was
    counted letter by letter (splits s, m, o, k, e; smoke one short), and `category: hapy` or
    `test_type: mft` dropped the case from the grid, so a unit read as missing what it has, with
    exit 0 and no word. Now: exit 2 naming each file, line, key, case id and the linter's fix."""
    cases = dict(CASES)
    cases["c-00000011"] = _case("c-00000011", split="smoke", content="Which invoices are overdue?")
    cases["c-00000012"] = _case("c-00000012", split="[full]", category="hapy", test_type="mft",
                                content="When was INV-0042 paid?")
    state = make_state(tmp_path, cases=cases, dataset=None)
    r = run_script("coverage", state)
    assert r.rc == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert (r.json["file"], r.json["line"], r.json["key"], r.json["case_id"]) == \
        ("datasets/c-00000011.yaml", 3, "split", "c-00000011")
    assert [(f["file"], f["line"], f["key"], f["code"]) for f in r.json["findings"]] == [
        ("datasets/c-00000011.yaml", 3, "split", "bad_split"),
        ("datasets/c-00000012.yaml", 4, "category", "bad_category"),
        ("datasets/c-00000012.yaml", 5, "test_type", "bad_test_type")]
    assert "datasets/c-00000011.yaml:3 (c-00000011) split 'smoke' must be a list of full, smoke, holdout, " \
           "canary; write a list: [smoke]" in r.json["error"]
    assert "did you mean 'happy'?" in r.json["error"] and "Fix each in its case file" in r.json["error"]
