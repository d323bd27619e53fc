"""Stage 1: teach the policy the analyzer's job (SFT on trajectory -> skill pairs).

The paper fine-tunes the policy on 180 tasks x 8 rollouts, 3 epochs, lr 5e-6, with pairs
written by a strong external analyzer. Here:

- **trajectories** come from the policy itself (its own reply format and mistakes) and
  from a noisy expert (the env's plan, with random actions mixed in), so that both
  outcomes appear; both record the expert's next action at every step;
- **skills** come from the offline scripted annotator (:mod:`seed_agent.skills.annotate`,
  ``sft_source=scripted``), or from an OpenAI-compatible analyzer (``sft_source=external``,
  ``sft_analyzer_url``);
- the **loss** is the token mean of ``-log pi(skill JSON | analyzer prompt)`` (LoRA), with
  ``sft_acting_pairs`` of the trajectories' expert steps trained beside the skills where set:
  one policy plays both roles, and on a warm-started policy the analyzer pairs alone
  unlearn acting (ALFWorld, sft_lr 1e-3: the expert actions' loss 0.14 -> 0.69 nats per token);
- the analyzer's **parse rate** is measured before and after, greedy, on trajectories of
  held-out tasks (the ``valid_seen`` split);
- the trained adapter is **cached** (keyed by everything that determines it) and merged
  into the weights, so RL starts from the Stage-1 model, which is also the KL reference.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_agent.agent import LLMAgent
from seed_agent.policies.hf import TransformersPolicy
from seed_agent.prompts import PromptBuilder
from seed_agent.skills import Skill
from seed_agent.skills.analyzer import ANALYZER_PROMPT_VERSION
from seed_agent.skills.annotate import annotate, fit_summary, skill_json
from seed_agent.skills.quality import mentions_trajectory
from seed_envs.files import atomic_write_text
from seed_envs.paths import cache_dir
from seed_envs.vector import make_vec
from seed_rl.config import TrainConfig
from seed_rl.progress import bar
from seed_rl.records.rows import ScoreRow
from seed_rl.rollout import Episode, EpisodeStart, run_episodes
from seed_rl.train.learner.learner import Learner
from seed_rl.train.phases.phase_timer import PhaseTimer
from seed_rl.train.phases.skill_pass import AnalyzerSettings, external_analyzer, write_skills
from seed_rl.train.setup.run_setup import (
    ADAPTER_KEYS,
    UNBOUNDED_TASKS,
    run_env_kwargs,
    run_prompt_builder,
    run_sampling,
    settings_key,
    train_task_pool,
)
from seed_rl.train.stage1.expert import NoisyExpertAgent
from seed_rl.train.stage1.supervised import CachedAdapter, adapter_learner, fit_rows, mean_nll, pair_rows
from seed_rl.train.stage1.warm_start import demonstration_pairs, warm_start_key

#: Random-action rates of the noisy expert, cycled over its episodes.
NOISE_LEVELS = (0.0, 0.25, 0.5, 0.75)
ADAPTER_FILE = "stage1_adapter.safetensors"
REPORT_FILE = "stage1_report.json"


@dataclass
class Stage1Data:
    train: list[Episode]
    held_out: list[Episode]


def stage1_key(cfg: TrainConfig) -> str:
    """A hash of every setting that determines the Stage-1 adapter."""
    keys = (
        *ADAPTER_KEYS,
        "temperature",
        "sft_source",
        "sft_tasks",
        "sft_rollouts",
        "sft_epochs",
        "sft_lr",
        "sft_skill_words",
        "step_skills",
        "analyzer_prefill",
        "analyzer_max_new_tokens",
        "analyzer_repetition_penalty",
    )
    extra: dict[str, Any] = {}
    # keys added later count only when set, so that adapters cached before them keep their keys
    for key, default in (("train_tasks", 0), ("train_fraction", 1.0), ("sft_acting_pairs", 0)):
        if getattr(cfg, key) != default:
            extra[key] = getattr(cfg, key)
    extra["analyzer_prompt"] = ANALYZER_PROMPT_VERSION  # adapters of an earlier prompt are not reused
    extra["summaries_fit"] = True  # replies shortened to the analyzer's budget (skill_pairs): older adapters were not
    if cfg.warm_start != "none":  # Stage 1 then trains on top of the warm-started model
        extra["warm_start"] = warm_start_key(cfg)
    return settings_key(cfg, keys, extra)


def run_stage1(cfg: TrainConfig, policy: TransformersPolicy, run_dir: Path) -> dict[str, Any]:
    """Train (or load from the cache) the Stage-1 adapter and merge it into ``policy.model``;
    returns the report (parse rates before and after, pairs, seconds, whether it was cached)."""
    started = time.perf_counter()
    cache = CachedAdapter(cache_dir("stage1", stage1_key(cfg)), ADAPTER_FILE, REPORT_FILE)
    learner = adapter_learner(cfg, policy, cfg.sft_lr)
    settings = replace(AnalyzerSettings.from_config(cfg), failed_only=False)  # Stage 1 measures every episode
    report = cache.load(learner, run_dir)
    if report is not None:
        print(
            f"Stage 1: adapter loaded from {report['loaded_from']} (parse rate {report['parse_rate_before']:.2f} -> "
            f"{report['parse_rate_after']:.2f} when it was trained)",
            flush=True,
        )
    else:
        timer = PhaseTimer(cfg.device)
        with timer("rollouts"):
            data = collect_stage1_data(cfg, policy)
        pairs = skill_pairs(cfg, data.train, settings, policy.count_text_tokens)
        long_replies, longest = replies_over_budget(pairs, policy.count_text_tokens, settings)
        if long_replies:
            print(long_replies_warning(long_replies, len(pairs), longest, settings.max_new_tokens), flush=True)
        with timer("parse_rate"):
            before = analyzer_parse_rate(policy, data.held_out, settings)
        with timer("acting_loss"):
            acting = acting_rows(cfg, learner, policy, data.held_out)
            acting_before = mean_nll(learner, acting)
        print(
            f"Stage 1: {len(pairs)} pairs from {len(data.train)} trajectories; analyzer parse rate before "
            f"{before['parse_rate']:.2f} on {len(data.held_out)} held-out trajectories",
            flush=True,
        )
        with timer("sft"):
            rehearsal = rehearsal_rows(cfg, learner, policy, data.train)
            losses = fit(learner, policy, pairs, cfg, rehearsal)
        with timer("parse_rate"):
            after = analyzer_parse_rate(policy, data.held_out, settings)
        with timer("acting_loss"):
            acting_after = mean_nll(learner, acting)
        report = {
            "pairs": len(pairs),
            "acting_pairs": len(rehearsal),
            "long_replies": long_replies,
            "trajectories": len(data.train),
            "held_out": len(data.held_out),
            "train_success": float(np.mean([e.won for e in data.train])) if data.train else 0.0,
            "parse_rate_before": before["parse_rate"],
            "parse_rate_after": after["parse_rate"],
            "mentions_before": before["mentions"],
            "mentions_after": after["mentions"],
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None,
            "examples_after": after["examples"],
            "acting_loss_before": acting_before,
            "acting_loss_after": acting_after,
            "seconds": time.perf_counter() - started,
            "phase_seconds": {phase: round(s, 2) for phase, s in timer.seconds.items()},
            "cached": False,
        }
        cache.save(learner, report)
        print(
            f"Stage 1: analyzer parse rate {before['parse_rate']:.2f} -> {after['parse_rate']:.2f}, skills "
            f"naming the trajectory's objects or actions {after['mentions']:.2f} ({report['seconds']:.0f} s)",
            flush=True,
        )
        warning = acting_loss_warning(acting_before, acting_after)
        if warning:
            print(warning, flush=True)
    policy.model = learner.peft_model.merge_and_unload()
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / REPORT_FILE, json.dumps(report, indent=1))
    return report


def collect_stage1_data(cfg: TrainConfig, policy: TransformersPolicy) -> Stage1Data:
    """Trajectories of train tasks (for the pairs) and of held-out ``valid_seen`` tasks (to measure)."""
    train = _episodes(cfg, policy, run_prompt_builder(cfg), "train", cfg.sft_tasks, cfg.sft_rollouts, offset=0)
    return Stage1Data(train, held_out_episodes(cfg, policy, cfg.sft_eval_trajectories))


def held_out_episodes(cfg: TrainConfig, policy: TransformersPolicy, n: int, offset: int = 1) -> list[Episode]:
    """About ``n`` trajectories of ``valid_seen`` tasks to measure the analyzer on: half the
    policy's own, half a noisy expert's, on the same tasks."""
    return _episodes(cfg, policy, run_prompt_builder(cfg), "valid_seen", max(1, n // 2), 2, offset=offset)


def _episodes(
    cfg: TrainConfig,
    policy: TransformersPolicy,
    builder: PromptBuilder,
    split: str,
    tasks: int,
    rollouts: int,
    offset: int,
) -> list[Episode]:
    kwargs = run_env_kwargs(cfg, split)
    rng = np.random.default_rng([cfg.seed, 10_000 + offset])
    per_kind = max(1, rollouts // 2)
    with make_vec(cfg.env, min(tasks * per_kind, 32), backend="sync", **kwargs) as vec:
        available = vec.call("task_count", split, env_ids=[0])[0]
        # Stage 1's training pairs come from the run's training pool, its held-out ones from their split
        count = train_task_pool(cfg, available) if split == cfg.split else available or UNBOUNDED_TASKS
        indices = [int(i) for i in rng.choice(count, size=tasks, replace=count < tasks)]
        starts = [
            EpisodeStart(options={"split": split, "index": i}, group=k)
            for k, i in enumerate(indices)
            for _ in range(per_kind)
        ]
        sampling = run_sampling(cfg, sampling_seed=cfg.seed * 31 + offset)
        with torch.no_grad(), bar(2 * len(starts), f"stage 1 rollouts ({split})", cfg.progress) as progress:
            own = run_episodes(
                vec,
                LLMAgent(policy, builder, sampling),
                starts,
                env_id=cfg.env,
                penalty=cfg.penalty,
                record_expert=True,
                on_episode_end=lambda _: progress.update(1),
            )
            noisy = NoisyExpertAgent(builder, NOISE_LEVELS, cfg.seed + offset, env_id=cfg.env)
            expert = run_episodes(
                vec,
                noisy,
                starts,
                env_id=cfg.env,
                penalty=cfg.penalty,
                record_expert=True,
                on_episode_end=lambda _: progress.update(1),
            )
    return own + expert


def skill_pairs(
    cfg: TrainConfig,
    episodes: Sequence[Episode],
    settings: AnalyzerSettings,
    count_tokens: Callable[[str], int] | None = None,
) -> list[tuple[Any, str]]:
    """(analyzer prompt, reply) pairs; the reply is the skill JSON after the prompt's prefill. With
    ``count_tokens`` (the policy's tokenizer), a reply longer than the analyzer may write
    (``settings.max_new_tokens``) has its summary shortened until it fits (:func:`fit_summary`), so
    that the analyzer learns replies it can close; the skill's own text is never cut."""
    if cfg.sft_source == "external":
        if not cfg.sft_analyzer_url:
            raise ValueError("sft_source=external needs sft_analyzer_url (an OpenAI-compatible server)")
        skills, _ = write_skills(
            episodes, source="policy", settings=settings, policy=external_analyzer(cfg.sft_analyzer_url)
        )
    else:
        skills = [annotate(e.trajectory(), e.expert_plan, max_words=cfg.sft_skill_words) for e in episodes]
    pairs = []
    for episode, skill in zip(episodes, skills, strict=True):
        if not isinstance(skill, Skill):
            continue
        prompt = settings.prompt(episode)

        def reply(skill: Skill, prefill: str = prompt.prefill) -> str:
            target = skill_json(skill, step_skills=settings.step_skills)
            if not target.startswith(prefill):
                raise ValueError(f"the skill JSON does not start with the analyzer prefill {prefill!r}")
            return target[len(prefill) :]

        if count_tokens is not None:
            skill = fit_summary(skill, lambda s: count_tokens(reply(s)) <= settings.max_new_tokens)
        pairs.append((prompt, reply(skill)))
    return pairs


def replies_over_budget(
    pairs: Sequence[tuple[Any, str]], count_tokens: Callable[[str], int], settings: AnalyzerSettings
) -> tuple[int, int]:
    """How many replies are longer than the analyzer may write (``settings.max_new_tokens``), and the
    longest reply's token count. A reply the analyzer cannot finish in its budget teaches a JSON object
    it may never close: on ALFWorld at 64 tokens (10 of 12 replies longer) Stage 1 took the parse rate
    from 0.25 to 0.00. :func:`skill_pairs` shortens a long reply's summary first (on the demo, 6 of 16
    replies were 70-77 tokens against 64, failures whose summary's third sentence repeats the wrong
    move their skill names; without it the longest was 58); what is still too long is counted and
    warned about, not left out."""
    lengths = [count_tokens(reply) for _, reply in pairs]
    return sum(n > settings.max_new_tokens for n in lengths), max(lengths, default=0)


def long_replies_warning(count: int, pairs: int, longest: int, max_new_tokens: int) -> str:
    """What Stage 1 prints when ``count`` of its ``pairs`` skill replies are longer than the analyzer
    may write even with their summaries shortened: the fact and the keys that fix it."""
    return (
        f"warning: {count} of {pairs} Stage-1 skill replies are longer than the analyzer may write, even with "
        f"their summary cut to one sentence: the longest is {longest} tokens, analyzer_max_new_tokens is "
        f"{max_new_tokens}, so the analyzer may learn replies it cannot close. Set analyzer_max_new_tokens={longest} "
        "(or more), or lower sft_skill_words"
    )


def acting_rows(
    cfg: TrainConfig,
    learner: Learner,
    policy: TransformersPolicy,
    episodes: Sequence[Episode],
    limit: int | None = None,
) -> list[ScoreRow]:
    """The expert's reply at each labelled step of ``episodes``, after the prompt the policy read
    there: the acting role Stage 1 must not unlearn while it trains the analyzer role. With ``limit``,
    that many of the steps, drawn with the run's seed without replacement."""
    pairs = demonstration_pairs(
        episodes,
        run_prompt_builder(cfg),
        count_reply_tokens=policy.count_text_tokens,
        max_new_tokens=cfg.max_new_tokens,
    ).pairs
    if limit is not None and limit < len(pairs):
        keep = np.random.default_rng([cfg.seed, 30_000]).choice(len(pairs), size=limit, replace=False)
        pairs = [pairs[int(i)] for i in sorted(keep)]
    return pair_rows(learner, policy, pairs, reuse_frozen_states=cfg.reuse_frozen_states)


#: Stage 1 warns when it raises the loss of the expert's actions by more than this many nats per token.
ACTING_LOSS_RISE = 0.5


def acting_loss_warning(before: float | None, after: float | None) -> str | None:
    """A warning where Stage 1 made the expert's actions much less likely (the policy forgets how to act)."""
    if before is None or after is None or after - before <= ACTING_LOSS_RISE:
        return None
    return (
        f"warning: Stage 1 raised the policy's loss on the expert's actions of the held-out trajectories from "
        f"{before:.3f} to {after:.3f} nats per token: training the analyzer role is unlearning the acting role "
        "(set sft_acting_pairs, or lower sft_lr or sft_epochs)"
    )


def rehearsal_rows(
    cfg: TrainConfig, learner: Learner, policy: TransformersPolicy, episodes: Sequence[Episode]
) -> list[ScoreRow]:
    """``sft_acting_pairs`` of the expert's steps in Stage 1's training trajectories, to train
    beside the skill pairs; none when the key is 0."""
    if cfg.sft_acting_pairs <= 0:
        return []
    return acting_rows(cfg, learner, policy, episodes, limit=cfg.sft_acting_pairs)


def fit(
    learner: Learner,
    policy: TransformersPolicy,
    pairs: list[tuple[Any, str]],
    cfg: TrainConfig,
    rehearsal: Sequence[ScoreRow] = (),
) -> list[float]:
    """Stage 1's SFT: the skill JSON (ended by EOS) after each analyzer prompt, and the ``rehearsal``
    rows of the acting role shuffled among them, ``sft_epochs`` epochs; returns each optimizer step's loss."""
    end = policy.tokenizer.eos_token or ""
    rows = pair_rows(learner, policy, pairs, end=end, reuse_frozen_states=cfg.reuse_frozen_states)
    return fit_rows(
        learner,
        [*rows, *rehearsal],
        epochs=cfg.sft_epochs,
        rng_seed=cfg.seed,
        label="stage 1 sft",
        progress=cfg.progress,
    )


def analyzer_parse_rate(
    policy: TransformersPolicy, episodes: Sequence[Episode], settings: AnalyzerSettings
) -> dict[str, Any]:
    """Greedy analysis of ``episodes``: the share that parses, the share naming the trajectory, examples."""
    with torch.no_grad():
        skills, report = write_skills(episodes, source="policy", settings=settings, policy=policy)
    parsed = [(e, s) for e, s in zip(episodes, skills, strict=True) if isinstance(s, Skill)]
    mentions = sum(mentions_trajectory(s, e.trajectory()) for e, s in parsed) / len(parsed) if parsed else 0.0
    examples = [s.episode_skill for _, s in parsed[:3]]
    return {
        "parse_rate": report.parse_rate if report.analyzed else 0.0,
        "mentions": mentions,
        "examples": examples,
        "failures": report.failures[:3],
    }
