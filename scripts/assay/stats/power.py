"""Exact power of the paired sign test, given the baseline, and the minimum detectable effects.

The test (`paired.sign_test_one_sided`): among d discordant pairs, b01 fixed and b10 broken,
reject "no change" when P(Binomial(d, 1/2) >= b01) <= alpha (a worsening: the same with b10).
Its rejection region is b01 >= c(d), the critical count.

The model is conditional on the baseline, which the comparison sees: of its n paired cases F
failed and P = n - F passed. In the candidate each failing case passes (is fixed) with
probability a and each passing case fails (is broken) with probability b, independently, so
B01 ~ Binomial(F, a), B10 ~ Binomial(P, b) and the change in pass rate is
delta = (F a - P b) / n. Only F cases can be fixed: with fewer failing cases than the
smallest significant split (5 at alpha 0.05: 2^-5 <= alpha) no improvement can be shown at
any effect, and the same for a worsening with few passing cases.

The nuisance is the pairing: how much the verdicts move when nothing changed. It is read
from the run itself: with a_obs = b01 / F and b_obs = b10 / P, s = a_obs + b_obs, the null
the effect is measured from is a0 = p0 s, b0 = (1 - p0) s (p0 = P / n; F a0 = P b0, no net
change). s = 0 is a perfectly paired run (nothing moves but the effect: the most favourable
case, and what a run with no flip shows); s = 1 is verdicts independent of the baseline's
(an unpaired run: a0 = p0, b0 = 1 - p0). An effect t moves every case's chance of passing by
t: a = min(1, a0 + t), b = max(0, b0 - t) (a worsening: a0 - t, b0 + t). The power is

    power = sum_b10 P(B10 = b10) * P(B01 >= t(b10)),  t(b10) = least b01 with b01 >= c(b01 + b10),

exact in distribution (no normal approximation) and summed in floats over every value
whose probability is not negligible (< 1e-15 of the total left out). The minimum detectable
effect is delta at the least t whose power reaches 0.8: below it the test has under 80 %
power in this model, so "cannot detect an improvement below X" is what this run can do.

Cost: the power visits d = b01 + b10 in increasing order, so c(d) is one float walk (c(d + 1)
is c(d) or c(d) + 1) started by a direct tail sum, re-anchored every 1,024 steps and whenever
the tail is within 1e-6 of alpha, where it is decided exactly in integers up to 20,000
discordant pairs (beyond, a tail within 1e-9 of alpha counts as reaching it: a float tie). A
power is O(sqrt n) in time and memory; no table of n entries is ever built.
"""

from __future__ import annotations

import math

from .binomial import distribution, pmf

POWER = 0.8
_TOL = 1e-5            # relative: finer than the printed figure (3 significant at most, rounded down)
_CLOSE = 1e-6          # a power this close above the target is the effect (to ~1e-6 of it)
_EXACT_UPTO = 20_000   # discordant pairs up to which a near-tie is decided in integers
_NEAR = 1e-6           # relative distance to alpha below which the walk's tail is recomputed
_ANCHOR = 1024         # steps between direct recomputations of the walk's tail

# ------------------------------------------------------------------ the critical counts c(d)

def _tail_half(d: int, k: int) -> float:
    """P(Binomial(d, 1/2) >= k) in floats, summed from k outward until negligible."""
    if k <= 0:
        return 1.0
    if k > d:
        return 0.0
    if 2 * k <= d:                         # the upper side holds most of the mass: 1 - P(X <= k - 1)
        return 1.0 - _tail_half(d, d - k + 1)
    terms, v, i = [], pmf(k, d, 0.5), k
    while v > 0.0 and i <= d:
        terms.append(v)
        if v < 1e-18 * terms[0]:
            break
        v *= (d - i) / (i + 1)
        i += 1
    return math.fsum(terms)


def _exact_reaches(d: int, k: int, num: int, den: int) -> bool:
    """P(Binomial(d, 1/2) >= k) <= num / den, in integers (Pascal's ratio over the shorter side)."""
    if 2 * k > d:
        total, term = 0, 1
        for i in range(d - k + 1):         # sum_{i >= k} C(d, i) = sum_{j <= d - k} C(d, j)
            total += term
            term = term * (d - i) // (i + 1)
        return total * den <= num << d
    total, term = 0, 1
    for i in range(k):                     # the complement: sum_{i < k} C(d, i)
        total += term
        term = term * (d - i) // (i + 1)
    return ((1 << d) - total) * den <= num << d


_FRACTIONS: dict[float, tuple[int, int]] = {}


def _ratio(alpha: float) -> tuple[int, int]:
    got = _FRACTIONS.get(alpha)
    if got is None:
        from fractions import Fraction   # here: a run that never compares never imports fractions
        f = Fraction(alpha)
        if len(_FRACTIONS) >= 16:
            _FRACTIONS.clear()
        got = _FRACTIONS[alpha] = (f.numerator, f.denominator)
    return got


class Walk:
    """c(d), the critical count, for d, d + 1, d + 2, ... (d + 1 standing for "no split of d is
    significant"): started anywhere by a direct tail sum, then one O(1) step per d, since c(d + 1)
    is c(d) or c(d) + 1. It keeps tail = P(X_d >= k) and term = P(X_d = k - 1), X_d ~ Bin(d, 1/2)."""

    def __init__(self, d: int, alpha: float) -> None:
        self.alpha = alpha
        self.above, self.below = alpha * (1 + _NEAR), alpha * (1 - _NEAR)
        self.d, self.steps = d, 0
        k = (d + 1) // 2 if alpha < 0.5 else 0
        tail = _tail_half(d, k)
        while k > 0 and not self._over(d, k - 1, tail + pmf(k - 1, d, 0.5))[0]:
            k -= 1                                   # P(X >= k - 1) still reaches alpha: go down
            tail += pmf(k, d, 0.5)
        while k <= d:
            over, tail = self._over(d, k, tail)
            if not over:
                break
            tail -= pmf(k, d, 0.5)
            k += 1
        if k > d:
            k, tail = d + 1, 0.0
        self.k, self.tail, self.term = k, tail, pmf(k - 1, d, 0.5)

    def _over(self, d: int, k: int, tail: float) -> tuple[bool, float]:
        """(is P(X_d >= k) above alpha, the tail to carry on with): decided exactly near alpha."""
        if tail > self.above:
            return True, tail
        if tail < self.below:
            return False, tail
        tail = _tail_half(d, k)
        alpha = self.alpha
        if abs(tail - alpha) > 1e-9 * alpha:
            return tail > alpha, tail
        if d <= _EXACT_UPTO:
            num, den = _ratio(alpha)
            return not _exact_reaches(d, k, num, den), tail
        return False, tail                 # a float tie beyond the exact range counts as reaching alpha

    def step(self) -> int:
        """Move to d + 1; return c(d + 1)."""
        k, tail, term = self.k, self.tail, self.term
        d = self.d = self.d + 1
        tail += 0.5 * term                 # P(X_d >= k) = P(X_{d-1} >= k) + P(X_{d-1} = k - 1) / 2
        term = term * d / (2 * (d - k + 1))   # P(X_d = k - 1) from P(X_{d-1} = k - 1) (k <= d here)
        self.steps += 1
        if self.steps % _ANCHOR == 0:
            tail, term = _tail_half(d, k), pmf(k - 1, d, 0.5)
        below = self.below
        while k <= d and tail >= below:
            if tail <= self.above:         # near alpha: decided by _over, exactly where it matters
                over, tail = self._over(d, k, tail)
                if not over:
                    break
            nxt = term * (d - k + 1) / k   # P(X_d = k) from P(X_d = k - 1)
            tail -= nxt
            term = nxt
            k += 1
        if k > d:
            k, tail, term = d + 1, 0.0, pmf(d, d, 0.5)
        self.k, self.tail, self.term = k, tail, term
        return k


def critical(n: int, alpha: float) -> list[int]:
    """c(d) for d = 0..n: the least b01 with P(Bin(d, 1/2) >= b01) <= alpha, d + 1 when none."""
    walk = Walk(0, alpha)
    return [walk.k] + [walk.step() for _ in range(n)]


_SMALLEST: dict[float, int] = {}


def smallest_significant(alpha: float) -> int:
    """The fewest changed cases, all one way, that the one-sided sign test finds significant."""
    got = _SMALLEST.get(alpha)
    if got is None:
        walk, got = Walk(1, alpha), 1
        while walk.k > got:
            walk.step()
            got += 1
        if len(_SMALLEST) >= 16:
            _SMALLEST.clear()
        _SMALLEST[alpha] = got
    return got


# ------------------------------------------------------------------ power and the effects

def power(moving: int, a: float, against: int, b: float, alpha: float) -> float:
    """Exact power of the one-sided sign test when `moving` cases each change the wanted way with
    probability a and `against` cases the other way with probability b (B01 ~ Bin(moving, a),
    B10 ~ Bin(against, b); significant when b01 >= c(b01 + b10))."""
    lo1, w1 = distribution(moving, a)
    lo0, w0 = distribution(against, b)
    suffix = [0.0] * (len(w1) + 1)
    for i in range(len(w1) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + w1[i]
    last = min(moving, lo1 + len(w1) - 1)   # beyond it B01 has no mass that counts
    total, t, walk = 0.0, 0, None
    for j, p0 in enumerate(w0):
        b10 = lo0 + j
        if walk is None:
            t = b10 + 1 if alpha < 0.5 else 0   # a significant split has b01 > b10 below alpha 1/2
            walk = Walk(t + b10, alpha)
        else:
            walk.step()                          # d = t + b10 goes up by one with b10 ...
        while t <= last and t < walk.k:
            t += 1
            walk.step()                          # ... and with t: every d is visited once, in order
        if t > last:
            break
        total += p0 * (suffix[t - lo1] if t > lo1 else suffix[0])
    return min(1.0, total)


class Baseline:
    """The paired cases as the baseline left them (failing, passing) and the run's own pairing."""

    def __init__(self, failing: int, passing: int, fixed: int = 0, broken: int = 0) -> None:
        self.failing, self.passing = failing, passing
        self.n = failing + passing
        self._pair((fixed / failing if failing else 0.0) + (broken / passing if passing else 0.0))

    def _pair(self, s: float) -> None:
        """The null's rates from the pairing s (capped where a rate would pass 1)."""
        p0 = self.passing / self.n if self.n else 0.0
        cap = min(1 / p0 if p0 else math.inf, 1 / (1 - p0) if p0 < 1 else math.inf)
        self.pairing = min(s, cap)        # 0: perfectly paired; 1: independent of the baseline's verdicts
        self.a0, self.b0 = p0 * self.pairing, (1 - p0) * self.pairing

    def rates(self, t: float, up: bool) -> tuple[float, float]:
        """(P(fixed), P(broken)) at effect t toward `up` (improvement) or away (worsening)."""
        if up:
            return min(1.0, self.a0 + t), max(0.0, self.b0 - t)
        return max(0.0, self.a0 - t), min(1.0, self.b0 + t)

    def delta(self, t: float, up: bool) -> float:
        a, b = self.rates(t, up)
        return abs(self.failing * a - self.passing * b) / self.n

    def top(self, up: bool) -> float:
        return max(1 - self.a0, self.b0) if up else max(self.a0, 1 - self.b0)

    def power(self, t: float, up: bool, alpha: float) -> float:
        a, b = self.rates(t, up)
        if up:
            return power(self.failing, a, self.passing, b, alpha)
        return power(self.passing, b, self.failing, a, alpha)

    def can_show(self, up: bool, alpha: float) -> bool:
        """True when some outcome is significant: enough cases to move (failing ones to improve)."""
        return (self.failing if up else self.passing) >= smallest_significant(alpha)

    def mde(self, up: bool, alpha: float, target: float = POWER) -> float | None:
        """The least change in pass rate (toward `up`) detected with power `target`; None when none is."""
        if not self.can_show(up, alpha):
            return None
        lo, hi = 0.0, self.top(up)
        f_lo, f_hi = self.power(lo, up, alpha) - target, self.power(hi, up, alpha) - target
        if f_hi < 0:
            return None
        side = 0
        # regula falsi, Illinois variant: the power is smooth and increasing in t, so a few
        # evaluations find it; the bracket keeps power(lo) < target <= power(hi) throughout
        for _ in range(100):
            if f_hi <= _CLOSE or self.delta(hi, up) - self.delta(lo, up) <= _TOL * self.delta(hi, up):
                break
            mid = hi - f_hi * (hi - lo) / (f_hi - f_lo)
            if not lo < mid < hi:
                mid = (lo + hi) / 2
            f_mid = self.power(mid, up, alpha) - target
            if f_mid >= 0:
                hi, f_hi = mid, f_mid
                if side == 1:
                    f_lo /= 2
                side = 1
            else:
                lo, f_lo = mid, f_mid
                if side == -1:
                    f_hi /= 2
                side = -1
        return self.delta(hi, up)

    def effect_at(self, delta: float, up: bool) -> float | None:
        """The t whose change in pass rate is `delta` (None when the baseline cannot move that far)."""
        top = self.top(up)
        if self.delta(top, up) < delta:
            return None
        lo, hi = 0.0, top
        for _ in range(60):
            mid = (lo + hi) / 2
            if self.delta(mid, up) >= delta:
                hi = mid
            else:
                lo = mid
        return hi

    def scaled(self, n: int) -> Baseline:
        """The same pass rate and pairing over n cases."""
        failing = round(n * self.failing / self.n) if self.n else 0
        other = Baseline(failing, n - failing)
        other._pair(self.pairing)
        return other


def cases_needed(base: Baseline, delta: float, alpha: float, target: float = POWER,
                 limit: int = 1_000_000) -> int | None:
    """The fewest paired cases, at this baseline's pass rate and pairing, that detect a change of
    `delta` (its sign the direction) with power `target`; None beyond `limit`."""
    up = delta > 0
    delta = abs(delta)
    if not 0 < delta <= 1:
        return None

    def enough(n: int) -> bool:
        other = base.scaled(n)
        if not other.can_show(up, alpha):
            return False
        t = other.effect_at(delta, up)
        return t is not None and other.power(t, up, alpha) >= target
    hi = max(8, base.n)
    while not enough(hi):
        if hi >= limit:
            return None
        hi = min(limit, hi * 2)
    lo = hi // 2 if hi > 8 else 0
    while lo > 8 and enough(lo):
        hi, lo = lo, lo // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
