"""The evaluation statistics against hand computations and closed forms."""

from __future__ import annotations

import math

import pytest

from seed_rl.stats import (
    Estimate,
    format_p,
    format_percent,
    mcnemar_exact,
    mean_ci,
    mean_t_ci,
    paired_bootstrap,
    paired_outcomes,
    proportion_ci,
    t_quantile,
    task_wins,
)


def test_wilson_interval_of_3_in_10_by_hand():
    # p = 0.3, z^2 = 3.8415: centre = (0.3 + 3.8415/20) / (1 + 3.8415/10) = 0.49207 / 1.38415 = 0.35551
    # half = 1.959964 * sqrt(0.3 * 0.7 / 10 + 3.8415 / 400) / 1.38415 = 1.96 * 0.17494 / 1.38415 = 0.24772
    estimate = proportion_ci(3, 10)
    assert estimate.mean == 0.3 and estimate.n == 10
    assert estimate.low == pytest.approx(0.35551 - 0.24772, abs=1e-4)
    assert estimate.high == pytest.approx(0.35551 + 0.24772, abs=1e-4)


def test_wilson_interval_is_exact_at_the_edges_and_empty_without_episodes():
    none, every = proportion_ci(0, 8), proportion_ci(8, 8)
    assert none.low == 0.0 and 0 < none.high < 0.5
    assert every.high == 1.0 and 0.5 < every.low < 1
    assert none.high == pytest.approx(1 - every.low)  # symmetric
    assert math.isnan(proportion_ci(0, 0).mean)


def test_normal_mean_interval_by_hand():
    # mean 2, sample variance ((1 + 0 + 1) / 2) = 1, half = 1.959964 * 1 / sqrt(3) = 1.131586
    estimate = mean_ci([1.0, 2.0, 3.0])
    assert estimate.mean == 2.0
    assert (estimate.low, estimate.high) == pytest.approx((2 - 1.131586, 2 + 1.131586), abs=1e-6)
    single = mean_ci([0.4])
    assert single.mean == 0.4 and math.isnan(single.low)


def test_t_quantiles_match_their_closed_forms():
    # df = 1 (Cauchy): q = tan(pi (p - 1/2)); df = 2: q = (2p - 1) / sqrt(2 p (1 - p))
    for p in (0.9, 0.975, 0.995):
        assert t_quantile(1, p) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-6)
        assert t_quantile(2, p) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-6)
    # many degrees of freedom: the normal quantile
    assert t_quantile(100_000) == pytest.approx(1.959963984540054, abs=1e-4)
    assert t_quantile(3) > t_quantile(4) > t_quantile(30) > 1.96  # fewer runs, wider intervals
    with pytest.raises(ValueError, match="df"):
        t_quantile(0)


def test_the_mean_over_training_seeds_uses_students_interval():
    # 0.25, 0.50, 0.125: mean 0.29167; deviations -0.04167, 0.20833, -0.16667;
    # s^2 = (0.001736 + 0.043403 + 0.027778) / 2 = 0.036458; s / sqrt(3) = 0.110239;
    # half = t(0.975, 2) * 0.110239 = 4.30265 * 0.110239 = 0.474320
    estimate = mean_t_ci([0.25, 0.5, 0.125])
    assert estimate.mean == pytest.approx(0.291667, abs=1e-6) and estimate.n == 3
    assert (estimate.low, estimate.high) == pytest.approx((0.291667 - 0.474320, 0.291667 + 0.474320), abs=1e-5)
    assert estimate.high - estimate.low > mean_ci([0.25, 0.5, 0.125]).high - mean_ci([0.25, 0.5, 0.125]).low
    one = mean_t_ci([0.5])
    assert one.mean == 0.5 and math.isnan(one.high)


def test_format_percent():
    assert format_percent(0.125, 0.04, 0.301) == "12.5 [4.0, 30.1]"
    assert format_percent(0.125, None, None) == "12.5"
    assert format_percent(None, None, None) == "n/a"


def test_mcnemars_exact_test_by_hand():
    # p = min(1, 2 * sum_{k <= min(b, c)} C(b + c, k) / 2^(b + c))
    assert mcnemar_exact(0, 6) == 2 / 64 == 0.03125  # C(6, 0) = 1
    assert mcnemar_exact(6, 0) == 0.03125  # two-sided: symmetric
    assert mcnemar_exact(1, 5) == 2 * (1 + 6) / 64 == 0.21875
    assert mcnemar_exact(2, 8) == pytest.approx(2 * (1 + 10 + 45) / 1024)  # 0.109375
    assert mcnemar_exact(0, 5) == 2 / 32 and mcnemar_exact(0, 4) == 2 / 16  # 5 one-way tasks are not enough
    assert mcnemar_exact(3, 3) == 1.0  # 2 * (1 + 6 + 15 + 20) / 64 = 84/64, capped
    assert mcnemar_exact(4, 5) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 1000) == pytest.approx(2 * 0.5**1000, rel=1e-9)  # exact on many pairs
    with pytest.raises(ValueError, match=">= 0"):
        mcnemar_exact(-1, 3)
    assert [format_p(p) for p in (0.03125, 1.0, 0.0004)] == ["0.031", "1.000", "< 0.001"]


def test_outcomes_pair_by_task_and_seed_whatever_their_order():
    arm = [[0, 0, True], [1, 0, True], [2, 0, False], [3, 0, True], [0, 1, True]]
    start = [[3, 0, False], [2, 0, True], [1, 0, True], [0, 0, False], [0, 1, False]]
    paired = paired_outcomes(arm, start)
    # arm won, start lost: (0, 0), (3, 0), (0, 1); start won, arm lost: (2, 0); (1, 0) both won
    assert (paired.b, paired.c, paired.pairs) == (3, 1, 5)
    assert paired.p == mcnemar_exact(3, 1) == 2 * (1 + 4) / 16
    reverse = paired_outcomes(start, arm)
    assert (reverse.b, reverse.c, reverse.p) == (1, 3, paired.p)
    assert paired_outcomes([["a", 0, 1]], [["a", 0, 0]]).b == 1  # tasks by id, won as 0/1


def test_outcomes_over_different_tasks_or_seeds_are_refused():
    arm = [[0, 0, True], [1, 0, False]]
    with pytest.raises(ValueError, match=r"different tasks .*1 only in the first \[\(1, 0\)\].*1 only in the second"):
        paired_outcomes(arm, [[0, 0, True], [2, 0, False]])
    with pytest.raises(ValueError, match="different tasks"):
        paired_outcomes(arm, [[0, 1, True], [1, 1, False]])  # the same tasks under another evaluation seed
    with pytest.raises(ValueError, match="different tasks"):
        paired_outcomes(arm, arm[:1])
    with pytest.raises(ValueError, match="plays task 0 with seed 0 twice"):
        paired_outcomes([*arm, [0, 0, False]], arm)
    with pytest.raises(ValueError, match="no outcomes"):
        paired_outcomes([], [])


def test_the_paired_bootstrap_over_tasks_by_hand():
    # d = (0, 0, 0, 1): a resample's mean is k/4 with k ~ Binomial(4, 1/4). P(k = 0) = 0.32 > 2.5%, so
    # the low end is 0; P(k >= 3) = 0.051 > 2.5% > P(k = 4) = 0.004, so the high end is 3/4
    estimate = paired_bootstrap([0, 0, 0, 1])
    assert (estimate.mean, estimate.low, estimate.high, estimate.n) == (0.25, 0.0, 0.75, 4)
    assert paired_bootstrap([0, 0, 0, 1], seed=3) == estimate  # far from a boundary: any seed agrees
    # every task moved the same way: the interval is the point
    assert paired_bootstrap([0.5] * 7) == paired_bootstrap([0.5] * 7, resamples=10) == Estimate(0.5, 0.5, 0.5, 7)
    # 20 tasks gained of 64, 2 lost: the interval excludes 0; 5 gained and 5 lost: it holds 0
    assert paired_bootstrap([1] * 20 + [-1] * 2 + [0] * 42).low > 0
    even = paired_bootstrap([1] * 5 + [-1] * 5 + [0] * 54)
    assert even.mean == 0 and even.low < 0 < even.high
    assert math.isnan(paired_bootstrap([]).mean)
    with pytest.raises(ValueError, match="resamples"):
        paired_bootstrap([1], resamples=0)


def test_several_runs_pair_with_one_start_task_by_task():
    start = [[0, 0, True], [1, 0, False], [2, 0, False]]
    runs = [[[2, 0, True], [1, 0, True], [0, 0, True]], [[0, 0, False], [1, 0, True], [2, 0, False]]]
    wins = task_wins(runs, start)
    assert (wins.arm_wins, wins.start_won, wins.runs) == ((1, 2, 1), (1, 0, 0), 2)  # in the start's order
    assert wins.differences() == [-0.5, 1.0, 0.5]
    assert wins.estimate().mean == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="run 1 and the start are over different tasks"):
        task_wins([runs[0], runs[1][:2]], start)
    with pytest.raises(ValueError, match="no runs"):
        task_wins([], start)
