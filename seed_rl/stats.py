"""Summary statistics for evaluation: means and rates with 95% confidence intervals, McNemar's
exact test for two evaluations paired over the same tasks, and a paired bootstrap over tasks for
several training seeds against one start."""

from __future__ import annotations

import functools
import math
import random
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


def mcnemar_exact(b: int, c: int) -> float:
    """McNemar's exact test, two-sided: the p-value that two policies played on the same tasks win
    equally often, from the discordant pairs only (``b``: tasks the first won and the second lost;
    ``c``: the reverse). Under the null each discordant pair goes either way with probability 1/2,
    so ``min(b, c)`` is Binomial(b + c, 1/2) at its tail:

    ``p = min(1, 2 * sum_{k=0}^{min(b, c)} C(b + c, k) / 2^(b + c))``, and ``p = 1`` when ``b + c = 0``.

    Exact (integer sums; no normal approximation), so it holds for the few discordant tasks of a
    32-task evaluation: ``b=0, c=6`` gives ``2/64 = 0.03125``; ``b=1, c=5`` gives ``2 * 7/64 = 0.21875``.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def format_p(p: float) -> str:
    """A p-value as tables show it: ``0.031``, ``1.000``; ``< 0.001`` below that."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


@dataclass(frozen=True)
class PairedOutcomes:
    """Two evaluations of the same tasks paired task by task (:func:`paired_outcomes`): ``b`` pairs
    the first won and the second lost, ``c`` the reverse, out of ``pairs``, and McNemar's exact
    two-sided ``p`` (:func:`mcnemar_exact`)."""

    b: int
    c: int
    pairs: int
    p: float


#: One episode of an evaluation as its summary keeps it (``outcomes``): the task (its split index,
#: or its id where played by id), the evaluation seed, and whether it was won.
Outcome = Sequence[object]


def paired_outcomes(first: Sequence[Outcome], second: Sequence[Outcome]) -> PairedOutcomes:
    """Pair two evaluations' per-episode outcomes (``[task, seed, won]`` each) by ``(task, seed)``
    and count the discordant pairs: ``b``, the first won where the second lost; ``c``, the reverse;
    with McNemar's exact test on them (:func:`mcnemar_exact`). Raises ``ValueError`` when the two
    are not over the same (task, seed) pairs, or one plays a pair twice: no paired test then."""
    a, z = _by_pair(first, "first"), _by_pair(second, "second")
    if a.keys() != z.keys():
        only_first = sorted(a.keys() - z.keys(), key=repr)
        only_second = sorted(z.keys() - a.keys(), key=repr)
        raise ValueError(
            "the two evaluations are over different tasks (task, seed): "
            f"{len(only_first)} only in the first {only_first[:5]}, "
            f"{len(only_second)} only in the second {only_second[:5]}; no paired test"
        )
    if not a:
        raise ValueError("no outcomes to pair")
    b = sum(a[key] and not z[key] for key in a)
    c = sum(z[key] and not a[key] for key in a)
    return PairedOutcomes(b, c, len(a), mcnemar_exact(b, c))


def _by_pair(outcomes: Sequence[Outcome], which: str) -> dict[tuple[object, object], bool]:
    won: dict[tuple[object, object], bool] = {}
    for task, eval_seed, outcome in outcomes:
        if (task, eval_seed) in won:
            raise ValueError(f"the {which} evaluation plays task {task!r} with seed {eval_seed!r} twice")
        won[(task, eval_seed)] = bool(outcome)
    return won


def paired_bootstrap(differences: Sequence[float], resamples: int = 10_000, seed: int = 0) -> Estimate:
    """The mean of per-task paired differences ``d_i`` with the percentile bootstrap's 95% interval
    over tasks: ``resamples`` times, draw n tasks with replacement and take their mean ``d*``; the
    interval is the 2.5th and 97.5th percentiles of the ``d*`` (order statistics
    ``floor(0.025 R)`` and ``ceil(0.975 R) - 1``, 0-based, of the R sorted means).

    Meant for several training seeds against one start: ``d_i`` is task i's win rate over the
    seeds minus the start's (in [-1, 1]), so tasks, the unit that was drawn, are resampled and the
    seeds' spread on a task stays inside ``d_i``. An interval that excludes 0 is a difference at 95%.
    Deterministic for a given ``seed`` (its own ``random.Random``)."""
    n = len(differences)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    if resamples < 1:
        raise ValueError(f"resamples={resamples} must be >= 1")
    values = [float(d) for d in differences]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=n)) / n for _ in range(resamples))
    low = means[math.floor(0.025 * resamples)]
    high = means[min(resamples - 1, math.ceil(0.975 * resamples) - 1)]
    return Estimate(sum(values) / n, low, high, n)


@dataclass(frozen=True)
class TaskWins:
    """Several runs (an arm's training seeds) and one start played on the same tasks, task by task
    (:func:`task_wins`): how many of the runs won each task, and whether the start did (0 or 1)."""

    arm_wins: tuple[int, ...]
    start_won: tuple[int, ...]
    runs: int

    def differences(self) -> list[float]:
        """Per task, the runs' win rate minus the start's: ``d_i = arm_wins_i / runs - start_won_i``."""
        return [won / self.runs - start for won, start in zip(self.arm_wins, self.start_won, strict=True)]

    def estimate(self, resamples: int = 10_000) -> Estimate:
        """The mean per-task difference with its paired bootstrap interval (:func:`paired_bootstrap`)."""
        return paired_bootstrap(self.differences(), resamples)


def task_wins(runs: Sequence[Sequence[Outcome]], start: Sequence[Outcome]) -> TaskWins:
    """Pair each run's per-episode outcomes (``[task, seed, won]``) with the start's by ``(task,
    seed)``, in the start's order. Raises ``ValueError``, as :func:`paired_outcomes` does, when a run
    played other pairs than the start or there are no runs."""
    if not runs:
        raise ValueError("no runs to pair with the start")
    theirs = _by_pair(start, "start")
    wins = dict.fromkeys(theirs, 0)
    for index, outcomes in enumerate(runs):
        mine = _by_pair(outcomes, f"run {index}")
        if mine.keys() != theirs.keys():
            raise ValueError(f"run {index} and the start are over different tasks (task, seed); no paired test")
        for key, won in mine.items():
            wins[key] += int(won)
    return TaskWins(tuple(wins.values()), tuple(int(won) for won in theirs.values()), len(runs))
