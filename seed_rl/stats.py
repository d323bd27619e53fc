"""Summary statistics for evaluation: means and rates with 95% confidence intervals."""

from __future__ import annotations

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
