"""Paired comparison of two runs' pass/fail verdicts (comparison.json, stats.py).

Inputs are `verdicts_for_stats.jsonl` rows `{case_id, verdict}` with verdict `pass` or
`fail` (infra and unscored are filtered out by the runner first). Only case ids present
in both runs are paired; the rest is attrition, reported and warned about.

With b01 = fixed by the candidate (fail -> pass) and b10 = broken (pass -> fail):
- decision (`keep`): the exact Bayesian posterior P(p > 1/2) for
  p ~ Beta(1 + b01, 1 + b10) (uniform prior) is >= `bayes_threshold` AND delta > 0.
  For integer parameters, P(Beta(a, b) > 1/2) = P(Binomial(a + b - 1, 1/2) <= a - 1),
  summed exactly in integers: no approximation at any n. `alpha` never changes `keep`.
- reported tests on Binomial(b01 + b10, 1/2), "significant at alpha" meaning p <= alpha:
  the exact one-sided sign test P(X >= b01), significant at 0.05 from a 5-0 split
  (p = 1/32 = 0.03125); and the exact two-sided McNemar min(1, 2 * min tail), which
  needs a 6-0 split at 0.05 (5-0 gives p = 0.0625: never significant with 5 or fewer
  discordant pairs).
- minimum detectable effects (`assay.stats.power`): the smallest improvement and the smallest
  worsening the exact one-sided sign test at alpha detects with power 0.8, given the baseline
  (only its F failing cases can be fixed, only its P passing ones broken) and this run's own
  pairing (how far verdicts move without an effect: a run with no flip is perfectly paired, a
  run whose verdicts are independent of the baseline's is unpaired). With fewer failing cases
  than the smallest significant split (5 at alpha 0.05) the sentence says "no improvement can
  be shown with F failing case(s)"; the same for a worsening. When no split of n cases can be
  significant (n <= 4 at alpha 0.05) it says no effect is detectable.
- `verdict_words`: `improved` when keep; `worsened` when the mirrored rule holds
  (P(p < 1/2) >= threshold and delta < 0); else `within noise`. `proven`: the one-sided sign
  test in that direction is significant at alpha (null for within noise); `verdict_label` is
  the words with ", not proven" when it is not, and every printed verdict (`verdict_phrase`,
  `stats.py --text`, compare's page and report) carries the label, never the bare word.
Caveats: cases are assumed independent; case level only; no multiplicity correction.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from assay.core.errors import AssayError
from assay.stats import power as exact_power

if TYPE_CHECKING:
    from fractions import Fraction   # imported where used: a run that never compares pays nothing for it

METHOD = "bayes-beta exact posterior (all n)"
POWER = exact_power.POWER
ATTRITION_WARN = 0.10
MAX_IDS = 20


def binom_cdf_half(k: int, n: int) -> Fraction:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly: the binomial coefficients by Pascal's
    ratio C(n, i + 1) = C(n, i) (n - i) / (i + 1), one small multiply and exact divide each
    (never one math.comb per term), over the shorter side (P(X <= k) = 1 - P(X <= n - k - 1))."""
    from fractions import Fraction
    if k < 0:
        return Fraction(0)
    if k >= n:
        return Fraction(1)
    if k > n - k - 1:
        return 1 - binom_cdf_half(n - k - 1, n)
    total, term = 0, 1
    for i in range(k + 1):
        total += term
        term = term * (n - i) // (i + 1)
    return Fraction(total, 1 << n)


def posterior_better(fixed: int, broken: int) -> float:
    """P(p > 1/2) for p ~ Beta(1 + fixed, 1 + broken), exactly (then rounded to a float)."""
    a, b = 1 + fixed, 1 + broken
    return float(binom_cdf_half(a - 1, a + b - 1))


def sign_test_one_sided(fixed: int, broken: int) -> float:
    """Exact one-sided sign test P(X >= fixed), X ~ Binomial(fixed + broken, 1/2); 1.0 with no flips."""
    d = fixed + broken
    return float(1 - binom_cdf_half(fixed - 1, d)) if d else 1.0


def mcnemar_exact_two_sided(fixed: int, broken: int) -> float:
    """Exact two-sided McNemar: min(1, 2 * min(P(X <= fixed), P(X >= fixed))); 1.0 with no flips."""
    d = fixed + broken
    if d == 0:
        return 1.0
    from fractions import Fraction
    lower = binom_cdf_half(fixed, d)
    upper = 1 - binom_cdf_half(fixed - 1, d)
    return float(min(Fraction(1), 2 * min(lower, upper)))


def min_discordant_for_significance(alpha: float) -> int:
    """The fewest discordant pairs with which a two-sided exact McNemar can reach alpha (all one way)."""
    from fractions import Fraction
    d = 1
    while 2 * Fraction(1, 2 ** d) > Fraction(alpha):
        d += 1
    return d


def _pp(x: float) -> str:
    """x as percentage points, rounded DOWN (so "cannot detect below X" stays true): 3 significant
    figures at most, 1 decimal from 1pp up."""
    value = x * 100
    if not value > 0:
        return "0pp"
    digits = 1 if value >= 1 else max(1, 2 - math.floor(math.log10(value)))
    scale = 10 ** digits
    return f"{math.floor(value * scale + 1e-9) / scale:.{digits}f}pp"


def mde_sentence(n: int, mde: float | None, alpha: float, *, worse: float | None = None,
                 failing: int | None = None, passing: int | None = None) -> str:
    """The sentence for what n paired cases can detect. With only `mde` (an older comparison.json):
    "cannot detect any effect below X". With the baseline's `failing`/`passing` counts: the
    improvement (`mde`) and the worsening (`worse`) apart, each None when the baseline leaves it no
    room ("no improvement can be shown with 4 failing cases")."""
    if failing is None or passing is None:
        if mde is None:
            return (f"n={n} cannot detect any effect: no split of {n} paired case(s) is significant at "
                    f"one-sided alpha {alpha:g}")
        return f"n={n} cannot detect any effect below {_pp(mde)}"
    if n < exact_power.smallest_significant(alpha):
        return mde_sentence(n, None, alpha)
    no_up = f"no improvement can be shown with {failing} failing case{'s' if failing != 1 else ''}"
    no_down = f"no worsening can be shown with {passing} passing case{'s' if passing != 1 else ''}"
    if mde is None and worse is None:
        return f"n={n} cannot detect any effect: {no_up}, and {no_down}"
    if mde is None:
        return f"n={n}: {no_up}; it cannot detect a worsening below {_pp(worse)}"
    if worse is None:
        return f"n={n}: {no_down}; it cannot detect an improvement below {_pp(mde)}"
    return f"n={n} cannot detect an improvement below {_pp(mde)} or a worsening below {_pp(worse)}"


def verdict_label(doc: dict) -> str:
    """The verdict as it must be printed: "improved", "improved, not proven", "worsened", ... From
    `verdict_label` when the comparison has one; for an older comparison.json, from its words and the
    one-sided sign test in their direction (from the fixed/broken counts, else the p it carries) or
    its `sub_mde_keep`."""
    label = doc.get("verdict_label")
    if isinstance(label, str) and label:
        return label
    words = doc.get("verdict_words")
    if words not in ("improved", "worsened"):
        return str(words or "within noise")
    alpha = doc.get("alpha") if isinstance(doc.get("alpha"), (int, float)) else 0.05
    fixed, broken = doc.get("fixed_by_candidate"), doc.get("broken_by_candidate")
    up = words == "improved"
    if isinstance(fixed, int) and isinstance(broken, int):
        p = sign_test_one_sided(fixed, broken) if up else sign_test_one_sided(broken, fixed)
    else:
        p = doc.get("sign_test_p_one_sided" if up else "sign_test_p_one_sided_worse")
    unproven = (isinstance(p, (int, float)) and p > alpha) or (
        up and str(doc.get("sub_mde_keep") or "").startswith("KEPT BUT NOT PROVEN"))
    return f"{words}, not proven" if unproven else words


def paired_population(rows: Any, canary_ids: Any = ()) -> Any:
    """The rows a paired comparison is over: never a canary's. A canary (split `canary`) is planted to
    catch a broken harness and never counts toward a verdict's statistics: it passes on both sides of
    every run that finished, so counted it adds concordant pairs (a larger `n`, a smaller `delta` and
    detectable effect than the cases the edit was measured on give). Left out: rows flagged `canary`
    (verdicts.jsonl rows, compare's pairs) and rows whose case_id is in `canary_ids` (a side whose rows
    carry no flag: verdicts_for_stats.jsonl, named by its run's manifest). Anything else (a malformed
    row too) is kept, for `index_rows` to name."""
    if not isinstance(rows, list):
        return rows
    skip = set(canary_ids)
    return [r for r in rows if not (isinstance(r, dict) and (r.get("canary") or r.get("case_id") in skip))]


def _index(rows: Any, side: str) -> dict[str, str]:
    if not isinstance(rows, list):
        raise AssayError(f"{side} verdicts must be a list of {{case_id, verdict}} rows", 2)
    return index_rows(rows, side)


def index_rows(rows: Any, side: str) -> dict[str, str]:
    """{case_id: verdict} of {case_id, verdict} rows (any iterable: a 100,000-pair comparison makes
    them one at a time), each row checked as `compare` checks it."""
    out: dict[str, str] = {}
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not isinstance(row.get("case_id"), str):
            raise AssayError(f"{side} row {i}: expected an object with a string case_id, got {row!r:.120}", 2)
        case_id, verdict = row["case_id"], row.get("verdict")
        if verdict not in ("pass", "fail"):
            raise AssayError(
                f"{side} row {i} (case {case_id}): verdict {verdict!r} is not pass or fail; compare "
                "verdicts_for_stats.jsonl files (infra, skipped and unscored cases filtered out)", 2,
                case_id=case_id)
        if case_id in out:
            raise AssayError(f"{side} row {i}: duplicate case_id {case_id!r}", 2, case_id=case_id)
        out[case_id] = verdict
    return out


def _pct(x: float) -> str:
    return f"{x * 100:.1f}pp"


def compare(baseline_rows: list[dict], candidate_rows: list[dict], *, alpha: float = 0.05,
            bayes_threshold: float = 0.8) -> dict:
    """comparison.json content (see the module docstring). Raises AssayError(code 2) on bad input."""
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise AssayError(f"alpha must be strictly between 0 and 1, got {alpha!r}", 2)
    if not (isinstance(bayes_threshold, (int, float)) and 0 < bayes_threshold < 1):
        raise AssayError(f"bayes threshold must be strictly between 0 and 1, got {bayes_threshold!r}", 2)
    base, cand = _index(baseline_rows, "baseline"), _index(candidate_rows, "candidate")
    return compare_indexed(base, cand, alpha=alpha, bayes_threshold=bayes_threshold)


def compare_indexed(base: dict[str, str], cand: dict[str, str], *, alpha: float = 0.05,
                    bayes_threshold: float = 0.8) -> dict:
    """`compare` over rows already indexed (`index_rows`): {case_id: verdict} of each side."""
    shared = sorted(set(base) & set(cand))
    if not shared:
        raise AssayError(
            f"no shared case ids between baseline ({len(base)} cases) and candidate ({len(cand)} cases): "
            "check dataset_version (both runs must use the same dataset)", 2)
    only_base = sorted(set(base) - set(cand))
    only_cand = sorted(set(cand) - set(base))
    n = len(shared)
    fixed_ids = [c for c in shared if base[c] == "fail" and cand[c] == "pass"]
    broken_ids = [c for c in shared if base[c] == "pass" and cand[c] == "fail"]
    b01, b10 = len(fixed_ids), len(broken_ids)
    base_rate = sum(base[c] == "pass" for c in shared) / n
    cand_rate = sum(cand[c] == "pass" for c in shared) / n
    delta = (b01 - b10) / n  # == cand_rate - base_rate, without float drift

    p_better = posterior_better(b01, b10)
    p_worse = posterior_better(b10, b01)  # P(p < 1/2): the mirror image
    sign_p = sign_test_one_sided(b01, b10)
    mcnemar_p = mcnemar_exact_two_sided(b01, b10)
    keep = p_better >= bayes_threshold and delta > 0
    worsened = p_worse >= bayes_threshold and delta < 0

    discordant = b01 + b10
    failing = sum(base[c] == "fail" for c in shared)
    baseline = exact_power.Baseline(failing, n - failing, b01, b10)
    up, down = baseline.mde(True, alpha), baseline.mde(False, alpha)
    mde = up if delta >= 0 else down   # the effect in the direction the run moved
    sentence = mde_sentence(n, up, alpha, worse=down, failing=failing, passing=n - failing)
    mde_explanation = _mde_explanation(baseline, up, down, delta, alpha, sentence, discordant)
    proven = (None if not (keep or worsened) else
              sign_p <= alpha if keep else sign_test_one_sided(b10, b01) <= alpha)
    words = "improved" if keep else "worsened" if worsened else "within noise"
    label = words if proven in (None, True) else f"{words}, not proven"

    out: dict[str, Any] = {
        "n": n,
        "alpha": alpha,
        "baseline_pass_rate": round(base_rate, 4),
        "candidate_pass_rate": round(cand_rate, 4),
        "delta": round(delta, 4),
        "fixed_by_candidate": b01,
        "broken_by_candidate": b10,
        "fixed_by_candidate_ids": fixed_ids[:MAX_IDS],
        "broken_by_candidate_ids": broken_ids[:MAX_IDS],
        "cases_only_in_baseline": len(only_base),
        "cases_only_in_candidate": len(only_cand),
        "cases_only_in_baseline_ids": only_base[:MAX_IDS],
        "cases_only_in_candidate_ids": only_cand[:MAX_IDS],
        "min_detectable_effect_at_this_n": None if mde is None else round(mde, 4),
        "min_detectable_improvement": None if up is None else round(up, 4),
        "min_detectable_worsening": None if down is None else round(down, 4),
        "baseline_failing": failing,
        "baseline_passing": n - failing,
        "pairing": round(baseline.pairing, 4),
        "mde_method": f"exact power of the one-sided sign test (alpha {alpha:g}, power {POWER:g}) given the "
                      "baseline's failing and passing cases and this run's own pairing",
        "discordance": round(discordant / n, 4),
        "mde_sentence": sentence,
        "mde_explanation": mde_explanation,
        "method": METHOD,
        "decision_rule": (f"keep when P(candidate better) >= {bayes_threshold:g} and delta > 0, with "
                          f"p ~ Beta(1 + fixed, 1 + broken) under a uniform prior"),
        "p_candidate_better": p_better,
        "p_candidate_worse": p_worse,
        "threshold": bayes_threshold,
        "sign_test_p_one_sided": sign_p,
        "sign_test_significant_at_alpha": sign_p <= alpha,
        "mcnemar_exact_p_two_sided": mcnemar_p,
        "mcnemar_significant_at_alpha": mcnemar_p <= alpha,
        "mcnemar_note": _mcnemar_note(b01, b10, alpha),
        "keep": keep,
        "verdict_words": words,
        "proven": proven,
        "verdict_label": label,
        "verdict_phrase": f"{label} ({sentence})",
    }
    if worsened:
        out["sign_test_p_one_sided_worse"] = sign_test_one_sided(b10, b01)
    warning = _attrition_warning(len(base), len(cand), len(only_base), len(only_cand))
    if warning:
        out["case_attrition_warning"] = warning
    if keep and not out["sign_test_significant_at_alpha"]:
        out["gate_note"] = (f"kept on the Bayesian rule while the exact sign test is not significant at "
                            f"alpha {alpha:g} (p = {sign_p:.3g}); for a hard CI gate use a threshold of "
                            "about 0.95 (--bayes-threshold 0.95)")
    below = mde is None or abs(delta) < mde
    if keep and (below or not proven):
        out["sub_mde_keep"] = (
            (f"KEPT BUT NOT PROVEN: the exact one-sided sign test gives p = {sign_p:.3g} > {alpha:g} "
             f"({b01} fixed, {b10} broken)" if not proven else "KEPT, SIGNIFICANT BUT BELOW WHAT THIS RUN CAN "
             f"DETECT RELIABLY: p = {sign_p:.3g}, and an effect this small is found less than {POWER:.0%} of "
             "the time, so the delta likely overstates it")
            + (f"; delta {_pct(delta)} is below what this run can detect ({sentence})" if below else ""))
    if not keep and below:
        out["advice"] = _advice(baseline, delta, alpha, sentence)
    return out


def _mde_explanation(baseline: exact_power.Baseline, up: float | None, down: float | None, delta: float,
                     alpha: float, sentence: str, discordant: int) -> str:
    n = baseline.n
    flips = (f"{discordant} of {n} cases changed verdict" if discordant else "no case changed verdict")
    if n < exact_power.smallest_significant(alpha):
        return (f"{sentence}: even {n} of {n} fixed gives a one-sided sign test p of "
                f"{sign_test_one_sided(n, 0):.3g} > {alpha:g}; {flips}. Grow the dataset.")
    need = exact_power.smallest_significant(alpha)
    pairing = ("perfectly paired: nothing moved but the change itself" if baseline.pairing == 0 else
               f"with no net change {baseline.a0:.1%} of failing cases would pass and {baseline.b0:.1%} of "
               "passing ones fail" + (", as much as if unpaired (verdicts independent of the baseline's)"
                                      if baseline.pairing >= 1 else ""))
    text = (f"{sentence}: for a smaller true change in pass rate the exact one-sided sign test at alpha "
            f"{alpha:g} has less than {POWER:.0%} power, given the baseline's {baseline.failing} failing and "
            f"{baseline.passing} passing case(s) (only failing cases can be fixed, only passing ones broken; "
            f"{need} all one way is the least significant split) and this run's own pairing ({pairing}); {flips}.")
    if (up if delta >= 0 else down) is not None:
        text += (f" It shrinks about as 1/sqrt(n): detecting half of it takes about four times the cases "
                 f"(~{4 * n} at this pass rate and pairing).")
    return text


def text_summary(doc: dict) -> list[str]:
    """`stats.py --text`: the comparison in a few lines for a person (every number from `doc`)."""
    def pct(x: object) -> str:
        return f"{x * 100:.1f}%" if isinstance(x, (int, float)) and not isinstance(x, bool) else "n/a"
    lines = [f"{verdict_label(doc).upper()}: pass rate {pct(doc.get('baseline_pass_rate'))} -> "
             f"{pct(doc.get('candidate_pass_rate'))} ({'+' if (doc.get('delta') or 0) >= 0 else ''}"
             f"{(doc.get('delta') or 0) * 100:.1f} pp) over n={doc.get('n')} paired cases",
             f"  fixed by the candidate: {doc.get('fixed_by_candidate')}; broken: {doc.get('broken_by_candidate')}"
             + (f" ({', '.join(doc.get('broken_by_candidate_ids') or [])})" if doc.get('broken_by_candidate_ids') else ""),
             f"  P(candidate better) = {doc.get('p_candidate_better')}; keep = {doc.get('keep')} "
             f"(threshold {doc.get('threshold')})",
             f"  {doc.get('mde_sentence')}"]
    only_b, only_c = doc.get("cases_only_in_baseline") or 0, doc.get("cases_only_in_candidate") or 0
    if only_b or only_c:
        lines.append(f"  not paired: {only_b} case(s) only in the baseline, {only_c} only in the candidate")
    return lines


def _mcnemar_note(b01: int, b10: int, alpha: float) -> str:
    d = b01 + b10
    need = min_discordant_for_significance(alpha)
    if d < need:
        return (f"only {d} discordant pair(s): with fewer than {need}, no split can be significant at "
                f"alpha {alpha:g} (two-sided exact McNemar)")
    return f"{b01} fixed vs {b10} broken among {d} discordant pairs (two-sided exact McNemar)"


def _attrition_warning(n_base: int, n_cand: int, only_base: int, only_cand: int) -> str | None:
    parts = []
    if n_base and only_base / n_base > ATTRITION_WARN:
        parts.append(f"{only_base} of {n_base} baseline cases ({only_base / n_base:.0%}) have no candidate verdict")
    if n_cand and only_cand / n_cand > ATTRITION_WARN:
        parts.append(f"{only_cand} of {n_cand} candidate cases ({only_cand / n_cand:.0%}) have no baseline verdict")
    if not parts:
        return None
    return ("SELECTION BIAS RISK: " + "; ".join(parts) + ". The comparison covers only the cases that "
            "scored pass/fail in both runs, so 'improved' can mean 'improved on the cases that survived'; "
            "look at the dropped cases (infra, unscored, skipped or new) before trusting the delta.")


def _advice(baseline: exact_power.Baseline, delta: float, alpha: float, sentence: str) -> str:
    if delta == 0:
        return f"no net change, and {sentence}; grow the dataset to resolve smaller effects"
    needed = exact_power.cases_needed(baseline, delta, alpha)
    more = (f"about {needed} paired cases would be needed to detect it with {POWER:.0%} power at this pass rate "
            "and pairing" if needed else "no realistic number of cases would detect it")
    return f"delta {_pct(delta)} is below what this run can detect ({sentence}); {more}: " \
           "grow the dataset rather than reading this delta"
