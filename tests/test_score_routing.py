"""assay.score.routing: the per-case routing layer and routing_report.json."""

from __future__ import annotations

import pytest

from assay.score.base import ScorerInputError
from assay.score.routing import NO_ROUTE_LABEL, OOS_LABEL, routing_report, score_case_routing


# ------------------------------------------------------------------ per case

def test_expected_route_passes():
    r = score_case_routing({"route": "billing"}, "billing", "response", None)
    assert r["verdict"] == "pass"
    assert r["expected"] == "billing" and r["observed"] == "billing"
    assert r["observed_from"] == "response"
    assert r["acceptable"] == ["billing"]
    assert r["clarify_ok"] is False


def test_acceptable_alternate_passes():
    r = score_case_routing({"route": "billing", "route_acceptable": ["sales"]}, "sales", "trace", None)
    assert r["verdict"] == "pass" and r["passed_by"] == "route_acceptable"
    assert r["acceptable"] == ["billing", "sales"]


def test_wrong_route_fails_with_reason():
    r = score_case_routing({"route": "billing"}, "tech", "status", None)
    assert r["verdict"] == "fail"
    assert "'tech'" in r["reason"] and "'billing'" in r["reason"]


def test_no_observed_route_is_unscored_never_fail():
    r = score_case_routing({"route": "billing"}, None, None, None)
    assert r["verdict"] == "unscored"
    assert "no declared route source" in r["reason"]


def test_clarification_passes_only_with_clarify_ok():
    assert score_case_routing({"route": "billing", "clarify_ok": True}, "tech", "response", True)["verdict"] == "pass"
    assert score_case_routing({"route": "billing", "clarify_ok": True}, None, None, True)["passed_by"] == "clarify_ok"
    assert score_case_routing({"route": "billing"}, "tech", "response", True)["verdict"] == "fail"
    assert score_case_routing({"route": "billing", "clarify_ok": True}, "tech", "response", False)["verdict"] == "fail"


@pytest.mark.parametrize("expect", [
    {"route": 3}, {"route": "a", "route_acceptable": "b"}, {"route": "a", "clarify_ok": "yes"}, {}, "billing",
])
def test_malformed_expectation_is_scorer_input_error(expect):
    with pytest.raises(ScorerInputError):
        score_case_routing(expect, "a", "response", None)


# ------------------------------------------------------------------ run level

def row(case_id, expected, observed, acceptable=None, clarify_ok=False, clarified=None, observed_from="response"):
    return {"case_id": case_id, "expected": expected, "observed": observed, "acceptable": acceptable or [],
            "clarify_ok": clarify_ok, "clarified": clarified, "observed_from": observed_from}


def test_report_metrics_hand_computed():
    rows = [
        row("a", "billing", "billing"),
        row("b", "billing", "tech"),
        row("c", "tech", "tech"),
        row("d", "tech", "billing"),
        row("e", "tech", "tech"),
        row("f", "sales", "shipping"),   # shipping is predicted, never expected: spurious
    ]
    r = routing_report(rows, None)
    assert r["n"] == 6
    assert r["accuracy"] == 0.5
    assert r["confusion_matrix"] == {"billing": {"billing": 1, "tech": 1},
                                     "sales": {"shipping": 1},
                                     "tech": {"billing": 1, "tech": 2}}
    # billing: tp 1, predicted 2, support 2 -> p .5 r .5 f1 .5
    assert r["per_target"]["billing"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 2}
    # tech: tp 2, predicted 3, support 3 -> p r f1 = 2/3
    assert r["per_target"]["tech"] == {"precision": 0.6667, "recall": 0.6667, "f1": 0.6667, "support": 3}
    # sales: nothing predicted -> precision null, f1 0
    assert r["per_target"]["sales"] == {"precision": None, "recall": 0.0, "f1": 0.0, "support": 1}
    assert "shipping" not in r["per_target"]
    assert r["spurious_labels"] == ["shipping"]
    assert r["macro_f1"] == round((0.5 + 2 / 3 + 0) / 3, 4)
    assert r["micro_f1"] == 0.5
    assert "warning" in r  # |0.3889 - 0.5| = 0.111 > 0.1


def test_no_warning_when_macro_and_micro_agree():
    r = routing_report([row("a", "billing", "billing"), row("b", "tech", "tech"), row("c", "tech", "billing")], None)
    # billing p .5 r 1 f1 .6667; tech p 1 r .5 f1 .6667 -> macro .6667, micro .6667
    assert r["macro_f1"] == r["micro_f1"] == 0.6667
    assert "warning" not in r


def test_macro_micro_gap_warning():
    rows = [row(f"t{i}", "tech", "tech") for i in range(8)] + [row("b", "billing", "tech")]
    r = routing_report(rows, None)
    # micro 8/9 = .889; macro: tech f1 = 2*(8/9*1)/(8/9+1) = .9412, billing 0 -> .4706
    assert r["micro_f1"] == 0.8889
    assert r["macro_f1"] == 0.4706
    assert "warning" in r and "per_target" in r["warning"]


def test_accepted_alternates_count_for_accuracy_but_not_the_matrix():
    rows = [row("a", "billing", "sales", acceptable=["sales"]),
            row("b", "billing", "tech", clarify_ok=True, clarified=True),
            row("c", "billing", "billing")]
    r = routing_report(rows, None)
    assert r["accuracy"] == 1.0
    assert r["confusion_matrix"] == {"billing": {"billing": 1}}
    assert r["accepted_alternates"] == [
        {"case_id": "a", "expected": "billing", "observed": "sales", "via": "route_acceptable"},
        {"case_id": "b", "expected": "billing", "observed": "tech", "via": "clarify_ok"},
    ]
    assert r["per_target"]["billing"]["support"] == 1


def test_null_observed_is_no_route_label():
    r = routing_report([row("a", "billing", None, observed_from=None), row("b", "billing", "billing")], None)
    assert r["confusion_matrix"]["billing"] == {NO_ROUTE_LABEL: 1, "billing": 1}
    assert r["no_route_cases"] == 1
    assert NO_ROUTE_LABEL not in r["spurious_labels"]
    assert r["accuracy"] == 0.5
    assert r["observed_from_counts"] == {"none": 1, "response": 1}


def test_oos_route_is_renamed_and_reported():
    rows = [row("a", "decline", "decline"), row("b", "decline", "billing"),
            row("c", "billing", "decline"), row("d", "billing", "billing")]
    r = routing_report(rows, "decline")
    assert OOS_LABEL in r["confusion_matrix"]
    assert "decline" not in r["per_target"]
    oos = r["oos"]
    assert oos["route"] == "decline"
    assert oos["support"] == 2 and oos["oos_cases"] == 2
    assert oos["recall"] == 0.5 and oos["precision"] == 0.5
    assert oos["excluded_accepted_alternates"] == 0


def test_oos_route_absent_from_every_row_is_a_null_block_with_a_note():
    r = routing_report([row("a", "billing", "billing")], "decline")
    oos = r["oos"]
    assert oos["precision"] is None and oos["recall"] is None and oos["support"] == 0
    assert "'decline' appears in no row" in oos["note"] and "billing" in oos["note"]


def test_oos_cases_that_all_passed_as_alternates_leave_null_values():
    rows = [row("a", "decline", "handoff", acceptable=["handoff"]), row("b", "billing", "billing")]
    oos = routing_report(rows, "decline")["oos"]
    assert oos["oos_cases"] == 1 and oos["excluded_accepted_alternates"] == 1
    assert oos["precision"] is None and oos["recall"] is None
    assert "no out-of-scope case reached the confusion matrix" in oos["note"]


def test_no_oos_block_without_oos_route():
    assert "oos" not in routing_report([row("a", "billing", "billing")], None)


def test_empty_rows():
    r = routing_report([], None)
    assert r["n"] == 0 and r["accuracy"] is None and r["macro_f1"] is None and r["micro_f1"] is None


def test_routes_compare_after_nfc():
    decomposed = "cafe\u0301"
    assert score_case_routing({"route": "café"}, decomposed, "response", None)["verdict"] == "pass"
    r = routing_report([row("a", "café", decomposed)], None)
    assert r["confusion_matrix"] == {"café": {"café": 1}}


def test_empty_oos_route_means_none():
    assert "oos" not in routing_report([row("a", "billing", "billing")], "")


def test_a_route_is_compared_exactly_no_case_folding():
    """Mutation round 3: routes are NFC text without case folding, as every text comparison in assay."""
    out = score_case_routing({"route": "billing"}, "Billing", "response", None)
    assert out["verdict"] == "fail"
    assert score_case_routing({"route": "billing", "route_acceptable": ["Sales"]}, "sales", "response",
                              None)["verdict"] == "fail"
