"""The pytest plugin's verdict -> item outcome rule (assay.pytestplugin.items.outcome), on hand-made
run dirs: a gating unscored or adapter-gap skipped case fails (it closes the gate), a chosen skip
or an infra error is skipped with its reason, a gating: false failure is xfailed, a failed canary
(never gating, yet it stopped the run) fails, and a hollow case is skipped saying it asserted nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _pytest.outcomes import Skipped, XFailed

from assay.pytestplugin.items import CaseFailed, outcome


def case(run_dir: Path, cid: str, verdict: str, **doc) -> dict:
    d = run_dir / "cases" / cid
    d.mkdir(parents=True)
    layers = doc.pop("layers", {"http": {"verdict": "pass"}})
    (d / "verdict.json").write_text(json.dumps({"case_id": cid, "verdict": verdict, "layers": layers, **doc}))
    (d / "expect.json").write_text(json.dumps({"route": "billing"}))
    return {"case_id": cid, "verdict": verdict, "gating": doc.get("gating", True), "canary": doc.get("canary", False),
            "layers": {k: v["verdict"] for k, v in layers.items()}}


def test_pass_and_gating_fail(tmp_path):
    assert outcome(tmp_path, case(tmp_path, "c-1", "pass"), None) is None
    row = case(tmp_path, "c-2", "fail", layers={"routing": {"verdict": "fail", "expected": "billing",
                                                              "observed": "triage", "observed_from": "response"}},
               input_text="refund please")
    with pytest.raises(CaseFailed) as failed:
        outcome(tmp_path, row, None)
    text = str(failed.value)
    assert 'routing: expected "billing", observed "triage"' in text and "input: refund please" in text


def test_a_flaky_case_names_its_repeats(tmp_path):
    row = case(tmp_path, "c-8", "fail", k=3, layers={"answer": {"verdict": "fail"}},
               repeats=[{"n": 1, "verdict": "pass"}, {"n": 2, "verdict": "fail"}, {"n": 3, "verdict": "pass"}])
    with pytest.raises(CaseFailed, match=r"repeats: 2 of 3 passed \(#1: pass, #2: fail, #3: pass\)"):
        outcome(tmp_path, row, None)


def test_non_gating_fail_is_xfailed(tmp_path):
    row = case(tmp_path, "c-3", "fail", gating=False, layers={"routing": {"verdict": "fail", "expected": "a",
                                                                          "observed": "b"}})
    with pytest.raises(XFailed, match="gating: false, does not close the gate"):
        outcome(tmp_path, row, None)


def test_unscored_gating_case_fails_as_closing_the_gate(tmp_path):
    row = case(tmp_path, "c-4", "unscored", unscored_reason="execution: no result_from_response value",
               layers={"http": {"verdict": "pass"},
                       "execution": {"verdict": "unscored", "reason": "no result_from_response value"}})
    with pytest.raises(CaseFailed, match="unscored, not a pass: it closes the gate"):
        outcome(tmp_path, row, None)


def test_adapter_gap_skip_fails_and_a_chosen_skip_is_skipped(tmp_path):
    gap = case(tmp_path, "c-5", "skipped",
               skip_reason="conversation not run: the adapter declares no invocation.conversation")
    with pytest.raises(CaseFailed, match="skipped, not a pass: it closes the gate"):
        outcome(tmp_path, gap, None)
    chosen = case(tmp_path, "c-6", "skipped", skip_reason="safety: needs-mock tool against a live environment")
    with pytest.raises(Skipped, match="skipped, never sent .safety: needs-mock"):
        outcome(tmp_path, chosen, None)


def test_infra_error_and_not_run_are_skipped_with_the_reason(tmp_path):
    row = case(tmp_path, "c-7", "infra_error", infra_reason="timeout after 3 attempts")
    with pytest.raises(Skipped, match=r"infra error: no answer from the app \(timeout after 3 attempts\)"):
        outcome(tmp_path, row, None)
    with pytest.raises(Skipped, match="not run: run_cases.py exit 4: a canary failed"):
        outcome(tmp_path, None, "run_cases.py exit 4: a canary failed")


def test_a_failed_canary_fails_and_says_it_closes_the_gate(tmp_path):
    """The green-path hunt's failed canary. Before: the runner writes `gating: false` on a canary, so its
    item was XFAIL, "failed layer(s): answer (gating: false, does not close the gate)", while the
    canary had stopped the run and closed the gate."""
    row = case(tmp_path, "c-9", "fail", gating=False, canary=True,
               layers={"answer": {"verdict": "fail", "reason": "must_contain 'paid' not found"}})
    with pytest.raises((CaseFailed, XFailed)) as failed:   # an xfail here would xfail this test itself
        outcome(tmp_path, row, None)
    assert failed.type is CaseFailed and "does not close the gate" not in str(failed.value), str(failed.value)
    assert "failed layer(s): answer (canary: a failed canary stops the run and closes the gate)" in str(failed.value)
    passed = case(tmp_path, "c-10", "pass", gating=False, canary=True)
    assert outcome(tmp_path, passed, None) is None


def test_a_hollow_case_is_skipped_saying_it_asserted_nothing(tmp_path):
    """No layer carries a reason on a hollow case: the skip says the case's own `unscored_reason`
    (before: "unscored: no layer could be scored", which read like a check that failed to run)."""
    row = case(tmp_path, "c-11", "unscored", unscored_reason="nothing asserted beyond liveness",
               layers={"http": {"verdict": "pass"}, "answer": {"verdict": "n/a"}})
    with pytest.raises(Skipped, match=r"unscored: no layer could be scored \(nothing asserted beyond liveness\)"):
        outcome(tmp_path, row, None)


def test_a_case_whose_one_asserted_check_never_ran_says_so_not_that_no_layer_was_scored(tmp_path):
    """The answer was scored and passed, the route was not in the response: the item (and the JUnit
    failure, the same words) used to say "unscored: no layer could be scored", as if the app had
    answered nothing; it names the check that never ran."""
    row = case(tmp_path, "c-12", "unscored",
               layers={"http": {"verdict": "pass"}, "answer": {"verdict": "pass"},
                       "routing": {"verdict": "unscored", "reason": "no declared route source produced a route"}})
    with pytest.raises(CaseFailed) as failed:
        outcome(tmp_path, row, None)
    text = str(failed.value)
    assert "unscored: a check it asserts could not be scored (routing: no declared route source" in text, text
    assert "no layer could be scored" not in text and "unscored, not a pass: it closes the gate" in text
