"""Exact power of the one-sided sign test over discordant pairs, and the minimum detectable effect.

The test (`paired.sign_test_one_sided`): among d discordant pairs, b01 fixed and b10 broken,
reject "no change" when P(Binomial(d, 1/2) >= b01) <= alpha. Its rejection region is
b01 >= c(d), the critical count, found exactly in integers.

The model of a paired run of n cases: each case independently is fixed with probability
p01, broken with p10, unchanged otherwise. The effect is delta = p01 - p10 (the change in
pass rate) and psi = p01 + p10 the discordance (delta <= psi <= 1). The exact power is

    power(n, delta, psi) = sum_d P(D = d) * P(Binomial(d, q) >= c(d)),
    D ~ Binomial(n, psi), q = p01 / psi,

computed from the exact distributions (no normal approximation), summed in floats over
every d whose probability is not negligible (<1e-15 left out).

The minimum detectable effect at n is the smallest delta whose power reaches 0.8 at the
most favourable discordance: below it, the test has less than 80 % power whatever the
discordance, so "n cases cannot detect any effect below X" is true as said. When no split
of n cases can be significant (2^-n > alpha: n <= 4 at alpha 0.05) nothing is detectable.
"""

from __future__ import annotations

import math

POWER = 0.8
_SPREAD = 9.0  # standard deviations kept either side of a mean (plus 10): the rest is < 1e-15
_PSI_GRID = 48
_TOL = 1e-5  # relative: finer than the printed figure (3 significant at most, rounded down)


class _CriticalTable:
    """c(d) for d = 0, 1, 2, ... at one alpha, extended on demand and shared by every n: c(d)
    depends on d and alpha only, so the table for n is a prefix of the table for any larger n
    (cases_needed's search over n, and min_detectable_effect after it, build it once).

    Exact: N(d, c) = sum_{i >= c} C(d, i) follows Pascal's rule as d grows, and c(d+1) is
    c(d) or c(d) + 1, so the table costs O(d) big-integer steps."""

    def __init__(self, alpha: float) -> None:
        from fractions import Fraction   # here: a run that never compares never imports fractions (nor decimal)
        a = Fraction(alpha)
        self.num, self.den = a.numerator, a.denominator
        self.values: list[int | None] = []
        self.c, self.tail, self.cc = 0, 1, 1  # at the last d: tail = N(d, c), cc = C(d, c) (0 when c > d)

    def upto(self, n: int) -> list[int | None]:
        out, num, den = self.values, self.num, self.den
        c, tail, cc = self.c, self.tail, self.cc
        for d in range(len(out), n + 1):
            if d:
                prev = d - 1  # C(prev, c - 1) from C(prev, c) without recomputing a binomial
                below = 0 if c == 0 else 1 if c == prev + 1 else cc * c // (prev - c + 1)
                tail, cc = 2 * tail + below, cc + below  # N(d, c) = 2 N(d-1, c) + C(d-1, c-1)
            while c <= d and tail * den > num << d:
                tail -= cc
                cc = cc * (d - c) // (c + 1)
                c += 1
            out.append(c if c <= d else None)
        self.c, self.tail, self.cc = c, tail, cc
        return out


_TABLES: dict[float, _CriticalTable] = {}


def _critical(n: int, alpha: float) -> list[int | None]:
    """c(d) for d = 0..n (at least): the least b01 with P(Bin(d, 1/2) >= b01) <= alpha; None when none is."""
    table = _TABLES.get(alpha)
    if table is None:
        if len(_TABLES) >= 16:
            _TABLES.clear()
        table = _TABLES[alpha] = _CriticalTable(alpha)
    return table.upto(n)


_LGAMMA: list[float] = []   # _LGAMMA[k] = math.lgamma(k + 1), the same floats, computed once


def _lgammas(n: int) -> list[float]:
    if len(_LGAMMA) <= n:
        _LGAMMA.extend(math.lgamma(k + 1) for k in range(len(_LGAMMA), n + 1))
    return _LGAMMA


def detectable_at_all(n: int, alpha: float) -> bool:
    """True when some split of n cases is significant (all n fixed: 2^-n <= alpha)."""
    return n > 0 and _critical(n, alpha)[n] is not None


def _log_pmf(k: int, d: int, lp: float, lq: float) -> float:
    lg = _LGAMMA if len(_LGAMMA) > d else _lgammas(d)
    return lg[d] - lg[k] - lg[d - k] + k * lp + (d - k) * lq


def _window(n: int, p: float) -> tuple[int, int]:
    sd = math.sqrt(n * p * (1 - p))
    mean = n * p
    return max(0, math.floor(mean - _SPREAD * sd - 10)), min(n, math.ceil(mean + _SPREAD * sd + 10))


def _upper_tail(d: int, c: int, q: float) -> float:
    """P(Binomial(d, q) >= c), 0 < q < 1, summed over the non-negligible terms."""
    if c <= 0:
        return 1.0
    if c > d:
        return 0.0
    lo, hi = _window(d, q)
    lp, lq = math.log(q), math.log1p(-q)
    if c > hi:
        return 0.0
    if c <= lo:
        return 1.0 - sum(math.exp(_log_pmf(k, d, lp, lq)) for k in range(lo, c))
    return sum(math.exp(_log_pmf(k, d, lp, lq)) for k in range(c, hi + 1))


def power(n: int, delta: float, psi: float, alpha: float) -> float:
    """Exact power of the one-sided sign test at alpha for effect delta and discordance psi."""
    if not 0 < delta <= psi <= 1:
        raise ValueError(f"need 0 < delta <= psi <= 1, got delta={delta!r}, psi={psi!r}")
    crit = _critical(n, alpha)
    q = min(1.0, (psi + delta) / (2 * psi))
    lo, hi = _window(n, psi) if psi < 1 else (n, n)
    lpsi, lnot = math.log(psi), (math.log1p(-psi) if psi < 1 else 0.0)
    lp, lq = (math.log(q), math.log1p(-q)) if q < 1 else (0.0, 0.0)
    total, tail, prev_c = 0.0, None, None
    for d in range(lo, hi + 1):
        c = crit[d]
        if q >= 1:
            tail = 1.0 if c is not None else 0.0
        elif c is None:
            tail = None
        elif tail is None or prev_c is None:
            tail = _upper_tail(d, c, q)
        else:
            # P(S_d >= c') from P(S_{d-1} >= c): add q P(S_{d-1} = c - 1), drop P(S_d = c) if c' = c + 1
            tail += q * math.exp(_log_pmf(prev_c - 1, d - 1, lp, lq)) if prev_c >= 1 else 0.0
            for k in range(prev_c, c):
                tail -= math.exp(_log_pmf(k, d, lp, lq))
            tail = min(1.0, max(0.0, tail))
        prev_c = c
        if tail:
            total += tail * (1.0 if psi >= 1 else math.exp(_log_pmf(d, n, lpsi, lnot)))
    return min(1.0, total)


def best_power(n: int, delta: float, alpha: float) -> tuple[float, float]:
    """(the highest power over every discordance psi in [delta, 1], the psi reaching it)."""
    grid = [delta + (1 - delta) * (i / _PSI_GRID) ** 2 for i in range(_PSI_GRID + 1)]
    values = [(power(n, delta, psi, alpha), psi) for psi in grid]
    best_i = max(range(len(values)), key=lambda i: values[i][0])
    lo = grid[max(0, best_i - 1)]
    hi = grid[min(len(grid) - 1, best_i + 1)]
    best = values[best_i]
    for _ in range(24):  # golden-section refinement around the best grid point
        if hi - lo < 1e-6:
            break
        m1, m2 = lo + (hi - lo) * 0.382, lo + (hi - lo) * 0.618
        p1, p2 = power(n, delta, m1, alpha), power(n, delta, m2, alpha)
        best = max(best, (p1, m1), (p2, m2))
        if p1 < p2:
            lo = m1
        else:
            hi = m2
    return best


def min_detectable_effect(n: int, alpha: float, target: float = POWER) -> float | None:
    """The smallest effect n paired cases detect with power `target` at the most favourable
    discordance (exact one-sided sign test at alpha); None when no effect is detectable."""
    if not detectable_at_all(n, alpha) or best_power(n, 1.0, alpha)[0] < target:
        return None
    # bracket first: about (log2(1/alpha) + 3) one-way flips are needed, so start near that
    hi = min(1.0, 2 * (math.log2(1 / alpha) + 3) / n)
    while best_power(n, hi, alpha)[0] < target:
        hi = min(1.0, hi * 2)
    lo = hi / 4
    while lo > 1e-9 and best_power(n, lo, alpha)[0] >= target:
        hi, lo = lo, lo / 4
    while hi - lo > _TOL * hi:  # best_power(lo) < target <= best_power(hi); it grows with delta
        mid = (lo + hi) / 2
        if best_power(n, mid, alpha)[0] >= target:
            hi = mid
        else:
            lo = mid
    return hi


def cases_needed(delta: float, alpha: float, target: float = POWER, limit: int = 1_000_000) -> int | None:
    """The fewest paired cases that detect `delta` with power `target` at the most favourable
    discordance (the same test); None beyond `limit`."""
    delta = abs(delta)
    if not 0 < delta <= 1:
        return None
    def enough(n: int) -> bool:
        return detectable_at_all(n, alpha) and best_power(n, delta, alpha)[0] >= target
    hi = 8
    while not enough(hi):
        if hi >= limit:
            return None
        hi = min(limit, hi * 2)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
