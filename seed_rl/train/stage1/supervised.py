"""Supervised fine-tuning on (prompt, reply) pairs: the one SFT loop of Stage 1 and the warm start.

The loss of a pair is the token mean of ``-log pi(reply | prompt)``; a step averages over the
reply tokens of :data:`PAIRS_PER_STEP` pairs (micro-batched by the learner's token budget).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.hf import TransformersPolicy
from seed_envs.files import atomic_write_text
from seed_rl.algo.losses import token_mean
from seed_rl.config import TrainConfig
from seed_rl.progress import bar
from seed_rl.records.rows import ScoreRow
from seed_rl.train.learner.learner import Learner, LoraSettings

#: Pairs per optimizer step.
PAIRS_PER_STEP = 4
#: Where a run (or a packed run, ``seed pack``) keeps copies of the adapters merged before RL.
ADAPTERS_FOLDER = "adapters"


def adapter_learner(cfg: TrainConfig, policy: TransformersPolicy, lr: float) -> Learner:
    """A LoRA learner over ``policy`` with the run's adapters and budgets, no KL reference: the
    learner of a supervised stage whose adapter is merged into the weights afterwards."""
    return Learner(
        policy,
        finetune="lora",
        lora=LoraSettings.from_config(cfg),
        lr=lr,
        token_budget=cfg.token_budget,
        memory_budget_gb=cfg.memory_budget_gb,
        keep_reference=False,
        gradient_checkpointing=cfg.gradient_checkpointing,
    )


@dataclass(frozen=True)
class CachedAdapter:
    """A supervised stage's adapter and report in its cache folder (keyed by what determines them)."""

    folder: Path
    adapter_file: str
    report_file: str

    def load(self, learner: Learner, run_dir: Path | None = None) -> dict[str, Any] | None:
        """Load the cached adapter into ``learner`` and return its report (``cached`` set, ``loaded_from``
        the folder read); None when neither the cache nor the run holds both files.

        Without the cache, a run's own copy is read: ``RUN/adapters/<adapter file>`` beside the
        report ``RUN/<report file>``, as ``seed pack --resumable`` writes them, so that a packed run
        resumes on a machine that never trained its warm start or Stage 1. Both name the same
        adapter: the cache's key holds every setting the run's config fixes."""
        sources = [(self.folder / self.adapter_file, self.folder / self.report_file)]
        if run_dir is not None:
            sources.append((run_dir / ADAPTERS_FOLDER / self.adapter_file, run_dir / self.report_file))
        for adapter, report in sources:
            if adapter.is_file() and report.is_file():
                from safetensors.torch import load_file

                learner.load_trainable_state(load_file(str(adapter)))
                loaded = json.loads(report.read_text(encoding="utf-8"))
                return {**loaded, "cached": True, "loaded_from": str(adapter.parent)}
        return None

    def save(self, learner: Learner, report: dict[str, Any]) -> None:
        from safetensors.torch import save_file

        state = {k: v.contiguous() for k, v in learner.trainable_state().items()}
        self.folder.mkdir(parents=True, exist_ok=True)  # (made anew if it went while the stage trained)
        save_file(state, str(self.folder / self.adapter_file))
        atomic_write_text(self.folder / self.report_file, json.dumps(report, indent=1))


def pair_rows(
    learner: Learner,
    policy: TransformersPolicy,
    pairs: Sequence[tuple[ChatPrompt, str]],
    *,
    end: str = "",
    reuse_frozen_states: bool = True,
) -> list[ScoreRow]:
    """Each pair encoded as a row: the prompt's ids and the reply's (with ``end`` appended). With
    LoRA in the top layers only, the rows carry the states of the frozen layers below, computed
    once here instead of once per epoch (text rows only)."""
    if not pairs:
        return []
    rows = []
    for (ids, vision), (_, reply) in zip(learner.encode([p for p, _ in pairs]), pairs, strict=True):
        reply_ids = policy.tokenizer(reply + end, add_special_tokens=False)["input_ids"]
        rows.append(ScoreRow(ids, reply_ids, vision))
    if reuse_frozen_states and not any(r.vision for r in rows):
        states = policy.engine.states_of([r.prompt_ids for r in rows], [r.token_ids for r in rows])
        if states is not None:
            rows = [replace(r, states=s) for r, s in zip(rows, states, strict=True)]
    return rows


def fit_rows(
    learner: Learner, rows: Sequence[ScoreRow], *, epochs: int, rng_seed: int, label: str, progress: bool
) -> list[float]:
    """SFT over ``rows`` for ``epochs`` (shuffled with ``rng_seed``); returns each optimizer step's loss."""
    rng = np.random.default_rng([rng_seed, 77])
    losses: list[float] = []
    steps = epochs * -(-len(rows) // PAIRS_PER_STEP)
    with bar(steps, label, progress) as shown:
        for _ in range(epochs):
            order = rng.permutation(len(rows))
            for start in range(0, len(order), PAIRS_PER_STEP):
                chunk = [rows[i] for i in order[start : start + PAIRS_PER_STEP]]
                total = sum(len(r.token_ids) for r in chunk)
                value = 0.0
                for batch in learner.micro_batches(chunk):
                    micro = [chunk[i] for i in batch]
                    lp = torch.cat(learner.logprobs(micro, grad=True))
                    loss = -token_mean(lp, torch.ones_like(lp)) * (lp.numel() / total)
                    loss.backward()
                    value += float(loss.detach())
                learner.step()
                losses.append(value)
                shown.update(1)
    return losses


def mean_nll(learner: Learner, rows: Sequence[ScoreRow]) -> float | None:
    """``-log pi(reply | prompt)`` per reply token over ``rows``, without gradient (None: no rows)."""
    if not rows:
        return None
    scored = learner.logprobs(list(rows), grad=False)
    tokens = sum(len(lp) for lp in scored)
    return -float(sum(lp.float().sum() for lp in scored)) / max(tokens, 1)
