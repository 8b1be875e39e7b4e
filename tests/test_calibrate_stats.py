"""assay.calibrate: the incomplete beta, exact intervals, kappa, last-wins, canary voiding, unlock."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from assay.calibrate.agreement import Floors, cohen_kappa, score, unlock_sentence
from assay.calibrate.annotations import parse_line
from assay.calibrate.intervals import beta_quantile, clopper_pearson, kappa_interval, regularized_incomplete_beta


def binom_upper_tail(n: int, k: int, p: Fraction) -> Fraction:
    """P(X >= k), X ~ Binomial(n, p), exactly: equals I_p(k, n - k + 1)."""
    return sum((Fraction(math.comb(n, i)) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1)), Fraction(0))


@pytest.mark.parametrize("x,a,b,want", [
    (0.5, 2, 3, 11 / 16),
    (0.3, 0.5, 0.5, 2 / math.pi * math.asin(math.sqrt(0.3))),   # arcsine distribution
    (0.25, 1, 1, 0.25),
    (0.9, 1, 4, 1 - 0.1 ** 4),
    (0.2, 3, 1, 0.2 ** 3),
])
def test_incomplete_beta_known_values(x, a, b, want):
    assert regularized_incomplete_beta(x, a, b) == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("n,k,x", [(10, 3, "0.2"), (50, 45, "0.93"), (120, 20, "0.1"), (200, 1, "0.002")])
def test_incomplete_beta_matches_exact_binomial_sums(n, k, x):
    p = Fraction(x)
    assert regularized_incomplete_beta(float(p), k, n - k + 1) == pytest.approx(float(binom_upper_tail(n, k, p)),
                                                                                 rel=1e-10, abs=1e-15)


def test_beta_quantile_inverts():
    for a, b, p in [(2, 3, 0.1), (20, 2, 0.975), (0.5, 0.5, 0.5), (1, 99, 0.025)]:
        assert regularized_incomplete_beta(beta_quantile(p, a, b), a, b) == pytest.approx(p, abs=1e-10)


@pytest.mark.parametrize("k,n,lo,hi", [
    (5, 10, 0.187086, 0.812914),
    (0, 10, 0.0, 0.308497),
    (1, 10, 0.002529, 0.445016),
    (10, 10, 0.691503, 1.0),
    (95, 100, 0.887165, 0.983568),
])
def test_clopper_pearson_known_values(k, n, lo, hi):
    got = clopper_pearson(k, n)
    assert got[0] == pytest.approx(lo, abs=2e-6) and got[1] == pytest.approx(hi, abs=2e-6)
    assert clopper_pearson(0, 0) is None


def test_kappa_textbook_and_undefined():
    assert cohen_kappa(20, 5, 10, 15) == pytest.approx(0.4)
    assert cohen_kappa(10, 0, 0, 0) is None          # one class only: chance agreement 1
    assert cohen_kappa(0, 0, 0, 0) is None
    lo, hi = kappa_interval(20, 5, 10, 15)
    assert lo < 0.4 < hi and -1 <= lo and hi <= 1


def test_unlock_sentence():
    f = Floors()
    assert unlock_sentence(63, 6, 57, f) == "label 37 more, at least 4 of them failing"
    assert unlock_sentence(100, 10, 90, f) is None
    assert unlock_sentence(150, 2, 148, f) == "label 8 more, at least 8 of them failing"
    assert unlock_sentence(5, 0, 5, f) == "label 95 more, at least 10 of them failing and 5 of them passing"


def line(case, label, judge="pass", pin="r-v1", node="n1", **kw):
    obj = {"case_id": case, "rubric_id": pin, "node_id": node, "label": label, "judge_label": judge,
           "reviewer": "dana", "ts": "2026-11-30T10:00:00Z", **kw}
    return parse_line(obj, f"a.jsonl:{case}")


def test_last_line_wins_unknown_apart_and_unpaired():
    rows = [line("c1", "pass"), line("c1", "fail", "fail"), line("c2", "pass", "unknown"),
            parse_line({"case_id": "c3", "rubric_id": "r-v1", "label": "fail"}, "a:9"),
            line("c1", "fail", "fail", node="n2")]
    out = score(rows, Floors(min_pairs=1, min_per_class=0))
    r = out["rubrics"]["r-v1"]
    assert out["duplicates_replaced"] == 1
    assert (r["tp"], r["fn"], r["fp"], r["tn"], r["unknown"], r["unpaired"]) == (2, 0, 0, 0, 1, 1)
    assert r["by_node"]["n1"]["tp"] == 1 and r["by_node"]["n2"]["tp"] == 1


def test_canary_miss_voids_its_batch_only():
    rows = [line("c1", "fail", "fail", batch="b1"), line("c2", "pass", batch="b1"),
            line("c9", "pass", canary=True, expected_label="fail", batch="b1"),
            line("c3", "pass", batch="b2"), line("c8", "fail", "fail", canary=True, expected_label="fail", batch="b2")]
    out = score(rows, Floors(min_pairs=1, min_per_class=0))
    assert out["canaries"] == {"shown": 2, "missed": 1}
    assert out["voided_batches"][0]["batch"] == "b1" and out["voided_batches"][0]["lines"] == 2
    r = out["rubrics"]["r-v1"]
    assert (r["tp"], r["fn"], r["fp"], r["tn"]) == (0, 0, 0, 1)   # only c3; canary lines never count


def test_calibration_floors_and_blocking():
    rows = ([line(f"f{i}", "fail", "fail") for i in range(20)] + [line("fx", "fail", "pass")]
            + [line(f"p{i}", "pass", "pass") for i in range(97)] + [line(f"q{i}", "pass", "fail") for i in range(2)])
    out = score(rows, Floors())
    r = out["rubrics"]["r-v1"]
    assert out["status"] == "calibrated" and r["calibrated"] and r["blocking"] == [] and r["unlock"] is None
    assert r["pairs"] == 120 and r["tpr"] == pytest.approx(20 / 21, abs=1e-6)
    strict = score(rows, Floors(min_tpr=0.97))
    assert strict["status"] == "not_calibrated"
    assert strict["rubrics"]["r-v1"]["blocking"] == ["TPR 0.952 < 0.97"]
    assert "disagrees with people" in strict["rubrics"]["r-v1"]["unlock"]


@pytest.mark.parametrize("cells,side", [((5, 3, 0, 0), "people labelled every item fail"),
                                        ((0, 0, 4, 6), "people labelled every item pass"),
                                        ((5, 0, 4, 0), "judge said fail on every item"),
                                        ((0, 3, 0, 6), "judge said pass on every item")])
def test_kappa_interval_undefined_when_one_side_uses_one_label(cells, side):
    # issue 24 C2: the large-sample interval degenerates to [0.0, 0.0] here: undefined, not certain
    assert kappa_interval(*cells) is None
    from assay.calibrate.agreement import Floors, score_rubric
    rows = []
    for label, judge, count in (("fail", "fail", cells[0]), ("fail", "pass", cells[1]),
                                ("pass", "fail", cells[2]), ("pass", "pass", cells[3])):
        rows += [line(f"{label}-{judge}-{i}", label, judge) for i in range(count)]
    out = score_rubric(rows, Floors(), 0.95)
    assert out["kappa_ci"] is None
    assert out["kappa_ci_note"] == f"undefined: the {side}, so agreement beyond chance cannot be estimated"


def test_kappa_interval_defined_with_both_labels_on_both_sides():
    lo, hi = kappa_interval(9, 1, 0, 10)
    assert -1.0 <= lo < hi <= 1.0


def test_kappa_interval_at_perfect_agreement_says_why_instead_of_one_point():
    # issue 46 C4: tp=10, tn=90 gave [1.0, 1.0] (standard error 0): certain where it is not
    assert kappa_interval(10, 0, 0, 90) is None
    from assay.calibrate.agreement import Floors, score_rubric
    rows = [line(f"f-{i}", "fail", "fail") for i in range(10)] + [line(f"p-{i}", "pass", "pass") for i in range(90)]
    out = score_rubric(rows, Floors(), 0.95)
    assert out["kappa"] == 1.0 and out["kappa_ci"] is None
    assert out["kappa_ci_note"].startswith("not given: all 100 pairs agree (kappa 1.0), where the large-sample "
                                           "standard error is 0")
    assert out["tpr_ci"][0] < 1.0 and out["tnr_ci"][0] < 1.0   # the exact intervals still say how far off


@pytest.mark.parametrize("k", [0, 1, 99_999, 100_000])
def test_clopper_pearson_at_100k_matches_the_closed_forms(k):
    """At k in {0, 1, n-1, n} one bound has a closed form: (a/2)^(1/n), 1 - (1 - a/2)^(1/n)..."""
    n, half = 100_000, 0.025
    lo, hi = clopper_pearson(k, n)
    want_lo = {0: 0.0, 1: -math.expm1(math.log1p(-half) / n), n: math.exp(math.log(half) / n)}.get(k)
    want_hi = {0: -math.expm1(math.log(half) / n), n - 1: math.exp(math.log1p(-half) / n), n: 1.0}.get(k)
    if want_lo is not None:
        assert math.isclose(lo, want_lo, rel_tol=1e-9, abs_tol=1e-15), (lo, want_lo)
    if want_hi is not None:
        assert math.isclose(hi, want_hi, rel_tol=1e-9, abs_tol=1e-15), (hi, want_hi)


def test_clopper_pearson_at_100k_solves_its_binomial_tails():
    """95,000 of 100,000: P(X >= k | lower) = P(X <= k | upper) = 0.025, the tails summed
    independently in logs over the terms that matter."""
    n, k = 100_000, 95_000
    lo, hi = clopper_pearson(k, n)

    def log_pmf(i, p):
        return math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p)

    assert math.isclose(math.fsum(math.exp(log_pmf(i, lo)) for i in range(k, min(n, k + 2000) + 1)), 0.025, rel_tol=1e-6)
    assert math.isclose(math.fsum(math.exp(log_pmf(i, hi)) for i in range(max(0, k - 2000), k + 1)), 0.025, rel_tol=1e-6)
