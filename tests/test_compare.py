"""seed compare: arms under one budget, the same evaluation tasks, a table and a plot."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("matplotlib")

from seed_rl.cli import main
from seed_rl.compare import arm_config, check_budgets
from seed_rl.config import ConfigError

TINY = [
    "model=tiny-random",
    "tasks_per_update=2",
    "group_size=2",
    "max_steps=3",
    "progress=false",
    "max_new_tokens=8",
    "lr=0.01",
    "updates=2",
    "sft_tasks=2",
    "sft_rollouts=2",
    "sft_epochs=1",
    "sft_eval_trajectories=2",
    "analyzer_max_new_tokens=16",
]


def test_compare_trains_each_arm_evaluates_alike_and_writes_table_and_plot(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = [
        "compare",
        "--config",
        "sokoban_grpo",
        *TINY,
        "--arms",
        "grpo",
        "seed-scripted",
        "--out",
        str(out),
        "--eval-episodes",
        "3",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    table = (out / "comparison.md").read_text()
    for row in ("| untrained", "| grpo", "| seed-scripted"):
        assert row in table and row in printed
    assert (out / "comparison.png").stat().st_size > 1000
    data = json.loads((out / "comparison.json").read_text())
    evaluations = [data["untrained"], *[a["evaluation"] for a in data["arms"].values()]]
    assert all(e["episodes"] == 3 and e["split"] == "valid_unseen" for e in evaluations)
    assert len(data["arms"]["grpo"]["metrics"]) == 2
    # a second call reuses the finished arms (no update is run again)
    assert main(args) == 0
    assert "update   1" not in capsys.readouterr().out


def test_arms_with_different_budgets_are_refused_unless_forced(tmp_path):
    configs = {
        "grpo": arm_config("grpo", "sokoban_grpo", TINY, tmp_path),
        "seed": arm_config("seed", "sokoban_grpo", [*TINY, "updates=3"], tmp_path),
    }
    with pytest.raises(ConfigError, match=r"updates: grpo=2, seed=3"):
        check_budgets(configs)
    assert check_budgets(configs, force=True) == ["updates"]
    with pytest.raises(ConfigError, match="arms"):
        arm_config("seed-magic", "sokoban_grpo", TINY, tmp_path)


def test_the_compute_columns_add_up_the_phases_stage1_and_tokens():
    from seed_rl.compare import ArmResult, phase_seconds, token_counts, train_seconds
    from seed_rl.config import load_config

    metrics = [
        {"seconds_total": 10.0, "seconds_rollout": 4.0, "seconds_analysis": 3.0, "seconds_teacher": 1.0,
         "seconds_update": 2.0, "tokens_generated": 100, "tokens_generated_analyzer": 30, "tokens_scored": 500,
         "tokens_scored_teacher": 200},
        {"seconds_total": 14.0, "seconds_rollout": 6.0, "seconds_analysis": 3.0, "seconds_teacher": 1.0,
         "seconds_update": 3.0, "seconds_rescore": 1.0, "tokens_generated": 120, "tokens_generated_analyzer": 40,
         "tokens_scored": 600, "tokens_scored_teacher": 250},
    ]  # fmt: skip
    assert phase_seconds(metrics) == "12 (5 + 3 + 1 + 3)"  # the re-score counts with the update: (2 + 4) / 2
    assert token_counts(metrics) == "220 (70) / 1,100 (450)"
    old = [{k: v for k, v in m.items() if not k.endswith(("_analyzer", "_teacher"))} for m in metrics]
    assert token_counts(old) == "220 / 1,100"  # a run from before the split counts
    arm = ArmResult("seed", load_config("demo"), metrics, {}, stage1={"seconds": 6.0, "cached": True})
    assert train_seconds(arm) == 30.0 and train_seconds(ArmResult("grpo", load_config("demo"), metrics, {})) == 24.0
