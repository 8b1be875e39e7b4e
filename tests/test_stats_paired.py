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


# ------------------------------------------------------------------ MDE from exact power (issues 24 C1, 46 C2)
# Independent of assay.stats.power: the critical count from a direct Fraction sum, the power from
# the full joint distribution of (fixed, broken) given the baseline's failing and passing cases.

@functools.lru_cache(maxsize=None)
def _independent_critical(d, alpha):
    """The least k with P(Bin(d, 1/2) >= k) <= alpha, from the exact tail summed from the top down."""
    bound, tail, best = Fraction(alpha) * 2 ** d, 0, None
    for k in range(d, -1, -1):
        tail += math.comb(d, k)
        if tail > bound:
            return best
        best = k
    return best


def _binom(n, p):
    return [math.comb(n, k) * p ** k * (1 - p) ** (n - k) for k in range(n + 1)]


def _independent_power(failing, a, passing, b, alpha):
    """P(the one-sided sign test rejects) with B01 ~ Bin(failing, a) fixed, B10 ~ Bin(passing, b) broken."""
    fixed, broken = _binom(failing, a), _binom(passing, b)
    total = 0.0
    for b10, pb in enumerate(broken):
        for b01, pf in enumerate(fixed):
            crit = _independent_critical(b01 + b10, alpha)
            if crit is not None and b01 >= crit:
                total += pb * pf
    return total


def _model(out, delta, up=True):
    """(a, b): the rates at a true change `delta` in the model the docs state: the null from the run's
    own pairing (s = fixed/failing + broken/passing, a0 = p0 s, b0 = (1 - p0) s), every case's chance
    of passing moved by the same t, solved here for t from delta by bisection."""
    failing, passing, n = out["baseline_failing"], out["baseline_passing"], out["n"]
    p0 = passing / n
    s = (out["fixed_by_candidate"] / failing if failing else 0) + (out["broken_by_candidate"] / passing if passing else 0)
    s = min(s, 1 / p0 if p0 else 9, 1 / (1 - p0) if p0 < 1 else 9)
    a0, b0 = p0 * s, (1 - p0) * s

    def rates(t):
        return (min(1, a0 + t), max(0, b0 - t)) if up else (max(0, a0 - t), min(1, b0 + t))
    lo, hi = 0.0, 2.0
    for _ in range(80):
        mid = (lo + hi) / 2
        a, b = rates(mid)
        if abs(failing * a - passing * b) / n >= delta:
            hi = mid
        else:
            lo = mid
    return rates(hi)


def _power_at(out, delta, up=True):
    a, b = _model(out, delta, up)
    if up:
        return _independent_power(out["baseline_failing"], a, out["baseline_passing"], b, out["alpha"])
    return _independent_power(out["baseline_passing"], b, out["baseline_failing"], a, out["alpha"])


def _sentence_pp(sentence, which):
    match = re.search(rf"(?:cannot detect an? |or a ){which} below (\d+(?:\.\d+)?)pp", sentence)
    assert match, sentence
    return float(match.group(1)) / 100


# (fixed, broken, still passing, still failing): perfectly paired runs (no flip), one-way flips,
# flips both ways, and unpaired runs (flips as many as independent verdicts give)
GRID = [(0, 0, 30, 12), (0, 0, 50, 6), (3, 0, 36, 6), (6, 0, 36, 0), (4, 2, 30, 10), (2, 3, 25, 15),
        (8, 8, 32, 2), (16, 16, 64, 4), (9, 9, 21, 21), (0, 5, 20, 0), (5, 0, 0, 20), (1, 1, 40, 5)]


@pytest.mark.parametrize("fixed,broken,same_pass,same_fail", GRID)
def test_each_stated_effect_has_80_percent_power(fixed, broken, same_pass, same_fail):
    out = compare(*split(fixed, broken, same_pass=same_pass, same_fail=same_fail))
    for up, key, word, room in ((True, "min_detectable_improvement", "improvement", "baseline_failing"),
                                (False, "min_detectable_worsening", "worsening", "baseline_passing")):
        x = out[key]
        if out[room] < 5:   # 2^-5 <= 0.05 < 2^-4: fewer than 5 cases to move are never significant
            assert x is None and f"no {word} can be shown with {out[room]} " in out["mde_sentence"]
            assert _independent_power(out[room], 1.0, 0, 0.0, out["alpha"]) == 0.0
            continue
        assert abs(_power_at(out, x, up) - 0.8) < 0.005, (key, x)        # ~0.8 at the stated effect
        printed = _sentence_pp(out["mde_sentence"], word)
        assert printed <= x and _power_at(out, printed * 0.999, up) < 0.8   # and below it as printed


def test_no_improvement_can_be_shown_with_four_failing_cases():
    # issue 46 C2: 42 cases, 4 failing in the baseline, all 4 fixed: the sentence said "15.4pp"
    out = compare(*split(4, 0, same_pass=38))
    assert out["min_detectable_improvement"] is None
    assert out["mde_sentence"].startswith("n=42: no improvement can be shown with 4 failing cases; ")
    assert out["verdict_label"] == "improved, not proven" and out["proven"] is False
    assert out["verdict_phrase"].startswith("improved, not proven (n=42: no improvement can be shown")


@pytest.mark.parametrize("n,failing", [(100, 20), (200, 40), (300, 30)])
def test_unpaired_runs_get_the_effect_an_unpaired_run_can_detect(n, failing):
    # issue 46 C2: verdicts independent of the baseline's (pass rate p0 on both sides): the old
    # sentence stated the most favourable, perfectly paired effect, detected at ~6 % power here
    p0 = 1 - failing / n
    fixed, broken = round(failing * p0), round((n - failing) * (1 - p0))
    out = compare(*split(fixed, broken, same_pass=n - failing - broken, same_fail=failing - fixed))
    assert out["pairing"] == 1.0
    x = out["min_detectable_improvement"]
    p1 = p0 + x       # the candidate independent of the baseline at the pass rate p0 + x
    power = _independent_power(failing, p1, n - failing, 1 - p1, 0.05)
    assert abs(power - 0.8) < 0.01, power


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_no_effect_is_detectable_at_tiny_n(n):
    out = compare(*split(n, 0))
    assert _independent_power(n, 1.0, 0, 0.0, 0.05) == 0.0  # even n of n fixed is not significant
    assert out["mde_sentence"] == (f"n={n} cannot detect any effect: no split of {n} paired case(s) "
                                   "is significant at one-sided alpha 0.05")
    assert out["min_detectable_effect_at_this_n"] is None
    assert "pp" not in out["verdict_phrase"]


def test_power_module_agrees_with_the_joint_distribution():
    from assay.stats.power import power
    for failing, a, passing, b, alpha in [(10, 0.5, 30, 0.1, 0.05), (20, 0.3, 80, 0.05, 0.05), (5, 0.9, 95, 0.0, 0.05),
                                          (40, 0.2, 60, 0.3, 0.01), (60, 0.7, 40, 0.6, 0.05), (7, 0.4, 9, 0.2, 0.0625)]:
        assert math.isclose(power(failing, a, passing, b, alpha), _independent_power(failing, a, passing, b, alpha),
                            abs_tol=1e-12)


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1, 0.0625, 0.5])
def test_critical_counts_are_exact(alpha):
    from assay.stats.power import critical
    from assay.stats.power import Walk
    want = [d + 1 if _independent_critical(d, alpha) is None else _independent_critical(d, alpha) for d in range(251)]
    assert critical(250, alpha) == want
    for start in (1, 7, 60, 181):          # a walk started anywhere (a direct tail sum) agrees
        walk = Walk(start, alpha)
        assert [walk.k] + [walk.step() for _ in range(250 - start)] == want[start:]


def test_cases_needed_is_the_first_n_with_power():
    from assay.stats.power import Baseline, cases_needed
    base = Baseline(10, 40)        # 80 % passing, perfectly paired
    n = cases_needed(base, 0.1, 0.05)
    for m, enough in ((n, True), (n - 1, False)):
        other = base.scaled(m)
        assert (_independent_power(other.failing, 0.1 * m / other.failing, other.passing, 0.0, 0.05) >= 0.8) is enough


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
    assert out["mde_sentence"].startswith("n=52 cannot detect an improvement below ")
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
    assert a["min_detectable_worsening"] < b["min_detectable_worsening"]


def test_worsened_is_the_mirror_rule():
    base, cand = split(0, 5, same_pass=20)
    out = compare(base, cand)
    assert out["keep"] is False
    assert out["p_candidate_worse"] == posterior_better(5, 0)
    assert out["verdict_words"] == "worsened"
    assert out["verdict_phrase"].startswith("worsened (n=25: no improvement can be shown with 0 failing cases; it "
                                            "cannot detect a worsening below ")
    assert out["proven"] is True and out["sign_test_p_one_sided_worse"] == 1 / 32


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
    assert out["keep"] is True and out["min_detectable_effect_at_this_n"] is None   # 3 failing: no room
    assert out["sub_mde_keep"].startswith("KEPT BUT NOT PROVEN: the exact one-sided sign test gives p = 0.125")
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


# --- the decision words at their edges (mutation hunt, round 2)
def test_keep_holds_at_exactly_the_threshold_and_never_below():
    from assay.stats.paired import compare
    base = [{"case_id": f"c{i}", "verdict": "fail" if i < 2 else "pass"} for i in range(10)]
    cand = [{"case_id": f"c{i}", "verdict": "pass"} for i in range(10)]
    # 2 fixed, 0 broken: P(better) = P(Beta(3, 1) > 1/2) = 7/8 exactly
    at = compare(base, cand, bayes_threshold=0.875)
    assert at["p_candidate_better"] == 0.875 and at["keep"] is True and at["verdict_label"] == "improved, not proven"
    above = compare(base, cand, bayes_threshold=0.876)
    assert above["keep"] is False and above["verdict_words"] == "within noise"


def test_an_older_comparison_without_its_label_still_says_not_proven():
    from assay.stats.paired import verdict_label
    assert verdict_label({"verdict_words": "improved", "sign_test_p_one_sided": 0.25}) == "improved, not proven"
    assert verdict_label({"verdict_words": "improved", "sign_test_p_one_sided": 0.01}) == "improved"
    assert verdict_label({"verdict_words": "improved", "fixed_by_candidate": 2, "broken_by_candidate": 0}) \
        == "improved, not proven"
    assert verdict_label({"verdict_words": "worsened", "sign_test_p_one_sided_worse": 0.25}) == "worsened, not proven"
