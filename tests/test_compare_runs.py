"""seed compare --runs: finished runs trained elsewhere, checked for equal budgets, evaluated alike, tabulated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("matplotlib")

from corridor_support import TINY_CORRIDOR

from seed_rl.cli import main
from seed_rl.compare.collect import arm_of_run
from seed_rl.config import load_config

#: A tiny, fast GRPO run on the corridor (as ``seed train`` would write it).
TINY = [*TINY_CORRIDOR, "tasks_per_update=2", "group_size=2", "algo=grpo", "advantage=grpo", "sft=false"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Run folders: GRPO one update with seeds 0 and 1, two updates with seed 0, and one stopped after
    one of its two updates."""
    from seed_rl.train.trainer import Trainer, train

    root = tmp_path_factory.mktemp("runs")
    folders = {name: root / name for name in ("grpo-s0", "grpo-s1", "longer", "unfinished")}
    for name, overrides in (("grpo-s0", ["seed=0"]), ("grpo-s1", ["seed=1"]), ("longer", ["updates=2"])):
        train(load_config(None, [*TINY, "updates=1", *overrides, f"run_dir={folders[name]}"]))
    trainer = Trainer(load_config(None, [*TINY, "updates=2", f"run_dir={folders['unfinished']}"]))
    try:
        trainer.update()
    finally:
        trainer.close()
    return folders


def compare(out: Path, *args: str | Path) -> int:
    return main(["compare", "--runs", *map(str, args), "--out", str(out), "--eval-episodes", "4"])


def test_runs_with_different_budgets_are_refused_naming_the_key_and_each_runs_value(runs, tmp_path, capsys):
    short, long = runs["grpo-s0"], runs["longer"]
    assert compare(tmp_path / "cmp", short, long) == 2
    error = capsys.readouterr().err
    assert f"updates: {short}=1, {long}=2" in error and "--force" in error
    assert "max_steps" not in error  # only the keys that differ
    assert not (tmp_path / "cmp").exists()  # refused before anything played


def test_forced_runs_with_different_budgets_are_tabulated_with_a_warning(runs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(runs["longer"].parent)  # the runs by relative paths: not the run_dir they were trained in
    short, long = Path("grpo-s0"), Path("longer")
    config = (long / "config.yaml").read_bytes()
    out = tmp_path / "cmp"
    assert compare(out, short, long, "--force") == 0
    table = (out / "comparison.md").read_text()
    assert "budgets differ on updates (--force)" in table
    # one arm with one seed twice: each run is named by its folder
    assert "| grpo-s0 " in table and "| longer " in table and "| untrained " in table
    data = json.loads((out / "comparison.json").read_text())
    assert data["differing_budget_keys"] == ["updates"]
    assert [(r["arm"], len(r["metrics"]), r["run_dir"]) for r in data["runs"]] == [
        ("grpo-s0", 1, str(short)),
        ("longer", 2, str(long)),
    ]
    assert all(r["evaluation"]["valid_unseen"]["episodes"] == 4 for r in data["runs"])
    assert "update   1" not in capsys.readouterr().out  # nothing trained
    assert (long / "config.yaml").read_bytes() == config  # the run's record is left as it was
    assert json.loads((long / "evaluation.json").read_text())["updates"] == 2


def test_runs_of_one_arm_with_different_seeds_are_its_training_seeds(runs, tmp_path, monkeypatch):
    out = tmp_path / "cmp"
    assert compare(out, runs["grpo-s1"], runs["grpo-s0"]) == 0
    data = json.loads((out / "comparison.json").read_text())
    assert [(r["arm"], r["seed"]) for r in data["runs"]] == [("grpo", 0), ("grpo", 1)]
    assert data["differing_budget_keys"] == []
    table = (out / "comparison.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| grpo "))
    assert "| 2 (" in row and "WARNING" not in table  # one arm, two training seeds
    lines = table.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("|"))
    main_table = lines[first : next((i for i in range(first, len(lines)) if not lines[i].startswith("|")), len(lines))]
    assert sum(line.startswith("| grpo") for line in main_table) == 1  # one row for the arm, not one per seed
    # a second comparison on the same tasks reuses each run's evaluation
    from seed_rl.train import saved_policy

    def refuse(*args, **kwargs):
        raise AssertionError("evaluated again")

    monkeypatch.setattr(saved_policy, "load_run_policy", refuse)
    assert compare(tmp_path / "again", runs["grpo-s0"], runs["grpo-s1"]) == 0


def test_folders_without_a_finished_run_and_training_options_are_refused(runs, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert compare(tmp_path / "cmp", runs["grpo-s0"], empty) == 2
    error = capsys.readouterr().err
    assert str(empty) in error and "no config.yaml" in error
    assert compare(tmp_path / "cmp", runs["grpo-s0"], runs["unfinished"]) == 2
    error = capsys.readouterr().err
    assert str(runs["unfinished"]) in error and "not a finished run" in error and "update 1 of its 2" in error
    assert compare(tmp_path / "cmp", runs["grpo-s0"], tmp_path / "missing") == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["compare", "updates=2", "--runs", str(runs["grpo-s0"]), "--arms", "grpo", "seed"]) == 2
    error = capsys.readouterr().err
    assert "--runs" in error and "(given: --arms, updates=2)" in error
    assert not (tmp_path / "cmp").exists()


def test_a_runs_arm_is_the_most_specific_matching_arm_else_its_folder(tmp_path):
    seed = ["algo=seed", "sft=true", "analyzer=self", "skills=on-policy", "advantage=grpo", "lambda_opd=0.01"]
    assert arm_of_run(load_config(None, TINY), tmp_path / "a") == "grpo"
    assert arm_of_run(load_config(None, [*TINY, "filter_groups=true"]), tmp_path / "a") == "grpo-filter"
    assert arm_of_run(load_config(None, seed), tmp_path / "a") == "seed"
    assert arm_of_run(load_config(None, [*seed, "step_skills=true"]), tmp_path / "a") == "seed-step-skills"
    assert arm_of_run(load_config(None, [*seed, "lambda_opd=0"]), tmp_path / "a") == "seed-lambda0"  # not skill-prompt
    assert arm_of_run(load_config(None, [*seed, "lambda_opd=0.5"]), tmp_path / "mine") == "mine"


def test_packed_runs_compare_as_their_runs_on_a_machine_without_their_adapters(tmp_path, monkeypatch, capsys):
    """A run trained by seed compare with a warm start and a curve, packed, then compared from the pack
    where the cache is empty (as if the pack were committed and cloned elsewhere): the same table,
    the run's evaluations reused, nothing trained; a missing adapter is named, not trained again."""
    monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / "cache"))
    warm = ["warm_start=expert", "warm_start_demos=4", "warm_start_epochs=1"]
    trained = tmp_path / "trained"
    (tmp_path / "base.yaml").write_text("progress: false\n")  # the defaults, as the runs above
    arm = ["--arms", "grpo", "--out", str(trained), "--eval-episodes", "4", "--eval-every", "1"]
    assert main(["compare", "--config", str(tmp_path / "base.yaml"), *TINY, *warm, "updates=2", *arm]) == 0
    run = trained / "grpo" / "seed0"
    assert main(["pack", str(run), "--out", str(tmp_path / "packed")]) == 0
    packed = tmp_path / "packed"
    for name in ("evaluation.json", "evaluation_curve.json"):
        assert (packed / name).read_bytes() == (run / name).read_bytes()
    assert compare(tmp_path / "here", run) == 0

    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("SEED_CACHE_DIR", str(elsewhere))  # another machine: no cached adapter
    from seed_rl.train import saved_policy

    def refuse(*args, **kwargs):
        raise AssertionError("evaluated again")

    with monkeypatch.context() as patched:
        patched.setattr(saved_policy, "load_run_policy", refuse)
        assert compare(tmp_path / "there", packed) == 0
    capsys.readouterr()
    assert not list(elsewhere.rglob("*.safetensors"))  # the warm start was not trained here
    assert (tmp_path / "there" / "comparison.md").read_text() == (tmp_path / "here" / "comparison.md").read_text()
    assert without_run_dirs(tmp_path / "there") == without_run_dirs(tmp_path / "here")

    # without its evaluation, the packed policy plays the tasks with the pack's adapter, as the trainer played them
    (packed / "evaluation.json").unlink()
    assert compare(tmp_path / "played", packed) == 0
    assert not list(elsewhere.rglob("*.safetensors"))
    assert without_run_dirs(tmp_path / "played") == without_run_dirs(tmp_path / "here")

    missing = packed / "adapters" / "warm_start_adapter.safetensors"
    missing.unlink()
    capsys.readouterr()
    assert compare(tmp_path / "none", packed) == 2
    error = capsys.readouterr().err
    assert "warm-start adapter" in error and "warm_start_adapter.safetensors not found" in error
    assert not list(elsewhere.rglob("*.safetensors"))


def without_run_dirs(out: Path) -> dict:
    """``comparison.json`` but where each run lies (the run folder, or its pack) and how long each
    evaluation took."""

    def timeless(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: timeless(v) for k, v in value.items() if k != "seconds"}
        return [timeless(v) for v in value] if isinstance(value, list) else value

    data = json.loads((out / "comparison.json").read_text())
    for run in data["runs"]:
        del run["run_dir"], run["config"]["run_dir"]
    return timeless(data)
