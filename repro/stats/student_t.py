"""Student's t quantiles for whole degrees of freedom, without scipy.

The report needs two t quantiles per comparison; importing scipy for them cost ~2.5 s of a
cold `repro report`. The t distribution's CDF has a closed form for whole degrees of freedom
(Abramowitz & Stegun 26.7.3-4: a finite series in the angle atan(t / sqrt(df))), so the
quantile is that CDF inverted by Newton's method from the Cornish-Fisher expansion (A&S
26.7.5), which is already exact to ~1e-9 for large df. Tests check it against scipy.
"""

from __future__ import annotations

import math
from statistics import NormalDist

#: above this many degrees of freedom the Cornish-Fisher expansion is used as it is
_EXPANSION_ONLY_DF = 2000


def t_ppf(p: float, df: int) -> float:
    """The p-quantile of Student's t with `df` (>= 1, whole) degrees of freedom."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), not {p}")
    if df < 1 or int(df) != df:
        raise ValueError(f"df must be a whole number >= 1, not {df}")
    df = int(df)
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    t = _cornish_fisher(p, df)
    if df > _EXPANSION_ONLY_DF:
        return t
    lo, hi = 0.0, max(2 * t, 1.0)
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(50):
        f = t_cdf(t, df) - p
        if abs(f) < 1e-14:
            break
        if f > 0:
            hi = t
        else:
            lo = t
        step = f / _t_pdf(t, df)
        t = t - step if lo < t - step < hi else (lo + hi) / 2
    return t


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with `df` whole degrees of freedom (A&S 26.7.3-4)."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    if df % 2:  # odd: (2/pi) (theta + sin cos (1 + 2/3 cos^2 + 2.4/3.5 cos^4 + ...))
        total, term = 0.0, 1.0
        for k in range(1, (df - 1) // 2 + 1):
            total += term
            term *= c2 * (2 * k) / (2 * k + 1)
        a = 2 / math.pi * (theta + s * c * total) if df > 1 else 2 / math.pi * theta
    else:  # even: sin (1 + 1/2 cos^2 + 1.3/2.4 cos^4 + ...)
        total, term = 0.0, 1.0
        for k in range(1, df // 2 + 1):
            total += term
            term *= c2 * (2 * k - 1) / (2 * k)
        a = s * total
    return 0.5 + a / 2  # a = P(-|t| <= T <= |t|), signed with t


def _t_pdf(t: float, df: int) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


def _cornish_fisher(p: float, df: int) -> float:
    z = NormalDist().inv_cdf(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
