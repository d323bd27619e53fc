"""SEED's cost floor for ``bench_train.py``'s ``seed`` section: the least a SEED update can add to
GRPO's on this machine, at this shape, without changing what SEED computes.

SEED must do two things GRPO does not, and neither can be skipped:

- **read every trajectory**: the analyzer's prompt, with the trajectory in it, goes once through
  every layer. The floor takes the analysis pass's **prefill alone** (the prefix the prompts share
  computed once, as the analysis pass does), and counts the skill's decoding as free;
- **score every action under h_skill**: the teacher pass, as measured (a pass without gradient
  through every layer, each episode's shared ``h_skill`` prefix computed once).

The floor also counts SEED's update as no dearer than GRPO's (SEED's trains more rows: those of tied
groups carry OPD). So ``floor = rollout + GRPO's update + prefill + teacher pass``; where it is over
a target, no engineering of the same computation meets that target here.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch

from seed_rl.rollout import Episode
from seed_rl.train.phases.skill_pass import ANALYSIS_CHUNK, AnalyzerSettings

#: The CPU demo's target for a SEED update against a GRPO update, both with the rollout.
CPU_TARGET = 1.4


def analysis_prefill_seconds(
    policy: Any,
    settings: AnalyzerSettings,
    episodes: Sequence[Episode],
    clock: Callable[[], float],
    rounds: int,
) -> float:
    """The median seconds of the analysis pass's prefill alone over ``episodes`` (those it would
    analyse), in the batches its ``generate`` calls run (chunks of :data:`ANALYSIS_CHUNK`, each
    split by the policy's ``batch_size``), on ``policy`` (a ``TransformersPolicy``): no token is
    generated."""
    ids, vision = policy.encode([settings.prompt(e) for e in episodes if settings.analyses(e)])
    batches = [
        slice(start, min(start + policy.batch_size, chunk + ANALYSIS_CHUNK, len(ids)))
        for chunk in range(0, len(ids), ANALYSIS_CHUNK)
        for start in range(chunk, min(chunk + ANALYSIS_CHUNK, len(ids)), policy.batch_size)
    ]

    def prefill() -> float:
        started = clock()
        with torch.no_grad():
            for part in batches:
                policy.engine.prefix_forward(ids[part], vision[part], logits_to_keep=1, use_cache=True)
        return clock() - started

    prefill()  # warm-up: the first pass allocates
    return statistics.median(prefill() for _ in range(max(1, rounds)))


def seed_floor(*, rollout_s: float, grpo_update_s: float, prefill_s: float, teacher_s: float) -> dict[str, float]:
    """SEED's floor (see the module docstring) against GRPO, with and without the rollout:

    ``floor_vs_grpo = (rollout + grpo + prefill + teacher) / (rollout + grpo)``,
    ``floor_vs_grpo_update = (grpo + prefill + teacher) / grpo``."""
    extra = prefill_s + teacher_s
    grpo_total = rollout_s + grpo_update_s
    with_rollout = (grpo_total + extra) / grpo_total if grpo_total else float("inf")
    return {
        "analysis_prefill_s": prefill_s,
        "teacher_s": teacher_s,
        "floor_extra_s": extra,
        "floor_vs_grpo": with_rollout,
        "floor_vs_grpo_update": (grpo_update_s + extra) / grpo_update_s if grpo_update_s else float("inf"),
        "cpu_target": CPU_TARGET,
        "cpu_target_within_reach": with_rollout <= CPU_TARGET,
    }


def print_floor(floor: dict[str, float], measured_vs_grpo: float) -> None:
    reach = "within reach" if floor["cpu_target_within_reach"] else "out of reach of the same computation"
    print(
        f"\nSEED's floor here: analysis prefill {floor['analysis_prefill_s']:.1f} s + teacher pass "
        f"{floor['teacher_s']:.1f} s = {floor['floor_extra_s']:.1f} s over GRPO "
        f"({floor['floor_vs_grpo_update']:.2f}x GRPO's update); with the rollout, SEED is at least "
        f"{floor['floor_vs_grpo']:.2f}x GRPO (measured {measured_vs_grpo:.2f}x; target {CPU_TARGET:.1f}x: {reach})",
        flush=True,
    )
