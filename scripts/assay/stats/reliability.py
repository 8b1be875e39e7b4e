"""Repeat reliability: unbiased pass@k and pass^k per case, averaged (reliability.json).

For a case with n repeats of which c passed:
- pass@k = 1 - C(n - c, k) / C(n, k)   (Chen et al. 2021: at least one of k passes)
- pass^k = C(c, k) / C(n, k)           (Yao et al. 2024: all k pass)
both unbiased (the plug-ins 1 - (1 - c/n)^k and (c/n)^k are not), C(a, b) = 0 when b > a.
Each case's value is rounded to 4 dp, then the cases are averaged without weighting.
The gap pass@k - pass^k is the flakiness signal: cases that pass sometimes, not always.

Only cases whose repeats are all `pass`/`fail` and number at least k are measured; the
others (any infra_error, unscored, skipped ... repeat, or too few repeats) are listed in
`excluded_cases` with their verdicts and a reason -- never silently dropped.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any


def _check(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
    if not (0 <= c <= n):
        raise ValueError(f"need 0 <= c <= n, got c={c}, n={n}")
    if not (1 <= k <= n):
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k)."""
    _check(n, c, k)
    return float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k = C(c, k) / C(n, k)."""
    _check(n, c, k)
    return float(Fraction(math.comb(c, k), math.comb(n, k)))


def repeats_disagree(row: dict) -> bool:
    """A case's repeats in one run disagreed (`{"n", "c"}`: 0 < c < n passed): it flaked in that run."""
    n, c = row.get("n"), row.get("c")
    return isinstance(n, int) and isinstance(c, int) and 0 < c < n


def reliability(per_case: dict[str, list[str]], k: int) -> dict:
    """reliability.json content from `{case_id: [repeat verdicts in repeat order]}`."""
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")
    per_case_rows: list[dict[str, Any]] = []
    excluded: list[dict[str, Any]] = []
    repeats_per_case: dict[str, int] = {}
    for case_id, verdicts in per_case.items():
        verdicts = list(verdicts)
        repeats_per_case[case_id] = len(verdicts)
        others = sorted({v for v in verdicts if v not in ("pass", "fail")})
        if others:
            excluded.append({"case_id": case_id, "verdicts": verdicts,
                             "reason": f"repeat verdicts not all pass/fail: {', '.join(map(str, others))}"})
            continue
        if len(verdicts) < k:
            excluded.append({"case_id": case_id, "verdicts": verdicts,
                             "reason": f"only {len(verdicts)} repeat(s), fewer than k={k}"})
            continue
        n, c = len(verdicts), verdicts.count("pass")
        per_case_rows.append({"case_id": case_id, "n": n, "c": c,
                              "pass_at_k": round(pass_at_k(n, c, k), 4),
                              "pass_hat_k": round(pass_hat_k(n, c, k), 4)})
    out: dict[str, Any] = {
        "k": k,
        "n_cases": len(per_case_rows),
        "repeats_per_case": repeats_per_case,
        "per_case": per_case_rows,
        "excluded_cases": excluded,
    }
    if not per_case_rows:
        out.update(pass_at_k=None, pass_hat_k=None, flakiness_gap=None,
                   flakiness_note=f"no case had {k} repeats that all scored pass/fail; nothing to measure "
                                  f"({len(excluded)} case(s) excluded)")
        return out
    mean_at = round(sum(r["pass_at_k"] for r in per_case_rows) / len(per_case_rows), 4)
    mean_hat = round(sum(r["pass_hat_k"] for r in per_case_rows) / len(per_case_rows), 4)
    gap = round(mean_at - mean_hat, 4)
    flaky = [r["case_id"] for r in per_case_rows if repeats_disagree(r)]
    out.update(pass_at_k=mean_at, pass_hat_k=mean_hat, flakiness_gap=gap,
               flakiness_note=_note(k, mean_at, mean_hat, gap, flaky, len(excluded)))
    return out


def _note(k: int, mean_at: float, mean_hat: float, gap: float, flaky: list[str], n_excluded: int) -> str:
    if flaky:
        shown = ", ".join(flaky[:10]) + (f" and {len(flaky) - 10} more" if len(flaky) > 10 else "")
        text = (f"pass@{k} {mean_at:.1%} vs pass^{k} {mean_hat:.1%}: a gap of {gap * 100:.1f}pp from "
                f"{len(flaky)} flaky case(s) that passed some repeats but not all ({shown})")
    else:
        text = f"no flaky case: every measured case passed all or none of its repeats (pass^{k} {mean_hat:.1%})"
    if n_excluded:
        text += f"; {n_excluded} case(s) excluded (see excluded_cases)"
    return text
