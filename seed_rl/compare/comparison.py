"""Comparisons under equal budgets: GRPO against SEED (and its ablations), trained and evaluated alike.

Every arm starts from the same config and differs only in its algorithm keys
(:data:`ARMS`), so env, step limit, updates, rollouts and seed are equal by
construction; :func:`check_budgets` refuses arms whose budget keys differ anyway. Each
arm trains once per training seed (and per data fraction, the paper's Table 6) in
``<out>/<arm>/seed<S>`` (``data<P>-seed<S>`` below 100% of the data); a finished run is
not trained again and an interrupted one resumes. Its final policy then plays the same
fixed tasks of each evaluation split with no skill in context: the first N of the env's
manifest (:mod:`seed_rl.evaluate.manifests`), the tasks ``seed eval`` plays, checked against the
data here. The untrained model plays them too, and so does the warm-started one where the arms
start from it. :mod:`seed_rl.compare.table` and :mod:`seed_rl.compare.plots` turn the runs into
``comparison.md``, ``comparison.json`` and ``comparison.png``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seed_rl.compare.arm_summary import ArmResult, StartRows, arms_start, group_results, paired_with_start
from seed_rl.compare.arms import ARMS
from seed_rl.config import ConfigError, TrainConfig, load_config
from seed_rl.records.run_log import read_metrics, summary_line
from seed_rl.train.learner.checkpoint import latest_checkpoint
from seed_rl.train.saved_policy import EVALUATION_FILES

if TYPE_CHECKING:
    from seed_agent.prompts import PromptBuilder

#: What must be equal for two arms to be compared.
BUDGET_KEYS = (
    "env",
    "env_kwargs",
    "train_env_kwargs",
    "split",
    "train_tasks",
    "train_fraction",
    "max_steps",
    "model",
    "updates",
    "tasks_per_update",
    "group_size",
    "seed",
    "temperature",
    "max_new_tokens",
    "style",
    "one_shot",
    "lr",
    "kl_coef",
    "minibatches",
    "epochs",
    "loss_agg",
    "top_p",
    "top_k",
    "eval_temperature",
)


#: What decides how a policy plays an evaluation: an untrained evaluation is reused only where they match.
EVALUATION_KEYS = (
    "env",
    "env_kwargs",
    "max_steps",
    "dtype",
    "style",
    "one_shot",
    "history_length",
    "visual",
    "max_new_tokens",
    "sample_batch_size",
    "eval_temperature",
    "top_p",
    "top_k",
)


def run_folder(out: Path, arm: str, train_seed: int, fraction: float = 1.0) -> Path:
    """``<out>/<arm>/seed<S>``, or ``data<P>-seed<S>`` for a fraction of the data; arms that
    share their training (:attr:`Arm.trains_as`) share the folder."""
    base = ARMS[arm].trains_as or arm
    tag = f"seed{train_seed}" if fraction == 1 else f"data{100 * fraction:g}-seed{train_seed}"
    return out / base / tag


def arm_config(
    name: str,
    config: str | None,
    overrides: Sequence[str],
    out: Path,
    *,
    train_seed: int | None = None,
    fraction: float = 1.0,
) -> TrainConfig:
    """The config of arm ``name`` for one training seed (the config's own when None) and data fraction."""
    if name not in ARMS:
        raise ConfigError(f"unknown arm {name!r}; arms: {', '.join(ARMS)}")
    chosen = [f"seed={train_seed}"] if train_seed is not None else []
    if fraction != 1:
        chosen.append(f"train_fraction={fraction}")
    cfg = load_config(config, [*overrides, *ARMS[name].overrides, *chosen])
    return dataclasses.replace(cfg, run_dir=str(run_folder(out, name, cfg.seed, cfg.train_fraction)))


def plan_runs(
    arms: Sequence[str],
    config: str | None,
    overrides: Sequence[str],
    out: Path,
    seeds: Sequence[int] | None = None,
    fractions: Sequence[float] = (1.0,),
    force: bool = False,
) -> tuple[list[tuple[str, TrainConfig]], list[str]]:
    """Every (arm, config) to train, by fraction, then arm, then seed; and the budget keys on
    which arms differ (an error unless ``force``). ``seeds``: the config's own seed when None."""
    if len(set(arms)) != len(arms):
        raise ConfigError(f"an arm is named twice: {' '.join(arms)}")
    for fraction in fractions:
        if not 0 < fraction <= 1:
            raise ConfigError(f"data fraction {fraction:g} is not allowed; fractions must be in (0, 1]")
    planned: list[tuple[str, TrainConfig]] = []
    differing: list[str] = []
    for fraction in fractions:
        for train_seed in seeds if seeds is not None else [None]:
            group = {
                name: arm_config(name, config, overrides, out, train_seed=train_seed, fraction=fraction)
                for name in arms
            }
            if fraction != 1:  # a share of what? refuse now, not after the untrained model has played
                from seed_rl.train.setup.run_setup import split_size, train_task_pool

                cfg = next(iter(group.values()))
                train_task_pool(cfg, None if cfg.train_tasks else split_size(cfg))
            differing += [key for key in check_budgets(group, force=force) if key not in differing]
            planned += group.items()
    order = {name: i for i, name in enumerate(arms)}
    planned.sort(key=lambda item: (-item[1].train_fraction, order[item[0]], item[1].seed))
    return planned, differing


def check_budgets(
    configs: dict[str, TrainConfig], force: bool = False, keys: Sequence[str] = BUDGET_KEYS, what: str = "arms"
) -> list[str]:
    """The ``keys`` (by default every budget key) on which the configs differ; raises unless ``force``
    (then the table says so), naming each differing key with every config's value, by name: the
    arms' names, or ``what`` else (``seed compare --runs``: the run folders)."""
    differing = []
    first = next(iter(configs.values())).to_dict()
    for key in keys:
        if any(cfg.to_dict()[key] != first[key] for cfg in configs.values()):
            differing.append(key)
    if differing and not force:
        values = "; ".join(
            f"{key}: " + ", ".join(f"{name}={cfg.to_dict()[key]!r}" for name, cfg in configs.items())
            for key in differing
        )
        raise ConfigError(f"the {what}' budgets differ ({values}); equalise them or pass --force")
    return differing


def manifest_indices(cfg: TrainConfig, n: int, split: str = "valid_unseen") -> list[int]:
    """The split indices of the manifest's first ``n`` tasks of ``split``, checked against the env
    the arms evaluate on (the trainer evaluates by index)."""
    from seed_rl.evaluate.manifests import eval_tasks
    from seed_rl.train.setup.run_setup import run_env_kwargs

    _, tasks = eval_tasks(cfg.env, split, n, run_env_kwargs(cfg, split))
    return [t.index for t in tasks]


def run_arm(
    name: str,
    cfg: TrainConfig,
    eval_tasks: dict[str, list[int]],
    eval_seeds: tuple[int, ...],
    eval_every: int = 0,
) -> ArmResult:
    """Train one run of arm ``name`` (or resume it, or reuse it when finished), then evaluate its final
    policy on every split of ``eval_tasks`` (or reuse the evaluation the run holds on them).
    ``eval_every`` > 0: also after every that many updates, on the first split (success against
    episodes consumed), kept in ``evaluation_curve.json``; a finished run reused keeps the points it has."""
    from seed_rl.train.trainer import Trainer  # torch: imported when an arm runs, so `seed --help` stays instant

    skill_prompt = ARMS[name].skill_prompt
    run = Path(cfg.run_dir)
    resume = (run / "config.yaml").is_file()
    done = read_metrics(run) if resume else []
    if resume and len(done) >= cfg.updates and latest_checkpoint(run) is None:
        raise ConfigError(f"{run} has metrics but no checkpoint; remove it to train the arm again")
    trainer = Trainer(cfg, resume=resume)
    left = f"updates {trainer.update_index + 1}..{cfg.updates}" if trainer.update_index < cfg.updates else "trained"
    print(f"== arm {name}, seed {cfg.seed}{_fraction_note(cfg)}: {cfg.algo}, {left}", flush=True)
    curve = EvalCurve(run, eval_tasks, eval_seeds)
    try:
        while trainer.update_index < cfg.updates:
            print(summary_line(trainer.update()), flush=True)
            if eval_every and trainer.update_index % eval_every == 0 and trainer.update_index < cfg.updates:
                curve.add(trainer)

        def play() -> dict[str, Any]:
            skills = _run_skills(run) if skill_prompt else None
            by_split = {
                split: trainer.evaluate(split, tasks, seeds=eval_seeds, skills=skills).summary()
                for split, tasks in eval_tasks.items()
            }
            return {"by_split": by_split, **({"library_skills": len(skills)} if skills is not None else {})}

        stamp = {"tasks": eval_tasks, "seeds": list(eval_seeds), "updates": trainer.update_index}
        evaluation = saved_evaluation(run / EVALUATION_FILES[1 if skill_prompt else 0], stamp, play)
    finally:
        trainer.close()
    points = {**curve.points, trainer.update_index: evaluation["by_split"][curve.split]}
    return ArmResult(
        name,
        cfg,
        read_metrics(run),
        evaluation["by_split"],
        trainer.stage1_report,
        evaluation.get("library_skills"),
        curve=dict(sorted(points.items())),
    )


def saved_evaluation(path: Path, stamp: dict[str, Any], play: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The evaluation kept in ``path`` where it was played under ``stamp`` (the same tasks, seeds and
    update); else ``play()``'s (``{"by_split": ...}``: new weights or other tasks), kept there."""
    evaluation = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if any(evaluation.get(k) != v for k, v in stamp.items()):
        evaluation = {**stamp, **play()}
        path.write_text(json.dumps(evaluation, indent=1), encoding="utf-8")
    return evaluation


class EvalCurve:
    """A run's evaluations on the first evaluation split after some updates, by update: kept in
    ``<run>/evaluation_curve.json`` under the tasks and seeds they played (others are dropped)."""

    def __init__(self, run: Path, eval_tasks: dict[str, list[int]], eval_seeds: tuple[int, ...]) -> None:
        self.path = run / EVALUATION_FILES[2]
        self.split = next(iter(eval_tasks))
        self.stamp = {"split": self.split, "tasks": eval_tasks[self.split], "seeds": list(eval_seeds)}
        saved = json.loads(self.path.read_text(encoding="utf-8")) if self.path.is_file() else {}
        fresh = all(saved.get(k) == v for k, v in self.stamp.items())
        self.points: dict[int, dict[str, Any]] = (
            {int(u): summary for u, summary in saved["points"].items()} if saved and fresh else {}
        )

    def add(self, trainer: Any) -> None:
        """Evaluate ``trainer``'s policy now, under the comparison's protocol, and save the point."""
        tasks, seeds = self.stamp["tasks"], tuple(self.stamp["seeds"])
        self.points[trainer.update_index] = trainer.evaluate(self.split, tasks, seeds=seeds).summary()
        body = {**self.stamp, "points": {str(u): p for u, p in sorted(self.points.items())}}
        self.path.write_text(json.dumps(body, indent=1), encoding="utf-8")


def _run_skills(run: Path) -> Any:
    from seed_rl.train.phases.skill_prompt import library_from_run

    library = library_from_run(run)
    if not len(library):
        print(f"warning: {run} wrote no parsed skill in training: the skill-prompt arm plays with none", flush=True)
    return library


def _fraction_note(cfg: TrainConfig) -> str:
    return "" if cfg.train_fraction == 1 else f", {100 * cfg.train_fraction:g}% of the train tasks"


def evaluation_protocol(cfg: TrainConfig) -> dict[str, Any]:
    """The keys of ``cfg`` that decide what an evaluation measures (:data:`EVALUATION_KEYS`), with
    ``dtype=auto`` as this machine resolves it: what the policy computed in, as a finished run's
    ``config.yaml`` records it (so ``seed compare --runs`` reuses what ``--config`` evaluated)."""
    from seed_agent.models import resolve_device, resolve_dtype

    values = cfg.to_dict()
    values["dtype"] = resolve_dtype(cfg.dtype, resolve_device(cfg.device))
    return {key: values[key] for key in EVALUATION_KEYS}


def evaluate_starts(
    cfg: TrainConfig,
    eval_tasks: dict[str, list[int]],
    eval_seeds: tuple[int, ...],
    out: Path,
    run: Path | None = None,
) -> StartRows:
    """The models every arm is measured against, on the same tasks, per split: the untrained base
    model, and with ``warm_start`` the warm-started one after it, where the arms start (the warm
    start is trained into the cache here the first time; the arms then load it). ``run``: a
    finished run (``seed compare --runs``) whose warm-start adapter is merged instead, as ``seed
    eval --policy`` merges it (the run's own copy, else this machine's cache): nothing is trained,
    and a missing adapter is named (:class:`~seed_rl.train.saved_policy.PolicyError`). Each
    evaluation is kept in ``out`` and reused while its tasks, seeds, model and protocol match."""
    base = dataclasses.replace(cfg, warm_start="none")
    starts = {"untrained": evaluate_start(base, eval_tasks, eval_seeds, out / "untrained_evaluation.json")}
    if cfg.warm_start != "none":
        path = out / "warm_start_evaluation.json"
        starts["warm start"] = evaluate_start(cfg, eval_tasks, eval_seeds, path, run)
    return starts


def evaluate_start(
    cfg: TrainConfig,
    eval_tasks: dict[str, list[int]],
    eval_seeds: tuple[int, ...],
    path: Path,
    run: Path | None = None,
) -> dict[str, dict[str, Any]]:
    """``cfg``'s model before Stage 1 and RL (warm-started where ``cfg`` says so: with ``run``'s
    adapter where given) on ``eval_tasks``, per split; read from ``path`` where it was played
    already under the same stamp."""
    from seed_rl.train.stage1.warm_start import warm_start_key

    stamp = {"tasks": eval_tasks, "seeds": list(eval_seeds), "model": cfg.model, "protocol": evaluation_protocol(cfg)}
    stamp["warm_start"] = warm_start_key(cfg) if cfg.warm_start != "none" else None  # (None: the base weights)
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if all(saved.get(k) == v for k, v in stamp.items()):
            return saved["by_split"]
    from seed_rl.train.setup.run_setup import run_policy

    policy = run_policy(cfg)
    if cfg.warm_start != "none" and run is not None:
        from seed_rl.train.saved_policy import merge_cached_adapters

        merge_cached_adapters(dataclasses.replace(cfg, sft=False), policy, run)  # the warm start alone
    elif cfg.warm_start != "none":
        from seed_rl.train.stage1.warm_start import run_warm_start

        run_warm_start(cfg, policy)
    by_split = evaluate_policy(cfg, policy, eval_tasks, eval_seeds)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**stamp, "by_split": by_split}, indent=1), encoding="utf-8")
    return by_split


def evaluate_policy(
    cfg: TrainConfig,
    policy: Any,
    eval_tasks: dict[str, list[int]],
    eval_seeds: tuple[int, ...],
    builder: PromptBuilder | None = None,
) -> dict[str, dict[str, Any]]:
    """``policy`` on ``eval_tasks`` of each split under ``cfg``'s evaluation protocol, no skill in
    context, its prompts built by ``builder`` (by default the run's, unbounded): each split's
    evaluation summary."""
    from seed_rl.evaluate.play import evaluate
    from seed_rl.train.setup.run_setup import eval_sampling, run_env_kwargs, run_prompt_builder

    builder = builder or run_prompt_builder(cfg)
    return {
        split: evaluate(
            policy,
            builder,
            env=cfg.env,
            split=split,
            task_indices=tasks,
            sampling=eval_sampling(cfg),
            seeds=eval_seeds,
            env_kwargs=run_env_kwargs(cfg, split),
            progress=cfg.progress,
        ).summary()
        for split, tasks in eval_tasks.items()
    }


def write_outputs(out: Path, starts: StartRows, results: list[ArmResult], differing: list[str]) -> str:
    """``comparison.md`` (the tables), ``comparison.json`` (every run) and ``comparison.png``."""
    from seed_rl.compare.plots import plot_comparison
    from seed_rl.compare.table import comparison_report

    arms = group_results(results)
    report = comparison_report(starts, arms, differing)
    label, start = arms_start(starts)
    (out / "comparison.md").write_text(report + "\n", encoding="utf-8")
    data = {
        "untrained": starts["untrained"],
        **({"warm_start": starts["warm start"]} if "warm start" in starts else {}),
        "differing_budget_keys": differing,
        "runs": [
            {
                "arm": r.name,
                "seed": r.config.seed,
                "train_fraction": r.config.train_fraction,
                "run_dir": r.config.run_dir,
                "evaluation": r.evaluation,
                "evaluation_curve": {str(u): summary for u, summary in r.curve.items()},
                "metrics": r.metrics,
                "stage1": r.stage1,
                "config": r.config.to_dict(),
                **paired_record(r, label, start),
            }
            for r in results
        ],
    }
    (out / "comparison.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    plot_comparison(out / "comparison.png", starts, arms)
    return report


def paired_record(run: ArmResult, label: str, start: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``{"paired_with_start": ...}`` for ``comparison.json``: ``run``'s final evaluation against the
    start's (``label``: ``untrained`` or ``warm start``), per split where both kept per-task outcomes
    (:func:`~seed_rl.compare.arm_summary.paired_with_start`): the episodes only the arm won, those only
    the start won, how many were paired, and McNemar's exact p; empty where no split has them."""
    by_split: dict[str, Any] = {}
    for split in run.evaluation:
        try:
            paired = paired_with_start(run, start, split)
        except ValueError as error:  # other tasks: said, not tested
            by_split[split] = {"error": str(error)}
            continue
        if paired is not None:
            by_split[split] = {
                "arm_won_start_lost": paired.b,
                "start_won_arm_lost": paired.c,
                "pairs": paired.pairs,
                "p": paired.p,
            }
    return {"paired_with_start": {"start": label.replace(" ", "_"), "by_split": by_split}} if by_split else {}
