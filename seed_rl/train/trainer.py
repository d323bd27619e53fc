"""GRPO and SEED training, one update at a time, in the order the paper gives it.

Per update ``u``:

1. **Rollout.** ``tasks_per_update`` train tasks (drawn from ``(seed, u)``), ``group_size``
   episodes each, sampled from the current policy; one row per env step (``filter_groups``: further
   rounds until enough groups differ in outcome, :mod:`~seed_rl.train.phases.group_filter`).
2. **Advantages.** Each episode's outcome reward ``R`` against its group's (GRPO).
3. **Hindsight skills** (SEED). The current policy, frozen and greedy, reads each finished
   episode and writes a skill; a reply that does not parse means no OPD for that episode.
4. **Teacher pass** (SEED). Every sampled action token re-scored under ``h_skill``, without
   gradient, by the pre-update policy.
5. **Update.** ``L = L_GRPO + c_kl * KL + lambda_opd * L_opd`` (:mod:`seed_rl.train.phases.update`).
6. **Log and checkpoint.** One line of ``metrics.jsonl``; a checkpoint from which a killed
   run resumes with no completed update lost.

At deployment no skill is used: the skill only shapes the training signal.

**Under torchrun** (``torchrun --nproc_per_node N -m seed_rl.cli train ...``) each process
plays its share of the update's groups (whole groups, so GRPO's advantages are its own), analyses
and scores them, and trains on its rows; losses, statistics and gradients are summed over the
processes (:mod:`seed_rl.train.learner.distributed`), so every process takes the same optimizer step. The main
process writes the run's files from the whole update's batch, gathered from every process. With
``fsdp=true`` the learner's weights are sharded over the processes (``Learner(fsdp=True)``), and
every pass over them runs on every process in step (sampling is vLLM's then).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_agent.agent import LLMAgent
from seed_agent.policies.base import keeping_frozen_states, reusing_prefixes
from seed_agent.prompts import PromptBuilder
from seed_agent.skills import Skill, SkillLibrary, SkillResult
from seed_envs.vector import make_vec
from seed_rl.config import ConfigError, TrainConfig, is_external_analyzer
from seed_rl.evaluate.play import EvalResult, evaluate
from seed_rl.progress import bar
from seed_rl.records.episode_log import append_episodes, episode_records, truncate_episodes
from seed_rl.records.rows import TrainRow
from seed_rl.records.run_log import RunLog, truncate_jsonl
from seed_rl.rollout import Episode, EpisodeStart, run_episodes
from seed_rl.train.learner.checkpoint import RESUME_FILES, latest_checkpoint, load_checkpoint, save_checkpoint
from seed_rl.train.learner.distributed import (
    barrier,
    broadcast_parameters,
    gather_objects,
    init_from_env,
    run_on_main,
)
from seed_rl.train.learner.learner import Learner, LoraSettings
from seed_rl.train.phases.collapse import CollapseWatch
from seed_rl.train.phases.group_filter import differing_groups, keep_groups
from seed_rl.train.phases.phase_timer import PhaseTimer
from seed_rl.train.phases.skill_pass import (
    AnalyzerSettings,
    SkillReport,
    add_to_library,
    external_analyzer,
    keep_critical_steps,
    low_parse_rate_warning,
    write_skills,
)
from seed_rl.train.phases.skill_probe import probe_skills
from seed_rl.train.phases.skill_prompt import FixedSkillBuilder, LibrarySkillBuilder, task_skill_builders
from seed_rl.train.phases.train_rows import RowPasses, drop_frozen_states, train_rows
from seed_rl.train.phases.update import LossSettings, optimize, trains
from seed_rl.train.phases.update_batch import (
    UpdateBatch,
    advantage_batch,
    merge_batches,
    skill_log_rows,
    slowest_seconds,
    task_outcome,
    update_metrics,
)
from seed_rl.train.setup.run_config import resolve_run_config
from seed_rl.train.setup.run_setup import (
    eval_sampling,
    run_env_kwargs,
    run_policy,
    run_prompt_builder,
    run_sampling,
    train_task_pool,
)
from seed_rl.train.stage1.run_start import prepare_run_start
from seed_rl.train.stage1.skill_writer import SkillWriter

#: The share of ``memory_budget_gb`` a rollout may fill with the sampler's frozen states (beside
#: what the budget bounds: weights, optimizer state and one micro-batch's pass); rows beyond it
#: train from their full pass.
FROZEN_STATES_SHARE = 0.25


class Trainer:
    """A training run in ``cfg.run_dir``: ``Trainer(cfg).run()`` trains; ``Trainer(cfg, resume=True).run()``
    (``seed train --resume``) continues it from its newest checkpoint."""

    def __init__(self, cfg: TrainConfig, *, resume: bool = False) -> None:
        self.rank, self.world_size = init_from_env()
        self.main = self.rank == 0
        self.run_dir = Path(cfg.run_dir)
        self.cfg = run_on_main(lambda: resolve_run_config(cfg, self.run_dir, resume=resume))
        cfg = self.cfg
        if cfg.tasks_per_update % self.world_size:
            raise ConfigError(
                f"tasks_per_update={cfg.tasks_per_update} does not split into whole groups over "
                f"{self.world_size} processes; make it a multiple of {self.world_size}"
            )
        self.show_progress = cfg.progress and self.main
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(cfg.seed)
        self.policy = run_policy(cfg)
        self.policy.engine.layout.share_prefix = cfg.share_prefix
        self.policy.engine.layout.share_groups = cfg.share_episode_prefix
        start = prepare_run_start(cfg, self.policy, self.run_dir, main=self.main)
        self.warm_start_report, self.stage1_report = start.warm_start_report, start.stage1_report
        self.learner = Learner(
            self.policy,
            finetune=cfg.finetune,
            lora=LoraSettings.from_config(cfg),
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            grad_clip=cfg.grad_clip,
            token_budget=cfg.token_budget,
            micro_batch_rows=cfg.micro_batch_rows,
            memory_budget_gb=cfg.memory_budget_gb,
            gradient_checkpointing=cfg.gradient_checkpointing,
            keep_reference=cfg.kl_coef > 0,
            fsdp=cfg.fsdp and self.world_size > 1,
            reuse_frozen_states=cfg.reuse_frozen_states,
        )
        if not self.learner.fsdp:  # (sharded weights are cut from the same start on every process)
            broadcast_parameters(self.learner.trainable)  # every process starts from the main one's adapters
        self.rollout_backend = None
        if cfg.rollout_engine == "vllm":
            from seed_rl.train.setup.rollout_backend import start_rollout_backend

            self.rollout_backend = start_rollout_backend(cfg, self.learner, self.run_dir, rank=self.rank)
        #: What samples rollouts and the current policy's skills: the learner's model, or vLLM
        self.rollout_policy = self.rollout_backend.policy if self.rollout_backend is not None else self.learner.policy
        #: sft_apart: what writes the skills instead (Stage 1's copy, given the current adapters)
        self.skill_writer = SkillWriter(start.writer, cfg, self.policy) if start.writer is not None else None
        reserve = cfg.skill_reserve_tokens if cfg.algo == "seed" else 0
        self.max_prompt_tokens = self.learner.context_length - cfg.max_new_tokens
        self.builder = run_prompt_builder(cfg, self.learner.count_tokens, self.max_prompt_tokens - reserve)
        kwargs = run_env_kwargs(cfg, cfg.split)
        n_envs = cfg.tasks_per_update // self.world_size * cfg.group_size
        backend = cfg.env_backend if cfg.workers or cfg.env_backend == "ray" else "sync"
        self.vec = make_vec(cfg.env, n_envs, workers=cfg.workers or None, backend=backend, **kwargs)
        self.task_count = train_task_pool(cfg, self.vec.call("task_count", cfg.split, env_ids=[0])[0])
        self.analyzer = AnalyzerSettings.from_config(cfg)
        self.external = external_analyzer(cfg.analyzer) if is_external_analyzer(cfg.analyzer) else None
        self.losses = LossSettings.from_config(cfg)
        self.library = SkillLibrary()
        self.update_index = 0
        self.log = (
            RunLog(
                self.run_dir,
                tensorboard=cfg.tensorboard,
                wandb=cfg.wandb,
                wandb_project=cfg.wandb_project,
                config=cfg.to_dict(),
            )
            if self.main
            else None
        )
        if resume:
            self._resume()
        if self.rollout_backend is not None:
            self.rollout_backend.sync(self.update_index)
        self.warnings: list[str] = []
        self.collapse = CollapseWatch()

    # -------------------------------------------------------------- setup
    def _resume(self) -> None:
        path = latest_checkpoint(self.run_dir)
        metrics_lines = 0  # killed before its first checkpoint: start over
        if path is not None:
            missing = [path / name for name in RESUME_FILES if not (path / name).is_file()]
            if missing:  # a pack of the weights only
                raise ConfigError(
                    f"--resume: {missing[0]} not found; a run packed to continue elsewhere needs "
                    "`seed pack RUN --out DIR --resumable`"
                )
            state = load_checkpoint(path, self.learner)
            self.update_index = int(state["update"])
            self.library = SkillLibrary.from_rows(state.get("library", []))
            metrics_lines = int(state["metrics_lines"])
        if self.log is not None:
            self.log.truncate(metrics_lines)
            truncate_jsonl(self.run_dir / "skills.jsonl", lambda row: row["update"] < self.update_index)
            truncate_episodes(self.run_dir, self.update_index)

    @property
    def rescore_pass(self) -> bool:
        """Whether re-scoring takes a pass of its own. Not where the update takes one optimizer step:
        there each row's pass with gradient, before that step, gives its old log-probs
        (:class:`~seed_rl.records.rows.TrainRow` ``old_from_pass``)."""
        return self.cfg.rescores and self.cfg.minibatches * self.cfg.epochs > 1

    @property
    def row_passes(self) -> RowPasses:
        """The passes phase 4 runs beside the rollout's log-probs
        (:func:`~seed_rl.train.phases.train_rows.train_rows`)."""
        return RowPasses(
            rescores=self.cfg.rescores,
            rescore_pass=self.rescore_pass,
            reference=self.cfg.kl_coef > 0,
            max_prompt_tokens=self.max_prompt_tokens,
            temperature=self.cfg.temperature,
        )

    # --------------------------------------------------------------- loop
    def run(self) -> list[dict[str, Any]]:
        """Train until ``cfg.updates`` updates are done; returns this call's metrics lines."""
        done = []
        try:
            while self.update_index < self.cfg.updates:
                metrics = self.update()
                done.append(metrics)
        finally:
            self.close()
        return done

    def update(self) -> dict[str, Any]:
        """One whole update: the six phases of the module docstring."""
        cfg, u, timer = self.cfg, self.update_index, PhaseTimer(self.policy.device)
        with timer("rollout"):
            episodes, left_out = self.rollout(u)  # 1. rollout
        batch = advantage_batch(episodes, cfg)  # 2. rewards and advantages (GRPO or GiGPO)
        batch.left_out_won = [e.won for e in left_out]
        if cfg.algo == "seed":
            with timer("analysis"):
                batch.skills, batch.skill_report = self.analyze(batch, u)  # 3. hindsight skills
            if cfg.skill_probe:
                with timer("probe"):
                    batch.skill_probe_won = self.probe(batch, u)
        # 4. teacher pass under h_skill (SEED), and old and reference log-probs where the run needs them
        batch.rows = train_rows(
            self.learner, batch, self.losses, self.row_passes, timer, show_progress=self.show_progress
        )
        with timer("update"), self.update_bar(batch.rows) as progress:
            stats = optimize(  # 5. L = L_GRPO + c_kl KL + lambda_opd L_opd, one optimizer step per mini-batch
                self.learner,
                batch.rows,
                self.losses,
                minibatches=cfg.minibatches,
                epochs=cfg.epochs,
                rng=np.random.default_rng([cfg.seed, u, 1]),
                on_micro_batch=lambda: progress.update(1),
            )
        return self.record(batch, stats, timer)  # 6. log and checkpoint

    def update_bar(self, rows: list[TrainRow]) -> Any:
        """The progress bar of the update's passes with gradient, one tick per micro-batch."""
        total = len(self.learner.micro_batches([r.score for r in rows])) * self.cfg.epochs
        return bar(total, "update", self.show_progress)

    # ------------------------------------------------ 6. log and checkpoint
    def record(self, batch: UpdateBatch, stats: dict[str, float], timer: PhaseTimer) -> dict[str, Any]:
        """After the optimizer steps: the engines' weights synced, the whole update's batch gathered
        from every process, its metrics (and collapse warnings), logs and checkpoint written."""
        cfg = self.cfg
        drop_frozen_states(batch)
        self.update_index += 1
        if self.rollout_backend is not None:
            with timer("sync"):
                self.rollout_backend.sync(self.update_index)
        gathered = merge_batches(gather_objects(batch))
        seconds = slowest_seconds(gather_objects(dict(timer.seconds)))
        if cfg.skills == "static-library" and self.update_index - 1 < cfg.library_updates:
            add_to_library(self.library, gathered.episodes, gathered.skills)
        scored = self.scored(gathered)
        metrics = update_metrics(gathered, stats, seconds, update=self.update_index, tokens_scored=scored)
        for warning in self.collapse.check(metrics) if self.main else ():
            print(f"warning: {warning}", flush=True)
            self.warnings.append(warning)
        if self.log is not None:
            self.log.write(metrics)
            self._log_skills(gathered)
            self._log_episodes(gathered)
        if self.update_index % cfg.checkpoint_every == 0 or self.update_index == cfg.updates:
            if self.log is not None or self.learner.fsdp:  # under FSDP every process gathers the shards
                weights, optimizer_state = self.learner.trainable_state(), self.learner.optimizer_state()
            if self.log is not None:
                save_checkpoint(
                    self.run_dir,
                    self.update_index,
                    self.learner,
                    {"metrics_lines": self.log.lines(), "library": self.library.to_rows()},
                    keep=cfg.keep_checkpoints,
                    weights=weights,
                    optimizer_state=optimizer_state,
                )
            barrier()  # no process runs ahead of a checkpoint it might be resumed from
        return metrics

    def scored(self, batch: UpdateBatch) -> int:
        """Tokens the learner's passes computed for ``batch``: each trained row once per epoch and
        once more where it was re-scored; every row once more for the KL reference."""
        trained = sum(r.score.length for r in batch.rows if trains(r, self.losses))
        every = sum(r.score.length for r in batch.rows)
        return trained * (self.cfg.epochs + int(self.rescore_pass)) + every * int(self.cfg.kl_coef > 0)

    # ---------------------------------------------------------- 1. rollout
    def tasks(self, u: int, round_: int = 0) -> list[int]:
        """The task indices of update ``u`` (of its ``round_``-th round with ``filter_groups``): a
        function of ``(seed, u, round_)`` only."""
        rng = np.random.default_rng([self.cfg.seed, u] if round_ == 0 else [self.cfg.seed, u, 2, round_])
        n = self.cfg.tasks_per_update
        replace_ = self.task_count < n
        return [int(i) for i in rng.choice(self.task_count, size=n, replace=replace_)]

    def sampling_seed(self, u: int, stream: int = 0) -> int:
        """The sampling seed of update ``u`` on this process: stream 0 for the rollout, 1 for the
        skill probe, ``1 + r`` for the rollout's round ``r >= 1`` (``filter_groups``)."""
        return (self.cfg.seed * 1_000_003 + u * 7_919 + self.rank * 104_729 + stream * 15_485_863) % 2**31

    def rollout(self, u: int) -> tuple[list[Episode], list[Episode]]:
        """This process's groups of update ``u`` (all of them alone), ``group_size`` episodes each,
        and the episodes played but left out (:mod:`~seed_rl.train.phases.group_filter`: with
        ``filter_groups``, further rounds until enough groups differ in outcome)."""
        cfg = self.cfg
        share = cfg.tasks_per_update // self.world_size
        room = int(FROZEN_STATES_SHARE * cfg.memory_budget_gb * 1e9)
        with torch.no_grad(), reusing_prefixes(self.rollout_policy), keeping_frozen_states(self.rollout_policy, room):
            episodes = self.play_round(u, 0)
            if not cfg.filter_groups:
                return episodes, []
            rounds = [(episodes, self.task_outcomes(episodes))]
            while sum(differing_groups(*r) for r in rounds) < share and len(rounds) < cfg.max_rollout_rounds:
                episodes = self.play_round(u, len(rounds))
                rounds.append((episodes, self.task_outcomes(episodes)))
        return keep_groups(rounds, share, first_group=self.rank * share)

    def task_outcomes(self, episodes: list[Episode]) -> list[float]:
        """Each episode's outcome without invalid-action penalties, by which ``filter_groups`` compares groups."""
        return [task_outcome(e, self.cfg.reward) for e in episodes]

    def play_round(self, u: int, round_: int) -> list[Episode]:
        """One round of this process's share of ``tasks_per_update`` groups."""
        cfg = self.cfg
        share = cfg.tasks_per_update // self.world_size
        mine = list(enumerate(self.tasks(u, round_)))[self.rank * share : (self.rank + 1) * share]
        starts = [
            EpisodeStart(options={"split": cfg.split, "index": index}, group=k)
            for k, index in mine
            for _ in range(cfg.group_size)
        ]
        sampling = run_sampling(cfg, sampling_seed=self.sampling_seed(u, stream=0 if round_ == 0 else 1 + round_))
        agent = LLMAgent(self.rollout_policy, self.builder, sampling)
        record_expert = cfg.algo == "seed" and cfg.analyzer == "scripted"
        label = "rollout" if round_ == 0 else f"rollout, round {round_ + 1}"
        with bar(len(starts), label, self.show_progress) as progress:
            return run_episodes(
                self.vec,
                agent,
                starts,
                env_id=cfg.env,
                penalty=cfg.penalty,
                record_expert=record_expert,
                on_episode_end=lambda _: progress.update(1),
            )

    # ------------------------------------------------- 3. hindsight skills
    def analyze(self, batch: UpdateBatch, u: int) -> tuple[list[SkillResult | None], SkillReport]:
        """One hindsight skill per episode (:func:`~seed_rl.train.phases.skill_pass.write_skills`) from the
        run's analyzer: the scripted annotator, the static library once built, or a policy (the
        current one, with ``sft_apart`` the current one plus Stage 1, the initial one, or an external
        server). With ``step_skills``, each keeps its
        step skills at its critical steps only (:func:`~seed_rl.train.phases.skill_pass.keep_critical_steps`)."""
        cfg, episodes = self.cfg, batch.episodes
        if cfg.analyzer == "scripted":
            source = "scripted"
        elif cfg.skills == "static-library" and u >= cfg.library_updates:
            source = "library"
        else:
            source = "policy"
        if cfg.analyzer == "frozen-initial" and source == "policy":
            weights = self.learner.initial_weights()
        elif self.skill_writer is not None and source == "policy":
            weights = contextlib.nullcontext(self.skill_writer.synced(self.learner))
        else:
            weights = contextlib.nullcontext(self.external or self.rollout_policy)
        shown = self.show_progress and source == "policy"
        with weights as analyzer, torch.no_grad(), bar(len(episodes), "analysis", shown) as progress:
            skills, report = write_skills(
                episodes,
                source=source,
                settings=self.analyzer,
                policy=analyzer,
                library=self.library,
                count_tokens=self.policy.count_text_tokens,
                on_analyzed=progress.update,
            )
        # the paper's setting keeps episode skills only; step_skills keeps those of the critical steps
        spreads = batch.credit.spreads() if cfg.step_skills and batch.credit else [{}] * len(skills)
        limit = cfg.max_step_skills if cfg.step_skills else 0
        skills = [keep_critical_steps(s, spreads[i], limit) for i, s in enumerate(skills)]
        warning = low_parse_rate_warning(report, cfg.model) if cfg.analyzer != "scripted" else None
        if warning:
            print(f"warning (update {u + 1}): {warning}", flush=True)
        return skills, report

    def probe(self, batch: UpdateBatch, u: int) -> list[bool | None]:
        """Each episode with a skill played again with it in context (``skill_probe``), sampled as
        the rollout samples, from a seed of its own (:mod:`~seed_rl.train.phases.skill_probe`)."""
        cfg = self.cfg
        return probe_skills(
            self.rollout_policy,
            self._skill_base_builder(),
            self.max_prompt_tokens,
            batch.episodes,
            batch.skills,
            env=cfg.env,
            split=cfg.split,
            sampling=run_sampling(cfg, sampling_seed=self.sampling_seed(u, stream=1)),
            env_kwargs=run_env_kwargs(cfg, cfg.split),
        )

    # -------------------------------------------------------------- 6. log
    def _log_skills(self, batch: UpdateBatch) -> None:
        rows = skill_log_rows(batch, self.update_index - 1)
        if rows:
            with open(self.run_dir / "skills.jsonl", "a", encoding="utf-8") as handle:
                handle.writelines(json.dumps(row) + "\n" for row in rows)

    def _log_episodes(self, batch: UpdateBatch) -> None:
        tokenizer = self.policy.tokenizer
        records = episode_records(
            self.update_index - 1,
            batch.episodes,
            batch.rewards,
            batch.skills,
            batch.rows,
            split=self.cfg.split,
            beta_opd=self.cfg.beta_opd,
            decode_tokens=lambda ids: [tokenizer.decode([i]) for i in ids],
            visual=self.cfg.visual,
        )
        append_episodes(self.run_dir, records)

    # ---------------------------------------------------------- deployment
    def evaluate(
        self,
        split: str,
        task_indices: list[int],
        *,
        seeds: tuple[int, ...] = (0,),
        temperature: float | None = None,
        skills: SkillLibrary | None = None,
        task_skills: list[str | Skill] | None = None,
    ) -> EvalResult:
        """The current policy on fixed tasks of ``split`` under the run's evaluation protocol
        (:func:`~seed_rl.train.setup.run_setup.eval_sampling`; ``temperature`` overrides it), with no skill
        (the paper's deployment), with the best match of ``skills`` for each task in its prompts (the
        Skill-Prompt ablation), or with ``task_skills[k]`` (a text, or a :class:`Skill` with its step
        skills) in every prompt of task ``k`` (SEED's precondition: does a skill in context change
        what the policy does?)."""
        cfg = self.cfg
        if task_skills is not None:
            base = self._skill_base_builder()
            builders = task_skill_builders(base, self.max_prompt_tokens, task_skills)
            return self._play(base, split, task_indices, seeds, temperature, builders)
        if skills is None:
            builder = run_prompt_builder(cfg, self.learner.count_tokens, self.max_prompt_tokens)
        else:
            builder = LibrarySkillBuilder(self._skill_base_builder(), skills, self.max_prompt_tokens, env=cfg.env)
        return self._play(builder, split, task_indices, seeds, temperature)

    def _skill_base_builder(self) -> PromptBuilder:
        """The run's prompt builder with room left for a skill (as the rollouts of a SEED run have)."""
        cfg = self.cfg
        return run_prompt_builder(cfg, self.learner.count_tokens, self.max_prompt_tokens - cfg.skill_reserve_tokens)

    def _play(
        self,
        builder: PromptBuilder,
        split: str,
        task_indices: list[int],
        seeds: tuple[int, ...],
        temperature: float | None,
        task_builders: list[FixedSkillBuilder] | None = None,
    ) -> EvalResult:
        return evaluate(
            self.rollout_policy,
            builder,
            env=self.cfg.env,
            split=split,
            task_indices=task_indices,
            sampling=eval_sampling(self.cfg, temperature),
            seeds=seeds,
            env_kwargs=run_env_kwargs(self.cfg, split),
            task_builders=task_builders,
            progress=self.show_progress,
        )

    def close(self) -> None:
        self.vec.close()
        if self.rollout_backend is not None:
            self.rollout_backend.close()
        if self.log is not None:
            self.log.close()


def train(cfg: TrainConfig, *, resume: bool = False) -> list[dict[str, Any]]:
    """Run (or, with ``resume``, continue) a training run; returns the metrics of the updates run now."""
    return Trainer(cfg, resume=resume).run()
