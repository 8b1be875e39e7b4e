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

from math import comb, sqrt

Z95 = 1.959963984540054


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    if n <= 0:
        return None
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_exact_two_sided(a: int, b: int, c: int, d: int) -> float:
    row1, col1, n = a + b, a + c, a + b + c + d
    if n == 0:
        return 1.0
    lo, hi = max(0, col1 - (n - row1)), min(row1, col1)
    total = comb(n, col1)

    def prob(x: int) -> float:
        return comb(row1, x) * comb(n - row1, col1 - x) / total

    observed = prob(a)
    p = sum(prob(x) for x in range(lo, hi + 1) if prob(x) <= observed * (1 + 1e-9))
    return min(1.0, p)
