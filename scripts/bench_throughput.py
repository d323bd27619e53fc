"""``bench_train.py``'s device handling and its throughput report (tokens per second of sampling,
scoring and training, and SEED's update against GRPO's, against the paper-scale target).

Definitions (every count from the benchmark's own rollout and updates):

- **sampling**: the tokens the rollout generated, over the rollout's wall-clock seconds (env steps
  and prompt building included);
- **scoring**: the tokens of the teacher pass's rows (each row's ``h_skill`` prompt and its action
  tokens, as a pass sharing no prefix would read them), over the teacher phase's seconds;
- **training**: the tokens of the rows GRPO's update trains (prompt and action tokens), over its
  update phase's seconds (the passes with gradient and the optimizer steps);
- **SEED/GRPO update ratio**: SEED's seconds after the rollout (analysis, teacher pass, update)
  over GRPO's (update), both from the same weights on the same rollout; met where it is at most
  :data:`TARGET`.

On CUDA every clock is read after ``torch.cuda.synchronize`` and the peak memory is
``torch.cuda.max_memory_allocated``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from seed_agent.models import resolve_device
from seed_rl.algo.advantages import grpo_advantages
from seed_rl.records.rows import ScoreRow, TrainRow
from seed_rl.rollout import Episode
from seed_rl.train.phases.phase_timer import device_sync
from seed_rl.train.phases.update import LossSettings, trains
from seed_rl.train.phases.update_batch import UpdateBatch

#: The paper-scale target of SEED's update time against GRPO's.
TARGET = 1.15


def require_device(parser: argparse.ArgumentParser, device: str) -> str:
    """``cpu`` or ``cuda`` for ``--device``; where that is not possible (``cuda`` without a CUDA GPU)
    the parser exits with status 2 and says why."""
    try:
        return resolve_device(device)
    except ValueError as error:
        parser.error(f"--device {device}: {error}")
        raise  # (parser.error exits)


def clock(device: str) -> Callable[[], float]:
    """``time.perf_counter`` read after the device's queued work is done."""
    sync = device_sync(device)

    def read() -> float:
        if sync is not None:
            sync()
        return time.perf_counter()

    return read


def reset_peak_memory(device: str) -> None:
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def peak_memory_bytes(device: str) -> int | None:
    """The most CUDA memory torch held for tensors since the last reset; None on the CPU."""
    return int(torch.cuda.max_memory_allocated()) if device == "cuda" else None


def spread_rewards(batch: UpdateBatch, normalize_std: bool = True) -> UpdateBatch:
    """``batch`` with each episode's outcome reward replaced by its index in its group, so that no
    group ties and every row trains. A model with random weights wins nothing: every group of its
    rollout ties, and GRPO's update would train no row at all."""
    seen: dict[Any, int] = {}
    rewards = []
    for episode in batch.episodes:
        rewards.append(float(seen.get(episode.group, 0)))
        seen[episode.group] = seen.get(episode.group, 0) + 1
    groups = [e.group for e in batch.episodes]
    advantages = grpo_advantages(rewards, groups, normalize_std=normalize_std).tolist()
    batch.rewards = rewards
    batch.step_advantages = [[a] * len(e.rows) for a, e in zip(advantages, batch.episodes, strict=True)]
    return batch


def generated_tokens(episodes: Sequence[Episode]) -> int:
    return sum(len(row.token_ids) for episode in episodes for row in episode.rows)


def trained_tokens(rows: Sequence[TrainRow], losses: LossSettings) -> tuple[int, int]:
    """(row tokens, action tokens) of the rows an update trains."""
    trained = [row for row in rows if trains(row, losses)]
    return sum(row.score.length for row in trained), sum(row.tokens for row in trained)


def throughput_report(
    *,
    rollout_s: float,
    rollout_tokens: int,
    grpo: dict[str, float],
    seed: dict[str, float],
    teacher_rows: Sequence[ScoreRow],
    training_tokens: tuple[int, int],
    peak_bytes: int | None,
) -> dict[str, Any]:
    """The throughput figures (see the module docstring) from the benchmark's counts and phase
    seconds; ``grpo`` and ``seed`` are the phases after the rollout of each update."""
    grpo_s, seed_s = sum(grpo.values()), sum(seed.values())
    teacher_s, update_s = seed.get("teacher", 0.0), grpo.get("update", 0.0)
    row_tokens, action_tokens = training_tokens
    scored = sum(row.length for row in teacher_rows)
    ratio = seed_s / grpo_s if grpo_s else float("inf")
    return {
        "sampling_tokens": rollout_tokens,
        "sampling_s": rollout_s,
        "sampling_tokens_per_s": rollout_tokens / rollout_s if rollout_s else 0.0,
        "scoring_tokens": scored,
        "scoring_action_tokens": sum(len(row.token_ids) for row in teacher_rows),
        "scoring_s": teacher_s,
        "scoring_tokens_per_s": scored / teacher_s if teacher_s else 0.0,
        "training_tokens": row_tokens,
        "training_action_tokens": action_tokens,
        "training_s": update_s,
        "training_tokens_per_s": row_tokens / update_s if update_s else 0.0,
        "grpo_update_s": grpo_s,
        "seed_update_s": seed_s,
        "seed_vs_grpo_update": ratio,
        "target": TARGET,
        "target_met": ratio <= TARGET,
        "peak_cuda_memory_mb": None if peak_bytes is None else peak_bytes / 2**20,
    }


def print_throughput(report: dict[str, Any], device: str, variant: str) -> None:
    print(f"\nThroughput on {device} (SEED: {variant}):")
    for kind in ("sampling", "scoring", "training"):
        print(
            f"  {kind}: {report[f'{kind}_tokens']} tokens in {report[f'{kind}_s']:.2f} s: "
            f"{report[f'{kind}_tokens_per_s']:.1f} tokens/s"
        )
    verdict = "met" if report["target_met"] else "not met"
    print(
        f"  SEED/GRPO update: {report['seed_update_s']:.2f} s / {report['grpo_update_s']:.2f} s = "
        f"{report['seed_vs_grpo_update']:.2f}x (target {TARGET:.2f}x: {verdict})"
    )
    if report["peak_cuda_memory_mb"] is not None:
        print(f"  peak CUDA memory: {report['peak_cuda_memory_mb'] / 1024:.2f} GiB", flush=True)
