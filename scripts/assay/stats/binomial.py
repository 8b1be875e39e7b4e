"""The binomial distribution in floats, accurate at any n: the pmf by Loader's saddle-point form
(Loader 2000, "Fast and accurate computation of binomial probabilities": what R's dbinom and
scipy use), relative error ~1e-14 where lgamma differences lose ~1e-10 at n = 100,000, and the
non-negligible part of a distribution, walked outward from its mode. Pure; used by
`assay.stats.power`.
"""

from __future__ import annotations

import math

_SPREAD = 9.0          # standard deviations kept either side of a mean (plus 10): the rest is < 1e-15
_LN_2PI = math.log(2.0 * math.pi)

_SFE = [0.0, 0.0810614667953272582, 0.0413406959554092941, 0.0276779256849983391, 0.0207906721037650931,
        0.0166446911898211922, 0.0138761288230707480, 0.0118967099458917701, 0.0104112652619720965,
        0.00925546218271273292, 0.00833056343336287126, 0.00757367548795184079, 0.00694284010720952986,
        0.00640899418800420706, 0.00595137011275884773, 0.00555473355196280137]


def _stirlerr(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n/e)^n), accurate to a few ulps (Loader's series)."""
    if n <= 15:
        return _SFE[n]
    nn = float(n) * n
    if n > 500:
        return (1 / 12 - (1 / 360) / nn) / n
    if n > 80:
        return (1 / 12 - (1 / 360 - (1 / 1260) / nn) / nn) / n
    if n > 35:
        return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680) / nn) / nn) / nn) / n
    return (1 / 12 - (1 / 360 - (1 / 1260 - (1 / 1680 - (1 / 1188) / nn) / nn) / nn) / nn) / n


def _bd0(x: float, np_: float) -> float:
    """x log(x / np) + np - x without cancellation when x is near np."""
    if abs(x - np_) < 0.1 * (x + np_):
        v = (x - np_) / (x + np_)
        s = (x - np_) * v
        ej = 2 * x * v
        v *= v
        for j in range(1, 1000):
            ej *= v
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s = s1
        return s
    return x * math.log(x / np_) + np_ - x


def pmf(k: int, n: int, p: float) -> float:
    """P(Binomial(n, p) = k), relative error ~1e-14 at any n (the saddle-point form scipy and R use)."""
    if k < 0 or k > n:
        return 0.0
    q = 1.0 - p
    if p <= 0.0 or q <= 0.0:
        return 1.0 if k == (0 if p <= 0.0 else n) else 0.0
    if k == 0:
        return math.exp(n * math.log1p(-p))
    if k == n:
        return math.exp(n * math.log(p))
    lc = _stirlerr(n) - _stirlerr(k) - _stirlerr(n - k) - _bd0(k, n * p) - _bd0(n - k, n * q)
    lf = _LN_2PI + math.log(k) + math.log1p(-k / n)
    return math.exp(lc - 0.5 * lf)


def _window(n: int, p: float) -> tuple[int, int]:
    sd = math.sqrt(n * p * (1 - p))
    mean = n * p
    return max(0, math.floor(mean - _SPREAD * sd - 10)), min(n, math.ceil(mean + _SPREAD * sd + 10))


def distribution(n: int, p: float) -> tuple[int, list[float]]:
    """(lo, probs): P(Binomial(n, p) = lo + i) over the non-negligible values, from the mode outward."""
    if p <= 0.0 or n == 0:
        return 0, [1.0]
    if p >= 1.0:
        return n, [1.0]
    lo, hi = _window(n, p)
    mode = min(hi, max(lo, math.floor((n + 1) * p)))
    out = [0.0] * (hi - lo + 1)
    r = p / (1.0 - p)
    v = out[mode - lo] = pmf(mode, n, p)
    for k in range(mode, hi):              # P(k + 1) = P(k) (n - k) / (k + 1) * p / q
        v *= (n - k) / (k + 1) * r
        out[k + 1 - lo] = v
    v = out[mode - lo]
    for k in range(mode, lo, -1):          # P(k - 1) = P(k) k / (n - k + 1) * q / p
        v *= k / ((n - k + 1) * r)
        out[k - 1 - lo] = v
    return lo, out
