"""Phase 4 of an update: the rows it trains, one per env step that sampled tokens, each with the
log-probs its loss needs:

- ``old_logp``: the sampler's, or the learner's where the sampler differs from it (bf16, vLLM),
  re-scored in a pass of their own or taken from the update's one pass with gradient;
- ``ref_logp``: the reference policy's, for the KL term (``kl_coef > 0``);
- ``skill_logp``: the teacher's, ``log pi(a | h_skill)`` (SEED's OPD,
  :func:`~seed_rl.train.phases.skill_pass.teacher_logprobs`), where ``lambda_opd > 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from seed_agent.skills import Skill
from seed_rl.records.rows import ScoreRow, TrainRow
from seed_rl.rollout import StepRow
from seed_rl.train.learner.learner import Learner
from seed_rl.train.phases.phase_timer import PhaseTimer
from seed_rl.train.phases.skill_pass import teacher_logprobs
from seed_rl.train.phases.update import LossSettings, trains
from seed_rl.train.phases.update_batch import UpdateBatch


@dataclass(frozen=True)
class RowPasses:
    """Which passes the rows need beside the rollout's log-probs."""

    #: The old log-probs are the learner's (the sampler differs from it).
    rescores: bool
    #: ... in a pass of their own (the update takes more than one optimizer step); else from its one pass.
    rescore_pass: bool
    #: The reference policy's log-probs (the KL term).
    reference: bool
    #: The longest prompt the learner scores (its context less the reply).
    max_prompt_tokens: int
    temperature: float = 1.0


def encode_steps(
    learner: Learner, steps: list[Any], prompts: list[Any]
) -> list[tuple[list[int], dict[str, torch.Tensor]]]:
    """Prompt ids (reused from sampling when the policy recorded them) and vision inputs."""
    if all(step.prompt_ids and not step.images for step in steps) and prompts == [s.prompt for s in steps]:
        return [(list(step.prompt_ids), {}) for step in steps]
    images = [list(step.images) for step in steps] if any(step.images for step in steps) else None
    return learner.encode(prompts, images)


def reusable_states(step: StepRow, ids: list[int]) -> Any:
    """The sampler's hidden states of ``step`` where its row is scored with the ids it sampled from."""
    return step.frozen_states if ids == step.prompt_ids else None


def drop_frozen_states(batch: UpdateBatch) -> None:
    """Free the sampler's hidden states once the update no longer needs them."""
    for episode in batch.episodes:
        for step in episode.rows:
            step.frozen_states = None
    for row in batch.rows:
        row.score.states = None


def train_rows(
    learner: Learner,
    batch: UpdateBatch,
    losses: LossSettings,
    passes: RowPasses,
    timer: PhaseTimer,
    *,
    show_progress: bool = False,
) -> list[TrainRow]:
    """The rows of ``batch`` with their old, teacher and reference log-probs (``timer`` gets the
    seconds of the teacher, rescore and reference passes)."""
    rows: list[TrainRow] = []
    places: list[tuple[int, int]] = []
    for e, episode in enumerate(batch.episodes):
        encoded = encode_steps(learner, list(episode.rows), [r.prompt for r in episode.rows])
        for s, (row, (ids, vision)) in enumerate(zip(episode.rows, encoded, strict=True)):
            if not row.token_ids:
                continue
            sampler = torch.tensor(row.logprobs, dtype=torch.float32)
            rows.append(
                TrainRow(
                    episode=e,
                    score=ScoreRow(ids, list(row.token_ids), vision, states=reusable_states(row, ids)),
                    old_logp=sampler,
                    advantage=batch.step_advantages[e][s],
                    sampler_logp=sampler,
                    old_from_pass=passes.rescores and not passes.rescore_pass,
                )
            )
            places.append((e, s))
    # At lambda_opd = 0 (the seed-lambda0 ablation) the teacher's log-probs would change nothing: no pass.
    distils = losses.lambda_opd > 0
    has_skills = distils and bool(batch.skills) and any(isinstance(s, Skill) for s in batch.skills)
    if has_skills or (distils and learner.fsdp):  # under FSDP a process with no skill row still takes part
        with timer("teacher"):
            teacher = teacher_logprobs(
                learner,
                batch.episodes,
                batch.skills if has_skills else [None] * len(batch.episodes),
                places,
                lambda steps, prompts: encode_steps(learner, steps, prompts),
                max_prompt_tokens=passes.max_prompt_tokens,
                temperature=passes.temperature,
                show_progress=show_progress,
            )
            for i, (lp, with_step_skill) in teacher.items():
                rows[i].skill_logp, rows[i].step_skill = lp, with_step_skill
    if passes.rescore_pass:  # only the rows the update trains need the learner's old log-probs
        trained = [row for row in rows if trains(row, losses)]
        with timer("rescore"):
            learner_lp = learner.logprobs([r.score for r in trained], grad=False, temperature=passes.temperature)
            for row, lp in zip(trained, learner_lp, strict=True):
                row.old_logp, row.old_is_learners = lp.float(), True
    if passes.reference:
        with timer("reference"):
            scores = [r.score for r in rows]
            ref = learner.logprobs(scores, grad=False, temperature=passes.temperature, reference=True)
            for row, lp in zip(rows, ref, strict=True):
                row.ref_logp = lp.float()
    return rows
