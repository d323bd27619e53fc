"""Where a run's RL starts: the warm start merged into the policy, then Stage 1, merged into it or,
with ``sft_apart``, into a skill writer of its own (:mod:`seed_rl.train.stage1.skill_writer`).

Under torchrun the main process trains each adapter into the cache first (as if alone); the
others then load it from there, so every process starts from the same weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_agent.policies.hf import TransformersPolicy
from seed_rl.config import TrainConfig
from seed_rl.train.learner.distributed import run_on_main


@dataclass
class RunStart:
    """What the stages before RL reported, and the policy Stage 1 went into where it was kept apart."""

    warm_start_report: dict[str, Any] | None = None
    stage1_report: dict[str, Any] | None = None
    #: ``sft_apart``: the starting weights with Stage 1 merged, the skill writer's; else None
    writer: TransformersPolicy | None = None


def prepare_run_start(cfg: TrainConfig, policy: TransformersPolicy, run_dir: Path, *, main: bool) -> RunStart:
    """Run (or load from the cache) the stages ``cfg`` asks for before RL, on ``policy`` in place."""
    start = RunStart()
    if cfg.warm_start != "none":
        from seed_rl.train.stage1.warm_start import run_warm_start

        start.warm_start_report = run_on_main(lambda: run_warm_start(cfg, policy, run_dir))
        if not main:
            run_warm_start(cfg, policy, run_dir)
    if cfg.sft:
        from seed_rl.train.stage1.sft import run_stage1

        if cfg.sft_apart:
            from seed_rl.train.stage1.skill_writer import writer_policy

            start.writer = writer_policy(cfg, run_dir)
        target = start.writer or policy
        start.stage1_report = run_on_main(lambda: run_stage1(cfg, target, run_dir))
        if not main:
            run_stage1(cfg, target, run_dir)
    return start
