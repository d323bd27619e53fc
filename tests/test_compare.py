"""seed compare: arms under one budget, the same evaluation tasks, a table and a plot."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("matplotlib")

from seed_rl.cli import main
from seed_rl.compare.comparison import arm_config, check_budgets
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
        "--eval-every",
        "1",
    ]
    assert main(args) == 0
    printed = capsys.readouterr().out
    table = (out / "comparison.md").read_text()
    for row in ("| untrained", "| grpo", "| seed-scripted"):
        assert row in table and row in printed
    assert (out / "comparison.png").stat().st_size > 1000
    data = json.loads((out / "comparison.json").read_text())
    evaluations = [data["untrained"]["valid_unseen"], *[r["evaluation"]["valid_unseen"] for r in data["runs"]]]
    assert all(e["episodes"] == 3 and e["split"] == "valid_unseen" for e in evaluations)
    assert [r["arm"] for r in data["runs"]] == ["grpo", "seed-scripted"]
    assert len(data["runs"][0]["metrics"]) == 2 and (out / "grpo" / "seed0" / "checkpoints").is_dir()
    # --eval-every 1: evaluated after update 1 too; the last point is the final evaluation
    for run in data["runs"]:
        curve = run["evaluation_curve"]
        assert list(curve) == ["1", "2"] and curve["2"] == run["evaluation"]["valid_unseen"]
        assert curve["1"]["episodes"] == 3 and curve["1"]["split"] == "valid_unseen"
    saved = json.loads((out / "grpo" / "seed0" / "evaluation_curve.json").read_text())
    assert list(saved["points"]) == ["1"] and len(saved["tasks"]) == 3 and saved["split"] == "valid_unseen"
    assert "against training episodes consumed" in table
    # every evaluation keeps its per-task outcomes; each run is paired with the untrained model over them
    untrained = json.loads((out / "untrained_evaluation.json").read_text())["by_split"]["valid_unseen"]
    tasks = json.loads((out / "grpo" / "seed0" / "evaluation.json").read_text())["tasks"]["valid_unseen"]
    for e in [untrained, *evaluations[1:], saved["points"]["1"]]:
        assert [o[:2] for o in e["outcomes"]] == [[t, 0] for t in tasks]
        assert sum(o[2] for o in e["outcomes"]) == round(e["success"] * 3)
    for run in data["runs"]:
        paired = run["paired_with_start"]
        assert paired["start"] == "untrained" and paired["by_split"]["valid_unseen"]["pairs"] == 3
    assert "Each run against the untrained model, paired over tasks (valid_unseen" in table and "McNemar p" in printed
    cells = [[c.strip() for c in line.split("|")[1:-1]] for line in table.splitlines() if "| 0 (untrained)" in line]
    assert cells == [["arm", "0 (untrained)", "4", "8"]]  # 2 tasks x 2 rollouts per update
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
    from seed_rl.compare.arm_summary import ArmResult
    from seed_rl.compare.table import phase_seconds, token_counts, train_seconds
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
    assert token_counts(metrics, runs=2) == "110 (35) / 550 (225)"  # per run, over two seeds' updates
    arm = ArmResult("seed", load_config("demo"), metrics, {}, stage1={"seconds": 6.0, "cached": True})
    assert train_seconds(arm) == 30.0 and train_seconds(ArmResult("grpo", load_config("demo"), metrics, {})) == 24.0


def test_the_signal_table_gives_each_update_its_gate_and_pooled_skill_probe():
    from seed_rl.compare.arm_summary import ArmResult, ArmSummary
    from seed_rl.compare.table import signal_table
    from seed_rl.config import load_config

    def probe(n, with_skill, without, gained, lost, gate):
        keys = ("episodes", "success", "success_without", "gained", "lost")
        line = {f"skill_probe_{k}": v for k, v in zip(keys, (n, with_skill, without, gained, lost), strict=True)}
        return {"gate_mean": gate, "delta_pos_frac": 0.5, **line}

    seed0 = [probe(4, 0.75, 0.25, 2, 0, 0.4), probe(4, 0.5, 0.5, 1, 1, 0.5)]
    seed1 = [probe(2, 0.5, 0.0, 1, 0, 0.6), probe(4, 1.0, 0.75, 1, 0, 0.7)]
    seed = ArmSummary("seed", 1.0, [ArmResult("seed", load_config("demo"), m, {}) for m in (seed0, seed1)])
    grpo = ArmSummary("grpo", 1.0, [ArmResult("grpo", load_config("demo"), [{"success": 0.5}] * 2, {})])
    cells = lambda line: [c.strip() for c in line.strip("|").split("|")]  # noqa: E731
    rows = [cells(line) for line in signal_table([grpo, seed]).splitlines() if line.startswith("| seed")]
    # update 1: gate (0.4 + 0.6) / 2; probe (3 + 1) of 6 with, (1 + 0) of 6 without; update 2: (2 + 4) / 8, (2 + 3) / 8
    assert rows == [
        ["seed", "1", "0.50", "0.50", "67 / 17 (3 / 0, n=6)"],
        ["seed", "2", "0.60", "0.50", "75 / 62 (2 / 1, n=8)"],
        # every update pooled: 10 of 14 with, 6 of 14 without; 5 gained, 1 lost: the exact two-sided
        # sign test, 2 * (1 + 6) / 2^6 = 0.219
        ["seed", "all 2", "0.55", "0.50", "71 / 43 (5 / 1, n=14), p 0.219"],
    ]
    assert signal_table([grpo]) == ""  # no skills, no gate: no table


def test_several_training_seeds_data_fractions_and_splits(tmp_path, capsys):
    out = tmp_path / "cmp"
    args = [
        "compare",
        "--config",
        "sokoban_grpo",
        *TINY,
        "updates=1",
        "train_tasks=8",
        "--arms",
        "grpo",
        "seed-lambda0",
        "skill-prompt",
        "--train-seeds",
        "0",
        "1",
        "--data-fractions",
        "0.5",
        "1",
        "--eval-splits",
        "valid_unseen",
        "valid_seen",
        "--eval-episodes",
        "2",
        "--out",
        str(out),
    ]
    assert main(args) == 0
    capsys.readouterr()
    # one run per trained arm, seed and fraction; skill-prompt shares seed-lambda0's training
    for arm in ("grpo", "seed-lambda0"):
        for tag in ("seed0", "seed1", "data50-seed0", "data50-seed1"):
            assert (out / arm / tag / "config.yaml").is_file()
    assert not (out / "skill-prompt").exists()
    data = json.loads((out / "comparison.json").read_text())
    runs = data["runs"]
    assert len(runs) == 12 and {(r["seed"], r["train_fraction"]) for r in runs} == {(0, 0.5), (1, 0.5), (0, 1), (1, 1)}
    for r in runs:
        assert set(r["evaluation"]) == {"valid_unseen", "valid_seen"}
        assert r["config"]["train_tasks"] == 8 and r["config"]["seed"] == r["seed"]
    shared = [
        r for r in runs if r["arm"] in ("seed-lambda0", "skill-prompt") and r["seed"] == 0 and r["train_fraction"] == 1
    ]
    assert shared[0]["run_dir"] == shared[1]["run_dir"] and shared[0]["metrics"] == shared[1]["metrics"]
    assert (out / "seed-lambda0" / "seed0" / "evaluation_skill_prompt.json").is_file()
    table = (out / "comparison.md").read_text()
    grpo = [r for r in runs if r["arm"] == "grpo" and r["train_fraction"] == 1]
    mean = sum(r["evaluation"]["valid_unseen"]["success"] for r in grpo) / 2
    grpo_row = next(line for line in table.splitlines() if line.startswith("| grpo "))
    assert grpo_row.split("|")[2].strip().startswith(f"{100 * mean:.1f} [")  # the mean over the two seeds
    assert "| 2 (" in grpo_row  # two training seeds, each one's success listed
    assert "| grpo @ 50% data" in table and "50% of train tasks" in table and "Student's 95% interval" in table
    assert set(data["untrained"]) == {"valid_unseen", "valid_seen"}
    # seed-lambda0 against grpo, paired by seed: the mean of the two seeds' differences
    ablation = [r for r in runs if r["arm"] == "seed-lambda0" and r["train_fraction"] == 1]
    success = {(r["arm"], r["seed"]): r["evaluation"]["valid_unseen"]["success"] for r in [*ablation, *grpo]}
    difference = sum(success[("seed-lambda0", s)] - success[("grpo", s)] for s in (0, 1)) / 2
    cells = next(line for line in table.splitlines() if line.startswith("| seed-lambda0 - grpo ")).split("|")
    assert cells[2].strip() == "2" and cells[3].strip().startswith(f"{100 * difference:+.1f} [")
    assert "Differences paired by training seed (valid_unseen)" in table
    # and on the second split, from its own evaluations
    seen = {(r["arm"], r["seed"]): r["evaluation"]["valid_seen"]["success"] for r in [*ablation, *grpo]}
    seen_difference = sum(seen[("seed-lambda0", s)] - seen[("grpo", s)] for s in (0, 1)) / 2
    after = table.split("Differences paired by training seed (valid_seen)")[1]
    cells = next(line for line in after.splitlines() if line.startswith("| seed-lambda0 - grpo ")).split("|")
    assert cells[3].strip().startswith(f"{100 * seen_difference:+.1f} [")
    assert "| seed-lambda0 @ 50% data - grpo @ 50% data " in table and "- seed " not in table  # no seed arm here
    assert (out / "comparison.png").stat().st_size > 1000
    # every run is finished: a second call trains nothing
    assert main(args) == 0
    assert "update   1" not in capsys.readouterr().out


def test_a_data_fraction_of_a_procedural_split_needs_a_pool(tmp_path, capsys):
    args = ["compare", "--config", "sokoban_grpo", *TINY, "--out", str(tmp_path), "--data-fractions"]
    assert main([*args, "0.5"]) == 2
    assert "train_tasks=N" in capsys.readouterr().err
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before evaluating or training
    args.insert(3, "train_tasks=4")
    assert main([*args, "1.5"]) == 2
    assert "must be in (0, 1]" in capsys.readouterr().err


def test_the_skill_prompt_arm_puts_its_runs_skills_in_the_prompts(tmp_path):
    from seed_rl.config import load_config
    from seed_rl.train.phases.skill_prompt import library_from_run
    from seed_rl.train.trainer import Trainer

    cfg = load_config("sokoban_grpo", [*TINY, "updates=1", "algo=seed", "analyzer=scripted", f"run_dir={tmp_path}"])
    trainer = Trainer(cfg)
    try:
        trainer.update()
        library = library_from_run(tmp_path)
        assert len(library) > 0 and all(e.env == "seed/Sokoban-v0" for e in library.entries)
        seen: list[str] = []
        generate = trainer.learner.policy.generate

        def recording(prompts, **kwargs):
            seen.extend(p.user_text for p in prompts)
            return generate(prompts, **kwargs)

        trainer.learner.policy.generate = recording
        trainer.evaluate("valid_unseen", [0, 1])
        assert seen and not any(e.skill.episode_skill in text for e in library.entries for text in seen)
        seen.clear()
        trainer.evaluate("valid_unseen", [0, 1], skills=library)
        skills = {e.skill.episode_skill for e in library.entries}
        assert seen and all(any(skill in text for skill in skills) for text in seen)
    finally:
        trainer.close()


def test_the_untrained_evaluation_is_reused_only_under_the_same_protocol(tmp_path, monkeypatch):
    import seed_rl.evaluate.play as evaluate_module
    from seed_rl.compare.comparison import evaluate_starts
    from seed_rl.config import load_config

    played = []
    real = evaluate_module.evaluate

    def counting(*args, **kwargs):
        played.append(kwargs["env_kwargs"].get("max_episode_steps"))
        return real(*args, **kwargs)

    monkeypatch.setattr(evaluate_module, "evaluate", counting)
    tasks = {"valid_unseen": [0, 1]}
    for steps in (3, 3, 2):
        cfg = load_config("sokoban_grpo", [*TINY, f"max_steps={steps}"])
        assert list(evaluate_starts(cfg, tasks, (0,), tmp_path)) == ["untrained"]
    assert played == [3, 2]  # the second call reused the first; a new step limit plays again

    # dtype=auto is stamped as this machine resolves it, as a finished run's config.yaml records it
    from seed_agent.models import resolve_dtype

    for dtype in ("auto", resolve_dtype("auto")):
        cfg = load_config("sokoban_grpo", [*TINY, "max_steps=2", f"dtype={dtype}"])
        evaluate_starts(cfg, tasks, (0,), tmp_path)
    assert played == [3, 2] + ([] if resolve_dtype("auto") == "float32" else [2])  # auto: played once
