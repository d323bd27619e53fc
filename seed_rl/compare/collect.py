"""``seed compare --runs``: compare finished runs trained anywhere (separate ``seed train`` jobs,
under torchrun on other machines) as :mod:`seed_rl.compare.comparison` compares the arms it trains.

Each folder is a run written by ``seed train`` (``config.yaml``, ``metrics.jsonl``,
``checkpoints/``) whose last checkpoint is its config's last update. A run's arm is the arm of
:data:`~seed_rl.compare.arms.ARMS` whose overrides its config holds (the most specific where
several do), else its folder's name; runs of one arm with different ``seed`` are that arm's
training seeds, and runs of one arm with one seed are each named by their folder. Every budget
key but ``seed`` must be equal across the runs (``--force``: the table says which differ). Each
run's final policy is then evaluated by :func:`evaluate_run`, which trains nothing and reuses an
evaluation the folder already holds on the same tasks. A folder may be a run packed by ``seed
pack`` (its last checkpoint, the adapters merged before RL, its evaluations): compared on any
machine as the run it was packed from, so that a comparison committed with its packs continues
elsewhere.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_rl.compare.arm_summary import ArmResult
from seed_rl.compare.arms import ARMS
from seed_rl.compare.comparison import (
    BUDGET_KEYS,
    EvalCurve,
    check_budgets,
    evaluate_policy,
    saved_evaluation,
)
from seed_rl.config import ConfigError, TrainConfig, load_config
from seed_rl.records.run_log import read_metrics
from seed_rl.train.learner.checkpoint import list_checkpoints
from seed_rl.train.saved_policy import EVALUATION_FILES
from seed_rl.train.stage1.sft import REPORT_FILE as STAGE1_REPORT

#: What must be equal for two runs to be compared: the budget keys but ``seed`` (an arm's seeds differ in it).
RUN_BUDGET_KEYS = tuple(key for key in BUDGET_KEYS if key != "seed")


def load_run(folder: Path) -> TrainConfig:
    """The config of the finished run in ``folder`` (its ``config.yaml``), to evaluate it where it lies;
    raises, naming the folder and what it lacks, for a folder that holds no run or an unfinished one."""
    path = folder / "config.yaml"
    if not folder.is_dir():
        hint = " (KEY=VALUE overrides are training mode's: --runs takes none)" if "=" in folder.name else ""
        raise ConfigError(f"{folder} is not a folder{hint}")
    if not path.is_file():
        raise ConfigError(f"{folder} holds no config.yaml: it is not a run folder written by seed train")
    try:
        cfg = load_config(str(path))
    except ConfigError as error:
        raise ConfigError(f"{path}: {error}") from error
    checkpoints = list_checkpoints(folder)
    last = checkpoints[-1][0] if checkpoints else 0
    if last < cfg.updates:
        found = f"its last checkpoint is update {last}" if checkpoints else "it holds no checkpoint (checkpoints/)"
        raise ConfigError(
            f"{folder} is not a finished run: {found} of its {cfg.updates} updates; finish it with "
            f"seed train --config {path} --resume"
        )
    # here, not where it was trained; nothing logged to tensorboard or wandb while it is evaluated
    return dataclasses.replace(cfg, run_dir=str(folder), tensorboard=False, wandb=False)


def arm_of_run(cfg: TrainConfig, folder: Path) -> str:
    """The arm whose overrides ``cfg`` holds, the one that sets the most keys where several do (SEED
    with step skills is ``seed-step-skills``, not ``seed``); arms that share another's training are
    never chosen. The folder's name where none matches."""
    values = cfg.to_dict()
    matches = []
    for name, arm in ARMS.items():
        wanted = load_config(None, list(arm.overrides)).to_dict()
        keys = [item.partition("=")[0].strip() for item in arm.overrides]
        if not arm.trains_as and all(values[key] == wanted[key] for key in keys):
            matches.append((len(keys), name))
    return max(matches, key=lambda match: match[0])[1] if matches else folder.resolve().name


def plan_collected(folders: Sequence[str], force: bool = False) -> tuple[list[tuple[str, TrainConfig]], list[str]]:
    """Every (arm, config) of the runs in ``folders``, by arm (in the order met), then seed; and the
    budget keys on which the runs differ (an error unless ``force``)."""
    if len(set(folders)) != len(folders):
        raise ConfigError(f"a run folder is named twice: {' '.join(folders)}")
    configs = {name: load_run(Path(name)) for name in folders}
    differing = check_budgets(configs, force=force, keys=RUN_BUDGET_KEYS, what="runs")
    arms = name_runs(configs)
    order = {arm: i for i, arm in enumerate(dict.fromkeys(arms.values()))}
    planned = sorted(((arms[name], cfg) for name, cfg in configs.items()), key=lambda item: _run_order(item, order))
    return planned, differing


def name_runs(configs: dict[str, TrainConfig]) -> dict[str, str]:
    """The arm of each run, by folder (:func:`arm_of_run`). Runs that would be one arm with one seed
    (the same arm trained under other budgets, compared with ``--force``) are each named by their
    folder instead; raises where that still leaves two runs of one name with one seed."""
    arms = {name: arm_of_run(cfg, Path(name)) for name, cfg in configs.items()}
    by_key: dict[tuple[str, int], list[str]] = {}
    for name, cfg in configs.items():
        by_key.setdefault((arms[name], cfg.seed), []).append(name)
    for (arm, train_seed), names in by_key.items():
        if len(names) > 1:
            print(
                f"note: {', '.join(names)} are all arm {arm} with seed {train_seed}: each named by its folder",
                flush=True,
            )
            arms.update({name: Path(name).resolve().name for name in names})
    seen: dict[tuple[str, int], str] = {}
    for name, cfg in configs.items():
        other = seen.setdefault((arms[name], cfg.seed), name)
        if other != name:
            raise ConfigError(
                f"{other} and {name} are both runs named {arms[name]} with seed {cfg.seed}; rename a folder, "
                "or give the runs of one arm different seeds"
            )
    return arms


def _run_order(item: tuple[str, TrainConfig], order: dict[str, int]) -> tuple[float, int, int]:
    return -item[1].train_fraction, order[item[0]], item[1].seed


def evaluate_run(
    name: str, cfg: TrainConfig, eval_tasks: dict[str, list[int]], eval_seeds: tuple[int, ...], eval_every: int = 0
) -> ArmResult:
    """A finished run's final policy on every split of ``eval_tasks``: the evaluation its folder holds
    on them (``evaluation.json``, kept there by ``seed compare`` and copied by ``seed pack``), else
    played now by the policy ``seed eval --policy`` loads (:func:`~seed_rl.train.saved_policy.load_run_policy`:
    the adapters merged before RL from the run's own copies, else from this machine's cache; nothing is
    trained, and a missing adapter is named) and kept there. Its curve is the one the folder holds
    (``evaluation_curve.json``): a finished run is not trained again, so ``eval_every`` adds no point."""
    run = Path(cfg.run_dir)
    update = list_checkpoints(run)[-1][0]
    print(f"== run {run}: arm {name}, seed {cfg.seed}, {cfg.algo}, trained ({update} updates)", flush=True)
    stamp = {"tasks": eval_tasks, "seeds": list(eval_seeds), "updates": update}
    evaluation = saved_evaluation(
        run / EVALUATION_FILES[0], stamp, lambda: {"by_split": play_run(cfg, eval_tasks, eval_seeds)}
    )
    curve = EvalCurve(run, eval_tasks, eval_seeds)
    points = {**curve.points, update: evaluation["by_split"][curve.split]}
    stage1 = run / STAGE1_REPORT
    return ArmResult(
        name,
        cfg,
        read_metrics(run),
        evaluation["by_split"],
        json.loads(stage1.read_text(encoding="utf-8")) if stage1.is_file() else None,
        curve=dict(sorted(points.items())),
    )


def play_run(cfg: TrainConfig, eval_tasks: dict[str, list[int]], eval_seeds: tuple[int, ...]) -> dict[str, Any]:
    """The run's final policy, as ``seed eval --policy`` loads it, on ``eval_tasks``; its prompts fit the
    model's context as the trainer's do."""
    from seed_rl.train.saved_policy import load_run_policy
    from seed_rl.train.setup.run_setup import run_prompt_builder

    policy = load_run_policy(Path(cfg.run_dir)).policy
    builder = run_prompt_builder(cfg, policy.count_tokens, policy.context_length - cfg.max_new_tokens)
    return evaluate_policy(cfg, policy, eval_tasks, eval_seeds, builder)
