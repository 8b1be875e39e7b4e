"""assay.stats.paired: exact posterior, sign test, McNemar, MDE, attrition, verdict words."""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

import pytest

from assay.core.errors import AssayError
from assay.stats.paired import (
    compare, mcnemar_exact_two_sided, min_discordant_for_significance,
    posterior_better, sign_test_one_sided,
)


def runs(pairs):
    """pairs: list of (baseline verdict, candidate verdict) -> (baseline rows, candidate rows)."""
    base = [{"case_id": f"c{i:03d}", "verdict": b} for i, (b, _) in enumerate(pairs)]
    cand = [{"case_id": f"c{i:03d}", "verdict": c} for i, (_, c) in enumerate(pairs)]
    return base, cand


def split(fixed, broken, same_pass=0, same_fail=0):
    return runs([("fail", "pass")] * fixed + [("pass", "fail")] * broken
                + [("pass", "pass")] * same_pass + [("fail", "fail")] * same_fail)


# ------------------------------------------------------------------ exact primitives

def test_posterior_hand_computed():
    # Beta(1+b01, 1+b10): P(p > 1/2) = P(Bin(b01+b10+1, 1/2) <= b01)
    assert posterior_better(0, 0) == 0.5
    assert posterior_better(6, 0) == 1 - 0.5 ** 7
    assert posterior_better(1, 1) == 0.5
    assert posterior_better(2, 1) == (1 + 4 + 6) / 16  # Bin(4): P(X<=2) = 11/16
    assert posterior_better(1, 2) == 5 / 16
    assert math.isclose(posterior_better(3, 1) + posterior_better(1, 3), 1.0)


def test_sign_test_hand_computed():
    assert sign_test_one_sided(0, 0) == 1.0
    assert sign_test_one_sided(6, 0) == 1 / 64
    assert sign_test_one_sided(8, 1) == 10 / 512
    assert sign_test_one_sided(0, 3) == 1.0


def test_mcnemar_hand_computed():
    assert mcnemar_exact_two_sided(0, 0) == 1.0
    assert mcnemar_exact_two_sided(6, 0) == 2 / 64
    assert mcnemar_exact_two_sided(0, 6) == 2 / 64
    assert mcnemar_exact_two_sided(5, 0) == 2 / 32
    assert mcnemar_exact_two_sided(8, 1) == 20 / 512
    assert mcnemar_exact_two_sided(3, 3) == 1.0


# anchors-facts §7: minimum significant splits at alpha .05 two-sided, for d discordant pairs.
MIN_SPLITS = {6: (6, 0), 7: (7, 0), 8: (8, 0), 9: (8, 1), 10: (9, 1), 12: (10, 2), 15: (12, 3),
              20: (15, 5), 30: (21, 9)}


@pytest.mark.parametrize("d,expected", sorted(MIN_SPLITS.items()))
def test_minimum_significant_splits(d, expected):
    significant = [(b, d - b) for b in range((d + 1) // 2, d + 1) if mcnemar_exact_two_sided(b, d - b) <= 0.05]
    assert significant[0] == expected  # the least lopsided significant split with b >= c
    # and every more lopsided split is significant too
    assert significant == [(b, d - b) for b in range(expected[0], d + 1)]


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_five_or_fewer_discordant_pairs_are_never_significant(d):
    assert all(mcnemar_exact_two_sided(b, d - b) > 0.05 for b in range(d + 1))


def test_min_discordant_for_significance():
    assert min_discordant_for_significance(0.05) == 6
    assert min_discordant_for_significance(0.01) == 8


# ------------------------------------------------------------------ MDE from exact power (issue 24 C1)
# Independent of assay.stats.power: the critical count from a direct Fraction sum, the power
# from the full multinomial over (fixed, broken, unchanged), the discordance on a fine grid.

@functools.lru_cache(maxsize=None)
def _independent_critical(d, alpha):
    for k in range(d + 1):
        if Fraction(sum(math.comb(d, i) for i in range(k, d + 1)), 2 ** d) <= Fraction(alpha):
            return k
    return None


def _independent_power(n, delta, psi, alpha):
    p01, p10, same = (psi + delta) / 2, (psi - delta) / 2, 1 - psi
    total = 0.0
    for b01 in range(n + 1):
        for b10 in range(n - b01 + 1):
            crit = _independent_critical(b01 + b10, alpha)
            if crit is None or b01 < crit:
                continue
            ways = math.comb(n, b01) * math.comb(n - b01, b10)
            total += ways * p01 ** b01 * p10 ** b10 * same ** (n - b01 - b10)
    return total


def _independent_best(n, delta, alpha, steps=400):
    return max(_independent_power(n, delta, delta + (1 - delta) * i / steps, alpha) for i in range(steps + 1))


def _sentence_pp(sentence):
    match = re.fullmatch(r"n=\d+ cannot detect any effect below (\d+(?:\.\d+)?)pp", sentence)
    assert match, sentence
    return float(match.group(1)) / 100


@pytest.mark.parametrize("fixed,broken,same", [(1, 0, 41), (0, 0, 10), (3, 2, 15), (0, 0, 6), (2, 0, 3)])
def test_mde_sentence_agrees_with_exact_power(fixed, broken, same):
    out = compare(*split(fixed, broken, same_pass=same))
    n, alpha = out["n"], out["alpha"]
    x = _sentence_pp(out["mde_sentence"])
    # below the printed bound no discordance gives the test 80 % power ...
    assert _independent_best(n, x, alpha) < 0.8
    # ... and a little above it one does: the bound is tight, not just true
    assert _independent_best(n, min(1.0, x + 0.002), alpha) >= 0.8
    assert out["min_detectable_effect_at_this_n"] >= x


def test_mde_issue_examples():
    # one flip at n=42 printed "~6pp": 6pp has at most ~13 % power there; 80 % needs ~15.5pp
    out = compare(*split(1, 0, same_pass=41))
    assert _independent_best(42, 0.06, 0.05) < 0.15
    assert 0.15 <= _sentence_pp(out["mde_sentence"]) <= 0.155
    # no flip at n=10 printed "~30pp" (power <= 0.19 there)
    assert _independent_best(10, 0.30, 0.05) < 0.19
    assert _sentence_pp(compare(*split(0, 0, same_pass=10))["mde_sentence"]) > 0.5


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_no_effect_is_detectable_at_tiny_n(n):
    out = compare(*split(n, 0))
    assert _independent_power(n, 1.0, 1.0, 0.05) == 0.0  # even n of n fixed is not significant
    assert out["mde_sentence"] == (f"n={n} cannot detect any effect: no split of {n} paired case(s) "
                                   "is significant at one-sided alpha 0.05")
    assert out["min_detectable_effect_at_this_n"] is None
    assert "pp" not in out["verdict_phrase"]


def test_power_module_agrees_with_the_multinomial():
    from assay.stats.power import power
    for n, delta, psi in [(42, 0.06, 0.118), (10, 0.3, 0.5), (5, 0.95, 1.0), (30, 0.2, 0.2), (17, 0.1, 0.9)]:
        assert math.isclose(power(n, delta, psi, 0.05), _independent_power(n, delta, psi, 0.05), abs_tol=1e-12)
    assert math.isclose(power(25, 0.2, 0.4, 0.01), _independent_power(25, 0.2, 0.4, 0.01), abs_tol=1e-12)


def test_cases_needed_is_the_first_n_with_power():
    from assay.stats.power import cases_needed
    n = cases_needed(0.3, 0.05)
    assert _independent_best(n, 0.3, 0.05, steps=200) >= 0.8
    assert _independent_best(n - 1, 0.3, 0.05, steps=200) < 0.8


# ------------------------------------------------------------------ compare()

def test_compare_counts_and_rates():
    base, cand = split(7, 1, same_pass=30, same_fail=14)
    out = compare(base, cand)
    assert out["n"] == 52
    assert out["fixed_by_candidate"] == 7 and out["broken_by_candidate"] == 1
    assert out["baseline_pass_rate"] == round(31 / 52, 4)
    assert out["candidate_pass_rate"] == round(37 / 52, 4)
    assert out["delta"] == round(6 / 52, 4)
    assert out["p_candidate_better"] == posterior_better(7, 1)
    assert out["sign_test_p_one_sided"] == sign_test_one_sided(7, 1)
    assert out["mcnemar_exact_p_two_sided"] == mcnemar_exact_two_sided(7, 1)
    assert out["method"] == "bayes-beta exact posterior (all n)"
    assert out["threshold"] == 0.8
    assert out["keep"] is True and out["verdict_words"] == "improved"
    assert out["mde_sentence"].startswith("n=52 cannot detect any effect below ")
    assert out["mde_explanation"].startswith(out["mde_sentence"])
    assert out["fixed_by_candidate_ids"] == [f"c{i:03d}" for i in range(7)]


def test_keep_needs_positive_delta_and_threshold():
    base, cand = split(2, 1, same_pass=10)
    out = compare(base, cand)  # P = 11/16 = .6875 < .8
    assert out["keep"] is False and out["verdict_words"] == "within noise"
    assert compare(base, cand, bayes_threshold=0.6)["keep"] is True
    base, cand = split(0, 0, same_pass=5)
    out = compare(base, cand, bayes_threshold=0.4)  # P = .5 >= .4 but delta == 0
    assert out["keep"] is False and out["verdict_words"] == "within noise"


def test_alpha_never_changes_keep():
    base, cand = split(4, 0, same_pass=20)
    a = compare(base, cand, alpha=0.05)
    b = compare(base, cand, alpha=0.001)
    assert a["keep"] == b["keep"] is True
    assert a["mcnemar_significant_at_alpha"] is False  # 4-0 cannot be significant
    assert a["min_detectable_effect_at_this_n"] < b["min_detectable_effect_at_this_n"]


def test_worsened_is_the_mirror_rule():
    base, cand = split(0, 5, same_pass=20)
    out = compare(base, cand)
    assert out["keep"] is False
    assert out["p_candidate_worse"] == posterior_better(5, 0)
    assert out["verdict_words"] == "worsened"
    assert out["verdict_phrase"].startswith("worsened (n=25 cannot detect any effect below ")


def test_gate_note_when_kept_but_sign_test_not_significant():
    base, cand = split(3, 0, same_pass=40)  # P = 15/16, sign p = 1/8
    out = compare(base, cand)
    assert out["keep"] is True
    assert out["sign_test_significant_at_alpha"] is False
    assert "0.95" in out["gate_note"]
    assert out["mcnemar_note"].startswith("only 3 discordant pair(s): with fewer than 6")


def test_sub_mde_keep_and_advice():
    base, cand = split(3, 0, same_pass=100)
    out = compare(base, cand)
    assert out["keep"] is True and abs(out["delta"]) < out["min_detectable_effect_at_this_n"]
    assert out["sub_mde_keep"].startswith("KEPT BUT NOT PROVEN")
    base, cand = split(2, 1, same_pass=100)
    out = compare(base, cand)
    assert out["keep"] is False
    assert "grow the dataset" in out["advice"] and "paired cases would be needed" in out["advice"]
    assert "sub_mde_keep" not in out


def test_no_discordance_needs_no_assumed_rate():
    base, cand = split(0, 0, same_pass=30, same_fail=22)
    out = compare(base, cand)
    assert "mde_discordance_assumed" not in out and out["discordance"] == 0
    assert "no case changed verdict" in out["mde_explanation"]
    assert "no net change" in out["advice"]


def test_attrition_reported_and_warned_over_ten_percent():
    base, cand = split(1, 0, same_pass=9)  # 10 shared cases
    base += [{"case_id": f"gone{i}", "verdict": "fail"} for i in range(2)]  # 2 of 12 = 16.7 %
    cand += [{"case_id": "new0", "verdict": "pass"}]  # 1 of 11 = 9.1 %
    out = compare(base, cand)
    assert out["n"] == 10
    assert out["cases_only_in_baseline"] == 2 and out["cases_only_in_baseline_ids"] == ["gone0", "gone1"]
    assert out["cases_only_in_candidate"] == 1 and out["cases_only_in_candidate_ids"] == ["new0"]
    warning = out["case_attrition_warning"]
    assert warning.startswith("SELECTION BIAS RISK")
    assert "2 of 12 baseline" in warning and "candidate cases" not in warning


def test_attrition_at_ten_percent_does_not_warn():
    base, cand = split(1, 0, same_pass=9)
    base += [{"case_id": "gone", "verdict": "pass"}]  # 1 of 11 = 9.1 %
    assert "case_attrition_warning" not in compare(base, cand)


def test_attrition_ids_capped_at_twenty():
    base, cand = split(1, 0)
    base += [{"case_id": f"g{i:02d}", "verdict": "pass"} for i in range(25)]
    out = compare(base, cand)
    assert out["cases_only_in_baseline"] == 25 and len(out["cases_only_in_baseline_ids"]) == 20


@pytest.mark.parametrize("bad_rows,needle", [
    ([{"case_id": "a", "verdict": "infra_error"}], "verdict 'infra_error' is not pass or fail"),
    ([{"case_id": "a", "verdict": "pass"}, {"case_id": "a", "verdict": "fail"}], "duplicate case_id 'a'"),
    ([{"verdict": "pass"}], "string case_id"),
    ("nope", "must be a list"),
])
def test_bad_rows_are_exit_2(bad_rows, needle):
    with pytest.raises(AssayError) as info:
        compare(bad_rows, [{"case_id": "a", "verdict": "pass"}])
    assert info.value.code == 2
    assert needle in info.value.message


def test_no_shared_ids_says_check_dataset_version():
    with pytest.raises(AssayError) as info:
        compare([{"case_id": "a", "verdict": "pass"}], [{"case_id": "b", "verdict": "pass"}])
    assert info.value.code == 2 and "check dataset_version" in info.value.message


@pytest.mark.parametrize("kwargs", [{"alpha": 0}, {"alpha": 1}, {"bayes_threshold": 1.0}, {"bayes_threshold": 0}])
def test_out_of_range_parameters(kwargs):
    base, cand = split(1, 0)
    with pytest.raises(AssayError):
        compare(base, cand, **kwargs)


def test_docstring_words_match_each_test():
    # issue 24 C3: the sign test printed beside McNemar is significant at 5-0; McNemar is not
    import assay.stats.paired as paired
    words = " ".join(paired.__doc__.split())
    assert sign_test_one_sided(5, 0) == 0.03125 <= 0.05
    assert mcnemar_exact_two_sided(5, 0) == 0.0625 > 0.05 and mcnemar_exact_two_sided(6, 0) <= 0.05
    assert "one-sided sign test P(X >= b01), significant at 0.05 from a 5-0 split (p = 1/32 = 0.03125)" in words
    assert "McNemar min(1, 2 * min tail), which needs a 6-0 split at 0.05 (5-0 gives p = 0.0625" in words
    assert "a 5-0 split never is" not in words


@pytest.mark.parametrize("k,n", [(0, 1), (3, 10), (7, 10), (12, 25), (13, 25), (999, 2001), (1000, 2001), (1500, 2001)])
def test_binom_cdf_half_equals_the_sum_of_binomial_coefficients(k, n):
    from assay.stats.paired import binom_cdf_half
    assert binom_cdf_half(k, n) == Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2 ** n)
