"""The warm start: supervised fine-tuning on the env's expert demonstrations, before RL.

A small model that never wins gives GRPO nothing to compare (every group ties at 0). The usual
way out, as in behaviour cloning before RL, is to fine-tune on demonstrations first:

1. the env's expert (:class:`~seed_rl.train.stage1.expert.NoisyExpertAgent`) plays
   ``warm_start_demos`` **train** tasks (never a valid split), taking a random admissible
   action at rate ``warm_start_noise``, so that recovering from a mistake is demonstrated;
2. every step is rendered by the run's own prompt builder, action style and history length,
   within the prompt budget the trainer gives a SEED run (whole history turns are cut, oldest
   first, where a prompt would not fit: counted); the label of a step is the reply that takes
   the **expert's** action from that state, also where the step's own action was a random one;
3. with ``warm_start_skills``, every step is rendered a second time with a hindsight skill in
   context: the scripted annotator's skill of the demonstration's own episode
   (:func:`~seed_agent.skills.annotate.annotate`), injected as SEED's teacher pass injects one
   (``h_skill``, :func:`~seed_agent.skills.inject.inject_within_budget`). The model then also
   learns to act on a skill when one is there: SEED's premise, that the policy with a skill in
   context (the teacher) acts better than without (the student), is made true the same way for
   every arm that starts from the adapter. With ``warm_start_skill_labels=taken`` the label of a
   skill pair of a **won** demonstration is the move the episode took, which its workflow skill
   names, not the expert's: where ``warm_start_noise`` made the episode take a random move, the
   observation does not tell that label and only the skill does, so reading the skill lowers the
   loss (with expert labels it never does: the expert's move is a function of the observation);
4. the policy is fine-tuned on (prompt, reply) pairs, LoRA by default
   (:mod:`seed_rl.train.stage1.supervised`), with a share of the demonstrations held out to measure
   the demonstration loss before and after.

The adapter is cached under a key of everything that determines it, and merged into the
weights: RL (and Stage 1, which composes on top) starts from the warm-started model, which is
also the KL reference.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.hf import TransformersPolicy
from seed_agent.prompts import PromptBuilder
from seed_agent.skills import Skill, SkillResult, inject_within_budget
from seed_agent.skills.annotate import annotate
from seed_envs.files import atomic_write_text
from seed_envs.paths import cache_dir
from seed_envs.vector import make_vec
from seed_rl.config import TrainConfig
from seed_rl.progress import bar
from seed_rl.rollout import Episode, EpisodeStart, run_episodes
from seed_rl.train.learner.learner import Learner
from seed_rl.train.setup.run_setup import (
    ADAPTER_KEYS,
    run_env_kwargs,
    run_prompt_builder,
    settings_key,
    train_task_pool,
)
from seed_rl.train.stage1.expert import NoisyExpertAgent
from seed_rl.train.stage1.supervised import CachedAdapter, adapter_learner, fit_rows, mean_nll, pair_rows

ADAPTER_FILE = "warm_start_adapter.safetensors"
REPORT_FILE = "warm_start_report.json"
#: Bumped when the demonstrations' rendering changes, so that older adapters are not reused.
DEMONSTRATION_FORMAT = 1
#: Envs played at once while collecting demonstrations.
MAX_DEMO_ENVS = 32


@dataclass
class Demonstrations:
    """The (prompt, reply) pairs of some expert episodes, and what building them dropped or cut."""

    pairs: list[tuple[ChatPrompt, str]] = field(default_factory=list)
    #: The task of each pair (held-out pairs are whole tasks).
    tasks: list[str] = field(default_factory=list)
    steps: int = 0
    #: Steps whose label is the expert's action where the step itself took a random one.
    noisy_steps: int = 0
    #: Steps whose prompt lost whole history turns to fit the prompt budget.
    cut_steps: int = 0
    #: Steps left out: no expert action from that state, or a reply longer than ``max_new_tokens``.
    unlabelled_steps: int = 0
    long_replies: int = 0
    #: Pairs rendered with the demonstration's skill in context (``warm_start_skills``).
    skill_pairs: int = 0
    #: Steps whose prompt could not take the skill within the context (rendered without it only).
    skill_cut_steps: int = 0
    #: Skill pairs labelled with the step's own (random) move instead of the expert's
    #: (``skill_labels="taken"``): the pairs whose label only the skill tells.
    skill_labels_taken: int = 0

    def counts(self) -> dict[str, int]:
        return {
            "steps": self.steps,
            "pairs": len(self.pairs),
            "noisy_steps": self.noisy_steps,
            "cut_steps": self.cut_steps,
            "unlabelled_steps": self.unlabelled_steps,
            "long_replies": self.long_replies,
            "skill_pairs": self.skill_pairs,
            "skill_cut_steps": self.skill_cut_steps,
            "skill_labels_taken": self.skill_labels_taken,
        }


#: ``inject_skill(h, skill, step)``: ``h_skill`` for step ``step``, or None where it does not fit.
SkillInjector = Callable[[ChatPrompt, Skill, int], "ChatPrompt | None"]


def warm_start_config(cfg: TrainConfig) -> TrainConfig:
    """The run's config as the warm start sees it: seeded by ``warm_start_seed``, not by the run's
    ``seed``, so that every training seed (and both arms) of a config start from one adapter."""
    return replace(cfg, seed=cfg.warm_start_seed)


def warm_start_key(cfg: TrainConfig) -> str:
    """A hash of every setting that determines the warm-start adapter (the run's seed is not one:
    ``warm_start_seed`` stands in its place)."""
    keys = (
        *ADAPTER_KEYS,
        "train_tasks",
        "train_fraction",
        "history_length",
        "visual",
        "skill_reserve_tokens",
        "finetune",
        "warm_start",
        "warm_start_demos",
        "warm_start_epochs",
        "warm_start_lr",
        "warm_start_noise",
        "warm_start_held_out",
    )
    extra: dict[str, Any] = {"format": DEMONSTRATION_FORMAT}
    if cfg.warm_start_skills:  # (only when on: the adapters of earlier configs keep their keys)
        extra["skills"] = {"words": cfg.sft_skill_words}
        if cfg.warm_start_skill_labels != "expert":
            extra["skills"]["labels"] = cfg.warm_start_skill_labels
    return settings_key(warm_start_config(cfg), keys, extra)


def demonstration_builder(cfg: TrainConfig, learner: Learner) -> PromptBuilder:
    """The run's prompt builder, within the prompt budget a SEED run's rollouts get (the tighter
    of the two arms', so that a GRPO run and a SEED run of the same config share the adapter)."""
    budget = learner.context_length - cfg.max_new_tokens - cfg.skill_reserve_tokens
    return run_prompt_builder(cfg, learner.count_tokens, budget)


def play_demonstrations(cfg: TrainConfig, builder: PromptBuilder, count: int) -> list[Episode]:
    """``count`` episodes of the noisy expert on distinct train tasks (where the pool has as many)."""
    if cfg.split != "train":
        raise ValueError(f"demonstrations come from train tasks only; split={cfg.split!r} is an evaluation split")
    kwargs = run_env_kwargs(cfg, "train")
    rng = np.random.default_rng([cfg.seed, 20_000])
    with make_vec(cfg.env, min(count, MAX_DEMO_ENVS), backend="sync", **kwargs) as vec:
        pool = train_task_pool(cfg, vec.call("task_count", "train", env_ids=[0])[0])
        indices = [int(i) for i in rng.choice(pool, size=count, replace=pool < count)]
        starts = [EpisodeStart(options={"split": "train", "index": i}, group=k) for k, i in enumerate(indices)]
        agent = NoisyExpertAgent(builder, (cfg.warm_start_noise,), cfg.seed, env_id=cfg.env)
        with torch.no_grad(), bar(len(starts), "warm start demonstrations", cfg.progress) as progress:
            return run_episodes(
                vec,
                agent,
                starts,
                env_id=cfg.env,
                penalty=cfg.penalty,
                record_expert=True,
                on_episode_end=lambda _: progress.update(1),
            )


def demonstration_skills(episodes: Sequence[Episode], max_words: int) -> list[SkillResult]:
    """The scripted annotator's hindsight skill of each demonstration: the workflow of a won
    episode, the avoidance rules of a lost one (the expert's actions are recorded on its steps)."""
    return [annotate(e.trajectory(), e.expert_plan, max_words) for e in episodes]


def skill_injector(count_tokens: Callable[[ChatPrompt], int], max_prompt_tokens: int) -> SkillInjector:
    """``h_skill`` as SEED's teacher pass builds it, within ``max_prompt_tokens``; None where even
    the shortest skill does not fit."""

    def inject_skill(h: ChatPrompt, skill: Skill, step: int) -> ChatPrompt | None:
        prompt, injected = inject_within_budget(h, skill, count_tokens, max_prompt_tokens, step=step)
        return prompt if injected is not None else None

    return inject_skill


def demonstration_pairs(
    episodes: Sequence[Episode],
    builder: PromptBuilder,
    *,
    count_reply_tokens: Callable[[str], int],
    max_new_tokens: int,
    skills: Sequence[SkillResult | None] | None = None,
    inject_skill: SkillInjector | None = None,
    skill_labels: str = "expert",
) -> Demonstrations:
    """Each labelled step of ``episodes`` as (the prompt the policy read, the expert's reply after
    the prompt's prefill); with ``skills`` (one per episode) and ``inject_skill``, each such step
    also as (that prompt with its episode's skill in context, the same reply, or with
    ``skill_labels="taken"`` in a won episode, the reply of the step's own action). The counts say
    what was cut or left out."""
    if skills is not None and (inject_skill is None or len(skills) != len(episodes)):
        raise ValueError("skills needs inject_skill and one skill (or None) per episode")
    if skill_labels not in ("expert", "taken"):
        raise ValueError(f"skill_labels must be 'expert' or 'taken', got {skill_labels!r}")
    demos = Demonstrations()

    def reply_after_prefill(prompt: ChatPrompt, action: str) -> str | None:
        reply = builder.reply(action)
        if not reply.startswith(prompt.prefill):
            raise ValueError(f"the reply {reply!r} does not start with the prefill {prompt.prefill!r}")
        reply = reply[len(prompt.prefill) :]
        return reply if count_reply_tokens(reply) <= max_new_tokens else None

    for k, episode in enumerate(episodes):
        skill = skills[k] if skills is not None else None
        taken_labels = skill_labels == "taken" and episode.won
        for row in episode.rows:
            demos.steps += 1
            if row.expert_action is None or row.prompt is None:
                demos.unlabelled_steps += 1
                continue
            reply = reply_after_prefill(row.prompt, row.expert_action)
            if reply is None:
                demos.long_replies += 1
                continue
            demos.noisy_steps += row.action != row.expert_action
            shown = row.prompt.meta.get("history_turns", 0)
            demos.cut_steps += shown < min(row.step - 1, builder.history_length)
            demos.pairs.append((row.prompt, reply))
            demos.tasks.append(episode.task_id)
            if isinstance(skill, Skill) and inject_skill is not None:
                h_skill = inject_skill(row.prompt, skill, row.step)
                if h_skill is None:
                    demos.skill_cut_steps += 1
                    continue
                skill_reply = reply_after_prefill(row.prompt, row.action) if taken_labels else reply
                if skill_reply is None:
                    demos.long_replies += 1
                    continue
                demos.skill_labels_taken += skill_reply != reply
                demos.pairs.append((h_skill, skill_reply))
                demos.tasks.append(episode.task_id)
                demos.skill_pairs += 1
    return demos


def held_out_split(demos: Demonstrations, share: float) -> tuple[list[int], list[int]]:
    """Pair indices (train, held out): the pairs of the last ``share`` of the tasks are held out
    (at least one task, where there are two)."""
    tasks = list(dict.fromkeys(demos.tasks))
    n_held = min(len(tasks) - 1, max(1, round(share * len(tasks)))) if share > 0 else 0
    held = set(tasks[len(tasks) - n_held :]) if n_held > 0 else set()
    train = [i for i, t in enumerate(demos.tasks) if t not in held]
    return train, [i for i, t in enumerate(demos.tasks) if t in held]


def run_warm_start(
    cfg: TrainConfig, policy: TransformersPolicy, run_dir: Path | None = None, *, write_report: bool = True
) -> dict[str, Any]:
    """Train (or load from the cache, else from ``run_dir``'s own copy) the warm-start adapter and
    merge it into ``policy.model``; returns the report (demonstrations, held-out loss before and
    after, seconds, cached or not), also written into ``run_dir`` unless ``write_report`` is false."""
    if cfg.warm_start != "expert":
        raise ValueError(f"warm_start={cfg.warm_start!r}: nothing to run (the warm start is warm_start=expert)")
    started = time.perf_counter()
    cfg = warm_start_config(cfg)
    cache = CachedAdapter(cache_dir("warm_start", warm_start_key(cfg)), ADAPTER_FILE, REPORT_FILE)
    with torch.random.fork_rng():  # the adapter's init is the warm start's; the run's RNG is untouched
        torch.manual_seed(cfg.seed)
        learner = adapter_learner(cfg, policy, cfg.warm_start_lr)
        report = cache.load(learner, run_dir)
        if report is not None:
            print(f"warm start: adapter loaded from {report['loaded_from']}", flush=True)
        else:
            report = _train(cfg, policy, learner, started)
            cache.save(learner, report)
    policy.model = learner.peft_model.merge_and_unload()
    if run_dir is not None and write_report:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / REPORT_FILE, json.dumps(report, indent=1))
    return report


def _train(cfg: TrainConfig, policy: TransformersPolicy, learner: Learner, started: float) -> dict[str, Any]:
    builder = demonstration_builder(cfg, learner)
    episodes = play_demonstrations(cfg, builder, cfg.warm_start_demos)
    skills = demonstration_skills(episodes, cfg.sft_skill_words) if cfg.warm_start_skills else None
    demos = demonstration_pairs(
        episodes,
        builder,
        count_reply_tokens=policy.count_text_tokens,
        max_new_tokens=cfg.max_new_tokens,
        skills=skills,
        inject_skill=skill_injector(learner.count_tokens, learner.context_length - cfg.max_new_tokens),
        skill_labels=cfg.warm_start_skill_labels,
    )
    if not demos.pairs:
        counts = demos.counts()
        raise ValueError(f"the expert's {len(episodes)} episodes of {cfg.env} gave no demonstration step ({counts})")
    train_idx, held_idx = held_out_split(demos, cfg.warm_start_held_out)
    rows = pair_rows(learner, policy, demos.pairs, reuse_frozen_states=cfg.reuse_frozen_states)
    train_rows = [rows[i] for i in train_idx]
    held_rows = [rows[i] for i in held_idx]
    before = mean_nll(learner, held_rows)
    losses = fit_rows(
        learner,
        train_rows,
        epochs=cfg.warm_start_epochs,
        rng_seed=cfg.seed,
        label="warm start sft",
        progress=cfg.progress,
    )
    after = mean_nll(learner, held_rows)
    report = {
        "env": cfg.env,
        "episodes": len(episodes),
        "expert_success": float(np.mean([e.won for e in episodes])),
        **demos.counts(),
        "train_pairs": len(train_rows),
        "held_out_pairs": len(held_rows),
        "held_out_loss_before": before,
        "held_out_loss_after": after,
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "seconds": time.perf_counter() - started,
        "cached": False,
    }
    loss_text = "" if before is None else f"; held-out demonstration loss {before:.3f} -> {after:.3f}"
    skill_text = ""
    if skills is not None:
        skill_text = f" (of all {len(demos.pairs)} pairs, {demos.skill_pairs} with their episode's skill in context"
        if demos.skill_labels_taken:
            skill_text += f", {demos.skill_labels_taken} labelled with the move the skill names"
        skill_text += ")"
    print(
        f"warm start: {len(train_rows)} expert steps{skill_text} from {len(episodes)} train episodes (expert success "
        f"{report['expert_success']:.0%}, {demos.cut_steps} prompts cut by whole turns, {demos.noisy_steps} "
        f"noisy steps){loss_text} ({report['seconds']:.0f} s)",
        flush=True,
    )
    return report
