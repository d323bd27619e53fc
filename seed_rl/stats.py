"""Summary statistics for evaluation: means and rates with 95% confidence intervals."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


@dataclass(frozen=True)
class Estimate:
    """A point estimate with its 95% confidence interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.2f} [{self.low:.2f}, {self.high:.2f}]"

    def percent(self) -> str:
        return f"{100 * self.mean:.1f} [{100 * self.low:.1f}, {100 * self.high:.1f}]"


def mean_ci(values: Sequence[float]) -> Estimate:
    """Mean with the normal 95% interval ``mean ± 1.96 · s / sqrt(n)`` (s: sample std)."""
    n = len(values)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(mean, math.nan, math.nan, 1)
    half = Z95 * math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return Estimate(mean, mean - half, mean + half, n)


@functools.lru_cache(maxsize=64)
def t_quantile(df: int, p: float = 0.975) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom: the ``q`` with
    ``F(q) = p``, where ``F(q) = 1/2 + integral_0^q f(x) dx`` and
    ``f(x) = Gamma((df+1)/2) / (sqrt(df pi) Gamma(df/2)) (1 + x^2/df)^(-(df+1)/2)``.

    The integral is Simpson's rule on 2,000 intervals and ``q`` is found by bisection; both are
    exact to about 1e-7 for ``df >= 1`` and ``0.5 < p < 0.9995`` (no scipy needed).
    """
    if df < 1:
        raise ValueError(f"df={df} must be >= 1")
    if not 0.5 < p < 1:
        raise ValueError(f"p={p} must be in (0.5, 1)")
    log_c = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(q: float) -> float:
        steps = 2000
        h = q / steps
        total = 0.0
        for k in range(steps + 1):
            x = k * h
            weight = 1 if k in (0, steps) else (4 if k % 2 else 2)
            total += weight * math.exp(log_c - (df + 1) / 2 * math.log1p(x * x / df))
        return 0.5 + total * h / 3

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, 2 * high
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def mean_t_ci(values: Sequence[float]) -> Estimate:
    """Mean over a few independent runs (training seeds) with Student's 95% interval
    ``mean ± t_{0.975, n-1} · s / sqrt(n)`` (s: sample std), which, unlike :func:`mean_ci`'s
    normal one, keeps its coverage for n = 2..10: with 3 seeds the half-width is 4.30 s / sqrt(3),
    not 1.96 s / sqrt(3)."""
    n = len(values)
    if n < 2:
        return mean_ci(values)
    mean = sum(values) / n
    half = t_quantile(n - 1) * math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)
    return Estimate(mean, mean - half, mean + half, n)


def proportion_ci(successes: int, n: int) -> Estimate:
    """Success rate ``p = k/n`` with the Wilson 95% interval

    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``,

    which, unlike the normal interval, stays in [0, 1] and is not empty at 0% or 100%.
    """
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    p = successes / n
    z2 = Z95**2
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exact at the edges, whatever the rounding
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Estimate(p, low, high, n)


def format_percent(mean: float | None, low: float | None, high: float | None) -> str:
    """``12.5 [4.0, 30.1]``: a rate and its interval in percent; the rate alone where the interval is
    missing (older files), ``n/a`` where the rate is."""
    if mean is None:
        return "n/a"
    if low is None or high is None:
        return f"{100 * mean:.1f}"
    return f"{100 * mean:.1f} [{100 * low:.1f}, {100 * high:.1f}]"
