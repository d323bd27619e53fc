"""Training configs: flat keys, read from YAML, with ``key=value`` overrides, grouped in sections.

``load_config("sokoban_seed", ["updates=4", "model=tiny-random"])`` reads a config file
(a path, or the name of one shipped in ``seed_rl/configs/``), applies the overrides, and
checks every key and value **before any work starts**: an unknown key names the allowed
keys, a value outside a fixed set names the allowed values, a value of the wrong type
names the type expected.

Users write one flat mapping (``lr: 1e-3``, ``lr=1e-3``) and code reads ``cfg.lr``. Inside, each
key belongs to one section, a dataclass of its own (``TaskKeys``, ``RolloutKeys``, ``LossKeys``, ...),
checked by its own short function (:data:`SECTIONS`); :class:`TrainConfig` is all of them at once.
A new key goes into the section it belongs to, and its check into that section's function.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_DIR = Path(__file__).resolve().parent / "configs"

#: The analyzers a run can name; a URL (:func:`is_external_analyzer`) names an external one.
ANALYZERS = ("self", "frozen-initial", "scripted")


def is_external_analyzer(value: str) -> bool:
    """``analyzer=http://HOST:PORT#MODEL``: skills from an OpenAI-compatible server."""
    return value.startswith(("http://", "https://"))


class ConfigError(ValueError):
    """A config key or value is not allowed; the message says which and what is."""


# ------------------------------------------------------------------------------- the sections
@dataclass
class TaskKeys:
    """What to train on."""

    env: str = "seed/Sokoban-v0"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    # over env_kwargs, for the training split only (a curriculum: e.g. Sokoban's max_solution_moves);
    # evaluation on the valid splits never sees them
    train_env_kwargs: dict[str, Any] = field(default_factory=dict)
    split: str = "train"
    max_steps: int = 0  # 0: the env's own limit
    train_tasks: int = 0  # the training pool: the split's first N task indices; 0: the whole split
    train_fraction: float = 1.0  # the share of that pool a run draws from (seed compare --data-fractions)


@dataclass
class ModelKeys:
    """The model, how it is fine-tuned, and where it runs."""

    model: str = "tiny-random"  # smollm2 | tiny-random | random:PRESET (seed_agent/random_models.py) | hf:PATH
    finetune: str = "lora"
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_targets: list[str] = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    lora_layers: int = 0  # > 0: adapters in the top N decoder layers only (the backward stops there)
    dtype: str = "float32"  # auto: bfloat16 where the hardware has it natively (seed_agent.models.resolve_dtype)
    # where the policy is loaded, sampled and trained: auto = cuda where torch sees a GPU (the run records
    # what auto chose); cuda where there is none is refused when the run starts (seed_agent.models.resolve_device)
    device: str = "cpu"
    threads: int = 0  # 0: leave torch's default


@dataclass
class RolloutKeys:
    """The rollouts of an update: groups of episodes, how replies are sampled, how steps are rewarded."""

    tasks_per_update: int = 4
    group_size: int = 8
    reward: str = "return"  # the outcome reward R of a trajectory
    penalty: float = 0.1  # the invalid-action penalty
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # > 0: sample from the k most likely tokens only
    max_new_tokens: int = 32
    sample_batch_size: int = 8  # sequences the model generates at once (rollouts, evaluation, skills)
    style: str = "act"
    one_shot: bool = True
    history_length: int = -1  # turns of history in each prompt; -1: the env's own (SEED's settings)
    # how those turns are rendered: full = each turn's observation and action; actions = one short line per
    # past action, with the first sentence of what followed it (seed_agent/history.py)
    history_format: str = "full"
    visual: bool = False
    # DAPO's dynamic sampling (seed_rl/train/phases/group_filter.py): further rounds of new tasks until
    # tasks_per_update groups differ in outcome (won or score, penalties aside), at most max_rollout_rounds
    # rounds; tied groups fill the rest
    filter_groups: bool = False
    max_rollout_rounds: int = 3


@dataclass
class OptimizationKeys:
    """The optimizer steps of an update, and the passes that feed them."""

    lr: float = 1e-5
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    minibatches: int = 1  # optimizer steps per epoch; mini-batches count trajectories
    epochs: int = 1
    token_budget: int = 4096  # tokens computed per micro-batch, at most (a shared prefix counts once)
    micro_batch_rows: int = 0  # > 0: exactly this many rows per micro-batch, no token bound (the naive path)
    share_prefix: bool = True  # rows that start alike compute that prefix once, in sampling and scoring
    # SEED's teacher pass: what the steps of an episode share under h_skill (through the skill) runs
    # once per episode (seed_agent/policies/engine/layout.py); false: every row past the batch prefix
    share_episode_prefix: bool = True
    # with LoRA in the top lora_layers only: training passes start from the hidden states the sampler
    # computed below them (seed_agent/policies/engine/frozen_states.py)
    reuse_frozen_states: bool = True
    memory_budget_gb: float = 8.0  # weights + optimizer + one micro-batch's pass (seed_rl/train/learner/memory.py)
    gradient_checkpointing: bool = False


@dataclass
class LossKeys:
    """The algorithm's advantage and loss: SEED's distillation (algo=seed) or not, on GRPO's episode
    advantage or GiGPO's episode + step advantage (seed_rl/algo/gigpo.py), with PPO's clip, the KL
    term and the sampler correction."""

    algo: str = "grpo"
    advantage: str = "grpo"
    gamma: float = 0.95  # GiGPO: the discount of the step returns
    step_advantage_w: float = 1.0  # GiGPO: A = A_E + w * A_S
    normalize_std: bool = True
    clip_low: float = 0.2
    clip_high: float = 0.2
    kl_coef: float = 0.01
    # how GRPO's per-token terms average over a mini-batch: every token alike (DAPO), or every
    # trajectory alike (GRPO's 1/|o_i| over the whole multi-turn trajectory; seed_rl/algo/losses.py)
    loss_agg: str = "token-mean"
    rescore: str = "auto"  # re-score old log-probs on the learner: auto = when the sampler differs
    is_cap: float = 2.0
    is_mode: str = "truncate"


@dataclass
class SeedKeys:
    """SEED: hindsight skills and their distillation (used by algo=seed)."""

    lambda_opd: float = 0.01
    beta_opd: float = 5.0
    analyzer: str = "self"
    skills: str = "on-policy"
    library_updates: int = 1  # static-library: updates whose skills build the library
    failed_only: bool = False
    step_skills: bool = False  # the analyzer also writes skills for single steps
    # kept for at most this many steps per trajectory: those whose anchor state's returns spread most
    max_step_skills: int = 5
    analyzer_max_new_tokens: int = 160
    analyzer_prefill: bool = True
    analyzer_repetition_penalty: float = 1.2  # greedy analysis by small models loops without it
    skill_reserve_tokens: int = 160  # prompt room kept free for an injected skill
    # SEED's premise on each update's own batch: every episode with a skill played again with it in
    # context, its success set beside the rollout's without it (seed_rl/train/phases/skill_probe.py)
    skill_probe: bool = False


@dataclass
class WarmStartKeys:
    """The warm start: SFT on the env's expert demonstrations of train tasks, before Stage 1 and RL
    (seed_rl/train/stage1/warm_start.py); cached, and merged into the weights like Stage 1."""

    warm_start: str = "none"  # none | expert
    warm_start_demos: int = 64  # expert episodes, on as many train tasks
    warm_start_epochs: int = 2
    warm_start_lr: float = 1e-3
    # the share of steps where the expert takes a random admissible action instead (its label at that
    # step stays the expert's), so that recovering from a mistake is demonstrated too
    warm_start_noise: float = 0.0
    warm_start_held_out: float = 0.1  # the share of demonstrations kept out of training, to measure the loss
    # every demonstration step also rendered with its episode's scripted hindsight skill in context
    # (as SEED's teacher pass injects one), so that the policy learns to act on a skill when there is one
    warm_start_skills: bool = False
    # the label of a pair with the skill of a won demonstration in context: "expert" (the expert's move,
    # as without the skill) or "taken" (the move the episode took, which its workflow skill names: with
    # warm_start_noise, where the episode took a random move, only the skill tells the label)
    warm_start_skill_labels: str = "expert"
    # the warm start's own seed (its demonstrations, LoRA init and shuffling), apart from the run's:
    # every training seed of a comparison then starts from the same adapter, its start row
    warm_start_seed: int = 0


@dataclass
class Stage1Keys:
    """Stage 1: SFT of the analyzer role."""

    sft: bool = False
    sft_source: str = "scripted"
    sft_tasks: int = 24
    sft_rollouts: int = 2
    sft_epochs: int = 3
    sft_lr: float = 1e-3
    sft_skill_words: int = 80  # the scripted skills' length cap (the analyzer prompt asks for < 80)
    sft_eval_trajectories: int = 8
    # expert steps of Stage 1's own training trajectories trained beside the skill pairs (a rehearsal
    # of the acting role, so that teaching the analyzer does not unlearn acting); 0: skill pairs only
    sft_acting_pairs: int = 0
    # true: Stage 1's adapter never reaches the acting policy; a copy of the starting weights with it
    # merged writes the skills, with the acting policy's RL adapters copied in before each skill pass
    # (seed_rl/train/stage1/skill_writer.py)
    sft_apart: bool = False
    sft_analyzer_url: str = ""  # OpenAI-compatible server for sft_source=external


@dataclass
class ScaleOutKeys:
    """Env workers, vLLM, and the data-parallel processes under torchrun."""

    workers: int = 0  # env workers; 0: in this process (or, with env_backend=ray, one Ray actor per core)
    env_backend: str = "process"  # where workers run: processes here, or Ray actors (seed_envs/vector)
    rollout_engine: str = "hf"  # what samples rollouts and skills: the learner's own model, or vLLM (synced)
    vllm_dtype: str = "bfloat16"
    vllm_memory_utilization: float = 0.5  # vLLM's gpu_memory_utilization (GPU share for weights + KV cache)
    fsdp: bool = False  # under torchrun: shard the learner's weights over the processes (needs rollout_engine=vllm)
    vllm_engines: int = 0  # 0: the engine in this process; N: N engines as Ray actors (a GPU each, where there are)


@dataclass
class EvaluationKeys:
    """How the run's policy is evaluated."""

    # every row of a table plays greedily (0), or at this temperature, whatever `temperature` the
    # rollouts sample at (seed_rl/evaluate/play.py says why)
    eval_temperature: float = 0.0


@dataclass
class RunKeys:
    """How long the run trains, from which seed, and what it writes."""

    updates: int = 10
    seed: int = 0
    run_dir: str = "runs/train"
    checkpoint_every: int = 1
    keep_checkpoints: int = 2
    progress: bool = True
    tensorboard: bool = False
    wandb: bool = False
    wandb_project: str = "seed"


# (a dataclass takes its bases' fields from the last base first: the keys come out in the order
# of SECTIONS, task first)
@dataclass
class TrainConfig(
    RunKeys,
    EvaluationKeys,
    ScaleOutKeys,
    Stage1Keys,
    WarmStartKeys,
    SeedKeys,
    LossKeys,
    OptimizationKeys,
    RolloutKeys,
    ModelKeys,
    TaskKeys,
):
    """Every setting of a training run, one flat set of keys made of the sections above. Defaults
    follow the paper where it gives one."""

    def validate(self) -> TrainConfig:
        """Each section's checks (:data:`SECTIONS`), in order; the first key refused raises."""
        for section in SECTIONS:
            section.check(self)
        return self

    @property
    def uses_opd(self) -> bool:
        return self.algo == "seed" and self.lambda_opd > 0

    @property
    def rescores(self) -> bool:
        """Old log-probs are re-scored on the learner where the sampler may differ from it (bf16
        weights, or vLLM), and the loss corrects for the sampler."""
        differs = self.dtype != "float32" or self.rollout_engine == "vllm"
        return self.rescore == "always" or (self.rescore == "auto" and differs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------ the checks
def _one_of(cfg: TrainConfig, **choices: tuple[Any, ...]) -> None:
    """Each key's value is one of the values given for it."""
    for key, allowed in choices.items():
        value = getattr(cfg, key)
        if value not in allowed:
            raise ConfigError(f"{key}={value!r} is not allowed; {key} must be one of: " + ", ".join(map(str, allowed)))


def _at_least(cfg: TrainConfig, bound: int, *keys: str) -> None:
    """Each key's value is ``>= bound``."""
    for key in keys:
        if getattr(cfg, key) < bound:
            raise ConfigError(f"{key}={getattr(cfg, key)!r} is not allowed; {key} must be >= {bound}")


def check_task(cfg: TrainConfig) -> None:
    _one_of(cfg, split=("train", "valid_seen", "valid_unseen"))
    _at_least(cfg, 0, "max_steps")
    if cfg.train_tasks < 0:
        raise ConfigError(
            f"train_tasks={cfg.train_tasks!r} is not allowed; train_tasks must be >= 0 (0: the whole split)"
        )
    if not 0 < cfg.train_fraction <= 1:
        raise ConfigError(f"train_fraction={cfg.train_fraction!r} is not allowed; train_fraction must be in (0, 1]")


def check_model(cfg: TrainConfig) -> None:
    _one_of(cfg, finetune=("lora", "full"), dtype=("auto", "float32", "bfloat16"), device=("cpu", "cuda", "auto"))
    if cfg.model.startswith("random:"):
        from seed_agent.random_models import PRESETS, preset_of

        try:
            preset_of(cfg.model)
        except KeyError:
            known = ", ".join(f"random:{p}" for p in PRESETS)
            raise ConfigError(f"model={cfg.model!r} is not allowed; the random presets are: {known}") from None
    elif not (cfg.model in ("smollm2", "tiny-random") or cfg.model.startswith("hf:")):
        raise ConfigError(
            f"model={cfg.model!r} is not allowed; model must be smollm2, tiny-random, random:PRESET or hf:PATH"
        )
    _at_least(cfg, 0, "lora_rank", "lora_alpha", "lora_layers", "threads")


def check_rollout(cfg: TrainConfig) -> None:
    from seed_agent.history import HISTORY_FORMATS

    _one_of(cfg, style=("act", "think"), reward=("return", "won", "score"), history_format=HISTORY_FORMATS)
    _at_least(cfg, 1, "tasks_per_update", "group_size", "max_new_tokens", "sample_batch_size", "max_rollout_rounds")
    _at_least(cfg, 0, "penalty", "temperature", "top_k")
    if cfg.temperature == 0:
        raise ConfigError("temperature=0 is not allowed for training; GRPO needs sampled groups (use > 0)")


def check_optimization(cfg: TrainConfig) -> None:
    _at_least(cfg, 1, "minibatches", "epochs", "token_budget")
    _at_least(cfg, 0, "lr", "micro_batch_rows", "weight_decay", "grad_clip")
    if not cfg.memory_budget_gb > 0:
        raise ConfigError(
            f"memory_budget_gb={cfg.memory_budget_gb!r} is not allowed; memory_budget_gb must be > 0 "
            "(GB for the weights, the optimizer state and one training micro-batch)"
        )
    if cfg.minibatches > cfg.tasks_per_update * cfg.group_size:
        raise ConfigError(
            f"minibatches={cfg.minibatches} exceeds the {cfg.tasks_per_update * cfg.group_size} "
            "trajectories of an update"
        )


def check_loss(cfg: TrainConfig) -> None:
    _one_of(
        cfg,
        algo=("grpo", "seed"),
        advantage=("grpo", "gigpo"),
        rescore=("auto", "always", "never"),
        is_mode=("truncate", "mask"),
        loss_agg=("token-mean", "trajectory-mean"),
    )
    _at_least(cfg, 0, "clip_low", "clip_high", "kl_coef", "step_advantage_w", "is_cap")
    if not 0 <= cfg.gamma <= 1:
        raise ConfigError(f"gamma={cfg.gamma!r} is not allowed; gamma must be in [0, 1]")


def check_seed(cfg: TrainConfig) -> None:
    _one_of(cfg, skills=("on-policy", "static-library"))
    if not (cfg.analyzer in ANALYZERS or is_external_analyzer(cfg.analyzer)):
        raise ConfigError(
            f"analyzer={cfg.analyzer!r} is not allowed; analyzer must be one of: "
            + ", ".join(ANALYZERS)
            + ", or http(s)://HOST:PORT[#MODEL] (an OpenAI-compatible server)"
        )
    _at_least(cfg, 1, "library_updates", "analyzer_max_new_tokens")
    _at_least(cfg, 0, "lambda_opd", "beta_opd", "max_step_skills", "skill_reserve_tokens")


def check_warm_start(cfg: TrainConfig) -> None:
    _one_of(cfg, warm_start=("none", "expert"))
    if cfg.warm_start == "none":
        return
    if cfg.split != "train":
        raise ConfigError(
            f"warm_start={cfg.warm_start} on split={cfg.split!r} is refused: demonstrations come from "
            "train tasks only, so that evaluation on the valid splits stays unseen (set split=train)"
        )
    if cfg.warm_start_demos < 2 or cfg.warm_start_epochs < 1:
        raise ConfigError(
            f"warm_start_demos={cfg.warm_start_demos} and warm_start_epochs={cfg.warm_start_epochs} are not "
            "allowed; warm_start_demos must be >= 2 (one is held out) and warm_start_epochs >= 1"
        )
    for key in ("warm_start_noise", "warm_start_held_out"):
        if not 0 <= getattr(cfg, key) < 1:
            raise ConfigError(f"{key}={getattr(cfg, key)!r} is not allowed; {key} must be in [0, 1)")
    if not cfg.warm_start_lr > 0:
        raise ConfigError(f"warm_start_lr={cfg.warm_start_lr!r} is not allowed; warm_start_lr must be > 0")
    _one_of(cfg, warm_start_skill_labels=("expert", "taken"))
    if cfg.warm_start_skill_labels == "taken" and not (cfg.warm_start_skills and cfg.warm_start_noise > 0):
        raise ConfigError(
            "warm_start_skill_labels=taken needs warm_start_skills=true and warm_start_noise > 0: without "
            "the skill pairs or the random moves, every taken move is the expert's and nothing changes"
        )


def check_stage1(cfg: TrainConfig) -> None:
    _one_of(cfg, sft_source=("scripted", "external"))
    _at_least(cfg, 1, "sft_tasks", "sft_rollouts", "sft_epochs")
    _at_least(cfg, 0, "sft_eval_trajectories", "sft_acting_pairs")
    if cfg.sft_apart and not (cfg.sft and cfg.finetune == "lora" and cfg.analyzer == "self" and not cfg.fsdp):
        raise ConfigError(
            f"sft_apart=true needs sft=true, finetune=lora, analyzer=self and fsdp=false (given: sft={cfg.sft}, "
            f"finetune={cfg.finetune}, analyzer={cfg.analyzer}, fsdp={cfg.fsdp}): it keeps Stage 1's adapter in "
            "a skill writer of its own, which takes the acting policy's LoRA adapters before each skill pass"
        )


def check_scale_out(cfg: TrainConfig) -> None:
    _one_of(
        cfg,
        env_backend=("process", "ray"),
        rollout_engine=("hf", "vllm"),
        vllm_dtype=("bfloat16", "float16", "float32"),
    )
    _at_least(cfg, 0, "workers", "vllm_engines")
    if cfg.fsdp and (cfg.rollout_engine != "vllm" or cfg.analyzer == "frozen-initial"):
        raise ConfigError(
            "fsdp=true needs rollout_engine=vllm and an analyzer other than frozen-initial: sharded "
            "weights are gathered in every pass, so the processes must run the same passes, and "
            "sampling on the learner does not"
        )
    if cfg.rollout_engine == "vllm" and (cfg.model == "tiny-random" or cfg.model.startswith("random:")):
        raise ConfigError(
            f"rollout_engine=vllm needs a model on disk: model={cfg.model} is built in memory; use smollm2 or hf:PATH"
        )


def check_evaluation(cfg: TrainConfig) -> None:
    _at_least(cfg, 0, "eval_temperature")


def check_run(cfg: TrainConfig) -> None:
    _at_least(cfg, 1, "updates", "checkpoint_every", "keep_checkpoints")


@dataclass(frozen=True)
class Section:
    """A group of keys (a dataclass whose fields they are) and the function that checks them
    (it may read keys of other sections: ``fsdp`` needs ``rollout_engine=vllm``)."""

    name: str
    keys: type
    check: Callable[[TrainConfig], None]


#: The sections, in the order the keys are listed and checked.
SECTIONS: tuple[Section, ...] = (
    Section("task", TaskKeys, check_task),
    Section("model", ModelKeys, check_model),
    Section("rollout", RolloutKeys, check_rollout),
    Section("optimization", OptimizationKeys, check_optimization),
    Section("loss", LossKeys, check_loss),
    Section("seed", SeedKeys, check_seed),
    Section("warm start", WarmStartKeys, check_warm_start),
    Section("stage 1", Stage1Keys, check_stage1),
    Section("scale-out", ScaleOutKeys, check_scale_out),
    Section("evaluation", EvaluationKeys, check_evaluation),
    Section("run", RunKeys, check_run),
)


# ------------------------------------------------------------------------------------ reading
def config_path(name_or_path: str) -> Path:
    """A config file: an existing path, or a name (``sokoban_seed``) shipped in ``seed_rl/configs``."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = CONFIG_DIR / (path.name if path.suffix else f"{path.name}.yaml")
    if shipped.is_file():
        return shipped
    known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
    raise ConfigError(f"no config file {name_or_path!r}; shipped configs: {known}")


def load_config(
    name_or_path: str | None = None, overrides: list[str] | tuple[str, ...] = (), base: dict[str, Any] | None = None
) -> TrainConfig:
    """The config from a file (or the defaults), then ``base`` (a dict), then ``key=value`` overrides."""
    import yaml

    values: dict[str, Any] = {}
    if name_or_path is not None:
        path = config_path(name_or_path)
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path} must hold a mapping of keys to values")
        values.update(loaded)
    values.update(base or {})
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"overrides are key=value, got {item!r}")
        values[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
    return from_dict(values)


def from_dict(values: dict[str, Any]) -> TrainConfig:
    """A validated config from a mapping; unknown keys and wrongly typed values are refused."""
    fields = {f.name: f for f in dataclasses.fields(TrainConfig)}
    hints = typing.get_type_hints(TrainConfig)
    kwargs = {}
    for key, value in values.items():
        if key not in fields:
            near = difflib.get_close_matches(key, fields, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise ConfigError(f"unknown config key {key!r}{hint}; allowed keys: {', '.join(fields)}")
        kwargs[key] = _coerce(key, value, hints[key])
    return TrainConfig(**kwargs).validate()


def _coerce(key: str, value: Any, hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
        origin = typing.get_origin(hint)
    expected = origin or hint
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is float and isinstance(value, str):  # YAML reads 1e-3 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            pass
    if expected is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if expected is list and isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    if (expected is int and isinstance(value, bool)) or not isinstance(value, expected):
        raise ConfigError(f"{key}={value!r} is not allowed; {key} must be a {expected.__name__}")
    return value
