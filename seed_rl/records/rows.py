"""The rows an update scores and trains on: :class:`ScoreRow`, a prompt and the completion tokens the
learner scores after it, and :class:`TrainRow`, one env step of an update with the log-probs its loss
needs. Phase 4 builds them (``seed_rl/train/phases/train_rows.py``), the update trains on them, and the
run's records read them (``episodes.jsonl``, :mod:`seed_rl.records.episode_log`): they live here, below
the trainer, and need neither torch nor the trainer to be imported.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

    from seed_agent.policies.hf import FrozenStates


@dataclass
class ScoreRow:
    """A prompt (as ids, with its vision inputs) and the completion tokens to score after it."""

    prompt_ids: list[int]
    token_ids: list[int]
    vision: dict[str, torch.Tensor] = field(default_factory=dict)
    #: The sampler's hidden states below the first trained layer (``Completion.frozen_states``):
    #: passes over this row may start there.
    states: FrozenStates | None = None
    #: Rows of one group (the steps of one episode under ``h_skill``) compute their common prefix
    #: once (the engine's ``layout.group_layout``); None: a group of its own.
    group: Hashable | None = None

    @property
    def length(self) -> int:
        return len(self.prompt_ids) + len(self.token_ids)


@dataclass
class TrainRow:
    """One env step of an update: its scored row, its episode's index and advantage, the old
    log-probs, and where the loss needs them the sampler's, the reference's and the teacher's
    (under ``h_skill``)."""

    episode: int
    score: ScoreRow
    old_logp: torch.Tensor
    advantage: float
    sampler_logp: torch.Tensor | None = None
    ref_logp: torch.Tensor | None = None
    skill_logp: torch.Tensor | None = None
    #: ``old_logp`` is the sampler's, to be replaced by the learner's own from this row's pass
    #: with gradient (only valid where that pass comes before the update's one optimizer step).
    old_from_pass: bool = False
    #: ``old_logp`` holds the learner's log-probs (re-scored, or from the pass), not the sampler's.
    old_is_learners: bool = False
    #: The teacher's ``h_skill`` carried a step skill besides the episode skill.
    step_skill: bool = False

    @property
    def tokens(self) -> int:
        return len(self.score.token_ids)
