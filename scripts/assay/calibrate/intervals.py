"""Exact (Clopper-Pearson) binomial intervals without scipy.

The beta quantile is found by bisection on the regularized incomplete beta function
I_x(a, b), which is evaluated by its continued fraction (modified Lentz), using the
symmetry I_x(a, b) = 1 - I_{1-x}(b, a) where the fraction converges slowly.
The kappa interval is not exact: see `kappa_interval`.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from ..stats.kappa import cohen_kappa  # noqa: F401 (re-exported: the one definition is in stats)

_EPS = 1e-15
_TINY = 1e-300
_MAX_TERMS = 10_000


def _beta_continued_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of I_x(a, b) (converges fast for x < (a + 1) / (a + b + 2))."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        # even step: d_{2m}
        num = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        h *= d * c
        # odd step: d_{2m+1}
        num = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + num * d
        d = 1.0 / (d if abs(d) > _TINY else _TINY)
        c = 1.0 + num / c
        c = c if abs(c) > _TINY else _TINY
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for x={x}, a={a}, b={b}")


def regularized_incomplete_beta(x: float, a: float, b: float) -> float:
    """I_x(a, b) = P(X <= x) for X ~ Beta(a, b); a, b > 0, 0 <= x <= 1."""
    if a <= 0 or b <= 0:
        raise ValueError(f"beta parameters must be positive, got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(x, a, b) / a
    return 1.0 - front * _beta_continued_fraction(1.0 - x, b, a) / b


def beta_quantile(p: float, a: float, b: float, *, tol: float = 1e-12) -> float:
    """The x with I_x(a, b) = p: safeguarded Newton inside a shrinking bisection bracket.

    The derivative of I_x(a, b) is the Beta(a, b) density, so a Newton step costs one more
    exp; a step that leaves the bracket (or does not halve it) is replaced by bisection.
    About six evaluations of I at any a, b (bisection alone took ~40), the same root to
    well within `tol`."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability must be in [0, 1], got {p}")
    if p == 0.0:
        return 0.0
    if p == 1.0:
        return 1.0
    log_norm = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    lo, hi = 0.0, 1.0
    x = min(max(a / (a + b), 1e-300), 1.0 - 1e-16)
    for _ in range(200):
        f = regularized_incomplete_beta(x, a, b) - p
        if f < 0:
            lo = x
        else:
            hi = x
        if hi - lo < tol:
            break
        density = math.exp(log_norm + (a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x)) if 0 < x < 1 else 0.0
        step = f / density if density > 0 else math.inf
        nxt = x - step
        if not lo < nxt < hi or abs(step) > (hi - lo) / 2:
            nxt = (lo + hi) / 2.0
        elif abs(step) < tol * 1e-3:
            return nxt
        x = nxt
    return (lo + hi) / 2.0


def clopper_pearson(successes: int, n: int, confidence: float = 0.95) -> list[float] | None:
    """The exact two-sided interval for a binomial proportion; None when n == 0."""
    if n == 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes {successes} outside 0..{n}")
    alpha = 1.0 - confidence
    lower = 0.0 if successes == 0 else beta_quantile(alpha / 2.0, successes, n - successes + 1)
    upper = 1.0 if successes == n else beta_quantile(1.0 - alpha / 2.0, successes + 1, n - successes)
    return [lower, upper]


def kappa_interval(tp: int, fn: int, fp: int, tn: int, confidence: float = 0.95) -> list[float] | None:
    """A large-sample interval for Cohen's kappa on a 2x2 table, clipped to [-1, 1].

    Uses the standard error of Fleiss, Cohen and Everitt (1969). No exact interval for
    kappa exists in closed form; this one is reported, never gated on. None when kappa
    is undefined (no pairs, or chance agreement of 1) and when one side (the people or the
    judge) used a single label: kappa is then 0 by construction and the standard error 0,
    so the interval would read [0.0, 0.0], certain, where nothing can be estimated. None too
    at perfect agreement (no pair disagrees): the standard error is 0 there and the interval
    would read [1.0, 1.0], as certain as if every future pair must agree (`kappa_ci_note` says so).
    """
    n = tp + fn + fp + tn
    if n == 0:
        return None
    # rows: human (fail, pass); columns: judge (fail, pass)
    p = [[tp / n, fn / n], [fp / n, tn / n]]
    row = [p[0][0] + p[0][1], p[1][0] + p[1][1]]
    col = [p[0][0] + p[1][0], p[0][1] + p[1][1]]
    po = p[0][0] + p[1][1]
    pe = row[0] * col[0] + row[1] * col[1]
    if pe >= 1.0 or 0 in (tp + fn, fp + tn, tp + fp, fn + tn) or fn + fp == 0:
        return None
    kappa = (po - pe) / (1.0 - pe)
    total = 0.0
    for i in range(2):
        total += p[i][i] * (1.0 - (row[i] + col[i]) * (1.0 - kappa)) ** 2
    for i in range(2):
        for j in range(2):
            if i != j:
                total += p[i][j] * ((row[j] + col[i]) * (1.0 - kappa)) ** 2
    total -= (kappa - pe * (1.0 - kappa)) ** 2
    se = math.sqrt(max(total, 0.0) / (n * (1.0 - pe) ** 2))
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    return [max(-1.0, kappa - z * se), min(1.0, kappa + z * se)]
