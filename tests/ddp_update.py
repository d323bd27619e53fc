"""One update on a fixed batch, alone or as one of several torchrun processes (each training the
first four episodes on rank 0, the last two on rank 1); writes the trained weights and the statistics.

    python tests/ddp_update.py OUT                       # one process, every row
    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/ddp_update.py OUT [--fsdp]

``--fsdp`` shards the model's weights over the processes (FSDP2) instead of keeping a whole copy
in each and summing gradients.
"""

from __future__ import annotations

import json
import os
import sys

import torch

from seed_agent.tiny_models import tiny_random_policy
from seed_rl.records.rows import ScoreRow, TrainRow
from seed_rl.train.learner.distributed import world
from seed_rl.train.learner.learner import Learner
from seed_rl.train.phases.update import LossSettings, optimize


def fixed_batch(learner: Learner) -> list[TrainRow]:
    """Twelve rows of six episodes: advantages of both signs, KL references, skills on some."""
    gen = torch.Generator().manual_seed(3)
    rows = []
    for i in range(12):
        prompt = torch.randint(5, 500, (int(torch.randint(30, 90, (1,), generator=gen)),), generator=gen).tolist()
        tokens = torch.randint(5, 500, (int(torch.randint(2, 7, (1,), generator=gen)),), generator=gen).tolist()
        score = ScoreRow(prompt, tokens)
        with torch.no_grad():
            old = learner.logprobs([score], grad=False)[0]
        noise = 0.05 * torch.randn(len(old), generator=gen)
        skill = old + noise if i % 3 == 0 else None
        advantage = float(i % 3) - 1.0
        rows.append(TrainRow(i // 2, score, old + noise / 5, advantage, ref_logp=old - noise, skill_logp=skill))
    return rows


def main(out: str, *flags: str) -> None:
    if "RANK" in os.environ:
        torch.distributed.init_process_group("gloo")
    rank, size = world()
    torch.manual_seed(0)  # peft draws the LoRA A matrices from torch's global generator
    fsdp = "--fsdp" in flags
    learner = Learner(tiny_random_policy(seed=11), finetune="lora", lr=0.01, token_budget=200, fsdp=fsdp)
    start = learner.trainable_state()  # B = 0 at start would leave A without gradient in the first step
    for name, value in start.items():
        if "lora_B" in name:
            start[name] = torch.randn(value.shape, generator=torch.Generator().manual_seed(len(name))) * 0.1
    learner.load_trainable_state(start)
    rows = fixed_batch(learner)
    initial = learner.trainable_state()
    mine = [r for r in rows if size == 1 or (r.episode < 4) == (rank == 0)]  # uneven: 8 rows and 4
    stats = optimize(learner, mine, LossSettings(kl_coef=0.05, lambda_opd=0.5), minibatches=1, epochs=2)
    os.makedirs(out, exist_ok=True)
    torch.save({"initial": initial, "trained": learner.trainable_state()}, os.path.join(out, f"rank{rank}.pt"))
    with open(os.path.join(out, f"rank{rank}.json"), "w", encoding="utf-8") as handle:
        passes = len(learner.micro_batches([r.score for r in mine]))
        json.dump({"rows": len(mine), "world": size, "fsdp": fsdp, "micro_batches": passes, **stats}, handle)
    if size > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
