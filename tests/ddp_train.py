"""A short training run, alone or as one of several torchrun processes; each process writes its
trained weights (``rank<R>.pt``) beside the run folder, so a test can compare the processes.

    python -m torch.distributed.run --standalone --nproc_per_node 2 tests/ddp_train.py RUN KEY=VALUE ...
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from seed_rl.config import load_config
from seed_rl.train.trainer import Trainer


def main(run_dir: str, *overrides: str) -> None:
    resume = "--resume" in overrides
    cfg = load_config("sokoban_seed", [f"run_dir={run_dir}", *(o for o in overrides if o != "--resume")])
    trainer = Trainer(cfg, resume=resume)
    trainer.run()
    weights = Path(run_dir).with_name(f"{Path(run_dir).name}.rank{trainer.rank}.pt")
    torch.save(trainer.learner.trainable_state(), weights)
    if trainer.world_size > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
