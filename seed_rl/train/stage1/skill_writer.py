"""Stage 1 kept apart from the acting policy (``sft_apart``): a skill writer of its own.

The paper fine-tunes one policy to write skills (Stage 1) and then trains that same policy to act.
On a small warm-started policy the analyzer's pairs move the acting role too: on ALFWorld, Stage 1
raised the expert actions' loss from 0.14 to 0.69 nats per token, and SEED lost 20.8 points to
GRPO, all of them Stage 1's (``seed_rl/README.md``). Rehearsal (``sft_acting_pairs``) only slows
that down. With ``sft_apart=true`` it cannot happen:

- the **acting policy** never receives Stage 1's adapter: it acts, is the teacher and the student
  of OPD, is the KL reference and is evaluated as the warm start (or base model) plus RL, exactly
  as GRPO's would be;
- the **skill writer** is a second copy of the same starting weights with Stage 1's adapter merged
  in, which writes every skill. Before each skill pass it takes the acting policy's current RL
  adapters (:meth:`SkillWriter.synced`), so it is still the current policy, now plus Stage 1:
  the skills evolve with the policy as the paper's do.

It costs a second copy of the model's weights (and none of its optimizer state); the adapters
copied per update are the LoRA weights only, so it needs ``finetune=lora``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from seed_agent.policies.hf import TransformersPolicy
from seed_rl.config import TrainConfig
from seed_rl.train.learner.learner import Learner, LoraSettings
from seed_rl.train.setup.run_setup import run_policy


def writer_policy(cfg: TrainConfig, run_dir: Path) -> TransformersPolicy:
    """A second copy of the run's starting weights, for Stage 1 to merge its adapter into: the base
    model loaded again, warm-started from the cache as the acting policy was (never trained again:
    the trainer trained it into the cache first). Loading draws from a forked RNG: the run's stream
    is left as it was."""
    with torch.random.fork_rng():
        policy = run_policy(cfg)
    if cfg.warm_start != "none":
        from seed_rl.train.stage1.warm_start import run_warm_start

        run_warm_start(cfg, policy, run_dir, write_report=False)  # (the acting policy's report stands)
    return policy


class SkillWriter:
    """The policy that writes skills under ``sft_apart``: Stage 1's model with the acting
    policy's RL adapters copied in before each use."""

    def __init__(self, policy: TransformersPolicy, cfg: TrainConfig, acting: TransformersPolicy) -> None:
        self.policy = policy
        # the same adapters as the acting learner's (same names): filled by copying, never trained here;
        # their initialization draws from a forked RNG, so the run's own stream is the merged run's
        with torch.random.fork_rng():
            self._adapters = Learner(
                policy,
                finetune="lora",
                lora=LoraSettings.from_config(cfg),
                keep_reference=False,
                reuse_frozen_states=cfg.reuse_frozen_states,
            )
        self.policy.engine.layout.share_prefix = acting.engine.layout.share_prefix
        self.policy.engine.layout.share_groups = acting.engine.layout.share_groups

    def synced(self, learner: Learner) -> TransformersPolicy:
        """The writer with ``learner``'s current adapters: the current policy plus Stage 1."""
        self._adapters.load_trainable_state(learner.trainable_state())
        return self.policy
