"""The pytest plugin's verdict -> item outcome rule (assay.pytestplugin.items.outcome), on hand-made
run dirs: a gating unscored or adapter-gap skipped case fails (it closes the gate), a chosen skip
or an infra error is skipped with its reason, a gating: false failure is xfailed."""

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
    return {"case_id": cid, "verdict": verdict, "gating": doc.get("gating", True), "canary": False,
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
