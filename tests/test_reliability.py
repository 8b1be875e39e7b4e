"""assay.stats.reliability: unbiased pass@k and pass^k, flakiness, excluded cases."""

from __future__ import annotations

import math

import pytest

from assay.stats.reliability import pass_at_k, pass_hat_k, reliability


@pytest.mark.parametrize("n,c,k,at,hat", [
    (3, 3, 3, 1.0, 1.0),
    (3, 0, 3, 0.0, 0.0),
    (3, 1, 2, 1 - 1 / 3, 0.0),        # C(2,2)/C(3,2) = 1/3; C(1,2) = 0
    (5, 3, 2, 1 - 1 / 10, 3 / 10),    # C(2,2)/C(5,2); C(3,2)/C(5,2)
    (3, 2, 1, 2 / 3, 2 / 3),          # k = 1: both are the pass rate
    (10, 1, 10, 1.0, 0.0),
])
def test_estimators_hand_computed(n, c, k, at, hat):
    assert math.isclose(pass_at_k(n, c, k), at)
    assert math.isclose(pass_hat_k(n, c, k), hat)


def test_unbiased_not_plug_in():
    # plug-in (c/n)^k would give (2/3)^2 = .444; the unbiased C(2,2)/C(3,2) = 1/3
    assert math.isclose(pass_hat_k(3, 2, 2), 1 / 3)
    # plug-in 1-(1-c/n)^k = .889; unbiased 1 - C(1,2)/C(3,2) = 1
    assert pass_at_k(3, 2, 2) == 1.0


@pytest.mark.parametrize("n,c,k", [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4), (3.0, 1, 1), (3, True, 1)])
def test_bad_arguments(n, c, k):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_reliability_document():
    per_case = {
        "steady": ["pass", "pass", "pass"],
        "flaky": ["pass", "fail", "pass"],
        "broken": ["fail", "fail", "fail"],
        "infra": ["pass", "infra_error", "pass"],
        "short": ["pass", "pass"],
    }
    r = reliability(per_case, 3)
    assert r["k"] == 3
    assert r["n_cases"] == 3
    assert r["repeats_per_case"] == {"steady": 3, "flaky": 3, "broken": 3, "infra": 3, "short": 2}
    assert r["per_case"] == [
        {"case_id": "steady", "n": 3, "c": 3, "pass_at_k": 1.0, "pass_hat_k": 1.0},
        {"case_id": "flaky", "n": 3, "c": 2, "pass_at_k": 1.0, "pass_hat_k": 0.0},
        {"case_id": "broken", "n": 3, "c": 0, "pass_at_k": 0.0, "pass_hat_k": 0.0},
    ]
    assert r["pass_at_k"] == round(2 / 3, 4)
    assert r["pass_hat_k"] == round(1 / 3, 4)
    assert r["flakiness_gap"] == round(r["pass_at_k"] - r["pass_hat_k"], 4)
    assert "1 flaky case(s)" in r["flakiness_note"] and "flaky" in r["flakiness_note"]
    excluded = {e["case_id"]: e for e in r["excluded_cases"]}
    assert set(excluded) == {"infra", "short"}
    assert excluded["infra"]["verdicts"] == ["pass", "infra_error", "pass"]
    assert "infra_error" in excluded["infra"]["reason"]
    assert "fewer than k=3" in excluded["short"]["reason"]
    assert "2 case(s) excluded" in r["flakiness_note"]


def test_per_case_values_rounded_before_averaging():
    r = reliability({"a": ["pass", "fail", "pass"], "b": ["pass", "pass", "pass"]}, 2)
    assert r["per_case"][0]["pass_hat_k"] == 0.3333
    assert r["pass_hat_k"] == round((0.3333 + 1.0) / 2, 4)


def test_no_flaky_case_note():
    r = reliability({"a": ["pass"] * 3, "b": ["fail"] * 3}, 3)
    assert r["flakiness_gap"] == 0.0
    assert r["flakiness_note"].startswith("no flaky case")


def test_nothing_measurable():
    r = reliability({"a": ["unscored", "pass"]}, 2)
    assert r["n_cases"] == 0
    assert r["pass_at_k"] is None and r["pass_hat_k"] is None and r["flakiness_gap"] is None
    assert r["excluded_cases"][0]["case_id"] == "a"
    assert "nothing to measure" in r["flakiness_note"]


def test_bad_k():
    with pytest.raises(ValueError):
        reliability({"a": ["pass"]}, 0)
