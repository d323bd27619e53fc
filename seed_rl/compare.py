"""Comparisons under equal budgets: GRPO against SEED (and its ablations), trained and evaluated alike.

Every arm starts from the same config and differs only in its algorithm keys
(:data:`ARMS`), so env, step limit, updates, rollouts and seed are equal by
construction; :func:`check_budgets` refuses arms whose budget keys differ anyway. Each
arm trains in ``<out>/<arm>`` (a finished arm is not trained again; an interrupted one
resumes), then its final policy plays the same fixed tasks of ``valid_unseen`` with no
skill in context: the first N of the env's manifest (:mod:`seed_rl.manifests`), the tasks
``seed eval`` plays, checked against the data here. The untrained model plays them too.
The result is a markdown table (``<out>/comparison.md``), a JSON file, and a PNG of the
learning curves and final success.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_rl.checkpoint import latest_checkpoint
from seed_rl.config import ConfigError, TrainConfig, load_config
from seed_rl.plots import plot_comparison
from seed_rl.run_log import read_metrics, summary_line
from seed_rl.stats import format_percent, mean_ci
from seed_rl.tables import markdown_table

#: The overrides that make each arm. "seed-scripted" is a diagnostic (oracle skills), never the SEED row.
ARMS: dict[str, tuple[str, ...]] = {
    "grpo": ("algo=grpo", "sft=false"),
    "seed": ("algo=seed", "sft=true", "analyzer=self", "skills=on-policy", "lambda_opd=0.01"),
    "seed-no-sft": ("algo=seed", "sft=false", "analyzer=self", "skills=on-policy"),
    "seed-frozen-analyzer": ("algo=seed", "sft=true", "analyzer=frozen-initial", "skills=on-policy"),
    "seed-static-library": ("algo=seed", "sft=true", "analyzer=self", "skills=static-library"),
    "seed-lambda0": ("algo=seed", "sft=true", "analyzer=self", "skills=on-policy", "lambda_opd=0"),
    "seed-scripted": ("algo=seed", "sft=false", "analyzer=scripted", "skills=on-policy"),
}
#: How the table names an arm where its name alone could mislead.
LABELS = {"seed-scripted": "seed-scripted (diagnostic: oracle skills, not SEED)"}
#: What must be equal for two arms to be compared.
BUDGET_KEYS = (
    "env",
    "env_kwargs",
    "split",
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
)


@dataclass
class ArmResult:
    name: str
    config: TrainConfig
    metrics: list[dict[str, Any]]
    evaluation: dict[str, Any]
    stage1: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def arm_config(name: str, config: str | None, overrides: Sequence[str], out: Path) -> TrainConfig:
    if name not in ARMS:
        raise ConfigError(f"unknown arm {name!r}; arms: {', '.join(ARMS)}")
    return load_config(config, [*overrides, *ARMS[name], f"run_dir={out / name}"])


def check_budgets(configs: dict[str, TrainConfig], force: bool = False) -> list[str]:
    """The budget keys on which the arms differ; raises unless ``force`` (then the table says so)."""
    differing = []
    first = next(iter(configs.values())).to_dict()
    for key in BUDGET_KEYS:
        if any(cfg.to_dict()[key] != first[key] for cfg in configs.values()):
            differing.append(key)
    if differing and not force:
        values = "; ".join(
            f"{key}: " + ", ".join(f"{name}={cfg.to_dict()[key]!r}" for name, cfg in configs.items())
            for key in differing
        )
        raise ConfigError(f"the arms' budgets differ ({values}); equalise them or pass --force")
    return differing


def manifest_indices(cfg: TrainConfig, n: int) -> list[int]:
    """The split indices of the manifest's first ``n`` valid_unseen tasks, checked against the env
    the arms evaluate on (the trainer evaluates by index)."""
    from seed_rl.manifests import eval_tasks
    from seed_rl.run_setup import run_env_kwargs

    _, tasks = eval_tasks(cfg.env, "valid_unseen", n, run_env_kwargs(cfg, "valid_unseen"))
    return [t.index for t in tasks]


def run_arm(cfg: TrainConfig, eval_tasks: list[int], eval_seeds: tuple[int, ...]) -> ArmResult:
    """Train the arm (or resume it, or reuse it when finished), then evaluate its final policy."""
    from seed_rl.trainer import Trainer  # torch: imported when an arm runs, so `seed --help` stays instant

    run = Path(cfg.run_dir)
    resume = (run / "config.yaml").is_file()
    done = read_metrics(run) if resume else []
    if resume and len(done) >= cfg.updates and latest_checkpoint(run) is None:
        raise ConfigError(f"{run} has metrics but no checkpoint; remove it to train the arm again")
    trainer = Trainer(cfg, resume=resume)
    left = f"updates {trainer.update_index + 1}..{cfg.updates}" if trainer.update_index < cfg.updates else "trained"
    print(f"== arm {run.name}: {cfg.algo}, {left}", flush=True)
    try:
        while trainer.update_index < cfg.updates:
            print(summary_line(trainer.update()), flush=True)
    finally:
        trainer.close()
    stamp = {"tasks": list(eval_tasks), "seeds": list(eval_seeds), "updates": trainer.update_index}
    saved = run / "evaluation.json"
    evaluation = json.loads(saved.read_text(encoding="utf-8")) if saved.is_file() else {}
    if any(evaluation.get(k) != v for k, v in stamp.items()):  # new weights or other tasks: evaluate again
        evaluation = {**trainer.evaluate("valid_unseen", eval_tasks, seeds=eval_seeds).summary(), **stamp}
        saved.write_text(json.dumps(evaluation, indent=1), encoding="utf-8")
    return ArmResult(run.name, cfg, read_metrics(run), evaluation, trainer.stage1_report)


def evaluate_untrained(
    cfg: TrainConfig, eval_tasks: list[int], eval_seeds: tuple[int, ...], out: Path
) -> dict[str, Any]:
    """The base model (no Stage 1, no RL) on the same tasks: the row every arm starts from."""
    path = out / "untrained_evaluation.json"
    stamp = {"tasks": list(eval_tasks), "seeds": list(eval_seeds), "model": cfg.model}
    if path.is_file():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if all(saved.get(k) == v for k, v in stamp.items()):
            return saved
    from seed_agent.models import load_named_policy
    from seed_rl.evaluate import evaluate
    from seed_rl.run_setup import run_env_kwargs, run_prompt_builder, run_sampling

    policy = load_named_policy(cfg.model, dtype=cfg.dtype, vlm=cfg.visual, seed=cfg.seed)
    builder = run_prompt_builder(cfg)
    kwargs = run_env_kwargs(cfg, "valid_unseen")
    sampling = run_sampling(cfg)
    result = evaluate(
        policy,
        builder,
        env=cfg.env,
        split="valid_unseen",
        task_indices=eval_tasks,
        sampling=sampling,
        seeds=eval_seeds,
        env_kwargs=kwargs,
    ).summary()
    result.update(stamp)
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    return result


def _mean(values: list[float]) -> float:
    clean = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    return sum(clean) / len(clean) if clean else math.nan


def comparison_table(untrained: dict[str, Any], arms: list[ArmResult], differing: list[str]) -> str:
    """The markdown table: success on valid_unseen with 95% intervals, training signals, compute."""
    headers = [
        "arm",
        "eval success % [95% CI]",
        "eval invalid steps % [95% CI]",
        "train success % (first -> last update)",
        "skill parse rate",
        "gate mean (over updates)",
        "share Delta > 0",
        "s / update: all (rollout + analysis + teacher + update)",
        "train s, Stage 1 included (x grpo)",
        "tokens generated (analyzer) / scored (teacher)",
    ]
    rows = [
        [
            "untrained",
            format_percent(untrained["success"], untrained["success_low"], untrained["success_high"]),
            format_percent(untrained["invalid_rate"], untrained.get("invalid_low"), untrained.get("invalid_high")),
            "",
            "",
            "",
            "",
            "",
            "",
            "",
        ]
    ]
    baseline = next((train_seconds(a) for a in arms if a.name == "grpo"), None)
    for arm in arms:
        m, e = arm.metrics, arm.evaluation
        first, last = m[0], m[-1]
        n = arm.config.tasks_per_update * arm.config.group_size
        rows.append(
            [
                LABELS.get(arm.name, arm.name),
                format_percent(e["success"], e["success_low"], e["success_high"]),
                format_percent(e["invalid_rate"], e.get("invalid_low"), e.get("invalid_high")),
                f"{100 * first['success']:.0f} -> {100 * last['success']:.0f} (n={n} each)",
                _fmt(_mean([x.get("skill_parse_rate") for x in m])),
                _over_updates([x.get("gate_mean") for x in m]),
                _over_updates([x.get("delta_pos_frac") for x in m]),
                phase_seconds(m),
                f"{train_seconds(arm):.0f}" + (f" ({train_seconds(arm) / baseline:.2f}x)" if baseline else ""),
                token_counts(m),
            ]
        )
    table = markdown_table(headers, rows)
    episodes = untrained["episodes"]
    note = (
        f"\nEvaluation: {episodes} episodes of fixed valid_unseen tasks per row, no skill in context; "
        "success with the Wilson 95% interval."
    )
    if differing:
        note += f"\nWARNING: the arms' budgets differ on {', '.join(differing)} (--force)."
    return table + note


def train_seconds(arm: ArmResult) -> float:
    """The arm's wall-clock to train: every update, plus Stage 1 where it ran (not a cached adapter's
    reuse: its training time, as measured when it was trained)."""
    stage1 = float(arm.stage1.get("seconds", 0.0)) if arm.stage1 else 0.0
    return sum(x["seconds_total"] for x in arm.metrics) + stage1


def phase_seconds(metrics: list[dict[str, Any]]) -> str:
    """Mean seconds per update, in all and per phase (the re-score and reference passes, when a run
    has them, count in "update")."""
    phases = [_mean([x.get(f"seconds_{p}", 0.0) for x in metrics]) for p in ("rollout", "analysis", "teacher")]
    rest = _mean(
        [
            x.get("seconds_update", 0.0) + x.get("seconds_rescore", 0.0) + x.get("seconds_reference", 0.0)
            for x in metrics
        ]
    )
    total = _mean([x["seconds_total"] for x in metrics])
    return f"{total:.0f} ({' + '.join(f'{v:.0f}' for v in [*phases, rest])})"


def token_counts(metrics: list[dict[str, Any]]) -> str:
    """Tokens generated (of which by the analyzer) / scored (of which under h_skill), over the run."""
    generated = sum(x["tokens_generated"] for x in metrics)
    scored = sum(x["tokens_scored"] for x in metrics)
    if any("tokens_scored_teacher" not in x for x in metrics):  # an older run: totals only
        return f"{generated:,} / {scored:,}"
    analyzer = sum(x["tokens_generated_analyzer"] for x in metrics)
    teacher = sum(x["tokens_scored_teacher"] for x in metrics)
    return f"{generated:,} ({analyzer:,}) / {scored:,} ({teacher:,})"


def _over_updates(values: list[float | None]) -> str:
    """The mean over updates with its normal 95% interval, or "" where the arm has no such value."""
    clean = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not clean:
        return ""
    estimate = mean_ci(clean)
    if estimate.n < 2:
        return f"{estimate.mean:.2f}"
    return f"{estimate.mean:.2f} [{estimate.low:.2f}, {estimate.high:.2f}]"


def _fmt(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.2f}"


def write_outputs(out: Path, untrained: dict[str, Any], arms: list[ArmResult], differing: list[str]) -> str:
    table = comparison_table(untrained, arms, differing)
    (out / "comparison.md").write_text(table + "\n", encoding="utf-8")
    data = {
        "untrained": untrained,
        "differing_budget_keys": differing,
        "arms": {
            a.name: {"evaluation": a.evaluation, "metrics": a.metrics, "stage1": a.stage1, "config": a.config.to_dict()}
            for a in arms
        },
    }
    (out / "comparison.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
    plot_comparison(out / "comparison.png", untrained, arms)
    return table
