"""Proportions: an interval for one pass rate, and a test of whether two differ. Pure.

- `wilson_interval(k, n)`: the Wilson score interval (95 % by default); unlike the
  normal approximation it stays inside [0, 1] and behaves at 0/n and n/n.
- `fisher_exact_two_sided(a, b, c, d)`: Fisher's exact test on the 2x2 table
  [[a, b], [c, d]] (rows: two runs or groups; columns: pass, fail). Two-sided p is the
  sum of the probabilities of every table with the same margins that is no more
  likely than the one observed. Exact at any sample size, which is the point: a
  series of 12-case smoke runs is far too small for a z-test.
"""

from __future__ import annotations

from math import exp, fsum, log, log1p, sqrt

Z95 = 1.959963984540054
_NEGLIGIBLE = 800.0  # e^-800: below the smallest float's share of any sum here
_TIE = 1e-9          # a table within this relative margin of the observed one counts as no more likely


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact_two_sided(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher p for [[a, b], [c, d]], in time proportional to the terms that count.

    The hypergeometric pmf is log-concave: from its mode the terms fall away on both sides.
    Each term is reached from its neighbour by the exact ratio
    P(x + 1) / P(x) = (r - x)(k - x) / ((x + 1)(n - r - k + x + 1)) (r = a + b, k = a + c),
    in logs relative to the mode, so no binomial coefficient of n is ever formed; the walk
    stops where a term is below e^-800 of both the mode and the observed table (nothing
    further can move a float). A table counts as "no more likely" within 1e-9, as before:
    the result equals summing every table exactly to ~1e-12 relative.
    """
    row1, col1, n = a + b, a + c, a + b + c + d
    if n == 0:
        return 1.0
    lo, hi = max(0, col1 - (n - row1)), min(row1, col1)
    if lo == hi:
        return 1.0
    other = n - row1 - col1  # the bottom-right cell of the table with top-left x is other + x
    mode = min(hi, max(lo, (row1 + 1) * (col1 + 1) // (n + 2)))

    def step_up(x: int) -> float:   # log P(x + 1) - log P(x)
        return log((row1 - x) * (col1 - x)) - log((x + 1) * (other + x + 1))

    logw = {mode: 0.0}
    # toward the observed table first: its log weight sets the threshold and where to stop
    x, lw = mode, 0.0
    while x < a:
        lw += step_up(x)
        x += 1
        logw[x] = lw
    while x > a:
        lw -= step_up(x - 1)
        x -= 1
        logw[x] = lw
    observed = logw[a]
    floor_ = min(observed, 0.0) - _NEGLIGIBLE
    # then outward on both sides until the terms are negligible
    x, lw = max(a, mode), logw[max(a, mode)]
    while x < hi and lw > floor_:
        lw += step_up(x)
        x += 1
        logw[x] = lw
    x, lw = min(a, mode), logw[min(a, mode)]
    while x > lo and lw > floor_:
        lw -= step_up(x - 1)
        x -= 1
        logw[x] = lw
    cut = observed + log1p(_TIE)
    total = fsum(exp(v) for v in logw.values())
    tail = fsum(exp(v - observed) for v in logw.values() if v <= cut)
    return min(1.0, exp(observed + log(tail) - log(total)))
