"""An arm over its training seeds, and the training-task pool, against hand computations."""

from __future__ import annotations

import pytest

from seed_rl.compare.arm_summary import ArmResult, group_results, paired_difference
from seed_rl.config import ConfigError, load_config
from seed_rl.train.setup.run_setup import UNBOUNDED_TASKS, train_task_pool


def evaluation(success: float, low: float, high: float, families: dict | None = None) -> dict:
    return {
        "valid_unseen": {
            "episodes": 8,
            "success": success,
            "success_low": low,
            "success_high": high,
            "invalid_rate": 0.5,
            "invalid_low": 0.4,
            "invalid_high": 0.6,
            "by_family": families or {},
        }
    }


def run(arm: str, seed: int, success: float, train: list[float], fraction: float = 1.0, families=None) -> ArmResult:
    cfg = load_config("demo", [f"seed={seed}", f"train_fraction={fraction}", "train_tasks=10"])
    metrics = [{"update": u + 1, "success": s} for u, s in enumerate(train)]
    return ArmResult(arm, cfg, metrics, evaluation(success, success / 2, min(1.0, 2 * success), families))


def test_one_seed_keeps_the_runs_own_interval():
    (arm,) = group_results([run("grpo", 0, 0.25, [0.0, 0.5])])
    estimate = arm.success("valid_unseen")
    assert (estimate.mean, estimate.low, estimate.high) == (0.25, 0.125, 0.5)  # as stored: Wilson over episodes


def test_two_seeds_give_the_mean_with_students_interval_by_hand():
    # 0.5 and 0.55: mean 0.525, s = 0.025 * sqrt(2) = 0.035355, s / sqrt(2) = 0.025;
    # t(0.975, 1) = tan(0.475 pi) = 12.7062, half = 0.317655
    arms = group_results([run("grpo", 0, 0.5, [0.0, 0.5]), run("grpo", 1, 0.55, [0.5, 1.0])])
    (arm,) = arms
    estimate = arm.success("valid_unseen")
    assert estimate.mean == pytest.approx(0.525) and estimate.n == 2
    assert (estimate.low, estimate.high) == pytest.approx((0.525 - 0.317655, 0.525 + 0.317655), abs=1e-4)
    assert arm.seeds == [0, 1] and arm.per_seed("valid_unseen") == [0.5, 0.55]
    xs, ys, lows, highs = arm.curve()
    assert xs == [1, 2] and ys == pytest.approx([0.25, 0.75])
    # each update's two rates differ by 0.5: half-width 12.7062 * 0.25 = 3.18, cut to a rate's [0, 1]
    assert lows == [0.0, 0.0] and highs == [1.0, 1.0]


def test_episodes_consumed_count_every_episode_played():
    """demo: 8 tasks x 4 a update. With filter_groups a run logs episodes_played (here 32, 64 and 32
    for one seed, 96, 32 and 32 for the other); an older run without the key played 32 each."""
    first, second = run("grpo", 0, 0.5, [0.25, 0.5, 0.5]), run("grpo", 1, 0.5, [0.5, 0.5, 0.75])
    for result, played in ((first, (32, 64, 32)), (second, (96, 32, 32))):
        for line, n in zip(result.metrics, played, strict=True):
            line["episodes_played"] = n
        result.curve = {u: evaluation(0.5, 0.25, 0.75)["valid_unseen"] for u in (1, 3)}
    (arm,) = group_results([first, second])
    assert [x for x, _ in arm.eval_curve()] == [64, 144]  # (32 + 96) / 2 after update 1, (128 + 160) / 2 after 3
    older = run("grpo", 0, 0.5, [0.25, 0.5, 0.5])
    older.curve = {2: evaluation(0.5, 0.25, 0.75)["valid_unseen"]}
    assert [x for x, _ in group_results([older])[0].eval_curve()] == [64]
    # one seed's training curve: each update's band over the episodes it played (2 won of 8, then 32 of 64)
    single = run("grpo", 0, 0.5, [0.25, 0.5])
    single.metrics[0]["episodes_played"], single.metrics[1]["episodes_played"] = 8, 64
    _, _, lows, _ = group_results([single])[0].curve()
    assert lows[1] > lows[0] + 0.1  # the 64 episodes give the narrower band


def test_paired_difference_over_common_seeds_by_hand():
    # seeds 0, 1, 2 in both; seed 3 only in seed: left out. Differences 0.25, 0.0, 0.125:
    # mean 0.125, s = 0.125, s / sqrt(3) = 0.072169; t(0.975, 2) = 4.302653, half = 0.310521
    seed = group_results([run("seed", s, v, [0.5]) for s, v in [(0, 0.5), (1, 0.25), (2, 0.375), (3, 1.0)]])[0]
    grpo = group_results([run("grpo", s, v, [0.5]) for s, v in [(0, 0.25), (1, 0.25), (2, 0.25)]])[0]
    difference = paired_difference(seed, grpo, "valid_unseen")
    assert difference.mean == pytest.approx(0.125) and difference.n == 3
    assert (difference.low, difference.high) == pytest.approx((0.125 - 0.310521, 0.125 + 0.310521), abs=1e-5)
    assert paired_difference(grpo, seed, "valid_unseen").mean == pytest.approx(-0.125)
    # invalid rates are all 0.5: no difference and no spread
    invalid = paired_difference(seed, grpo, "valid_unseen", "invalid")
    assert (invalid.mean, invalid.low, invalid.high) == (0.0, 0.0, 0.0)
    one = group_results([run("grpo", 0, 0.25, [0.5])])[0]
    assert paired_difference(seed, one, "valid_unseen") is None  # one common seed: no spread to measure
    # differences +0.5 and -0.5: s / sqrt(2) = 0.5, t(0.975, 1) = 12.7062, half-width 6.35, cut to [-1, 1]
    wide = group_results([run("grpo", s, v, [0.5]) for s, v in [(0, 0.0), (1, 0.75)]])[0]
    cut = paired_difference(seed, wide, "valid_unseen")
    assert (cut.mean, cut.low, cut.high) == (0.0, -1.0, 1.0)


def test_families_average_over_seeds_and_runs_group_by_fraction():
    a = run("seed", 0, 0.5, [0.5], families={"pick": [1.0, 0.5, 1.0, 2], "heat": [0.0, 0.0, 0.8, 2]})
    b = run("seed", 1, 0.5, [0.5], families={"pick": [0.5, 0.1, 0.9, 2]})
    c = run("seed", 0, 0.25, [0.0], fraction=0.5)
    arms = group_results([a, c, b])
    assert [(x.name, x.fraction, len(x.runs)) for x in arms] == [("seed", 1.0, 2), ("seed", 0.5, 1)]
    families = arms[0].families("valid_unseen")
    assert families["pick"].mean == pytest.approx(0.75) and families["pick"].n == 2
    assert families["heat"].mean == 0.0 and families["heat"].n == 1  # one seed saw the family


def test_the_training_pool_is_a_share_of_a_prefix():
    cfg = load_config("demo", ["train_tasks=10", "train_fraction=0.25"])
    assert train_task_pool(cfg, None) == 2  # round(10 * 0.25) = round(2.5) = 2 (banker's rounding)
    assert train_task_pool(load_config("demo", ["train_tasks=10", "train_fraction=0.05"]), 100) == 1  # at least one
    assert train_task_pool(load_config("demo", ["train_fraction=0.5"]), 40) == 20  # the split's own size
    assert train_task_pool(load_config("demo"), None) == UNBOUNDED_TASKS
    with pytest.raises(ConfigError, match="train_tasks=N"):
        train_task_pool(load_config("demo", ["train_fraction=0.5"]), None)
    with pytest.raises(ConfigError, match="exceeds the 5 tasks"):
        train_task_pool(load_config("demo", ["train_tasks=10"]), 5)
    with pytest.raises(ConfigError, match=r"train_fraction must be in \(0, 1\]"):
        load_config("demo", ["train_fraction=0"])


def test_a_run_draws_its_tasks_from_its_pool(tmp_path):
    pytest.importorskip("peft")
    from seed_rl.train.trainer import Trainer

    cfg = load_config(
        "sokoban_grpo",
        ["model=tiny-random", "train_tasks=6", "train_fraction=0.5", "progress=false", f"run_dir={tmp_path}"],
    )
    trainer = Trainer(cfg)
    try:
        assert trainer.task_count == 3
        assert {i for u in range(20) for i in trainer.tasks(u)} == {0, 1, 2}
    finally:
        trainer.close()


def counted(arm: str, seed: int, wins: int, episodes: int = 32) -> ArmResult:
    """A run whose evaluation holds counts: ``wins`` of ``episodes``, 10 steps each, 1 in 10 invalid."""
    cfg = load_config("demo", [f"seed={seed}", "train_tasks=10"])
    summary = {
        "episodes": episodes,
        "success": wins / episodes,
        "success_low": 0.0,
        "success_high": 1.0,
        "invalid_rate": 0.1,
        "invalid_low": 0.05,
        "invalid_high": 0.2,
        "mean_steps": 10.0,
    }
    return ArmResult(arm, cfg, [{"update": 1, "success": 0.5}], {"valid_unseen": summary})


def test_seeds_that_agree_do_not_make_the_mean_exact():
    # Two seeds at 9 of 32: Student's half-width is 0. Pooled, 18 of 64: p = 0.28125, z^2 = 3.841459,
    # centre = (p + z^2/128) / (1 + z^2/64) = 0.311266 / 1.060023 = 0.293640,
    # half = z sqrt(p(1-p)/64 + z^2/16384) / 1.060023 = 0.107706: Wilson [0.185934, 0.401339].
    (arm,) = group_results([counted("grpo", 0, 9), counted("grpo", 1, 9)])
    estimate = arm.success("valid_unseen")
    assert estimate.mean == pytest.approx(0.28125) and estimate.n == 2
    assert (estimate.low, estimate.high) == pytest.approx((0.185934, 0.401339), abs=1e-5)
    # a wider Student interval stays as it is: 4 and 14 of 32, half-width 12.7062 * 0.15625 = 1.99, cut to [0, 1]
    (spread,) = group_results([counted("grpo", 0, 4), counted("grpo", 1, 14)])
    assert (spread.success("valid_unseen").low, spread.success("valid_unseen").high) == (0.0, 1.0)


def test_paired_seeds_that_agree_get_newcombes_interval_by_hand():
    # SEED 9 of 32 on both seeds, GRPO 12 of 32: each difference -0.09375, no spread. Pooled Wilson:
    # 18/64 in [0.185934, 0.401339], 24/64 in [0.266660, 0.497496]. Newcombe:
    # low = -0.09375 - sqrt(0.095316^2 + 0.122496^2) = -0.248961,
    # high = -0.09375 + sqrt(0.120089^2 + 0.108340^2) = +0.067988.
    seed = group_results([counted("seed", 0, 9), counted("seed", 1, 9)])[0]
    grpo = group_results([counted("grpo", 0, 12), counted("grpo", 1, 12)])[0]
    difference = paired_difference(seed, grpo, "valid_unseen")
    assert difference.mean == pytest.approx(-0.09375) and difference.n == 2
    assert (difference.low, difference.high) == pytest.approx((-0.248961, 0.067988), abs=1e-5)
    # invalid steps: 32 of 320 in every run, a difference of 0; pooled 64 of 640 each, Wilson
    # [0.079091, 0.125682], so Newcombe gives -+sqrt(0.020909^2 + 0.025682^2) = -+0.033117
    invalid = paired_difference(seed, grpo, "valid_unseen", "invalid")
    assert invalid.mean == 0.0
    assert (invalid.low, invalid.high) == pytest.approx((-0.033117, 0.033117), abs=1e-5)


def outcomes(won: set[int], tasks: int = 8, seed: int = 0) -> list[list]:
    return [[i, seed, i in won] for i in range(tasks)]


def with_outcomes(result: ArmResult, won: set[int]) -> ArmResult:
    result.evaluation["valid_unseen"]["outcomes"] = outcomes(won)
    result.metrics = [{"update": 1, "success": 0.5, "seconds_total": 10.0, "tokens_generated": 1, "tokens_scored": 1}]
    return result


def cells(table: str) -> list[list[str]]:
    """The rows of the markdown tables in ``table``, each cell stripped (the separator rows left out)."""
    rows = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines() if line.startswith("|")]
    return [r for r in rows if not all(set(c) <= set("-:") for c in r)]


def test_each_run_is_paired_with_the_warm_start_over_tasks_in_the_table_and_the_json():
    from seed_rl.compare.comparison import paired_record
    from seed_rl.compare.table import comparison_report, start_pairs_table

    untrained = {"valid_unseen": {**counted("x", 0, 0, 8).evaluation["valid_unseen"], "outcomes": outcomes(set())}}
    warm = {"valid_unseen": {**counted("x", 0, 2, 8).evaluation["valid_unseen"], "outcomes": outcomes({0, 1})}}
    starts = {"untrained": untrained, "warm start": warm}
    runs = [
        with_outcomes(counted("grpo", 0, 7, 8), {0, 2, 3, 4, 5, 6, 7}),  # b = 6 (tasks 2-7), c = 1 (task 1)
        with_outcomes(counted("grpo", 1, 8, 8), set(range(8))),  # b = 6, c = 0
        with_outcomes(counted("seed", 0, 2, 8), {0, 1}),  # b = c = 0
    ]
    arms = group_results(runs)
    table = start_pairs_table(starts, arms, "valid_unseen")
    rows = cells(table)
    assert rows[0] == ["arm", "training seed", "arm won, warm start lost", "warm start won, arm lost",
                       "paired episodes", "McNemar p"]  # fmt: skip
    # p = 2 (C(7,0) + C(7,1)) / 2^7 = 16/128; 2 C(6,0) / 2^6 = 2/64; no discordant task: 1
    assert rows[1:] == [["grpo", "0", "6", "1", "8", "0.125"], ["grpo", "1", "6", "0", "8", "0.031"],
                        ["seed", "0", "0", "0", "8", "1.000"]]  # fmt: skip
    report = comparison_report(starts, arms, [])
    assert "Each run against the warm start, paired over tasks (valid_unseen; McNemar's exact test):" in report
    assert ["grpo", "1", "6", "0", "8", "0.031"] in cells(report)
    assert report.index("McNemar p") > report.index("| warm start")  # under the main table
    # grpo's two seeds, one test over tasks: task 0 won by both (start: won), task 1 by 1 of 2 (won), tasks
    # 2-7 by both (lost): d = (0, -1/2, 1, 1, 1, 1, 1, 1), mean 11/16; seed's one run gets no row
    assert "Each arm over its training seeds against the warm start, paired over tasks (valid_unseen):" in report
    pooled = next(row for row in cells(report) if row[:3] == ["grpo", "2", "8"])
    assert pooled[3].startswith("+68.8 [") and float(pooled[3].split("[")[1].split(",")[0]) > 0
    assert not any(row[:2] == ["seed", "1"] for row in cells(report))
    record = paired_record(runs[0], "warm start", warm)
    assert record == {
        "paired_with_start": {
            "start": "warm_start",
            "by_split": {"valid_unseen": {"arm_won_start_lost": 6, "start_won_arm_lost": 1, "pairs": 8, "p": 0.125}},
        }
    }
    # without a warm start the arms start from the untrained model: every win of theirs is one it lacked
    only_untrained = start_pairs_table({"untrained": untrained}, arms, "valid_unseen")
    assert cells(only_untrained)[1] == ["grpo", "0", "7", "0", "8", "0.016"]  # 2/128
    assert "untrained won, arm lost" in only_untrained


def test_summaries_without_outcomes_or_over_other_tasks_get_no_paired_test():
    from seed_rl.compare.comparison import paired_record
    from seed_rl.compare.table import comparison_report, start_pairs_table

    old = counted("grpo", 0, 7, 8)  # a file from before outcomes were kept
    start = {"untrained": {"valid_unseen": counted("x", 0, 2, 8).evaluation["valid_unseen"]}}
    old.metrics = with_outcomes(counted("grpo", 0, 7, 8), set()).metrics
    assert start_pairs_table(start, group_results([old]), "valid_unseen") == ""
    assert paired_record(old, "untrained", start["untrained"]) == {}
    assert "McNemar" not in comparison_report(start, group_results([old]), [])
    start["untrained"]["valid_unseen"]["outcomes"] = outcomes({0, 1}, tasks=4)  # tasks 0-3, the run's 0-7
    other = with_outcomes(counted("grpo", 0, 7, 8), {0, 2})
    table = start_pairs_table(start, group_results([other]), "valid_unseen")
    assert cells(table)[1] == ["grpo", "0", "", "", "", "n/a (other tasks)"]
    error = paired_record(other, "untrained", start["untrained"])["paired_with_start"]["by_split"]["valid_unseen"]
    assert "different tasks" in error["error"]
